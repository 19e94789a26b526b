# I6, crash safety under load.  Sixteen clients -- fifteen applications,
# connected as shop_app (inventory_app), reserve, confirm and cancel, and an
# administrator, connected as shop_admin (inventory_admin), restocks -- work
# on a few hot SKUs and many cold ones while the server crashes:
# (1) kill -9 of one busy backend, (2) kill -9 of the postmaster, (3) an
# immediate shutdown.  After each restart every acknowledged commit is in
# the ledger with its effect, no transaction is half there, the cache agrees
# with the tables, nothing is oversold, and reserves work at once.
#
# Commerce rules (I9) are in the load: buyers reserve SKUs with a per-buyer
# limit (refused with limit_exceeded once they hold it), and carts of 2-3
# lines -- hot, cold and limited SKUs -- are reserved whole or refused whole,
# and later confirmed or cancelled whole (confirm_order, cancel_order).
# After each restart, besides the above: no buyer holds more than a limit,
# every cart has all its lines or none, acknowledged carts and buyer
# reserves replayed are duplicates that change nothing, and the limits are
# counted from the tables: a buyer at a limit is refused, one below it gets
# exactly the rest.
#
# A client is a psql process running a generated script.  After each COMMIT
# it prints "ACK <transaction number> <status of each call>" with \warn
# (stderr is unbuffered, so the log shows progress at once).  psql runs the
# \warn only once COMMIT has returned, and with ON_ERROR_STOP on it never
# reaches a \warn after a failed statement (whose COMMIT would have rolled
# back), so an ACK line means: this transaction committed with these
# outcomes.  When the server dies, psql exits (it never reconnects); since a
# client runs its script in order, only the one transaction after its last
# ACK can have committed unacknowledged, and none after that ever ran.
#
# Who calls, besides the clients: shop_admin sets up the SKUs and their
# rules, reads the ledger and inventory.sku, and verifies; shop_app makes
# the first call after each restart (on a cache that starts empty), replays
# and probes; shop_monitor reads the stock view.  The superuser creates
# the extension and the roles, holds the clients' barrier and reads their
# rows of pg_stat_activity and pg_locks (other roles' rows), and crashes
# and starts the server.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(wait_until inventory_node stock_vs_ledger_sql inventory_roles as_app as_admin as_monitor);

my $CLIENTS  = 16;     # the last one is the administrator, who restocks
my $TXNS     = 1500;    # per client and round: far more than run before the crash
my $MIN_ACKS = 400;     # acknowledged transactions before each crash
my $DEADLINE = 60;      # seconds, for every wait of this test
my $TTL      = '1 hour';  # no reservation expires while the test runs
my @HOT  = map { "HOT-$_" } 1 .. 3;
my @COLD = map { sprintf 'COLD-%03d', $_ } 1 .. 200;
# limited SKUs => units per buyer; each round has buyers of its own
my %LIMIT = ('LIM-1' => 3, 'LIM-2' => 2);
my @LIM = sort keys %LIMIT;
my $BUYERS = 10;

my $node = inventory_node('crash_load', qq{
max_connections = 50
restart_after_crash = on
# the worker folds settled movements while the load runs, as in real life
inventory.expire_interval = '100ms'
# 16 clients: logging every statement would dominate the log
log_statement = none
});

# Hot SKUs have stock enough that their reserves always succeed (so a
# transaction reserving two of their batches is all-or-nothing by its rows
# alone); cold SKUs have 2 units each, so reserves of them are refused
# often, and restocks add to them.
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node);
as_admin($node, 'postgres', qq{
SELECT inventory.restock(sku, 1000000, 'stock-' || sku)
  FROM unnest(ARRAY['@{[join "','", @HOT]}']) sku;
SELECT inventory.restock(sku, 2, 'stock-' || sku)
  FROM unnest(ARRAY['@{[join "','", @COLD]}']) sku;
SELECT inventory.restock(sku, 1000000, 'stock-' || sku)
  FROM unnest(ARRAY['@{[join "','", @LIM]}']) sku;
@{[join "\n", map { "SELECT inventory.set_rules('$_', $LIMIT{$_});" } @LIM]}
});

# The plan of one client: a list of transactions, each a list of calls
# {op, key, batch[, sku, qty, buyer]}.  Keys are unique per round, client
# and transaction.  Confirms and cancels settle all batches of one of the
# client's own earlier orders in one transaction; a cart (calls of op
# 'cart', one per line, reserved by one reserve_cart) is settled by one
# call {op => 'confirm_order' or 'cancel_order', key, lines => its calls}.
sub make_plan
{
	my ($round, $client) = @_;
	srand($round * 1000 + $client);    # the same load every run
	my (@plan, @open);
	for my $i (1 .. $TXNS)
	{
		my $key  = "r$round-c$client-$i";
		my @calls;
		if ($client == $CLIENTS)
		{
			# the administrator restocks two cold SKUs in one transaction,
			# as fast as it can (a restock is cheap: more of them than
			# one application makes transactions); the fifteen applications'
			# cold reserves and carts ask for more units than arrive, so
			# refusals go on in every round
			push @plan, [ map { { op => 'restock', key => $key, batch => $_,
								  sku => $COLD[ rand @COLD ], qty => 1 } } 1, 2 ];
			next;
		}
		my $dice = rand(100);
		if ($dice < 27 && @open)
		{
			# confirm (15%) or cancel (12%) an earlier order
			my $op    = $dice < 15 ? 'confirm' : 'cancel';
			my $order = splice(@open, int(rand(@open)), 1);
			@calls = $order->[0]{op} eq 'cart'
			  ? ({ op => "${op}_order", key => $order->[0]{key}, lines => $order })
			  : map { { op => $op, key => $_->{key}, batch => $_->{batch} } } @$order;
		}
		elsif ($dice < 36)
		{
			# a buyer of the round reserves 1-2 units of a limited SKU:
			# refused once the buyer holds the limit
			@calls = ({ op => 'reserve', key => $key, batch => 1,
						sku => $LIM[ rand @LIM ], qty => 1 + int(rand(2)),
						buyer => "r$round-b" . (1 + int(rand($BUYERS))) });
			push @open, [@calls];
		}
		elsif ($dice < 45)
		{
			# a cart of 2-3 lines: a hot SKU (always enough), then a cold
			# (refused when gone) or a limited one, then maybe a hot or a
			# limited one; one in ten for no buyer (refused for a limited
			# line).  All lines or none.
			my $buyer = rand(10) < 1 ? undef : "r$round-b" . (1 + int(rand($BUYERS)));
			my @skus = ($HOT[ rand @HOT ],
						rand(2) < 1 ? $COLD[ rand @COLD ] : $LIM[ rand @LIM ]);
			push @skus, rand(2) < 1 ? $HOT[ rand @HOT ] : $LIM[ rand @LIM ] if rand(2) < 1;
			@calls = map { { op => 'cart', key => "$key-cart" . @skus, batch => $_,
							 sku => $skus[ $_ - 1 ], qty => 1 + int(rand(2)), buyer => $buyer } }
			  1 .. @skus;
			push @open, [@calls];
		}
		elsif ($dice < 61)
		{
			# one reserve of a cold SKU: refused when its units are gone
			# (a reserve of 3 always is, until restocks add to the SKU)
			@calls = ({ op => 'reserve', key => $key, batch => 1,
						sku => $COLD[ rand @COLD ], qty => 1 + int(rand(3)) });
			push @open, [@calls];
		}
		else
		{
			# reserve two batches of one order from hot SKUs
			@calls = map { { op => 'reserve', key => $key, batch => $_,
							 sku => $HOT[ rand @HOT ], qty => $_ } } 1, 2;
			push @open, [@calls];
		}
		push @plan, \@calls;
	}
	return \@plan;
}

sub plan_to_sql
{
	my ($plan) = @_;
	my $sql = '';
	for my $i (1 .. @$plan)
	{
		my $calls = $plan->[ $i - 1 ];
		$sql .= "BEGIN;\n";
		my @vars;
		for my $n (1 .. @$calls)
		{
			my $c = $calls->[ $n - 1 ];
			my $buyer = defined $c->{buyer} ? "'$c->{buyer}'" : 'NULL';
			if ($c->{op} eq 'cart')
			{
				# one statement for all the lines, one status per line
				next if $c->{batch} > 1;
				my @lines = grep { $_->{op} eq 'cart' } @$calls;
				$sql .= "SELECT string_agg(status, ' ' ORDER BY i) AS s$n FROM inventory.reserve_cart('$c->{key}', "
				  . "ARRAY['" . join("','", map { $_->{sku} } @lines) . "'], "
				  . "ARRAY[" . join(',', map { $_->{qty} } @lines) . "]::bigint[], '$TTL', $buyer) "
				  . "WITH ORDINALITY AS t(ok, status, sku, qty, state, available, version, expires_at, i) \\gset\n";
			}
			elsif ($c->{op} =~ /_order$/)
			{
				# one status for the whole order: every line's, once
				$sql .= "SELECT string_agg(DISTINCT status, '+') AS s$n FROM inventory.$c->{op}('$c->{key}') \\gset\n";
			}
			else
			{
				my $call =
				    $c->{op} eq 'reserve' ? "reserve('$c->{sku}', $c->{qty}, '$c->{key}', $c->{batch}, '$TTL', NULL, $buyer)"
				  : $c->{op} eq 'restock' ? "restock('$c->{sku}', $c->{qty}, '$c->{key}', $c->{batch})"
				  :                         "$c->{op}('$c->{key}', $c->{batch})";
				$sql .= "SELECT status AS s$n FROM inventory.$call \\gset\n";
			}
			push @vars, ":s$n";
		}
		$sql .= "COMMIT;\n\\warn ACK $i @vars\n";
	}
	return $sql;
}

# complete ACK lines of a client's log, as [transaction number, statuses]
sub read_acks
{
	my ($file) = @_;
	my @acks;
	for my $line (slurp_file($file) =~ /^(ACK [^\n]*)\n/mg)
	{
		my (undef, $i, @statuses) = split ' ', $line;
		push @acks, [ $i, \@statuses ];
	}
	return \@acks;
}

# Start the clients of one round; returns, per client, its plan, its log,
# its psql handle and the pid of its backend.
sub start_load
{
	my ($round) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir;

	# The clients wait at a barrier, an advisory lock held here, so that all
	# of them are connected and start together (scaffolding, as the
	# superuser, who sees the other roles' locks and backends).
	my $gate = $node->background_psql('postgres');
	$gate->query_safe('SELECT pg_advisory_lock(4242)');

	my @clients;
	for my $c (1 .. $CLIENTS)
	{
		my $plan   = make_plan($round, $c);
		my $script = "$dir/r$round-c$c.sql";
		open my $fh, '>', $script or die "$script: $!";
		print $fh "SELECT pg_advisory_lock_shared(4242);\n", plan_to_sql($plan);
		close $fh;
		my $log = "$PostgreSQL::Test::Utils::log_path/010_crash_load_r${round}_c$c";
		my $h = IPC::Run::start(
			[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $script,
			  '-d', $node->connstr('postgres') . " application_name=load-r$round-c$c"
				. ' user=' . ($c == $CLIENTS ? 'shop_admin' : 'shop_app') ],
			'<', '/dev/null', '>', "$log.out", '2>', "$log.err",
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
		push @clients, { plan => $plan, err => "$log.err", h => $h };
	}
	wait_until($DEADLINE, sub {
		$node->safe_psql('postgres',
			"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") == $CLIENTS;
	}) or die 'the clients did not reach the barrier';
	for (split /\n/, $node->safe_psql('postgres',
		"SELECT application_name, pid FROM pg_stat_activity WHERE application_name LIKE 'load-r$round-%'"))
	{
		my ($app, $pid) = split /\|/;
		$clients[ (split /-c/, $app)[1] - 1 ]{pid} = $pid;
	}
	$gate->query_safe('SELECT pg_advisory_unlock(4242)');
	$gate->quit;

	# let the load run: every client has committed something and together
	# they have committed a few hundred transactions
	my $total = 0;
	my $busy = wait_until($DEADLINE, sub {
		my @n = map { scalar @{ read_acks($_->{err}) } } @clients;
		$total = 0;
		$total += $_ for @n;
		return !grep({ $_ == 0 } @n) && $total >= $MIN_ACKS;
	});
	ok($busy, "round $round: all $CLIENTS clients are committing, $total transactions acknowledged");
	return \@clients;
}

# After the crash: every client exits because its connection was lost, not
# because its script ended (status 0) or a statement failed.  psql reports
# a lost connection with status 2, or with 3 (ON_ERROR_STOP) when the
# failed command saw the server's last message before the socket closed;
# a statement that failed prints an ERROR, which a crash never causes here.
sub wait_clients
{
	my ($round, $clients) = @_;
	my @bad;
	for my $c (1 .. $CLIENTS)
	{
		my $cl = $clients->[ $c - 1 ];
		$cl->{h}->finish;
		my $code = $cl->{h}->result(0);
		my $err  = slurp_file($cl->{err});
		push @bad, "c$c: exit status $code"
		  unless $code == 2
		  || ($code == 3 && $err =~ /server closed the connection unexpectedly|terminating connection/);
		push @bad, "c$c: $1" if $err =~ /^(.*\bERROR:.*)$/m;
	}
	is(join('; ', @bad), '', "round $round: every client lost its connection in the crash");
}

sub after_restart
{
	my ($round, $clients) = @_;

	is(as_app($node, 'postgres',
		"SELECT status FROM inventory.reserve('HOT-1', 1, 'after-r$round', 1, '$TTL')"),
		'ok', "round $round: a reserve succeeds at once after the restart");

	# the round's rows: key/batch => [kind, sku, qty, state, buyer]
	my %row;
	for (split /\n/, as_admin($node, 'postgres',
		"SELECT order_id, batch_id, kind, sku, qty, state, buyer_id FROM inventory.ledger WHERE order_id LIKE 'r$round-%'"))
	{
		my ($key, $batch, @rest) = split /\|/, $_, -1;
		$row{"$key/$batch"} = \@rest;
	}

	my %bad = map { $_ => [] }
	  qw(malformed reserve confirm cancel restock refusal partial unacked cart order);
	my %count = map { $_ => 0 }
	  qw(reserve confirm cancel restock refusal pair inflight limited limit_exceeded cart cart_refused order);
	my %target = (confirm => 'CONFIRMED', cancel => 'CANCELLED');
	my %planned;    # key/batch of every reserve, cart line or restock the plans contain
	my %settle;     # key/batch => the state a planned confirm or cancel sets
	my (@carts, @limited);    # acknowledged ok: carts, buyer reserves
	for my $c (1 .. $CLIENTS)
	{
		my $plan = $clients->[ $c - 1 ]{plan};
		my $acks = read_acks($clients->[ $c - 1 ]{err});
		my $last = @$acks;    # transactions 1 .. $last are acknowledged
		for my $j (0 .. $#$acks)
		{
			my ($i, $statuses) = @{ $acks->[$j] };
			push @{ $bad{malformed} }, "c$c: ACK line " . ($j + 1) . " is for transaction $i"
			  if $i != $j + 1 || @$statuses != @{ $plan->[ $j ] };
		}
		for my $i (1 .. @$plan)
		{
			my $calls = $plan->[ $i - 1 ];
			my @statuses = $i <= $last ? @{ $acks->[ $i - 1 ][1] } : ();
			my @applied;
			for my $n (0 .. $#$calls)
			{
				my $call = $calls->[$n];
				my $op   = $call->{op};
				# the rows of the call: its own, or, settling a cart, its lines'
				my @kbs  = map { "$_->{key}/$_->{batch}" }
				  $op =~ /_order$/ ? @{ $call->{lines} } : ($call);
				my $kb   = $kbs[0];
				my $r    = $op =~ /_order$/ ? undef : $row{$kb};
				my $desc = "c$c tx $i: $op " . ($op =~ /_order$/ ? $call->{key} : $kb);
				if ($op eq 'reserve' || $op eq 'restock' || $op eq 'cart')
				{
					$planned{$kb} = 1;
					push @applied, defined $r ? 1 : 0;
					push @{ $bad{malformed} }, "$desc: row is (@$r)"
					  if $r && ($r->[0] ne ($op eq 'restock' ? 'restock' : 'reserve')
						|| $r->[1] ne $call->{sku} || $r->[2] != $call->{qty}
						|| $r->[4] ne ($call->{buyer} // ''));
				}
				elsif ($op =~ /^(confirm|cancel)_order$/)
				{
					$settle{$_} = $target{$1} for @kbs;
					my $settled = grep { $row{$_} && $row{$_}[3] eq $target{$1} } @kbs;
					push @{ $bad{partial} }, "$desc: $settled of " . @kbs . ' lines settled'
					  if $settled && $settled != @kbs;
					push @applied, $settled == @kbs ? 1 : 0;
				}
				else
				{
					$settle{$kb} = $target{$op};
					push @applied, $r && $r->[3] eq $settle{$kb} ? 1 : 0;
				}
				next unless $i <= $last;

				# what the acknowledged outcome of the call promises
				my $status = $statuses[$n] // '';
				my $refused =
				    $op eq 'reserve' ? $status =~ /^(insufficient|limit_exceeded)$/
				  : $op eq 'cart' ? $status =~ /^(insufficient|limit_exceeded|buyer_required|cart_refused)$/
				  : $op eq 'restock' ? 0
				  : $status eq 'not_found';
				if ($status eq 'ok')
				{
					# a cart is counted whole, below
					my $what = $op =~ /_order$/ ? 'order' : $op;
					$count{$what}++ unless $op eq 'cart';
					$count{limited}++ if $op eq 'reserve' && $call->{buyer};
					push @limited, $call if $op eq 'reserve' && $call->{buyer};
					push @{ $bad{$what} }, "$desc acknowledged ok, "
					  . (@kbs > 1 ? 'lines are (' . join('; ', map { $row{$_} ? "@{ $row{$_} }" : 'missing' } @kbs) . ')'
						: 'row is (' . ($r ? "@$r" : 'missing') . ')')
					  unless $applied[-1];
				}
				elsif ($refused)
				{
					# refused: a cold reserve, a buyer's over the limit, a
					# cart, or a settle of one of them
					$count{refusal}++;
					$count{limit_exceeded}++ if $status eq 'limit_exceeded' && $op eq 'reserve';
					my @rows = grep { $row{$_} } @kbs;
					push @{ $bad{refusal} }, "$desc acknowledged $status, rows are ("
					  . join('; ', map { "@{ $row{$_} }" } @rows) . ')'
					  if @rows;
				}
				else
				{
					push @{ $bad{malformed} }, "$desc acknowledged status '$status'";
				}
			}
			$count{pair}++ if $i <= $last && @$calls == 2 && $calls->[0]{op} eq 'reserve';
			# a cart's lines were acknowledged all ok, or all refused and one
			# of them says why
			if ($i <= $last && $calls->[0]{op} eq 'cart')
			{
				my $ok = grep { $_ eq 'ok' } @statuses;
				if ($ok == @$calls)
				{
					$count{cart}++;
					push @carts, $calls;
				}
				elsif ($ok == 0 && grep { $_ ne 'cart_refused' } @statuses)
				{
					$count{cart_refused}++;
				}
				else
				{
					push @{ $bad{cart} }, "c$c tx $i: cart $calls->[0]{key} acknowledged (@statuses)";
				}
			}

			# all of the transaction or none of it
			my $done = grep { $_ } @applied;
			push @{ $bad{partial} }, "c$c tx $i: $done of " . @applied . " calls applied"
			  if $done && $done != @applied;
			# only the transaction in flight at the crash may have
			# committed without its ACK; later ones never ran
			$count{inflight}++ if $done && $i == $last + 1;
			push @{ $bad{unacked} }, "c$c tx $i (last ACK $last): $done calls applied"
			  if $done && $i > $last + 1;
		}
	}
	# no row the plans do not contain, no state but PENDING or the one the
	# plans' settle of the row sets (a settle that never ran and yet left
	# its state is caught above)
	for my $kb (sort keys %row)
	{
		my $r = $row{$kb};
		push @{ $bad{unacked} }, "$kb: not in any plan" unless $planned{$kb};
		push @{ $bad{unacked} }, "$kb: state $r->[3], but the plans "
		  . ($settle{$kb} ? "set $settle{$kb}" : 'never settle it')
		  if $r->[0] eq 'reserve' && $r->[3] ne 'PENDING'
		  && $r->[3] ne ($settle{$kb} // '');
	}

	note("round $round: $count{inflight} transactions in flight at the crash committed without their ACK");

	my $report = sub {
		my ($what, $name) = @_;
		my @v = @{ $bad{$what} };
		is(scalar @v, 0, "round $round: $name")
		  or diag(join "\n", @v[ 0 .. ($#v < 19 ? $#v : 19) ]);
	};
	$report->('malformed', 'every ACK line and status is well-formed, every row matches its call');
	$report->('reserve', "every acknowledged reserve is in the ledger ($count{reserve})");
	$report->('confirm', "every acknowledged confirm left its row CONFIRMED ($count{confirm})");
	$report->('cancel', "every acknowledged cancel left its row CANCELLED ($count{cancel})");
	$report->('restock', "every acknowledged restock is in the ledger ($count{restock})");
	$report->('refusal', "every acknowledged refusal left no row ($count{refusal})");
	$report->('cart', "every acknowledged cart is ok on every line or refused on every line ($count{cart} reserved, $count{cart_refused} refused), and every reserved one is in the ledger");
	$report->('order', "every acknowledged confirm_order / cancel_order settled every line of its cart ($count{order})");
	$report->('partial', 'every transaction is all-or-nothing');
	$report->('unacked', 'no effect beyond the transactions acknowledged or in flight');
	ok($count{reserve} && $count{confirm} && $count{cancel} && $count{restock}
		  && $count{refusal} && $count{pair},
		"round $round: the load acknowledged every kind of call, "
		. "two-batch orders ($count{pair}) among them");
	ok($count{limited} && $count{limit_exceeded} && $count{cart} && $count{cart_refused} && $count{order},
		"round $round: the load acknowledged buyers' reserves ($count{limited}) and "
		. "refusals over the limit ($count{limit_exceeded}), carts reserved ($count{cart}) "
		. "and refused ($count{cart_refused}), whole carts settled ($count{order})");

	# I9: no buyer over a limit, every cart whole, in the whole ledger
	is(as_admin($node, 'postgres', q{
SELECT l.sku, l.buyer_id, sum(l.qty), s.max_per_buyer
  FROM inventory.ledger l JOIN inventory.sku s USING (sku)
 WHERE l.kind = 'reserve' AND l.state IN ('PENDING', 'CONFIRMED') AND s.max_per_buyer IS NOT NULL
 GROUP BY l.sku, l.buyer_id, s.max_per_buyer
HAVING sum(l.qty) > s.max_per_buyer OR l.buyer_id IS NULL}),
		'', "round $round: no buyer holds more than a SKU's limit, no unit of a limited SKU is without a buyer");
	is(as_admin($node, 'postgres', q{
SELECT order_id, count(*) FROM inventory.ledger WHERE order_id ~ '-cart[0-9]+$'
 GROUP BY order_id
HAVING count(*) <> substring(order_id FROM '-cart([0-9]+)$')::int
	OR max(batch_id) <> substring(order_id FROM '-cart([0-9]+)$')::int}),
		'', "round $round: every cart in the ledger has all its lines");

	# I3 for carts and buyers: the acknowledged ones replayed are duplicates,
	# and change nothing
	my $before = as_monitor($node, 'postgres',
		'SELECT count(*), sum(version), sum(reserved) FROM inventory.stock');
	my $quote = sub { defined $_[0] ? "'$_[0]'::text" : 'NULL::text' };
	my $replays = '0 0';
	$replays = as_app($node, 'postgres',
		'SELECT count(*) || \' \' || count(*) FILTER (WHERE r.status = \'duplicate\') FROM (VALUES '
		. join(', ', map { "('$_->[0]{key}', ARRAY['" . join("','", map { $_->{sku} } @$_) . "'], ARRAY["
			  . join(',', map { $_->{qty} } @$_) . ']::bigint[], ' . $quote->($_->[0]{buyer}) . ')' } @carts)
		. ") v(k, s, q, b), inventory.reserve_cart(v.k, v.s, v.q, '$TTL', v.b) r") if @carts;
	my $lines = 0;
	$lines += @$_ for @carts;
	is($replays, "$lines $lines", "round $round: the acknowledged carts replayed: every line a duplicate");
	is(@limited ? as_app($node, 'postgres',
		'SELECT count(*) || \' \' || count(*) FILTER (WHERE r.status = \'duplicate\') FROM (VALUES '
		. join(', ', map { "('$_->{sku}', $_->{qty}, '$_->{key}', '$_->{buyer}')" } @limited)
		. ") v(s, q, k, b), inventory.reserve(v.s, v.q, v.k, 1, '$TTL', NULL, v.b) r") : '0 0',
		scalar(@limited) . ' ' . scalar(@limited),
		"round $round: the acknowledged buyers' reserves replayed: each a duplicate");
	is(as_monitor($node, 'postgres', 'SELECT count(*), sum(version), sum(reserved) FROM inventory.stock'),
		$before, "round $round: the replays changed nothing");

	# the limits are counted from the tables: every buyer of the round below
	# a limit gets exactly the rest, then no buyer gets one more (the
	# administrator reads what each buyer holds, the application reserves)
	my @pairs = map { [ split /\|/ ] } split /\n/, as_admin($node, 'postgres', qq{
SELECT s.sku, b.buyer, s.max_per_buyer AS lim, coalesce(sum(l.qty), 0)::bigint AS held
  FROM inventory.sku s
 CROSS JOIN (SELECT 'r$round-b' || g AS buyer FROM generate_series(1, $BUYERS) g) b
  LEFT JOIN inventory.ledger l ON l.sku = s.sku AND l.buyer_id = b.buyer AND l.state IN ('PENDING', 'CONFIRMED')
 WHERE s.max_per_buyer IS NOT NULL
 GROUP BY s.sku, b.buyer, s.max_per_buyer
 ORDER BY 1, 2});
	my @below = grep { $_->[3] < $_->[2] } @pairs;
	my $at = grep { $_->[3] == $_->[2] } @pairs;
	my $below = @below;
	note("round $round: after the restart, $at buyer/SKU pairs at the limit, $below below it");
	is(@below ? as_app($node, 'postgres', 'SELECT string_agg(DISTINCT r.status, \' \') FROM (VALUES '
		. join(', ', map { "('$_->[0]', '$_->[1]', $_->[2] - $_->[3])" } @below)
		. ") p(sku, buyer, rest), inventory.reserve(p.sku, p.rest, 'probe-r$round-' || p.sku || '-' || p.buyer, 1, '$TTL', NULL, p.buyer) r")
		: '',
		$below ? 'ok' : '', "round $round: each buyer below a limit gets exactly the rest of it ($below)");
	is(@pairs ? as_app($node, 'postgres', 'SELECT count(*) || \' \' || string_agg(DISTINCT r.status, \' \') FROM (VALUES '
		. join(', ', map { "('$_->[0]', '$_->[1]')" } @pairs)
		. ") p(sku, buyer), inventory.reserve(p.sku, 1, 'probe-r$round-more-' || p.sku || '-' || p.buyer, 1, '$TTL', NULL, p.buyer) r")
		: '',
		(@LIM * $BUYERS) . ' limit_exceeded',
		"round $round: then every buyer is at every limit: none gets one more");

	# verify(wait): every cached SKU compared, none passed over as busy
	is(as_admin($node, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"),
		'0', "round $round: verify() is empty");
	is(as_monitor($node, 'postgres', q{
SELECT count(*) FROM inventory.stock WHERE NOT (0 <= reserved AND reserved <= on_hand)}),
		'0', "round $round: every SKU has 0 <= reserved <= on_hand");
	# the worker folds movements into inventory.sku; the whole ledger,
	# folded or not, still adds up to the stock (documented meaning of the
	# ledger's rows: a restock adds qty, a confirm takes qty off the shelf,
	# PENDING holds qty; version counts movements and settlements)
	is(as_admin($node, 'postgres', 'SELECT count(*) FROM (' . stock_vs_ledger_sql() . ') d'),
		'0', "round $round: the stock of every SKU is the sum of its whole ledger");
	# the cache started empty and loads from the tables
	is(as_app($node, 'postgres', q{
SELECT count(*) || ' ' || count(*) FILTER (WHERE inventory.available(sku) = on_hand - reserved)
  FROM inventory.stock}),
		(@HOT + @COLD + @LIM) . ' ' . (@HOT + @COLD + @LIM),
		"round $round: available() of every SKU is on_hand - reserved");
}

# the pids of this node's server processes
sub server_pids
{
	my $out = `pgrep -f '^postgres: crash_load: '`;
	return split ' ', $out;
}

# Round 1: kill -9 of a busy client backend (one in a transaction, which
# may hold units in shared memory); the server restarts itself.
{
	my $clients = start_load(1);
	# the process title says what a backend does, and reading it takes no
	# connection (a new one is slow to start under this load)
	my ($victim, $busy);
	wait_until($DEADLINE, sub {
		for my $cl (@$clients)
		{
			open my $fh, '<', "/proc/$cl->{pid}/cmdline" or next;
			my $title = do { local $/; <$fh> } // '';
			$title =~ s/[\0 ]+$//;
			if ($title =~ /(idle in transaction|SELECT)$/)
			{
				($victim, $busy) = ($cl->{pid}, $1);
				return 1;
			}
		}
		return 0;
	}) or die 'no busy client backend';
	my $offset = -s $node->logfile;
	kill 'KILL', $victim;
	note("round 1: killed backend $victim, which was $busy");
	wait_clients(1, $clients);
	# the postmaster saw the crash and reinitialized (scaffolding:
	# wait_for_log dies if it does not)
	$node->wait_for_log(
		qr/server process \(PID $victim\) was terminated by signal 9.*database system is ready to accept connections/s,
		$offset);
	$node->poll_query_until('postgres', 'SELECT 1', '1')
		or die 'round 1: the server does not accept connections';
	after_restart(1, $clients);
}

# Round 2: kill -9 of the postmaster, then start it again.
{
	my $clients = start_load(2);
	my $postmaster = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
	$node->kill9;
	wait_clients(2, $clients);
	# the children notice the postmaster is gone and exit; until all have,
	# the data directory is in use and a start would be refused
	ok(wait_until($DEADLINE, sub { !kill(0, $postmaster) && !server_pids() }),
		'round 2: every process of the killed server has exited');
	ok($node->start(fail_ok => 1), 'round 2: the server starts again');
	after_restart(2, $clients);
}

# Round 3: immediate shutdown, then start.
{
	my $clients = start_load(3);
	$node->stop('immediate');
	wait_clients(3, $clients);
	ok($node->start(fail_ok => 1), 'round 3: the server starts again');
	after_restart(3, $clients);
}

$node->stop;
done_testing();

# I10, reserve_now() across crashes.  Eight clients call reserve_now() with
# keys of their own -- most on one hot SKU, the others on three small SKUs
# that sell out (insufficient) and on a SKU with a per-buyer limit
# (limit_exceeded) -- while the server crashes three ways: (1) kill -9 of a
# client backend asleep in its call, (2) kill -9 of the express writer while
# it writes a batch, (3) kill -9 of the postmaster, then a start.
#
# After each restart: every call acknowledged ok has its row in the ledger,
# as asked; no call acknowledged with a refusal has one; every reserve_now()
# row belongs to a call that was sent (acknowledged, or in flight without an
# answer), once; verify() is empty and the counters -- inventory.stock,
# available(), inventory.sku_stats -- add up with the ledger; no buyer is
# over the limit; the next call is written by a new writer; the
# acknowledged calls replayed are duplicates that change nothing; and each
# call left without an answer, retried, answers duplicate if its row was
# committed and ok (or the buyer's limit) if not, never making a second row.
#
# A client is a psql process (reserve_now_client() in lib/InventoryTest.pm)
# that prints "SENT i" before call i and "ACK i STATUS" once it answered;
# when the server dies it exits, so the call sent without an answer is the
# only one that may have committed unacknowledged, and none after it ran.
#
# Who calls: the clients, their replays and retries, and the first call
# after each restart (on a cache that starts empty) are shop_app
# (inventory_app); shop_admin (inventory_admin) restocks, sets the rules,
# reads the ledger and verifies; shop_monitor (inventory_monitor) reads the
# express lane's figures, inventory.stock, available() and sku_stats.  The
# superuser creates the extension and the roles, reads the clients' and the
# writer's rows of pg_stat_activity (other roles' rows) to pick what it
# kills, and crashes and starts the server.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(wait_until inventory_node reserve_now_client reserve_now_log
  stock_vs_ledger_sql inventory_roles as_app as_admin as_monitor);

my $CLIENTS  = 8;
my $CALLS    = 20000;   # per client and round: far more than run before the crash
my $MIN_ACKS = 800;     # calls answered before each crash
my $DEADLINE = 60;      # seconds, for every wait of this test
my $LIMIT    = 3;       # units a buyer may hold of the limited SKU
my $BUYERS   = 6;       # per round
my $SMALL    = 40;      # units of each small SKU, per round

my $node = inventory_node('express_crash', qq{
max_connections = 40
restart_after_crash = on
log_statement = none
});
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node);
as_admin($node, 'postgres', "SELECT inventory.restock('HOT', 1000000, 'stock-HOT')");

my %sku_count;    # SKUs made, for the check of the cache

# The SKUs of a round: its three small ones and its limited one
sub round_skus
{
	my ($round) = @_;
	return ((map { "r$round-S$_" } 1 .. 3), "r$round-L");
}

# A client's calls: unique keys; 55% one unit of HOT, 30% 1-3 units of a
# small SKU, 15% 1-2 units of the limited SKU for one of the round's buyers
sub make_plan
{
	my ($round, $client) = @_;
	srand($round * 1000 + $client);    # the same load every run
	my @plan;
	for my $i (1 .. $CALLS)
	{
		my $key  = "r$round-c$client-$i";
		my $dice = rand(100);
		push @plan,
		    $dice < 55 ? { key => $key, sku => 'HOT', qty => 1 }
		  : $dice < 85 ? { key => $key, sku => "r$round-S" . (1 + int(rand(3))), qty => 1 + int(rand(3)) }
		  : { key => $key, sku => "r$round-L", qty => 1 + int(rand(2)),
			  buyer => "r$round-b" . (1 + int(rand($BUYERS))) };
	}
	return \@plan;
}

sub server_pids
{
	my $out = `pgrep -f '^postgres: express_crash: '`;
	return split ' ', $out;
}

sub writer_pid
{
	return as_monitor($node, 'postgres',
		"SELECT writer_pid FROM inventory.express_status WHERE datname = 'postgres'");
}

# Starts the clients of a round; returns them once they have answered
# $MIN_ACKS calls together, each some of them.
sub start_load
{
	my ($round) = @_;
	my @skus = round_skus($round);
	as_admin($node, 'postgres', join "\n",
		(map { "SELECT inventory.restock('$_', $SMALL, 'stock-$_');" } @skus[ 0 .. 2 ]),
		"SELECT inventory.restock('$skus[3]', 100000, 'stock-$skus[3]');",
		"SELECT inventory.set_rules('$skus[3]', $LIMIT);");
	$sku_count{$_} = 1 for @skus;

	my @clients = map { reserve_now_client($node, 'postgres', "024_r${round}_c$_", make_plan($round, $_),
			3 * $DEADLINE, 'shop_app') } 1 .. $CLIENTS;
	my $total = 0;
	my $busy = wait_until($DEADLINE, sub {
		my @n = map { scalar keys %{ (reserve_now_log($_))[1] } } @clients;
		$total = 0;
		$total += $_ for @n;
		return !grep({ $_ < 5 } @n) && $total >= $MIN_ACKS;
	});
	# the load runs (scaffolding: the checks that follow are the test)
	$busy or die "round $round: the $CLIENTS clients answered only $total calls in $DEADLINE s";
	note("round $round: all $CLIENTS clients are calling, $total calls answered");
	# the calls go through the writer, several in a batch
	my ($rows, $max_batch, $fallbacks) = split /\|/, as_monitor($node, 'postgres', q{
SELECT coalesce(sum(rows), 0), coalesce(max(max_batch), 0), inventory.express_fallbacks()
  FROM inventory.express_status});
	ok($rows > 0 && $max_batch > 1 && $fallbacks == 0,
		"round $round: a writer writes the calls in batches ($rows rows, up to $max_batch in a batch, $fallbacks fallbacks)");
	return \@clients;
}

# Every client exits because its connection was lost, not because its
# calls ran out (status 0) or a call failed (an ERROR).  psql reports a
# lost connection with status 2, or 3 (ON_ERROR_STOP) when the failed
# command saw the server's last message.
sub wait_clients
{
	my ($round, $clients) = @_;
	my @bad;
	for my $cl (@$clients)
	{
		unless (eval { $cl->{h}->finish; 1 })
		{
			push @bad, "$cl->{name}: $@";
			next;
		}
		my $code = $cl->{h}->result(0);
		my $err  = slurp_file($cl->{err});
		push @bad, "$cl->{name}: exit status $code"
		  unless $code == 2
		  || ($code == 3 && $err =~ /server closed the connection unexpectedly|terminating connection/);
		push @bad, "$cl->{name}: $1" if $err =~ /^(.*\bERROR:.*)$/m;
	}
	is(join('; ', @bad), '', "round $round: every client lost its connection in the crash");
}

sub rows_of_round
{
	my ($round) = @_;
	my %row;
	for (split /\n/, as_admin($node, 'postgres', qq{
SELECT order_id, batch_id, kind, sku, qty, coalesce(buyer_id, ''), state, expires_at - created_at = interval '1 hour'
  FROM inventory.ledger WHERE order_id LIKE 'r$round-c%' ORDER BY order_id, batch_id}))
	{
		my ($key, $batch, @rest) = split /\|/, $_, -1;
		push @{ $row{$key} }, [ $batch, @rest ];
	}
	return \%row;
}

sub after_restart
{
	my ($round, $clients, $old_writer) = @_;
	my @skus = round_skus($round);

	# --- the writer comes back at the next call -----------------------------
	# the application's call is the first after the restart, on a cache
	# that starts empty
	is(as_app($node, 'postgres', "SELECT inventory.reserve_now('HOT', 1, 'after-r$round')"),
		'ok', "round $round: a reserve_now() answers ok after the restart");
	my $writer = writer_pid();
	like($writer, qr/^\d+$/, "round $round: a writer wrote it");
	isnt($writer, $old_writer, "round $round: a new writer");
	# the writer's row of pg_stat_activity is not the monitor's to read
	# (another role's row): the superuser reads it
	is($node->safe_psql('postgres', qq{
SELECT backend_type FROM pg_stat_activity WHERE pid = $writer}), 'inventory express writer',
		"round $round: pg_stat_activity shows it");
	is(as_monitor($node, 'postgres', 'SELECT inventory.express_fallbacks()'), '0',
		"round $round: no call reserved in its own transaction");

	# --- every acknowledged call, and nothing that was not sent ---------------
	my $row = rows_of_round($round);
	my %bad = map { $_ => [] } qw(malformed ok refused unsent);
	my %count = map { $_ => 0 } qw(ok insufficient limit_exceeded inflight committed);
	my %sent;
	my @inflight;    # calls sent without an answer
	for my $cl (@$clients)
	{
		my ($sent, $ack) = reserve_now_log($cl);
		my $n = @$sent;
		push @{ $bad{malformed} }, "$cl->{name}: SENT lines are not 1 .. $n"
		  if join(',', @$sent) ne join(',', 1 .. $n);
		for my $i (sort { $a <=> $b } keys %$ack)
		{
			push @{ $bad{malformed} }, "$cl->{name}: ACK $i without SENT" if $i > $n;
		}
		for my $i (1 .. $n)
		{
			my $call = $cl->{calls}[ $i - 1 ];
			$sent{ $call->{key} } = $call;
			my $status = $ack->{$i};
			my $r = $row->{ $call->{key} };
			my $desc = "$cl->{name} call $i ($call->{key}, $call->{sku} x $call->{qty})";
			if (!defined $status)
			{
				push @{ $bad{malformed} }, "$desc: no answer, but $n calls were sent" if $i != $n;
				push @inflight, $call;
				$count{inflight}++;
				$count{committed}++ if $r;
				next;
			}
			my $legal = $call->{sku} eq 'HOT' ? 'ok'
			  : $call->{buyer} ? 'ok|limit_exceeded'
			  : 'ok|insufficient';
			if ($status !~ /^($legal)$/)
			{
				push @{ $bad{malformed} }, "$desc: answered '$status'";
			}
			elsif ($status eq 'ok')
			{
				$count{ok}++;
				push @{ $bad{ok} }, "$desc: acknowledged ok, rows are "
				  . ($r ? join('; ', map { "(@$_)" } @$r) : 'missing')
				  unless $r && @$r == 1
				  && join('|', @{ $r->[0] }) eq join('|', 1, 'reserve', $call->{sku}, $call->{qty},
					  $call->{buyer} // '', 'PENDING', 't');
			}
			else
			{
				$count{$status}++;
				push @{ $bad{refused} }, "$desc: acknowledged $status, rows are "
				  . join('; ', map { "(@$_)" } @$r) if $r;
			}
		}
	}
	for my $key (sort keys %$row)
	{
		my $call = $sent{$key};
		push @{ $bad{unsent} }, "$key: a row, but no such call was sent" unless $call;
		push @{ $bad{unsent} }, "$key: " . @{ $row->{$key} } . ' rows' if @{ $row->{$key} } > 1;
		push @{ $bad{unsent} }, "$key: row (@{ $row->{$key}[0] }) is not the call's"
		  if $call && join('|', @{ $row->{$key}[0] }) ne join('|', 1, 'reserve', $call->{sku}, $call->{qty},
			  $call->{buyer} // '', 'PENDING', 't');
	}
	my $report = sub {
		my ($what, $name) = @_;
		my @v = @{ $bad{$what} };
		is(scalar @v, 0, "round $round: $name")
		  or diag(join "\n", @v[ 0 .. ($#v < 19 ? $#v : 19) ]);
	};
	$report->('malformed', 'every call was sent in order and answered a status it may answer');
	$report->('ok', "every call acknowledged ok has its row in the ledger, as asked ($count{ok})");
	$report->('refused', "no call acknowledged insufficient ($count{insufficient}) or limit_exceeded ($count{limit_exceeded}) has a row");
	$report->('unsent', 'every row belongs to a call that was sent, one row per key');
	ok($count{insufficient} && $count{limit_exceeded},
		"round $round: the load sold the small SKUs out and had buyers reach their limit");
	note("round $round: $count{inflight} calls were in flight at the crash, $count{committed} of them committed");

	# --- the counters add up ----------------------------------------------------
	is(as_admin($node, 'postgres', qq{
SELECT l.buyer_id || ' ' || sum(l.qty) FROM inventory.ledger l
 WHERE l.sku = '$skus[3]' AND l.state IN ('PENDING', 'CONFIRMED')
 GROUP BY l.buyer_id HAVING sum(l.qty) > $LIMIT OR l.buyer_id IS NULL}),
		'', "round $round: no buyer holds more than the limit");
	my $counters_add_up = sub {
		my ($when) = @_;
		# verify('30 s') waits for a SKU with a change in flight and fails
		# naming it if it is still busy: every SKU is compared
		my $verify = as_admin($node, 'postgres', "SELECT * FROM inventory.verify('30 s')");
		is($verify, '', "round $round, $when: verify('30 s') is empty");
		is(as_admin($node, 'postgres', stock_vs_ledger_sql()), '',
			"round $round, $when: inventory.stock of every SKU is what its whole ledger adds up to");
		my $skus = scalar(keys %sku_count) + 1;
		is(as_monitor($node, 'postgres', q{
SELECT count(*) || ' ' || count(*) FILTER (WHERE inventory.available(sku) = available AND available = on_hand - reserved
                                            AND on_hand >= reserved AND reserved >= 0)
  FROM inventory.stock}), "$skus $skus",
			"round $round, $when: available() of every SKU is on_hand - reserved, nothing oversold");
		is(as_monitor($node, 'postgres', q{
SELECT count(*) || ' ' || count(*) FILTER (WHERE (c.on_hand, c.reserved, c.available, c.holds, c.in_flight)
                                                  = (s.on_hand, s.reserved, s.available, 0, 0))
  FROM inventory.stock s JOIN inventory.sku_stats c USING (sku)}), "$skus $skus",
			"round $round, $when: inventory.sku_stats agrees with inventory.stock for every SKU");
	};
	$counters_add_up->('after the restart');

	# --- the acknowledged calls replayed: duplicates that change nothing ----------
	my @acked;
	for my $cl (@$clients)
	{
		my (undef, $ack) = reserve_now_log($cl);
		push @acked, map { $cl->{calls}[ $_ - 1 ] } grep { $ack->{$_} eq 'ok' } keys %$ack;
	}
	my $before = as_monitor($node, 'postgres', 'SELECT sum(on_hand), sum(reserved), sum(version) FROM inventory.stock');
	my $replay = reserve_now_client($node, 'postgres', "024_r${round}_replay", \@acked, $DEADLINE, 'shop_app');
	$replay->{h}->finish;
	my (undef, $rack) = reserve_now_log($replay);
	my @wrong = map { "$acked[$_ - 1]{key}: $rack->{$_}" } grep { $rack->{$_} ne 'duplicate' } sort { $a <=> $b } keys %$rack;
	is(scalar(keys %$rack) . ' ' . join('; ', @wrong[ 0 .. ($#wrong < 9 ? $#wrong : 9) ]), scalar(@acked) . ' ',
		"round $round: the " . scalar(@acked) . ' calls acknowledged ok, replayed, are each a duplicate');
	is(as_monitor($node, 'postgres', 'SELECT sum(on_hand), sum(reserved), sum(version) FROM inventory.stock'),
		$before, "round $round: the replays changed nothing");

	# --- the calls without an answer, retried ---------------------------------------
	# units enough for every retry of a small SKU; the limit is counted from
	# the tables, call by call
	as_admin($node, 'postgres', join "\n",
		map { "SELECT inventory.restock('$_', 30, 'refill-$_');" } @skus[ 0 .. 2 ]);
	my %held = split /\||\n/, as_admin($node, 'postgres', qq{
SELECT buyer_id, sum(qty) FROM inventory.ledger WHERE sku = '$skus[3]' AND state IN ('PENDING', 'CONFIRMED')
 GROUP BY buyer_id});
	my @expect;
	for my $call (@inflight)
	{
		my $e = $row->{ $call->{key} } ? 'duplicate'
		  : $call->{buyer} && ($held{ $call->{buyer} } // 0) + $call->{qty} > $LIMIT ? 'limit_exceeded'
		  : 'ok';
		$held{ $call->{buyer} } += $call->{qty} if $e eq 'ok' && $call->{buyer};
		push @expect, $e;
	}
	my $retry = reserve_now_client($node, 'postgres', "024_r${round}_retry", [ @inflight, @inflight ], $DEADLINE,
		'shop_app');
	$retry->{h}->finish;
	my (undef, $tack) = reserve_now_log($retry);
	is(join(' ', map { $tack->{$_} // 'none' } 1 .. @inflight), join(' ', @expect),
		"round $round: each call left without an answer, retried, answers duplicate if its row was committed, else as a new call");
	is(join(' ', map { $tack->{$_} // 'none' } @inflight + 1 .. 2 * @inflight),
		join(' ', map { $_ eq 'limit_exceeded' ? $_ : 'duplicate' } @expect),
		"round $round: retried again, each is a duplicate");
	my $after = rows_of_round($round);
	is(join(' ', map { scalar @{ $after->{ $_->{key} } // [] } } @inflight),
		join(' ', map { $_ eq 'limit_exceeded' ? 0 : 1 } @expect),
		"round $round: each of them has one row, or none when refused");
	$counters_add_up->('after the retries');
}

# Round 1: kill -9 of a client backend asleep in its call: its units are
# held by its slot, its item queued or in the writer's batch.
{
	my $clients = start_load(1);
	my $old_writer = writer_pid();
	# the victim: a client backend asleep in its call (scaffolding, as the
	# superuser, who reads the wait events of shop_app's backends)
	my $victim;
	wait_until($DEADLINE, sub {
		$victim = $node->safe_psql('postgres', q{
SELECT pid FROM pg_stat_activity
 WHERE application_name LIKE '024_r1_c%' AND wait_event_type = 'Extension' AND wait_event = 'Extension' LIMIT 1});
		return $victim ne '';
	}) or die 'round 1: no client backend is asleep in reserve_now()';
	my $offset = -s $node->logfile;
	kill 'KILL', $victim;
	wait_clients(1, $clients);
	# the killed backend made the server restart (wait_for_log dies if not)
	$node->wait_for_log(
		qr/server process \(PID $victim\) was terminated by signal 9.*database system is ready to accept connections/s,
		$offset);
	$node->poll_query_until('postgres', 'SELECT 1', '1')
	  or die 'round 1: the server does not accept connections';
	after_restart(1, $clients, $old_writer);
}

# Round 2: kill -9 of the express writer while it writes a batch.
{
	my $clients = start_load(2);
	# the writer, while it writes a batch (scaffolding, as the superuser,
	# who reads the writer's row of pg_stat_activity)
	my $writer;
	wait_until($DEADLINE, sub {
		$writer = $node->safe_psql('postgres', q{
SELECT a.pid FROM pg_stat_activity a JOIN inventory.express_status e ON e.writer_pid = a.pid
 WHERE a.backend_type = 'inventory express writer' AND a.state = 'active'});
		return $writer ne '';
	}) or die 'round 2: the express writer is not writing a batch';
	my $offset = -s $node->logfile;
	kill 'KILL', $writer;
	wait_clients(2, $clients);
	# the killed writer made the server restart (wait_for_log dies if not)
	$node->wait_for_log(
		qr/inventory express writer.*\(PID $writer\) was terminated by signal 9.*database system is ready to accept connections/s,
		$offset);
	$node->poll_query_until('postgres', 'SELECT 1', '1')
	  or die 'round 2: the server does not accept connections';
	after_restart(2, $clients, $writer);
}

# Round 3: kill -9 of the postmaster, then a start.
{
	my $clients = start_load(3);
	my $old_writer = writer_pid();
	my $postmaster = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
	$node->kill9;
	wait_clients(3, $clients);
	# the children notice the postmaster is gone and exit; until all have,
	# the data directory is in use and a start would be refused
	wait_until($DEADLINE, sub { !kill(0, $postmaster) && !server_pids() })
	  or die 'round 3: processes of the killed server are left: ' . join(' ', server_pids());
	$node->start;
	after_restart(3, $clients, $old_writer);
}

$node->stop;
done_testing();

# A node killed with kill -9 behind the router, while a SKU split into
# four buckets falls through all the time: two buckets rich, two kept poor,
# so that the orders of the poor ones take units from the others, and the
# SKU never runs out (any insufficient is a false one).
#
#   * 16 clients reserve, then confirm or cancel with the SKU, through the
#     router; the postmaster of the node of a rich bucket is killed, stays
#     down until the clients have seen the outage (orders of the other
#     buckets served, fall-throughs from the other rich bucket, orders of
#     its bucket failing; polled, up to a deadline) and starts again.  The
#     orders whose bucket is on a node that is up are served throughout
#     with no error, their fall-throughs taking units from the other rich
#     bucket; those of the killed node's bucket fail with an error naming
#     its database while it is down, and are served once it is back; no
#     reserve answers insufficient;
#   * a node killed while the router restocks a fall-through's units on it
#     (the restock held on the SKU's row lock, so that the kill lands
#     there): the reserve fails with that node's error, not insufficient,
#     leaving the units of that one transfer in transit; once the node is
#     back, ordinary reserves that fall through restock them by their key
#     -- no rebalance, split or merge -- and the session that failed
#     serves the bucket's next order;
#   * afterwards: the reserves that failed, retried with their keys, answer
#     ok or duplicate (one cut by the kill may have committed); every
#     confirm and cancel a client saw acknowledged is in exactly one node's
#     ledger, in its state, every reservation in its bucket; units are
#     conserved (stocked = on hand + confirmed + withdrawn, reserved =
#     PENDING holds); nothing is in transit; verify() is empty on every
#     node.
#
# Every call is made by the login role the manual gives it, each over a
# connection of its own (RouterCluster's roles => 1): the clients are
# shop_app (inventory_app) on the router, before the kills and after the
# restarts; shop_admin (inventory_admin) restocks, splits and reads
# inventory.nodes and the transfers on the router, and on the nodes
# withdraws units to keep a bucket poor, locks the SKU's row and reads the
# tables; shop_monitor (inventory_monitor) verifies.  The router works on
# the nodes as shop_router (inventory_admin), the role its user mapping
# names, as docs/scaling-out.md sets it up.  The superuser only makes the
# servers, databases, extensions and roles, kills and starts the nodes,
# and reads the router's sessions' wait events on a node (other roles'
# rows of pg_stat_activity).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use List::Util qw(sum0 uniq);
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(wait_until psql_session wait_said as_app as_admin as_monitor);
use RouterCluster qw(start_nodes start_router);

my $NPARTS   = 4;
my $CLIENTS  = 16;
my $ORDERS   = 4000;      # orders of a client at most
my $DEADLINE = 30;        # seconds, for every wait of this test
my $SKU      = 'KILL';
my $STOCK    = 200_000;
my $POOR     = 2;         # units left in each poor bucket

# the clients are Python, with psycopg 3 (Debian: python3-psycopg, for the
# system's interpreter): its absence is a failure of the setup, not a test
my $python = '/usr/bin/python3';
BAIL_OUT('psycopg 3 is not installed (Debian: python3-psycopg)')
  unless system($python, '-c', 'import psycopg') == 0;

my @nodes  = start_nodes($NPARTS);
my $router = start_router(\@nodes, 0, roles => 1);

# a node's tables, read (and, for the test's own setup, written) by its
# administrator
sub node_sql
{
	my ($p, $sql) = @_;
	return as_admin($nodes[$p], "inv_p$p", $sql);
}
# on the router, as each role
sub app   { return as_app($router, 'shop', $_[0]); }
sub admin { return as_admin($router, 'shop', $_[0]); }
sub mon   { return as_monitor($router, 'shop', $_[0]); }

# orders whose bucket is on the given partition
sub orders_on
{
	my ($part, $n, $prefix) = @_;
	return split /\n/, app(qq{
SELECT o FROM (SELECT '$prefix' || g AS o FROM generate_series(1, 1000) g) x, inventory.buckets b
 WHERE b.sku = '$SKU' AND inventory._home(b.parts, o) = $part ORDER BY length(o), o LIMIT $n});
}

# the pids of a node's postmaster and of its children
sub server_pids
{
	my ($node) = @_;
	my $pm = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
	return ($pm, split ' ', `pgrep -P $pm`);
}

# kill -9 of a node's postmaster; waits until its children have seen it die
# and exited (until then its data directory is in use and a start fails)
sub kill9
{
	my ($p) = @_;
	my @pids = server_pids($nodes[$p]);
	$nodes[$p]->kill9;
	ok(wait_until($DEADLINE, sub { !grep { kill 0, $_ } @pids }),
		"node $p: kill -9 of its postmaster, and every process of it exits");
}

my $in_transit_sql = "SELECT sum(in_transit) || ' ' || sum(transit_unknown) FROM inventory.nodes";

# --- the split SKU: two rich buckets, two poor ----------------------------------

admin("SELECT inventory.restock('$SKU', $STOCK, 'in-kill')");
admin("SELECT count(*) FROM inventory.split('$SKU', 4)");
# split again with the same count: the unsplit layout, under which no key
# was made, is forgotten (a reserve would ask its node for the key)
admin("SELECT count(*) FROM inventory.split('$SKU', 4)");
my @parts = split /,/, app("SELECT array_to_string(parts, ',') FROM inventory.buckets WHERE sku = '$SKU'");
my ($rich0, $rich1, $poor0, $poor1) = @parts;
node_sql($_, "SELECT inventory.withdraw('$SKU', inventory.available('$SKU') - $POOR, 'drain-$_')")
  for ($poor0, $poor1);
my $each = $STOCK / 4;
is(admin("SELECT string_agg(available::text, ' ' ORDER BY bucket) || ' ' || (SELECT former_layouts FROM inventory.buckets WHERE sku = '$SKU') FROM inventory._bucket_report('$SKU')"),
	"$each $each $POOR $POOR 0", "four buckets: $each units in two, $POOR in the other two; no former layout");

# the bucket of every order a client can make, computed once, before the
# load (the test's own bookkeeping: it dies if it is incomplete)
my %home = map { split /\|/ } split /\n/, app(qq{
SELECT o || '|' || inventory._home(b.parts, o)
  FROM inventory.buckets b, generate_series(1, $CLIENTS) c, generate_series(1, $ORDERS) n,
       LATERAL (SELECT 'c' || c || '-' || n AS o) x
 WHERE b.sku = '$SKU'});
die 'the buckets of ' . scalar(keys %home) . ' orders, not ' . $CLIENTS * $ORDERS
  unless keys %home == $CLIENTS * $ORDERS;

# --- the load -------------------------------------------------------------------

my $stop = "$PostgreSQL::Test::Utils::tmp_check/036_stop";
unlink $stop;
my @clients;
for my $c (1 .. $CLIENTS)
{
	my $log = "$PostgreSQL::Test::Utils::log_path/036_client_c$c";
	my $h = IPC::Run::start(
		[ $python, "$FindBin::Bin/lib/router_load.py", $router->connstr('shop') . ' user=shop_app', $SKU,
		  "c$c", $ORDERS, "$log.log", $stop ],
		'<', '/dev/null', '>', "$log.out", '2>', "$log.err",
		IPC::Run::timeout(180));
	push @clients, { h => $h, log => "$log.log", err => "$log.err" };
}

# every call the clients made so far: {start, end, op, order, answer}
sub calls
{
	my @calls;
	for my $cl (@clients)
	{
		next unless -e $cl->{log};
		for (slurp_file($cl->{log}) =~ /^([^\n]*)\n/mg)
		{
			my %c;
			@c{qw(start end op order answer)} = split /\t/, $_, 5;
			push @calls, \%c;
		}
	}
	return @calls;
}
sub acks
{
	my ($pred) = @_;
	return scalar grep { $_->{answer} eq 'ok' && $pred->($_) } calls();
}

ok(wait_until($DEADLINE, sub { acks(sub { 1 }) >= 300 }),
	'the load runs: 300 calls acknowledged through the router');

# --- a node of a rich bucket killed under the load ---------------------------------

my $victim  = $rich0;
my $t_kill  = time;
my $fell_before = node_sql($rich1,
	"SELECT count(*) FROM inventory.ledger WHERE order_id LIKE 'inventory:transfer:$rich1:%' AND batch_id = 1");
kill9($victim);
is(admin("SELECT string_agg(part::text, ',') FROM inventory.nodes WHERE NOT reachable"), $victim,
	"inventory.nodes: node $victim does not answer");
# The outage lasts until the clients have seen it -- 50 calls of orders of
# the buckets that are up acknowledged since the kill, fall-throughs that
# took units from the other rich bucket since, and calls of orders of the
# victim's bucket failed since -- polled up to the deadline; the checks
# below say which did not happen in time.
my $fell_during = 0;
my $seen = sub {
	my @since = grep { $_->{end} > $t_kill } calls();
	return 0 unless (grep { $home{ $_->{order} } != $victim && $_->{answer} eq 'ok' } @since) >= 50
	  && grep { $home{ $_->{order} } == $victim && $_->{answer} =~ /^error / } @since;
	$fell_during = node_sql($rich1,
		"SELECT count(*) FROM inventory.ledger WHERE order_id LIKE 'inventory:transfer:$rich1:%' AND batch_id = 1")
	  - $fell_before;
	return $fell_during > 0;
};
wait_until($DEADLINE, $seen);
ok($nodes[$victim]->start(fail_ok => 1), sprintf("node $victim starts again, after %.1f s down", time - $t_kill));
my $t_back = time;

my $after_back = sub { $_[0]{start} >= $t_back };
ok(wait_until($DEADLINE, sub { acks(sub { $after_back->($_[0]) && $home{ $_[0]{order} } == $victim }) >= 40 }),
	"node $victim back: the orders of its bucket are served again (40 calls acknowledged)");
ok(wait_until($DEADLINE, sub { acks($after_back) >= 600 }),
	"the load goes on: 600 calls acknowledged since node $victim is back");

open my $fh, '>', $stop or die "$stop: $!";
close $fh;
my @unclean = grep { !$clients[$_]{h}->finish } 0 .. $#clients;
is(scalar @unclean, 0, "the $CLIENTS clients stop when told and exit cleanly")
  or diag join "\n", map { "client c" . ($_ + 1) . ': ' . slurp_file($clients[$_]{err}) } @unclean;

my @calls = calls();
my $in_outage = sub { $_[0]{start} < $t_back && $_[0]{end} > $t_kill };
my $error = sub { $_[0]{answer} =~ /^error / };
my $up = sub { $home{ $_[0]{order} } != $victim };
sub show { return join "\n", map { join ' ', @{$_}{qw(op order answer)} } @_[ 0 .. ($#_ < 4 ? $#_ : 4) ]; }
note(scalar(@calls) . ' calls, ' . scalar(grep { $in_outage->($_) } @calls) . ' during the outage');

my @false_short = grep { $_->{op} eq 'reserve' && $_->{answer} eq 'insufficient' } @calls;
is(scalar @false_short, 0, 'no reserve answered insufficient (the SKU never ran out)') or diag show(@false_short);
my @up_failed = grep { $up->($_) && $error->($_) } @calls;
is(scalar @up_failed, 0, 'the orders whose bucket is on a node that was up: no reserve, confirm or cancel failed')
  or diag show(@up_failed);
my @served = grep { $in_outage->($_) && $up->($_) && $_->{answer} eq 'ok' } @calls;
ok(@served >= 50, 'and they were served during the outage (' . scalar(@served) . ' calls acknowledged)');
ok($fell_during > 0, "fall-throughs went on during the outage, from the other rich bucket ($fell_during transfers)");
my @down_failed = grep { !$up->($_) && $in_outage->($_) && $error->($_) } @calls;
ok(@down_failed > 0, "the orders of node $victim\'s bucket failed while it was down (" . scalar(@down_failed) . ' calls)');
my @unnamed = grep { $error->($_) && $_->{answer} !~ /\[inv_p$victim\]/ } @calls;
is(scalar @unnamed, 0, "every call that failed failed with an error naming [inv_p$victim]") or diag show(@unnamed);
my @outside = grep { !$in_outage->($_) && $error->($_) } @calls;
is(scalar @outside, 0, 'no call failed before the kill or once the node was back') or diag show(@outside);

# The reserves that failed, retried with their keys now that every node
# answers: a reserve cut by the kill may have committed before its answer
# was lost (duplicate), the others had done nothing (ok).
my @failed = uniq map { $_->{order} } grep { $_->{op} eq 'reserve' && $error->($_) } @calls;
my %retried = @failed ? (map { split / / } split /\n/, app(
	"SELECT o || ' ' || r.status FROM unnest(ARRAY['" . join("','", @failed) . "']) o, inventory.reserve('$SKU', 1, o, ttl => '1 hour') r"))
  : ();
my %answers;
$answers{$_}++ for values %retried;
is(join(' ', grep { !/^(ok|duplicate)$/ } sort keys %answers), '',
	'the ' . scalar(@failed) . ' reserves that failed, retried with their keys: each answers ok or duplicate ('
	  . join(', ', map { "$answers{$_} $_" } sort keys %answers) . ')');

# the clients' orders in the ledgers: order => ["partition state", ...]
my %rows;
for my $p (0 .. $NPARTS - 1)
{
	for (split /\n/, node_sql($p,
		"SELECT order_id || '|' || state FROM inventory.ledger WHERE sku = '$SKU' AND kind = 'reserve' AND order_id LIKE 'c%-%' AND batch_id = 1"))
	{
		my ($o, $state) = split /\|/;
		push @{ $rows{$o} }, "$p $state";
	}
}
for my $op ([ 'confirm', 'CONFIRMED' ], [ 'cancel', 'CANCELLED' ])
{
	my @acked = grep { $_->{op} eq $op->[0] && $_->{answer} eq 'ok' } @calls;
	my @wrong = grep {
		my $r = $rows{ $_->{order} } // [];
		!(@$r == 1 && $r->[0] eq "$home{ $_->{order} } $op->[1]")
	} @acked;
	is(scalar @wrong, 0, 'each of the ' . scalar(@acked) . " $op->[0]s acknowledged is in exactly one node's ledger, $op->[1], in its bucket")
	  or diag join "\n", map { "$_->{order}: " . join(', ', @{ $rows{ $_->{order} } // [] }) } @wrong[ 0 .. ($#wrong < 4 ? $#wrong : 4) ];
}
my @reserved = ((map { $_->{order} } grep { $_->{op} eq 'reserve' && $_->{answer} eq 'ok' } @calls), @failed);
my @astray = grep { my $r = $rows{$_} // []; !(@$r == 1 && $r->[0] =~ /^$home{$_} /) } @reserved;
is(scalar @astray, 0, 'each of the ' . scalar(@reserved) . ' reservations acknowledged or retried is once in the cluster, in its bucket')
  or diag join "\n", map { "$_: " . join(', ', @{ $rows{$_} // [] }) } @astray[ 0 .. ($#astray < 4 ? $#astray : 4) ];
# Units of a transfer cut by the kill stay in transit until a fall-through
# restocks them: ordinary reserves of a poor bucket, each in a session of
# its own, until nothing is in transit (at once if nothing was cut).
my @drive = orders_on($poor1, 200, 'drive-');
my @driven;
ok(wait_until($DEADLINE, sub {
		return 1 if admin($in_transit_sql) eq '0 0';
		my $o = shift @drive;
		push @driven, app("SELECT status FROM inventory.reserve('$SKU', 1, '$o', ttl => '1 hour')") if defined $o;
		return 0;
	}),
	'the load stopped: nothing is in transit or unknown, without rebalance, split or merge ('
	  . scalar(@driven) . ' reserves made for it)');
is(join(' ', uniq 'ok', @driven), 'ok', 'those reserves are served');

# --- kill -9 while the router restocks a fall-through's units ----------------------

# P: the node of a poor bucket, its bucket empty, so that an order of it
# falls through; the router's restock on P waits for a lock on the SKU's
# row that a session of P holds, and P is killed then
my $P = $poor0;
node_sql($P, "SELECT inventory.withdraw('$SKU', inventory.available('$SKU'), 'drain-held') WHERE inventory.available('$SKU') > 0");
# (the test's setup: it dies if the bucket is not empty)
my $p_left = node_sql($P, "SELECT inventory.available('$SKU')");
die "node $P: its bucket still has $p_left units" unless $p_left eq '0';
my ($held, $second) = orders_on($P, 2, 'held-');
# the lock: the node's administrator's, who may update inventory.sku
my $lock = psql_session($nodes[$P], $DEADLINE, 0, "inv_p$P", 'shop_admin');
$lock->{in} .= "BEGIN;\nSELECT sku FROM inventory.sku WHERE sku = '$SKU' FOR UPDATE;\n";
wait_said($lock, qr/^$SKU$/m);
my $buyer = psql_session($router, 2 * $DEADLINE, 0, 'shop', 'shop_app');
$buyer->{in} .= "SET inventory_router.short_recheck = '1 hour';\n"
  . "SELECT status FROM inventory.reserve('$SKU', 1, '$held', ttl => '1 hour');\n\\echo held-answered\n";
# (the router's session on node P is shop_router's: its wait event is for
# a superuser to read)
ok(wait_until($DEADLINE, sub {
		$buyer->{run}->pump_nb;
		$nodes[$P]->safe_psql("inv_p$P", "SELECT count(*) FROM pg_stat_activity WHERE datname = 'inv_p$P' AND application_name = 'inventory_router' AND wait_event_type = 'Lock'") > 0 }),
	"a reserve of P's bucket falls through: the router's restock on node $P waits on the lock");
kill9($P);
$lock->{run}->kill_kill;
wait_said($buyer, qr/^held-answered$/m);
like($buyer->{err}, qr/ERROR:[^\n]*\[inv_p$P\]/, "the reserve fails with the error of node $P, naming [inv_p$P]");
unlike($buyer->{out}, qr/^(insufficient|ok)$/m, 'it does not answer insufficient');
is(admin("SELECT string_agg(part::text, ',') FROM inventory.nodes WHERE NOT reachable"), $P,
	"inventory.nodes: node $P does not answer");
ok($nodes[$P]->start(fail_ok => 1), "node $P starts again");

my $open_sql = qq{
WITH t AS MATERIALIZED (SELECT * FROM inventory._transfer_rows(ARRAY[0, 1, 2, 3], '$SKU'))
SELECT w.order_id || '|' || w.qty FROM t w
 WHERE w.batch_id = 1 AND NOT EXISTS (SELECT FROM t r WHERE r.order_id = w.order_id AND r.batch_id = 2)};
my @open = map { [ split /\|/ ] } split /\n/, admin($open_sql);
is(scalar(@open) . ' ' . sum0(map { $_->[1] } @open), '1 1',
	'the reserve stopped at the failure: one transfer open, of 1 unit');
like($open[0][0] // '', qr/^inventory:transfer:\d+:$P:/, "toward node $P");
is(admin($in_transit_sql), '1 0', "node $P back: inventory.nodes shows that unit in transit");

my $buyer_err = length $buyer->{err};
$buyer->{in} .= "SELECT status FROM inventory.reserve('$SKU', 1, '$second', ttl => '1 hour');\n\\echo second-answered\n";
wait_said($buyer, qr/^second-answered$/m);
{
	# A known failure, found when the buyer became shop_app (issue 31): a
	# router session keeps PL/Proxy connections per local user, the
	# caller's and, for the fall-through (_top_up is SECURITY DEFINER), the
	# router extension's owner's.  The kill broke the owner's connection
	# to P, which was in use and is dropped; the caller's, idle since the
	# bucket was found empty, stays cached, and PL/Proxy probes a cached
	# connection before reusing it only once it has been idle some seconds
	# (PLPROXY_IDLE_CONN_CHECK): the next call on it before that fails
	# with "[inv_pN] REMOTE FATAL: terminating connection due to unexpected
	# postmaster exit" although the node is back and the call never ran
	# while it was down (docs/scaling-out.md: "When the node is
	# back, the router reconnects by itself").  Any session's idle cached
	# connection to a node that died fails so; as the superuser, the
	# buyer's two were one, in use at the kill and dropped at the failure.
	local $TODO = 'a connection of the caller, idle when the node died, fails the next call (PL/Proxy keeps one per local user)';
	like($buyer->{out}, qr/^ok\nsecond-answered$/m,
		'the session whose reserve failed serves the next order of the bucket')
	  or diag substr($buyer->{err}, $buyer_err);
}
$buyer->{in} .= "\\q\n";
$buyer->{run}->finish;

# ordinary reserves of P's bucket, each in a session of its own, until
# nothing is in transit
my @after = orders_on($P, 200, 'after-');
my @answers;
ok(wait_until($DEADLINE, sub {
		my $o = shift @after;
		return 0 unless defined $o;
		push @answers, app("SELECT status FROM inventory.reserve('$SKU', 1, '$o', ttl => '1 hour')");
		return admin($in_transit_sql) eq '0 0';
	}),
	'reserves that fall through finish the open transfer by themselves: nothing in transit or unknown ('
	  . scalar(@answers) . ' reserves; no rebalance, split or merge)');
is(join(' ', uniq @answers), 'ok', 'those reserves are served');
is(node_sql($P, "SELECT count(*) || ' ' || coalesce(sum(qty), 0) FROM inventory.ledger WHERE order_id = '"
	  . ($open[0][0] // '') . "' AND batch_id = 2 AND kind = 'restock'"),
	'1 1', "node $P has the transfer's restock, batch 2, under its key");

# --- what the cluster holds ---------------------------------------------------------

my ($confirmed, $pending, $holds, $withdrawn) = (0, 0, 0, 0);
for my $p (0 .. $NPARTS - 1)
{
	my ($c, $pe, $h, $w) = split /\|/, node_sql($p, qq{
SELECT coalesce(sum(qty) FILTER (WHERE kind = 'reserve' AND state = 'CONFIRMED'), 0),
       coalesce(sum(qty) FILTER (WHERE kind = 'reserve' AND state = 'PENDING'), 0),
       count(*) FILTER (WHERE kind = 'reserve' AND state = 'PENDING'),
       coalesce(sum(qty) FILTER (WHERE order_id LIKE 'drain-%'), 0)
  FROM inventory.ledger WHERE sku = '$SKU'});
	$confirmed += $c;
	$pending   += $pe;
	$holds     += $h;
	$withdrawn += $w;
}
is(app("SELECT on_hand FROM inventory.stock WHERE sku = '$SKU'"), $STOCK - $withdrawn - $confirmed,
	"units conserved: $STOCK stocked = on hand + $confirmed confirmed + $withdrawn withdrawn, over the buckets");
is(app("SELECT reserved FROM inventory.stock WHERE sku = '$SKU'") . ' ' . admin('SELECT sum(holds) FROM inventory.nodes'),
	"$pending $holds", "reserved units = the $holds PENDING reservations' holds");
is(admin($in_transit_sql), '0 0', 'nothing in transit or unknown');
# verify('30 s'): waits for a SKU with a change in flight (an error naming
# it if one is still busy), so that none is skipped
is(mon("SELECT count(*) FROM inventory.verify('30 s')"), '0', "verify('30 s') through the router: empty");
is(join(' ', map { as_monitor($nodes[$_], "inv_p$_", "SELECT count(*) FROM inventory.verify('30 s')") } 0 .. $NPARTS - 1),
	join(' ', ('0') x $NPARTS), "verify('30 s') on each node: empty");

done_testing();

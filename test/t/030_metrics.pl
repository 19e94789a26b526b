# The counters a monitoring tool reads, across the lives of sessions: what
# callers were told (inventory.call_stats) and what committed
# (inventory.movement_stats) stay counted when the sessions that counted
# them end, a total never goes down while sessions come and go, the
# workers' expiries count as committed, a dropped database leaves the
# views, and the workers' background verify records what it found --
# nothing on a sound database, the difference, logged, when the tables
# were changed behind the cache's back, and a SKU skipped while a
# transaction has a change to it in flight, checked again once it ends.
#
# Who calls: the sessions that come and go, pgbench's included, are
# shop_app's (inventory_app), each connected as itself; shop_admin
# (inventory_admin) restocks and verifies; shop_monitor
# (inventory_monitor) reads the counters and the verify's record, as a
# monitoring tool does.  The superuser creates and drops the databases,
# creates the extension and the roles, and changes inventory.sku behind
# the cache's back with its triggers off in the catalog (what the manual
# says only a superuser can do).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node wait_until psql_session wait_said inventory_roles as_app as_admin as_monitor);

my $node = inventory_node('metrics', <<'EOC');
inventory.verify_interval = '1s'
inventory.expire_interval = 100
max_connections = 40
EOC
$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', 'CREATE EXTENSION inventory');
inventory_roles($node, 'shop');
as_admin($node, 'shop', q{
SELECT inventory.restock('S', 100000, 'in-s');
SELECT inventory.restock('T', 5, 'in-t')});

sub told
{
	my ($call, $status) = @_;
	return as_monitor($node, 'shop', qq{
SELECT coalesce(sum(calls), 0) FROM inventory.call_stats
 WHERE datname = 'shop' AND call = '$call' AND status LIKE '$status'});
}

sub committed
{
	my ($movement) = @_;
	return as_monitor($node, 'shop', qq{
SELECT committed FROM inventory.movement_stats
 WHERE datname = 'shop' AND movement = '$movement'});
}

# each call in a session of its own, which ends before the counters are read
my ($ok0, $ins0, $res0) = (told('reserve', 'ok'), told('reserve', 'insufficient'), committed('reserve'));
for my $i (1 .. 5)
{
	as_app($node, 'shop', "SELECT inventory.reserve('T', 1, 'gone-$i', ttl => '1 hour')");
}
as_app($node, 'shop', "SELECT inventory.reserve('T', 1, 'gone-6', ttl => '1 hour')");
is(told('reserve', 'ok'), $ok0 + 5, 'the answers of sessions that have ended stay counted');
is(told('reserve', 'insufficient'), $ins0 + 1, 'by status');
is(committed('reserve'), $res0 + 5, 'and so do their commits');

# many short sessions while a reader watches the total
my $before = told('reserve', '%');
my $script = PostgreSQL::Test::Utils::tempdir() . '/reserve.sql';
PostgreSQL::Test::Utils::append_to_file($script, <<'EOS');
\set k random(1, 1000000000)
SELECT inventory.reserve('S', 1, 'churn-' || :client_id || '-' || :k, ttl => '1 hour');
EOS
my ($bout, $berr) = ('', '');
my $bench = IPC::Run::start(
	[ 'pgbench', '-n', '-C', '-c', '4', '-t', '150', '-f', $script, $node->connstr('shop') . ' user=shop_app' ],
	'>', \$bout, '2>', \$berr);
my $reader = psql_session($node, 120, 1, 'shop', 'shop_monitor');
my @seen;
my $n = 0;
while ($bench->pumpable || @seen < 3)
{
	$n++;
	$reader->{in} .= "SELECT 'total $n ' || coalesce(sum(calls), 0) FROM inventory.call_stats"
	  . " WHERE datname = 'shop' AND call = 'reserve';\n";
	wait_said($reader, qr/total $n (\d+)\n/);
	$reader->{out} =~ /total $n (\d+)\n/;
	push @seen, $1;
	$bench->pump_nb if $bench->pumpable;
}
# pgbench: 600 calls, each in a session of its own
$bench->finish or die "pgbench failed: $berr";
my @down = grep { $seen[$_] < $seen[ $_ - 1 ] } 1 .. $#seen;
is(scalar(@down), 0, 'the total never went down in ' . scalar(@seen) . ' reads while sessions came and went')
  or diag("reads: @seen");
is(told('reserve', '%'), $before + 600, 'every call of every session is counted, once');
$reader->{in} .= "\\q\n";
$reader->{run}->finish;

# the workers' expiries are commits that nobody was told
my $exp0 = committed('expire');
as_app($node, 'shop', q{
SELECT inventory.reserve('S', 1, 'short-' || i, ttl => '100 ms') FROM generate_series(1, 3) i});
ok(wait_until(30, sub { committed('expire') == $exp0 + 3 }), 'the worker\'s three expiries are committed');

# the background verify: nothing on a sound database
ok( wait_until(30, sub {
			as_monitor($node, 'shop',
				"SELECT verified_at IS NOT NULL AND drift = 0 FROM inventory.verify_status WHERE datname = 'shop'") eq 't';
	}),
	'the background verify ran, and found nothing');
is(as_monitor($node, 'shop', "SELECT checked > 0 FROM inventory.verify_status WHERE datname = 'shop'"),
	't', 'having compared the cached SKUs');

# a superuser changes inventory.sku behind the cache's back: with its
# triggers off in the catalog, which nothing checks
my $offset = -s $node->logfile;
$node->safe_psql('shop', q{
UPDATE pg_catalog.pg_trigger SET tgenabled = 'D' WHERE tgrelid = 'inventory.sku'::regclass;
UPDATE inventory.sku SET on_hand = on_hand + 7 WHERE sku = 'T';
UPDATE pg_catalog.pg_trigger SET tgenabled = 'A' WHERE tgrelid = 'inventory.sku'::regclass});
# a visit comes when work is due: each poll makes some (a reservation
# by the application), then the monitor reads the record
my $wake = 0;
ok( wait_until(30, sub {
			$wake++;
			as_app($node, 'shop', "SELECT inventory.reserve('S', 1, 'wake-$wake', ttl => '100 ms')");
			as_monitor($node, 'shop', "SELECT drift FROM inventory.verify_status WHERE datname = 'shop'") eq '1';
	}),
	'a later background verify found the difference');
ok($node->wait_for_log(qr/WARNING:  the inventory cache of database "shop" differs from its tables in 1 place\b/, $offset),
	'and logged it');
is(as_admin($node, 'shop', "SELECT what, cached, truth FROM inventory.verify('30 s')"),
	'on_hand|5|12', "inventory.verify('30 s') shows it");
$node->safe_psql('shop', q{
UPDATE pg_catalog.pg_trigger SET tgenabled = 'D' WHERE tgrelid = 'inventory.sku'::regclass;
UPDATE inventory.sku SET on_hand = on_hand - 7 WHERE sku = 'T';
UPDATE pg_catalog.pg_trigger SET tgenabled = 'A' WHERE tgrelid = 'inventory.sku'::regclass});
is(as_admin($node, 'shop', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"put back as it was: verify('30 s') is empty");

# The background verify skips a SKU that a transaction keeps changing, and
# checks it once the transaction has ended.  Reservations of S that fall
# due every 250 ms bring the visits (a database with nothing due gets
# none); none of them is in flight while a verify runs, since the worker
# expires them in a transaction of its own before it verifies.
as_admin($node, 'shop', "SELECT inventory.restock('BUSY', 5, 'in-busy')");
as_app($node, 'shop', q{
SELECT count(*) FROM generate_series(1, 240) i,
	   inventory.reserve('S', 1, 'tick-' || i, ttl => i * interval '250 ms')});

# the first background verify that ended after a moment (it may have
# begun before it): its verified_at, checked, skipped and drift
sub verify_ended_after
{
	my ($moment) = @_;
	my $row = '';
	wait_until(30, sub {
		$row = as_monitor($node, 'shop', qq{
SELECT verified_at, checked, skipped, drift FROM inventory.verify_status
 WHERE datname = 'shop' AND verified_at > '$moment'});
		return $row ne '';
	});
	return split /\|/, $row;
}
# the one after it, which began after the moment
sub verify_begun_after
{
	my ($first) = verify_ended_after($_[0]);
	return defined $first ? verify_ended_after($first) : ();
}

my $busy = psql_session($node, 120, 1, 'shop', 'shop_app');
$busy->{in} .= "BEGIN;\nSELECT 'held ' || status FROM inventory.reserve('BUSY', 1, 'busy-1');\n";
wait_said($busy, qr/held ok\n/);
my $held_since = $node->safe_psql('shop', 'SELECT clock_timestamp()');
my ($at, $checked, $skipped, $drift) = verify_begun_after($held_since);
ok(defined $at, 'a background verify ran while a transaction had a change to BUSY in flight');
cmp_ok($skipped // 0, '>=', 1, 'it skipped the SKU (verify_status.skipped)');
is($drift, '0', 'and found no difference in the others');

$busy->{in} .= "ROLLBACK;\n\\q\n";
$busy->{run}->finish;
my $ended = $node->safe_psql('shop', 'SELECT clock_timestamp()');
my ($at2, $checked2, $skipped2, $drift2) = verify_begun_after($ended);
ok(defined $at2, 'a background verify ran after the transaction ended');
is($skipped2, '0', 'it skipped nothing');
is($checked2, ($checked // 0) + ($skipped // 0), 'and checked the SKU skipped before');

# a dropped database leaves the views
$node->safe_psql('postgres', 'CREATE DATABASE gone');
$node->safe_psql('gone', 'CREATE EXTENSION inventory');
as_admin($node, 'gone', "SELECT inventory.restock('G', 1, 'in-g')");
is(as_monitor($node, 'shop', "SELECT sum(committed) FROM inventory.movement_stats WHERE datname = 'gone'"),
	'1', 'another database\'s commits are seen from this one');
$node->safe_psql('postgres', 'DROP DATABASE gone');
is(as_monitor($node, 'shop', "SELECT count(*) FROM inventory.call_stats WHERE datname = 'gone'"),
	'0', 'a dropped database leaves call_stats');
is(as_monitor($node, 'shop', "SELECT count(*) FROM inventory.movement_stats WHERE datname = 'gone'"),
	'0', 'and movement_stats');

$node->stop;
done_testing();

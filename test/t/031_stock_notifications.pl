# LISTEN inventory_stock: with inventory.stock_notifications on for a
# database, a SKU whose committed available reaches zero, or comes back
# above it, is sent to the listeners by a worker, with its latest state; a
# listener sees the final state of a hot SKU after a race, a SKU
# flickering around zero is sent at most once per
# inventory.stock_notify_interval, and a session without the setting notes
# nothing, while what a session with it noted is always sent.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node wait_until psql_session);

my $node = inventory_node('notify', "inventory.stock_notify_interval = 100ms\n");
$node->safe_psql('postgres', q{
CREATE DATABASE shop;
ALTER DATABASE shop SET inventory.stock_notifications = on;
CREATE DATABASE quiet});
for my $db ('shop', 'quiet')
{
	$node->safe_psql($db, 'CREATE EXTENSION inventory');
}

# A listener: a psql session that asks the server for what arrived each
# time it is polled; returns the payloads of inventory_stock seen so far.
sub listener
{
	my ($db) = @_;
	my $s = psql_session($node, 180, 1, $db);
	$s->{in} .= "LISTEN inventory_stock;\nLISTEN marker;\n";
	heard($s);
	return $s;
}

my $poll = 0;
sub heard
{
	my ($s) = @_;
	$poll++;
	$s->{in} .= "SELECT 'polled $poll';\n";
	$s->{run}->pump until $s->{out} =~ /polled $poll\n/;
	return [ $s->{out} =~ /notification "inventory_stock" with payload "(.*?)" received/g ];
}

# the payloads of one SKU: [available, version] each
sub of_sku
{
	my ($payloads, $sku) = @_;
	return [ map { /"available": (-?\d+), "version": (\d+)/; [ $1, $2 ] }
		  grep { /"sku": "\Q$sku\E"/ } @$payloads ];
}

my $shop = listener('shop');
my $quiet = listener('quiet');

# a new SKU comes on sale, then a race for its units
$node->safe_psql('shop', "SELECT inventory.restock('HOT', 40, 'in-hot')");
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'HOT');
			@$g == 1 && $g->[0][0] == 40;
	}),
	'a new SKU on sale is heard, with its units');
my $script = PostgreSQL::Test::Utils::tempdir() . '/buy.sql';
PostgreSQL::Test::Utils::append_to_file($script, <<'EOS');
SELECT (inventory.reserve('HOT', 1, 'buy-' || :client_id || '-' || random())).status;
EOS
my ($out, $err) = ('', '');
IPC::Run::run([ 'pgbench', '-n', '-c', '8', '-t', '20', '-f', $script, $node->connstr('shop') ],
	'>', \$out, '2>', \$err) or die "pgbench: $err";
is($node->safe_psql('shop', "SELECT available FROM inventory.stock WHERE sku = 'HOT'"), '0',
	'160 buyers sold the 40 units out');
my $final = $node->safe_psql('shop', "SELECT version FROM inventory.stock WHERE sku = 'HOT'");
ok( wait_until(30, sub {
			my $got = of_sku(heard($shop), 'HOT');
			@$got && $got->[-1][0] == 0 && $got->[-1][1] == $final;
	}),
	'the listener hears HOT sold out, with its final version');
is(scalar(@{ of_sku(heard($shop), 'HOT') }), 2, 'once: selling out is one crossing of zero');

# back on sale, and the payload is the latest state
my $sale_at = time;
$node->safe_psql('shop', q{
SELECT inventory.cancel(order_id, batch_id) FROM inventory.ledger
 WHERE sku = 'HOT' AND state = 'PENDING' ORDER BY created_at LIMIT 3});
my $back = $node->safe_psql('shop', "SELECT available || ' ' || version FROM inventory.stock WHERE sku = 'HOT'");
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'HOT');
			"$g->[-1][0] $g->[-1][1]" eq $back;
	}),
	'a cancel puts HOT back on sale: the listener hears it, with what is available now');
note(sprintf('heard within %.0f ms of the commit, polling included', 1000 * (time - $sale_at)));

# a SKU flickering around zero: one unit, taken and given back
$node->safe_psql('shop', "SELECT inventory.restock('FLICK', 1, 'in-flick')");
ok(wait_until(30, sub { @{ of_sku(heard($shop), 'FLICK') } == 1 }), 'a new SKU on sale is heard');
my $before = @{ of_sku(heard($shop), 'FLICK') };
my $last_version = $node->safe_psql('shop', q{
DO $$
DECLARE
	t0 timestamptz := clock_timestamp();
	i int := 0;
BEGIN
	WHILE clock_timestamp() < t0 + interval '2 s' LOOP
		i := i + 1;
		PERFORM inventory.reserve('FLICK', 1, 'flick-' || i);
		COMMIT;
		PERFORM inventory.cancel('flick-' || i);
		COMMIT;
	END LOOP;
	RAISE NOTICE 'crossings %', 2 * i;
END $$;
SELECT version FROM inventory.stock WHERE sku = 'FLICK'});
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'FLICK');
			$g->[-1][0] == 1 && $g->[-1][1] == $last_version;
	}),
	'after the flicker the listener has its final state: on sale');
my $sent = @{ of_sku(heard($shop), 'FLICK') } - $before;
cmp_ok($sent, '<=', 2000 / 100 + 2,
	"hundreds of crossings in 2 s made $sent notifications: at most one per 100 ms, and the last");
cmp_ok($sent, '>=', 2, 'and more than one');

# a database without the setting sends nothing: a visit of its worker
# (made due by an expiry) passes, then a marker shows nothing came before
# (the visit sends what is noted before it expires anything)
$node->safe_psql('quiet', q{
SELECT inventory.restock('Q', 2, 'in-q');
SELECT inventory.reserve('Q', 1, 'q-1');
SELECT inventory.reserve('Q', 1, 'q-2', ttl => '100 ms')});
ok( wait_until(30, sub {
			$node->safe_psql('quiet', "SELECT state FROM inventory.ledger WHERE order_id = 'q-2'") eq 'EXPIRED';
	}),
	'Q sold out, and the worker visited the quiet database to expire a reservation');
$node->safe_psql('quiet', q{NOTIFY marker, 'done'});
ok(wait_until(30, sub { heard($quiet); $quiet->{out} =~ /notification "marker"/ }), 'the marker arrived');
is(scalar(@{ heard($quiet) }), 0, 'and no inventory_stock notification: the setting is off by default');

# the setting of the session that commits decides, not the worker's: a
# role with it on, in the quiet database
$node->safe_psql('postgres', q{
CREATE ROLE notifier LOGIN SUPERUSER;
ALTER ROLE notifier SET inventory.stock_notifications = on});
$node->safe_psql('quiet', "SELECT inventory.restock('R', 3, 'in-r')", extra_params => [ '-U', 'notifier' ]);
ok( wait_until(30, sub {
			my $g = of_sku(heard($quiet), 'R');
			@$g == 1 && $g->[0][0] == 3;
	}),
	'a role with the setting on is heard in a database without it: the worker sends what was noted');

for my $s ($shop, $quiet)
{
	$s->{in} .= "\\q\n";
	$s->{run}->finish;
}
$node->stop;
done_testing();

# LISTEN inventory_stock: with inventory.stock_notifications on for a
# database, a SKU whose committed available reaches zero, or comes back
# above it, is sent to the listeners by a worker, with its latest state; a
# listener sees the final state of a hot SKU after a race, a SKU
# flickering around zero is sent at most once per
# inventory.stock_notify_interval, and a session without the setting notes
# nothing, while what a session with it noted is always sent.  A send that
# fails (the notification queue takes nothing more) is logged and counted
# in inventory.worker_status, and tried again after a back-off until the
# latest state is heard, while the worker goes on expiring and folding.
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

# A send that fails does not stop the worker.  The NOTIFY queue is full
# when a listener stops reading (a session idle in an open transaction)
# long enough, but its 8 GB take a minute and as much disk to fill; a
# queue whose files cannot be written fails the same way, at the same
# point of the worker's commit.  A restart empties pg_notify, the test
# makes it read-only, then fills the pages the server keeps in memory
# until no notification fits in them any more.
$node->restart;
$shop = listener('shop');
$node->safe_psql('shop', "SELECT inventory.restock('JAM', 1, 'in-jam')");
ok(wait_until(30, sub { @{ of_sku(heard($shop), 'JAM') } == 1 }), 'after a restart, notifications are heard');
my $failures = sub {
	$node->safe_psql('shop', "SELECT notify_failures FROM inventory.worker_status WHERE datname = 'shop'");
};
is($failures->(), '0', 'worker_status counts no failed send');

my $notify_dir = $node->data_dir . '/pg_notify';
chmod(0500, $notify_dir) or die "chmod $notify_dir: $!";
my ($fill_ret, $fill_out, $fill_err) = $node->psql('shop',
	q{SELECT pg_notify('fill', repeat('x', 7900) || g) FROM generate_series(1, 40) g});
like($fill_err, qr/pg_notify.*Permission denied/, 'the queue cannot take 40 pages of notifications');
($fill_ret, $fill_out, $fill_err) = $node->psql('shop',
	q{DO $$ BEGIN LOOP PERFORM pg_notify('fill', ''); COMMIT; END LOOP; END $$});
like($fill_err, qr/pg_notify.*Permission denied/, 'nor, one by one, the smallest notification');

# JAM sells out: the worker's send fails, and is counted and logged
$node->safe_psql('shop', "SELECT inventory.reserve('JAM', 1, 'jam-0')");
ok(wait_until(30, sub { $failures->() >= 1 }), 'the failed send is counted in worker_status.notify_failures');
ok( $node->log_contains(
		qr/WARNING:  could not send the notifications of database "shop" to LISTEN inventory_stock: could not access status of transaction 0\n.*DETAIL:  Could not open file "pg_notify\/0000": Permission denied\.\n.*HINT:  They are sent again, with the latest state, in 1 s at the earliest\. When the NOTIFY queue is full, a listener that does not read its notifications, such as a session idle in an open transaction, keeps it from emptying\./
	),
	'and logged as a WARNING, with the reason and a hint');

# the worker goes on expiring and folding meanwhile
my ($expired0, $folded0) = split /\|/, $node->safe_psql('shop',
	"SELECT expired, folded FROM inventory.worker_status WHERE datname = 'shop'");
$node->safe_psql('shop', q{
SELECT inventory.restock('EXP', 1, 'in-exp');
SELECT inventory.reserve('EXP', 1, 'exp-1', ttl => '200 ms')});
ok( wait_until(30, sub {
			$node->safe_psql('shop', "SELECT state FROM inventory.ledger WHERE order_id = 'exp-1'") eq 'EXPIRED';
	}),
	'while no notification can be sent, the worker expires an overdue reservation');
ok( wait_until(30, sub {
			$node->safe_psql('shop', qq{
SELECT expired > $expired0 AND folded > $folded0 FROM inventory.worker_status WHERE datname = 'shop'}) eq 't';
	}),
	'and folds');

# retried after a back-off, however often crossings make the database due:
# 1 s after the first failure, then 2 s, 4 s...: at most two tries in 4 s
my $f0 = $failures->();
my $jam_version = $node->safe_psql('shop', q{
DO $$
DECLARE
	t0 timestamptz := clock_timestamp();
	i int := 0;
BEGIN
	WHILE clock_timestamp() < t0 + interval '4 s' LOOP
		i := i + 1;
		PERFORM inventory.cancel('jam-' || (i - 1));
		COMMIT;
		PERFORM inventory.reserve('JAM', 1, 'jam-' || i);
		COMMIT;
		PERFORM pg_sleep(0.05);
	END LOOP;
	RAISE NOTICE 'flips %', i;
END $$;
SELECT version FROM inventory.stock WHERE sku = 'JAM'});
my $tries = $failures->() - $f0;
cmp_ok($tries, '>=', 1, 'the send is tried again');
cmp_ok($tries, '<=', 2, "but backs off: $tries failed tries in 4 s of crossings every 50 ms or so");
is(scalar(@{ of_sku(heard($shop), 'JAM') }), 1, 'nothing of JAM was heard meanwhile');

# once the queue takes notifications again, the notes still due are sent,
# with the latest state
chmod(0700, $notify_dir) or die "chmod $notify_dir: $!";
ok( wait_until(60, sub {
			my $g = of_sku(heard($shop), 'JAM');
			@$g == 2 && $g->[-1][0] == 0 && $g->[-1][1] == $jam_version;
	}),
	'once the queue takes notifications again, JAM is heard sold out, with its latest version');
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'EXP');
			@$g && $g->[-1][0] == 1;
	}),
	'and EXP back on sale after its expiry');
my $settled = $failures->();
$node->safe_psql('shop', q{
SELECT inventory.cancel(order_id) FROM inventory.ledger WHERE sku = 'JAM' AND state = 'PENDING'});
ok(wait_until(30, sub { of_sku(heard($shop), 'JAM')->[-1][0] == 1 }), 'the next crossing is heard at once');
is($failures->(), $settled, 'with no more failures');
is($node->safe_psql('shop', 'SELECT count(*) FROM inventory.verify()'), '0', 'the cache agrees with the tables');

$shop->{in} .= "\\q\n";
$shop->{run}->finish;
$node->stop;
done_testing();

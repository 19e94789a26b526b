# LISTEN inventory_stock: with inventory.stock_notifications on for a
# database, a SKU whose committed available reaches zero, or comes back
# above it, is sent to the listeners by a worker, with its latest state.
#
#   * a listener sees the final state of a hot SKU after a race;
#   * a SKU flickering around zero while pgbench makes 20 other SKUs
#     flicker is sent at most once per inventory.stock_notify_interval, and
#     so is each of the others, each last state heard;
#   * an expiry by the worker and a sale by the express writer are heard;
#     the notification comes from the worker of the database, not from the
#     session that committed; units held by a transaction in flight do not
#     count in the available it carries;
#   * notes are sent between the worker's transactions, not once a round:
#     a SKU sold out during a round that asks a reconciler about a backlog
#     is heard before the backlog is cleared;
#   * 3,000 SKUs on sale in one transaction are each heard;
#   * the database's setting is the only one: SET, a function's SET clause
#     and a client's options are refused, ALTER ROLE ... SET is ignored with
#     a WARNING at connection, ALTER DATABASE and ALTER SYSTEM work; a
#     database without it sends nothing;
#   * a send that fails (the notification queue takes nothing more) is
#     logged and counted in inventory.worker_status, and tried again after
#     a back-off until the latest state is heard, while the worker goes on
#     expiring and folding.
#
# Who calls: the listeners, the buyers (pgbench's too) and the sessions in
# flight are shop_app's (inventory_app); shop_admin (inventory_admin)
# restocks, reads and writes the ledger, sets the reconciler and
# verifies; shop_monitor (inventory_monitor) reads inventory.stock,
# worker_status and reconcile_stats; the roles with a setting of their own
# are logins in inventory_admin or inventory_app.  The superuser creates
# the databases, the extension and the roles (the reconciler's owner too,
# and its function in the schema public, the database owner's), sets the
# settings (ALTER DATABASE, ALTER SYSTEM, and a superuser's SET: only a
# superuser may set this superuser parameter at all, and the extension
# refuses even that), restarts the server, reads the worker's row of
# pg_stat_activity (another role's row), and fills the NOTIFY queue
# (scaffolding).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);
use Time::Local qw(timegm);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node wait_until psql_session wait_said listen_session notifications
  inventory_roles as_app as_admin as_monitor);

# a round of the expiry may ask a reconciler about 5,000 orders for a minute
my $node = inventory_node('notify', q{
inventory.stock_notify_interval = 100ms
inventory.expire_batch = 5000
inventory.reconcile_budget = '60s'
});
$node->safe_psql('postgres', q{
CREATE DATABASE shop;
ALTER DATABASE shop SET inventory.stock_notifications = on;
CREATE DATABASE quiet});
for my $db ('shop', 'quiet')
{
	$node->safe_psql($db, 'CREATE EXTENSION inventory');
}
inventory_roles($node, 'shop');

# A listener of the application, on inventory_stock and marker; heard()
# answers the payloads of inventory_stock so far.
sub listener { return listen_session($node, $_[0], 'shop_app', 'inventory_stock', 'marker'); }
sub heard { return [ map { $_->[0] } @{ notifications($_[0], 'inventory_stock') } ]; }

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
as_admin($node, 'shop', "SELECT inventory.restock('HOT', 40, 'in-hot')");
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'HOT');
			@$g == 1 && $g->[0][0] == 40;
	}),
	'a new SKU on sale is heard, with its units');
my $script = PostgreSQL::Test::Utils::tempdir() . '/buy.sql';
PostgreSQL::Test::Utils::append_to_file($script, <<'EOS');
SELECT (inventory.reserve('HOT', 1, 'buy-' || :client_id || '-' || random())).status;
EOS
my ($bench_out, $bench_err) = ('', '');
IPC::Run::run([ 'pgbench', '-n', '-c', '8', '-t', '20', '-f', $script, $node->connstr('shop') . ' user=shop_app' ],
	'>', \$bench_out, '2>', \$bench_err) or die "pgbench: $bench_err";
is(as_monitor($node, 'shop', "SELECT available FROM inventory.stock WHERE sku = 'HOT'"), '0',
	'160 buyers sold the 40 units out');
my $final = as_monitor($node, 'shop', "SELECT version FROM inventory.stock WHERE sku = 'HOT'");
ok( wait_until(30, sub {
			my $got = of_sku(heard($shop), 'HOT');
			@$got && $got->[-1][0] == 0 && $got->[-1][1] == $final;
	}),
	'the listener hears HOT sold out, with its final version');
is(scalar(@{ of_sku(heard($shop), 'HOT') }), 2, 'once: selling out is one crossing of zero');

# back on sale, and the payload is the latest state
my $sale_at = time;
as_admin($node, 'shop', q{
SELECT inventory.cancel(order_id, batch_id) FROM inventory.ledger
 WHERE sku = 'HOT' AND state = 'PENDING' ORDER BY created_at LIMIT 3});
my $back = as_monitor($node, 'shop', "SELECT available || ' ' || version FROM inventory.stock WHERE sku = 'HOT'");
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'HOT');
			"$g->[-1][0] $g->[-1][1]" eq $back;
	}),
	'a cancel puts HOT back on sale: the listener hears it, with what is available now');
note(sprintf('heard within %.0f ms of the commit, polling included', 1000 * (time - $sale_at)));

# A SKU flickering around zero -- one unit, taken and given back -- while
# pgbench takes and gives back the one unit of 20 other SKUs at random:
# each SKU is sent at most once per inventory.stock_notify_interval over
# the time it flickers, plus its last state, which is heard.
my @load = map { "LOAD-$_" } 1 .. 20;
as_admin($node, 'shop', join('', map { "SELECT inventory.restock('$_', 1, 'in-$_');\n" } 'FLICK', @load));
ok( wait_until(30, sub {
			my $p = heard($shop);
			!grep { @{ of_sku($p, $_) } != 1 } 'FLICK', @load;
	}),
	'21 new SKUs on sale are heard, once each');
my %before = map { $_ => scalar(@{ of_sku(heard($shop), $_) }) } 'FLICK', @load;
my $load_script = PostgreSQL::Test::Utils::tempdir() . '/flicker.sql';
PostgreSQL::Test::Utils::append_to_file($load_script, <<'EOS');
\set s random(1, 20)
\set n random(1, 1000000000)
SELECT (inventory.reserve('LOAD-' || :s, 1, 'ld-' || :client_id || '-' || :n)).status;
SELECT (inventory.cancel('ld-' || :client_id || '-' || :n)).status;
EOS
my $t0 = time;
my ($load_out, $load_err) = ('', '');
my $load = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '4', '-T', '2', '-f', $load_script, $node->connstr('shop') . ' user=shop_app' ],
	'>', \$load_out, '2>', \$load_err);
as_app($node, 'shop', q{
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
END $$});
$load->finish or die "pgbench: $load_err";
my $flicker_s = time - $t0;
my %final = map { split /\|/ } split /\n/, as_monitor($node, 'shop', q{
SELECT sku, available || ' ' || version FROM inventory.stock WHERE sku = 'FLICK' OR sku LIKE 'LOAD-%'});
ok( wait_until(30, sub {
			my $p = heard($shop);
			!grep { my $g = of_sku($p, $_); "$g->[-1][0] $g->[-1][1]" ne $final{$_} } 'FLICK', @load;
	}),
	'after the flicker the listener has the final state of each SKU');
my $most = int($flicker_s / 0.1) + 2;
my %sent = map { $_ => @{ of_sku(heard($shop), $_) } - $before{$_} } 'FLICK', @load;
my @over = grep { $sent{$_} > $most } 'FLICK', @load;
ok(!@over, sprintf('in %.1f s of flicker, no SKU was sent more than once per 100 ms and its last state (%d): %s',
		$flicker_s, $most, join(', ', map { "$_ $sent{$_}" } 'FLICK', @load)));
cmp_ok($sent{FLICK}, '>=', 2, "FLICK's hundreds of crossings made more than one notification");

# A reservation that expires brings its SKU back on sale: the worker's
# expiry is a commit like any other, and notes by the database's setting.
as_admin($node, 'shop', "SELECT inventory.restock('EXPB', 1, 'in-expb')");
ok(wait_until(30, sub { @{ of_sku(heard($shop), 'EXPB') } == 1 }), 'EXPB on sale is heard');
as_app($node, 'shop', "SELECT inventory.reserve('EXPB', 1, 'expb-1', ttl => '1 s')");
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'EXPB');
			@$g >= 2 && $g->[1][0] == 0;
	}),
	'EXPB sold out by a reservation is heard');
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'EXPB');
			@$g == 3 && $g->[2][0] == 1;
	}),
	'and back on sale when the worker expires the reservation');
is(as_admin($node, 'shop', "SELECT state FROM inventory.ledger WHERE order_id = 'expb-1'"), 'EXPIRED',
	'the reservation is EXPIRED');

# A sale by the express writer (reserve_now) is heard too: the writer, a
# session of the database, has its setting.
as_admin($node, 'shop', "SELECT inventory.restock('NOW', 1, 'in-now')");
ok(wait_until(30, sub { @{ of_sku(heard($shop), 'NOW') } == 1 }), 'NOW on sale is heard');
is(as_app($node, 'shop', "SELECT inventory.reserve_now('NOW', 1, 'now-1')"), 'ok',
	'reserve_now() takes its last unit');
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'NOW');
			@$g == 2 && $g->[-1][0] == 0;
	}),
	'NOW sold out by the express writer is heard');

# The notification comes from the worker, not from the session that
# committed.  A buyer holding the row of an overdue reservation keeps the
# worker in the database, trying again every inventory.expire_interval,
# so that pg_stat_activity still shows it when the listener has heard.
as_admin($node, 'shop', "SELECT inventory.restock('PIN', 1, 'in-pin')");
as_app($node, 'shop', "SELECT inventory.reserve('PIN', 1, 'pin-1', ttl => '100 ms')");
# the administrator holds the row (FOR UPDATE: a write right on the ledger)
my $holder = psql_session($node, 180, 1, 'shop', 'shop_admin');
$holder->{in} .= "BEGIN;\nSELECT 'locked ' || order_id FROM inventory.ledger WHERE order_id = 'pin-1' FOR UPDATE;\n";
wait_said($holder, qr/locked pin-1\n/);
my $worker_sql = q{
SELECT pid FROM inventory.worker_status WHERE datname = 'shop' AND state = 'running' AND lag > '0'};
wait_until(30, sub { as_monitor($node, 'shop', $worker_sql) ne '' })
  or die 'the worker does not stay in shop, trying to expire the held reservation';
my $seller_pid = as_admin($node, 'shop', q{
SELECT inventory.restock('WHO', 1, 'in-who');
SELECT pg_backend_pid()});
ok(wait_until(30, sub { @{ of_sku(heard($shop), 'WHO') } == 1 }), 'WHO on sale is heard');
my ($who_pid) = $shop->{out} =~ /payload "\{"sku": "WHO"[^\n]*" received from server process with PID (\d+)/;
isnt($who_pid, $seller_pid, 'from a process other than the session that restocked');
# (the worker's row of pg_stat_activity is another role's: the superuser
# reads it)
is( $node->safe_psql('shop', qq{
SELECT backend_type || ' ' || application_name || ' ' || datname FROM pg_stat_activity WHERE pid = $who_pid}),
	'inventory worker inventory worker shop',
	'from the inventory worker of its database');
is(as_monitor($node, 'shop', $worker_sql), $who_pid, 'the one worker_status shows in shop');
$holder->{in} .= "ROLLBACK;\n\\q\n";
$holder->{run}->finish;
ok( wait_until(30, sub {
			as_admin($node, 'shop', "SELECT state FROM inventory.ledger WHERE order_id = 'pin-1'") eq 'EXPIRED';
	}),
	'released, the reservation expires');

# Holds in flight do not count in the payload's available: with the
# workers off, a cancel puts HOLD back on sale and a buyer's open
# transaction holds one of its units; the worker, back, sends the
# committed available, 2, while inventory.available() says 1.
as_admin($node, 'shop', "SELECT inventory.restock('HOLD', 2, 'in-hold')");
ok(wait_until(30, sub { @{ of_sku(heard($shop), 'HOLD') } == 1 }), 'HOLD on sale is heard');
as_app($node, 'shop', "SELECT inventory.reserve('HOLD', 2, 'hold-all')");
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'HOLD');
			@$g == 2 && $g->[-1][0] == 0;
	}),
	'HOLD sold out is heard');
$node->safe_psql('postgres', q{
ALTER SYSTEM SET inventory.worker_enabled = off;
SELECT pg_reload_conf()});
wait_until(30, sub {
		as_monitor($node, 'shop', "SELECT state FROM inventory.worker_status WHERE datname = 'shop'") eq 'disabled';
}) or die 'the workers are not off in shop';
as_app($node, 'shop', "SELECT inventory.cancel('hold-all')");
my $buyer = psql_session($node, 180, 1, 'shop', 'shop_app');
$buyer->{in} .= "BEGIN;\nSELECT 'held ' || (inventory.reserve('HOLD', 1, 'hold-1')).status;\n";
wait_said($buyer, qr/held ok\n/);
is(as_app($node, 'shop', "SELECT inventory.available('HOLD')"), '1',
	'a buyer in flight holds one of the two units HOLD has back');
my $hold_version = as_monitor($node, 'shop', "SELECT version FROM inventory.stock WHERE sku = 'HOLD'");
$node->safe_psql('postgres', q{
ALTER SYSTEM RESET inventory.worker_enabled;
SELECT pg_reload_conf()});
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'HOLD');
			@$g == 3 && $g->[-1][0] == 2 && $g->[-1][1] == $hold_version;
	}),
	'the worker sends HOLD back on sale with its committed available, 2: the hold in flight does not count');
# (the application reads its own sessions' rows of pg_stat_activity)
is( as_app($node, 'shop', q{
SELECT state FROM pg_stat_activity WHERE query LIKE '%hold-1%' AND pid <> pg_backend_pid()}),
	'idle in transaction', 'while the buyer\'s transaction is still open');
$buyer->{in} .= "ROLLBACK;\n\\q\n";
$buyer->{run}->finish;

# Notes are sent between the worker's transactions, not once a round: a
# SKU sells out while a round that lasts seconds -- a reconciler asked
# about each of 2,000 overdue orders, 63 a transaction -- clears a backlog,
# and is heard before the backlog is cleared.
# The reconciler's owner is a role of the shop's, whose member the
# administrator who sets it is (docs/applications.md); the superuser
# creates the role and the function (in public, the database owner's).
$node->safe_psql('shop', q{
CREATE ROLE slow_shop;
GRANT slow_shop TO shop_admin;
CREATE FUNCTION slow_reconciler(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$ SELECT 'expire' FROM pg_sleep(0.002) $$;
ALTER FUNCTION slow_reconciler(text, integer) OWNER TO slow_shop});
as_admin($node, 'shop', q{
SELECT inventory.set_reconciler('slow_reconciler(text, integer)');
SELECT inventory.restock('LAST', 1, 'in-last');
SELECT inventory.restock('BACKLOG', 2000, 'in-backlog')});
ok(wait_until(30, sub { @{ of_sku(heard($shop), 'LAST') } == 1 }), 'LAST on sale is heard');
as_admin($node, 'shop', q{
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
SELECT 'back-' || g, 1, 'reserve', 'BACKLOG', 1, now() - interval '1 minute'
  FROM generate_series(1, 2000) g});
my $backlog_left = sub {
	as_admin($node, 'shop', "SELECT count(*) FROM inventory.ledger WHERE sku = 'BACKLOG' AND state = 'PENDING'");
};
# the round has begun (a wait: what is heard during it is the test)
wait_until(30, sub { $backlog_left->() < 2000 }) or die 'the worker has not begun to clear the backlog';
as_app($node, 'shop', "SELECT inventory.reserve('LAST', 1, 'last-1')");
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'LAST');
			@$g == 2 && $g->[-1][0] == 0;
	}),
	'LAST sold out is heard');
my $left = $backlog_left->();
cmp_ok($left, '>', 0, "before the round has cleared the backlog ($left overdue orders left)");
ok(wait_until(60, sub { $backlog_left->() == 0 }), 'then the backlog is cleared');
is(as_monitor($node, 'shop', "SELECT expired FROM inventory.reconcile_stats WHERE datname = 'shop'"),
	'2000', 'by the reconciler\'s answers');
as_admin($node, 'shop', 'SELECT inventory.set_reconciler(NULL)');

# many SKUs at once: 3,000 new SKUs on sale in one transaction are sent
# together, and each is heard
as_admin($node, 'shop', q{
SELECT count(inventory.restock('MANY-' || g, g, 'in-many-' || g)) FROM generate_series(1, 3000) g});
ok( wait_until(60, sub {
			my %many = map { /"sku": "MANY-(\d+)", "available": (\d+),/ ? ($1 => $2) : () } @{ heard($shop) };
			keys %many == 3000 && !grep { $many{$_} != $_ } keys %many;
	}),
	'3,000 SKUs on sale in one transaction are each heard, with their units');
ok(!$node->log_contains(qr/terminated by signal/), 'and no process of the server crashed');

# a database without the setting sends nothing: a visit of its worker
# (made due by an expiry) passes, then a marker shows nothing came before
# (the visit sends what is noted before it expires anything)
as_admin($node, 'quiet', "SELECT inventory.restock('Q', 2, 'in-q')");
as_app($node, 'quiet', q{
SELECT inventory.reserve('Q', 1, 'q-1');
SELECT inventory.reserve('Q', 1, 'q-2', ttl => '100 ms')});
# Q sold out, and the worker visited the quiet database to expire a
# reservation; then the marker arrives (waits: what came before the
# marker is the test)
wait_until(30, sub {
		as_admin($node, 'quiet', "SELECT state FROM inventory.ledger WHERE order_id = 'q-2'") eq 'EXPIRED';
}) or die 'the worker did not expire q-2';
as_app($node, 'quiet', q{NOTIFY marker, 'done'});
wait_until(30, sub { heard($quiet); $quiet->{out} =~ /notification "marker"/ }) or die 'the marker did not arrive';
is(scalar(@{ heard($quiet) }), 0, 'and no inventory_stock notification: the setting is off by default');

# The database's setting is the only one: each commit notes crossings by
# its session's setting, so no session, role or client may have another
# one than its database's.
#
# quiet_visit(TAG): a visit of the quiet database's worker (made due by an
# expiry) passes, then a marker shows what came before it -- a visit sends
# what was noted before it expires anything; returns the payloads heard.
sub quiet_visit
{
	my ($tag) = @_;
	as_admin($node, 'quiet', "SELECT inventory.restock('Q-$tag', 1, 'in-q-$tag')");
	as_app($node, 'quiet', "SELECT inventory.reserve('Q-$tag', 1, 'q-$tag', ttl => '100 ms')");
	wait_until(30, sub {
		as_admin($node, 'quiet', "SELECT state FROM inventory.ledger WHERE order_id = 'q-$tag'") eq 'EXPIRED';
	}) or die "the worker did not expire q-$tag";
	as_app($node, 'quiet', qq{NOTIFY marker, '$tag'});
	wait_until(30, sub { heard($quiet); $quiet->{out} =~ /notification "marker" with payload "$tag"/ })
	  or die "marker $tag not heard";
	return heard($quiet);
}

# SET, SET LOCAL, set_config() and a function's SET clause are refused, to
# a superuser's session too: PostgreSQL lets only a superuser set a
# parameter of context superuser at all (the application is refused
# below), and the extension refuses even that
my $refused = qr/ERROR:  22023: parameter "inventory.stock_notifications" can only be set for a database or for the server\n.*DETAIL:  A session, role or client with another setting than its database's would leave the listeners of inventory_stock with a stale state\.\n.*HINT:  Set it for the database: ALTER DATABASE quiet SET inventory.stock_notifications = on\./s;
for my $set ('SET inventory.stock_notifications = on',
	'BEGIN; SET LOCAL inventory.stock_notifications = on',
	"SELECT set_config('inventory.stock_notifications', 'on', false)")
{
	my ($ret, $out, $err) = $node->psql('quiet', "\\set VERBOSITY verbose\n$set");
	like($err, $refused, "refused: $set");
}
my $sell_noted = q{
CREATE FUNCTION sell_noted() RETURNS text LANGUAGE sql
	SET inventory.stock_notifications = on
	AS $$ SELECT (inventory.restock('F', 1, 'in-f')).status $$};
my ($ret, $out, $err) = $node->psql('quiet', "\\set VERBOSITY verbose\n$sell_noted");
like($err, $refused, "a function's SET clause is refused by CREATE FUNCTION, which checks the body with it");
$node->safe_psql('quiet', "SET check_function_bodies = off; $sell_noted");
($ret, $out, $err) = $node->psql('quiet', "\\set VERBOSITY verbose\nSELECT sell_noted()");
like($err, $refused, 'and, created without that check, when the function is called');
my ($shop_ret, $shop_out, $shop_err) = $node->psql('shop', 'SET inventory.stock_notifications = off');
like($shop_err, qr/HINT:  Set it for the database: ALTER DATABASE shop SET inventory.stock_notifications = off\./,
	'nor can a session of shop turn it off; the hint names the database');
# the application's session: refused before the extension is asked (no
# role of the extension may set a superuser parameter)
($shop_ret, $shop_out, $shop_err) = $node->psql('shop', "\\set VERBOSITY verbose\nSET inventory.stock_notifications = off",
	extra_params => [ '-U', 'shop_app' ]);
like($shop_err, qr/ERROR:  42501: permission denied to set parameter "inventory\.stock_notifications"/,
	'the application may not set it either (42501)');

# a client's options: the connection is refused
$node->connect_fails($node->connstr('quiet') . " options='-c inventory.stock_notifications=on'",
	'a client asking for the setting (PGOPTIONS) is refused',
	expected_stderr => qr/FATAL:  parameter "inventory.stock_notifications" can only be set for a database or for the server/);

# ALTER ROLE ... SET, with or without IN DATABASE, is accepted, as
# PostgreSQL accepts any valid value there, and ignored with a WARNING
# at each connection: logins of an administrator's (who restock) and of
# an application's (who reserves), each with a setting of its own made by
# the superuser
$node->safe_psql('postgres', q{
CREATE ROLE notifier LOGIN IN ROLE inventory_admin;
CREATE ROLE notifier_here LOGIN IN ROLE inventory_admin;
CREATE ROLE silent LOGIN IN ROLE inventory_app;
ALTER ROLE notifier SET inventory.stock_notifications = on;
ALTER ROLE notifier_here IN DATABASE quiet SET inventory.stock_notifications = on;
ALTER ROLE silent SET inventory.stock_notifications = off});
for my $role ('notifier', 'notifier_here')
{
	($ret, $out, $err) = $node->psql('quiet', q{
SHOW inventory.stock_notifications;
SELECT (inventory.restock('R', 3, 'in-r-' || current_user)).status},
		extra_params => [ '-U', $role ]);
	my $in = $role eq 'notifier_here' ? ' IN DATABASE quiet' : '';
	like($err, qr/WARNING:  parameter "inventory.stock_notifications" can only be set for a database or for the server\n.*HINT:  Remove it from the role \(ALTER ROLE $role$in RESET inventory.stock_notifications\) and set it for the database: ALTER DATABASE quiet SET inventory.stock_notifications = on\./s,
		"$role: the role's setting is ignored with a WARNING at connection");
	is($out, "off\nok", "$role: the session has the database's setting, and restocks R");
}
ok(!grep({ /"sku": "R"/ } @{ quiet_visit('role') }), 'nothing was heard of R: the roles noted nothing');

# a role with the setting off in shop: its sale of the last unit is heard
as_admin($node, 'shop', "SELECT inventory.restock('SIL', 1, 'in-sil')");
ok(wait_until(30, sub { @{ of_sku(heard($shop), 'SIL') } == 1 }), 'SIL on sale is heard');
($ret, $out, $err) = $node->psql('shop', q{
SHOW inventory.stock_notifications;
SELECT (inventory.reserve('SIL', 1, 'sil-1')).status},
	extra_params => [ '-U', 'silent' ]);
like($err, qr/WARNING:  parameter "inventory.stock_notifications"/, 'a role with the setting off is warned at connection');
is($out, "on\nok", 'and has the database setting, on; it takes the last unit of SIL');
ok( wait_until(30, sub {
			my $g = of_sku(heard($shop), 'SIL');
			@$g == 2 && $g->[-1][0] == 0;
	}),
	'SIL sold out is heard: no role leaves the listeners with a stale state');

# the server's setting (ALTER SYSTEM) applies to a database without its own
$node->safe_psql('postgres', q{
ALTER SYSTEM SET inventory.stock_notifications = on;
SELECT pg_reload_conf()});
ok( wait_until(30, sub { as_app($node, 'quiet', 'SHOW inventory.stock_notifications') eq 'on' }),
	'ALTER SYSTEM turns it on for the quiet database');
as_admin($node, 'quiet', "SELECT inventory.restock('SYS', 2, 'in-sys')");
ok( wait_until(30, sub {
			my $g = of_sku(heard($quiet), 'SYS');
			@$g == 1 && $g->[0][0] == 2;
	}),
	'and a restock there is heard');
$node->safe_psql('postgres', q{
ALTER SYSTEM RESET inventory.stock_notifications;
SELECT pg_reload_conf()});
ok( wait_until(30, sub { as_app($node, 'quiet', 'SHOW inventory.stock_notifications') eq 'off' }),
	'ALTER SYSTEM RESET turns it off again');

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
my $since_restart = -s $node->logfile;
$shop = listener('shop');
as_admin($node, 'shop', "SELECT inventory.restock('JAM', 1, 'in-jam')");
ok(wait_until(30, sub { @{ of_sku(heard($shop), 'JAM') } == 1 }), 'after a restart, notifications are heard');
my $failures = sub {
	as_monitor($node, 'shop', "SELECT notify_failures FROM inventory.worker_status WHERE datname = 'shop'");
};
is($failures->(), '0', 'worker_status counts no failed send');

# (scaffolding: the queue is made to take nothing more; each fill dies
# unless it fails so)
my $notify_dir = $node->data_dir . '/pg_notify';
chmod(0500, $notify_dir) or die "chmod $notify_dir: $!";
my ($fill_ret, $fill_out, $fill_err) = $node->psql('shop',
	q{SELECT pg_notify('fill', repeat('x', 7900) || g) FROM generate_series(1, 40) g});
$fill_err =~ /pg_notify.*Permission denied/ or die "the queue took 40 pages of notifications: $fill_err";
($fill_ret, $fill_out, $fill_err) = $node->psql('shop',
	q{DO $$ BEGIN LOOP PERFORM pg_notify('fill', ''); COMMIT; END LOOP; END $$});
$fill_err =~ /pg_notify.*Permission denied/ or die "the queue took the smallest notification: $fill_err";

# JAM sells out: the worker's send fails, and is counted and logged
as_app($node, 'shop', "SELECT inventory.reserve('JAM', 1, 'jam-0')");
ok(wait_until(30, sub { $failures->() >= 1 }), 'the failed send is counted in worker_status.notify_failures');
ok( $node->log_contains(
		qr/WARNING:  could not send the notifications of database "shop" to LISTEN inventory_stock: could not access status of transaction 0\n.*DETAIL:  Could not open file "pg_notify\/0000": Permission denied\.\n.*HINT:  They are sent again, with the latest state, in 1 s at the earliest\. When the NOTIFY queue is full, a listener that does not read its notifications, such as a session idle in an open transaction, keeps it from emptying\./
	),
	'and logged as a WARNING, with the reason and a hint');

# the worker goes on expiring and folding meanwhile
my ($expired0, $folded0) = split /\|/, as_monitor($node, 'shop',
	"SELECT expired, folded FROM inventory.worker_status WHERE datname = 'shop'");
as_admin($node, 'shop', "SELECT inventory.restock('EXP', 1, 'in-exp')");
as_app($node, 'shop', "SELECT inventory.reserve('EXP', 1, 'exp-1', ttl => '200 ms')");
ok( wait_until(30, sub {
			as_admin($node, 'shop', "SELECT state FROM inventory.ledger WHERE order_id = 'exp-1'") eq 'EXPIRED';
	}),
	'while no notification can be sent, the worker expires an overdue reservation');
ok( wait_until(30, sub {
			as_monitor($node, 'shop', qq{
SELECT expired > $expired0 AND folded > $folded0 FROM inventory.worker_status WHERE datname = 'shop'}) eq 't';
	}),
	'and folds');

# Retried after a back-off, however often crossings make the database due:
# 1 s after the first failure, then 2 s, 4 s... (up to 30 s).  A buyer
# flips JAM between sold out and on sale every 50 ms or so, until the test
# lets go of an advisory lock, while the test waits for the worker to try
# again (a deadline, not a window).  The back-off is then read from the
# server's log: each failed send is a WARNING whose HINT says when it is
# tried again, and the next WARNING's time, taken by the same clock, is no
# sooner.  (The worker takes the time of the failure just before it
# writes the WARNING; 100 ms of slack covers that step on a loaded
# machine, well below the shortest back-off.)
my $f0 = $failures->();
my $gate = $node->background_psql('shop');
$gate->query_safe('SELECT pg_advisory_lock(31031)');
my $flipper = psql_session($node, 300, 1, 'shop', 'shop_app');
$flipper->{in} .= q{
DO $$
DECLARE
	i int := 0;
BEGIN
	WHILE NOT pg_try_advisory_lock(31031) LOOP
		i := i + 1;
		PERFORM inventory.cancel('jam-' || (i - 1));
		COMMIT;
		PERFORM inventory.reserve('JAM', 1, 'jam-' || i);
		COMMIT;
		PERFORM pg_sleep(0.05);
	END LOOP;
	PERFORM pg_advisory_unlock(31031);
	RAISE NOTICE 'flips %', i;
END $$;
SELECT 'flipped';
};
my $want_tries = $f0 + 1 < 3 ? 3 : $f0 + 1;
ok(wait_until(60, sub { $failures->() >= $want_tries }),
	"the send is tried again while crossings make the database due ($want_tries failed tries in all)");
$gate->query_safe('SELECT pg_advisory_unlock(31031)');
$gate->quit;
wait_said($flipper, qr/^flipped$/m);
$flipper->{in} .= "\\q\n";
$flipper->{run}->finish;
my $jam_version = as_monitor($node, 'shop', "SELECT version FROM inventory.stock WHERE sku = 'JAM'");

# the failed sends in the log since the restart: [time, pid, back-off]
# (the worker counts a failure, then logs it: the count read before the
# log is at most the WARNINGs read, the count read after at least)
my $tries_before = $failures->();
my $log_since = slurp_file($node->logfile, $since_restart);
my $tries_after = $failures->();
my (@sends, %open);
for my $line (split /\n/, $log_since)
{
	my ($date, $hms, $frac, $pid, $rest) =
	  $line =~ /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)\.(\d+) \S+ \[(\d+)\] (.*)$/ or next;
	if ($rest =~ /^WARNING:  could not send the notifications of database "shop"/)
	{
		my ($y, $mo, $d) = split /-/, $date;
		my ($h, $mi, $sec) = split /:/, $hms;
		push @sends, [ timegm($sec, $mi, $h, $d, $mo - 1, $y) + "0.$frac", $pid, undef ];
		$open{$pid} = $sends[-1];
	}
	elsif ($rest =~ /^HINT:  They are sent again, with the latest state, in (\d+) s at the earliest/ && $open{$pid})
	{
		$open{$pid}[2] = $1;
		delete $open{$pid};
	}
}
ok($tries_before <= @sends && @sends <= $tries_after,
	'the log has a WARNING for each failed send (' . scalar(@sends) . ')')
  or diag("worker_status counted $tries_before, then $tries_after");
note(sprintf('failed sends at %s s', join(', ', map { sprintf '%.3f', $_->[0] - $sends[0][0] } @sends)));
my @backoffs = map { $_->[2] // 'none' } @sends;
my @doubling = map { my $b = 2**$_; $b > 30 ? 30 : $b } 0 .. $#sends;
is("@backoffs", "@doubling", "each failed send backs off twice as long as the one before: @backoffs s");
my @early = map {
	my $gap = $sends[$_][0] - $sends[ $_ - 1 ][0];
	$gap < $backoffs[ $_ - 1 ] - 0.1 ? sprintf('try %d came %.3f s after the one before, which said %s s', $_ + 1, $gap,
		$backoffs[ $_ - 1 ]) : ()
} 1 .. $#sends;
is(join('; ', @early), '', 'and no try came sooner than the back-off the one before had said');
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
as_admin($node, 'shop', q{
SELECT inventory.cancel(order_id) FROM inventory.ledger WHERE sku = 'JAM' AND state = 'PENDING'});
ok(wait_until(30, sub { of_sku(heard($shop), 'JAM')->[-1][0] == 1 }), 'the next crossing is heard at once');
is($failures->(), $settled, 'with no more failures');
is(as_admin($node, 'shop', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"the cache agrees with the tables: verify('30 s') is empty");

$shop->{in} .= "\\q\n";
$shop->{run}->finish;
$node->stop;
done_testing();

# The reconciler with the real workers: the expiry asks the application
# about each overdue order before it settles it.
#
# The roles are the manual's, each connected as itself: shop_owner, the
# shop's NOLOGIN role, owns the schema app, its tables and its reconciler;
# shop_admin (inventory_admin, a member of shop_owner) creates them for it,
# sets the reconciler, restocks and reads the waits; shop_app
# (inventory_app) reserves; shop_monitor (inventory_monitor) reads
# worker_status and reconcile_stats.  The superuser creates the databases,
# the extension and the roles, sets the server's settings (per database:
# how often an order is asked again, how many asks), restores a dump, and
# stops and kills the server.
#
#   * the administrator sets a reconciler that answers from the
#     application's payments; the worker asks, as the function's owner, and
#     confirms the paid orders, cancels the failed ones, expires the others
#     and leaves the pending ones waiting in inventory.reconcile_waiting,
#     while worker_status.lag stays small; inventory.reconcile_stats counts
#     what it did;
#   * a restart and a kill -9 of the postmaster with orders waiting: the
#     waits survive, nothing waiting is settled by the crash, and a payment
#     that arrives afterwards confirms its order;
#   * pg_dump -Fc by the administrator and pg_restore without flags by the
#     superuser: the restored database has the reconciler, owned by the
#     same role, with its timing, which keeps the application's function
#     from being dropped; its waits are not dumped, and its waiting orders
#     are asked about again there, as the function's owner;
#   * with one worker for the server, a reconciler slower than its budget
#     in one database does not keep the expiry from another database;
#   * behind the router: inventory.set_reconciler(fn text), called by the
#     router's administrator, sets and removes the reconciler on every node,
#     fails and sets nothing with a node down, and each node's worker asks
#     its own database, as the function's owner there.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node wait_until inventory_roles);
use RouterCluster qw(start_nodes start_router);

my $DEADLINE = 30;    # seconds, for every wait of this test
my $BOUND    = 5;     # seconds past expires_at within which the worker settles an order

my $node = inventory_node('reconcile', qq{
inventory.expire_interval = '100ms'
log_statement = none
});

# the superuser: creating databases, the extension and roles, the server's
# settings, and scaffolding
sub sql { return $node->safe_psql(@_); }
# as(ROLE, DB, SQL): SQL run by the login role ROLE, connected as it
sub as
{
	my ($role, $db, $query) = @_;
	return $node->safe_psql($db, $query, extra_params => [ '-U', $role ]);
}
sub admin   { return as('shop_admin',   @_); }
sub app     { return as('shop_app',     @_); }
sub monitor { return as('shop_monitor', @_); }

# the lines of NODE's log since offset FROM that say a worker failed: an
# error ends a worker's visit with exit code 1, and the launcher starts
# another (a shutdown's SIGTERM does too: look before one)
sub worker_failures
{
	my ($n, $from) = @_;
	return join "\n",
	  grep { /background worker "inventory worker" \(PID \d+\) exited with exit code [^0]/ }
	  split /\n/, slurp_file($n->logfile, $from);
}
my $log_from = -s $node->logfile;

# the statement's error (stderr), run as the given user
sub sql_err
{
	my ($db, $query, $user) = @_;
	my ($ret, $out, $err) = $node->psql($db, $query,
		extra_params => [ '-U', $user // $node->safe_psql('postgres', 'SELECT current_user') ]);
	return $ret == 0 ? undef : $err;
}

# the application in schema SCHEMA: payments, the answer to the expiry from
# them (SCHEMA.paid), and a log of every ask (who asked, in which database,
# from which process), made by the administrator for the shop's role
sub app_sql
{
	my ($schema) = @_;
	my $sql = q{
CREATE TABLE app.payments (order_id text PRIMARY KEY, state text NOT NULL);
CREATE TABLE app.asked (order_id text, batch_id integer, who name, db name, backend text,
                        at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION app.paid(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, app, pg_temp
	AS $$
DECLARE
	s text := (SELECT p.state FROM payments p WHERE p.order_id = paid.order_id);
BEGIN
	INSERT INTO asked (order_id, batch_id, who, db, backend)
	VALUES (paid.order_id, paid.batch_id, current_user, current_database(),
	        (SELECT a.backend_type FROM pg_stat_activity a WHERE a.pid = pg_backend_pid()));
	RETURN CASE s WHEN 'paid' THEN 'confirm' WHEN 'failed' THEN 'cancel'
	              WHEN 'pending' THEN 'wait' ELSE 'expire' END;
END
$$;
ALTER TABLE app.payments OWNER TO shop_owner;
ALTER TABLE app.asked OWNER TO shop_owner;
ALTER FUNCTION app.paid(text, integer) OWNER TO shop_owner;
};
	$sql =~ s/\bapp\./$schema./g;
	$sql =~ s/search_path = pg_catalog, app,/search_path = pg_catalog, $schema,/;
	return $sql;
}

# --- a. the worker asks, as the function's owner ----------------------------

my $rsig = 'inventory.reconciler(text, integer, interval, interval, integer, interval)';

# shop_owner may read pg_stat_activity, so that the log of its reconciler
# can name the process that asks (the worker's session user is the
# bootstrap superuser)
sql('postgres', q{
CREATE DATABASE shop;
});
# asked again every second, and as often as the test needs: the settings
# of the database, which the worker's connection applies
sql('shop', 'CREATE EXTENSION inventory');
inventory_roles($node, 'shop');
sql('shop', q{
CREATE ROLE shop_owner NOLOGIN;
GRANT shop_owner TO shop_admin;
GRANT pg_read_all_stats TO shop_owner;
CREATE SCHEMA app AUTHORIZATION shop_owner;
ALTER DATABASE shop SET inventory.reconcile_retry = '1s';
ALTER DATABASE shop SET inventory.reconcile_max_asks = 1000000;
});
admin('shop', app_sql('app') . q{
SELECT inventory.set_reconciler('app.paid(text, integer)', timeout => '900ms');
});
is(admin('shop', qq{
SELECT p.proowner::regrole, pg_get_function_result(p.oid)
  FROM pg_proc p WHERE p.oid = '$rsig'::regprocedure}),
	'shop_admin|text', 'set_reconciler() by the administrator: inventory.reconciler, owned by that role');

# orders, each paid as its name says; o-paid-1 and o-wait-4 have two lines
admin('shop', q{
SELECT inventory.restock('CUP', 100, 'delivery');
INSERT INTO app.payments VALUES
  ('o-paid-1', 'paid'), ('o-paid-2', 'paid'), ('o-failed', 'failed'),
  ('o-wait-1', 'pending'), ('o-wait-2', 'pending'), ('o-wait-3', 'pending'), ('o-wait-4', 'pending');
});
app('shop', q{
BEGIN;
SELECT inventory.reserve('CUP', 2, 'o-paid-1', 1, '1 second');
SELECT inventory.reserve('CUP', 1, 'o-paid-1', 2, '1 second');
SELECT inventory.reserve('CUP', 1, 'o-paid-2', 1, '1 second');
SELECT inventory.reserve('CUP', 3, 'o-failed', 1, '1 second');
SELECT inventory.reserve('CUP', 1, 'o-gone', 1, '1 second');
SELECT inventory.reserve('CUP', 1, 'o-wait-' || g, 1, '1 second') FROM generate_series(1, 4) g;
SELECT inventory.reserve('CUP', 2, 'o-wait-4', 2, '1 second');
COMMIT;
});

my $states_sql = q{
SELECT string_agg(order_id || '/' || batch_id || ' ' || state, ', ' ORDER BY order_id, batch_id)
  FROM inventory.ledger WHERE kind = 'reserve'};
my $settled = 'o-failed/1 CANCELLED, o-gone/1 EXPIRED, o-paid-1/1 CONFIRMED, o-paid-1/2 CONFIRMED, '
  . 'o-paid-2/1 CONFIRMED';
my $waiting = 'o-wait-1/1 PENDING, o-wait-2/1 PENDING, o-wait-3/1 PENDING, o-wait-4/1 PENDING, '
  . 'o-wait-4/2 PENDING';
my $waiting_sql = q{
SELECT string_agg(order_id || ' ' || lines || ' ' || units, ', ' ORDER BY order_id)
  FROM inventory.reconcile_waiting};
ok(wait_until($DEADLINE, sub {
	admin('shop', $states_sql) eq "$settled, $waiting"
	  && admin('shop', $waiting_sql) eq 'o-wait-1 1 1, o-wait-2 1 1, o-wait-3 1 1, o-wait-4 2 3' }),
	'the worker settles each overdue order as its payment says; the pending ones wait')
  or diag(admin('shop', $states_sql) . "\n" . admin('shop', $waiting_sql));
my $latest = admin('shop', q{
SELECT max(extract(epoch FROM settled_at - expires_at)) FROM inventory.ledger
 WHERE kind = 'reserve' AND state <> 'PENDING'});
cmp_ok($latest, '<=', $BOUND, "each within ${BOUND}s of its expires_at (the latest: ${latest}s)");
is(admin('shop', q{
SELECT string_agg(DISTINCT who || ' ' || db || ' ' || backend, ', ') FROM app.asked}),
	'shop_owner shop inventory worker',
	'every ask ran in the worker, as the function\'s owner (not as the administrator who set it)');
is(admin('shop', q{
SELECT string_agg(order_id || ' ' || count, ', ' ORDER BY order_id)
  FROM (SELECT order_id, count(*) FROM app.asked WHERE order_id NOT LIKE 'o-wait-%' GROUP BY 1) a}),
	'o-failed 1, o-gone 1, o-paid-1 1, o-paid-2 1',
	'each order settled was asked about once, a two-line order too');

ok(wait_until($DEADLINE, sub {
	admin('shop', "SELECT count(*) FROM inventory.ledger WHERE NOT folded AND state IS DISTINCT FROM 'PENDING'") == 0 }),
	'the worker folds every settled movement, the confirmed past expires_at too');

# the waiting orders are not late: the worker's next due time is their next ask
my $max_lag = 0;
my $end = time + 4;
while (time < $end)
{
	my $lag = monitor('shop', "SELECT extract(epoch FROM lag) FROM inventory.worker_status WHERE datname = 'shop'");
	$max_lag = $lag if $lag > $max_lag;
	usleep(100_000);
}
cmp_ok($max_lag, '<', 3, "worker_status.lag stays small while orders wait (at most ${max_lag}s in 4 s)");
ok(admin('shop', q{SELECT min(asks) >= 2 FROM inventory.reconcile_wait}) eq 't',
	'meanwhile the waiting orders were asked again (reconcile_retry of the database: 1s)');

# the counters against the application's own log: the worker stopped, both
# are still
$node->append_conf('postgresql.conf', "inventory.worker_enabled = off\n");
$node->reload;
ok(wait_until($DEADLINE, sub {
	sql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'inventory worker'") == 0 }),
	'the worker stops');
my $wait_asks = admin('shop', q{
SELECT sum(l.lines) FROM app.asked a
  JOIN (SELECT order_id, count(*) AS lines FROM inventory.ledger WHERE state = 'PENDING' GROUP BY 1) l USING (order_id)});
cmp_ok($wait_asks, '>=', 10, "the waiting orders' lines were asked about $wait_asks times");
is(monitor('shop', q{
SELECT confirmed || ' ' || cancelled || ' ' || expired || ' ' || waited || ' ' || failed
  FROM inventory.reconcile_stats WHERE datname = 'shop'}),
	"3 1 1 $wait_asks 0", 'reconcile_stats: 3 confirmed, 1 cancelled, 1 expired, and a wait per line asked');
is(admin('shop', 'SELECT count(*) FROM inventory.verify()'), '0', 'verify() is empty');
is(worker_failures($node, $log_from), '', 'no visit of a worker failed');
$node->adjust_conf('postgresql.conf', 'inventory.worker_enabled', 'on');
$node->reload;

# --- b. a restart and a crash with orders waiting ---------------------------

my $waits_sql = 'SELECT string_agg(order_id, \' \' ORDER BY order_id) FROM inventory.reconcile_wait';
my $stats_sql = q{
SELECT confirmed || ' ' || cancelled || ' ' || expired || ' ' || failed
  FROM inventory.reconcile_stats WHERE datname = 'shop'};

# kill9(): kills the postmaster with SIGKILL, waits for every process of the
# server to exit, and starts it again
sub kill9_start
{
	my @pids = split /\n/, sql('postgres', 'SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()');
	push @pids, (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
	$node->kill9;
	ok(wait_until($DEADLINE, sub { !grep { kill 0, $_ } @pids }),
		'every process of the killed server exits');
	ok($node->start(fail_ok => 1), 'the server starts again after kill -9 of the postmaster');
}

for my $round ([ 'restart', 'o-wait-1', sub { $node->restart } ],
	[ 'kill -9', 'o-wait-2', \&kill9_start ])
{
	my ($how, $paid, $stop_start) = @$round;
	my $before = admin('shop', $waits_sql);
	my $states = admin('shop', $states_sql);
	$stop_start->();
	$log_from = -s $node->logfile;
	is(admin('shop', $waits_sql), $before, "$how: the waits survive ($before)");
	is(admin('shop', $states_sql), $states, "$how: nothing waiting was settled");
	my $asked = admin('shop', 'SELECT count(*) FROM app.asked');
	ok(wait_until($DEADLINE, sub { admin('shop', 'SELECT count(*) FROM app.asked') > $asked }),
		"$how: the worker asks about them again");
	is(admin('shop', $states_sql), $states, "$how: they still wait");
	admin('shop', "UPDATE app.payments SET state = 'paid' WHERE order_id = '$paid'");
	ok(wait_until($DEADLINE, sub {
		admin('shop', "SELECT state FROM inventory.ledger WHERE order_id = '$paid'") eq 'CONFIRMED' }),
		"$how: $paid, paid now, is confirmed by the worker");
	is(monitor('shop', $stats_sql), '1 0 0 0', "$how: reconcile_stats counts since the start: 1 confirmed");
	is(admin('shop', "SELECT count(*) FROM inventory.reconcile_wait WHERE order_id = '$paid'"), '0',
		"$how: its wait is gone");
	is(admin('shop', 'SELECT count(*) FROM inventory.verify()'), '0', "$how: verify() is empty");
	is(worker_failures($node, $log_from), '', "$how: no visit of a worker failed since the start");
}
is(admin('shop', $waits_sql), 'o-wait-3 o-wait-4', 'o-wait-3 and o-wait-4 still wait');

# --- c. pg_dump and pg_restore ----------------------------------------------

my $tmp = PostgreSQL::Test::Utils::tempdir;
$node->command_ok([ 'pg_dump', '-Fc', '-U', 'shop_admin', '-d', $node->connstr('shop'), '-f', "$tmp/shop.dump" ],
	'pg_dump -Fc by the administrator');
my $toc;
IPC::Run::run([ 'pg_restore', '-l', "$tmp/shop.dump" ], '>', \$toc) or die 'pg_restore -l failed';
like($toc, qr/ FUNCTION inventory reconciler\(text, integer, interval, interval, integer, interval\) shop_admin$/m,
	'the dump holds inventory.reconciler, owned by shop_admin');
unlike($toc, qr/TABLE DATA inventory reconcile_wait /, 'and not the waits');
my $restore_start = sql('postgres', 'SELECT now()');
sql('postgres', 'CREATE DATABASE shop_copy');
$node->command_ok([ 'pg_restore', '-d', $node->connstr('shop_copy'), "$tmp/shop.dump" ],
	'pg_restore into shop_copy, by the superuser');
is(admin('shop_copy', qq{
SELECT p.proowner::regrole || ' ' || pg_get_function_result(p.oid)
       || ' ' || (pg_get_functiondef(p.oid) LIKE '%RETURN app.paid(order_id, batch_id)%')
  FROM pg_proc p WHERE p.oid = '$rsig'::regprocedure}),
	'shop_admin text true', 'the restored database has inventory.reconciler, owned by shop_admin, calling app.paid');
like(admin('shop_copy', "SELECT pg_get_function_arguments('$rsig'::regprocedure)"),
	qr/timeout interval DEFAULT '00:00:00\.9'::interval, retry interval DEFAULT NULL::interval/,
	'with the timing it was set with (timeout 900ms)');
is(admin('shop_copy', q{SELECT p.proowner::regrole FROM pg_proc p WHERE p.oid = 'app.paid(text, integer)'::regprocedure}),
	'shop_owner', 'the application\'s function is still the shop\'s role\'s');
like(sql_err('shop_copy', 'DROP FUNCTION app.paid(text, integer)', 'shop_admin'),
	qr/cannot drop function app\.paid\(text,integer\) because other objects depend on it.*function inventory\.reconciler\(text,integer,interval,interval,integer,interval\) depends on function app\.paid\(text,integer\)/s,
	'DROP FUNCTION of the application\'s function, by a member of its owner, is refused there');
is(admin('shop_copy', "SELECT count(*) FROM inventory.reconcile_wait WHERE first_asked < '$restore_start'"), '0',
	'no wait of the source came with the restore');
# the settings of the source database are not in the dump: asked again in
# a minute, not a second
ok(wait_until($DEADLINE, sub {
	admin('shop_copy', q{
SELECT string_agg(order_id || ' ' || lines || ' ' || asks || ' ' || last_answer, ', ' ORDER BY order_id)
  FROM inventory.reconcile_waiting}) eq 'o-wait-3 1 1 wait, o-wait-4 2 1 wait' }),
	'the waiting orders are asked about again in the restored database, and wait there');
is(admin('shop_copy', q{
SELECT string_agg(order_id || ' ' || who, ', ' ORDER BY order_id) FROM app.asked
 WHERE db = 'shop_copy' AND backend = 'inventory worker'}),
	'o-wait-3 shop_owner, o-wait-4 shop_owner', 'by its worker, as the function\'s owner');
is(admin('shop_copy', "SELECT count(*) FROM inventory.reconcile_wait WHERE first_asked < '$restore_start'"), '0',
	'their waits started over');
is(admin('shop_copy', $states_sql), admin('shop', $states_sql), 'the restored ledger is the source\'s');
is(admin('shop_copy', 'SELECT count(*) FROM inventory.verify()'), '0', 'verify() is empty in the restored database');
is(admin('shop', 'SELECT count(*) FROM inventory.verify()'), '0', 'and in the source');

# the source's last waits paid: confirmed
admin('shop', "UPDATE app.payments SET state = 'paid' WHERE order_id IN ('o-wait-3', 'o-wait-4')");
ok(wait_until($DEADLINE, sub { admin('shop', 'SELECT count(*) FROM inventory.reconcile_wait') == 0 }),
	'the source\'s last waits are confirmed once paid');
is(admin('shop', "SELECT count(*) FROM inventory.ledger WHERE kind = 'reserve' AND state = 'PENDING'"), '0',
	'no reservation is left PENDING in the source');
is(worker_failures($node, $log_from), '', 'no visit of a worker failed');

# --- d. a slow reconciler does not starve another database ------------------

$node->append_conf('postgresql.conf', "inventory.max_workers = 1\n");
$node->restart;
$log_from = -s $node->logfile;
is(sql('postgres', 'SHOW inventory.max_workers'), '1', 'one worker for the whole server');
sql('postgres', 'CREATE DATABASE slow; CREATE DATABASE fast;');
# each ask takes 300 ms, three times the budget of a round, well within its timeout
sql('slow', q{
CREATE EXTENSION inventory;
ALTER DATABASE slow SET inventory.reconcile_budget = '100ms';
ALTER DATABASE slow SET inventory.reconcile_timeout = '5s';
CREATE SCHEMA app AUTHORIZATION shop_owner;
});
admin('slow', q{
CREATE TABLE app.asked (order_id text, at timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION app.slow(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, app, pg_temp
	AS $$
BEGIN
	PERFORM pg_sleep(0.3);
	INSERT INTO asked (order_id) VALUES (slow.order_id);
	RETURN 'expire';
END
$$;
ALTER TABLE app.asked OWNER TO shop_owner;
ALTER FUNCTION app.slow(text, integer) OWNER TO shop_owner;
SELECT inventory.set_reconciler('app.slow(text, integer)');
SELECT inventory.restock('MUG', 100, 'delivery');
});
app('slow', q{SELECT inventory.reserve('MUG', 1, 'slow-' || g, 1, '1 second') FROM generate_series(1, 60) g});
sql('fast', 'CREATE EXTENSION inventory');
admin('fast', q{SELECT inventory.restock('PEN', 100, 'delivery')});
ok(wait_until($DEADLINE, sub { admin('slow', 'SELECT count(*) FROM app.asked') >= 2 }),
	'the worker is asking the slow reconciler');
app('fast', q{SELECT inventory.reserve('PEN', 1, 'fast-' || g, 1, '1 second') FROM generate_series(1, 5) g});
ok(wait_until($DEADLINE, sub {
	admin('fast', "SELECT count(*) FROM inventory.ledger WHERE state = 'EXPIRED'") == 5 }),
	'the other database\'s reservations expire');
my $slow_left = admin('slow', "SELECT count(*) FROM inventory.ledger WHERE state = 'PENDING'");
my $fast_late = admin('fast', q{
SELECT max(extract(epoch FROM settled_at - expires_at)) FROM inventory.ledger WHERE state = 'EXPIRED'});
cmp_ok($fast_late, '<=', 10, "within 10 s of their expires_at (the latest: ${fast_late}s)");
cmp_ok($slow_left, '>', 0, "while the slow database still has orders to ask about ($slow_left)");
is(admin('slow', 'SELECT count(*) FROM inventory.reconcile_wait'), '0', 'none of its asks failed');
# without its reconciler, the slow database's orders expire at once
admin('slow', 'SELECT inventory.set_reconciler(NULL)');
ok(wait_until($DEADLINE, sub {
	admin('slow', "SELECT count(*) FROM inventory.ledger WHERE state = 'PENDING'") == 0 }),
	'set_reconciler(NULL): the slow database\'s orders are expired without asking');
is(monitor('slow', 'SELECT count(*) FROM inventory.verify()') . ' ' . monitor('fast', 'SELECT count(*) FROM inventory.verify()'),
	'0 0', 'verify() is empty in both');
is(worker_failures($node, $log_from), '', 'no visit of a worker failed');
$node->stop;

# --- e. behind the router ---------------------------------------------------

# On each node the shop's role owns the schema shop and the reconciler,
# made by the node's administrator; the router's calls run on the nodes as
# its user mapping's role (the nodes' superuser).  On the router, r_admin
# (inventory_admin) sets the reconciler and restocks, r_app (inventory_app)
# reserves.
my @nodes  = start_nodes(2);
my $router = start_router(\@nodes);
$router->safe_psql('shop', q{
CREATE ROLE r_admin LOGIN IN ROLE inventory_admin;
CREATE ROLE r_app LOGIN IN ROLE inventory_app;
});
sub r_admin { return $router->safe_psql('shop', $_[0], extra_params => [ '-U', 'r_admin' ]); }
sub r_app   { return $router->safe_psql('shop', $_[0], extra_params => [ '-U', 'r_app' ]); }
sub r_admin_try { return $router->psql('shop', $_[0], extra_params => [ '-U', 'r_admin' ]); }
# a node's administrator
sub node_sql { my ($p, $q) = @_; return $nodes[$p]->safe_psql("inv_p$p", $q, extra_params => [ '-U', 'shop_admin' ]); }
my $set_sql = qq{SELECT count(*) FROM pg_proc WHERE oid = to_regprocedure('$rsig')};
for my $p (0, 1)
{
	inventory_roles($nodes[$p], "inv_p$p");
	$nodes[$p]->safe_psql("inv_p$p", q{
CREATE ROLE shop_owner NOLOGIN;
GRANT shop_owner TO shop_admin;
GRANT pg_read_all_stats TO shop_owner;
CREATE SCHEMA shop AUTHORIZATION shop_owner;
});
	node_sql($p, app_sql('shop'));
}
r_admin(q{SELECT inventory.set_reconciler('shop.paid(text,integer)')});
is(node_sql(0, $set_sql) . ' ' . node_sql(1, $set_sql), '1 1', 'set_reconciler() on the router sets it on both nodes');
r_admin('SELECT inventory.set_reconciler(NULL)');
is(node_sql(0, $set_sql) . ' ' . node_sql(1, $set_sql), '0 0', 'and NULL removes it from both');

# a function that node 1 lacks: refused there, set nowhere
node_sql(0, q{CREATE FUNCTION shop.only_here(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, shop, pg_temp RETURN 'wait';
ALTER FUNCTION shop.only_here(text, integer) OWNER TO shop_owner});
my ($ret, $out, $err) = r_admin_try(q{SELECT inventory.set_reconciler('shop.only_here(text,integer)')});
like($err, qr/inv_p1.*function "shop\.only_here\(text,integer\)" does not exist/,
	'a function node 1 lacks: set_reconciler() on the router fails, naming its partition');
is(node_sql(0, $set_sql), '0', 'and sets nothing on node 0, which has it');

$nodes[1]->stop('fast');
($ret, $out, $err) = r_admin_try(q{SELECT inventory.set_reconciler('shop.paid(text,integer)')});
isnt($ret, 0, 'with node 1 down, set_reconciler() on the router fails');
like($err, qr/inv_p1/, 'naming its partition');
is(node_sql(0, $set_sql), '0', 'and node 0 is left as it was: no reconciler');
$nodes[1]->start;
my $node1_from = -s $nodes[1]->logfile;
r_admin(q{SELECT inventory.set_reconciler('shop.paid(text,integer)')});
is(node_sql(0, $set_sql) . ' ' . node_sql(1, $set_sql), '1 1', 'node 1 back: the call sets it on both');

# a SKU on each partition, an order on each, each node's payments its own
my @sku;
for my $g (1 .. 100)
{
	my $p = r_app("SELECT inventory.partition_of('S-$g')");
	$sku[$p] //= "S-$g";
	last if defined $sku[0] && defined $sku[1];
}
node_sql(0, q{INSERT INTO shop.payments VALUES ('e-0', 'paid'), ('e-1', 'paid')});
node_sql(1, q{INSERT INTO shop.payments VALUES ('e-0', 'failed'), ('e-1', 'failed')});
r_admin(qq{SELECT inventory.restock('$sku[0]', 10, 'in-0'), inventory.restock('$sku[1]', 10, 'in-1')});
r_app(qq{
SELECT inventory.reserve('$sku[0]', 2, 'e-0', 1, '1 second'), inventory.reserve('$sku[1]', 3, 'e-1', 1, '1 second');
});
my $e_sql = q{SELECT string_agg(order_id || ' ' || state, ', ') FROM inventory.ledger WHERE kind = 'reserve'};
ok(wait_until($DEADLINE, sub { node_sql(0, $e_sql) eq 'e-0 CONFIRMED' && node_sql(1, $e_sql) eq 'e-1 CANCELLED' }),
	'each node\'s worker settles its overdue order as its own payments say')
  or diag(node_sql(0, $e_sql) . ' / ' . node_sql(1, $e_sql));
my $asked_sql = q{SELECT string_agg(order_id || ' ' || who || ' ' || backend, ', ') FROM shop.asked};
is(node_sql(0, $asked_sql) . ' / ' . node_sql(1, $asked_sql),
	'e-0 shop_owner inventory worker / e-1 shop_owner inventory worker',
	'each node asked about its own order once, in its worker, as the function\'s owner there (not the role of the user mapping that set it)');
is(node_sql(0, 'SELECT count(*) FROM inventory.verify()') . ' ' . node_sql(1, 'SELECT count(*) FROM inventory.verify()'),
	'0 0', 'verify() is empty on both nodes');
is(worker_failures($nodes[0], 0), '', 'no visit of a worker failed on node 0');
is(worker_failures($nodes[1], $node1_from), '', 'nor on node 1 since its start');

$router->stop;
$_->stop for @nodes;
done_testing();

# pgbouncer in transaction mode between the router and the nodes, as the
# "Connections" of docs/scaling-out.md shows: four nodes, each partition database served
# through one pgbouncer by at most POOL server connections.
#
#   * every routed call works through the pooler: reserve, confirm, cancel,
#     carts across nodes, a split SKU, the gathered views;
#   * 64 clients through the router racing for a split hot SKU and for
#     plain SKUs sell exactly what was stocked, while each partition
#     database has at most POOL connections from pgbouncer;
#   * verify() is empty on every node afterwards;
#   * reserve_now() through pgbouncer, straight to a partition database:
#     64 clients racing for one SKU all get answers, each database has at
#     most POOL connections meanwhile, and the ledger has exactly one row
#     per 'ok', every one written by the database's express writer.
#
# Every call is made by the login role the manual gives it, each over a
# connection of its own (RouterCluster's roles => 1): on the router,
# shop_app (inventory_app) reserves, settles and reads inventory.stock,
# and its pgbench clients are shop_app too; shop_admin (inventory_admin)
# restocks, splits and reads inventory.nodes; shop_monitor
# (inventory_monitor) verifies.  The router works on the nodes as
# shop_router (inventory_admin), the role its user mapping names, as
# docs/scaling-out.md sets it up, through pgbouncer, whose auth file lists
# it.  Straight to inv_p0 through pgbouncer, the reserve_now clients are
# shop_app, which notes its answers in a table of the test's granted to it;
# the node's shop_admin restocks and reads the tables and the figures.  The
# superuser only makes the servers, databases, extensions, roles and that
# table, is pgbouncer's admin user, points the cluster's server at
# pgbouncer (ALTER SERVER: its owner's), sets a setting of the router
# database (ALTER DATABASE: its owner's), and counts the connections of
# other roles in pg_stat_activity.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::Bin/lib";
use RouterCluster qw(start_nodes start_router);
use InventoryTest qw(wait_until as_app as_admin as_monitor);

my $NPARTS = 4;
my $POOL   = 4;

# its absence is a failure of the setup, not a test
my $pgbouncer = '/usr/sbin/pgbouncer';
BAIL_OUT('pgbouncer is not installed (Debian: pgbouncer)') unless -x $pgbouncer;

my @nodes  = start_nodes($NPARTS);
my $router = start_router(\@nodes, 0, roles => 1);
# on the router, as each role
sub app   { return as_app($router, 'shop', $_[0]); }
sub admin { return as_admin($router, 'shop', $_[0]); }
sub mon   { return as_monitor($router, 'shop', $_[0]); }

# one pgbouncer for the four partition databases; its users: the router's
# role on the nodes, the application's (reserve_now straight to inv_p0) and
# the superuser, its admin user
my $dir  = PostgreSQL::Test::Utils::tempdir_short;
my $port = PostgreSQL::Test::Cluster::get_free_port();
my $user = $nodes[0]->safe_psql('postgres', 'SELECT current_user');
open my $f, '>', "$dir/users.txt" or die $!;
print $f qq{"$_" ""\n} for $user, 'shop_router', 'shop_app';
close $f;
open $f, '>', "$dir/pgbouncer.ini" or die $!;
print $f "[databases]\n";
printf $f "inv_p%d = host=%s port=%d dbname=inv_p%d\n", $_, $nodes[$_]->host, $nodes[$_]->port, $_
  for 0 .. $NPARTS - 1;
print $f <<"INI";
[pgbouncer]
listen_addr =
listen_port = $port
unix_socket_dir = $dir
auth_type = trust
auth_file = $dir/users.txt
admin_users = $user
pool_mode = transaction
default_pool_size = $POOL
max_client_conn = 1000
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
close $f;
# a daemon that logs to its file: a pipe nobody reads would stop it once full
system($pgbouncer, '-d', '-q', "$dir/pgbouncer.ini") == 0 or die "pgbouncer did not start";
END
{
	if (open my $pid, '<', "$dir/pgbouncer.pid") { kill 'TERM', 0 + <$pid>; }
}
# (the test's setup: it dies if pgbouncer does not listen)
wait_until(30, sub { -S "$dir/.s.PGSQL.$port" }) or die 'pgbouncer does not listen';

# the partitions now point at pgbouncer (ALTER SERVER: the server's owner's,
# here the superuser)
$router->safe_psql('shop', "ALTER SERVER inventory_cluster OPTIONS ("
	  . join(', ', map { "SET p$_ 'host=$dir port=$port dbname=inv_p$_'" } 0 .. $NPARTS - 1) . ")");
is(admin("SELECT count(*) FROM inventory.nodes WHERE reachable"), $NPARTS,
	'every partition answers through pgbouncer');

# the calls, through the pooler
admin("SELECT count(r.status) FROM generate_series(1, 40) g, inventory.restock('B-' || g, 5, 'in-b-' || g) r");
is(app("SELECT r.status || ' ' || r.state FROM inventory.reserve('B-1', 2, 'pb-1') r"), 'ok PENDING', 'reserve');
is(app("SELECT r.status || ' ' || r.state FROM inventory.confirm('pb-1', 1, 'B-1') r"), 'ok CONFIRMED', 'confirm with the SKU');
app("SELECT inventory.reserve('B-2', 1, 'pb-2')");
is(app("SELECT r.status || ' ' || r.state FROM inventory.cancel('pb-2') r"), 'ok CANCELLED',
	'cancel without the SKU: every node asked');
my @cart = map { "B-$_" } 3 .. 10;
is(app("SELECT string_agg(r.status, ' ') FROM inventory.reserve_cart('pb-cart', ARRAY['" . join("','", @cart) . "'], '{1,1,1,1,1,1,1,1}') r"),
	join(' ', ('ok') x 8), 'a cart across nodes');
is(app("SELECT count(*) FROM inventory.stock WHERE sku LIKE 'B-%'"), '40', 'inventory.stock gathered');

admin("SELECT inventory.restock('HOT', 3000, 'in-hot')");
# the race below counts units to the last one: every refusal asks every
# bucket, so that no session leaves units behind in another bucket (a
# setting of the router database: its owner's, here the superuser; the
# clients connect after it, so it applies to them)
$router->safe_psql('shop', "ALTER DATABASE shop SET inventory_router.short_recheck = 0");
is(admin("SELECT string_agg(available::text, ' ' ORDER BY bucket) FROM inventory.split('HOT', 4)"),
	'750 750 750 750', 'split through the pooler');

# 64 clients
my $script = "$PostgreSQL::Test::Utils::tmp_check/bounce.sql";
open $f, '>', $script or die $!;
print $f "\\set n random(1, 9000000000000000000)\n\\set s random(11, 40)\n"
  . "SELECT (inventory.reserve('HOT', 1, 'hot-' || :n)).status;\n"
  . "SELECT (inventory.reserve('B-' || :s, 1, 'b-' || :n)).status;\n";
close $f;
my $bench = IPC::Run::start(
	[ 'pgbench', '--no-vacuum', '--client=64', '--jobs=2', '--transactions=60', '-M', 'prepared',
	  '-h', $router->host, '-p', $router->port, '-U', 'shop_app', '-f', $script, 'shop' ],
	'>', \my $bench_out, '2>', \my $bench_err);
# the most server connections a partition database had meanwhile, of the
# router's role (pgbouncer keeps a pool for each user of a database; other
# roles' connections are counted by the superuser)
my $most = 0;
while ($bench->pumpable)
{
	for my $p (0 .. $NPARTS - 1)
	{
		my $n = $nodes[$p]->safe_psql('postgres',
			"SELECT count(*) FROM pg_stat_activity WHERE datname = 'inv_p$p' AND backend_type = 'client backend' AND usename = 'shop_router'");
		$most = $n if $n > $most;
	}
	$bench->pump_nb;
}
$bench->finish;
like($bench_out, qr{processed: 3840/3840}, '64 clients made 7,680 calls through the router and pgbouncer');
ok($most <= $POOL && $most > 0, "each partition database had at most $POOL connections of the router's role meanwhile (most: $most)");
is(app("SELECT sum(reserved) || ' ' || sum(on_hand) FROM inventory.stock WHERE sku = 'HOT'"), '3000 3000',
	'the split SKU: 3000 units sold of 3000');
is(app("SELECT sum(reserved) || ' ' || sum(on_hand) FROM inventory.stock WHERE sku LIKE 'B-%' AND substr(sku, 3)::integer > 10"),
	'150 150', 'the plain SKUs: 150 units sold of 150');
# verify('30 s'): waits for a SKU with a change in flight (an error naming
# it if one is still busy), so that none is skipped
is(mon("SELECT count(*) FROM inventory.verify('30 s')"), '0', "verify('30 s') is empty on every node");
is(admin("SELECT coalesce(sum(in_transit), 0) FROM inventory.nodes"), '0', 'nothing in transit');

# reserve_now() through pgbouncer in transaction mode, straight to the
# partition database inv_p0 (the router has no express lane): each call is
# a transaction of its own, on whichever server connection pgbouncer gives
# it, and it waits for the express writer there.  pgbouncer (1.18) keeps no
# named prepared statement from one transaction to the next, so pgbench
# sends each call with the extended protocol's unnamed statement (-M
# extended), its arguments as parameters, as drivers do behind a pooler.
# Each client notes every answer it got in inv_p0.now_answer, in a
# transaction of its own after the call.  1,000 keys for 1,920 calls: keys
# come again, and are duplicates when the first call reserved.
my $p0 = $nodes[0];
# the test's table of answers: the superuser's (no role of the extension
# may create tables in public), written by the clients, read by shop_admin
$p0->safe_psql('inv_p0', q{
CREATE TABLE now_answer (order_id text, status text);
GRANT INSERT ON now_answer TO shop_app;
GRANT SELECT ON now_answer TO shop_admin;
});
sub p0 { return as_admin($p0, 'inv_p0', $_[0]); }
p0("SELECT inventory.restock('NOW', 300, 'in-now')");
my $fallbacks = p0('SELECT inventory.express_fallbacks()');
$script = "$PostgreSQL::Test::Utils::tmp_check/now.sql";
open $f, '>', $script or die $!;
print $f "\\set n random(1, 1000)\n"
  . "SELECT inventory.reserve_now('NOW', 1, 'now-' || :n) AS status \\gset\n"
  . "INSERT INTO now_answer VALUES ('now-' || :n, :status);\n";
close $f;
$bench = IPC::Run::start(
	[ 'pgbench', '--no-vacuum', '--client=64', '--jobs=2', '--transactions=30', '-M', 'extended',
	  '-h', $dir, '-p', $port, '-U', 'shop_app', '-f', $script, 'inv_p0' ],
	'>', \$bench_out, '2>', \$bench_err);
# the most server connections of the clients' role: pgbouncer keeps a pool
# for each user of a database, and the router's pool, shop_router's, may
# still hold idle connections to inv_p0
$most = 0;
while ($bench->pumpable)
{
	my $n = $p0->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE datname = 'inv_p0' AND backend_type = 'client backend' AND usename = 'shop_app'");
	$most = $n if $n > $most;
	$bench->pump_nb;
}
$bench->finish;
like($bench_out, qr{processed: 1920/1920}, 'reserve_now: 64 clients made 1,920 calls through pgbouncer');
is($bench_err, '', 'reserve_now: no client got an error');
ok($most <= $POOL && $most > 0, "reserve_now: inv_p0 had at most $POOL connections of the clients' role meanwhile (most: $most)");
is(p0("SELECT count(*) FROM now_answer"), '1920', 'reserve_now: every call got an answer');
is(p0("SELECT string_agg(DISTINCT status, ' ' ORDER BY status) FROM now_answer"),
	'duplicate insufficient ok', 'reserve_now: the answers are ok, duplicate and insufficient');
is(p0("SELECT count(*) FROM now_answer WHERE status = 'ok'") . ' '
	  . p0("SELECT reserved || ' ' || on_hand FROM inventory.stock WHERE sku = 'NOW'"),
	'300 300 300', "reserve_now: 300 answered 'ok' for the 300 units, all reserved");
is( p0(q{
SELECT coalesce(a.order_id, l.order_id), a.oks, l.order_id IS NOT NULL AS has_row
  FROM (SELECT order_id, count(*) AS oks FROM now_answer WHERE status = 'ok' GROUP BY order_id) a
  FULL JOIN (SELECT order_id FROM inventory.ledger WHERE sku = 'NOW' AND kind = 'reserve') l USING (order_id)
 WHERE a.oks IS DISTINCT FROM 1 OR l.order_id IS NULL}), '',
	"reserve_now: the ledger has exactly one row per 'ok', and none without one");
is( p0(q{
SELECT a.order_id FROM now_answer a LEFT JOIN inventory.ledger l USING (order_id)
 WHERE a.status = 'duplicate' AND l.order_id IS NULL}), '',
	"reserve_now: every key answered 'duplicate' has its row");
is(p0('SELECT inventory.express_fallbacks()'), $fallbacks, 'reserve_now: no call fell back to its own transaction');
is(p0("SELECT rows FROM inventory.express_status WHERE datname = 'inv_p0'"), '300',
	"reserve_now: inv_p0's express writer wrote the 300 rows");
is(as_monitor($p0, 'inv_p0', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"reserve_now: verify('30 s') is empty on inv_p0");
note 'express writer of inv_p0: '
  . p0("SELECT format('%s batches, at most %s rows in one, %s calls sent back', batches, max_batch, sent_back)"
	  . " FROM inventory.express_status WHERE datname = 'inv_p0'");

done_testing();

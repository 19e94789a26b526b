# One launcher and its pool serve every database where the extension is
# created, with no configuration, and never stand in the way of DROP
# DATABASE.  (Many databases at once: 014_worker_pool.pl.)
#
# Who calls: shop_admin (inventory_admin) restocks and reads the ledger,
# shop_app (inventory_app) reserves, shop_monitor (inventory_monitor)
# reads worker_status -- the same login roles in every database, since
# roles are the server's.  The superuser creates the databases (it owns
# them, so it renames, copies and drops them), creates and drops the
# extension, creates the roles, and reads the workers' rows of
# pg_stat_activity (other roles' rows).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles wait_until as_role as_app as_admin as_monitor);

my $node = inventory_node('worker_dbs', qq{
inventory.expire_interval = '200ms'
});

# poll(ROLE, DBNAME, SQL): SQL, run in DBNAME by the login ROLE, answers t
# before the default timeout
sub poll
{
	my ($role, $db, $sql) = @_;
	return wait_until($PostgreSQL::Test::Utils::timeout_default,
		sub { as_role($node, $role, $db, $sql) eq 't' });
}

for my $db ('shop_a', 'shop_b', 'plain')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
}
for my $db ('shop_a', 'shop_b')
{
	$node->safe_psql($db, 'CREATE EXTENSION inventory');
	inventory_roles($node, $db) if $db eq 'shop_a';
	as_admin($node, $db, "SELECT inventory.restock('D-1', 10, 'delivery')");
	as_app($node, $db, "SELECT inventory.reserve('D-1', 4, 'unpaid', ttl => '1 second')");
}
for my $db ('shop_a', 'shop_b')
{
	ok(poll('shop_admin', $db,
		"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'unpaid'"),
		"$db is served");
}
is(as_monitor($node, 'shop_a',
	"SELECT string_agg(datname, ' ' ORDER BY datname) FROM inventory.worker_status"),
	'shop_a shop_b', 'worker_status lists the databases with the extension, none else');

# a new database is served within seconds of CREATE EXTENSION
$node->safe_psql('plain', 'CREATE EXTENSION inventory');
as_admin($node, 'plain', "SELECT inventory.restock('D-1', 10, 'delivery')");
as_app($node, 'plain', "SELECT inventory.reserve('D-1', 4, 'unpaid', ttl => '1 second')");
ok(poll('shop_admin', 'plain',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'unpaid'"),
	'a database that creates the extension is served');
# how soon, from the rows: a database noticed at once has its reservation
# expired as any other, within expire_interval of its expires_at (one
# second after CREATE EXTENSION); the slack, 2 seconds, is a worker's start
# (a fork and a connection) on a machine that other tests keep busy
my $slack = 2;
my ($late, $interval) = split /\|/, as_admin($node, 'plain', q{
SELECT extract(epoch FROM settled_at - expires_at),
       extract(epoch FROM current_setting('inventory.expire_interval')::interval)
  FROM inventory.ledger WHERE order_id = 'unpaid'});
cmp_ok($late, '<=', $interval + $slack,
	"within seconds: ${late}s after its expires_at (the interval ${interval}s, slack ${slack}s)");

# DROP EXTENSION is not hindered, even with a worker in the database: a
# worker stays while work falls due within expire_interval, and
# reservations falling due every 100 ms for 30 seconds keep one there
as_admin($node, 'shop_b', "SELECT inventory.restock('D-1', 300, 'stream')");
as_app($node, 'shop_b', q{
SELECT count(*) FROM (SELECT inventory.reserve('D-1', 1, 'stream-' || g, ttl => g * interval '100 ms')
                        FROM generate_series(1, 300) g) r});
my $worker_in_b = q{
SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'shop_b'};
$node->poll_query_until('postgres', "SELECT ($worker_in_b) = 1")
	or die 'no worker came to shop_b';
# DROP EXTENSION: the extension's owner's, the superuser; the same session
# looks at pg_stat_activity just before
my ($ret, $out, $err) = $node->psql('shop_b', "$worker_in_b;\nDROP EXTENSION inventory;");
is("$ret $out", '0 1', 'DROP EXTENSION succeeds with a worker in the database') or diag $err;
ok(poll('shop_monitor', 'plain',
	"SELECT count(*) = 0 FROM inventory.worker_status WHERE datname = 'shop_b'"),
	'a database that drops the extension leaves worker_status');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'shop_b'"),
	'and no worker is in it');

# DROP DATABASE, ALTER DATABASE RENAME and CREATE DATABASE ... TEMPLATE need
# the database without connections: the worker steps aside (the databases
# are the superuser's, who created them)
($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE shop_a RENAME TO shop_c');
is($ret, 0, 'a served database can be renamed') or diag $err;
as_app($node, 'shop_c', "SELECT inventory.reserve('D-1', 1, 'renamed', ttl => '1 second')");
ok(poll('shop_admin', 'shop_c',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'renamed'"),
	'and is served again under its new name');
is(as_monitor($node, 'shop_c', "SELECT count(*) FROM inventory.worker_status WHERE datname = 'shop_c'"),
	'1', 'which worker_status shows');
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE shop_d TEMPLATE shop_c');
is($ret, 0, 'a served database can be a template') or diag $err;
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE shop_c');
is($ret, 0, 'a served database can be dropped') or diag $err;
as_app($node, 'shop_d', "SELECT inventory.reserve('D-1', 1, 'copied', ttl => '1 second')");
ok(poll('shop_admin', 'shop_d',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'copied'"),
	'the copy is served');
ok(poll('shop_monitor', 'plain',
	"SELECT string_agg(datname, ' ' ORDER BY datname) = 'plain shop_d' FROM inventory.worker_status"),
	'worker_status lists the databases served');

$node->stop;
done_testing();

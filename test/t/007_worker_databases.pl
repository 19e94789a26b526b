# One launcher and its pool serve every database where the extension is
# created, with no configuration, and never stand in the way of DROP
# DATABASE.  (Many databases at once: 014_worker_pool.pl.)
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node);

my $node = inventory_node('worker_dbs', qq{
inventory.expire_interval = '200ms'
});

for my $db ('shop_a', 'shop_b', 'plain')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
}
for my $db ('shop_a', 'shop_b')
{
	$node->safe_psql($db, q{
CREATE EXTENSION inventory;
SELECT inventory.restock('D-1', 10, 'delivery');
SELECT inventory.reserve('D-1', 4, 'unpaid', ttl => '1 second');
});
}
for my $db ('shop_a', 'shop_b')
{
	ok($node->poll_query_until($db,
		"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'unpaid'"),
		"$db is served");
}
is($node->safe_psql('shop_a',
	"SELECT string_agg(datname, ' ' ORDER BY datname) FROM inventory.worker_status"),
	'shop_a shop_b', 'worker_status lists the databases with the extension, none else');

# a new database is served within seconds of CREATE EXTENSION
$node->safe_psql('plain', q{
CREATE EXTENSION inventory;
SELECT inventory.restock('D-1', 10, 'delivery');
SELECT inventory.reserve('D-1', 4, 'unpaid', ttl => '1 second');
});
my $t0 = time;
ok($node->poll_query_until('plain',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'unpaid'"),
	'a database that creates the extension is served');
cmp_ok(time - $t0, '<=', 10, 'within seconds');

# DROP EXTENSION is not hindered, even with a worker in the database
$node->safe_psql('shop_b', q{
SELECT inventory.reserve('D-1', 1, 'held', ttl => '1 hour');
BEGIN;
SELECT inventory.confirm('held');
SELECT pg_sleep(0.3);
COMMIT;
});
$node->safe_psql('shop_b', 'DROP EXTENSION inventory');
ok($node->poll_query_until('plain',
	"SELECT count(*) = 0 FROM inventory.worker_status WHERE datname = 'shop_b'"),
	'a database that drops the extension leaves worker_status');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'shop_b'"),
	'and no worker is in it');

# DROP DATABASE, ALTER DATABASE RENAME and CREATE DATABASE ... TEMPLATE need
# the database without connections: the worker steps aside
my ($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE shop_a RENAME TO shop_c');
is($ret, 0, 'a served database can be renamed') or diag $err;
$node->safe_psql('shop_c', "SELECT inventory.reserve('D-1', 1, 'renamed', ttl => '1 second')");
ok($node->poll_query_until('shop_c',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'renamed'"),
	'and is served again under its new name');
is($node->safe_psql('shop_c', "SELECT count(*) FROM inventory.worker_status WHERE datname = 'shop_c'"),
	'1', 'which worker_status shows');
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE shop_d TEMPLATE shop_c');
is($ret, 0, 'a served database can be a template') or diag $err;
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE shop_c');
is($ret, 0, 'a served database can be dropped') or diag $err;
$node->safe_psql('shop_d', "SELECT inventory.reserve('D-1', 1, 'copied', ttl => '1 second')");
ok($node->poll_query_until('shop_d',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'copied'"),
	'the copy is served');
ok($node->poll_query_until('plain',
	"SELECT string_agg(datname, ' ' ORDER BY datname) = 'plain shop_d' FROM inventory.worker_status"),
	'worker_status lists the databases served');

$node->stop;
done_testing();

# One launcher serves every database where the extension is created, with no
# configuration, and never stands in the way of DROP DATABASE.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('worker_dbs');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'inventory'
inventory.expire_interval = '200ms'
});
$node->start;

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
is($node->safe_psql('postgres',
	"SELECT string_agg(datname, ' ' ORDER BY datname) FROM pg_stat_activity WHERE backend_type = 'inventory worker'"),
	'shop_a shop_b', 'one worker per database with the extension, none elsewhere');

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

# DROP EXTENSION is not hindered, and the worker leaves
$node->safe_psql('shop_b', 'DROP EXTENSION inventory');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'shop_b'"),
	'the worker leaves a database that drops the extension');
is($node->safe_psql('plain',
	"SELECT count(*) FROM inventory.worker_status WHERE datname = 'shop_b'"),
	'0', 'which is no longer in worker_status');

# DROP DATABASE, ALTER DATABASE RENAME and CREATE DATABASE ... TEMPLATE need
# the database without connections: the worker steps aside
my ($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE shop_a RENAME TO shop_c');
is($ret, 0, 'a served database can be renamed') or diag $err;
ok($node->poll_query_until('shop_c',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'shop_c'"),
	'and is served again under its new name');
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE shop_d TEMPLATE shop_c');
is($ret, 0, 'a served database can be a template') or diag $err;
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE shop_c');
is($ret, 0, 'a served database can be dropped') or diag $err;
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'shop_d'"),
	'the copy is served');
is($node->safe_psql('plain',
	"SELECT string_agg(datname, ' ' ORDER BY datname) FROM inventory.worker_status"),
	'plain shop_d', 'worker_status lists the databases served');

$node->stop;
done_testing();

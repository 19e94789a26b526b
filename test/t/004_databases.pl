# Each database has its own SKUs in the shared cache.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node);

my $node = inventory_node('databases');
for my $db ('shop_a', 'shop_b')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION inventory');
}
$node->safe_psql('shop_a', "SELECT inventory.restock('SAME', 5, 'd1')");
$node->safe_psql('shop_b', "SELECT inventory.restock('SAME', 50, 'd1')");
$node->safe_psql('shop_a', "SELECT inventory.reserve('SAME', 5, 'o1')");

is($node->safe_psql('shop_a', "SELECT inventory.available('SAME')"), '0',
	'shop_a sold its 5');
is($node->safe_psql('shop_b', "SELECT inventory.available('SAME')"), '50',
	'shop_b still has its 50');
is($node->safe_psql('shop_b', "SELECT status FROM inventory.reserve('SAME', 1, 'o1')"),
	'ok', 'the same key is free in another database');
is($node->safe_psql('shop_a', 'SELECT count(*) FROM inventory.sku_stats'), '1',
	'the statistics view shows only its own database');
is($node->safe_psql('shop_a', 'SELECT entries FROM inventory.cache_info()'), '2',
	'the cache holds both');
is($node->safe_psql('shop_a', 'SELECT count(*) FROM inventory.verify()'), '0', 'shop_a verifies');
is($node->safe_psql('shop_b', 'SELECT count(*) FROM inventory.verify()'), '0', 'shop_b verifies');

$node->stop;
done_testing();

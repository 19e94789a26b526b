# Each database has its own SKUs in the shared cache.
#
# Who calls: shop_admin (inventory_admin) restocks and verifies,
# shop_app (inventory_app) reserves and reads the live counter,
# shop_monitor (inventory_monitor) reads the statistics and the cache's
# figures -- the same login roles in both databases, since roles are the
# server's.  The superuser creates the databases, the extension in each and
# the roles.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles as_app as_admin as_monitor);

my $node = inventory_node('databases');
for my $db ('shop_a', 'shop_b')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION inventory');
}
inventory_roles($node, 'shop_a');
as_admin($node, 'shop_a', "SELECT inventory.restock('SAME', 5, 'd1')");
as_admin($node, 'shop_b', "SELECT inventory.restock('SAME', 50, 'd1')");
as_app($node, 'shop_a', "SELECT inventory.reserve('SAME', 5, 'o1')");

is(as_app($node, 'shop_a', "SELECT inventory.available('SAME')"), '0',
	'shop_a sold its 5');
is(as_app($node, 'shop_b', "SELECT inventory.available('SAME')"), '50',
	'shop_b still has its 50');
is(as_app($node, 'shop_b', "SELECT status FROM inventory.reserve('SAME', 1, 'o1')"),
	'ok', 'the same key is free in another database');
is(as_monitor($node, 'shop_a', 'SELECT count(*) FROM inventory.sku_stats'), '1',
	'the statistics view shows only its own database');
is(as_monitor($node, 'shop_a', 'SELECT entries FROM inventory.cache_info()'), '2',
	'the cache holds both');
is(as_admin($node, 'shop_a', "SELECT count(*) FROM inventory.verify('30 s')"), '0', 'shop_a verifies');
is(as_admin($node, 'shop_b', "SELECT count(*) FROM inventory.verify('30 s')"), '0', 'shop_b verifies');

$node->stop;
done_testing();

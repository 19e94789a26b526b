# A router over partition nodes on one machine, for the scale-out tests.
package RouterCluster;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use InventoryTest qw(inventory_node inventory_roles);

our @EXPORT_OK = qw(start_nodes start_router partition_connstr);

# start_nodes(N): N servers preloading inventory, node<i> holding the
# partition database inv_p<i> (named after its partition: PL/Proxy's errors
# name a partition only by its database).
sub start_nodes
{
	my ($n) = @_;
	my @nodes;
	for my $i (0 .. $n - 1)
	{
		my $node = inventory_node("node$i", qq{
max_connections = 120
restart_after_crash = on
inventory.expire_interval = '100ms'
log_statement = none
});
		$node->safe_psql('postgres', "CREATE DATABASE inv_p$i");
		$node->safe_psql("inv_p$i", 'CREATE EXTENSION inventory');
		push @nodes, $node;
	}
	return @nodes;
}

# a node's connection string, as an option of the server (no quotes inside)
sub partition_connstr
{
	my ($node, $db) = @_;
	my $c = $node->connstr($db);
	$c =~ s/dbname='(\w+)'/dbname=$1/;
	return "$c application_name=inventory_router";
}

# start_router(NODES, [ALLOWS_STREAMING, [OPTION => VALUE...]]): a router
# server with database shop, inventory_router and the server
# inventory_cluster over the nodes' partitions, mapped to the nodes'
# superuser; with ALLOWS_STREAMING true, it can have standbys.  With the
# option roles => 1, the cluster is made as docs/scaling-out.md ("Starting a
# cluster") makes it: on each node a login role shop_router IN ROLE
# inventory_admin, which the user mapping names (the router works on the
# nodes as it, not as a superuser), and the login roles of
# InventoryTest::inventory_roles() (shop_app, shop_admin, shop_monitor) on
# every node and on the router, whose shop_* join the router's own
# inventory_app, inventory_admin and inventory_monitor.
sub start_router
{
	my ($nodes, $allows_streaming, %opt) = @_;
	my @nodes = @$nodes;
	my $superuser = $nodes[0]->safe_psql('postgres', 'SELECT current_user');
	my $node_user = $superuser;
	if ($opt{roles})
	{
		# CREATE ROLE: the superuser's, once per node server
		$node_user = 'shop_router';
		for my $i (0 .. $#nodes)
		{
			inventory_roles($nodes[$i], "inv_p$i");
			$nodes[$i]->safe_psql("inv_p$i", q{
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'shop_router') THEN
		CREATE ROLE shop_router LOGIN IN ROLE inventory_admin;
	END IF;
END
$$});
		}
	}
	my $router = PostgreSQL::Test::Cluster->new('router');
	$router->init(allows_streaming => $allows_streaming ? 1 : 0);
	$router->append_conf('postgresql.conf', qq{
max_connections = 120
log_statement = none
});
	$router->start;
	$router->safe_psql('postgres', 'CREATE DATABASE shop');
	$router->safe_psql('shop', 'CREATE EXTENSION inventory_router CASCADE');
	my $parts = join(",\n",
		map { "\tp$_ '" . partition_connstr($nodes[$_], "inv_p$_") . "'" } 0 .. $#nodes);
	$router->safe_psql('shop', qq{
CREATE SERVER inventory_cluster FOREIGN DATA WRAPPER plproxy OPTIONS (
$parts);
CREATE USER MAPPING FOR PUBLIC SERVER inventory_cluster OPTIONS (user '$node_user');
GRANT USAGE ON FOREIGN SERVER inventory_cluster TO inventory_app, inventory_admin, inventory_monitor;
});
	inventory_roles($router, 'shop') if $opt{roles};
	return $router;
}

1;

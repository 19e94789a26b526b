# reserve_now() through the router: two nodes and a router on one machine.
#
#   * on a plain SKU the call runs on the SKU's node, where its express
#     writer commits it: ok, duplicate, insufficient, unknown_sku as the
#     node answers them, the row on that node only, and its key shared with
#     reserve() through the router;
#   * errors keep the node's SQLSTATE;
#   * a SKU split into buckets is reserved as the router's reserve()
#     reserves it, in the bucket of the order, falling through the others:
#     exactly the units stocked are sold;
#   * in a transaction block on the router the call still commits on its
#     node (a routed call is its own transaction there, as documented);
#   * the role inventory_app may call it through the router.
#
# Every call is made by the login role the manual gives it, each over a
# connection of its own: on the router, shop_app (inventory_app) reserves
# and confirms, shop_admin (inventory_admin) restocks and splits,
# shop_monitor (inventory_monitor) reads and verifies; the router works on
# the nodes as shop_router (inventory_admin), the role its user mapping
# names, as docs/scaling-out.md sets it up.  The nodes' tables are read by
# the nodes' shop_admin.  The superuser only makes the servers, the
# databases, the extensions and the roles (RouterCluster).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use RouterCluster qw(start_nodes start_router);
use InventoryTest qw(as_app as_admin as_monitor);

my $NPARTS = 2;
my @nodes  = start_nodes($NPARTS);
my $router = start_router(\@nodes, 0, roles => 1);

# on the router, as each role
sub app   { return as_app($router, 'shop', $_[0]); }
sub admin { return as_admin($router, 'shop', $_[0]); }
sub mon   { return as_monitor($router, 'shop', $_[0]); }
# a node's tables, read by its administrator
sub node_sql
{
	my ($p, $sql) = @_;
	return as_admin($nodes[$p], "inv_p$p", $sql);
}
# the SQLSTATE of an application's call on the router
sub app_state
{
	my ($sql) = @_;
	my ($r, $out, $err) = $router->psql('shop', "\\set VERBOSITY verbose\n$sql",
		extra_params => [ '-U', 'shop_app' ]);
	return $err =~ /ERROR:\s+([0-9A-Z]{5}):/ ? $1 : "no error ($out)";
}
sub rows_on
{
	my ($p, $key) = @_;
	return node_sql($p, "SELECT count(*) FROM inventory.ledger WHERE order_id = '$key'");
}

# --- a plain SKU ------------------------------------------------------------

admin("SELECT inventory.restock('NOW-1', 3, 'in-now-1')");
my $home  = app("SELECT inventory.partition_of('NOW-1')");
my $other = 1 - $home;

is(app("SELECT inventory.reserve_now('NOW-1', 2, 'rn-1')"), 'ok', 'reserve_now through the router: ok');
is(rows_on($home, 'rn-1') . ' ' . rows_on($other, 'rn-1'), '1 0', 'its row is on the SKU\'s node only');
is(node_sql($home, "SELECT kind || ' ' || state || ' ' || qty FROM inventory.ledger WHERE order_id = 'rn-1'"),
	'reserve PENDING 2', 'a PENDING reservation of 2 units');
is(node_sql($home, "SELECT rows >= 1 FROM inventory.express_status WHERE datname = 'inv_p$home'"), 't',
	'written by the node\'s express writer');
is(app("SELECT inventory.reserve_now('NOW-1', 2, 'rn-1')"), 'duplicate', 'the same call again: duplicate');
is(app("SELECT status FROM inventory.reserve('NOW-1', 2, 'rn-1')"), 'duplicate',
	'reserve() of its key through the router: duplicate');
is(app("SELECT inventory.reserve_now('NOW-1', 2, 'rn-2')"), 'insufficient',
	'more than is left: insufficient');
is(app("SELECT inventory.reserve_now('NOPE', 1, 'rn-3')"), 'unknown_sku', 'an unknown SKU: unknown_sku');
is(app("SELECT status FROM inventory.confirm('rn-1', 1, 'NOW-1')"), 'ok', 'confirmed through the router');
is(app("SELECT available FROM inventory.stock WHERE sku = 'NOW-1'"), '1', 'one unit left');

# the whole result: what the node answers, expires_at the node's row's
is(app("SELECT ok || ' ' || status || ' ' || qty || ' ' || state || ' ' || available FROM inventory.reserve_now_result('NOW-1', 1, 'rn-r', ttl => '1 hour')"),
	'true ok 1 PENDING 0', 'reserve_now_result through the router: the whole result');
is(app("SELECT expires_at FROM inventory.reserve_now_result('NOW-1', 1, 'rn-r', ttl => '1 hour')"),
	node_sql($home, "SELECT expires_at FROM inventory.ledger WHERE order_id = 'rn-r'"),
	'its replay answers the expires_at of the node\'s row');
app("SELECT inventory.cancel('rn-r', 1, 'NOW-1')");

# --- errors keep the node's SQLSTATE -----------------------------------------

is(app_state("SELECT inventory.reserve_now('NOW-1', 0, 'rn-4')"), '22023', 'qty 0: 22023 from the node');
is(app_state("SELECT inventory.reserve_now('NOW-1', 5, 'rn-1')"), '23505',
	'a key reused for another quantity: 23505 from the node');

# --- a transaction block on the router ----------------------------------------

app(q{
BEGIN;
SELECT inventory.reserve_now('NOW-1', 1, 'rn-5');
ROLLBACK;
});
is(rows_on($home, 'rn-5'), '1',
	'in a router transaction that rolls back, the call has committed on its node');

# --- a split SKU ----------------------------------------------------------------

admin("SELECT inventory.restock('NOW-HOT', 40, 'in-now-hot')");
admin("SELECT count(*) FROM inventory.split('NOW-HOT', $NPARTS)");
my $got = app(q{
SELECT string_agg(s, ' ' ORDER BY s) FROM (
	SELECT s, count(*) FROM (
		SELECT inventory.reserve_now('NOW-HOT', 1, 'rh-' || g) AS s FROM generate_series(1, 50) g) x
	GROUP BY s) y(s, n) WHERE n > 0});
is($got, 'insufficient ok', 'a split SKU: 50 calls for 40 units, ok and insufficient');
is(app("SELECT status || ' ' || state FROM inventory.reserve_now_result('NOW-HOT', 1, 'rh-1')"),
	'duplicate PENDING', 'reserve_now_result of a split SKU answers its bucket\'s reservation');
is(app(q{SELECT count(*) FILTER (WHERE s = 'ok') FROM (
	SELECT inventory.reserve_now('NOW-HOT', 1, 'rh-' || g) AS s FROM generate_series(1, 50) g) x}), '0',
	'replayed: none is ok again');
my $sold = 0;
$sold += node_sql($_, "SELECT count(*) FROM inventory.ledger WHERE sku = 'NOW-HOT' AND kind = 'reserve'")
  for 0 .. $NPARTS - 1;
is($sold, 40, 'exactly the 40 units stocked were reserved, over the buckets');
is(app("SELECT sum(available) FROM inventory.stock WHERE sku = 'NOW-HOT'"), '0', 'none left');

# --- the application's role ---------------------------------------------------------

# (every call above is shop_app's already; one more on a SKU of its own)
admin("SELECT inventory.restock('NOW-2', 1, 'in-now-2')");
is(app("SELECT inventory.reserve_now('NOW-2', 1, 'rn-role')"),
	'ok', 'inventory_app may call it through the router');
# verify('30 s') on every node: waits for a SKU with a change in flight
# (an error naming it if one is still busy), so that none is skipped
is(mon("SELECT count(*) FROM inventory.verify('30 s')"), '0', "verify('30 s') is empty on every node");

done_testing();

# Tables are the truth: after a restart or a crash the cache rebuilds itself
# lazily from the tables, holds of dead sessions are gone, and nothing
# committed is lost.
#
# Who calls: shop_app (inventory_app) reserves, confirms and reads the live
# counter, shop_admin (inventory_admin) restocks, reads the ledger and
# verifies, shop_monitor (inventory_monitor) reads the cache's figures --
# each connected as itself, and after each restart the first calls are
# theirs, on SKUs the cache has not loaded.  The superuser creates the
# extension and the roles, restarts the server and kills the backend.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles as_app as_admin as_monitor);

my $node = inventory_node('restart', qq{
restart_after_crash = on
# the worker's folding would load SKUs into the cache by itself
inventory.worker_enabled = off
});
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node);
as_admin($node, 'postgres', q{
SELECT inventory.restock('R-1', 10, 'delivery');
SELECT inventory.restock('R-2', 4, 'delivery-2');
});
as_app($node, 'postgres', q{
SELECT inventory.reserve('R-1', 3, 'kept');
SELECT inventory.reserve('R-1', 2, 'paid');
SELECT inventory.confirm('paid');
});

$node->restart;
is(as_monitor($node, 'postgres', 'SELECT entries FROM inventory.cache_info()'),
	'0', 'the cache starts empty after a restart');
is(as_app($node, 'postgres', "SELECT inventory.available('R-1')"),
	'5', 'and loads the SKU from the tables on first use');
is(as_monitor($node, 'postgres',
	"SELECT on_hand || ' ' || reserved || ' ' || version FROM inventory.sku_stats WHERE sku = 'R-1'"),
	'8 3 4', 'with the committed counters');

# a session dies with a hold in flight; the server restarts all backends
my $session = $node->background_psql('postgres', extra_params => [ '-U', 'shop_app' ]);
$session->query_safe("BEGIN; SELECT inventory.reserve('R-1', 5, 'lost')");
my $pid = $session->query_safe('SELECT pg_backend_pid()');
is(as_app($node, 'postgres', "SELECT inventory.available('R-1')"),
	'0', 'the hold in flight takes the last units');
# the crash, and waiting for the server to restart all backends and come
# back: scaffolding (wait_for_log dies if it does not)
my $offset = -s $node->logfile;
kill 'KILL', $pid;
$session->quit;
$node->wait_for_log(
	qr/server process \(PID $pid\) was terminated by signal 9.*database system is ready to accept connections/s,
	$offset);
$node->poll_query_until('postgres', 'SELECT 1', '1')
	or die 'the server did not come back';

is(as_app($node, 'postgres', "SELECT inventory.available('R-1')"),
	'5', 'the dead session\'s hold is gone');
is(as_admin($node, 'postgres',
	"SELECT string_agg(order_id || ':' || state, ' ' ORDER BY order_id) FROM inventory.ledger WHERE kind = 'reserve'"),
	'kept:PENDING paid:CONFIRMED', 'committed reservations are intact, the lost one left no row');
is(as_app($node, 'postgres', "SELECT status FROM inventory.reserve('R-1', 5, 'after')"),
	'ok', 'reserves work at once');
# the first call of R-2 since the crash, with the cache empty: reserve_now
# by the application loads it (issue 31, E5: it read the restore marker
# with the caller's rights, and inventory_app has none on it)
is(as_app($node, 'postgres', "SELECT inventory.reserve_now('R-2', 1, 'after-now')"),
	'ok', 'reserve_now by the application loads a SKU into the cache after the crash');
is(as_admin($node, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"),
	'0', 'verify() is empty');

$node->stop;
done_testing();

# Tables are the truth: after a restart or a crash the cache rebuilds itself
# lazily from the tables, holds of dead sessions are gone, and nothing
# committed is lost.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node);

my $node = inventory_node('restart', qq{
restart_after_crash = on
# the worker's folding would load SKUs into the cache by itself
inventory.worker_enabled = off
});
$node->safe_psql('postgres', q{
CREATE EXTENSION inventory;
SELECT inventory.restock('R-1', 10, 'delivery');
SELECT inventory.reserve('R-1', 3, 'kept');
SELECT inventory.reserve('R-1', 2, 'paid');
SELECT inventory.confirm('paid');
});

$node->restart;
is($node->safe_psql('postgres', 'SELECT entries FROM inventory.cache_info()'),
	'0', 'the cache starts empty after a restart');
is($node->safe_psql('postgres', "SELECT inventory.available('R-1')"),
	'5', 'and loads the SKU from the tables on first use');
is($node->safe_psql('postgres',
	"SELECT on_hand || ' ' || reserved || ' ' || version FROM inventory.sku_stats WHERE sku = 'R-1'"),
	'8 3 4', 'with the committed counters');

# a session dies with a hold in flight; the server restarts all backends
my $session = $node->background_psql('postgres');
$session->query_safe("BEGIN; SELECT inventory.reserve('R-1', 5, 'lost')");
my $pid = $session->query_safe('SELECT pg_backend_pid()');
is($node->safe_psql('postgres', "SELECT inventory.available('R-1')"),
	'0', 'the hold in flight takes the last units');
kill 'KILL', $pid;
$session->quit;
$node->poll_query_until('postgres', 'SELECT 1', '1')
	or die 'the server did not come back';
ok($node->log_contains('server process \(PID \d+\) was terminated by signal 9'),
	'the backend crash restarted the server');

is($node->safe_psql('postgres', "SELECT inventory.available('R-1')"),
	'5', 'the dead session\'s hold is gone');
is($node->safe_psql('postgres',
	"SELECT string_agg(order_id || ':' || state, ' ' ORDER BY order_id) FROM inventory.ledger WHERE kind = 'reserve'"),
	'kept:PENDING paid:CONFIRMED', 'committed reservations are intact, the lost one left no row');
is($node->safe_psql('postgres', "SELECT status FROM inventory.reserve('R-1', 5, 'after')"),
	'ok', 'reserves work at once');
is($node->safe_psql('postgres', 'SELECT count(*) FROM inventory.verify()'),
	'0', 'verify() is empty');

$node->stop;
done_testing();

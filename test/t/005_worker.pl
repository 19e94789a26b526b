# The background workers expire unpaid reservations by themselves (I5),
# never wait for a buyer, come back after one is terminated, and follow
# their settings.
#
# Who calls: shop_app (inventory_app) reserves, confirms and reads the
# stock, shop_admin (inventory_admin) restocks, reads the ledger and
# verifies, shop_monitor (inventory_monitor) reads worker_status and the
# settings -- each connected as itself.  The superuser creates the
# extension and the roles, reads the workers' rows of pg_stat_activity and
# pg_locks (other roles' rows), terminates a worker (pg_terminate_backend
# of a process that runs as the bootstrap superuser) and changes the
# server's settings.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles wait_until as_role as_app as_admin as_monitor);

my $node = inventory_node('worker', qq{
inventory.expire_interval = '200ms'
});
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node);
as_admin($node, 'postgres', "SELECT inventory.restock('W-1', 100, 'delivery')");

# poll(ROLE, SQL): SQL, run in postgres by the login ROLE, answers t before
# the default timeout
sub poll
{
	my ($role, $sql) = @_;
	return wait_until($PostgreSQL::Test::Utils::timeout_default,
		sub { as_role($node, $role, 'postgres', $sql) eq 't' });
}

# the workers' rows of pg_stat_activity: the superuser's
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'inventory launcher'"),
	'1', 'the launcher shows in pg_stat_activity');
ok(poll('shop_monitor',
	"SELECT state = 'idle' AND visits >= 1 FROM inventory.worker_status WHERE datname = 'postgres'"),
	'a worker has visited the database once, and left with nothing due');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'inventory worker'"),
	'0', 'no worker stays where nothing is due');

# I5: an overdue reservation is expired within expire_interval plus one batch
as_app($node, 'postgres',
	"SELECT inventory.reserve('W-1', 10, 'unpaid', ttl => '1 second')");
is(as_app($node, 'postgres', "SELECT inventory.available('W-1')"), '90',
	'the reservation holds its units');
ok(poll('shop_admin',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'unpaid'"),
	'the worker expires it');
my $late = as_admin($node, 'postgres',
	"SELECT extract(epoch FROM settled_at - expires_at) FROM inventory.ledger WHERE order_id = 'unpaid'");
# the bound is I5's: the setting, plus one batch -- here a transaction that
# expires one row, whose time on a busy machine (a worker's start among
# other tests' processes) is given a second
my $interval = as_monitor($node, 'postgres',
	"SELECT extract(epoch FROM current_setting('inventory.expire_interval')::interval)");
my $batch = 1.0;
cmp_ok($late, '<=', $interval + $batch,
	"expired ${late}s after expires_at: within the interval (${interval}s) and one batch (${batch}s)");
is(as_app($node, 'postgres', "SELECT inventory.available('W-1')"), '100',
	'its units are back on sale');
is(as_monitor($node, 'postgres',
	"SELECT expired >= 1 AND visits >= 2 AND lag = '0' FROM inventory.worker_status WHERE datname = 'postgres'"),
	't', 'worker_status counts it');

# a buyer holding the reservation: the worker skips it and goes on working
as_app($node, 'postgres',
	"SELECT inventory.reserve('W-1', 1, 'paying', ttl => '2 seconds')");
my $buyer = $node->background_psql('postgres', extra_params => [ '-U', 'shop_app' ]);
$buyer->query_safe("BEGIN; SELECT inventory.confirm('paying')");
poll('shop_admin',
	"SELECT clock_timestamp() > expires_at FROM inventory.ledger WHERE order_id = 'paying'")
	or die 'the reservation did not fall due';
ok(poll('shop_monitor',
	"SELECT lag > '0' AND state = 'running' FROM inventory.worker_status WHERE datname = 'postgres'"),
	'the worker completes a round while the buyer holds the row lock, and reports the reservation it could not expire');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE a.backend_type = 'inventory worker' AND NOT l.granted"),
	'0', 'and never waits for the buyer');

# the worker stays while the overdue reservation is due; terminated, it is
# replaced (pg_terminate_backend of the worker: the superuser's)
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'postgres'");
like($pid, qr/^\d+$/, 'the worker stays while work is due');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'postgres' AND pid <> $pid"),
	'a new worker replaces a terminated one');
$buyer->query_safe('COMMIT');
$buyer->quit;
is(as_admin($node, 'postgres', "SELECT state FROM inventory.ledger WHERE order_id = 'paying'"),
	'CONFIRMED', 'the buyer who confirmed in time keeps the sale: one final state');

as_app($node, 'postgres', "SELECT inventory.reserve('W-1', 1, 'after-terminate', ttl => '1 second')");
ok(poll('shop_admin',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'after-terminate'"),
	'and reservations expire as before');

# SIGHUP: worker_enabled = off, then on again (the server's settings)
$node->append_conf('postgresql.conf', "inventory.worker_enabled = off");
$node->reload;
ok(poll('shop_monitor',
	"SELECT state = 'disabled' FROM inventory.worker_status WHERE datname = 'postgres'"),
	'worker_enabled = off reaches the launcher and the workers');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'inventory worker'"),
	'no worker is left in a database');
as_app($node, 'postgres', "SELECT inventory.reserve('W-1', 1, 'while-off', ttl => '1 second')");
# proving that nothing acts takes time: wait until the reservation has been
# overdue for five intervals, when a worker would long have expired it
poll('shop_admin', q{
SELECT clock_timestamp() > expires_at + 5 * current_setting('inventory.expire_interval')::interval
  FROM inventory.ledger WHERE order_id = 'while-off'})
	or die 'the reservation did not fall due';
is(as_admin($node, 'postgres', "SELECT state FROM inventory.ledger WHERE order_id = 'while-off'"),
	'PENDING', 'while off, nothing expires');
$node->append_conf('postgresql.conf', "inventory.worker_enabled = on");
$node->reload;
ok(poll('shop_admin',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'while-off'"),
	'switched back on, it catches up');

# it folds settled movements, keeping the counters
my $before = as_app($node, 'postgres', "SELECT on_hand || ' ' || reserved || ' ' || version FROM inventory.stock WHERE sku = 'W-1'");
ok(poll('shop_admin',
	"SELECT count(*) = 0 FROM inventory.ledger WHERE NOT folded AND state IS DISTINCT FROM 'PENDING'"),
	'the worker folds every settled movement');
is(as_app($node, 'postgres', "SELECT on_hand || ' ' || reserved || ' ' || version FROM inventory.stock WHERE sku = 'W-1'"),
	$before, 'folding does not change the counters');
is(as_admin($node, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0', 'verify() is empty');

$node->stop;
done_testing();

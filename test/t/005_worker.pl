# The background workers expire unpaid reservations by themselves (I5),
# never wait for a buyer, come back after one is terminated, and follow
# their settings.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node);
use Time::HiRes qw(time);

my $node = inventory_node('worker', qq{
inventory.expire_interval = '200ms'
});
$node->safe_psql('postgres', q{
CREATE EXTENSION inventory;
SELECT inventory.restock('W-1', 100, 'delivery');
});

is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'inventory launcher'"),
	'1', 'the launcher shows in pg_stat_activity');
ok($node->poll_query_until('postgres',
	"SELECT state = 'idle' AND visits >= 1 FROM inventory.worker_status WHERE datname = 'postgres'"),
	'a worker has visited the database once, and left with nothing due');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'inventory worker'"),
	'0', 'no worker stays where nothing is due');

# I5: an overdue reservation is expired within expire_interval plus one batch
$node->safe_psql('postgres',
	"SELECT inventory.reserve('W-1', 10, 'unpaid', ttl => '1 second')");
is($node->safe_psql('postgres', "SELECT inventory.available('W-1')"), '90',
	'the reservation holds its units');
ok($node->poll_query_until('postgres',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'unpaid'"),
	'the worker expires it');
my $late = $node->safe_psql('postgres',
	"SELECT extract(epoch FROM settled_at - expires_at) FROM inventory.ledger WHERE order_id = 'unpaid'");
cmp_ok($late, '<=', 0.2 + 1.0, "expired ${late}s after expires_at: within the interval and one batch");
is($node->safe_psql('postgres', "SELECT inventory.available('W-1')"), '100',
	'its units are back on sale');
is($node->safe_psql('postgres',
	"SELECT expired >= 1 AND visits >= 2 AND lag = '0' FROM inventory.worker_status WHERE datname = 'postgres'"),
	't', 'worker_status counts it');

# a buyer holding the reservation: the worker skips it and goes on working
$node->safe_psql('postgres',
	"SELECT inventory.reserve('W-1', 1, 'paying', ttl => '2 seconds')");
my $buyer = $node->background_psql('postgres');
$buyer->query_safe("BEGIN; SELECT inventory.confirm('paying')");
$node->poll_query_until('postgres',
	"SELECT clock_timestamp() > expires_at FROM inventory.ledger WHERE order_id = 'paying'")
	or die 'the reservation did not fall due';
ok($node->poll_query_until('postgres',
	"SELECT lag > '0' AND state = 'running' FROM inventory.worker_status WHERE datname = 'postgres'"),
	'the worker completes a round while the buyer holds the row lock, and reports the reservation it could not expire');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE a.backend_type = 'inventory worker' AND NOT l.granted"),
	'0', 'and never waits for the buyer');

# the worker stays while the overdue reservation is due; terminated, it is
# replaced
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'postgres'");
like($pid, qr/^\d+$/, 'the worker stays while work is due');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'postgres' AND pid <> $pid"),
	'a new worker replaces a terminated one');
$buyer->query_safe('COMMIT');
$buyer->quit;
is($node->safe_psql('postgres', "SELECT state FROM inventory.ledger WHERE order_id = 'paying'"),
	'CONFIRMED', 'the buyer who confirmed in time keeps the sale: one final state');

$node->safe_psql('postgres', "SELECT inventory.reserve('W-1', 1, 'after-terminate', ttl => '1 second')");
ok($node->poll_query_until('postgres',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'after-terminate'"),
	'and reservations expire as before');

# SIGHUP: worker_enabled = off, then on again
$node->append_conf('postgresql.conf', "inventory.worker_enabled = off");
$node->reload;
ok($node->poll_query_until('postgres',
	"SELECT state = 'disabled' FROM inventory.worker_status WHERE datname = 'postgres'"),
	'worker_enabled = off reaches the launcher and the workers');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'inventory worker'"),
	'no worker is left in a database');
$node->safe_psql('postgres', "SELECT inventory.reserve('W-1', 1, 'while-off', ttl => '1 second')");
# proving that nothing acts takes time: wait until the reservation has been
# overdue for a second, several intervals
my $t0 = $node->safe_psql('postgres', "SELECT clock_timestamp() + interval '2 seconds'");
$node->poll_query_until('postgres', "SELECT clock_timestamp() > '$t0'");
is($node->safe_psql('postgres', "SELECT state FROM inventory.ledger WHERE order_id = 'while-off'"),
	'PENDING', 'while off, nothing expires');
$node->append_conf('postgresql.conf', "inventory.worker_enabled = on");
$node->reload;
ok($node->poll_query_until('postgres',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'while-off'"),
	'switched back on, it catches up');

# it folds settled movements, keeping the counters
my $before = $node->safe_psql('postgres', "SELECT on_hand || ' ' || reserved || ' ' || version FROM inventory.stock WHERE sku = 'W-1'");
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM inventory.ledger WHERE NOT folded AND state IS DISTINCT FROM 'PENDING'"),
	'the worker folds every settled movement');
is($node->safe_psql('postgres', "SELECT on_hand || ' ' || reserved || ' ' || version FROM inventory.stock WHERE sku = 'W-1'"),
	$before, 'folding does not change the counters');
is($node->safe_psql('postgres', 'SELECT count(*) FROM inventory.verify()'), '0', 'verify() is empty');

$node->stop;
done_testing();

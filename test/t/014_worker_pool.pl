# A bounded pool serves any number of databases.  With the server's default
# max_worker_processes (8) and inventory.max_workers (2), twenty databases
# each hold a reservation with a 1-second ttl: every one expires within the
# bound docs/operations.md states, never more than inventory.max_workers
# workers run at once, and parallel query still launches its workers.  When the pool
# cannot keep up -- here, both workers stuck behind a table lock -- the
# databases left waiting say how late they are in inventory.worker_status.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node);
use Time::HiRes qw(usleep time);

my $DBS   = 20;
my $BOUND = 3;    # seconds after expires_at, as docs/operations.md states

my $node = inventory_node('pool', qq{
log_statement = none
});
is($node->safe_psql('postgres', 'SHOW max_worker_processes'), '8', 'the default max_worker_processes');
is($node->safe_psql('postgres', 'SHOW inventory.max_workers'), '2', 'the default inventory.max_workers');

my @dbs = map { "shop$_" } 1 .. $DBS;
for my $db (@dbs)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, q{
CREATE EXTENSION inventory;
SELECT inventory.restock('P-1', 10, 'delivery');
});
}

# a table for parallel query
$node->safe_psql('postgres', q{
CREATE TABLE big AS SELECT g AS n FROM generate_series(1, 300000) g;
VACUUM ANALYZE big;
});

# every database gets a reservation that falls due in a second
my $t0 = time;
for my $db (@dbs)
{
	$node->safe_psql($db, "SELECT inventory.reserve('P-1', 3, 'unpaid', ttl => '1 second')");
}

# while they fall due and are expired, run a parallel query
my $launched = '';
my $end = time + 30;
my $left = $DBS;
while (time < $end && $left > 0)
{
	if ($launched eq '' && time > $t0 + 1)
	{
		$launched = $node->safe_psql('postgres', q{
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM big;
});
	}
	$left = 0;
	for my $db (@dbs)
	{
		$left++ if $node->safe_psql($db,
			"SELECT state = 'PENDING' FROM inventory.ledger WHERE order_id = 'unpaid'") eq 't';
	}
	usleep(20_000);
}
is($left, 0, "the reservations of all $DBS databases expired");
my $late = 0;
for my $db (@dbs)
{
	my $l = $node->safe_psql($db,
		"SELECT extract(epoch FROM settled_at - expires_at) FROM inventory.ledger WHERE order_id = 'unpaid'");
	$late = $l if $l > $late;
}
cmp_ok($late, '<=', $BOUND, "each within ${BOUND}s of its expires_at (the latest: ${late}s)");
like($launched, qr/Workers Launched: 2/, 'parallel query launched its workers meanwhile');
is($node->safe_psql('shop1', q{
SELECT count(*) FROM inventory.worker_status
 WHERE state IN ('idle', 'running') AND visits >= 1}), $DBS,
	'worker_status shows every database, visited');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'inventory worker'"),
	'the workers leave once nothing is due');

# --- the pool cannot keep up ------------------------------------------------

# two databases with work due whose ledger an administrator has locked: the
# two workers wait there; a third database's work must wait for a slot
my @locks;
for my $db ('shop1', 'shop2')
{
	$node->safe_psql($db, "SELECT inventory.reserve('P-1', 1, 'stuck', ttl => '1 second')");
	my $s = $node->background_psql($db);
	$s->query_safe('BEGIN; LOCK TABLE inventory.ledger IN ACCESS EXCLUSIVE MODE');
	push @locks, $s;
}
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 2 FROM pg_stat_activity
 WHERE backend_type = 'inventory worker' AND wait_event_type = 'Lock'}),
	'both workers wait behind the locks');
$node->safe_psql('shop3', "SELECT inventory.reserve('P-1', 1, 'waiting', ttl => '1 second')");
ok($node->poll_query_until('shop3', q{
SELECT state = 'waiting' AND lag > interval '1 second' AND pid IS NULL
  FROM inventory.worker_status WHERE datname = 'shop3'}),
	'worker_status says that shop3 waits for a worker, and how late it is');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'inventory worker'"),
	'2', 'no third worker is started: the pool holds inventory.max_workers');
is($node->safe_psql('shop3', "SELECT state FROM inventory.ledger WHERE order_id = 'waiting'"),
	'PENDING', 'its reservation is still PENDING');
$_->query_safe('COMMIT') for @locks;
$_->quit for @locks;
ok($node->poll_query_until('shop3',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'waiting'"),
	'once a slot is free, it is served');
ok($node->poll_query_until('shop3',
	"SELECT count(*) = 0 FROM inventory.worker_status WHERE lag > '0' OR state = 'waiting'"),
	'and no database is late any more');

$node->stop;
done_testing();

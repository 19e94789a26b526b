# A bounded pool serves any number of databases.  With the server's default
# max_worker_processes (8) and inventory.max_workers (2), twenty databases
# each hold a reservation with a 1-second ttl: every one expires within the
# bound docs/operations.md states, never more than inventory.max_workers
# workers run at once, and parallel query still launches its workers.  When the pool
# cannot keep up -- here, both workers stuck behind a table lock -- the
# databases left waiting say how late they are in inventory.worker_status.
#
# Who calls: shop_admin (inventory_admin) restocks, reads the ledgers and
# locks two of them by hand, shop_app (inventory_app) reserves,
# shop_monitor (inventory_monitor) reads the settings and worker_status --
# the same login roles in every database, since roles are the server's.
# The superuser creates the databases, the extension and the roles, the
# table of the parallel query and runs it (scaffolding: no inventory call),
# and reads the workers' rows of pg_stat_activity (other roles' rows).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles wait_until as_role as_app as_admin as_monitor);
use Time::HiRes qw(usleep time);
use POSIX qw(ceil);

my $DBS   = 20;

my $node = inventory_node('pool', qq{
log_statement = none
});

# poll(ROLE, DBNAME, SQL): SQL, run in DBNAME by the login ROLE, answers t
# before the default timeout
sub poll
{
	my ($role, $db, $sql) = @_;
	return wait_until($PostgreSQL::Test::Utils::timeout_default,
		sub { as_role($node, $role, $db, $sql) eq 't' });
}
# the premise: PostgreSQL's default (not the extension's)
$node->safe_psql('postgres', 'SHOW max_worker_processes') eq '8'
	or die 'max_worker_processes is not its default, 8';

my @dbs = map { "shop$_" } 1 .. $DBS;
for my $db (@dbs)
{
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, 'CREATE EXTENSION inventory');
	inventory_roles($node, $db) if $db eq $dbs[0];
	as_admin($node, $db, "SELECT inventory.restock('P-1', 10, 'delivery')");
}
my $max_workers = as_monitor($node, 'shop1', 'SHOW inventory.max_workers');
is($max_workers, '2', 'the default inventory.max_workers');
# I5's bound with more databases due than workers (docs/operations.md, "How
# soon"): within expire_interval of expires_at while a worker is free, and
# each database waits about one visit per database ahead of it on its
# worker -- at most DBS / max_workers visits.  A visit is a worker's start
# (a fork and a connection) and one batch of one row, a few milliseconds;
# 0.2 s allows for a machine that other tests keep busy.
my $VISIT = 0.2;
my $interval = as_monitor($node, 'shop1',
	"SELECT extract(epoch FROM current_setting('inventory.expire_interval')::interval)");
my $BOUND = $interval + ceil($DBS / $max_workers) * $VISIT;

# a table for parallel query
$node->safe_psql('postgres', q{
CREATE TABLE big AS SELECT g AS n FROM generate_series(1, 300000) g;
VACUUM ANALYZE big;
});

# every database gets a reservation that falls due in a second
my $t0 = time;
for my $db (@dbs)
{
	as_app($node, $db, "SELECT inventory.reserve('P-1', 3, 'unpaid', ttl => '1 second')");
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
		$left++ if as_admin($node, $db,
			"SELECT state = 'PENDING' FROM inventory.ledger WHERE order_id = 'unpaid'") eq 't';
	}
	usleep(20_000);
}
is($left, 0, "the reservations of all $DBS databases expired");
my $late = 0;
for my $db (@dbs)
{
	my $l = as_admin($node, $db,
		"SELECT extract(epoch FROM settled_at - expires_at) FROM inventory.ledger WHERE order_id = 'unpaid'");
	$late = $l if $l > $late;
}
cmp_ok($late, '<=', $BOUND,
	"each within ${BOUND}s of its expires_at (${interval}s and $DBS/$max_workers visits; the latest: ${late}s)");
like($launched, qr/Workers Launched: 2/, 'parallel query launched its workers meanwhile');
is(as_monitor($node, 'shop1', q{
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
	as_app($node, $db, "SELECT inventory.reserve('P-1', 1, 'stuck', ttl => '1 second')");
	my $s = $node->background_psql($db, extra_params => [ '-U', 'shop_admin' ]);
	$s->query_safe('BEGIN; LOCK TABLE inventory.ledger IN ACCESS EXCLUSIVE MODE');
	push @locks, $s;
}
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 2 FROM pg_stat_activity
 WHERE backend_type = 'inventory worker' AND wait_event_type = 'Lock'}),
	'both workers wait behind the locks');
as_app($node, 'shop3', "SELECT inventory.reserve('P-1', 1, 'waiting', ttl => '1 second')");
ok(poll('shop_monitor', 'shop3', q{
SELECT state = 'waiting' AND lag > interval '1 second' AND pid IS NULL
  FROM inventory.worker_status WHERE datname = 'shop3'}),
	'worker_status says that shop3 waits for a worker, and how late it is');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'inventory worker'"),
	'2', 'no third worker is started: the pool holds inventory.max_workers');
is(as_admin($node, 'shop3', "SELECT state FROM inventory.ledger WHERE order_id = 'waiting'"),
	'PENDING', 'its reservation is still PENDING');
$_->query_safe('COMMIT') for @locks;
$_->quit for @locks;
ok(poll('shop_admin', 'shop3',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'waiting'"),
	'once a slot is free, it is served');
ok(poll('shop_monitor', 'shop3',
	"SELECT count(*) = 0 FROM inventory.worker_status WHERE lag > '0' OR state = 'waiting'"),
	'and no database is late any more');

$node->stop;
done_testing();

# The torture test: 32 clients doing every operation at once, at random,
# for INVENTORY_TORTURE_SECONDS (default 60) seconds, while the worker
# expires and folds every 100 ms.
#
# The mix (test/torture/load/, weights below): carts reserved then paid,
# abandoned or left to expire; reservations, confirms, cancels and extends of
# live keys shared by all clients, with ttls of 20 ms to 4 s, so that
# confirms race the worker and inventory.expire(); replays of those keys,
# recent and old; version-checked reserves; savepoints and exception blocks
# rolled back; transactions rolled back; restocks and stocktakes, some
# version-checked; an administrator writing the tables by hand (cancel,
# confirm, expire, extend, a reservation refused with 23514 and caught, a
# delivery booked and deleted once folded, fold()).  Every API result is
# checked against the README's outcome table as it comes (torture.judge()
# in test/torture/setup.sql): a departure raises an ERROR, which aborts the
# client and fails the test with the message.
#
# The run is cut in three slices; between two, with the load stopped and
# the worker paused, a checkpoint asserts that the cache agrees with the
# tables, that nothing is oversold, that every row is in a legal state,
# that each SKU's counters -- in inventory.stock, in its base row, live in
# shared memory, and its statistics -- equal what its movements add up to,
# computed independently, and that nothing rolled back left a trace.  At the
# end the worker must clear every overdue reservation and fold everything.
use strict;
use warnings;
use File::Basename qw(dirname);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $seconds = $ENV{INVENTORY_TORTURE_SECONDS} // 60;
die "INVENTORY_TORTURE_SECONDS must be a whole number of seconds, at least 3\n"
  unless $seconds =~ /^[0-9]+$/ && $seconds >= 3;
my $clients = 32;
my $dir = dirname(__FILE__) . '/../torture';

# script => weight
my %mix = (
	'buy.sql' => 20,          # carts: reserve, then confirm / cancel / nothing
	'reserve.sql' => 15,      # reserve a live or old key (new or a replay)
	'settle.sql' => 20,       # confirm / cancel / extend a live or old key
	'version.sql' => 5,       # version-checked reserve
	'savepoint.sql' => 5,     # savepoint and exception block rolled back
	'abort.sql' => 3,         # transaction rolled back; key reuse caught
	'restock.sql' => 4,       # restock (a few create SKUs)
	'stocktake.sql' => 2,     # adjust, a third version-checked
	'admin.sql' => 3,         # direct DML, fold()
	'expire.sql' => 1,        # expire()
	'watch.sql' => 2);        # readers: nothing oversold at any instant

my $node = PostgreSQL::Test::Cluster->new('torture');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'inventory'
max_connections = 64
inventory.expire_interval = '100ms'
log_lock_waits = on
});
$node->start;
$node->safe_psql('postgres', slurp_file("$dir/setup.sql"));
$node->safe_psql('postgres', 'CREATE EXTENSION amcheck');

# the workers must be expiring and folding from the first second of the load
$node->poll_query_until('postgres',
	"SELECT visits >= 1 FROM inventory.worker_status WHERE datname = 'postgres'")
  or die 'no worker visited the database';
my $log_start = -s $node->logfile;

# ALTER SYSTEM and a reload, then wait until the workers act on it:
# 'disabled' means that no worker is in the database, so none is in flight
sub worker
{
	my ($enabled) = @_;
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET inventory.worker_enabled = $enabled; SELECT pg_reload_conf()");
	my $cond = $enabled eq 'on' ? "state <> 'disabled'" : "state = 'disabled'";
	$node->poll_query_until('postgres',
		"SELECT $cond FROM inventory.worker_status WHERE datname = 'postgres'")
	  or die "the workers did not see worker_enabled = $enabled";
}

# The rows of a query; '' when there are none.
sub rows
{
	return $node->safe_psql('postgres', shift);
}

# One slice of the load; returns the number of transactions processed.
sub load
{
	my ($name, $secs) = @_;
	my @cmd = (
		'pgbench', '--no-vacuum', "--client=$clients", '--jobs=2', "--time=$secs",
		(map { ('-f', "$dir/load/$_\@$mix{$_}") } sort keys %mix),
		# old replays reach back to keys born as long ago as the run lasts
		'-D', 'oldest=' . $seconds * 100,
		'-h', $node->host, '-p', $node->port, 'postgres');
	my ($out, $err) = ('', '');
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
	my $status = $? >> 8;
	note $out;
	is($status, 0, "$name: pgbench exits with 0");
	# an aborted client (an ERROR, e.g. from torture.judge()) and any message
	# from the server land on stderr
	is($err, '', "$name: no client aborted, no message from the server");
	like($out, qr/^number of failed transactions: 0 \(/m,
		"$name: no failed transaction (serialization failure or deadlock)");
	my ($done) = $out =~ /^number of transactions actually processed: ([0-9]+)/m;
	return $done // 0;
}

# The checks, with the load stopped and the worker paused: nothing changes
# while they run.
sub checkpoint
{
	my ($name) = @_;
	# pgbench has ended every transaction; wait until its backends are gone
	$node->poll_query_until('postgres',
		"SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'pgbench')")
	  or die 'pgbench backends linger';
	my ($out, $err) = ('', '');
	$node->psql('postgres', 'SELECT * FROM inventory.verify()',
		stdout => \$out, stderr => \$err, on_error_die => 1);
	is($out, '', "$name: verify() is empty");
	# a SKU with changes in flight would be skipped with a NOTICE
	is($err, '', "$name: verify() compared every SKU");
	is(rows('SELECT * FROM torture.oversold'), '',
		"$name: no SKU oversold: 0 <= reserved <= on_hand");
	is(rows('SELECT * FROM torture.illegal_row WHERE why IS NOT NULL'), '',
		"$name: every ledger row is in a legal state");
	is(rows('SELECT * FROM torture.stock_mismatch'), '',
		"$name: inventory.stock and the base rows equal the sums of the movements");
	is(rows('SELECT * FROM torture.live_mismatch'), '',
		"$name: available() and sku_stats equal them too, with nothing held or in flight");
	is(rows('SELECT * FROM torture.stats_mismatch'), '',
		"$name: sku_stats counted every committed movement, exactly once");
	# the unique index is what the executor's single-row insert relies on:
	# count keys on the heap itself, and check the indexes against it
	is( rows(q{
SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = off;
SELECT order_id, batch_id, count(*) FROM inventory.ledger
 GROUP BY order_id, batch_id HAVING count(*) > 1}), '',
		"$name: no key has two movements");
	is( rows(q{
SELECT count(bt_index_check(i.indexrelid, true)) FROM pg_index i
 WHERE i.indrelid IN ('inventory.ledger'::regclass, 'inventory.sku'::regclass)}), '4',
		"$name: the four indexes of ledger and sku match their heaps (amcheck)");
	is( rows(q{
SELECT order_id, batch_id FROM inventory.ledger
 WHERE order_id LIKE 'abort-%' OR (order_id LIKE 'sp-%' AND batch_id <> 1)}), '',
		"$name: work rolled back (transactions, savepoints, exception blocks) left no row");
}

my @slices = (int($seconds / 3), int($seconds / 3));
push @slices, $seconds - $slices[0] - $slices[1];
my $transactions = 0;
for my $i (1 .. @slices)
{
	$transactions += load("slice $i ($slices[$i - 1] s)", $slices[$i - 1]);
	if ($i < @slices)
	{
		worker('off');
		checkpoint("checkpoint $i");
		worker('on');
	}
}

# The storm is over: the worker expires every reservation left (the longest
# ttl in the mix is 10 s) and folds every movement.
ok( $node->poll_query_until('postgres',
		'SELECT NOT EXISTS (SELECT FROM inventory.ledger WHERE NOT folded)'),
	'the worker expires and folds everything left');
ok( $node->poll_query_until('postgres',
		"SELECT lag = '0' AND state <> 'waiting' FROM inventory.worker_status WHERE datname = 'postgres'"),
	'the end: the workers have caught up, no work waits for them');
worker('off');
checkpoint('the end');
is(rows('SELECT sum(reserved) FROM inventory.stock'), '0', 'the end: nothing is reserved');
my @log = grep { /\b(?:ERROR|FATAL|PANIC|WARNING):/ }
  split /\n/, slurp_file($node->logfile, $log_start);
is(join("\n", @log), '', 'the server logged no ERROR, WARNING, FATAL or PANIC');

my $outcomes = rows(q{
SELECT string_agg(op || ': ' || calls, '; ' ORDER BY op)
  FROM (SELECT op, string_agg(status || ' ' || calls, ', ' ORDER BY calls DESC) AS calls
		  FROM torture.outcome_counts WHERE calls > 0 GROUP BY op) o});
my $ledger = rows(q{
SELECT string_agg(count || ' ' || what, ', ' ORDER BY count DESC)
  FROM (SELECT coalesce(state::text, kind) AS what, count(*) FROM torture.movement
		 GROUP BY 1) m});
diag sprintf('%d s, %d clients: %d pgbench transactions (%.0f/s)',
	$seconds, $clients, $transactions, $transactions / $seconds);
diag "API calls: $outcomes";
diag "movements: $ledger";

$node->stop;
done_testing();

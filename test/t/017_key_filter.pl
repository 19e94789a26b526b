# The key filter.  A replayed key is always recognised, whatever happened
# since it was made: a crash, a restart, a fold, keys an administrator
# deleted, a failover to a standby whose replay passes no trigger.  After
# every start the filter knows no database; until a worker (or
# inventory.key_filter_rebuild()) has read a database's keys, every key of
# that database is looked up, and buyers are answered right meanwhile and
# never wait for the rebuild.  A filter far too small for its keys is said
# "maybe" for almost every key and costs lookups, never a wrong answer; a
# filter of size 0 is off.
#
# The replay checks call reserve() (restock() for restocks) with every key
# in the ledger, on a sold-out SKU (where only the key lookup tells a
# replay from a refusal) and on a SKU with stock (where a key wrongly said
# absent would be inserted again).  A key in the ledger that the filter
# said absent shows up as `insufficient` or as an error.  The keys checked
# after each start include keys the filter learnt only from the trigger
# (made once the database was ready), only from a rebuild (made before the
# start, or replayed by a standby), and keys of a transaction that was in
# flight during the rebuild.
#
# Every call is made by the login role the manual gives it: shop_app
# reserves (replays of reservations included), shop_admin restocks, writes
# and reads the tables and rebuilds the filter, shop_monitor reads the
# filter's figures and verifies.  A replay check reads the keys as the
# administrator and replays them as the application, which knows its own
# keys.  The superuser creates the extension and the roles, restores rows
# with the tables' owner's COPY, runs the servers (settings, crashes,
# restarts, promotion) and reads what the workers do for a diagnosis.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles as_app as_admin as_monitor poll_as);

my @DBS = ('postgres', 'shop2');

# keys in each database's ledger, by "kind/sku": what every replay check
# expects to be answered duplicate
my %keys = map { $_ => {} } @DBS;

sub add_keys
{
	my ($db, $what, $n) = @_;
	$keys{$db}{$what} += $n;
}

# run_as(NODE, ROLE, DB, SQL): psql's output, connected as ROLE (undef: the
# superuser), or the error that stopped it (so that an assertion fails
# rather than the script dying); app / admin / monitor(NODE, DB, SQL): as
# shop_app, shop_admin, shop_monitor
sub run_as
{
	my ($node, $role, $db, $sql) = @_;
	my ($ret, $out, $err) = $node->psql($db, $sql,
		defined $role ? (extra_params => [ '-U', $role ]) : ());
	return $ret == 0 ? $out : "FAILED: $err";
}
sub app { my $node = shift; return run_as($node, 'shop_app', @_); }
sub admin { my $node = shift; return run_as($node, 'shop_admin', @_); }
sub monitor { my $node = shift; return run_as($node, 'shop_monitor', @_); }

sub ready
{
	my ($node, $db) = @_;
	return monitor($node, $db, 'SELECT ready FROM inventory.key_filter');
}

sub wait_ready
{
	my ($node, $label) = @_;
	for my $db (@DBS)
	{
		ok(poll_as($node, 'shop_monitor', $db, 'SELECT ready FROM inventory.key_filter'),
			"$label: the worker read the keys of $db (ready)");
	}
}

# keys_json(NODE, DB, WHERE): the movements of the ledger that match WHERE
# (kind, sku, qty, order_id, batch_id), read by shop_admin, as a JSON
# array in a dollar-quoted SQL literal, for json_to_recordset() in a
# statement of another role: the keys travel exactly, tabs, quotes and
# newlines included
my $KEYS_ROW = 'k(kind text, sku text, qty bigint, order_id text, batch_id integer)';
sub keys_json
{
	my ($node, $db, $where) = @_;
	my $json = admin($node, $db, qq{
SELECT coalesce(json_agg(json_build_object('kind', kind, 'sku', sku, 'qty', qty,
                                           'order_id', order_id, 'batch_id', batch_id)), '[]')
  FROM inventory.ledger WHERE $where});
	return $json if $json =~ /^FAILED/;
	die 'a key holds the quote' if $json =~ /\$keys\$/;
	return "\$keys\$$json\$keys\$";
}

# Replays every key of the ledger (rows matching each WHERE clause): the
# administrator reads them, then the application replays the reservations
# with reserve() in one transaction and the administrator the restocks
# with restock() in another, with the movement's own arguments.  Returns
# "kind/sku:status:count ...", summed over the clauses.
sub replays
{
	my ($node, $db, @where) = @_;
	@where = ('true') unless @where;
	my %n;
	for my $where (@where)
	{
		my $keys = keys_json($node, $db, $where);
		return $keys if $keys =~ /^FAILED/;
		for my $call ([ \&app, 'reserve' ], [ \&admin, 'restock' ])
		{
			my ($as, $kind) = @$call;
			my $out = $as->($node, $db, qq{
SELECT l.kind || '/' || l.sku || ':' || l.s || ':' || count(*)
  FROM (SELECT kind, sku, (inventory.$kind(sku, qty, order_id, batch_id)).status AS s
          FROM json_to_recordset($keys) AS $KEYS_ROW WHERE kind = '$kind') l
 GROUP BY l.kind, l.sku, l.s});
			return $out if $out =~ /^FAILED/;
			for (split /\n/, $out)
			{
				my ($k, $c) = /^(.*):(\d+)$/ or return "unexpected line: $_";
				$n{$k} += $c;
			}
		}
	}
	return join ' ', map { "$_:$n{$_}" } sort keys %n;
}

sub expected_replays
{
	my ($db) = @_;
	return join ' ', map { "$_:duplicate:$keys{$db}{$_}" } sort keys %{ $keys{$db} };
}

# said(NODE, DB): what the filter has said, as shop_monitor reads it:
# [absent, maybe, false positives], or the error
sub said
{
	my ($node, $db) = @_;
	my $out = monitor($node, $db, 'SELECT said_absent, said_maybe, false_positives FROM inventory.key_filter');
	return $out =~ /^FAILED/ ? $out : [ split /\|/, $out ];
}

# Tries $n new keys on a SKU, in one transaction of the application's, and
# reports the statuses, the key locks held at its end, the scans of the
# key's index, and what the filter said meanwhile (its figures, which are
# the server's, read by the monitor before and after).
my $new_tag = 0;
sub new_keys
{
	my ($node, $db, $sku, $n) = @_;
	my $prefix = 'new-' . ++$new_tag;
	my $said0 = said($node, $db);
	return { text => $said0 } unless ref $said0;
	my $out = app($node, $db, qq{
BEGIN;
SELECT pg_stat_get_xact_numscans('inventory.ledger_pkey'::regclass) AS s0 \\gset
SELECT string_agg(s || ':' || c, ' ' ORDER BY s) FROM (
  SELECT r.status AS s, count(*) AS c
    FROM generate_series(1, $n) i
   CROSS JOIN LATERAL inventory.reserve('$sku', 1, '$prefix-' || i, i % 5 - 2) r
   GROUP BY 1) x;
SELECT count(*) FROM pg_locks
 WHERE locktype = 'object' AND classid = 'inventory.ledger'::regclass
   AND objsubid = 0 AND pid = pg_backend_pid();
SELECT pg_stat_get_xact_numscans('inventory.ledger_pkey'::regclass) - :s0;
COMMIT;
});
	return { text => $out } if $out =~ /^FAILED/;
	my $said1 = said($node, $db);
	return { text => $said1 } unless ref $said1;
	my ($status, $locks, $scans) = split /\n/, $out;
	my ($absent, $maybe, $fp) = map { $said1->[$_] - $said0->[$_] } 0 .. 2;
	return {
		status => $status, locks => $locks, scans => $scans,
		absent => $absent, maybe => $maybe, fp => $fp,
		text => "$status locks=$locks scans=$scans absent=$absent maybe=$maybe fp=$fp" };
}

# The whole check of one database: ready as expected, every key a
# duplicate, new keys refused -- looked up one by one while not ready, and
# answered from the filter, with no lock and no lookup, once ready.
sub check_db
{
	my ($node, $db, $label, $ready) = @_;
	my $n = $db eq 'postgres' ? 300 : 100;
	is(ready($node, $db), $ready ? 't' : 'f', "$label: $db is " . ($ready ? '' : 'not ') . 'ready');
	is(replays($node, $db), expected_replays($db), "$label: every key of $db replayed is a duplicate");
	is(new_keys($node, $db, 'KF-HOT', $n)->{text},
		$ready
		  ? "insufficient:$n locks=0 scans=0 absent=$n maybe=0 fp=0"
		  : "insufficient:$n locks=$n scans=$n absent=0 maybe=0 fp=0",
		"$label: new keys in $db are refused, "
		  . ($ready ? 'said absent, with no lock and no lookup' : 'each looked up under its lock'));
	return unless $db eq 'postgres';
	# admitted: each key is locked, and asked under its lock; the insert's
	# unique check is its only lookup once the database is ready
	is(new_keys($node, $db, 'KF-OPEN', 50)->{text},
		$ready
		  ? 'ok:50 locks=50 scans=0 absent=50 maybe=0 fp=0'
		  : 'ok:50 locks=50 scans=50 absent=0 maybe=0 fp=0',
		"$label: new keys in $db are admitted, "
		  . ($ready ? 'said absent under their locks, with no lookup' : 'each looked up under its lock'));
	add_keys($db, 'reserve/KF-OPEN', 50);
	# reserve_many() answers each element as reserve() would: the keys of
	# batch 1 on the sold-out SKU are duplicates, new keys are refused
	my $tag = 'many-' . ++$new_tag;
	my $batch1 = keys_json($node, $db, "kind = 'reserve' AND batch_id = 1 AND sku = 'KF-HOT'");
	my ($want, $got) = split /\|/, app($node, $db, qq{
WITH k AS MATERIALIZED (
  SELECT sku, qty, order_id FROM json_to_recordset($batch1) AS $KEYS_ROW
  UNION ALL SELECT 'KF-HOT', 1, '$tag-' || i FROM generate_series(1, 20) i)
SELECT (SELECT 'duplicate:' || count(*) FILTER (WHERE order_id NOT LIKE '$tag-%') || ' insufficient:20' FROM k),
       (SELECT string_agg(s || ':' || n, ' ' ORDER BY s) FROM (
          SELECT r.status AS s, count(*) AS n
            FROM inventory.reserve_many((SELECT array_agg(sku ORDER BY order_id) FROM k),
                                        (SELECT array_agg(qty ORDER BY order_id) FROM k),
                                        (SELECT array_agg(order_id ORDER BY order_id) FROM k)) r
           GROUP BY 1) x)}), 2;
	is($got, $want, "$label: reserve_many() of the keys of batch 1 in $db, and of new keys ($want)");
}

# what the workers were doing, when one did not do what the test waited for
# (read by the superuser: the workers' rows of pg_stat_activity)
sub diag_worker
{
	my ($node) = @_;
	diag(run_as($node, undef, 'postgres', q{
SELECT * FROM inventory.worker_status;
SELECT pid, backend_type, state, wait_event_type, wait_event, left(query, 60) FROM pg_stat_activity
 WHERE backend_type LIKE 'inventory%';
SELECT sku, kind, state, folded, count(*) FROM inventory.ledger GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4;
SELECT sku, unfolded, in_flight FROM inventory.sku_stats;}));
}

sub check_all
{
	my ($node, $label, $ready) = @_;
	check_db($node, $_, $label, $ready) for @DBS;
}

# --- a primary with the worker on, and a standby ---------------------------

my $primary = inventory_node('primary', qq{
inventory.worker_enabled = on
inventory.expire_interval = '100ms'
restart_after_crash = on
# a replay of every key in one statement holds every key's lock
max_locks_per_transaction = 1024
log_statement = none
}, allows_streaming => 1);
$primary->safe_psql('postgres', 'CREATE DATABASE shop2');
$primary->safe_psql($_, 'CREATE EXTENSION inventory') for @DBS;
inventory_roles($primary, 'postgres');
is(monitor($primary, 'postgres', 'SELECT bytes, hashes FROM inventory.key_filter'),
	'8388608|4', 'the filter takes 8MB by default');

$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
# its worker starts after the promotion, when the test has looked at the
# filter before any rebuild
$standby->append_conf('postgresql.conf', 'inventory.worker_enabled = off');
$standby->start;

# the worker reads the (empty) ledgers first: every key made from now on
# is known to the filter through the trigger alone
wait_ready($primary, 'after CREATE EXTENSION');

# --- the sale -------------------------------------------------------------------

# KF-HOT: 2,003 units, one per reservation, 3 of them under odd keys; 200
# confirmed, 200 cancelled, and what the cancels gave back is swept up:
# KF-HOT is sold out.  KF-OPEN has plenty: its replays are admitted ones.
is(admin($primary, 'postgres', q{
SELECT status FROM inventory.restock('KF-HOT', 2003, 'in-hot');
SELECT status FROM inventory.restock('KF-OPEN', 1000000, 'in-open');})
	. "\n" . app($primary, 'postgres', q{
SELECT string_agg(s || ':' || n, ' ' ORDER BY s) FROM (
  SELECT r.status AS s, count(*) AS n FROM generate_series(1, 2000) i
   CROSS JOIN LATERAL inventory.reserve('KF-HOT', 1, 'hot-' || i / 5, i % 5 - 2, '1 hour') r
   GROUP BY 1) x;
SELECT string_agg(r.status, ' ') FROM (VALUES (repeat('x', 255), -2147483648),
    (E'tab\there, quote '' and "été" ☃', 2147483647), (E'new\nline', 0)) k(o, b)
 CROSS JOIN LATERAL inventory.reserve('KF-HOT', 1, k.o, k.b, '1 hour') r;
SELECT count(*) FILTER (WHERE (inventory.confirm('hot-' || i / 5, i % 5 - 2)).ok) FROM generate_series(1, 2000) i WHERE i % 10 = 1;
SELECT count(*) FILTER (WHERE (inventory.cancel('hot-' || i / 5, i % 5 - 2)).ok) FROM generate_series(1, 2000) i WHERE i % 10 = 2;
SELECT status FROM inventory.reserve('KF-HOT', inventory.available('KF-HOT'), 'hot-sweep', 1, '1 hour');
SELECT inventory.available('KF-HOT');
SELECT count(*) FILTER (WHERE (inventory.reserve('KF-OPEN', 2, 'open-' || i, 1, '1 hour')).status = 'ok') FROM generate_series(1, 500) i;
SELECT count(*) FILTER (WHERE (inventory.reserve('KF-OPEN', 1, 'exp-' || i, 3, '100 milliseconds')).status = 'ok') FROM generate_series(1, 100) i;
}), "ok\nok\nok:2000\nok ok ok\n200\n200\nok\n0\n500\n100", 'the sale: KF-HOT sold out, KF-OPEN selling');
add_keys('postgres', 'restock/KF-HOT', 1);
add_keys('postgres', 'restock/KF-OPEN', 1);
add_keys('postgres', 'reserve/KF-HOT', 2004);
add_keys('postgres', 'reserve/KF-OPEN', 600);

# rows written by hand (by the administrator), reservations and restocks,
# and by a restore's COPY (the tables' owner's: the superuser's)
is(admin($primary, 'postgres', q{
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
SELECT 'hand-' || i, 7, 'restock', 'KF-OPEN', 1 FROM generate_series(1, 50) i;
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
SELECT 'hand-r-' || i, 1, 'reserve', 'KF-OPEN', 1, now() + interval '1 hour' FROM generate_series(1, 50) i;
})
	. run_as($primary, undef, 'postgres', q{
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
restored-1	1	restock	KF-OPEN	5	\N	\N	2026-01-01 00:00:00+00	\N	\N	f	\N
restored-2	-1	restock	KF-OPEN	5	\N	\N	2026-01-01 00:00:00+00	\N	\N	f	\N
restored-3	1	restock	KF-OPEN	5	\N	\N	2026-01-01 00:00:00+00	\N	\N	t	\N
\.
})
	. admin($primary, 'postgres', q{
SELECT count(*) FROM inventory.ledger WHERE order_id LIKE 'hand-%' OR order_id LIKE 'restored-%';
}), '103', 'rows written by hand and by a restore are in the ledger');
add_keys('postgres', 'restock/KF-OPEN', 53);
add_keys('postgres', 'reserve/KF-OPEN', 50);

# the other database sells the same keys on its own ledger
is(admin($primary, 'shop2', q{
SELECT status FROM inventory.restock('KF-HOT', 300, 'in-hot');})
	. "\n" . app($primary, 'shop2', q{
SELECT string_agg(s || ':' || n, ' ' ORDER BY s) FROM (
  SELECT r.status AS s, count(*) AS n FROM generate_series(1, 300) i
   CROSS JOIN LATERAL inventory.reserve('KF-HOT', 1, 'hot-' || i / 5, i % 5 - 2, '1 hour') r
   GROUP BY 1) x;
}), "ok\nok:300", 'shop2 sells 300 units under keys that postgres uses too');
add_keys('shop2', 'restock/KF-HOT', 1);
add_keys('shop2', 'reserve/KF-HOT', 300);

# the worker expires the short reservations and folds what is settled (the
# restore above emptied this database's cache: loading a SKU again makes its
# settled movements due), then an administrator deletes half of the folded
# settled movements of KF-HOT (the units stay where the fold put them)
ok(poll_as($primary, 'shop_admin', 'postgres', q{
SELECT count(*) = 100 FROM inventory.ledger WHERE order_id LIKE 'exp-%' AND state = 'EXPIRED'}),
	'the worker expired the short reservations')
  or diag_worker($primary);
app($primary, 'postgres', q{SELECT inventory.available('KF-HOT'), inventory.available('KF-OPEN')});
ok(poll_as($primary, 'shop_admin', 'postgres', q{
SELECT count(*) = 500 FROM inventory.ledger WHERE state IN ('CONFIRMED', 'CANCELLED', 'EXPIRED') AND folded}),
	'the worker folds the settled movements')
  or diag_worker($primary);
my $deleted_where = q{order_id LIKE 'hot-%' AND order_id <> 'hot-sweep'
   AND (5 * substr(order_id, 5)::int + batch_id + 2) % 20 IN (1, 2)};
is(admin($primary, 'postgres', qq{
WITH d AS (DELETE FROM inventory.ledger WHERE folded AND kind = 'reserve' AND $deleted_where
           RETURNING state)
SELECT string_agg(state || ':' || n, ' ' ORDER BY state) FROM (SELECT state, count(*) n FROM d GROUP BY 1) x;
}) . "\n" . app($primary, 'postgres', q{SELECT inventory.available('KF-HOT')}),
	"CONFIRMED:100 CANCELLED:100\n0", 'an administrator deletes 200 folded movements; KF-HOT stays sold out');
add_keys('postgres', 'reserve/KF-HOT', -200);
is(admin($primary, 'postgres', q{
SELECT sku, kind, count(*) FROM inventory.ledger GROUP BY 1, 2 ORDER BY 1, 2}),
	"KF-HOT|reserve|1804\nKF-HOT|restock|1\nKF-OPEN|reserve|650\nKF-OPEN|restock|54",
	'the ledger holds the keys the test counts');

# --- every key is known ------------------------------------------------------------

check_all($primary, 'after the sale', 1);

# the deleted keys are free again: said maybe (their bits stay), looked up,
# not found: refused on the sold-out SKU, and usable for a new movement
my $deleted_keys = qq{SELECT 'hot-' || i / 5 AS o, i % 5 - 2 AS b FROM generate_series(1, 2000) i
  WHERE i % 20 IN (1, 2)};
{
	my $said0 = said($primary, 'postgres');
	my $refused = app($primary, 'postgres', qq{
SELECT string_agg(s || ':' || n, ' ') FROM (SELECT r.status s, count(*) n FROM ($deleted_keys) k
  CROSS JOIN LATERAL inventory.reserve('KF-HOT', 1, k.o, k.b) r GROUP BY 1) x;
});
	my $said1 = said($primary, 'postgres');
	my $said = ref $said0 && ref $said1
	  ? ($said1->[1] - $said0->[1]) . '|' . ($said1->[2] - $said0->[2]) : "$said0 $said1";
	is(join("\n", $refused, $said, admin($primary, 'postgres', qq{
SELECT string_agg(s || ':' || n, ' ') FROM (SELECT r.status s, count(*) n FROM ($deleted_keys) k
  CROSS JOIN LATERAL inventory.restock('KF-OTHER', 1, k.o, k.b) r GROUP BY 1) x;
})), "insufficient:200\n200|200\nok:200",
		'deleted keys: refused on the sold-out SKU after a lookup each (200 false positives), then free for restocks');
}
add_keys('postgres', 'restock/KF-OTHER', 200);
is(monitor($primary, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"verify('30 s') is empty after the sale");

# --- a crash, with the worker off: nothing is ready until a rebuild ------------------

# (the superuser's: a server setting, a crash, a start)
$primary->append_conf('postgresql.conf', 'inventory.worker_enabled = off');
$primary->stop('immediate');
$primary->start;
# after each start, the first calls are the roles' own
is(monitor($primary, 'postgres', 'SELECT keys_added, said_absent, said_maybe FROM inventory.key_filter'),
	'0|0|0', 'after a crash the filter starts empty');
check_all($primary, 'after a crash, before any rebuild', 0);

# buyers go on while the filter is not ready: their keys are added by the
# trigger all the same
is(app($primary, 'postgres', q{
SELECT count(*) FILTER (WHERE (inventory.reserve('KF-OPEN', 1, 'nr-' || i, 1, '1 hour')).status = 'ok') FROM generate_series(1, 100) i}),
	'100', 'reserves made before the rebuild are admitted');
add_keys('postgres', 'reserve/KF-OPEN', 100);

# a reservation in flight while the keys are read: the rebuild neither
# waits for it nor sees it
my $buyer = $primary->background_psql('postgres', extra_params => [ '-U', 'shop_app' ]);
is($buyer->query_safe(q{BEGIN; SELECT status FROM inventory.reserve('KF-OPEN', 1, 'in-flight', 1, '1 hour')}),
	'ok', 'a buyer reserves and has not committed yet');
my $rebuilder = $primary->background_psql('postgres', extra_params => [ '-U', 'shop_admin' ]);
$rebuilder->query_safe(q{SET lock_timeout = '10s'});
is($rebuilder->query(q{BEGIN; SELECT inventory.key_filter_rebuild()}),
	admin($primary, 'postgres', 'SELECT count(*) FROM inventory.ledger'),
	'key_filter_rebuild() reads every committed key, without waiting for the buyer in flight');
is(app($primary, 'postgres', q{SET lock_timeout = '10s';
SELECT status FROM inventory.reserve('KF-OPEN', 1, 'during-rebuild', 1, '1 hour');
SELECT status FROM inventory.reserve('KF-OPEN', 1, 'during-rebuild', 1, '1 hour');
SELECT status FROM inventory.reserve('KF-HOT', 1, 'during-rebuild-hot');}),
	"ok\nduplicate\ninsufficient",
	'buyers do not wait for the transaction of the rebuild');
$buyer->query_safe('COMMIT');
$rebuilder->query_safe('COMMIT');
$buyer->quit;
$rebuilder->quit;
add_keys('postgres', 'reserve/KF-OPEN', 2);

# postgres is ready now; shop2, whose keys nobody read, is not
check_db($primary, 'postgres', 'after the rebuild', 1);
check_db($primary, 'shop2', 'after the rebuild of postgres only', 0);

$primary->append_conf('postgresql.conf', 'inventory.worker_enabled = on');
$primary->reload;
ok(poll_as($primary, 'shop_monitor', 'shop2', 'SELECT ready FROM inventory.key_filter'),
	'the worker reads the keys of shop2');
check_all($primary, 'after the worker\'s rebuild', 1);

# --- a backend crash: the postmaster reinitialises shared memory -------------------

# a buyer's backend, killed by the test (a crash: the superuser's)
my $victim = $primary->background_psql('postgres', extra_params => [ '-U', 'shop_app' ]);
my $pid = $victim->query_safe('SELECT pg_backend_pid()');
my $log_offset = -s $primary->logfile;
kill 'KILL', $pid;
$victim->quit;
$primary->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
ok(poll_as($primary, 'shop_app', 'postgres', 'SELECT true'), 'the server is back after a backend crash');
ok($primary->log_contains("server process \\(PID $pid\\) was terminated by signal 9", $log_offset),
	'the backend crash restarted the server');
# the worker may or may not have read the keys yet: the answers are the same
for my $db (@DBS)
{
	is(replays($primary, $db), expected_replays($db),
		"after a backend crash, at once: every key of $db replayed is a duplicate");
}
wait_ready($primary, 'after a backend crash');
check_all($primary, 'after a backend crash', 1);

# --- pg_ctl restart (fast) with the worker on ------------------------------------

$primary->restart;
for my $db (@DBS)
{
	is(replays($primary, $db), expected_replays($db),
		"after a restart, at once: every key of $db replayed is a duplicate");
}
wait_ready($primary, 'after a restart');
check_all($primary, 'after a restart', 1);
is(monitor($primary, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"verify('30 s') is empty after the restarts");

# --- failover ------------------------------------------------------------------------

$primary->wait_for_catchup($standby, 'replay');
is(monitor($standby, 'postgres', 'SELECT ready FROM inventory.key_filter'), 'f', 'the standby\'s filter is not ready');
like(admin($standby, 'postgres', 'SELECT inventory.key_filter_rebuild()'), qr/FAILED: .*during recovery/,
	'key_filter_rebuild() is refused on a standby');

# movements that reach the standby only by replay, after that attempt
is(join("\n", admin($primary, 'postgres', q{
SELECT status FROM inventory.restock('KF-HOT', 300, 'late-in');
}), app($primary, 'postgres', q{
SELECT count(*) FILTER (WHERE (inventory.reserve('KF-HOT', 1, 'late-' || i, i % 3, '1 hour')).status = 'ok') FROM generate_series(1, 300) i;
SELECT count(*) FILTER (WHERE (inventory.reserve('KF-OPEN', 1, 'late-open-' || i, 1, '1 hour')).status = 'ok') FROM generate_series(1, 100) i;
}) . admin($primary, 'postgres', q{
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
SELECT 'late-hand-' || i, 1, 'restock', 'KF-OPEN', 1 FROM generate_series(1, 10) i;
}), app($primary, 'postgres', q{
SELECT inventory.available('KF-HOT');
})), "ok\n300\n100\n0", 'the primary sells more just before the failover');
is(join("\n", admin($primary, 'shop2', q{
SELECT status FROM inventory.restock('KF-HOT', 50, 'late-in');
}), app($primary, 'shop2', q{
SELECT count(*) FILTER (WHERE (inventory.reserve('KF-HOT', 1, 'late-' || i, 1, '1 hour')).status = 'ok') FROM generate_series(1, 50) i;
})), "ok\n50", 'and so does shop2');
add_keys('postgres', 'restock/KF-HOT', 1);
add_keys('postgres', 'reserve/KF-HOT', 300);
add_keys('postgres', 'reserve/KF-OPEN', 100);
add_keys('postgres', 'restock/KF-OPEN', 10);
add_keys('shop2', 'restock/KF-HOT', 1);
add_keys('shop2', 'reserve/KF-HOT', 50);
$primary->wait_for_catchup($standby, 'replay');
$primary->stop('immediate');
$standby->promote;
my $new = $standby;

check_all($new, 'after the promotion, before any rebuild', 0);
$new->append_conf('postgresql.conf', 'inventory.worker_enabled = on');
$new->reload;
wait_ready($new, 'after the promotion');
check_all($new, 'after the promotion', 1);
is(monitor($new, $_, "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"verify('30 s') on the new primary is empty in $_")
  for @DBS;
$new->stop;

# --- a filter far too small ---------------------------------------------------------

my $TINY_KEYS = 50_000;
my $CHUNK     = 5_000;
my @chunks = map {
	my $lo = ($_ - 1) * $CHUNK + 1;
	"order_id LIKE 't-%' AND substr(order_id, 3)::int BETWEEN $lo AND " . ($lo + $CHUNK - 1)
} 1 .. $TINY_KEYS / $CHUNK;
push @chunks, "order_id NOT LIKE 't-%'";

my $tiny = inventory_node('tiny', qq{
inventory.key_filter_size = 8kB
inventory.worker_enabled = off
max_locks_per_transaction = 256
log_statement = none
});
$tiny->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($tiny, 'postgres');
is(as_monitor($tiny, 'postgres', 'SELECT current_setting(\'inventory.key_filter_size\'), bytes, ready FROM inventory.key_filter'),
	'8kB|8192|f', 'a filter of 8kB');
is(as_admin($tiny, 'postgres', 'SELECT inventory.key_filter_rebuild()'), '0', 'an empty ledger has no keys to read');
as_admin($tiny, 'postgres', "SELECT inventory.restock('KF-HOT', $TINY_KEYS, 'in-tiny')");
my $made = 0;
for my $c (1 .. $TINY_KEYS / $CHUNK)
{
	my $lo = ($c - 1) * $CHUNK + 1;
	my $hi = $lo + $CHUNK - 1;
	$made += as_app($tiny, 'postgres', qq{
SELECT count(*) FROM generate_series($lo, $hi) i
 WHERE (inventory.reserve('KF-HOT', 1, 't-' || i, i % 7 - 3, '1 hour')).status = 'ok'});
}
is($made, $TINY_KEYS, "$TINY_KEYS reservations sell KF-HOT out");
my ($fill, $fpr, $added) = split /\|/, as_monitor($tiny, 'postgres',
	'SELECT fill, false_positive_rate, keys_added FROM inventory.key_filter');
cmp_ok($fill, '>', 0.9, "the filter is full: fill $fill, expected false positive rate $fpr");
cmp_ok($added, '>=', $TINY_KEYS + 1, "keys_added counts every key ($added)");
%keys = (postgres => { 'restock/KF-HOT' => 1, 'reserve/KF-HOT' => $TINY_KEYS });
is(replays($tiny, 'postgres', @chunks), expected_replays('postgres'), 'full filter: every key replayed is a duplicate');
my $r = new_keys($tiny, 'postgres', 'KF-HOT', $CHUNK);
is($r->{status}, "insufficient:$CHUNK", 'full filter: new keys are refused');
is($r->{absent} + $r->{maybe}, $CHUNK, 'the filter answered for every new key');
cmp_ok($r->{maybe}, '>', 2 * $r->{absent}, "most new keys are said maybe ($r->{maybe} maybe, $r->{absent} absent)");
is($r->{fp}, $r->{maybe}, 'each new key said maybe is a false positive');
is($r->{locks}, $r->{maybe}, 'each new key said maybe was locked and looked up, no other');

# --- a filter of size 0 is off -----------------------------------------------------

$tiny->append_conf('postgresql.conf', 'inventory.key_filter_size = 0');
$tiny->restart;
is(monitor($tiny, 'postgres', 'SELECT bytes, fill, keys_added, ready FROM inventory.key_filter'),
	'0|0|0|f', 'a filter of size 0 takes no memory and is never ready');
like(admin($tiny, 'postgres', 'SELECT inventory.key_filter_rebuild()'), qr/FAILED: .*the key filter is off/,
	'key_filter_rebuild() says the filter is off');
# the path is the one of a database not ready yet: a fifth of the keys will do
%keys = (postgres => { 'restock/KF-HOT' => 1, 'reserve/KF-HOT' => 2 * $CHUNK });
is(replays($tiny, 'postgres', @chunks[0, 1, -1]), expected_replays('postgres'),
	'filter off: every key replayed (of 10,000) is a duplicate');
is(new_keys($tiny, 'postgres', 'KF-HOT', 1000)->{text},
	'insufficient:1000 locks=1000 scans=1000 absent=0 maybe=0 fp=0',
	'filter off: new keys are refused, each looked up under its lock');
is(monitor($tiny, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0', "verify('30 s') is empty");
$tiny->stop;

done_testing();

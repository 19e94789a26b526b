# A restore that stops half-way: pg_restore without -1 commits each table
# on its own, so one that stops after inventory.sku (or after the ledger)
# leaves one table restored.  The marker of an incomplete restore then
# stands: sales in the database (reserve, reserve_now, available) are
# refused with SQLSTATE 55000 and an error that says what to do, the
# worker leaves the database alone -- it comes, expires nothing, fails
# nothing, and leaves -- and the marker survives a crash, a streaming
# standby's promotion and a point-in-time recovery that stops between the
# two COPYs.  It clears itself once both tables have been restored since it
# was set, in either order, also on the promoted standby.  An administrator
# may abandon the restore (what is there sells) or finish it, which checks
# every SKU (23514 for a base that does not add up) and is refused (55000)
# while a table not restored since is empty.  A whole restore, also with
# -j 2 and -1, leaves no marker.  The copies are dumped from a source
# server whose worker is off, so that they hold exactly what the test
# compares with.
#
# Who calls: the sales (reserve, reserve_now, available) are shop_app's
# (inventory_app), the first ones after the crash and on the promoted and
# the recovered servers too; shop_admin (inventory_admin) restocks, reads
# the ledger, ends a restore (restore_abandon, restore_finish) and
# verifies; shop_monitor (inventory_monitor) reads the marker
# (inventory.restore_state), inventory.stock and worker_status; each over a
# connection of its own.  The superuser creates the databases, the
# extension and the roles, dumps and restores (pg_dump, pg_restore, a
# plain script, a COPY by the tables' owner), crashes and starts the
# server, makes the standby, the restore point and the recovery.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node wait_until history_sql inventory_roles as_app as_admin as_monitor
  as_each_caller poll_as);

# the source keeps still while it is dumped: no worker, so that each dump
# holds exactly what the test read from the source, whatever the time
my $src = inventory_node('source', "inventory.worker_enabled = off\n");
$src->safe_psql('postgres', 'CREATE DATABASE shop');
$src->safe_psql('shop', 'CREATE EXTENSION inventory');
inventory_roles($src, 'shop');
as_each_caller($src, 'shop', history_sql());
my $want = as_monitor($src, 'shop', 'SELECT * FROM inventory.stock ORDER BY sku');

# the server the copies are restored into, its worker on
my $node = inventory_node('restore', "inventory.expire_interval = '100ms'\n",
	allows_streaming => 1, has_archiving => 1);

# run_or_die(CMD...): a step of the test's scaffolding (pg_dump, a plain
# restore script); dies with what it said when it fails
sub run_or_die
{
	my ($out, $err) = ('', '');
	IPC::Run::run([@_], '<', '/dev/null', '>', \$out, '2>', \$err) or die "@_ failed:\n$out$err";
	return;
}

my $tmp = PostgreSQL::Test::Utils::tempdir;
run_or_die('pg_dump', '-Fc', '-d', $src->connstr('shop'), '-f', "$tmp/shop.dump");

# toc_file(DUMP, NAME, KEEP): a list for pg_restore -L of DUMP's entries that KEEP keeps
sub toc_file
{
	my ($dump, $name, $keep) = @_;
	my $toc;
	IPC::Run::run([ 'pg_restore', '-l', $dump ], '>', \$toc) or die 'pg_restore -l failed';
	open my $fh, '>', "$tmp/$name" or die;
	print $fh join("\n", grep { $keep->($_) } split /\n/, $toc), "\n";
	close $fh;
	return "$tmp/$name";
}
my $no_ledger = toc_file("$tmp/shop.dump", 'no-ledger.list', sub { $_[0] !~ /TABLE DATA inventory ledger / });
my $ledger_only = toc_file("$tmp/shop.dump", 'ledger.list', sub { $_[0] =~ /TABLE DATA inventory ledger / });

# script_file(NAME, EDIT, ARGS...): the plain script pg_restore ARGS makes of
# the dump, edited by EDIT (which dies when it finds nothing to edit)
sub script_file
{
	my ($name, $edit, @args) = @_;
	my $script;
	IPC::Run::run([ 'pg_restore', @args, '-f', '-', "$tmp/shop.dump" ], '>', \$script)
	  or die 'pg_restore -f failed';
	local $_ = $script;
	$edit->();
	open my $fh, '>', "$tmp/$name" or die;
	print $fh $_;
	close $fh;
	return "$tmp/$name";
}

# restore_from(DUMP, DB, ARGS...): pg_restore ARGS of DUMP into DB, as the
# superuser; whether it succeeded, and what it said
sub restore_from
{
	my ($dump, $db, @args) = @_;
	return restore_into($node, $dump, $db, @args);
}

# restore_into(NODE, DUMP, DB, ARGS...): the same, into NODE's database
sub restore_into
{
	my ($n, $dump, $db, @args) = @_;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ 'pg_restore', @args, '-d', $n->connstr($db), $dump ],
		'>', \$out, '2>', \$err);
	return ($ok, $err);
}

sub restore
{
	my ($db, @args) = @_;
	return restore_from("$tmp/shop.dump", $db, @args);
}

# restored(OK, ERR, WHAT): a restore that is a step of the test: dies if it
# failed
sub restored
{
	my ($ok, $err, $what) = @_;
	$ok or die "$what failed:\n$err";
}

# refused(DB, WHAT, [NODE]): is the application's sale in DB refused with
# SQLSTATE 55000, saying why and what to do?
sub refused
{
	my ($db, $what, $n) = @_;
	my ($rc, $out, $err) = ($n // $node)->psql($db,
		"\\set VERBOSITY verbose\nSELECT inventory.reserve('TEE', 1, 'try-$what')",
		extra_params => [ '-U', 'shop_app' ]);
	return $rc != 0 && $err =~ /ERROR:  55000: the restore of this database's inventory is incomplete/
	  && $err =~ /HINT:  Restore the missing table/;
}

# marker(DB, [NODE]): the marker of an incomplete restore of DB, if one
# stands, as the monitor reads it
sub marker
{
	my ($db, $n) = @_;
	return as_monitor($n // $node, $db, 'SELECT sku_restored, ledger_restored FROM inventory.restore_state');
}

# as the application, psql not stopping at an error: (rc, out, err)
sub app_psql
{
	my ($n, $db, $sql) = @_;
	return $n->psql($db, $sql, extra_params => [ '-U', 'shop_app' ]);
}

# as the administrator, the same
sub admin_psql
{
	my ($n, $db, $sql) = @_;
	return $n->psql($db, $sql, extra_params => [ '-U', 'shop_admin' ]);
}

# --- stops after inventory.sku: its list leaves the ledger out ------------
$node->safe_psql('postgres', 'CREATE DATABASE half1');
my ($ok, $err) = restore('half1', '-L', $no_ledger);
restored($ok, $err, 'pg_restore of everything but the ledger');
# the restore created the extension, and with it the roles: the logins
inventory_roles($node, 'half1');
is(marker('half1'), 't|f', 'the marker stands: inventory.sku restored, the ledger not');
ok(refused('half1', 'a'), 'a sale is refused, saying why and what to do');
my ($rc, $out);
($rc, $out, $err) = app_psql($node, 'half1', "\\set VERBOSITY verbose\nSELECT inventory.available('TEE')");
like($err, qr/ERROR:  55000: the restore of this database's inventory is incomplete/,
	'available() is refused too: what the base counters alone say is not the stock');
($rc, $out, $err) = app_psql($node, 'half1', "\\set VERBOSITY verbose\nSELECT inventory.reserve_now('TEE', 1, 'now-a')");
like($err, qr/ERROR:  55000: the restore of this database's inventory is incomplete/,
	'and so is reserve_now(), with SQLSTATE 55000');

# a crash does not lift it
$node->stop('immediate');
$node->start;
ok(refused('half1', 'b'), 'after a crash the sale is still refused');

# the rest of the dump ends it
($ok, $err) = restore('half1', '-L', $ledger_only);
restored($ok, $err, 'pg_restore of the ledger');
is(marker('half1'), '', 'the marker is gone once both tables are restored');
is(as_monitor($node, 'half1', 'SELECT * FROM inventory.stock ORDER BY sku'), $want, 'the stock is the source\'s');
is(as_app($node, 'half1', "SELECT (inventory.reserve('MUG', 1, 'after-1', ttl => '1 hour')).status"), 'ok',
	'and it sells');
is(as_admin($node, 'half1', "SELECT count(*) FROM inventory.verify('30 s')"), '0', "verify('30 s') is empty");

# --- the ledger first: its overdue reservation waits for the restore ------
# a second dump, with a reservation past its expires_at: the source's
# worker is off, so it is PENDING in the dump, and due at once wherever it
# is restored
as_app($src, 'shop', "SELECT inventory.reserve('TEE', 1, 'due-soon', ttl => '1 second')");
poll_as($src, 'shop_admin', 'shop', "SELECT expires_at < now() FROM inventory.ledger WHERE order_id = 'due-soon'")
  or die 'the reservation in the source is not overdue';
run_or_die('pg_dump', '-Fc', '-d', $src->connstr('shop'), '-f', "$tmp/due.dump");    # with it, PENDING
my $due_schema = toc_file("$tmp/due.dump", 'due-schema.list', sub { $_[0] !~ /TABLE DATA inventory (sku|ledger) / });
my $due_ledger = toc_file("$tmp/due.dump", 'due-ledger.list', sub { $_[0] =~ /TABLE DATA inventory ledger / });
my $due_sku = toc_file("$tmp/due.dump", 'due-sku.list', sub { $_[0] =~ /TABLE DATA inventory sku / });

# what a worker in half2 did: its visits, whether one is in it, what it expired
sub half2_worker
{
	return as_monitor($node, 'half2', q{
SELECT visits, state, expired FROM inventory.worker_status WHERE datname = 'half2'});
}

# the ERRORs of background processes (no application name: a worker) in
# the server's log from OFFSET on, and the workers that exited with one
sub worker_errors
{
	my ($offset) = @_;
	my $log = slurp_file($node->logfile, $offset);
	return join("\n", $log =~ /^(\S+ \S+ \S+ \[\d+\] ERROR:  .*)$/mg,
		$log =~ /^(.*background worker "inventory worker" \(PID \d+\) exited with exit code 1.*)$/mg);
}

# the schema first, so that the worker's first look at the new database
# (it comes once CREATE EXTENSION commits) is over before the restore
$node->safe_psql('postgres', 'CREATE DATABASE half2');
($ok, $err) = restore_from("$tmp/due.dump", 'half2', '-L', $due_schema);
restored($ok, $err, 'pg_restore of everything but the tables\' rows');
wait_until(30, sub { half2_worker() =~ /^[1-9]\d*\|idle\|0$/ })
  or die 'no worker has looked at the new database and left with nothing due: ' . half2_worker();
my ($visits) = split /\|/, half2_worker();
my $offset = -s $node->logfile;
my $before = $node->safe_psql('half2', 'SELECT clock_timestamp()');
($ok, $err) = restore_from("$tmp/due.dump", 'half2', '-L', $due_ledger);
restored($ok, $err, 'pg_restore of the ledger, inventory.sku not');
is(marker('half2'), 'f|t', 'the marker stands: the ledger restored');
# the restore makes work due at once: a worker comes, finds the marker,
# and leaves with nothing due (a worker that fails there instead logs an
# ERROR: no need to wait longer)
sub half2_visited
{
	my ($v, $state) = split /\|/, half2_worker();
	return $v > $visits && $state eq 'idle';
}
ok(wait_until(30, sub { half2_visited() || worker_errors($offset) ne '' }) && half2_visited(),
	'a worker visited the database since, and left with nothing due')
  or diag half2_worker();
is(worker_errors($offset), '', 'no worker failed there: no worker ERROR in the server\'s log since the restore');
is((split /\|/, half2_worker())[2], '0', 'the workers expired nothing there');
is(as_admin($node, 'half2', "SELECT count(*) FROM inventory.ledger WHERE settled_at >= '$before'"), '0',
	'nothing in its ledger was settled since the restore');
is(as_admin($node, 'half2', "SELECT state FROM inventory.ledger WHERE order_id = 'due-soon'"), 'PENDING',
	'the overdue reservation is left PENDING');
my $ended = $node->safe_psql('half2', 'SELECT clock_timestamp()');
($ok, $err) = restore_from("$tmp/due.dump", 'half2', '-L', $due_sku);
restored($ok, $err, 'then pg_restore of inventory.sku');
is(marker('half2'), '', 'in either order, the marker goes');
ok( wait_until(30, sub {
			as_admin($node, 'half2', "SELECT state FROM inventory.ledger WHERE order_id = 'due-soon'") eq 'EXPIRED';
	}),
	'and the worker expires what fell due meanwhile');
is(as_admin($node, 'half2', "SELECT settled_at >= '$ended' FROM inventory.ledger WHERE order_id = 'due-soon'"), 't',
	'once the marker was gone');
is(worker_errors($offset), '', 'no worker ERROR in the log all along');

# --- whole restores leave no marker ---------------------------------------
for my $args ([], [ '-j', '2' ], [ '-1' ])
{
	my $db = 'whole' . scalar(@$args);
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	($ok, $err) = restore($db, @$args);
	restored($ok, $err, "pg_restore @$args");
	is(marker($db), '', "pg_restore @$args: no marker");
	is(as_app($node, $db, "SELECT (inventory.reserve('MUG', 1, 'after-w', ttl => '1 hour')).status"), 'ok',
		"pg_restore @$args: it sells");
}

# --- an administrator ends it ---------------------------------------------
$node->safe_psql('postgres', 'CREATE DATABASE half3');
restored(restore('half3', '-L', $no_ledger), 'pg_restore into half3');
is(marker('half3'), 't|f', 'a third copy, half-restored');
($rc, $out, $err) = admin_psql($node, 'half3', 'SELECT inventory.restore_abandon()');
is($rc, 0, 'restore_abandon() by the administrator') or diag $err;
like($err, qr/WARNING:  the incomplete restore of this database's inventory was abandoned/,
	'warns what abandoning means');
is(marker('half3'), '', 'the marker is gone');
is(as_app($node, 'half3', "SELECT (inventory.reserve('MUG', 1, 'after-3', ttl => '1 hour')).status"), 'ok',
	'the SKUs sell from their base counters');

# restore_finish() does not end a restore whose other table is missing
my $finish = "\\set VERBOSITY verbose\nSELECT inventory.restore_finish()";
$node->safe_psql('postgres', 'CREATE DATABASE half4');
restored(restore('half4', '-L', $no_ledger), 'pg_restore into half4');
($rc, $out, $err) = admin_psql($node, 'half4', $finish);
isnt($rc, 0, 'restore_finish() refuses to end a restore whose ledger was never loaded');
like($err, qr/ERROR:  55000: cannot finish the incomplete restore of this database's inventory/,
	'with SQLSTATE 55000');
like($err, qr/DETAIL:  inventory\.ledger has not been restored since the restore began at [^\n]+, and it is empty\./,
	'naming the missing table');
like($err,
	qr/HINT:  Restore inventory\.ledger from the same dump, and the restore ends by itself; or end the restore without it with SELECT inventory\.restore_abandon\(\)\./,
	'and saying what to do');
is(marker('half4'), 't|f', 'the marker still stands');
ok(refused('half4', 'c'), 'and the sale is still refused');
($ok, $err) = restore('half4', '-L', $ledger_only);
restored($ok, $err, 'pg_restore of the missing ledger');
is(marker('half4'), '', 'ends the restore');
($rc, $out, $err) = admin_psql($node, 'half4', 'SELECT inventory.restore_finish()');
is($rc, 0, 'restore_finish() by the administrator then succeeds') or diag $err;
like($err, qr/NOTICE:  no restore of this database's inventory stands incomplete/, 'with nothing to end');

# a restored base that does not add up: below zero on its own (a fold may
# take a sale before the restock that supplied it, which waits in the
# ledger), restored without the ledger
$node->safe_psql('postgres', 'CREATE DATABASE half6');
my $below = script_file('below-zero.sql', sub { s/^TEE\t\d+\t/TEE\t-1\t/m or die 'no TEE row in the dump' },
	'-L', $no_ledger);
# a restore without the ledger, TEE's base below zero
run_or_die('psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('half6'), '-f', $below);
is(marker('half6'), 't|f', 'the marker stands');
($rc, $out, $err) = admin_psql($node, 'half6', $finish);
isnt($rc, 0, 'restore_finish() refuses a base that does not add up');
like($err, qr/ERROR:  23514: restored rows of sku "TEE" are inconsistent/, 'with SQLSTATE 23514, naming the SKU');
like($err, qr/DETAIL:  With them the SKU would have on_hand -1 and reserved 0, which leaves -1 available\./,
	'and its counters');
is(marker('half6'), 't|f', 'the marker still stands');

# the ledger first, then inventory.sku: the second COPY completes the
# restore, so every SKU is checked then, also one without movements
$node->safe_psql('postgres', 'CREATE DATABASE half8');
$node->safe_psql('half8', 'CREATE EXTENSION inventory');
$node->safe_psql('half8', q{COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM PROGRAM $$printf 'r-in\t1\trestock\tR-1\t3\t\\N\t\\N\t2026-01-01 00:00:00+00\t\\N\t\\N\tf\t\\N\n'$$});
is(marker('half8'), 'f|t', 'the ledger restored first: the marker stands');
($rc, $out, $err) = $node->psql('half8', "\\set VERBOSITY verbose\n"
	. q{COPY inventory.sku FROM PROGRAM $$printf 'R-1\t0\t0\t2026-01-01 00:00:00+00\t\\N\t\\N\t\\N\nX\t-5\t0\t2026-01-01 00:00:00+00\t\\N\t\\N\t\\N\n'$$});
isnt($rc, 0, 'inventory.sku completing it with a base below zero and no movements is refused');
like($err, qr/ERROR:  23514: restored rows of sku "X" are inconsistent/, 'with SQLSTATE 23514, naming the SKU');
is(marker('half8'), 'f|t', 'the marker still stands');

# --- a streaming standby promoted while the marker stands ---------------
$node->backup('for_standby');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'for_standby', has_streaming => 1);
# its timeline stays out of the primary's archive, which the recovery below reads
$standby->append_conf('postgresql.conf', "archive_mode = off\n");
$standby->start;
$node->safe_psql('postgres', 'CREATE DATABASE half7');
($ok, $err) = restore('half7', '-L', $no_ledger);
restored($ok, $err, 'on the primary, pg_restore of everything but the ledger');
is(marker('half7'), 't|f', 'the marker stands there');
$node->wait_for_catchup($standby, 'replay');
is(marker('half7', $standby), 't|f', 'the standby has replayed it');
$standby->promote;
$standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()') or die 'the standby is not promoted';
is(marker('half7', $standby), 't|f', 'the marker stands on the promoted server');
ok(refused('half7', 'promoted', $standby), 'a sale there is refused with 55000');
($ok, $err) = restore_into($standby, "$tmp/shop.dump", 'half7', '-L', $ledger_only);
restored($ok, $err, 'pg_restore of the ledger into the promoted server');
is(marker('half7', $standby), '', 'the marker is gone there');
is(as_monitor($standby, 'half7', 'SELECT * FROM inventory.stock ORDER BY sku'), $want, 'its stock is the source\'s');
is(as_app($standby, 'half7', "SELECT (inventory.reserve('MUG', 1, 'after-7', ttl => '1 hour')).status"), 'ok',
	'and it sells');
$standby->stop;

# --- a point-in-time recovery between the COPYs ---------------------------
$node->safe_psql('postgres', 'CREATE DATABASE half5');
$node->backup('base');
# a plain script restored by hand, with a restore point between its COPYs
my $with_point = script_file('with-point.sql',
	sub { s/^(COPY inventory\.ledger )/SELECT pg_create_restore_point('between');\n$1/m or die 'no ledger COPY' });
# a plain restore with a restore point between inventory.sku and the ledger
run_or_die('psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('half5'), '-f', $with_point);
is(marker('half5'), '', 'the whole script leaves no marker');
my $segment = $node->safe_psql('postgres', 'SELECT pg_walfile_name(pg_switch_wal())');
$node->poll_query_until('postgres', "SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver")
  or die 'the WAL with the restore point is not archived';

my $pitr = PostgreSQL::Test::Cluster->new('pitr');
$pitr->init_from_backup($node, 'base', has_restoring => 1);
$pitr->append_conf('postgresql.conf', qq{
recovery_target_name = 'between'
recovery_target_action = 'promote'
});
$pitr->start;
$pitr->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
  or die 'not recovered to the restore point and promoted';
is(marker('half5', $pitr), 't|f',
	'the recovered database has its marker: inventory.sku restored, the ledger not');
($rc, $out, $err) = app_psql($pitr, 'half5', "SELECT inventory.reserve('TEE', 1, 'try-pitr')");
like($err, qr/the restore of this database's inventory is incomplete/, 'and refuses to sell');
$pitr->stop;

$node->stop;
$src->stop;
done_testing();

# I8, backup and restore with the ordinary tools and no special flag:
# pg_dump -Fc + pg_restore (also -j 2 and -1), a plain pg_dump + psql,
# pg_dumpall + psql into a fresh cluster, data-only dumps (also with
# --disable-triggers, whose DISABLE TRIGGER leaves the extension's triggers
# on, with a warning -- also piped into psql without ON_ERROR_STOP -- and
# under session_replication_role = replica), and the ledger restored
# before inventory.sku.  Each restored database must equal the source: the
# same inventory.stock, the same rows and keys, replays answered as
# duplicates, holds in place, verify() empty, the PENDING reservations
# expiring on time, also in a database restored while the workers run.
# An inconsistent dump (also --data-only --disable-triggers) fails loudly
# and leaves none of the COPY that carried the inconsistency; the table
# restored before it stays, and nothing is sold (55000) until the restore
# is complete.
#
# Every call is made by the login role the manual gives it: shop_app sells
# and reads inventory.stock, shop_admin restocks, expires and reads the
# tables, shop_monitor verifies and reads the figures.  The superuser dumps
# and restores whole databases (as their owner), creates the databases and
# the extension, and does what only the tables' owner or a superuser may:
# ALTER TABLE ... DISABLE TRIGGER, session_replication_role, the server's
# settings.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(history_sql sale_sql replay_checks sells_once inventory_node inventory_roles
  as_app as_admin as_monitor as_role as_each_caller poll_as);

my $conf = qq{
inventory.expire_interval = '100ms'
log_statement = none
};

# the source keeps still while it is dumped: no worker
my $src = inventory_node('source', $conf . "inventory.worker_enabled = off\n");

# the target's worker starts once every route has been compared, so that
# nothing is expired or folded before the comparison
my $dst = inventory_node('target', $conf . "inventory.worker_enabled = off\n");

# movements in every state, folded and not
# (the superuser creates the database, the extension and the login roles)
$src->safe_psql('postgres', 'CREATE DATABASE shop');
$src->safe_psql('shop', 'CREATE EXTENSION inventory');
inventory_roles($src, 'shop');
as_each_caller($src, 'shop', history_sql());
# reservations that fall due after the restores (the restored databases'
# workers expire them), and a SKU with rules
as_each_caller($src, 'shop', sale_sql());

# what each database must hold, and who reads it: inventory.stock is the
# application's to read, the tables the administrator's
my %q = (
	stock  => 'SELECT * FROM inventory.stock ORDER BY sku',
	sku    => 'SELECT * FROM inventory.sku ORDER BY sku',
	ledger => 'SELECT * FROM inventory.ledger ORDER BY order_id, batch_id',
);
my %reader = (stock => 'shop_app', sku => 'shop_admin', ledger => 'shop_admin');
my %want = map { $_ => as_role($src, $reader{$_}, 'shop', $q{$_}) } keys %q;
is(as_admin($src, 'shop', 'SELECT count(*) > 0 FROM inventory.ledger WHERE folded'), 't',
	'the source has folded movements');
is(as_admin($src, 'shop', 'SELECT count(*) > 0 FROM inventory.ledger WHERE NOT folded'), 't',
	'and movements not folded');
is(as_admin($src, 'shop',
	"SELECT string_agg(DISTINCT state::text, ' ' ORDER BY state::text) FROM inventory.ledger"),
	'CANCELLED CONFIRMED EXPIRED PENDING', 'and reservations in every state');

# the dumps and restores below: the whole database, by the superuser, as
# its owner

my $tmp = PostgreSQL::Test::Utils::tempdir;
my @dump = ('pg_dump', '-d', $src->connstr('shop'));
$src->command_ok([ @dump, '-Fc', '-f', "$tmp/shop.dump" ], 'pg_dump -Fc');
$src->command_ok([ @dump, '-f', "$tmp/shop.sql" ], 'pg_dump, plain');
$src->command_ok([ @dump, '--data-only', '-f', "$tmp/data.sql" ], 'pg_dump --data-only, plain');
$src->command_ok([ @dump, '--data-only', '-Fc', '-f', "$tmp/data.dump" ], 'pg_dump --data-only -Fc');
$src->command_ok([ @dump, '--data-only', '--disable-triggers', '-f', "$tmp/data-dt.sql" ],
	'pg_dump --data-only --disable-triggers, plain');
$src->command_ok([ 'pg_dumpall', '-d', $src->connstr('postgres'), '-f', "$tmp/all.sql" ], 'pg_dumpall');

# the ledger before inventory.sku, as a parallel restore may load them
my @toc = split /\n/, run_pg_restore_list("$tmp/shop.dump");
sub run_pg_restore_list
{
	my ($file) = @_;
	my $out;
	IPC::Run::run([ 'pg_restore', '-l', $file ], '>', \$out) or die 'pg_restore -l failed';
	return $out;
}
open my $lfh, '>', "$tmp/ledger-first.list" or die;
print $lfh join("\n", (grep { !/TABLE DATA inventory sku / } @toc), (grep { /TABLE DATA inventory sku / } @toc)), "\n";
close $lfh;

sub psql_file
{
	my ($node, $db, $file) = @_;
	my ($out, $err);
	my $ok = IPC::Run::run([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db), '-f', $file ],
		'>', \$out, '2>', \$err);
	return ($ok, $err);
}

# a tool's run: whether it succeeded, and what it said on stderr
sub run_tool
{
	my (@cmd) = @_;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(\@cmd, '>', \$out, '2>', \$err);
	return ($ok, $err);
}

my $kept_on = qr/WARNING:  the triggers of inventory\.ledger and inventory\.sku stay enabled/;

my %restored;    # database => route
my %route = (
	'pg_restore' => sub {
		my ($db) = @_;
		$dst->command_ok([ 'pg_restore', '-d', $dst->connstr($db), "$tmp/shop.dump" ], "pg_restore into $db");
	},
	'pg_restore -j 2' => sub {
		my ($db) = @_;
		$dst->command_ok([ 'pg_restore', '-j', '2', '-d', $dst->connstr($db), "$tmp/shop.dump" ], "pg_restore -j 2 into $db");
	},
	'pg_restore -1' => sub {
		my ($db) = @_;
		$dst->command_ok([ 'pg_restore', '-1', '-d', $dst->connstr($db), "$tmp/shop.dump" ], "pg_restore -1 into $db");
	},
	'ledger first' => sub {
		my ($db) = @_;
		$dst->command_ok([ 'pg_restore', '-L', "$tmp/ledger-first.list", '-d', $dst->connstr($db), "$tmp/shop.dump" ],
			"pg_restore -L, the ledger first, into $db");
	},
	'plain + psql' => sub {
		my ($db) = @_;
		my ($ok, $err) = psql_file($dst, $db, "$tmp/shop.sql");
		ok($ok, "psql -f shop.sql into $db") or diag $err;
	},
	'data-only + psql' => sub {
		my ($db) = @_;
		$dst->safe_psql($db, 'CREATE EXTENSION inventory');
		my ($ok, $err) = psql_file($dst, $db, "$tmp/data.sql");
		ok($ok, "psql -f data.sql into $db") or diag $err;
	},
	'data-only + pg_restore' => sub {
		my ($db) = @_;
		$dst->safe_psql($db, 'CREATE EXTENSION inventory');
		$dst->command_ok([ 'pg_restore', '-d', $dst->connstr($db), "$tmp/data.dump" ], "pg_restore --data-only into $db");
	},
	'data-only + pg_restore --disable-triggers' => sub {
		my ($db) = @_;
		$dst->safe_psql($db, 'CREATE EXTENSION inventory');
		my ($ok, $err) = run_tool('pg_restore', '-v', '--disable-triggers', '-d', $dst->connstr($db),
			"$tmp/data.dump");
		ok($ok, "pg_restore --data-only --disable-triggers into $db exits 0") or diag $err;
		like($err, $kept_on, "$db: pg_restore -v shows the warning that the triggers stay enabled");
	},
	'data-only + pg_restore --disable-triggers -1 -e' => sub {
		my ($db) = @_;
		$dst->safe_psql($db, 'CREATE EXTENSION inventory');
		my $offset = -s $dst->logfile;
		my ($ok, $err) = run_tool('pg_restore', '--disable-triggers', '-1', '-e', '-d', $dst->connstr($db),
			"$tmp/data.dump");
		ok($ok, "pg_restore --disable-triggers -1 -e into $db exits 0: a warning is no error") or diag $err;
		unlike($err, $kept_on, "$db: without -v, pg_restore shows no warning");
		like(slurp_file($dst->logfile, $offset), $kept_on, "$db: the server's log has it");
	},
	'data-only --disable-triggers + psql' => sub {
		my ($db) = @_;
		$dst->safe_psql($db, 'CREATE EXTENSION inventory');
		my ($ok, $err) = psql_file($dst, $db, "$tmp/data-dt.sql");
		ok($ok, "psql -v ON_ERROR_STOP=1 -f data-dt.sql into $db") or diag $err;
		like($err, $kept_on, "$db: psql shows the warning");
	},
	# a real pipe, and psql without ON_ERROR_STOP, as it is often typed: what
	# the person sees is psql's exit code 0 and, on its stderr, the WARNING
	# for each table whose triggers the script disables, and no ERROR
	'pg_dump --data-only --disable-triggers | psql' => sub {
		my ($db) = @_;
		$dst->safe_psql($db, 'CREATE EXTENSION inventory');
		my ($out, $dump_err, $err) = ('', '', '');
		my $ok = IPC::Run::run([ @dump, '--data-only', '--disable-triggers' ], '2>', \$dump_err,
			'|', [ 'psql', '-X', '-q', '-d', $dst->connstr($db) ], '>', \$out, '2>', \$err);
		ok($ok, "pg_dump --data-only --disable-triggers | psql into $db: both exit 0") or diag "$dump_err$err";
		my @warnings = $err =~ /$kept_on/g;
		is(scalar(@warnings), 2, "$db: psql shows the warning twice, once per table");
		unlike($err, qr/ERROR/, "$db: and no error");
	},
	'data-only + pg_restore, session_replication_role = replica' => sub {
		my ($db) = @_;
		$dst->safe_psql($db, 'CREATE EXTENSION inventory');
		local $ENV{PGOPTIONS} = '-c session_replication_role=replica';
		my ($ok, $err) = run_tool('pg_restore', '--disable-triggers', '-d', $dst->connstr($db), "$tmp/data.dump");
		ok($ok, "pg_restore --disable-triggers with session_replication_role = replica into $db") or diag $err;
	},
);

# pg_dumpall goes first, into the target while it is a fresh cluster
{
	my ($out, $err);
	IPC::Run::run([ 'psql', '-X', '-q', '-d', $dst->connstr('postgres'), '-f', "$tmp/all.sql" ],
		'>', \$out, '2>', \$err);
	my @errors = grep { /ERROR/ && !/role "[^"]+" already exists/ } split /\n/, $err;
	is(join("\n", @errors), '', 'pg_dumpall restores into a fresh cluster without an error');
	$restored{shop} = 'pg_dumpall + psql';
}
# pg_dumpall carried the login roles over; made again if not (it does
# nothing when they are there)
inventory_roles($dst, 'shop');
my $n = 0;
for my $name (sort keys %route)
{
	my $db = 'r' . ++$n;
	$dst->safe_psql('postgres', "CREATE DATABASE $db");
	$route{$name}->($db);
	$restored{$db} = $name;
}

for my $db (sort keys %restored)
{
	my $how = $restored{$db};
	for my $what (sort keys %q)
	{
		is(as_role($dst, $reader{$what}, $db, $q{$what}), $want{$what}, "$how: $what is identical");
	}
	is(as_monitor($dst, $db, "SELECT count(*) FROM inventory.verify('30 s')"), '0',
		"$how: verify('30 s') is empty");
	# replay_checks() mixes the application's calls with the
	# administrator's (restock, adjust, withdraw) in one statement:
	# shop_admin makes them, a member of inventory_app as the manual has it
	is(as_admin($dst, $db, $_->[0]), $_->[1], "$how: $_->[2]") for replay_checks();
	is(as_app($dst, $db, $q{stock}), $want{stock}, "$how: and change nothing");
}

# the restored reservations expire at their own expires_at, as they do in
# the source
poll_as($src, 'shop_admin', 'shop', q{
SELECT max(expires_at) < now() FROM inventory.ledger WHERE order_id = 'soon'})
  or die 'the short reservations did not fall due';
is(as_admin($src, 'shop', 'SELECT inventory.expire()'), '2', 'the source expires its short reservations');
my $after = as_app($src, 'shop', $q{stock});
my %avail = map { (split /\|/)[0, 3] } split /\n/, $after;
# a server setting: the superuser's
$dst->append_conf('postgresql.conf', 'inventory.worker_enabled = on');
$dst->reload;
for my $db (sort keys %restored)
{
	my $how = $restored{$db};
	ok(poll_as($dst, 'shop_admin', $db,
		"SELECT count(*) = 0 FROM inventory.ledger WHERE order_id = 'soon' AND state = 'PENDING'"),
		"$how: the restored PENDING reservations expire");
	is(as_admin($dst, $db, q{
SELECT count(*) FROM inventory.ledger l
 WHERE order_id = 'soon' AND settled_at >= expires_at}), '2',
		"$how: at or after their expires_at, which the restore kept");
	is(as_app($dst, $db, $q{stock}), $after,
		"$how: their units are on sale again, as in the source");
	my ($sells, $once) = sells_once(\%avail);
	is(as_app($dst, $db, $sells), $once, "$how: the restored stock sells exactly once");
	is(as_monitor($dst, $db, "SELECT count(*) FROM inventory.verify('30 s')"), '0',
		"$how: verify('30 s') is empty after it");
}

# --- a restore into a server whose worker runs -------------------------------
# A reservation due shortly after the restore is expired on time (I5):
# the restore tells the worker when the database's work is due, and a
# worker looks at least every inventory.expire_interval -- the bound is
# that setting, read from the server, plus one batch, which includes a
# worker's start (a fork and a connection).  Those take milliseconds on an
# idle machine; $START_SLACK seconds leave room for a loaded one, where
# several suites share two cores.  A restore that failed to tell the
# worker would leave the reservation PENDING (the worker came once and
# left with nothing due): no expiry at all, far beyond the bound.
my $START_SLACK = 2;
my $interval = as_monitor($dst, 'postgres',
	"SELECT setting::numeric / 1000 FROM pg_settings WHERE name = 'inventory.expire_interval' AND unit = 'ms'");
my $BOUND = $interval + $START_SLACK;
$dst->safe_psql('postgres', 'SHOW inventory.worker_enabled') eq 'on' or die 'the target\'s workers are off';
as_app($src, 'shop', "SELECT (inventory.reserve('CAP', 1, 'due-live', ttl => '5 seconds')).status") eq 'ok'
  or die 'the source did not reserve';
$src->command_ok([ @dump, '-Fc', '-f', "$tmp/live.dump" ], 'pg_dump -Fc, with a reservation due in 5 seconds');
$dst->safe_psql('postgres', 'CREATE DATABASE live');
# the schema first: a worker comes once CREATE EXTENSION commits, finds
# nothing due and leaves; what brings it back is the restore of the rows
$dst->command_ok([ 'pg_restore', '--schema-only', '-d', $dst->connstr('live'), "$tmp/live.dump" ],
	'pg_restore --schema-only into a new database');
ok(poll_as($dst, 'shop_monitor', 'live',
	"SELECT visits >= 1 AND state = 'idle' FROM inventory.worker_status WHERE datname = 'live'"),
	'a worker has looked at it, and left with nothing due');
$dst->command_ok([ 'pg_restore', '--data-only', '-d', $dst->connstr('live'), "$tmp/live.dump" ],
	'then pg_restore --data-only');
my $restored_at = as_admin($dst, 'live', 'SELECT clock_timestamp()');
note as_admin($dst, 'live', qq{
SELECT 'the reservation falls due ' || (expires_at - '$restored_at') || ' after the restore'
  FROM inventory.ledger WHERE order_id = 'due-live'});
ok(poll_as($dst, 'shop_admin', 'live', "SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'due-live'"),
	'the restored reservation expires');
# late from its expires_at, or from the end of the restore if it fell due before
my $late = as_admin($dst, 'live', qq{
SELECT extract(epoch FROM settled_at - greatest(expires_at, '$restored_at'))
  FROM inventory.ledger WHERE order_id = 'due-live'});
cmp_ok($late, '<=', $BOUND,
	"within ${BOUND}s (inventory.expire_interval, and ${START_SLACK}s for a worker's start and its batch): ${late}s");
is(as_admin($dst, 'live', "SELECT settled_at >= expires_at FROM inventory.ledger WHERE order_id = 'due-live'"), 't',
	'and not before it was due');
is(as_monitor($dst, 'live', "SELECT count(*) FROM inventory.verify('30 s')"), '0', "verify('30 s') is empty");

# --- an inconsistent dump fails loudly --------------------------------------

# restore_fails(FILE, DB, PATTERN, NAME, [EXTENSION]): psql -v ON_ERROR_STOP=1
# -f FILE into a new database DB (with CREATE EXTENSION done first for a
# data-only FILE) fails, saying PATTERN; the superuser restores, as the
# database's owner
sub restore_fails
{
	my ($file, $db, $pattern, $name, $extension) = @_;
	$dst->safe_psql('postgres', "CREATE DATABASE $db");
	$dst->safe_psql($db, 'CREATE EXTENSION inventory') if $extension;
	my ($ok, $err) = psql_file($dst, $db, $file);
	ok(!$ok, "$name: psql -v ON_ERROR_STOP=1 fails");
	like($err, $pattern, "$name: with the reason");
}

# sqlstate(DB, SQL): the SQLSTATE SQL fails with in DB on the target, '' if
# it succeeds; called by shop_app
sub sqlstate
{
	my ($db, $sql) = @_;
	my ($rc, $out, $err) = $dst->psql($db, "\\set VERBOSITY verbose\n$sql", extra_params => [ '-U', 'shop_app' ]);
	return $rc == 0 ? '' : $err =~ /ERROR:  ([0-9A-Z]{5}):/ ? $1 : "? $err";
}

my $incomplete = qr/ERROR:  55000: the restore of this database's inventory is incomplete/;

# a base that does not add up with its movements, in either order
my $plain = slurp_file("$tmp/shop.sql");
(my $bad = $plain) =~ s/^TEE\t\d+\t/TEE\t0\t/m or die 'no TEE row in the dump';
open my $bfh, '>', "$tmp/bad.sql" or die;
print $bfh $bad;
close $bfh;
restore_fails("$tmp/bad.sql", 'bad1', qr/restored rows of sku "TEE" are inconsistent/, 'a base that does not add up');
is(as_admin($dst, 'bad1', 'SELECT count(*) FROM inventory.ledger'), '0', 'none of the ledger landed');
is(sqlstate('bad1', "SELECT inventory.reserve('MUG', 1, 'half')"), '55000',
	'and with inventory.sku alone restored, nothing is on sale: 55000, the restore stands incomplete');

# a plain script with the ledger first
IPC::Run::run([ 'pg_restore', '-L', "$tmp/ledger-first.list", '-f', "$tmp/ledger-first.sql", "$tmp/shop.dump" ])
  or die 'pg_restore -f ledger-first.sql failed';
($bad = slurp_file("$tmp/ledger-first.sql")) =~ s/^TEE\t\d+\t/TEE\t0\t/m or die 'no TEE row';
open $bfh, '>', "$tmp/bad2.sql" or die;
print $bfh $bad;
close $bfh;
restore_fails("$tmp/bad2.sql", 'bad2', qr/restored rows of sku "TEE" are inconsistent/,
	'the same, the ledger first');
is(as_admin($dst, 'bad2', 'SELECT count(*) FROM inventory.sku'), '0', 'none of inventory.sku landed');
is(sqlstate('bad2', "SELECT inventory.reserve('MUG', 1, 'half')"), '55000',
	'and with the ledger alone restored, nothing is on sale: 55000, the restore stands incomplete');

# the same base in a --data-only --disable-triggers dump: its DISABLE
# TRIGGER leaves the extension's triggers on, so the restore is checked
(my $bad_dt = slurp_file("$tmp/data-dt.sql")) =~ s/^TEE\t\d+\t/TEE\t0\t/m or die 'no TEE row in the data-only dump';
open $bfh, '>', "$tmp/bad-dt.sql" or die;
print $bfh $bad_dt;
close $bfh;
restore_fails("$tmp/bad-dt.sql", 'bad5', qr/restored rows of sku "TEE" are inconsistent/,
	'a base that does not add up, --data-only --disable-triggers', 1);
is(as_admin($dst, 'bad5', 'SELECT count(*) FROM inventory.ledger'), '0', 'none of its ledger landed');
is(sqlstate('bad5', "SELECT inventory.reserve('MUG', 1, 'half')"), '55000', 'and nothing is on sale: 55000');

# and with psql without ON_ERROR_STOP, as it is often typed: psql goes on
# after the error and exits 0; the person sees the ERROR on its stderr, and
# the database sells nothing
$dst->safe_psql('postgres', 'CREATE DATABASE bad6');
$dst->safe_psql('bad6', 'CREATE EXTENSION inventory');
{
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ 'psql', '-X', '-q', '-d', $dst->connstr('bad6'), '-f', "$tmp/bad-dt.sql" ],
		'>', \$out, '2>', \$err);
	ok($ok, 'the same without ON_ERROR_STOP: psql exits 0');
	like($err, qr/ERROR:  restored rows of sku "TEE" are inconsistent/, 'its stderr has the ERROR');
	like($err, $kept_on, 'and the WARNING of the DISABLE TRIGGER');
}
is(as_admin($dst, 'bad6', 'SELECT count(*) FROM inventory.ledger'), '0', 'none of the ledger landed');
is(as_monitor($dst, 'bad6', 'SELECT sku_restored, ledger_restored FROM inventory.restore_state'), 't|f',
	'inventory.sku did, and the restore stands incomplete');
my ($rc, $out, $err) = $dst->psql('bad6', "\\set VERBOSITY verbose\nSELECT inventory.reserve('MUG', 1, 'half')",
	extra_params => [ '-U', 'shop_app' ]);
like($err, $incomplete, 'so nothing is on sale: 55000');

# a movement the state machine cannot have produced
($bad = $plain) =~ s/^(paid\t1\treserve\tTEE\t5\t\\N\t)CONFIRMED\t/${1}PENDING\t/m or die 'no paid row';
open $bfh, '>', "$tmp/bad3.sql" or die;
print $bfh $bad;
close $bfh;
restore_fails("$tmp/bad3.sql", 'bad3', qr/a restored PENDING reservation cannot have settled_at/,
	'a settled PENDING reservation');

# a dump made with INSERT statements is not a restore: refused row by row
IPC::Run::run([ @dump, '--inserts', '-f', "$tmp/inserts.sql" ]) or die 'pg_dump --inserts failed';
restore_fails("$tmp/inserts.sql", 'bad4', qr/cannot be folded|must be PENDING/,
	'pg_dump --inserts');

# between pg_restore's DISABLE TRIGGER and its COPY, another session sells:
# through the triggers, which stayed on.  ALTER TABLE is the tables'
# owner's (the superuser here), as pg_restore runs it; the catalog is read
# by the superuser too (scaffolding)
$src->safe_psql('shop', 'ALTER TABLE inventory.ledger DISABLE TRIGGER ALL');
is($src->safe_psql('shop', q{
SELECT string_agg(DISTINCT tgenabled::text, '') FROM pg_trigger
 WHERE tgrelid = 'inventory.ledger'::regclass AND NOT tgisinternal}), 'A',
	'DISABLE TRIGGER ALL left the extension\'s triggers enabled');
my $left = as_app($src, 'shop', "SELECT available FROM inventory.stock WHERE sku = 'MUG'");
is(as_app($src, 'shop', q{
SELECT (inventory.reserve('MUG', 1, 'meanwhile', ttl => '1 hour')).status;
SELECT inventory.available('MUG')}), "ok\n" . ($left - 1),
	'a sale meanwhile is counted by the cache');
is(as_monitor($src, 'shop', "SELECT count(*) FROM inventory.verify('30 s')"), '0', "and verify('30 s') is empty");
$src->safe_psql('shop', 'ALTER TABLE inventory.ledger ENABLE TRIGGER ALL');

# under session_replication_role = replica the triggers fire: a movement
# inserted by hand is checked as any other (the setting is a superuser's:
# a superuser writes the row)
($rc, $out, $err) = $src->psql('shop', q{
SET session_replication_role = replica;
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, state, settled_at)
VALUES ('forged', 1, 'reserve', 'TEE', 1, 'CONFIRMED', now())});
isnt($rc, 0, 'session_replication_role = replica: a settled movement inserted by hand is refused');
like($err, qr/must be PENDING|cannot/, 'by the trigger, which fires all the same');

$dst->stop;
$src->stop;
done_testing();

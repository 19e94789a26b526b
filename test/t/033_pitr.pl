# Physical backups and point-in-time recovery with pgBackRest.  A server
# that sells archives its WAL to a pgBackRest repository; a full backup is
# taken, then sales go on in two groups of calls, and between the groups
# three recovery targets are recorded: a named restore point, a time and an
# LSN; a reservation is in flight across them.  The backup is restored to
# each target and promoted (--target-action=promote): to the time and the
# restore point into fresh data directories, to the LSN with --delta over
# a restored server.  Each restored server must hold exactly what the
# source held at the target and sell exactly that: replays of calls made
# before the target answer duplicate, calls made after it (and the
# reservation in flight) are new keys there and answer ok, the reservations
# that fell due meanwhile expire as soon as it is promoted, the key filter
# is rebuilt, verify() is empty, its log shows no error.  Two more restores
# keep pgBackRest's default --target-action=pause: the server stays in
# recovery, read-only, with no workers, and answers available() from its
# tables, until pg_wal_replay_resume() or pg_promote() ends recovery; then
# it sells like the others.
#
# The source's worker is off, so that nothing but the test's own calls
# commits there and the state recorded at the targets is exact.  The
# restored servers run their workers, as any server does.
#
# Who calls: on the source and on each restored server -- the first calls
# after its promotion too -- shop_app (inventory_app) reserves, confirms,
# cancels and reads available(), shop_admin (inventory_admin) restocks,
# expires, reads the ledger and verifies, shop_monitor (inventory_monitor)
# reads inventory.stock, the key filter, the cache and the workers'
# status; each over a connection of its own.  The superuser creates the
# database, the extension and the roles, makes the backups and the
# restores (pgBackRest), the recovery targets (a restore point, a WAL
# switch), ends recovery (pg_wal_replay_resume(), pg_promote()) and reads
# the launcher's row of pg_stat_activity (another role's row).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use JSON::PP;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node stock_vs_ledger_sql psql_session wait_said inventory_roles as_app as_admin
  as_monitor poll_as);

my $PGBACKREST = 'pgbackrest';

my $STANZA = 'shop';
my $tmp    = PostgreSQL::Test::Utils::tempdir;
my $conf   = "$tmp/pgbackrest.conf";
my $bLog   = "$PostgreSQL::Test::Utils::log_path/033_pitr_pgbackrest";
mkdir $bLog;

my $src = inventory_node('source', qq{
inventory.worker_enabled = off
inventory.expire_interval = '100ms'
archive_mode = on
archive_command = '$PGBACKREST --config=$conf --stanza=$STANZA archive-push %p'
log_statement = none
}, allows_streaming => 1);

# the repository and the server it backs up; the paths of the restored
# servers are given on the command line
open my $cfh, '>', $conf or die "$conf: $!";
print $cfh qq{[global]
repo1-path=$tmp/repo
repo1-retention-full=2
start-fast=y
compress-type=lz4
log-path=$bLog
lock-path=$tmp/lock
spool-path=$tmp/spool
log-level-console=warn
log-level-file=info

[$STANZA]
pg1-path=${\ $src->data_dir}
pg1-socket-path=${\ $src->host}
pg1-port=${\ $src->port}
};
close $cfh;

# pgbackrest(ARGS...): runs pgBackRest with the test's configuration and
# stanza; dies with what it said when it fails
sub pgbackrest
{
	my (@args) = @_;
	my ($out, $err) = ('', '');
	my @cmd = ($PGBACKREST, "--config=$conf", "--stanza=$STANZA", @args);
	IPC::Run::run(\@cmd, '>', \$out, '2>', \$err)
	  or die "@cmd failed:\n$out$err";
	return $out;
}

$src->safe_psql('postgres', 'CREATE DATABASE shop');
$src->safe_psql('shop', 'CREATE EXTENSION inventory');
inventory_roles($src, 'shop');
as_admin($src, 'shop', q{
SELECT inventory.restock('TEE', 100, 'in-tee'), inventory.restock('CAP', 10, 'in-cap'),
       inventory.restock('MUG', 40, 'in-mug');
});
as_app($src, 'shop', "SELECT inventory.reserve('TEE', 2, 'pre-open', ttl => '1 hour')");

pgbackrest('stanza-create');
pgbackrest('check');
pgbackrest('backup', '--type=full');
my $info = JSON::PP::decode_json(pgbackrest('info', '--output=json'));
my @sets = @{ $info->[0]{backup} };
join(' ', map { $_->{type} } @sets) eq 'full' or die 'no full backup in the repository';

# pgBackRest picks the backup to restore to a time by its stop time, in
# whole seconds: the sales start in the second after it
my $stop = $sets[0]{timestamp}{stop};
$src->poll_query_until('shop', "SELECT extract(epoch FROM clock_timestamp()) >= $stop + 1")
  or die 'the clock has not passed the second in which the backup ended';

# reserve_now(NODE, SKU, QTY, KEY, TTL): the express lane's answer, in an
# autocommit statement of its own, as the application
sub reserve_now
{
	my ($node, $sku, $qty, $key, $ttl) = @_;
	return as_app($node, 'shop',
		"SELECT inventory.reserve_now('$sku', $qty, '$key', 1, '$ttl')");
}

# --- the first group: sales before the targets ---------------------------------

is(as_admin($src, 'shop', q{SELECT (inventory.restock('TEE', 20, 'g1-in')).status}) . ' ' . as_app($src, 'shop', q{
SELECT string_agg(s, ' ') FROM (VALUES
  ((inventory.reserve('TEE', 5, 'g1-paid', ttl => '1 hour')).status),
  ((inventory.confirm('g1-paid')).status),
  ((inventory.reserve('TEE', 2, 'g1-gone', ttl => '1 hour')).status),
  ((inventory.cancel('g1-gone')).status),
  ((inventory.reserve('CAP', 3, 'g1-open', ttl => '1 hour')).status),
  ((inventory.reserve('CAP', 2, 'g1-keep', ttl => '1 hour')).status),
  ((inventory.reserve('MUG', 4, 'g1-short', ttl => '1 second')).status)) v(s)}),
	'ok ok ok ok ok ok ok ok', 'the first group of calls is answered ok');
is(reserve_now($src, 'MUG', 2, 'g1-now', '1 hour') . ' '
	. reserve_now($src, 'TEE', 1, 'g1-now-short', '1 second'),
	'ok ok', 'and its reserve_now calls');

# a reservation in flight across the targets: made before them, committed
# after them
my $across = psql_session($src, $PostgreSQL::Test::Utils::timeout_default, 1, 'shop', 'shop_app');
$across->{in} .= "BEGIN;\nSELECT (inventory.reserve('TEE', 3, 'across', ttl => '1 hour')).status;\n";
wait_said($across, qr/^ok$/m);

# --- the targets ---------------------------------------------------------------

# what the source holds at the targets: nothing commits between this
# reading and the second group
# (the stock read by the monitor, the ledger by the administrator)
my %q = (
	stock  => 'SELECT sku, on_hand, reserved, available, version FROM inventory.stock ORDER BY sku',
	ledger => q{
SELECT order_id, batch_id, kind, sku, qty, state, created_at, expires_at
  FROM inventory.ledger ORDER BY order_id, batch_id},
);
my %reader = (stock => \&as_monitor, ledger => \&as_admin);
sub read_q
{
	my ($node, $what) = @_;
	return $reader{$what}->($node, 'shop', $q{$what});
}
my %at = map { $_ => read_q($src, $_) } keys %q;
# (the test's premise: the short reservations are PENDING at the targets)
$at{ledger} =~ /^g1-short\|1\|reserve\|MUG\|4\|PENDING\|/m
  or die "at the targets the short reservation g1-short is not PENDING:\n$at{ledger}";

my $target_time = $src->safe_psql('shop',
	q{SET timezone = 'UTC'; SELECT clock_timestamp()});
$src->safe_psql('shop', q{SELECT pg_create_restore_point('before-g2')});
my $target_lsn = $src->safe_psql('shop',
	'SELECT pg_switch_wal(); SELECT pg_current_wal_lsn()');
$target_lsn = (split /\n/, $target_lsn)[-1];
note "targets: time $target_time, name before-g2, lsn $target_lsn";

# --- the second group: sales after the targets -----------------------------------

$src->poll_query_until('shop', "SELECT clock_timestamp() > '$target_time'")
  or die 'the clock has not passed the target time';
$across->{in} .= "COMMIT;\nSELECT 'committed';\n\\q\n";
wait_said($across, qr/^committed$/m);
$across->{run}->finish;
# (the application's calls, then the administrator's restock)
my $second_app = q{
SELECT string_agg(s, ' ') FROM (VALUES
  ((inventory.confirm('g1-open')).status),
  ((inventory.cancel('g1-keep')).status),
  ((inventory.reserve('TEE', 7, 'g2-paid', ttl => '1 hour')).status),
  ((inventory.confirm('g2-paid')).status)) v(s)};
my $second_admin = q{SELECT (inventory.restock('CAP', 5, 'g2-in')).status};
is(as_app($src, 'shop', $second_app) . ' ' . as_admin($src, 'shop', $second_admin),
	'ok ok ok ok ok', 'the second group of calls is answered ok');
is(reserve_now($src, 'TEE', 2, 'g2-now', '1 hour'), 'ok', 'and its reserve_now call');

# the second group's WAL reaches the repository: check switches to a new
# segment and waits until the last one is archived
pgbackrest('check');

# the short reservations are past due before any restore starts; the
# source, whose worker is off, expires them by hand: its stock is then what
# a restored server must have once it has made the second group's calls
poll_as($src, 'shop_admin', 'shop', q{
SELECT max(expires_at) < now() FROM inventory.ledger WHERE order_id LIKE '%short'})
  or die 'the short reservations do not fall due';
is(as_admin($src, 'shop', 'SELECT inventory.expire()'), '2', 'the source expires them');
my $after = read_q($src, 'stock');
$after ne $at{stock} or die 'the second group did not change the stock';

# --- what a restored server must hold -----------------------------------------

# the state at the targets once the reservations that fell due have expired:
# a PENDING reservation under a key ending in "short" is EXPIRED, and its
# units are no longer reserved (an expiry is a settlement: version + 1)
my %short;    # sku => [units, reservations]
my $want_ledger = join "\n", map {
	my @f = split /\|/, $_, -1;
	if ($f[0] =~ /short$/ && $f[5] eq 'PENDING')
	{
		$f[5] = 'EXPIRED';
		$short{ $f[3] }[0] += $f[4];
		$short{ $f[3] }[1]++;
	}
	join '|', @f;
} split /\n/, $at{ledger};
# (the test's premise: the short reservations before the targets)
join(' ', map { "$_:$short{$_}[0]" } sort keys %short) eq 'MUG:4 TEE:1'
  or die 'the short reservations before the targets are not 4 MUG and 1 TEE';
my $want_stock = join "\n", map {
	my ($sku, $on_hand, $reserved, $available, $version) = split /\|/;
	my ($units, $n) = @{ $short{$sku} // [ 0, 0 ] };
	join '|', $sku, $on_hand, $reserved - $units, $available + $units, $version + $n;
} split /\n/, $at{stock};

# restore(NODE, OPTIONS...): restores the backup with OPTIONS into the data
# directory of NODE -- a new server of that name, or a stopped one -- and
# starts it.  Archiving is off there (--archive-mode=off): several servers
# restore from this repository, and none of them takes the source's place.
# The restored postgresql.conf is the source's: the server gets its own port
# and socket, and its workers on.
sub restore
{
	my ($node, @opts) = @_;
	$node = PostgreSQL::Test::Cluster->new($node) unless ref $node;
	my $data = $node->data_dir;
	pgbackrest('restore', "--pg1-path=$data", '--archive-mode=off', @opts);
	chmod 0700, $data;
	$node->append_conf('postgresql.conf', qq{
port = ${\ $node->port}
unix_socket_directories = '${\ $node->host}'
inventory.worker_enabled = on
});
	$node->start;
	return $node;
}

# log_errors(LOG): the lines of a server's log that tell of an error or a
# crash, but for the refusals of a server in recovery
sub log_errors
{
	my ($log) = @_;
	return join "\n", grep { /ERROR|PANIC|terminated by signal|was terminated/ && !/read-only transaction/ }
	  split /\n/, $log;
}

# replays(NODE): the calls before the target replayed, the restocks by the
# administrator, the others by the application: their answers
my $replays_admin = q{
SELECT string_agg(s, ' ') FROM (VALUES
  ((inventory.restock('TEE', 100, 'in-tee')).status),
  ((inventory.restock('TEE', 20, 'g1-in')).status)) v(s)};
my $replays_app = q{
SELECT string_agg(s, ' ') FROM (VALUES
  ((inventory.reserve('TEE', 2, 'pre-open', ttl => '1 hour')).status),
  ((inventory.reserve('TEE', 5, 'g1-paid', ttl => '1 hour')).status),
  ((inventory.confirm('g1-paid')).status),
  ((inventory.cancel('g1-gone')).status),
  ((inventory.reserve('CAP', 3, 'g1-open', ttl => '1 hour')).status),
  ((inventory.reserve('MUG', 4, 'g1-short', ttl => '1 second')).status),
  ((inventory.confirm('g1-short')).status)) v(s)};
sub replays
{
	my ($node) = @_;
	return as_admin($node, 'shop', $replays_admin) . ' ' . as_app($node, 'shop', $replays_app);
}
my $replays_answer = 'duplicate duplicate duplicate duplicate duplicate duplicate duplicate duplicate expired';

# check_restored(NODE, HOW): NODE, promoted, holds and sells what the
# source held at the targets
sub check_restored
{
	my ($node, $how) = @_;

	$node->poll_query_until('shop', 'SELECT NOT pg_is_in_recovery()') or die "$how: not promoted";
	# the roles' first calls after the promotion
	ok(poll_as($node, 'shop_admin', 'shop', q{
SELECT count(*) = 0 FROM inventory.ledger WHERE state = 'PENDING' AND expires_at < now()}),
		"$how: the reservations past due expire");
	ok(poll_as($node, 'shop_monitor', 'shop', 'SELECT ready FROM inventory.key_filter'),
		"$how: the key filter is rebuilt");
	cmp_ok(as_monitor($node, 'shop', 'SELECT keys_added FROM inventory.key_filter'), '>=',
		as_admin($node, 'shop', 'SELECT count(*) FROM inventory.ledger'),
		"$how: with every key of the ledger");
	# (the launcher's row of pg_stat_activity is read by the superuser)
	is($node->safe_psql('shop', q{
SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'inventory launcher'}), '1',
		"$how: the launcher runs");

	is(read_q($node, 'ledger'), $want_ledger,
		"$how: the ledger is the source's at the target, the short reservations expired");
	is(read_q($node, 'stock'), $want_stock,
		"$how: inventory.stock is the source's at the target, less the expired units");
	is(as_admin($node, 'shop', stock_vs_ledger_sql()), '', "$how: stock adds up with the ledger");
	is(as_admin($node, 'shop', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
		"$how: verify('30 s') is empty");

	# replays of the calls before the target are answered from their keys
	is(replays($node), $replays_answer,
		"$how: replays of the calls before the target answer duplicate");
	is(reserve_now($node, 'MUG', 2, 'g1-now', '1 hour'), 'duplicate',
		"$how: and a replayed reserve_now");

	# the calls after the target are not there: their keys are new
	is(as_admin($node, 'shop', q{
SELECT string_agg(order_id || ' ' || state, ', ' ORDER BY order_id) FROM inventory.ledger
 WHERE order_id LIKE 'g2-%' OR order_id IN ('g1-open', 'g1-keep', 'across')}),
		'g1-keep PENDING, g1-open PENDING',
		"$how: nothing of the second group, nor the reservation in flight at the target; "
		  . "what the second group confirmed and cancelled is PENDING again");
	is(as_app($node, 'shop', $second_app) . ' ' . as_admin($node, 'shop', $second_admin) . ' '
		  . as_app($node, 'shop', q{SELECT (inventory.reserve('TEE', 3, 'across', ttl => '1 hour')).status}),
		'ok ok ok ok ok ok', "$how: the calls made after the target answer ok again");
	is(reserve_now($node, 'TEE', 2, 'g2-now', '1 hour'), 'ok',
		"$how: and so does its reserve_now");
	is(read_q($node, 'stock'), $after,
		"$how: which leaves the stock the source had after them, its short reservations expired");

	# it sells exactly what its tables say: one unit more is refused, then
	# every unit left is sold
	my %avail = map { (split /\|/)[ 0, 3 ] } split /\n/, read_q($node, 'stock');
	my @skus = sort keys %avail;
	my $sell = 'SELECT ' . join(" || ' ' || ", map {
		"(inventory.reserve('$_', $avail{$_} + 1, 'over-$_')).status || ' ' || "
		  . "(inventory.reserve('$_', $avail{$_}, 'rest-$_', ttl => '1 hour')).status"
	} @skus);
	is(as_app($node, 'shop', $sell), join(' ', ('insufficient ok') x @skus),
		"$how: each SKU refuses one unit more than its tables have, then sells them all ("
		  . join(' ', map { "$_:$avail{$_}" } @skus) . ')');
	is(as_monitor($node, 'shop', q{
SELECT count(*) FROM inventory.stock WHERE available <> 0 OR reserved > on_hand
                                        OR inventory.available(sku) <> 0}), '0',
		"$how: sold out, nothing oversold");

	# sold out, a replay still answers duplicate: the key filter knows the
	# restored keys
	is(replays($node), $replays_answer,
		"$how: sold out, the replays still answer duplicate");
	is(reserve_now($node, 'MUG', 2, 'g1-now', '1 hour') . ' '
		. reserve_now($node, 'TEE', 2, 'g2-now', '1 hour') . ' '
		. reserve_now($node, 'MUG', 1, 'unseen', '1 hour'),
		'duplicate duplicate insufficient',
		"$how: reserve_now too; a new key is refused");
	is(as_admin($node, 'shop', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
		"$how: verify('30 s') is empty after the sale");
	is(as_admin($node, 'shop', stock_vs_ledger_sql()), '', "$how: stock adds up with the ledger");
}

# --- restores to each target, promoted -------------------------------------------

# A time target stops before the first commit after it, a restore point at
# its record.  An LSN target includes the record that starts at or after it;
# the LSN read after the switch is the start of a segment, whose first
# record may be the commit of the reservation in flight: --target-exclusive
# stops before that record, so that the server holds exactly what was
# committed before the LSN.
my %target = (
	time => [ "--type=time", "--target=$target_time",
			  qr/recovery stopping before commit of transaction \d+, time /, ],
	name => [ "--type=name", "--target=before-g2",
			  qr/recovery stopping at restore point "before-g2"/ ],
	lsn  => [ "--type=lsn", "--target=$target_lsn", '--target-exclusive',
			  qr/recovery stopping before WAL location \(LSN\) "[0-9A-F]+\/[0-9A-F]+"/ ],
);
my %restored;
for my $type (qw(time name lsn))
{
	my @opts    = @{ $target{$type} };
	my $stopped = pop @opts;
	my ($node, $offset, $how);
	if ($type eq 'lsn')
	{
		# the last restore goes over the stopped server of the first, as a
		# server is taken back to a target in place: --delta keeps the files
		# that are the same and replaces the others
		$node   = $restored{time};
		$offset = -s $node->logfile;
		$how    = "restored to a $type with --delta over a restored server";
		restore($node, '--delta', @opts, '--target-action=promote');
	}
	else
	{
		$offset = 0;
		$how    = "restored to a $type";
		$node   = restore("restored_$type", @opts, '--target-action=promote');
	}
	check_restored($node, $how);
	my $log = slurp_file($node->logfile, $offset);
	like($log, $stopped, "$how: recovery stopped at the target");
	is(log_errors($log), '', "$how: no error and no crash in the server's log");
	if ($type eq 'lsn')
	{
		my ($at) = $log =~ /\(LSN\) "([^"]+)"/;
		is($node->safe_psql('shop', "SELECT '$at'::pg_lsn >= '$target_lsn'::pg_lsn"), 't',
			"$how: before the first record at or past the target ($at)");
	}
	$node->stop;
	$restored{$type} = $node;
}

# --- the default target action: pause ---------------------------------------------

# Two restores keep pgBackRest's default --target-action=pause: to the
# restore point in a fresh directory, ended with pg_wal_replay_resume() (what
# the server's log hints), and to the time with --delta over the stopped
# server of the restore point, ended with pg_promote().
my @pauses = (
	[ 'restored_paused', [ '--type=name', '--target=before-g2' ], 'pg_wal_replay_resume()',
	  qr/recovery stopping at restore point "before-g2"/ ],
	[ $restored{name}, [ '--delta', '--type=time', "--target=$target_time" ], 'pg_promote()',
	  qr/recovery stopping before commit of transaction \d+, time / ],
);
for my $p (@pauses)
{
	my ($node, $opts, $end, $stopped) = @$p;
	my $offset = ref $node ? -s $node->logfile : 0;
	$node = restore($node, @$opts);
	my $how = "paused (@$opts)";

	# recovery pauses at the target: the server stays in recovery
	# (PostgreSQL's and pgBackRest's doing; what the extension does then
	# is the test)
	$node->poll_query_until('shop', q{SELECT pg_get_wal_replay_pause_state() = 'paused'})
	  or die "$how: recovery does not pause at the target";
	$node->safe_psql('shop', 'SELECT pg_is_in_recovery()') eq 't' or die "$how: the server is not in recovery";
	is(read_q($node, 'ledger'), $at{ledger},
		"$how: the ledger is the source's at the target, the short reservations still PENDING");
	is(read_q($node, 'stock'), $at{stock},
		"$how: inventory.stock is the source's at the target");
	is(as_app($node, 'shop', q{
SELECT string_agg(sku || ':' || inventory.available(sku), ' ' ORDER BY sku) FROM inventory.stock}),
		join(' ', map { join ':', (split /\|/)[ 0, 3 ] } split /\n/, $at{stock}),
		"$how: available() answers from the tables, the units past due still held");
	is(as_monitor($node, 'shop', 'SELECT entries FROM inventory.cache_info()'), '0',
		"$how: nothing is cached");
	# (the processes in pg_stat_activity by the superuser, the figures by
	# the monitor)
	is($node->safe_psql('shop', q{
SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'inventory%'}) . ' ' . as_monitor($node, 'shop', q{
SELECT (SELECT count(*) FROM inventory.worker_status) || ' ' || (SELECT ready FROM inventory.key_filter)}),
		'0 0 false', "$how: no launcher, no worker, no key filter yet");
	for my $call ("inventory.reserve('TEE', 1, 'in-pause')", "inventory.reserve_now('TEE', 1, 'in-pause')",
		"inventory.confirm('g1-short')", "inventory.restock('TEE', 1, 'in-pause')")
	{
		my $role = $call =~ /restock/ ? 'shop_admin' : 'shop_app';
		my ($rc, $out, $err) = $node->psql('shop', "\\set VERBOSITY verbose\nSELECT $call",
			extra_params => [ '-U', $role ]);
		like($err, qr/ERROR:  25006: cannot execute .* in a read-only transaction/,
			"$how: $call fails with 25006") or diag "rc $rc, out: $out";
	}

	$node->safe_psql('shop', "SELECT $end");    # the superuser ends recovery
	$how .= ", then $end";
	check_restored($node, $how);
	my $log = slurp_file($node->logfile, $offset);
	like($log, $stopped, "$how: recovery had stopped at the target");
	is(log_errors($log), '', "$how: no error but the refusals, no crash in the server's log");
	$node->stop;
}

$src->stop;
done_testing();

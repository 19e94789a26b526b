# A failed primary rejoins, as docs/failover.md tells an operator to do it.
#
# Two servers, node_a and node_b, stream from one another in turn.  Each
# round of the scenario:
#
#   1. the primary sells (restocks, reservations, confirms, cancels,
#      reserve_now); the standby receives all of it;
#   2. the standby is promoted while the old primary still runs: the old
#      primary goes on selling alone, and what it acknowledges after this
#      cut is kept in a list;
#   3. the old primary fails: in round 1 it crashes (an immediate stop)
#      with its postgresql.conf outside the data directory, as on Debian;
#      in round 2 it is stopped cleanly; in round 3 its postmaster is
#      killed;
#   4. the new primary sells, with reservations whose short ttl makes its
#      worker expire them while the old primary rejoins;
#   5. after a crash, the old primary's crash recovery is finished in
#      single-user mode: by hand in round 1 (pg_rewind cannot find the
#      configuration), by pg_rewind itself in round 3; then pg_rewind
#      rewinds it against the new primary, and it is started as its
#      standby (standby.signal, primary_conninfo) and catches up.
#
# Then: nothing the new primary acknowledged is lost; what the old primary
# alone acknowledged after the cut is gone from both servers, and its keys
# answer as new keys on the new primary; nothing is oversold; verify() is
# empty; the rewound standby caches nothing and runs no worker.  After
# round 1, a planned switchover makes node_a primary again: pg_rewind finds
# nothing to rewind on node_b, node_a's worker expires the reservations on
# time, replays of earlier acknowledged calls answer duplicate, and it
# sells exactly what it has.
#
# The servers run with what the manual asks for before any failover:
# wal_log_hints = on (pg_rewind refuses without it or data checksums;
# proven first), wal_keep_size, and a role for pg_rewind.
# PostgreSQL::Test::Cluster turns wal_log_hints on by itself for a server
# that streams; it is set back to off, PostgreSQL's default, before the
# manual's settings, so that they are what lets pg_rewind work.  Its other
# settings for a test server stay: fsync off, restart_after_crash off, a
# small shared_buffers and max_connections, log_statement = all, ...
#
# Who calls: on whichever server is primary -- the first calls after each
# promotion and each rejoin too -- shop_app (inventory_app) reserves,
# confirms, cancels and calls reserve_now(), shop_admin (inventory_admin)
# restocks, reads the ledger and verifies, shop_monitor
# (inventory_monitor) reads inventory.stock, the cache and the key filter;
# each over a connection of its own.  pg_rewind connects as rewinder, the
# role the manual gives it.  The superuser creates the extension and the
# roles, runs the servers (settings, stops, crashes, promotions,
# checkpoints, single-user mode, replication) and reads the extension's
# processes in pg_stat_activity (other roles' rows).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Copy qw(copy move);
use IPC::Run;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node wait_until stock_vs_ledger_sql inventory_roles as_role as_app as_admin
  as_monitor poll_as);

# how late after its expires_at a reservation may be expired and still be
# on time: the worker looks at least every inventory.expire_interval (1 s,
# the default), and one batch expires them; the other 4 s are slack for a
# worker to be started in the database and for a loaded machine (the
# lateness of each is noted)
my $ON_TIME = '5 seconds';

# what docs/failover.md asks to set before any failover
my $FAILOVER_CONF = qq{
wal_log_hints = on
wal_keep_size = '1GB'
};

# PostgreSQL's default, in place of PostgreSQL::Test::Cluster's wal_log_hints
# = on for a streaming server, before the manual's settings
my $DEFAULTS_CONF = "wal_log_hints = off\n";

# sql(NODE, SQL): as the superuser (settings, replication, the server's
# processes); app, admin, mon(NODE, SQL): as shop_app, shop_admin,
# shop_monitor
sub sql
{
	my ($node, $sql) = @_;
	return $node->safe_psql('postgres', $sql);
}
sub app   { return as_app($_[0], 'postgres', $_[1]); }
sub admin { return as_admin($_[0], 'postgres', $_[1]); }
sub mon   { return as_monitor($_[0], 'postgres', $_[1]); }

# pg_rewind(TARGET, SOURCE): rewinds TARGET's data directory (the server
# stopped) against the running SOURCE, as the manual does it; answers
# (exit code ok, stdout, stderr).  It connects as USER (default: the role
# rewinder; '': the superuser that runs the test).  A CHECKPOINT on SOURCE first: pg_rewind
# reads the source's timeline from its control file, which a freshly
# promoted server updates only at its first checkpoint after the promotion
# (PostgreSQL's manual page of pg_rewind asks for it).  pg_rewind copies
# the source's files over the target's, postgresql.conf too where it is in
# the data directory, as PostgreSQL::Test::Cluster keeps it: the target's
# own is put back afterwards (a Debian server keeps it in
# /etc/postgresql/15/main, which pg_rewind never touches).
sub pg_rewind
{
	my ($target, $source, $user) = @_;
	$user //= 'rewinder';
	my $conf = $target->data_dir . '/postgresql.conf';
	my $keep = PostgreSQL::Test::Utils::tempdir . '/postgresql.conf';
	my $had_conf = -e $conf;
	copy($conf, $keep) or die "copy $conf: $!" if $had_conf;
	sql($source, 'CHECKPOINT');
	my ($stdout, $stderr) = ('', '');
	my $ok = IPC::Run::run(
		[ 'pg_rewind', '--target-pgdata', $target->data_dir,
		  '--source-server', $source->connstr('postgres') . ($user eq '' ? '' : " user=$user"),
		  '--progress' ],
		'<', '/dev/null', '>', \$stdout, '2>', \$stderr);
	if ($had_conf)
	{
		copy($keep, $conf) or die "copy $keep: $!";
	}
	elsif (-e $conf)
	{
		unlink $conf or die "unlink $conf: $!";
	}
	note "pg_rewind:\n$stdout$stderr";
	return ($ok, $stdout, $stderr);
}

# state(NODE): the state of NODE's data directory, as pg_controldata says
sub state
{
	my ($node) = @_;
	my ($out) = run_command([ 'pg_controldata', '-D', $node->data_dir ]);
	return $out =~ /^Database cluster state:\s+(.*)$/m ? $1 : "?\n$out";
}

# kill9(NODE): kills NODE's postmaster with SIGKILL, as a crash would, and
# waits until every process of the server has gone: those see the
# postmaster die and exit on their own
sub kill9
{
	my ($node) = @_;
	my @pids = split /\n/, sql($node, 'SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()');
	$node->kill9;
	wait_until(30, sub { !grep { kill 0, $_ } @pids })
	  or die 'processes of ' . $node->name . ' are left after its postmaster was killed: '
	  . join(' ', grep { kill 0, $_ } @pids);
}

# standby_of(NODE, PRIMARY): makes NODE (stopped) a standby of PRIMARY:
# standby.signal and primary_conninfo, as the manual says; starts it and
# waits until it has replayed everything PRIMARY has written.
sub standby_of
{
	my ($node, $primary) = @_;
	$node->append_conf('standby.signal', '');
	$node->append_conf('postgresql.conf',
		"primary_conninfo = '" . $primary->connstr . " application_name=" . $node->name . "'");
	$node->start;
	$primary->wait_for_catchup($node, 'replay');
}

# promote(NODE): pg_ctl promote, and waits until NODE accepts writes
sub promote
{
	my ($node) = @_;
	$node->promote;
	$node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()')
	  or die 'promotion did not end';
}

# --- without wal_log_hints, pg_rewind refuses ------------------------------------

{
	# PostgreSQL::Test::Cluster turns wal_log_hints on for a server that
	# streams; a Debian cluster has it off, and no data checksums
	my $c = inventory_node('no_hints', $DEFAULTS_CONF, allows_streaming => 1);
	sql($c, 'CREATE EXTENSION inventory');
	inventory_roles($c);
	# the premise: a server with PostgreSQL's defaults, no wal_log_hints,
	# no data checksums
	sql($c, 'SHOW wal_log_hints') . ' ' . sql($c, 'SHOW data_checksums') eq 'off off'
	  or die 'the server has wal_log_hints or data checksums';
	$c->backup('no_hints');
	my $d = PostgreSQL::Test::Cluster->new('no_hints_standby');
	$d->init_from_backup($c, 'no_hints', has_streaming => 1);
	$d->start;
	$c->wait_for_catchup($d, 'replay');
	promote($d);
	admin($c, "SELECT inventory.restock('X-1', 5, 'after-the-cut')");
	$c->stop;
	my ($ok, $out, $err) = pg_rewind($c, $d, '');    # as the superuser
	ok(!$ok, 'pg_rewind refuses to rewind it');
	like($err, qr/target server needs to use either data checksums or "wal_log_hints = on"/,
		'with its own error: wal_log_hints must be on before the failover');
	$d->stop;
	$c->teardown_node;
	$d->teardown_node;
}

# --- the two servers ---------------------------------------------------------------

# node_b is made from a backup of node_a, with its postgresql.conf
my $node_a = inventory_node('node_a', $DEFAULTS_CONF . $FAILOVER_CONF, allows_streaming => 1);
# the premise: node_a has no data checksums, and wal_log_hints is on (the
# manual's setting, after the default off)
sql($node_a, 'SHOW data_checksums') . ' ' . sql($node_a, 'SHOW wal_log_hints') eq 'off on'
  or die 'node_a has data checksums, or wal_log_hints off';
sql($node_a, 'CREATE EXTENSION inventory');
inventory_roles($node_a);
# pg_rewind connects as a role that may read the source's files, not as a
# superuser, as the manual shows
sql($node_a, q{
CREATE ROLE rewinder LOGIN;
GRANT EXECUTE ON FUNCTION pg_catalog.pg_ls_dir(text, boolean, boolean) TO rewinder;
GRANT EXECUTE ON FUNCTION pg_catalog.pg_stat_file(text, boolean) TO rewinder;
GRANT EXECUTE ON FUNCTION pg_catalog.pg_read_binary_file(text) TO rewinder;
GRANT EXECUTE ON FUNCTION pg_catalog.pg_read_binary_file(text, bigint, bigint, boolean) TO rewinder;
});
$node_a->backup('a');
my $node_b = PostgreSQL::Test::Cluster->new('node_b');
$node_b->init_from_backup($node_a, 'a', has_streaming => 1);
$node_b->start;
$node_a->wait_for_catchup($node_b, 'replay');

# --- the calls and what the tables must say ----------------------------------------

# A call is {op, key, sku, qty, ttl}; run() makes it in a statement of its
# own, as the role the manual gives it (shop_admin restocks, shop_app makes
# the others), and answers its status.
sub call_sql
{
	my ($c) = @_;
	my $ttl = $c->{ttl} // '1 hour';
	return
	    $c->{op} eq 'reserve' ? "SELECT status FROM inventory.reserve('$c->{sku}', $c->{qty}, '$c->{key}', 1, '$ttl')"
	  : $c->{op} eq 'reserve_now' ? "SELECT inventory.reserve_now('$c->{sku}', $c->{qty}, '$c->{key}', 1, '$ttl')"
	  : $c->{op} eq 'restock' ? "SELECT status FROM inventory.restock('$c->{sku}', $c->{qty}, '$c->{key}')"
	  : "SELECT status FROM inventory.$c->{op}('$c->{key}')";
}

sub role_of { return $_[0]{op} eq 'restock' ? 'shop_admin' : 'shop_app'; }

sub run
{
	my ($node, $c) = @_;
	return as_role($node, role_of($c), 'postgres', call_sql($c));
}

# Every call acknowledged by the primary of the moment, in order; and the
# ledger rows they make: key => "kind sku qty state".
my @acked;
my %want;

sub apply
{
	my ($c) = @_;
	if ($c->{op} eq 'reserve' || $c->{op} eq 'reserve_now')
	{
		$want{ $c->{key} } = "reserve $c->{sku} $c->{qty} PENDING";
	}
	elsif ($c->{op} eq 'restock')
	{
		$want{ $c->{key} } = "restock $c->{sku} $c->{qty} ";
	}
	else
	{
		my $state = $c->{op} eq 'confirm' ? 'CONFIRMED' : 'CANCELLED';
		$want{ $c->{key} } =~ s/PENDING$/$state/ or die "$c->{op} of $c->{key}: not PENDING";
	}
}

# sell(NODE, CALLS): makes the calls on the primary NODE; each must answer
# ok; records them as acknowledged
sub sell
{
	my ($node, @calls) = @_;
	my @bad;
	for my $c (@calls)
	{
		my $s = run($node, $c);
		push @bad, "$c->{op} $c->{key}: $s" unless $s eq 'ok';
		push @acked, $c;
		apply($c);
	}
	return join('; ', @bad);
}

# the ledger rows of a round's keys, as %want has them
sub ledger
{
	my ($node, $tag) = @_;
	my %l;
	for (split /\n/, admin($node, qq{
SELECT order_id, kind || ' ' || sku || ' ' || qty || ' ' || coalesce(state::text, '')
  FROM inventory.ledger WHERE order_id LIKE '$tag-%'}))
	{
		my ($k, $v) = split /\|/;
		$l{$k} = $v;
	}
	return \%l;
}

sub differences
{
	my ($have, $tag) = @_;
	my @d;
	for my $k (sort grep { /^$tag-/ } keys %want)
	{
		push @d, "$k: want $want{$k}, have " . ($have->{$k} // 'nothing')
		  unless ($have->{$k} // '') eq $want{$k};
	}
	for my $k (sort keys %$have)
	{
		push @d, "$k: unexpected $have->{$k}" unless exists $want{$k};
	}
	return join("\n", @d);
}

# the whole of both tables, to compare two servers (read by the
# administrator)
my $TABLES = q{
SELECT order_id, batch_id, kind, sku, qty, state, expires_at, settled_at FROM inventory.ledger ORDER BY 1, 2;
SELECT * FROM inventory.stock ORDER BY sku;
};

# no SKU with reserved < 0 or reserved > on_hand, and the counters are what
# the ledger adds up to
sub not_oversold
{
	my ($node) = @_;
	return mon($node, 'SELECT sku, on_hand, reserved FROM inventory.stock WHERE reserved < 0 OR reserved > on_hand')
	  . admin($node, stock_vs_ledger_sql());
}

# replays(NODE): replays every acknowledged call on the primary NODE, each
# in a statement of its own (one psql session per role: the restocks as
# shop_admin, the others as shop_app); every one must answer duplicate
sub replays
{
	my ($node) = @_;
	my %answers;
	for my $role ('shop_admin', 'shop_app')
	{
		my @mine = grep { role_of($acked[$_]) eq $role } 0 .. $#acked;
		next unless @mine;
		my @got = split /\n/, as_role($node, $role, 'postgres', join('', map { call_sql($acked[$_]) . ";\n" } @mine));
		push @{ $answers{extra} }, 'more answers than calls' if @got > @mine;
		@answers{@mine} = @got;
	}
	my @s = map { $answers{$_} } 0 .. $#acked;
	my @bad;
	for my $i (0 .. $#acked)
	{
		my $c = $acked[$i];
		my $got = $s[$i] // 'nothing';
		push @bad, "$c->{op} $c->{key}: $got" unless $got eq 'duplicate';
	}
	push @bad, @{ $answers{extra} // [] };
	return join('; ', @bad);
}

# expired_on_time(NODE, TAG, SINCE): waits until every reservation of TAG's
# short keys is EXPIRED on NODE; answers those expired later than $ON_TIME
# after their expires_at (or after SINCE, when the server became primary
# after it), and records their state
sub expired_on_time
{
	my ($node, $like, $since) = @_;
	$since = defined $since ? "'$since'::timestamptz" : "'-infinity'::timestamptz";
	poll_as($node, 'shop_admin', 'postgres', qq{
SELECT count(*) = 0 FROM inventory.ledger WHERE order_id LIKE '$like' AND state <> 'EXPIRED'})
	  or return 'not expired';
	for my $k (split /\n/, admin($node, "SELECT order_id FROM inventory.ledger WHERE order_id LIKE '$like'"))
	{
		$want{$k} =~ s/PENDING$/EXPIRED/;
	}
	note admin($node, qq{
SELECT 'lateness ' || order_id || ' ' || (settled_at - expires_at)
  FROM inventory.ledger WHERE order_id LIKE '$like' ORDER BY 1});
	return admin($node, qq{
SELECT order_id, expires_at, settled_at FROM inventory.ledger
 WHERE order_id LIKE '$like'
   AND (settled_at < expires_at OR settled_at > greatest(expires_at, $since) + interval '$ON_TIME')});
}

# --- a round: failover, the old primary fails, is rewound and rejoins ---------------

# round(TAG, OLD, NEW, HOW): OLD is the primary, NEW its standby; HOW OLD
# fails:
#   'debian': a crash (an immediate stop), with postgresql.conf outside the
#             data directory as on Debian: the operator finishes the crash
#             recovery in single-user mode before pg_rewind;
#   'clean':  a clean stop;
#   'kill9':  the postmaster is killed; pg_rewind finishes the crash
#             recovery itself in single-user mode.
sub round
{
	my ($tag, $old, $new, $how) = @_;
	my ($oldn, $newn) = ($old->name, $new->name);

	# 1. sales on the primary, all of it replicated
	is(sell($old,
		{ op => 'restock', key => "$tag-in-1", sku => "$tag-S1", qty => 20 },
		{ op => 'restock', key => "$tag-in-2", sku => "$tag-S2", qty => 20 },
		{ op => 'restock', key => "$tag-in-3", sku => "$tag-S3", qty => 10 },
		{ op => 'reserve', key => "$tag-paid", sku => "$tag-S1", qty => 2 },
		{ op => 'confirm', key => "$tag-paid" },
		{ op => 'reserve', key => "$tag-gone", sku => "$tag-S2", qty => 3 },
		{ op => 'cancel',  key => "$tag-gone" },
		{ op => 'reserve', key => "$tag-open-1", sku => "$tag-S3", qty => 1 },
		{ op => 'reserve', key => "$tag-open-2", sku => "$tag-S2", qty => 2 },
		{ op => 'reserve_now', key => "$tag-now", sku => "$tag-S1", qty => 1 }),
		'', "$tag: $oldn sells");
	$old->wait_for_catchup($new, 'replay');

	# 2. the cut: the standby is promoted, the old primary sells alone
	promote($new);
	$old->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_stat_replication')
	  or die "$tag: $newn, promoted, still streams from $oldn";
	my @cut = (
		{ op => 'reserve', key => "$tag-cut-big", sku => "$tag-S3", qty => 6 },
		{ op => 'reserve', key => "$tag-cut-small", sku => "$tag-S1", qty => 1 },
		{ op => 'reserve_now', key => "$tag-cut-now", sku => "$tag-S2", qty => 1 },
		{ op => 'restock', key => "$tag-cut-in", sku => "$tag-S4", qty => 5 },
		{ op => 'confirm', key => "$tag-open-1" },
		{ op => 'cancel',  key => "$tag-open-2" });
	is(join(' ', map { run($old, $_) } @cut), 'ok ok ok ok ok ok',
		"$tag: $oldn, cut off, acknowledges more calls");
	is(admin($old, qq{
SELECT string_agg(order_id || ' ' || coalesce(state::text, ''), ', ' ORDER BY order_id)
  FROM inventory.ledger WHERE order_id LIKE '$tag-cut-%' OR order_id LIKE '$tag-open-%'}),
		"$tag-cut-big PENDING, $tag-cut-in , $tag-cut-now PENDING, $tag-cut-small PENDING, "
		  . "$tag-open-1 CONFIRMED, $tag-open-2 CANCELLED",
		"$tag: they are committed on $oldn");

	# 3. the old primary fails (scaffolding: dies if it did not fail so)
	if ($how eq 'clean')
	{
		$old->stop('fast');
		state($old) eq 'shut down' or die "$tag: $oldn is not stopped cleanly: " . state($old);
	}
	elsif ($how eq 'kill9')
	{
		kill9($old);
		state($old) eq 'in production' or die "$tag: $oldn has not crashed: " . state($old);
	}
	else
	{
		$old->stop('immediate');
		state($old) eq 'in production' or die "$tag: $oldn has not crashed: " . state($old);
	}

	# 4. the new primary sells, the same SKUs: with the old primary's
	# reservations after the cut, S3 would be oversold (6 + 6 > 9); the
	# short reservations fall due while the old primary rejoins
	is(sell($new,
		{ op => 'reserve', key => "$tag-new-big", sku => "$tag-S3", qty => 6 },
		{ op => 'reserve', key => "$tag-short-1", sku => "$tag-S2", qty => 2, ttl => '3 seconds' },
		{ op => 'reserve', key => "$tag-short-2", sku => "$tag-S3", qty => 1, ttl => '3 seconds' },
		{ op => 'reserve_now', key => "$tag-short-3", sku => "$tag-S1", qty => 1, ttl => '3 seconds' },
		{ op => 'reserve_now', key => "$tag-new-now", sku => "$tag-S1", qty => 1 },
		{ op => 'restock', key => "$tag-new-in", sku => "$tag-S1", qty => 5 },
		{ op => 'reserve', key => "$tag-new-paid", sku => "$tag-S1", qty => 3 },
		{ op => 'confirm', key => "$tag-new-paid" }),
		'', "$tag: $newn sells");

	# 5. rewind the old primary and make it a standby of the new one
	my ($ok, $out, $err);
	if ($how eq 'debian')
	{
		# postgresql.conf where Debian keeps it, outside the data directory
		my $etc = PostgreSQL::Test::Utils::tempdir;
		my $data = $old->data_dir;
		move("$data/postgresql.conf", "$etc/postgresql.conf") or die "move: $!";
		($ok, $out, $err) = pg_rewind($old, $new);
		ok(!$ok, "$tag: pg_rewind cannot finish the crash recovery of $oldn by itself");
		like($err, qr/could not access the server configuration file.*\n(.*\n)*.*single-user mode in target cluster failed/,
			"$tag: its single-user run finds no postgresql.conf in the data directory");
		is(state($old), 'in production', "$tag: $oldn is left as it was");
		# the manual's step: single-user mode with the configuration file
		# (a step: what it leaves is checked)
		my ($so, $se) = ('', '');
		IPC::Run::run(
			[ 'postgres', '--single', '-D', $data, '-c', "config_file=$etc/postgresql.conf", 'template1' ],
			'<', '/dev/null', '>', \$so, '2>', \$se)
		  or die "$tag: postgres --single failed on $oldn:\n$so$se";
		is(state($old), 'shut down', "$tag: postgres --single finishes the crash recovery of $oldn: it is shut down cleanly");
		($ok, $out, $err) = pg_rewind($old, $new);
		move("$etc/postgresql.conf", "$data/postgresql.conf") or die "move: $!";
		ok($ok, "$tag: pg_rewind rewinds $oldn");
		unlike($err, qr/crash recovery/, "$tag: with no recovery left to finish");
	}
	else
	{
		($ok, $out, $err) = pg_rewind($old, $new);
		ok($ok, "$tag: pg_rewind rewinds $oldn");
		if ($how eq 'kill9')
		{
			like($err, qr/for target server to complete crash recovery/,
				"$tag: after the crash, pg_rewind first brought $oldn to a clean shutdown in single-user mode");
		}
		else
		{
			unlike($err, qr/crash recovery/, "$tag: after a clean stop there was no recovery to finish");
		}
	}
	like($err, qr/servers diverged at WAL location/, "$tag: $oldn had diverged");
	standby_of($old, $new);
	is(expired_on_time($new, "$tag-short-%"), '',
		"$tag: the worker of $newn expires its short reservations on time");
	$new->wait_for_catchup($old, 'replay');

	# nothing the new primary acknowledged is lost; nothing only the old
	# one had after the cut is left
	my $l = ledger($new, $tag);
	is(differences($l, $tag), '',
		"$tag: $newn has every acknowledged movement and none of $oldn\'s after the cut");
	is(not_oversold($new), '', "$tag: nothing is oversold on $newn");
	is(admin($new, "SELECT count(*) FROM inventory.verify('30 s')"), '0', "$tag: verify('30 s') on $newn is empty");
	is(admin($old, $TABLES), admin($new, $TABLES), "$tag: $oldn, rewound, has exactly $newn\'s tables");
	# (the figures by the monitor, the processes by the superuser)
	is(mon($old, q{
SELECT pg_is_in_recovery(), (SELECT entries FROM inventory.cache_info()),
       (SELECT keys_added || ' ' || ready FROM inventory.key_filter_info())})
		  . '|' . sql($old, q{SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'inventory%'}),
		't|0|0 false|0', "$tag: $oldn is a standby: nothing cached, no key in the filter, no launcher, no worker");

	# the old primary's calls after the cut: their keys are new keys now
	is(join(' ', map { run($new, $_) } @cut),
		'insufficient ok ok ok ok ok',
		"$tag: on $newn, a retry of each reserves, restocks, confirms and cancels again, "
		  . "and the big reservation no longer fits");
	is(app($new, "SELECT status FROM inventory.confirm('$tag-cut-big')"), 'not_found',
		"$tag: the reservation it could not make again is unknown to $newn");
	for my $c (@cut[ 1 .. $#cut ])
	{
		push @acked, $c;
		apply($c);
	}
	$new->wait_for_catchup($old, 'replay');
	is(differences(ledger($old, $tag), $tag), '', "$tag: and so is it on $oldn");
	is(not_oversold($new), '', "$tag: nothing is oversold after the retries");
}

# --- round 1: node_a crashes, node_b takes over, node_a rejoins (Debian's layout) ------

round('r1', $node_a, $node_b, 'debian');

# --- a planned switchover: node_a primary again ----------------------------------------

# reservations of the current primary that fall due after the switch
is(sell($node_b,
	{ op => 'reserve', key => 'sw-due-1', sku => 'r1-S1', qty => 1, ttl => '8 seconds' },
	{ op => 'reserve_now', key => 'sw-due-2', sku => 'r1-S2', qty => 2, ttl => '8 seconds' }),
	'', 'node_b sells before the switchover');
$node_b->wait_for_catchup($node_a, 'replay');
$node_b->stop('fast');
my $checkpoint;
{
	my ($out) = run_command([ 'pg_controldata', '-D', $node_b->data_dir ]);
	($checkpoint) = $out =~ /^Latest checkpoint location:\s+(\S+)$/m;
	$out =~ /^Database cluster state:\s+shut down$/m or die "node_b is not shut down cleanly:\n$out";
}
$node_a->poll_query_until('postgres', "SELECT pg_last_wal_replay_lsn() > '$checkpoint'")
  or die "node_a has not replayed node_b\'s shutdown checkpoint ($checkpoint)";
is(admin($node_a, "SELECT string_agg(state::text, ' ') FROM inventory.ledger WHERE order_id LIKE 'sw-due-%'"),
	'PENDING PENDING', 'the reservations due after the switch are still PENDING');
promote($node_a);
my $promoted_at = sql($node_a, 'SELECT now()');

# the old primary rejoins: pg_rewind finds nothing to rewind
{
	my ($ok, $out, $err) = pg_rewind($node_b, $node_a);
	ok($ok, 'pg_rewind of node_b against node_a');
	like($err, qr/no rewind required/, 'after a clean switchover there is nothing to rewind');
	standby_of($node_b, $node_a);
}

# node_a, promoted: the worker runs here now, the key filter and the
# cache are rebuilt from the tables (the launcher's row of
# pg_stat_activity is read by the superuser)
ok($node_a->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'inventory launcher'"),
	'node_a, promoted, runs the launcher');
is(expired_on_time($node_a, 'sw-due-%', $promoted_at), '',
	'the reservations made on node_b expire on time on node_a');
is(sql($node_b, "SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'inventory%'"), '0',
	'node_b, a standby, runs no worker');
is(sell($node_a,
	{ op => 'reserve', key => 'sw-short-1', sku => 'r1-S2', qty => 1, ttl => '2 seconds' },
	{ op => 'reserve_now', key => 'sw-short-2', sku => 'r1-S3', qty => 1, ttl => '2 seconds' }),
	'', 'node_a sells with short reservations');
is(expired_on_time($node_a, 'sw-short-%'), '', 'they expire on time');
ok(poll_as($node_a, 'shop_monitor', 'postgres', 'SELECT ready FROM inventory.key_filter_info()'),
	'the key filter of node_a is rebuilt from the ledger');
cmp_ok(mon($node_a, 'SELECT keys_added FROM inventory.key_filter_info()'), '>=',
	admin($node_a, 'SELECT count(*) FROM inventory.ledger'), 'with every key of the ledger');
is(replays($node_a), '', 'replays of every acknowledged call (' . scalar(@acked) . ') answer duplicate on node_a');
is(app($node_a, q{
SELECT string_agg(s, ' ') FROM (VALUES
  ((inventory.confirm('r1-short-1')).status),
  ((inventory.confirm('sw-due-1')).status),
  ((inventory.confirm('r1-cut-big')).status)) v(s)}),
	'expired expired not_found', 'expired reservations answer expired, the lost key not_found');

# it sells exactly what it has
my $avail = mon($node_a, "SELECT available FROM inventory.stock WHERE sku = 'r1-S1'");
is(app($node_a, qq{
SELECT string_agg(s, ' ') FROM (VALUES
  ((inventory.reserve('r1-S1', $avail + 1, 'sw-over')).status),
  ((inventory.reserve('r1-S1', $avail, 'sw-all')).status),
  ((inventory.confirm('sw-all')).status)) v(s)})
	  . ' ' . app($node_a, "SELECT inventory.reserve_now('r1-S1', 1, 'sw-more')"),
	'insufficient ok ok insufficient', "node_a sells r1-S1\'s $avail units, not one more");
$want{'sw-all'} = "reserve r1-S1 $avail CONFIRMED";
push @acked, { op => 'reserve', key => 'sw-all', sku => 'r1-S1', qty => $avail };
is(mon($node_a, "SELECT available FROM inventory.stock WHERE sku = 'r1-S1'"), '0', 'r1-S1 is sold out');
is(not_oversold($node_a), '', 'nothing is oversold on node_a');
is(admin($node_a, "SELECT count(*) FROM inventory.verify('30 s')"), '0', "verify('30 s') on node_a is empty");
$node_a->wait_for_catchup($node_b, 'replay');
is(admin($node_b, $TABLES), admin($node_a, $TABLES), 'node_b follows node_a');

# --- round 2: node_a stops cleanly, node_b takes over, node_a rejoins -------------------

round('r2', $node_a, $node_b, 'clean');

# --- round 3: node_b's postmaster is killed, node_a takes over, node_b rejoins ----------

round('r3', $node_b, $node_a, 'kill9');
is(replays($node_a), '', 'replays of every acknowledged call of every round (' . scalar(@acked) . ') answer duplicate on node_a');
is(admin($node_a, "SELECT count(*) FROM inventory.verify('30 s')"), '0', "verify('30 s') on node_a is empty at the end");

$node_a->stop;
$node_b->stop;
done_testing();

# A hostile tenant and a real operator against the express lane
# (issue 31: E1-E7, and the caller's hold given back twice).
#
# The roles connect as themselves, as the manual says each is used: app
# (IN ROLE inventory_app) calls; alice (IN ROLE inventory_admin)
# administers -- a hand INSERT into the ledger left idle in transaction,
# LOCK TABLE, key_filter_rebuild(), DROP DATABASE of her own databases;
# the superuser does only what a superuser must (ALTER DATABASE of a
# database it owns, ALTER SYSTEM, fault injection, pg_terminate_backend()
# of the writer, kill -9).  For each finding the test checks that the call
# ends -- with an answer, an error, or at its statement_timeout; a cancel,
# a terminate or a dropped client takes effect within $BOUND -- that
# nothing is lost (every ok and every duplicate has its row, once;
# verify() is empty; inventory.stock adds up with the ledger and
# available() with inventory.stock) and that no right is gained.
#
#   E5  after a restart, reserve_now() as app of a SKU not in the cache is
#       ok -- also with a search_path that puts app's own operators first,
#       which never run; an 8-client pgbench of reserve_now() as app right
#       after a crash has no aborted client;
#   E1  the caller's own statement holds what the writer finds busy: the
#       key's lock (confirm() of the key), the buyer's lock (a refused
#       reserve_many()), the ledger under a queued LOCK TABLE ... ACCESS
#       EXCLUSIVE, which is granted once the statement is over; a DDL
#       queued behind another session goes first, and callers wait behind
#       it cancellably; two callers holding each other's keys end in a
#       deadlock error for one and ok for the other;
#   E2  alice's hand INSERT of a key, idle in transaction: other keys are
#       served by the writer; callers of that key wait in their own
#       backends and end on statement_timeout, cancel, terminate and a
#       dropped client; pg_terminate_backend() ends the writer; the same
#       for a buyer's lock held by a hand INSERT; and with the writer parked
#       between its read of the key's index and its insert
#       (inventory.inject_fault 'express-writer-before-insert'), alice's
#       INSERT in that window: the writer's lock_timeout sends the item
#       back, the caller waits for her cancellably, the writer goes on;
#   double give-back: inventory.inject_fault 'express-flush' and
#       'express-after-start' -- the caller gets the error, the hold is
#       given back once, the writer it started writes its item;
#   E7  with an idle writer, DROP DATABASE of another database is quick;
#   E6  ALLOW_CONNECTIONS false: calls answer, at most one writer start a
#       second; a RENAME refused to app disturbs no writer; a RENAME by the
#       owner that waits for the database's sessions stalls no caller;
#   E3  wal_writer_delay = 10s and the writer paused 3 s after its commit
#       (inventory.inject_fault 'express-writer-after-commit'): callers
#       asleep in that batch end on cancel and terminate once it is
#       answered; a reserve() of the key answers duplicate only once the
#       row is flushed, and the row survives kill -9; the same for the
#       key's reuse error (23505);
#   E4  synchronous_commit = off for app: a call reserved in the caller's
#       own transaction (E1's fallback, and with max_express_writers = 0)
#       is flushed when it answers, and survives kill -9;
#   the router: confirm() and reserve_now() of one key in one statement,
#       and a node's caller stuck behind a hand INSERT, through the router
#       with statement_timeout.
# E2's window, the double give-back and E3 need a build with fault injection (make
# INVENTORY_FAULTS=1, as scripts/test.sh builds); they are skipped in
# another.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use List::Util qw(max);
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node wait_until stock_vs_ledger_sql fault_functions);
use RouterCluster qw(start_nodes start_router);

my $DEADLINE = 60;    # seconds, for every wait that proves nothing about time
# The bound this test proves for a cancel, a terminate, a dropped client or
# a statement_timeout to take effect, and for a call that must not stall.
# A caller waits either in its own backend (a lock wait: a cancel acts at
# once) or asleep until its batch is answered: the writer's lock_timeout
# (100 ms) plus one batch (milliseconds).  10 s is that with room for a
# loaded 2-core machine (a psql to start, a log to flush); before the fixes
# these waits did not end at all.
my $BOUND = 10;
# statement_timeout of a call that must answer: it would end a call that
# waits, so the call answering before it shows it did not hang
my $TIMEOUT = 30;

# No expiry worker: its commits would flush the WAL that E3 and E4 need
# unflushed (and the key filter, which its first visit would make ready,
# is made ready by hand after each start).  No autovacuum, no checkpoint
# for the same reason.  wal_writer_delay at its maximum, so that an
# asynchronous commit stays unflushed for up to 10 s.
my $node = inventory_node('hostile', q{
max_connections = 60
restart_after_crash = on
log_statement = none
autovacuum = off
checkpoint_timeout = '1h'
max_wal_size = '1GB'
wal_writer_delay = '10s'
inventory.worker_enabled = off
inventory.express_idle_timeout = '60s'
});
my $SU = $node->safe_psql('postgres', 'SELECT current_user');

# ---- helpers -------------------------------------------------------------------

# SQL run by ROLE (default the superuser) on DB (default shop); dies on
# an error, and on a statement that hangs (rather than hang the test)
sub as
{
	my ($role, $sql, $db) = @_;
	return $node->safe_psql($db // 'shop', $sql, extra_params => [ '-U', $role // $SU ],
		timeout => 3 * $DEADLINE);
}

# the error (stderr) of SQL run by ROLE on DB, or '' if it succeeded
sub err_of
{
	my ($role, $sql, $db) = @_;
	my ($ret, $out, $err) = $node->psql($db // 'shop', $sql, extra_params => [ '-U', $role ],
		timeout => 3 * $DEADLINE);
	return $ret == 0 ? '' : $err;
}

sub fallbacks { as('alice', 'SELECT inventory.express_fallbacks()') }

# the pid of the writer serving shop, '' if none
sub writer_pid
{
	return as('alice', "SELECT coalesce(max(writer_pid)::text, '') FROM inventory.express_status WHERE datname = 'shop'");
}

# "wait_event_type:wait_event" of the backend whose application_name is NAME
sub wait_of
{
	my ($name, $n) = @_;
	return ($n // $node)->safe_psql('postgres', qq{
SELECT coalesce(wait_event_type, '') || ':' || coalesce(wait_event, '') FROM pg_stat_activity
 WHERE application_name = '$name'});
}

sub pid_of
{
	my ($name, $n) = @_;
	return ($n // $node)->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE application_name = '$name'");
}

sub backend_alive
{
	my ($pid) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM pg_stat_activity WHERE pid = $pid") ne '0';
}

my $calls_dir = PostgreSQL::Test::Utils::tempdir;
my $calls = 0;

# start_call(ROLE, NAME, SQL, [DB], [NODE], [RAW]): SQL run in the
# background by a psql of its own, as ROLE, with application_name NAME;
# finish_call() kills it if it has not ended after $DEADLINE (then it is
# reported as hung).
# A shell around psql notes when psql exits (the END line on stderr), so
# that how long a call took does not depend on when the test looks, and
# kills psql when it is killed itself; RAW: psql alone, whose process the
# test may kill.
sub start_call
{
	my ($role, $name, $sql, $db, $n, $raw) = @_;
	$n //= $node;
	my %c = (name => $name, out => '', err => '');
	# a script file: psql reads it to its end and exits (a scalar on its
	# stdin would stay open while the harness runs)
	my $file = "$calls_dir/" . ++$calls . ".sql";
	open my $fh, '>', $file or die "$file: $!";
	print $fh $sql;
	close $fh;
	$c{t0} = time;
	my @args = ('-XAtq', '-v', 'ON_ERROR_STOP=1', '-f', $file,
		'-d', $n->connstr($db // 'shop') . " user=$role application_name=$name");
	$c{h} = IPC::Run::start(
		$raw ? [ 'psql', @args ]
		: [ 'sh', '-c', 'psql "$@" & p=$!; trap "kill -KILL $p" TERM; wait $p; rc=$?; echo "END $(date +%s.%N)" >&2; exit $rc',
			'sh', @args ],
		'<', '/dev/null', '>', \$c{out}, '2>', \$c{err});
	return \%c;
}

# has the call's psql exited?  Notes when it was first seen so.
sub done
{
	my ($c) = @_;
	return 1 if defined $c->{t_end};
	eval { $c->{h}->pump_nb };
	return 0 if $c->{h}->pumpable;
	$c->{t_end} = time;
	return 1;
}

# waits for the call to end (at most SECONDS, default $DEADLINE), reaps
# it: hung, code, out (chomped), err, t_end
sub finish_call
{
	my ($c, $seconds) = @_;
	return $c if exists $c->{code};
	$c->{hung} = !wait_until($seconds // $DEADLINE, sub { done($c) });
	$c->{t_end} //= time;
	# a call that hung: its psql is killed, so that the test goes on
	$c->{h}->kill_kill(grace => 5) if $c->{hung};
	$c->{hung} = 1 unless eval { $c->{h}->finish; 1 };
	$c->{code} = $c->{hung} ? -1 : $c->{h}->result(0);
	chomp $c->{out};
	$c->{t_end} = $1 if $c->{err} =~ s/^END (\d+\.\d+)\n//m;
	return $c;
}

# what the call answered: its output, or its error, or that it hung
sub answer
{
	my ($c) = @_;
	finish_call($c);
	return 'hung' if $c->{hung};
	return $c->{out} if $c->{code} == 0;
	(my $e = $c->{err}) =~ s/\s+$//;
	return "error: $e";
}

sub call_sync
{
	my $c = start_call(@_);
	finish_call($c);
	$c->{elapsed} = $c->{t_end} - $c->{t0};
	return $c;
}

# a background psql of ROLE on DB that stays connected
sub session
{
	my ($role, $db, $n) = @_;
	my $s = ($n // $node)->background_psql($db // 'shop', on_error_stop => 0,
		extra_params => [ '-U', $role // $SU ]);
	$s->set_query_timer_restart;
	return $s;
}

# runs SQL in session S: (output, error text)
sub in_session
{
	my ($s, $sql) = @_;
	$s->{stderr} = '';
	my $out = $s->query($sql);
	my $err = $s->{stderr};
	$s->{stderr} = '';
	return ($out, $err);
}

# the keys that were told ok or duplicate in shop: each must have its row
my %told;
sub told
{
	my ($key, $sku, $qty, $answer) = @_;
	$told{$key} = [ $sku, $qty ] if defined $answer && ($answer eq 'ok' || $answer eq 'duplicate');
	return $answer;
}

# one reserve_now() of QTY (1) units of SKU (A) under KEY, as app
sub now_call
{
	my ($key, $sku, $qty) = @_;
	$sku //= 'A';
	$qty //= 1;
	return told($key, $sku, $qty, as('app', "SELECT inventory.reserve_now('$sku', $qty, '$key')"));
}

# nothing lost, nothing given back twice
sub nothing_lost
{
	my ($what) = @_;
	my $n = scalar keys %told;
	my $values = join ",\n", map { "('$_', '$told{$_}[0]', $told{$_}[1])" } sort keys %told;
	$values = "(NULL::text, NULL::text, NULL::bigint)" if $n == 0;
	is(as('alice', qq{
SELECT string_agg(k, ' ') FROM (VALUES $values) t(k, s, q)
 WHERE (SELECT count(*) FROM inventory.ledger l
         WHERE l.order_id = t.k AND l.batch_id = 1 AND l.kind = 'reserve' AND l.sku = t.s AND l.qty = t.q) <> 1}),
		'', "$what: each of the $n calls answered ok or duplicate has its reservation in the ledger, once");
	is(as('alice', 'SELECT count(*) FROM inventory.verify()'), '0', "$what: verify() is empty");
	is(as('alice', stock_vs_ledger_sql()), '', "$what: inventory.stock adds up with the ledger");
	is(as('alice', 'SELECT string_agg(sku, \' \') FROM inventory.stock WHERE available <> inventory.available(sku)'),
		'', "$what: available() of every SKU is what inventory.stock says");
}

# the cache's counters of A are the truth (inventory.stock, read from the
# tables), and no hold is left in flight
sub a_is_truth
{
	my ($what) = @_;
	is(as('alice', q{
SELECT (s.on_hand, s.reserved, s.holds, s.available) = (t.on_hand, t.reserved, 0, t.available)
  FROM inventory.sku_stats s JOIN inventory.stock t USING (sku) WHERE sku = 'A'}), 't',
		"$what: the cache's on_hand, reserved and available of A are the tables', no hold is left");
}

# is PID still the process whose command line matched RE?  A pid is
# reused soon on a busy machine, so kill 0 alone could find another
# process; one that is exiting (its command line gone) or not yet reaped
# counts as still there.
sub process_is
{
	my ($pid, $re) = @_;
	return 0 unless kill(0, $pid);
	open my $fh, '<', "/proc/$pid/cmdline" or return 0;
	local $/;
	my $cmd = <$fh> // '';
	close $fh;
	$cmd =~ s/\0+/ /g;
	return $cmd eq '' || $cmd =~ $re;
}
my $WRITER = qr/^postgres: hostile: .*express writer/;

# what the worker's first visit would do after a start: the key filter
# made ready, so that a new key goes to the writer without a lookup
sub after_start
{
	as('alice', 'SELECT inventory.key_filter_rebuild()');
}

# kill -9 of the postmaster, then a start once its children have noticed
# and exited (until then the data directory is in use)
sub crash
{
	my $postmaster = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
	my $datadir = $node->data_dir;
	my @children = split ' ', `pgrep -P $postmaster`;
	$node->kill9;
	wait_until($DEADLINE, sub {
		!process_is($postmaster, qr/\Q$datadir\E/) && !grep { process_is($_, qr/^postgres: hostile: /) } @children })
	  or die 'the processes of the killed server did not exit';
	$node->start;
	after_start();
}

# waits until a writer serves shop (a call starts one, unless a failed
# start holds the database back for a second); returns its pid
my $probe = 0;
sub ensure_writer
{
	my $w = '';
	wait_until($DEADLINE, sub {
		now_call('probe-' . ++$probe);
		$w = writer_pid();
		return $w ne '';
	}) or die 'no writer started in shop';
	return $w;
}

# terminates shop's writer, if any, and waits until it has gone
sub no_writer
{
	my $w = writer_pid();
	return if $w eq '';
	as($SU, "SELECT pg_terminate_backend($w)");
	wait_until($DEADLINE, sub { !process_is($w, $WRITER) && writer_pid() eq '' }) or die "writer $w did not exit";
}

# the end LSN of the commit record of transaction XID, looked for in the
# WAL from FROM up to what is flushed now; '' if it is not there
sub commit_end
{
	my ($xid, $from) = @_;
	return as($SU, qq{
SELECT coalesce(max(end_lsn)::text, '') FROM pg_get_wal_records_info('$from', pg_current_wal_flush_lsn())
 WHERE xid::text = '$xid' AND resource_manager = 'Transaction' AND record_type = 'COMMIT'});
}

# A WAL writer that found nothing to do for 50 rounds hibernates, and then
# the next asynchronous commit wakes it at once (XLogSetAsyncXactLSN) to
# flush it -- here, a flood of express commits that their callers flush
# themselves leaves it idle that often.  E3 and E4 need an asynchronous
# commit to stay unflushed: an asynchronous commit of our own wakes it
# now, and once it has flushed that (it does within wal_writer_delay) it
# does not hibernate again for 50 rounds.
sub wake_walwriter
{
	my $lsn = (split /\n/, as($SU, q{
SET synchronous_commit = off;
SELECT txid_current();
SELECT pg_current_wal_insert_lsn();
}))[-1];
	$node->poll_query_until('postgres', "SELECT pg_current_wal_flush_lsn() >= '$lsn'")
	  or die 'the WAL writer did not flush';
}

sub lsn_le
{
	my ($a, $b) = @_;
	return as($SU, "SELECT '$a'::pg_lsn <= '$b'::pg_lsn") eq 't';
}

# ---- the cluster, its roles and its stock ---------------------------------------

$node->safe_psql('postgres', 'CREATE DATABASE shop');
as($SU, q{
CREATE EXTENSION inventory;
CREATE EXTENSION pg_walinspect;
CREATE ROLE app LOGIN IN ROLE inventory_app;
CREATE ROLE alice LOGIN IN ROLE inventory_admin;
CREATE SCHEMA evil AUTHORIZATION app;
});
as('alice', q{
SELECT inventory.restock('A', 1000000, 'in-A');
SELECT inventory.restock('L', 1000, 'in-L');
SELECT inventory.set_rules('L', 2);
SELECT inventory.restock('U' || g, 1000, 'in-U' || g) FROM generate_series(1, 20) g;
});

# a build with fault injection (make INVENTORY_FAULTS=1, as scripts/test.sh
# builds) has inventory.inject_fault; the double give-back and E3 need it
my $FAULTS = as($SU, q{SELECT count(*) FROM pg_settings WHERE name = 'inventory.inject_fault'}) eq '1';
my $NO_FAULTS = 'needs a build with fault injection (make INVENTORY_FAULTS=1)';

# ==== E5: after a restart, as app, a SKU not in the cache ========================

# app's own operators, planted where its search_path looks first: each
# logs who ran it and tries to make app a superuser
as('app', q{
CREATE TABLE evil.ran (op text, who name);
DO $do$
DECLARE t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['text', 'bigint', 'integer', 'oid', 'name', 'timestamptz', 'boolean'] LOOP
		EXECUTE format($f$
CREATE FUNCTION evil.trap(a %1$s, b %1$s) RETURNS boolean LANGUAGE plpgsql AS $b$
BEGIN
	INSERT INTO evil.ran VALUES ('= %1$s', current_user);
	BEGIN
		EXECUTE 'ALTER ROLE app SUPERUSER';
	EXCEPTION WHEN OTHERS THEN NULL;
	END;
	RETURN a OPERATOR(pg_catalog.=) b;
END $b$$f$, t);
		EXECUTE format('CREATE OPERATOR evil.= (LEFTARG = %1$s, RIGHTARG = %1$s, FUNCTION = evil.trap)', t);
	END LOOP;
END
$do$;
});
$node->restart;
after_start();
{
	my $s = session('app');
	my ($out, $err) = in_session($s, q{SET search_path = evil, pg_catalog; SELECT 'x'::text = 'x'::text});
	is($out, 't', 'E5: the trap is armed: app\'s own = on text runs first in its search_path');
	in_session($s, 'DELETE FROM evil.ran');
	is(as('alice', q{SELECT count(*) FROM inventory.sku_stats WHERE sku = 'U1'}), '0',
		'E5: after a restart, U1 is not in the cache');
	($out, $err) = in_session($s, q{SELECT inventory.reserve_now('U1', 1, 'e5-1')});
	is(told('e5-1', 'U1', 1, $out) . $err, 'ok',
		'E5: reserve_now() as app of a SKU not in the cache is ok (the cache is loaded as the owner)');
	($out, $err) = in_session($s, q{SELECT inventory.reserve_now('U1', 1, 'e5-1')});
	is(told('e5-1', 'U1', 1, $out) . $err, 'duplicate', 'E5: called again, its key is a duplicate');
	($out, $err) = in_session($s, q{SELECT (inventory.confirm('e5-2')).status, inventory.reserve_now('U2', 1, 'e5-2')});
	is($out . $err, 'not_found|ok', 'E5: a call reserved in its own transaction (E1) is ok too');
	told('e5-2', 'U2', 1, 'ok') if $out eq 'not_found|ok';
	is(as('app', q{SELECT count(*) FROM evil.ran}), '0',
		'E5: none of app\'s operators ran inside reserve_now(), whatever its search_path')
	  or diag(as('app', q{SELECT string_agg(op || ' by ' || who, ', ') FROM evil.ran}));
	is(as($SU, q{SELECT rolsuper FROM pg_roles WHERE rolname = 'app'}), 'f', 'E5: app is no superuser');
	like(err_of('app', 'SELECT count(*) FROM inventory.ledger'), qr/permission denied for table ledger/,
		'E5: app still cannot read the ledger');
	like(err_of('app', 'SELECT count(*) FROM inventory.restore_state'), qr/permission denied/,
		'E5: nor inventory.restore_state');
	SKIP:
	{
		skip $NO_FAULTS, 1 unless $FAULTS;
		like(err_of('app', q{SET inventory.inject_fault = 'express-flush'}), qr/permission denied to set parameter/,
			'E5: nor set inventory.inject_fault');
	}
	$s->quit;
}

# an 8-client pgbench as app right after a crash: every SKU it calls is
# out of the cache
crash();
{
	my $dir = PostgreSQL::Test::Utils::tempdir;
	open my $fh, '>', "$dir/now.sql" or die;
	print $fh q{\set s random(3, 20)
\set k random(1, 1000000000)
SELECT inventory.reserve_now('U' || :s, 1, 'pgb-' || :client_id || '-' || :k);
};
	close $fh;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(
		[ 'pgbench', '-n', '-c', '8', '-j', '2', '-t', '50', '-f', "$dir/now.sql",
		  '-h', $node->host, '-p', $node->port, '-U', 'app', 'shop' ],
		'>', \$out, '2>', \$err, IPC::Run::timeout($DEADLINE * 3));
	ok($ok, 'E5: pgbench of reserve_now() as app, 8 clients, right after a crash: exit status 0')
	  or diag($err);
	like($out, qr{number of transactions actually processed: 400/400}, 'E5: all 400 calls were made');
	unlike($err, qr/aborted|ERROR/, 'E5: no client aborted, no call failed');
}
nothing_lost('E5');

# ==== E1: the caller's own statement holds what the writer finds busy ==========

# a) the key's lock, taken by confirm() of the key in the same statement
{
	my $fb = fallbacks();
	my $c = call_sync('app', 'e1-key', qq{
SET statement_timeout = '${TIMEOUT}s';
SELECT (inventory.confirm('e1-key')).status, inventory.reserve_now('A', 1, 'e1-key');
});
	is(answer($c), 'not_found|ok', 'E1 key: confirm() and reserve_now() of one key in one statement: not_found, then ok');
	told('e1-key', 'A', 1, 'ok') if answer($c) eq 'not_found|ok';
	cmp_ok($c->{elapsed}, '<', $TIMEOUT, sprintf('E1 key: answered in %.2f s, before its statement_timeout', $c->{elapsed}));
	is(fallbacks() - $fb, 1, "E1 key: reserved in the caller's own transaction (express_fallbacks() counts it)");
}

# b) the buyer's lock, taken by a refused reserve_many() in the same statement
{
	my $fb = fallbacks();
	my $c = call_sync('app', 'e1-buyer', qq{
SET statement_timeout = '${TIMEOUT}s';
SELECT (SELECT string_agg(status, ',') FROM inventory.reserve_many('{L}', '{5}', '{e1-buyer-many}', NULL, '{bob}')),
       inventory.reserve_now('L', 1, 'e1-buyer', 1, NULL, 'bob');
});
	is(answer($c), 'limit_exceeded|ok',
		'E1 buyer: a refused reserve_many() for bob, then reserve_now() for bob, in one statement: limit_exceeded, then ok');
	told('e1-buyer', 'L', 1, 'ok') if answer($c) eq 'limit_exceeded|ok';
	cmp_ok($c->{elapsed}, '<', $TIMEOUT, sprintf('E1 buyer: answered in %.2f s, before its statement_timeout', $c->{elapsed}));
	is(fallbacks() - $fb, 1, "E1 buyer: reserved in the caller's own transaction");
	is(as('app', q{SELECT inventory.reserve_now('L', 2, 'e1-buyer-2', 1, NULL, 'bob')}), 'limit_exceeded',
		"E1 buyer: bob's limit of 2 still holds (he has 1): 2 more are refused");
}

# c) a LOCK TABLE ... ACCESS EXCLUSIVE that queues behind the caller's own
# statement, which read inventory.stock: the statement waits at an
# advisory lock (the gate) until the LOCK has queued, then calls
{
	my $gate = session($SU);
	in_session($gate, 'SELECT pg_advisory_lock(4242)');
	my $fb = fallbacks();
	my $caller = start_call('app', 'e1-ddl-caller', qq{
SET statement_timeout = '${TIMEOUT}s';
SELECT pg_advisory_xact_lock(4242), inventory.reserve_now('A', 1, 'e1-ddl'), (SELECT count(*) FROM inventory.stock) > 0;
});
	wait_until($DEADLINE, sub { wait_of('e1-ddl-caller') eq 'Lock:advisory' }) or die 'the caller did not reach the gate';
	my $lock = start_call('alice', 'e1-ddl-lock', q{
BEGIN;
LOCK TABLE inventory.ledger IN ACCESS EXCLUSIVE MODE;
SELECT 'granted';
COMMIT;
});
	wait_until($DEADLINE, sub { wait_of('e1-ddl-lock') eq 'Lock:relation' }) or die 'the LOCK did not queue';
	my $cpid = pid_of('e1-ddl-caller');
	is($node->safe_psql('postgres', qq{
SELECT $cpid = ANY (pg_blocking_pids(pid)) FROM pg_stat_activity WHERE application_name = 'e1-ddl-lock'}), 't',
		"E1 DDL: alice's LOCK TABLE inventory.ledger IN ACCESS EXCLUSIVE MODE queues behind the caller's statement");
	my $t_open = time;
	in_session($gate, 'SELECT pg_advisory_unlock(4242)');
	is(answer($caller), '|ok|t', 'E1 DDL: the gate open, the caller calls reserve_now(): ok');
	told('e1-ddl', 'A', 1, 'ok') if answer($caller) eq '|ok|t';
	cmp_ok($caller->{t_end} - $t_open, '<', $BOUND,
		sprintf('E1 DDL: within %.2f s of the gate', $caller->{t_end} - $t_open));
	is(answer($lock), 'granted', 'E1 DDL: then the LOCK is granted: the DDL does not starve');
	cmp_ok($lock->{t_end} - $t_open, '<', $BOUND, sprintf('E1 DDL: within %.2f s of the gate', $lock->{t_end} - $t_open));
	is(fallbacks() - $fb, 1, "E1 DDL: the call was reserved in the caller's own transaction");

	# d) the same DDL queued behind another session: it goes first, and
	# callers wait behind it in their own backends
	my $reader = session($SU);
	in_session($reader, 'BEGIN; SELECT count(*) FROM inventory.ledger');
	$lock = start_call('alice', 'e1-ddl2-lock', q{
BEGIN;
LOCK TABLE inventory.ledger IN ACCESS EXCLUSIVE MODE;
SELECT 'granted';
COMMIT;
});
	wait_until($DEADLINE, sub { wait_of('e1-ddl2-lock') eq 'Lock:relation' }) or die 'the LOCK did not queue';
	my $short = start_call('app', 'e1-ddl2-short', q{
SET statement_timeout = '2s';
SELECT inventory.reserve_now('A', 1, 'e1-ddl2-a');
});
	my $patient = start_call('app', 'e1-ddl2-patient', q{SELECT inventory.reserve_now('A', 1, 'e1-ddl2-b');});
	ok(wait_until($DEADLINE, sub { wait_of('e1-ddl2-patient') eq 'Lock:relation' }),
		'E1 DDL behind another session: a caller waits in its own backend, behind the DDL');
	like(answer($short), qr/canceling statement due to statement timeout/,
		'E1 DDL behind another session: a caller with statement_timeout = 2s ends with it');
	cmp_ok($short->{t_end} - $short->{t0}, '<', 2 + $BOUND,
		sprintf('E1 DDL behind another session: after %.2f s', $short->{t_end} - $short->{t0}));
	in_session($reader, 'COMMIT');
	is(answer($lock), 'granted', 'E1 DDL behind another session: once that session ends, the LOCK is granted');
	is(told('e1-ddl2-b', 'A', 1, answer($patient)), 'ok', 'E1 DDL behind another session: then the waiting caller is ok');
	$reader->quit;

	# e) two callers, each holding the key the other reserves: PostgreSQL's
	# deadlock detector sees their waits; one fails, the other is ok
	in_session($gate, 'SELECT pg_advisory_lock(4343)');
	my %dl;
	for my $p ([ 'x', 'y' ], [ 'y', 'x' ])
	{
		$dl{ $p->[0] } = start_call('app', "e1-dl-$p->[0]", qq{
SET statement_timeout = '${TIMEOUT}s';
SELECT (inventory.confirm('e1-dl-$p->[0]')).status, pg_advisory_xact_lock_shared(4343),
       inventory.reserve_now('A', 1, 'e1-dl-$p->[1]');
});
	}
	wait_until($DEADLINE, sub { wait_of('e1-dl-x') eq 'Lock:advisory' && wait_of('e1-dl-y') eq 'Lock:advisory' })
	  or die 'the two callers did not reach the gate';
	$t_open = time;
	in_session($gate, 'SELECT pg_advisory_unlock(4343)');
	my @answers = sort map { answer($dl{$_}) =~ /deadlock detected/ ? 'deadlock' : answer($dl{$_}) } 'x', 'y';
	is("@answers", 'deadlock not_found||ok', 'E1 deadlock: two callers holding each other\'s keys: one deadlock error, one ok');
	cmp_ok(max(map { $dl{$_}{t_end} } 'x', 'y') - $t_open, '<', 1 + $BOUND,
		'E1 deadlock: both end within deadlock_timeout (1 s) and the bound');
	for my $p ([ 'x', 'y' ], [ 'y', 'x' ])
	{
		told("e1-dl-$p->[1]", 'A', 1, 'ok') if answer($dl{ $p->[0] }) eq 'not_found||ok';
	}
	is(as('alice', q{SELECT count(*) FROM inventory.ledger WHERE order_id IN ('e1-dl-x', 'e1-dl-y')}), '1',
		'E1 deadlock: one row, the survivor\'s');
	$gate->quit;
}
nothing_lost('E1');

# ==== E2: alice's hand INSERT of a key, idle in transaction ======================
# The writer finds an INSERT made before it looks by a dirty read of the
# key's index and sends the item back at once; the unique check's wait,
# now bounded by the writer's lock_timeout, is reached only by an INSERT
# that lands between that read and the writer's own insert -- a window of
# microseconds that this test does not try to hit.  What a caller sees is
# the same either way: it waits in its own backend.
{
	my $hand = session('alice');
	my ($out, $err) = in_session($hand, q{BEGIN;
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty) VALUES ('e2-key', 1, 'reserve', 'A', 1)});
	die "hand INSERT: $err" if $err ne '';

	my %c;
	$c{timeout}   = start_call('app', 'e2-timeout', q{SET statement_timeout = '3s'; SELECT inventory.reserve_now('A', 1, 'e2-key');});
	$c{cancel}    = start_call('app', 'e2-cancel', q{SELECT inventory.reserve_now('A', 1, 'e2-key');});
	$c{terminate} = start_call('app', 'e2-terminate', q{SELECT inventory.reserve_now('A', 1, 'e2-key');});
	$c{dropped}   = start_call('app', 'e2-dropped',
		q{SET client_connection_check_interval = '500ms'; SELECT inventory.reserve_now('A', 1, 'e2-key');},
		'shop', $node, 1);
	# the first of them waits for alice's transaction holding the key's
	# lock, the others for that lock
	for my $w ('cancel', 'terminate', 'dropped')
	{
		my $event = '';
		ok(wait_until($DEADLINE, sub { ($event = wait_of("e2-$w")) =~ /^Lock:(transactionid|object)$/ }),
			"E2: caller e2-$w of the key waits in its own backend, for a lock ($event)");
	}

	my $fb = fallbacks();
	my $slowest = 0;
	my @others;
	for my $i (1 .. 5)
	{
		my $t = time;
		push @others, now_call("e2-other-$i");
		$slowest = max($slowest, time - $t);
	}
	is("@others", 'ok ok ok ok ok', 'E2: meanwhile callers of other keys are ok');
	is(fallbacks() - $fb, 0, 'E2: written by the writer, not in their own transactions');
	cmp_ok($slowest, '<', $BOUND, sprintf('E2: the slowest in %.2f s', $slowest));

	like(answer($c{timeout}), qr/canceling statement due to statement timeout/,
		'E2: the caller with statement_timeout = 3s ends with it');
	my $took = $c{timeout}{t_end} - $c{timeout}{t0};
	cmp_ok($took, '<', 3 + $BOUND, sprintf('E2: after %.2f s', $took));

	my $pid = pid_of('e2-cancel');
	my $t = time;
	as($SU, "SELECT pg_cancel_backend($pid)");
	like(answer($c{cancel}), qr/canceling statement due to user request/, 'E2: pg_cancel_backend() ends a waiting caller');
	cmp_ok($c{cancel}{t_end} - $t, '<', $BOUND, sprintf('E2: in %.2f s', $c{cancel}{t_end} - $t));

	$pid = pid_of('e2-terminate');
	$t = time;
	as($SU, "SELECT pg_terminate_backend($pid)");
	like(answer($c{terminate}), qr/terminating connection due to administrator command/,
		'E2: pg_terminate_backend() ends a waiting caller');
	ok(wait_until($BOUND, sub { !backend_alive($pid) }), 'E2: its backend has exited');
	cmp_ok(time - $t, '<', $BOUND, sprintf('E2: in %.2f s', time - $t));

	# the client's psql is killed: with client_connection_check_interval
	# the backend notices while it waits
	$pid = pid_of('e2-dropped');
	$t = time;
	$c{dropped}{h}->signal('KILL');
	ok(wait_until(0.5 + $BOUND, sub { !backend_alive($pid) }),
		'E2: a caller whose client went away ends (client_connection_check_interval = 500ms)');
	note(sprintf('the dropped client\'s backend ended in %.2f s', time - $t));
	finish_call($c{dropped});

	# the writer, terminated by the operator, ends; the next call starts
	# another.  app may not: the writer runs as the bootstrap superuser.
	my $w = writer_pid();
	like(err_of('app', "SELECT pg_terminate_backend($w)"), qr/must be a superuser|permission denied/,
		'E2: app may not terminate the writer');
	like(err_of('app', 'SELECT * FROM inventory.express_status'), qr/permission denied/,
		'E2: nor read inventory.express_status');
	$t = time;
	is(as($SU, "SELECT pg_terminate_backend($w)"), 't', "E2: pg_terminate_backend() of the writer (pid from express_status)");
	ok(wait_until($BOUND, sub { !process_is($w, $WRITER) }), sprintf('E2: the writer has exited (%.2f s)', time - $t));
	is(now_call('e2-after'), 'ok', 'E2: the next call of another key is ok');
	my $w2 = writer_pid();
	ok($w2 ne '' && $w2 ne $w, 'E2: written by a new writer');

	in_session($hand, 'ROLLBACK');
	is(now_call('e2-key'), 'ok', "E2: once alice's INSERT is rolled back, the key is ok");

	# the same with a buyer's lock: alice's hand INSERT of a reservation of
	# L for carol (its trigger takes carol's lock) left open
	($out, $err) = in_session($hand, q{BEGIN;
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, buyer_id) VALUES ('e2-hand-carol', 1, 'reserve', 'L', 1, 'carol')});
	die "hand INSERT: $err" if $err ne '';
	my $cb = start_call('app', 'e2-carol', q{SET statement_timeout = '2s'; SELECT inventory.reserve_now('L', 1, 'e2-carol', 1, NULL, 'carol');});
	$t = time;
	is(told('e2-dave', 'L', 1, as('app', q{SELECT inventory.reserve_now('L', 1, 'e2-dave', 1, NULL, 'dave')})), 'ok',
		'E2 buyer: another buyer of L is ok meanwhile');
	cmp_ok(time - $t, '<', $BOUND, sprintf('E2 buyer: in %.2f s', time - $t));
	like(answer($cb), qr/canceling statement due to statement timeout/,
		"E2 buyer: a call for carol, whose lock alice's INSERT holds, ends at its statement_timeout of 2s");
	cmp_ok($cb->{t_end} - $cb->{t0}, '<', 2 + $BOUND, sprintf('E2 buyer: after %.2f s', $cb->{t_end} - $cb->{t0}));
	in_session($hand, 'ROLLBACK');
	is(told('e2-carol', 'L', 1, as('app', q{SELECT inventory.reserve_now('L', 1, 'e2-carol', 1, NULL, 'carol')})), 'ok',
		'E2 buyer: once it is rolled back, carol\'s call is ok');
	$hand->quit;
}
nothing_lost('E2');

# ==== E2, its window: a hand INSERT between the writer's read and its insert =======
# The writer parks (inventory.inject_fault 'express-writer-before-insert')
# after its dirty read of the key's index found nothing in flight; alice
# inserts the key by hand and leaves her transaction open; released, the
# writer's insert meets her row in the unique check.  Its lock_timeout
# ends that wait: the item goes back to its caller, which waits for
# alice in its own backend, cancellably, while the writer serves the
# other keys.  Without the bound, the writer waited for alice, and every
# express caller of the database with it.
SKIP:
{
	skip $NO_FAULTS, 1 unless $FAULTS;
	fault_functions($node, 'shop');
	my $parked = sub { as($SU, 'SELECT test_fault.parked()') eq '1' };
	ensure_writer();
	my $w = writer_pid();
	as($SU, q{ALTER SYSTEM SET inventory.inject_fault = 'express-writer-before-insert'; SELECT pg_reload_conf()});
	# a call the writer answers before it has read the setting is let be
	my ($c, $key, $n) = (undef, undef, 0);
	ok(wait_until($DEADLINE, sub {
		$key = 'e2w-' . ++$n;
		$c = start_call('app', $key, "SELECT inventory.reserve_now('A', 1, '$key');");
		wait_until($DEADLINE, sub { $parked->() || done($c) });
		return 1 if $parked->();
		told($key, 'A', 1, answer($c));
		return 0;
	}), 'E2 window: the writer parks between its read of the key index and its insert');

	my $hand = session('alice');
	my (undef, $err) = in_session($hand, qq{BEGIN;
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty) VALUES ('$key', 1, 'reserve', 'A', 1)});
	die "hand INSERT: $err" if $err ne '';
	as($SU, q{ALTER SYSTEM RESET inventory.inject_fault; SELECT pg_reload_conf()});
	as($SU, 'SELECT test_fault.release()');

	my $event = '';
	ok(wait_until($DEADLINE, sub { ($event = wait_of($key)) eq 'Lock:transactionid' }),
		"E2 window: released, the caller waits for alice's transaction in its own backend ($event)");
	my $fb = fallbacks();
	my $t = time;
	is(now_call('e2w-other'), 'ok', 'E2 window: meanwhile a caller of another key is ok');
	cmp_ok(time - $t, '<', $BOUND, sprintf('E2 window: in %.2f s', time - $t));
	is(fallbacks() - $fb, 0, 'E2 window: written by the writer, not in its own transaction');
	is(writer_pid(), $w, 'E2 window: by the same writer, which never waited for alice');

	my $pid = pid_of($key);
	$t = time;
	as($SU, "SELECT pg_cancel_backend($pid)");
	like(answer($c), qr/canceling statement due to user request/, "E2 window: pg_cancel_backend() ends the caller waiting for alice");
	cmp_ok($c->{t_end} - $t, '<', $BOUND, sprintf('E2 window: in %.2f s', $c->{t_end} - $t));
	in_session($hand, 'ROLLBACK');
	$hand->quit;
	is(now_call($key), 'ok', "E2 window: once alice's INSERT is rolled back, the key is ok");
	as($SU, 'DROP SCHEMA test_fault CASCADE');
}
nothing_lost('E2 window');

# ==== the caller's hold given back twice: faults injected ==========================
SKIP:
{
	skip $NO_FAULTS, 1 unless $FAULTS;
	{
		my $su = session($SU);
		for my $round (1 .. 3)
		{
			# the batch's first caller fails at its flush: its row was written
			ensure_writer();
			my $key = "gb-flush-$round";
			in_session($su, q{SET inventory.inject_fault = 'express-flush'});
			my ($out, $err) = in_session($su, "SELECT inventory.reserve_now('A', 1, '$key')");
			in_session($su, 'RESET inventory.inject_fault');
			like($err, qr/fault injected at "express-flush"/, "express-flush $round: the caller gets the injected error");
			is(as('alice', 'SELECT count(*) FROM inventory.verify()'), '0', "express-flush $round: verify() is empty");
			a_is_truth("express-flush $round");
			is(now_call($key), 'duplicate', "express-flush $round: its row was committed: the key called again is a duplicate");
		}
		for my $round (1 .. 3)
		{
			# the caller fails right after it started the writer: one may
			# start now (no failed start holds the database back), and none
			# runs
			ensure_writer();
			no_writer();
			my $key = "gb-start-$round";
			in_session($su, q{SET inventory.inject_fault = 'express-after-start'});
			my ($out, $err) = in_session($su, "SELECT inventory.reserve_now('A', 1, '$key')");
			in_session($su, 'RESET inventory.inject_fault');
			like($err, qr/fault injected at "express-after-start"/,
				"express-after-start $round: the caller that started the writer gets the injected error");
			# the caller waits for the writer it started to answer (HandOver()'s
			# "started", read after the error, is volatile since 14018b9)
			my $rows = as('alice', "SELECT count(*) FROM inventory.ledger WHERE order_id = '$key'");
			is($rows, '1', "express-after-start $round: the writer it started wrote the item");
			is(as('alice', 'SELECT count(*) FROM inventory.verify()'), '0', "express-after-start $round: verify() is empty");
			a_is_truth("express-after-start $round");
			is(now_call($key), $rows eq '1' ? 'duplicate' : 'ok',
				"express-after-start $round: the key called again is " . ($rows eq '1' ? 'a duplicate' : 'ok') . " ($rows row)");
		}
		$su->quit;
	}
	nothing_lost('double give-back');
}

# ==== E7: an idle writer and DROP DATABASE of another database ====================
{
	$node->safe_psql('postgres', 'CREATE DATABASE other OWNER alice');
	$node->safe_psql('postgres', 'CREATE DATABASE other2 OWNER alice');
	$node->safe_psql('other2', 'CREATE EXTENSION inventory');
	as('alice', q{SELECT status FROM inventory.restock('A', 100, 'in-A')}, 'other2');
	is(as('app', q{SELECT inventory.reserve_now('A', 1, 'e7-other2')}, 'other2'), 'ok', 'E7: a call in other2');
	my $w2 = as('alice', q{SELECT writer_pid FROM inventory.express_status WHERE datname = 'other2'}, 'other2');
	like($w2, qr/^\d+$/, 'E7: other2 has a writer of its own');
	# a call in shop just now: its writer would idle out only 60 s from now
	my $w = ensure_writer();
	is(now_call('e7-shop'), 'ok', 'E7: a call in shop');
	is(writer_pid(), $w, 'E7: shop has its writer, idle from now on');

	# A writer deaf to the ProcSignalBarrier that DROP DATABASE waits for
	# held the drop until it left, after express_idle_timeout (60 s) without
	# a call -- and the call just made restarted that wait.  A drop under
	# 30 s, half of it, cannot have waited for the writer to idle out, and
	# leaves a loaded machine 30 s for the drop's own checkpoint.
	my $t = time;
	as('alice', 'DROP DATABASE other', 'postgres');
	my $took = time - $t;
	cmp_ok($took, '<', 30, sprintf("E7: alice's DROP DATABASE other took %.2f s, under 30 s (idle timeout 60 s)", $took));
	is(writer_pid(), $w, "E7: shop's writer absorbed the barrier and stays");

	$t = time;
	as('alice', 'DROP DATABASE other2', 'postgres');
	$took = time - $t;
	cmp_ok($took, '<', 30, sprintf('E7: DROP DATABASE other2, whose writer idles, took %.2f s', $took));
	ok(!process_is($w2, $WRITER), "E7: other2's writer has gone");
	is(writer_pid(), $w, "E7: shop's writer still serves shop");
	is(now_call('e7-shop-2'), 'ok', 'E7: and its next call is ok');
}

# ==== E6: a database whose writer cannot start, and statements that pause it =====
{
	# ALLOW_CONNECTIONS false, with app's session connected before
	no_writer();
	my $s = session('app');
	my $adm = session('alice');    # no new connection to shop from here on
	my $fb = fallbacks();
	$node->safe_psql('postgres', 'ALTER DATABASE shop ALLOW_CONNECTIONS false');
	my $log_from = -s $node->logfile;
	my (@answers, $n);
	my $t0 = time;
	while (time - $t0 < 4)
	{
		$n++;
		my ($out, $err) = in_session($s, "SELECT inventory.reserve_now('A', 1, 'e6-$n')");
		push @answers, told("e6-$n", 'A', 1, $out) . $err;
	}
	my $span = time - $t0;
	is(join(' ', grep { $_ ne 'ok' } @answers), '',
		sprintf('E6: ALLOW_CONNECTIONS false: the %d calls of a session still connected, over %.1f s, are ok', $n, $span));
	my @failed = slurp_file($node->logfile, $log_from) =~ /FATAL:\s+database "shop" is not currently accepting connections/g;
	# one attempt, then none for a second after each failure
	# (EXPRESS_START_RETRY_MS): at most one per second begun, plus one
	cmp_ok(scalar(@failed), '>=', 1, 'E6: a writer tried to start and could not connect');
	cmp_ok(scalar(@failed), '<=', int($span) + 2,
		sprintf('E6: %d writer start failures in %.1f s: at most one a second', scalar(@failed), $span));
	cmp_ok((in_session($adm, 'SELECT inventory.express_fallbacks()'))[0] - $fb, '>=', $n - scalar(@failed),
		'E6: the calls were reserved in their own transactions');
	$adm->quit;
	$node->safe_psql('postgres', 'ALTER DATABASE shop ALLOW_CONNECTIONS true');
	ok(wait_until($DEADLINE, sub {
		$n++;
		my ($out) = in_session($s, "SELECT inventory.reserve_now('A', 1, 'e6-$n')");
		told("e6-$n", 'A', 1, $out);
		return writer_pid() ne '';
	}), 'E6: connections allowed again, a writer serves shop again');

	# ALTER DATABASE shop RENAME by app, who has no right to: refused, it
	# disturbs nothing
	my $w = writer_pid();
	$fb = fallbacks();
	my @refused;
	for my $i (1 .. 5)
	{
		push @refused, err_of('app', 'ALTER DATABASE shop RENAME TO shop_stolen', 'postgres');
		is(now_call("e6-rename-app-$i"), 'ok', "E6 RENAME by app $i: the next call is ok");
	}
	is(scalar(grep { /must be owner of database shop/ } @refused), 5, 'E6 RENAME by app: refused five times');
	is(writer_pid(), $w, 'E6 RENAME by app: the writer was not sent away');
	is(fallbacks() - $fb, 0, 'E6 RENAME by app: no call reserved in its own transaction');

	# the superuser, who owns shop, renames it while app is connected: the
	# RENAME pauses shop and waits (5 s, PostgreSQL's CountOtherDBBackends)
	# for sessions that will not go, then fails.  Calls meanwhile answer in
	# their own transactions, at once; a call that waited for a writer
	# connecting to shop would wait for the RENAME to end.
	my $rename = start_call($SU, 'e6-rename', 'ALTER DATABASE shop RENAME TO shop_renamed', 'postgres');
	ok(wait_until($DEADLINE, sub {
		$node->safe_psql('postgres', q{
SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'inventory express writer' AND datname = 'shop'}) eq '0' }),
		'E6 RENAME by the owner: it sends the writer away');
	my (@during, $slow);
	$slow = 0;
	while (!done($rename) && @during < 20)
	{
		$n++;
		my $t = time;
		my ($out, $err) = in_session($s, "SELECT inventory.reserve_now('A', 1, 'e6-$n')");
		$slow = max($slow, time - $t);
		push @during, told("e6-$n", 'A', 1, $out) . $err if !done($rename);
	}
	cmp_ok(scalar(@during), '>=', 3, sprintf('E6 RENAME by the owner: %d calls answered while it waited', scalar(@during)));
	is(join(' ', grep { $_ ne 'ok' } @during), '', 'E6 RENAME by the owner: all ok');
	cmp_ok($slow, '<', 2.5, sprintf('E6 RENAME by the owner: the slowest in %.2f s, under half its 5 s wait', $slow));
	like(answer($rename), qr/database "shop" is being accessed by other users/,
		'E6 RENAME by the owner: it fails, shop being in use');
	ok(wait_until($DEADLINE, sub {
		$n++;
		my ($out) = in_session($s, "SELECT inventory.reserve_now('A', 1, 'e6-$n')");
		told("e6-$n", 'A', 1, $out);
		return writer_pid() ne '';
	}), 'E6 RENAME by the owner: once it failed, a writer serves shop again');
	$s->quit;
}
nothing_lost('E6 and E7');

# ==== E3: answers read from a row the writer has committed, not yet flushed ====
SKIP:
{
	skip $NO_FAULTS, 1 unless $FAULTS;

	# the writer pauses 3 s after each commit, before it answers its callers;
	# a writer started from now on reads the setting when it starts
	as($SU, q{ALTER SYSTEM SET inventory.inject_fault = 'express-writer-after-commit'; SELECT pg_reload_conf()});

	# waits until the server log, from byte FROM on, says the writer pauses
	my $writer_paused_since = sub {
		my ($from) = @_;
		wait_until($DEADLINE, sub {
			slurp_file($node->logfile, $from) =~ /fault injected at "express-writer-after-commit": pausing/ })
		  or die 'the writer did not pause';
	};

	# first, callers asleep in a batch that takes 3 s (the pause,
	# FAULT_PAUSE_MS): a cancel or a terminate takes effect once the batch is
	# answered -- within the pause and the bound
	for my $how ('cancel', 'terminate')
	{
		ensure_writer();
		now_call("e3-$how-warm");
		my $log_from = -s $node->logfile;
		my $c = start_call('app', "e3-$how", "SELECT inventory.reserve_now('A', 1, 'e3-$how');");
		$writer_paused_since->($log_from);
		is(wait_of("e3-$how"), 'Extension:Extension', "batch of 3 s: the caller sleeps until its batch is answered ($how)");
		my $pid = pid_of("e3-$how");
		my $t = time;
		as($SU, "SELECT pg_${how}_backend($pid)");
		my $answer = answer($c);
		like($answer, $how eq 'cancel' ? qr/^ok$|canceling statement due to user request/
			: qr/^ok$|terminating connection due to administrator command/,
			"batch of 3 s: pg_${how}_backend() of the sleeping caller: ok (its batch answered first) or the $how");
		cmp_ok($c->{t_end} - $t, '<', 3 + $BOUND, sprintf("batch of 3 s: the caller ended %.2f s after the $how", $c->{t_end} - $t));
		told("e3-$how", 'A', 1, $answer);
		is(now_call("e3-$how"), 'duplicate', "batch of 3 s: the key of the caller that got the $how is written: duplicate");
	}
	a_is_truth('batch of 3 s, callers cancelled and terminated');

	# A reserve_now() of a key, whose batch the writer has committed (with
	# synchronous_commit off) and pauses on, its caller asleep: READ(key) is
	# run in the pause and returns the WAL flushed before it read, what it
	# was told, and the WAL flushed when it was told; with CRASH, kill -9 of
	# the postmaster right after.  Then the commit of the row is looked up.
	# The check proves something only if the row was not flushed before READ
	# read it -- the WAL writer's round (every 10 s) may have flushed it
	# first: then again, with a new key, up to three times.
	my $paused_read = sub {
		my ($name, $read, $crash) = @_;
		my %r;
		for my $attempt (1 .. 3)
		{
			my $key = "$name-$attempt";
			# a writer that has written a batch and idled since: the pause (a
			# WaitLatch) returns at once if the writer's latch is already set,
			# as it may be in a new writer's first batch
			ensure_writer();
			now_call("$name-warm-$attempt");
			wake_walwriter();
			my $from = as($SU, 'SELECT pg_current_wal_insert_lsn()');
			my $log_from = -s $node->logfile;
			my $s1 = start_call('app', "$name-caller-$attempt", "SELECT inventory.reserve_now('A', 1, '$key');");
			$writer_paused_since->($log_from);
			%r = (key => $key);
			@r{qw(before told after)} = $read->($key);
			$r{s1_done} = done($s1);
			crash() if $crash;
			$r{s1} = answer($s1);
			told($key, 'A', 1, $r{s1});
			$r{state} = as('alice', "SELECT state FROM inventory.ledger WHERE order_id = '$key'");
			my $xmin = as('alice', "SELECT xmin FROM inventory.ledger WHERE order_id = '$key'");
			$r{end} = $xmin eq '' ? '' : commit_end($xmin, $from);
			last if $r{end} eq '' || !lsn_le($r{end}, $r{before});
			note("$name, attempt $attempt: the commit was flushed before the read began; again");
		}
		return \%r;
	};

	# a reserve() of the key: duplicate, and a kill -9 right after
	my $r = $paused_read->('e3-dup', sub {
		my ($key) = @_;
		my ($before, $status, $after) = split /\|/, as('app', qq{
SELECT pg_current_wal_flush_lsn(), (inventory.reserve('A', 1, '$key')).status, pg_current_wal_flush_lsn()});
		told($key, 'A', 1, $status);
		return ($before, $status, $after);
	}, 1);
	my ($before, $after, $end) = @$r{qw(before after end)};
	is($r->{told}, 'duplicate', 'E3: a reserve() of the key while the writer pauses after its commit: duplicate');
	ok(!$r->{s1_done}, 'E3: the reserve_now() caller had no answer yet (nor had it flushed its batch)');
	is($r->{state}, 'PENDING', 'E3: after kill -9 of the postmaster right after the duplicate, the row is there');
	isnt($end, '', 'E3: its commit record is in the WAL');
	ok($end ne '' && !lsn_le($end, $before), "E3: it was not flushed when the reserve() began ($before < $end)");
	ok($end ne '' && lsn_le($end, $after), "E3: it was flushed when the reserve() answered duplicate ($after >= $end)");
	# the writer, exiting as the postmaster died, answers its committed
	# batch, whose first caller flushes it: ok, or no answer
	like($r->{s1}, qr/^ok$|server closed the connection unexpectedly|connection to server was lost/,
		'E3: the reserve_now() caller got ok (flushed) or lost its connection, no error');
	is(now_call($r->{key}), 'duplicate', 'E3: its key called again is a duplicate');

	# a reserve() of the key for another quantity: the key's reuse, an
	# error read from the row as well
	$r = $paused_read->('e3-reuse', sub {
		my ($key) = @_;
		my $c = call_sync('app', "$key-reuse", qq{
\\set ON_ERROR_STOP off
SELECT pg_current_wal_flush_lsn() AS before_reuse \\gset
SELECT (inventory.reserve('A', 2, '$key')).status;
SELECT :'before_reuse', pg_current_wal_flush_lsn();
});
		my ($b, $a) = split /\|/, $c->{out};
		return ($b, $c->{err}, $a);
	}, 0);
	($before, $after, $end) = @$r{qw(before after end)};
	like($r->{told}, qr/ERROR:  key \(order_id, batch_id\)=\(e3-reuse-\d, 1\) is already used by another movement/,
		'E3 reuse: a reserve() of the key for 2 units while the writer pauses: the key is taken (23505)');
	ok(!$r->{s1_done}, 'E3 reuse: the reserve_now() caller had no answer yet');
	ok($end ne '' && !lsn_le($end, $before), "E3 reuse: the row was not flushed when that reserve() began ($before < $end)");
	ok($end ne '' && lsn_le($end, $after), "E3 reuse: it was flushed when the error was raised ($after >= $end)");
	is($r->{s1}, 'ok', 'E3 reuse: the reserve_now() caller, once the pause is over, is ok');
	as($SU, q{ALTER SYSTEM RESET inventory.inject_fault; SELECT pg_reload_conf()});
	nothing_lost('E3, after kill -9');
}

# ==== E4: app's synchronous_commit = off, and a call reserved in its own transaction =====

as($SU, 'ALTER ROLE app SET synchronous_commit = off');

# a) E1's fallback, writers running: flushed when it answers
wake_walwriter();
{
	my $c = call_sync('app', 'e4-fallback', q{
SELECT current_setting('synchronous_commit'), pg_current_wal_flush_lsn(), (inventory.confirm('e4-fallback')).status,
       inventory.reserve_now('A', 1, 'e4-fallback');
SELECT pg_current_wal_flush_lsn();
});
	my ($first, $after) = split /\n/, answer($c);
	my ($sync, $before, $st, $ok) = split /\|/, $first // '';
	is("$sync $st $ok", 'off not_found ok', "E4 fallback: app's synchronous_commit is off; the call is ok, in its own transaction");
	told('e4-fallback', 'A', 1, $ok);
	my $xmin = as('alice', q{SELECT xmin FROM inventory.ledger WHERE order_id = 'e4-fallback'});
	my $end = commit_end($xmin, $before);
	isnt($end, '', 'E4 fallback: its commit record is in the WAL');
	ok($end ne '' && lsn_le($end, $after),
		"E4 fallback: right after the answer the WAL is flushed past that commit ($after >= $end)");
}

# b) E4 proper: no writer at all
$node->append_conf('postgresql.conf', "inventory.max_express_writers = 0\n");
$node->restart;
after_start();
{
	my $c = call_sync('app', 'e4-nowriter', q{
SELECT current_setting('synchronous_commit'), pg_current_wal_flush_lsn(), inventory.reserve_now('A', 1, 'e4-nowriter');
SELECT pg_current_wal_flush_lsn();
});
	my ($first, $after) = split /\n/, answer($c);
	my ($sync, $before, $ok) = split /\|/, $first // '';
	is("$sync $ok", 'off ok', "E4: max_express_writers = 0, app's synchronous_commit off: ok");
	told('e4-nowriter', 'A', 1, $ok);
	crash();
	is(as('alice', q{SELECT state FROM inventory.ledger WHERE order_id = 'e4-nowriter'}), 'PENDING',
		'E4: the postmaster killed with -9 right after the answer, started again: the row is there');
	my $xmin = as('alice', q{SELECT xmin FROM inventory.ledger WHERE order_id = 'e4-nowriter'});
	my $end = $xmin eq '' ? '' : commit_end($xmin, $before);
	ok($end ne '' && lsn_le($end, $after), "E4: right after the answer the WAL was flushed past its commit ($after >= $end)");
}
as($SU, 'ALTER ROLE app RESET synchronous_commit');
nothing_lost('E4, after kill -9');
$node->stop;

# ==== the router ====================================================================
{
	my @nodes  = start_nodes(2);
	# as the manual makes a cluster: the router works on the nodes as an
	# administrator's login, and shop_admin restocks through it
	my $router = start_router(\@nodes, 0, roles => 1);
	$router->safe_psql('shop', 'CREATE ROLE app LOGIN IN ROLE inventory_app');
	$router->safe_psql('shop', q{SELECT status FROM inventory.restock('R', 1000, 'in-R')},
		extra_params => [ '-U', 'shop_admin' ]);
	my $home = $router->safe_psql('shop', q{SELECT inventory.partition_of('R')});
	my ($hnode, $hdb) = ($nodes[$home], "inv_p$home");
	$hnode->safe_psql($hdb, 'CREATE ROLE alice LOGIN IN ROLE inventory_admin');

	my $c = start_call('app', 'r-e1', qq{
SET statement_timeout = '${TIMEOUT}s';
SELECT (inventory.confirm('r-e1', 1, 'R')).status, inventory.reserve_now('R', 1, 'r-e1');
}, 'shop', $router);
	is(answer($c), 'not_found|ok', 'router E1: confirm() and reserve_now() of one key in one statement: not_found, ok');
	cmp_ok($c->{t_end} - $c->{t0}, '<', $TIMEOUT, 'router E1: before its statement_timeout');

	# a hand INSERT of a key on the SKU's node, left open
	my $hand = session('alice', $hdb, $hnode);
	my ($out, $err) = in_session($hand, q{BEGIN;
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty) VALUES ('r-e2', 1, 'reserve', 'R', 1)});
	die "hand INSERT: $err" if $err ne '';
	$c = start_call('app', 'r-e2', q{SET statement_timeout = '2s'; SELECT inventory.reserve_now('R', 1, 'r-e2');}, 'shop', $router);
	my $t = time;
	is($router->safe_psql('shop', q{SELECT inventory.reserve_now('R', 1, 'r-e2-other')}, extra_params => [ '-U', 'app' ]),
		'ok', 'router E2: another key of the SKU is ok meanwhile');
	cmp_ok(time - $t, '<', $BOUND, sprintf('router E2: in %.2f s', time - $t));
	like(answer($c), qr/canceling statement due to statement timeout/,
		'router E2: the call of the key alice inserts on the node ends at the router\'s statement_timeout of 2s');
	cmp_ok($c->{t_end} - $c->{t0}, '<', 2 + $BOUND, sprintf('router E2: after %.2f s', $c->{t_end} - $c->{t0}));
	ok(wait_until($BOUND, sub {
		$hnode->safe_psql('postgres', qq{
SELECT count(*) FROM pg_stat_activity WHERE datname = '$hdb' AND state = 'active' AND query LIKE '%reserve_now%'}) eq '0' }),
		'router E2: the call on the node has ended too');
	in_session($hand, 'ROLLBACK');
	$hand->quit;
	is($router->safe_psql('shop', q{SELECT inventory.reserve_now('R', 1, 'r-e2')}, extra_params => [ '-U', 'app' ]),
		'ok', 'router E2: once alice rolled back, the key is ok');
	is($hnode->safe_psql($hdb, q{
SELECT string_agg(order_id, ' ' ORDER BY order_id) FROM inventory.ledger WHERE kind = 'reserve'},
		extra_params => [ '-U', 'alice' ]),
		'r-e1 r-e2 r-e2-other', 'router: the rows of the ok calls, once each, on the SKU\'s node');
	is($hnode->safe_psql($hdb, 'SELECT count(*) FROM inventory.verify()', extra_params => [ '-U', 'alice' ]), '0',
		'router: verify() is empty on the node');
}

done_testing();

# The express writer's life.  A database's writer starts at its first
# reserve_now() call and shows in inventory.express_status and
# pg_stat_activity; it stays while calls come and leaves after
# inventory.express_idle_timeout without one, and the next call starts a new
# one.  Terminated while clients call, every call still answers ok (written
# by the writer, or in the caller's own transaction when the writer is
# gone) and none hangs.  Each database has a writer of its own, at most
# inventory.max_express_writers of them; when no writer can be had -- all
# lanes taken by other databases, no free max_worker_processes slot,
# max_express_writers = 0 -- calls reserve in their own transaction, answer
# ok, and inventory.express_fallbacks() counts them.
#
# Who calls: every reserve_now() is shop_app's (inventory_app), each over a
# connection of its own, or in a session of its own; shop_admin
# (inventory_admin) restocks, reads the ledger and verifies; shop_monitor
# (inventory_monitor) reads inventory.express_status and
# express_fallbacks().  The superuser creates the databases, the extension
# and the roles, changes the server's settings (ALTER SYSTEM,
# postgresql.conf, restarts), terminates the writers (pg_terminate_backend
# of a background process) and reads their rows of pg_stat_activity
# (another role's rows).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest
  qw(wait_until inventory_node reserve_now_client reserve_now_log express_writer_sql inventory_roles as_app
  as_admin as_monitor);

my $DEADLINE = 30;    # seconds, for every wait of this test

# The expiry workers stay off: the only background worker of the extension
# is then the launcher, so the slots of max_worker_processes are counted
# below.
my $node = inventory_node('express_writer', qq{
inventory.worker_enabled = off
log_statement = none
});
for my $db ('postgres', 'shop2')
{
	$node->safe_psql('postgres', "CREATE DATABASE $db") if $db ne 'postgres';
	$node->safe_psql($db, 'CREATE EXTENSION inventory');
	inventory_roles($node, $db) if $db eq 'postgres';
	as_admin($node, $db, "SELECT inventory.restock('A', 1000000, 'in-A')");
}

my $n = 0;
# one reserve_now() of a unit of A under a new key: its answer
sub call
{
	my ($db) = @_;
	$n++;
	return as_app($node, $db, "SELECT inventory.reserve_now('A', 1, 'call-$n')");
}

sub fallbacks { as_monitor($node, 'postgres', 'SELECT inventory.express_fallbacks()') }

# the lanes: "datname writer_pid" for each database with a writer
sub lanes
{
	return join ',', split /\n/, as_monitor($node, 'postgres',
		"SELECT datname || ' ' || coalesce(writer_pid::text, 'starting') FROM inventory.express_status ORDER BY datname");
}

# the writers of a database in pg_stat_activity: read by the superuser (a
# background process's row is another role's)
sub writers
{
	my ($db) = @_;
	return join ',', split /\n/, $node->safe_psql('postgres', express_writer_sql($db));
}

# every row of the calls is in the ledger once, verify() is empty
sub consistent
{
	my ($what) = @_;
	for my $db ('postgres', 'shop2')
	{
		is(as_admin($node, $db, q{
SELECT count(*) FROM inventory.ledger
 WHERE order_id LIKE 'call-%' AND (kind, state, qty, sku) IS DISTINCT FROM ('reserve', 'PENDING', 1, 'A')}),
			'0', "$what: every call's row in $db is a PENDING reservation of one unit of A");
		is(as_admin($node, $db, "SELECT count(*) FROM inventory.verify('30 s')"), '0',
			"$what: verify('30 s') is empty in $db");
	}
}

# --- the writer starts at the first call ------------------------------------------

is(lanes(), '', 'before any call there is no writer in express_status');
is(writers('postgres'), '', 'and none in pg_stat_activity');
my $before = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
is(call('postgres'), 'ok', 'the first reserve_now() answers ok');
my $w1 = writers('postgres');
like($w1, qr/^\d+$/, 'a writer runs in the database');
is(lanes(), "postgres $w1", 'express_status shows the database and its writer');
is(as_monitor($node, 'postgres', qq{
SELECT started_at >= '$before' AND started_at <= now() AND queued = 0 AND batches = 1 AND rows = 1
   AND rows_per_batch = 1 AND max_batch = 1 AND sent_back = 0 AND failed = 0
  FROM inventory.express_status}),
	't', 'it started at that call and wrote its row in one batch');
is(fallbacks(), '0', 'the call was not a fallback');
is(as_admin($node, 'postgres', q{
SELECT state || ' ' || (expires_at - created_at) FROM inventory.ledger WHERE order_id = 'call-1'}),
	'PENDING 00:15:00', 'the row is a PENDING reservation with the default ttl');

# --- it stays while calls come, and leaves when they stop -------------------------

# the idle timeout, a minute by default, becomes a second: the running
# writer takes it at its next wait
$node->safe_psql('postgres', q{
ALTER SYSTEM SET inventory.express_idle_timeout = '1s';
SELECT pg_reload_conf();
});
$node->poll_query_until('postgres', 'SHOW inventory.express_idle_timeout', '1s')
  or die 'the idle timeout did not become a second';
my $idle_timeout = 1.0;    # seconds, as set

# calls one every 100 ms for 2.5 seconds, more than the idle timeout, in a
# session of the application; after each answer the monitor, in a session
# of its own, reads the writer that serves the database
my $session = $node->background_psql('postgres', extra_params => [ '-U', 'shop_app' ]);
my $watch   = $node->background_psql('postgres', extra_params => [ '-U', 'shop_monitor' ]);
my $t0 = time;
my (@answers, %seen, $last_sent, $last_answer);
while (time - $t0 < 2.5)
{
	$n++;
	$last_sent = time;
	push @answers, $session->query_safe("SELECT inventory.reserve_now('A', 1, 'call-$n')");
	$last_answer = time;
	$seen{ $watch->query_safe("SELECT writer_pid FROM inventory.express_status WHERE datname = 'postgres'") }++;
	usleep(100_000);
}
$session->quit;
$watch->quit;
my $span = $last_answer - $t0;
is(join(' ', grep { $_ ne 'ok' } @answers), '',
	sprintf('%d calls 100 ms apart, over %.1f s, answered ok', scalar(@answers), $span));
is(scalar(keys %seen), 1, 'one writer served them all: it stays while calls come');
my ($w) = keys %seen;
is(as_monitor($node, 'postgres', 'SELECT writer_pid FROM inventory.express_status'), $w,
	'it still runs after the last of them');

ok(wait_until($DEADLINE, sub { lanes() eq '' && writers('postgres') eq '' }),
	'idle, the writer leaves: gone from express_status and pg_stat_activity');
# The writer waits for the idle timeout only once it has written the last
# call, which it received after the test sent it; and the test sees it
# gone only after it has left.  So from the sending of the last call to
# the moment it is seen gone, at least the idle timeout has passed,
# however slow the machine: the bound is the setting (less 10 ms for the
# millisecond rounding of the wait's timeout).
my $idle = time - $last_sent;
cmp_ok($idle, '>=', $idle_timeout - 0.01,
	sprintf('it left %.1f s after the last call was sent, not before the idle timeout (%.0f s)', $idle, $idle_timeout));
ok(!kill(0, $w), 'its process has exited');
# a minute again, so that no writer leaves in the middle of what follows
$node->safe_psql('postgres', q{
ALTER SYSTEM SET inventory.express_idle_timeout = '60s';
SELECT pg_reload_conf();
});
$node->poll_query_until('postgres', 'SHOW inventory.express_idle_timeout', '1min')
  or die 'the idle timeout did not become a minute';
is(call('postgres'), 'ok', 'the next call answers ok');
my $w2 = writers('postgres');
like($w2, qr/^\d+$/, 'and starts a new writer');
isnt($w2, $w, 'with a new pid');
is(lanes(), "postgres $w2", 'express_status shows the new writer');
is(as_monitor($node, 'postgres', 'SELECT batches || \' \' || rows FROM inventory.express_status'),
	'1 1', "its statistics start at its own first batch");
is(fallbacks(), '0', 'no call was a fallback');

# --- two databases each have their own writer -----------------------------------------

is(call('postgres') . ' ' . call('shop2'), 'ok ok', 'a call in each database answers ok');
my ($pa, $pb) = (writers('postgres'), writers('shop2'));
like("$pa $pb", qr/^\d+ \d+$/, 'each database has a writer in pg_stat_activity');
isnt($pa, $pb, 'two writers');
is(lanes(), "postgres $pa,shop2 $pb", 'express_status shows both, each with its own');
is(as_admin($node, 'shop2', q{
SELECT count(*) FROM inventory.ledger WHERE order_id LIKE 'call-%'}), '1',
	"the second database's call is in its own ledger");
is(fallbacks(), '0', 'no call was a fallback');

# --- the writer terminated while clients call --------------------------------------------

my $CLIENTS = 4;
my $CALLS   = 2000;    # enough that the clients still call in round 2 on a fast machine
my $log_from = -s $node->logfile;
my $postmaster = $node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()');
my $fb_before = fallbacks();
my @clients = map {
	my $c = $_;
	reserve_now_client($node, 'postgres', "026_term_c$c",
		[ map { { sku => 'A', qty => 1, key => "term-c$c-$_" } } 1 .. $CALLS ], 3 * $DEADLINE, 'shop_app')
} 1 .. $CLIENTS;
my $acked = sub {
	my $total = 0;
	$total += scalar keys %{ (reserve_now_log($_))[1] } for @clients;
	return $total;
};
my @terminated;
for my $round (1, 2)
{
	# the clients are calling (and not done) and a writer serves them
	my $writer;
	ok(wait_until($DEADLINE, sub {
		$writer = writers('postgres');
		return $acked->() >= $round * 200 && $writer =~ /^\d+$/ && !grep { $_ eq $writer } @terminated;
	}), "round $round: the clients are calling and a writer serves them")
	  or diag('acknowledged ' . $acked->() . ", writer '$writer'");
	my $done = $acked->();
	note("round $round: the writer is terminated while $done of " . ($CLIENTS * $CALLS) . ' calls have answered');
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($writer)") eq 't'
	  or die "round $round: pg_terminate_backend($writer) found no such process";
	push @terminated, $writer;
	ok(wait_until($DEADLINE, sub { !kill(0, $writer) }), "round $round: the writer has exited");
}
my @hung;
for my $cl (@clients)
{
	push @hung, "$cl->{name}: $@" unless eval { $cl->{h}->finish; 1 };
}
is(join('; ', @hung), '', 'every client finished in time: no call hung');
is(join('; ', map { "$_->{name} exit " . $_->{h}->result(0) } grep { $_->{h}->result(0) != 0 } @clients),
	'', 'every client ran all its calls without an error');
my @bad;
for my $cl (@clients)
{
	my ($sent, $ack) = reserve_now_log($cl);
	push @bad, "$cl->{name}: " . scalar(keys %$ack) . " answers" unless keys %$ack == $CALLS;
	push @bad, map { "$cl->{name} call $_: $ack->{$_}" } grep { $ack->{$_} ne 'ok' } sort { $a <=> $b } keys %$ack;
}
is(join('; ', @bad), '', "every one of the " . ($CLIENTS * $CALLS) . " calls answered ok");
is(as_admin($node, 'postgres', q{
SELECT count(*) || ' ' || count(DISTINCT order_id) FROM inventory.ledger
 WHERE order_id LIKE 'term-%' AND kind = 'reserve' AND state = 'PENDING' AND qty = 1}),
	($CLIENTS * $CALLS) . ' ' . ($CLIENTS * $CALLS), 'each has its row in the ledger, once');
my $fb_term = fallbacks() - $fb_before;
note("$fb_term calls reserved in their own transaction while there was no writer");
is(call('postgres'), 'ok', 'the next call answers ok');
my $wnow = writers('postgres');
like($wnow, qr/^\d+$/, 'a writer serves the database again');
ok(!grep({ $_ eq $wnow } @terminated), 'a new one');
is($node->safe_psql('postgres', 'SELECT pg_postmaster_start_time()'), $postmaster,
	'the server did not restart');
unlike(slurp_file($node->logfile, $log_from), qr/terminated by signal|server process .* exited with exit code [^0]/,
	'no process of the server died');
is(as_monitor($node, 'postgres', 'SELECT sum(available) FROM inventory.stock'),
	as_admin($node, 'postgres', q{
SELECT 1000000 - count(*) FROM inventory.ledger WHERE kind = 'reserve' AND state = 'PENDING'}),
	'A has exactly the units the rows leave');
consistent('after the writer was terminated');

# --- one writer for two databases: the second one's calls fall back --------------------

$node->append_conf('postgresql.conf', "inventory.max_express_writers = 1\n");
$node->restart;
is(fallbacks(), '0', 'max_express_writers = 1: fallbacks count from zero after the restart');
is(call('postgres'), 'ok', 'a call in the first database answers ok');
my $only = writers('postgres');
like($only, qr/^\d+$/, 'and has a writer');
is(join(' ', map { call('shop2') } 1 .. 3), 'ok ok ok',
	'three calls in the second database answer ok');
is(writers('shop2'), '', 'without a writer of their own');
is(lanes(), "postgres $only", 'express_status shows only the first database');
is(fallbacks(), '3', 'express_fallbacks() counts the three calls');
is(as_admin($node, 'shop2', q{SELECT count(*) FROM inventory.ledger WHERE order_id LIKE 'call-%'}),
	'4', 'their rows are in the second database');
# a replay of a key that fell back: a duplicate, no second row
is(as_app($node, 'shop2', "SELECT inventory.reserve_now('A', 1, 'call-$n')"), 'duplicate',
	'a key that fell back, called again, is a duplicate');
# the first database's writer is terminated
$node->safe_psql('postgres', "SELECT pg_terminate_backend($only)") eq 't'
  or die "pg_terminate_backend($only) found no such process";
ok(wait_until($DEADLINE, sub { lanes() eq '' }), 'its lane is free');
is(call('shop2'), 'ok', "the second database's next call answers ok");
like(writers('shop2'), qr/^\d+$/, 'and gets the lane: a writer of its own');
is(fallbacks(), '3', 'it was not a fallback, nor was the duplicate');
consistent('max_express_writers = 1');

# --- no free max_worker_processes slot ----------------------------------------------------

# two slots: the launcher takes one, the first writer the other
$node->append_conf('postgresql.conf', q{
inventory.max_express_writers = 4
max_worker_processes = 2
max_logical_replication_workers = 0
max_parallel_workers = 0
max_parallel_workers_per_gather = 0
});
$node->restart;
# max_worker_processes = 2: the launcher runs (its row of pg_stat_activity
# is read by the superuser)
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'inventory launcher'")
  or die 'max_worker_processes = 2: the launcher does not run';
is(call('postgres'), 'ok', 'a call in the first database answers ok');
my $slot = writers('postgres');
like($slot, qr/^\d+$/, 'its writer takes the last slot');
is(join(' ', map { call('shop2') } 1 .. 3), 'ok ok ok',
	'three calls in the second database answer ok');
is(writers('shop2'), '', 'no writer could start for them');
is(lanes(), "postgres $slot", 'express_status shows only the first database');
is(fallbacks(), '3', 'express_fallbacks() counts the three calls');
is(as_admin($node, 'shop2', q{SELECT count(*) FROM inventory.ledger WHERE order_id LIKE 'call-%'}),
	'8', 'their rows are in the second database');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($slot)");
# the slot is free once the postmaster has seen the writer exit: until
# then a call may still fall back
ok(wait_until($DEADLINE, sub { call('shop2') eq 'ok' && writers('shop2') =~ /^\d+$/ }),
	"once the first writer has gone, the second database's call gets a writer");
my $fb = fallbacks();
is(call('shop2') . ' ' . fallbacks(), "ok $fb", 'and its calls are no fallbacks any more');
consistent('max_worker_processes = 2');

# --- max_express_writers = 0 ------------------------------------------------------------------

$node->append_conf('postgresql.conf', q{
inventory.max_express_writers = 0
max_worker_processes = 8
});
$node->restart;
is(join(' ', map { call('postgres') } 1 .. 3) . ' ' . call('shop2'), 'ok ok ok ok',
	'max_express_writers = 0: calls in both databases answer ok');
is(lanes() . writers('postgres') . writers('shop2'), '', 'no writer runs');
is(fallbacks(), '4', 'express_fallbacks() counts every call');
my $prev = 'call-' . ($n - 1);    # the last call in postgres
is(as_app($node, 'postgres', "SELECT inventory.reserve_now('A', 1, '$prev')")
	. ' ' . as_app($node, 'shop2', "SELECT inventory.reserve_now('A', 1, '$prev')"),
	'duplicate ok', 'a key called again in its database is a duplicate; the same key in another database is not');
consistent('max_express_writers = 0');

$node->stop;
done_testing();

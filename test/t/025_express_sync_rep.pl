# reserve_now() and synchronous replication.  A primary names its streaming
# standby in synchronous_standby_names; a call answers ok only once its
# row's commit has reached the standby as the caller's synchronous_commit
# asks (remote_apply: the row is readable there the moment ok arrives).
# With the standby stopped a call does not answer -- its row may be
# committed locally -- and answers ok when the standby comes back; one that
# is cancelled while it waits raises 57014, never ok, and retrying its key
# answers duplicate or ok with a single row.  A replay of a waiting call's
# key from another session does not answer before the standby has the row
# either.  A caller that asks for synchronous_commit = local is not held up
# by the missing standby.  The same holds when the call reserves in its own
# transaction, without a writer (inventory.max_express_writers = 0), but
# for the cancel: there the wait for the standby is its transaction's
# commit, which PostgreSQL ends with a warning and the answer, as it does
# for reserve().  On the standby reserve_now() is refused (25006).
#
# Who calls: every reserve_now(), its replays and retries are shop_app's
# (inventory_app), in sessions of its own, and the application cancels its
# own waiting call (pg_cancel_backend of a backend of its role); shop_admin
# (inventory_admin) restocks and reads the ledger; shop_monitor
# (inventory_monitor) reads the express lane's figures, inventory.stock and
# verifies.  The superuser creates the extension and the roles, runs the
# servers and the replication (settings, stop, start, restart, catch-up)
# and reads the wait events of shop_app's backends in pg_stat_activity.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(wait_until inventory_node psql_session said wait_said inventory_roles as_app as_admin
  as_monitor);

my $DEADLINE = 30;    # seconds, for every wait of this test

my $primary = inventory_node('primary', qq{
log_statement = none
}, allows_streaming => 1);
$primary->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($primary);
as_admin($primary, 'postgres', "SELECT inventory.restock('A', 1000, 'in-A')");
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
# the standby's walreceiver is named after its cluster_name, 'standby'
$primary->append_conf('postgresql.conf', q{
synchronous_standby_names = 'standby'
synchronous_commit = on
});
$primary->reload;
$primary->poll_query_until('postgres',
	"SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'")
  or die 'the standby is not synchronous';

# the rows of key on node
sub rows
{
	my ($node, $key) = @_;
	return as_admin($node, 'postgres',
		"SELECT count(*) FROM inventory.ledger WHERE order_id = '$key' AND kind = 'reserve' AND state = 'PENDING'");
}

# SQL run by psql on node as the application, without stopping at an
# error: its output and the SQLSTATE of its last statement (00000: it
# succeeded)
sub run_sql
{
	my ($node, $sql) = @_;
	my ($out, $err) = ('', '');
	$node->psql('postgres', "$sql;\n\\echo sqlstate=:SQLSTATE",
		stdout => \$out, stderr => \$err, on_error_stop => 0, extra_params => [ '-U', 'shop_app' ]);
	my $state = $out =~ s/^sqlstate=(\w+)\n?//m ? $1 : 'none';
	return ($out, $state, $err);
}

# A psql session of the application driven by hand, on the primary: it
# says its pid first
sub session
{
	my $s = psql_session($primary, 3 * $DEADLINE, 0, 'postgres', 'shop_app');
	$s->{in} .= "SELECT 'pid=' || pg_backend_pid();\n";
	wait_said($s, qr/^pid=(\d+)$/m);
	($s->{pid}) = $s->{out} =~ /^pid=(\d+)$/m;
	return $s;
}

# a session's call of reserve_now() for key, sent; its answer follows as
# "answer=STATUS" (none after an error), then "sqlstate=SQLSTATE"
sub send_call
{
	my ($s, $key) = @_;
	$s->{in} .= "SELECT 'answer=' || inventory.reserve_now('A', 1, '$key');\n\\echo sqlstate=:SQLSTATE\n";
	$s->{run}->pump_nb;
}

# (read by the superuser: shop_app's rows of pg_stat_activity)
my $sync_wait = sub {
	my ($pid) = @_;
	return "SELECT wait_event_type = 'IPC' AND wait_event = 'SyncRep' FROM pg_stat_activity WHERE pid = $pid";
};

# a caller waiting for the stopped standby: it waits for SyncRep and does
# not answer
sub waits_for_standby
{
	my ($s, $key, $what) = @_;
	send_call($s, $key);
	ok(wait_until($DEADLINE, sub { $primary->safe_psql('postgres', $sync_wait->($s->{pid})) eq 't' }),
		"$what: the call of $key waits for the standby (wait event SyncRep)");
	ok(!said($s, qr/answer=|sqlstate=/), "$what: and has not answered");
	my $local = rows($primary, $key);
	note("$what: its row is " . ($local ? 'committed locally' : 'not committed yet'));
	return $local;
}

# --- with the standby running -----------------------------------------------------------

is(as_app($primary, 'postgres', "SELECT inventory.reserve_now('A', 1, 'rep-on')"),
	'ok', 'with the standby running, reserve_now() answers ok');
$primary->wait_for_catchup($standby, 'replay');
is(rows($standby, 'rep-on'), '1', 'its row is on the standby');
is(as_app($primary, 'postgres', q{
SET synchronous_commit = remote_apply;
SELECT inventory.reserve_now('A', 1, 'rep-apply');
}), 'ok', 'a call with synchronous_commit = remote_apply answers ok');
is(rows($standby, 'rep-apply'), '1', 'and its row is readable on the standby at once');
is(as_monitor($primary, 'postgres', 'SELECT count(*) FROM inventory.express_status'), '1',
	'the calls went through an express writer');

# --- on the standby -----------------------------------------------------------------------

for my $key ('rep-on', 'rep-new')
{
	my ($out, $state, $err) = run_sql($standby, "SELECT inventory.reserve_now('A', 1, '$key')");
	is("$out$state", '25006', "on the standby, reserve_now() of " . ($key eq 'rep-on' ? 'a key it has' : 'a new key') . ' is refused with 25006');
}
is(as_monitor($standby, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"verify('30 s') on the standby is empty");

# --- the standby stopped: the call waits, and answers when it is back ----------------------------

# stopped(key, what, fallbacks, todo): with the standby stopped, a call of
# key waits; a caller with synchronous_commit = local is answered at once
# meanwhile (express_fallbacks() is then fallbacks); a replay of key from
# another session -- a client that gave up waiting and retries -- does not
# answer either, since the row's commit has not reached the standby and an
# answer would tell of a reservation that a failover would take back.
# With the standby back, the call
# answers ok and the replay duplicate.
my $s;
sub stopped
{
	my ($key, $what, $fallbacks, $todo) = @_;
	$standby->stop;
	$s->{out} = $s->{err} = '';
	waits_for_standby($s, $key, $what);
	is(as_app($primary, 'postgres', qq{
SET synchronous_commit = local;
SELECT inventory.reserve_now('A', 1, '$key-local');
}), 'ok', "$what: meanwhile a caller with synchronous_commit = local is answered ok at once");
	is(as_monitor($primary, 'postgres', 'SELECT inventory.express_fallbacks()'), $fallbacks,
		"$what: " . ($fallbacks ? "both calls reserved in their own transaction ($fallbacks fallbacks)"
			: 'through the writer, which the waiting caller does not hold up'));
	ok(!said($s, qr/answer=|sqlstate=/), "$what: the first call still waits");
	my $s2 = session();
	send_call($s2, $key);
	{
		local our $TODO = $todo;
		# it waits for something (the standby, the key's lock) or answers
		ok(wait_until($DEADLINE, sub { $primary->safe_psql('postgres', qq{
SELECT state = 'active' AND wait_event IS NOT NULL FROM pg_stat_activity WHERE pid = $s2->{pid}}) eq 't'
				  || said($s2, qr/sqlstate=/) })
			  && !said($s2, qr/sqlstate=/),
			"$what: a replay of the key from another session does not answer either");
	}
	$standby->start;
	wait_said($s, qr/sqlstate=/);
	is($s->{out}, "answer=ok\nsqlstate=00000\n", "$what: the standby back, the call answers ok");
	wait_said($s2, qr/sqlstate=/);
	like($s2->{out}, qr/\nanswer=duplicate\nsqlstate=00000\n$/, "$what: and the replay duplicate");
	$s2->{in} .= "\\q\n";
	$s2->{run}->finish;
	$primary->wait_for_catchup($standby, 'replay');
	is(rows($primary, $key) . ' ' . rows($standby, $key), '1 1',
		"$what: one row for the key, on the primary and on the standby");
}

$s = session();
stopped('wait-1', 'standby stopped', 0, undef);

# --- a cancelled wait raises an error -------------------------------------------------------------

# cancel(key, what, own): a call of key waits for the stopped standby and
# is cancelled; it fails with 57014 -- or, reserving in its own transaction
# (own), it answers ok with PostgreSQL's warning, its commit being local
# -- and retried with the standby back it answers duplicate if its row had
# been committed, ok if not
sub cancel
{
	my ($key, $what, $own) = @_;
	$standby->stop;
	$s->{out} = $s->{err} = '';
	waits_for_standby($s, $key, $what);
	# the application cancels its own call (a backend of its own role)
	is(as_app($primary, 'postgres', "SELECT pg_cancel_backend($s->{pid})"), 't',
		"$what: the waiting call is cancelled");
	wait_said($s, qr/sqlstate=/);
	if ($own)
	{
		is($s->{out}, "answer=ok\nsqlstate=00000\n",
			"$what: it answers ok, as reserve() would, its commit being local");
		like($s->{err}, qr/canceling wait for synchronous replication due to user request/,
			"$what: with PostgreSQL's warning that the wait for the standby was cancelled");
	}
	else
	{
		is($s->{out}, "sqlstate=57014\n", "$what: it answers no status but the error 57014");
		like($s->{err}, qr/canceling the wait for synchronous replication of inventory\.reserve_now\(\)/,
			"$what: the error says the wait for the standby was cancelled");
	}
	my $committed = rows($primary, $key);
	note("$what: the row of the cancelled call is " . ($committed ? 'committed locally' : 'not there'));
	$standby->start;
	$s->{out} = '';
	send_call($s, $key);
	wait_said($s, qr/sqlstate=/);
	is($s->{out}, 'answer=' . ($committed ? 'duplicate' : 'ok') . "\nsqlstate=00000\n",
		"$what: retried with the standby back, the key answers " . ($committed ? 'duplicate' : 'ok'));
	$primary->wait_for_catchup($standby, 'replay');
	is(rows($primary, $key) . ' ' . rows($standby, $key), '1 1',
		"$what: one row for the key, on the primary and on the standby");
}

cancel('cancel-1', 'through the writer', 0);

# --- the same without a writer ------------------------------------------------------------------------

$s->{in} .= "\\q\n";
$s->{run}->finish;
$primary->append_conf('postgresql.conf', "inventory.max_express_writers = 0\n");
$primary->restart;
$primary->poll_query_until('postgres',
	"SELECT sync_state = 'sync' FROM pg_stat_replication WHERE application_name = 'standby'")
  or die 'max_express_writers = 0: the standby is not synchronous again';
$s = session();
stopped('wait-2', 'standby stopped, in its own transaction', 2, undef);
cancel('cancel-2', 'in its own transaction', 1);
is(as_monitor($primary, 'postgres', 'SELECT inventory.express_fallbacks() > 0'), 't',
	'those calls reserved in their own transaction');

$s->{in} .= "\\q\n";
$s->{run}->finish;
$primary->wait_for_catchup($standby, 'replay');
is(as_admin($primary, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"verify('30 s') is empty on the primary");
is(as_monitor($standby, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"verify('30 s') is empty on the standby");
is(as_monitor($standby, 'postgres', 'SELECT available FROM inventory.stock'),
	as_admin($primary, 'postgres', "SELECT 1000 - count(*) FROM inventory.ledger WHERE kind = 'reserve'"),
	'the standby has the units the rows leave');

$standby->stop;
$primary->stop;
done_testing();

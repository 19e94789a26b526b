# The commit window: a transaction becomes visible to others a moment
# before its commit callback adds its changes to the SKU's counters in
# shared memory.  A transaction that settles or extends a reservation made
# in that moment must wait for the callback; otherwise the counters take the
# reservation out before they have put it in, and inventory.sku_stats shows
# reserved below zero (the torture test once caught it).
#
# The moment is held open in the reserving backend's commit, after its row
# became visible and before the counters have it: in a test build (make
# INVENTORY_FAULTS=1, as scripts/test.sh builds) by the fault
# 'commit-window', which parks the commit until the test releases it; in
# any other build by gdb, with a breakpoint on EscrowEndTxn, where the
# kernel lets it attach.  For each way to settle or extend -- confirm(), a
# cancel written by hand, extend(), expire() -- the test checks that the
# window is open (the row is seen, the counters do not have it yet), that
# the second transaction waits for the first one's lock, that the counters
# never go below zero meanwhile, and that both finish with the counters
# right once the first goes on.  Each call is made by the role the manual
# gives it: the buyer (shop_app) reserves, confirms and extends, the
# administrator (shop_admin) cancels by hand and expires, the monitor
# (shop_monitor) reads the counters.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(wait_until inventory_node psql_session said wait_said inventory_roles
  as_admin as_monitor fault_functions);

my $node = inventory_node('commit_window', qq{
inventory.worker_enabled = off
});
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node);
as_admin($node, 'postgres', "SELECT inventory.restock('W', 10, 'in-W')");

my $timeout = $PostgreSQL::Test::Utils::timeout_default;

# How the window is held: the fault of a test build, else gdb.  The fault's
# setting is a superuser's, so the buyer's session takes it from a function
# of the test's own, SECURITY DEFINER (scaffolding; a superuser's otherwise).
my $faults = fault_functions($node, 'postgres');
if ($faults)
{
	$node->safe_psql('postgres', q{
CREATE FUNCTION test_fault.park_my_commit() RETURNS void LANGUAGE sql SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$ SELECT set_config('inventory.inject_fault', 'commit-window', false) $$;
GRANT USAGE ON SCHEMA test_fault TO shop_app;
GRANT EXECUTE ON FUNCTION test_fault.park_my_commit() TO shop_app;
});
}
else
{
	# a kernel may forbid ptrace between processes of one user (Yama's
	# ptrace_scope 2 or 3, some containers): then nothing here can be held open
	my $checkpointer = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'");
	my ($probe_out, $probe_err) = ('', '');
	IPC::Run::run([ 'gdb', '-q', '-nx', '-batch', '-p', $checkpointer, '-ex', 'detach' ],
		'<', '/dev/null', '>', \$probe_out, '2>', \$probe_err, IPC::Run::timeout($timeout));
	plan skip_all => "gdb cannot attach to a backend here: $1"
	  if "$probe_out$probe_err" =~ /(ptrace: Operation not permitted|Could not attach[^\n]*)/;
}

sub counters
{
	return as_monitor($node, 'postgres',
		"SELECT on_hand || ' ' || reserved || ' ' || holds || ' ' || in_flight FROM inventory.sku_stats WHERE sku = 'W'");
}

# hold($key, $maker, $pid): the maker's COMMIT, sent, stops in the window;
# returns the code that lets it go on
sub hold
{
	my ($key, $maker, $pid) = @_;
	if ($faults)
	{
		$maker->{in} .= "COMMIT;\nSELECT 'committed';\n";
		$maker->{run}->pump_nb;
		ok(wait_until($timeout, sub { $node->safe_psql('postgres', 'SELECT test_fault.parked()') eq '1' }),
			"$key: the maker's commit is parked in the window");
		return sub { $node->safe_psql('postgres', 'SELECT test_fault.release()') };
	}
	my %gdb = (in => "set pagination off\nset confirm off\nbreak EscrowEndTxn\ncontinue\n", out => '');
	$gdb{run} = IPC::Run::start([ 'gdb', '-q', '-nx', '-p', $pid ],
		'<', \$gdb{in}, '>&', \$gdb{out}, IPC::Run::timeout($timeout));
	$gdb{run}->pump until $gdb{out} =~ /Continuing\./ || !$gdb{run}->pumpable;
	# without its breakpoint (the function renamed, say) nothing below can
	# hold the window open: stop here rather than wait for the timeout
	like($gdb{out}, qr/Breakpoint 1 at /, "$key: gdb attached to the maker and set its breakpoint")
	  or die "gdb set no breakpoint:\n$gdb{out}";
	$maker->{in} .= "COMMIT;\nSELECT 'committed';\n";
	$maker->{run}->pump_nb;
	$gdb{run}->pump until $gdb{out} =~ /Breakpoint 1, /;
	return sub { $gdb{in} .= "detach\nquit\n"; $gdb{run}->finish; };
}

# window(key, ttl, statement, its role, its answer, counters after both):
# the reservation is made under key by one session and held in the middle
# of its commit; statement runs in a second one.
sub window
{
	my ($key, $ttl, $stmt, $role, $answer, $after) = @_;
	my $before = counters();
	my ($on_hand, $reserved) = split / /, $before;

	my $maker = psql_session($node, $timeout, 1, 'postgres', 'shop_app');
	$maker->{in} .= "SELECT FROM test_fault.park_my_commit();\n" if $faults;
	$maker->{in} .= "BEGIN;\nSELECT status FROM inventory.reserve('W', 1, '$key', ttl => '$ttl');\nSELECT 'pid=' || pg_backend_pid();\n";
	wait_said($maker, qr/^pid=(\d+)$/m);
	like($maker->{out}, qr/^ok$/m, "$key: reserved, not committed yet");
	my ($pid) = $maker->{out} =~ /^pid=(\d+)$/m;

	my $release = hold($key, $maker, $pid);
	is(as_admin($node, 'postgres', "SELECT state FROM inventory.ledger WHERE order_id = '$key'")
		  . ' ' . counters(),
		"PENDING $on_hand $reserved 1 1",
		"$key: in the window the row is seen, the counters do not have it yet");

	my $settler = psql_session($node, $timeout, 1, 'postgres', $role);
	$settler->{in} .= "SELECT 'pid=' || pg_backend_pid();\n$stmt;\n";
	wait_said($settler, qr/^pid=(\d+)$/m);
	my ($spid) = $settler->{out} =~ /^pid=(\d+)$/m;
	# pg_blocking_pids() of another role's backend: the superuser's
	my $waits = "SELECT $pid = ANY (pg_blocking_pids($spid))";
	wait_until($timeout, sub {
		$node->safe_psql('postgres', $waits) eq 't'
		  || said($settler, qr/^\Q$answer\E$/m);
	});
	is($node->safe_psql('postgres', $waits), 't',
		"$key: '$stmt' waits for the maker's commit to finish");
	is(counters(), "$on_hand $reserved 1 1",
		"$key: meanwhile the counters are unchanged, reserved not below zero");

	$release->();
	wait_said($maker, qr/^committed$/m);
	wait_said($settler, qr/^\Q$answer\E$/m);
	like($settler->{out}, qr/^pid=\d+\n\Q$answer\E\n$/,
		"$key: once the maker goes on, both finish; '$stmt' answers $answer");
	is(counters(), "$after 0 0", "$key: the counters have both");

	$maker->{in} .= "\\q\n";
	$maker->{run}->finish;
	$settler->{in} .= "\\q\n";
	$settler->{run}->finish;
}

window('k-confirm', '1 hour', "SELECT status FROM inventory.confirm('k-confirm')",
	'shop_app', 'ok', '9 0');
window('k-cancel', '1 hour',
	"WITH u AS (UPDATE inventory.ledger SET state = 'CANCELLED' WHERE order_id = 'k-cancel' RETURNING state) SELECT state FROM u",
	'shop_admin', 'CANCELLED', '9 0');
window('k-extend', '1 hour', "SELECT status FROM inventory.extend('k-extend', 1, '2 hours')",
	'shop_app', 'ok', '9 1');
window('k-expire', '1 millisecond', 'SELECT inventory.expire()', 'shop_admin', '1', '9 1');

is(as_admin($node, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"),
	'0', 'verify() is empty, every SKU compared');

$node->stop;
done_testing();

# The workers come back after one crashes and after the whole server
# crashes.
#
# Who calls: shop_app (inventory_app) reserves and reads the live counter,
# shop_admin (inventory_admin) restocks, locks a ledger row by hand, reads
# the ledger and verifies -- each connected as itself, and after each crash
# the first calls are theirs.  The superuser creates the extension and the
# roles, reads the workers' rows of pg_stat_activity (other roles' rows),
# and kills the worker and the server.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles wait_until as_role as_app as_admin);
use Time::HiRes qw(usleep);

my $node = inventory_node('worker_crash', qq{
inventory.expire_interval = '200ms'
restart_after_crash = on
});
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node);
as_admin($node, 'postgres', "SELECT inventory.restock('K-1', 100, 'delivery')");

# poll(ROLE, SQL): SQL, run in postgres by the login ROLE, answers t before
# the default timeout
sub poll
{
	my ($role, $sql) = @_;
	return wait_until($PostgreSQL::Test::Utils::timeout_default,
		sub { as_role($node, $role, 'postgres', $sql) eq 't' });
}

# the workers' rows of pg_stat_activity: the superuser's
my $worker_q = "SELECT pid FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'postgres'";

# an overdue reservation whose row a session holds keeps a worker in the
# database, trying again every interval; the administrator holds it by hand
as_app($node, 'postgres', "SELECT inventory.reserve('K-1', 5, 'held', ttl => '1 second')");
my $holder = $node->background_psql('postgres', on_error_stop => 0,
	extra_params => [ '-U', 'shop_admin' ]);
$holder->query_safe("BEGIN; SELECT 1 FROM inventory.ledger WHERE order_id = 'held' FOR UPDATE");
# (a worker that came for something else may be leaving: wait for the one
# that reports the overdue reservation it could not expire)
poll('shop_monitor', q{
SELECT lag > '0' AND state = 'running' FROM inventory.worker_status WHERE datname = 'postgres'})
	or die 'no worker stays for the held reservation';

# a crashing worker takes the server through crash recovery; everything
# comes back (the crash, and waiting for the server: scaffolding)
my $pid = $node->safe_psql('postgres', $worker_q);
$pid =~ /^\d+$/ or die "not one worker in the database: '$pid'";
my $offset = -s $node->logfile;
kill 'KILL', $pid;
$holder->{run}->kill_kill;
# the worker's crash restarts the server (wait_for_log dies if not)
$node->wait_for_log(
	qr/inventory worker.*\(PID $pid\) was terminated by signal 9.*database system is ready to accept connections/s,
	$offset);
$node->poll_query_until('postgres', 'SELECT true')
	or die 'the server did not come back';
ok(poll('shop_admin',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'held'"),
	'after a worker crash a new worker expires the reservation it could not');
as_app($node, 'postgres', "SELECT inventory.reserve('K-1', 5, 'after-worker-crash', ttl => '1 second')");
ok(poll('shop_admin',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'after-worker-crash'"),
	'and the reservations made after it');

# kill -9 the postmaster, then start the server again
as_app($node, 'postgres', "SELECT inventory.reserve('K-1', 7, 'across-crash', ttl => '3 seconds')");
my $postmaster = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
$node->kill9;
# the postmaster goes, its children notice and exit; until all have, the
# data directory is in use and a start would be refused
my $left = 1;
for (my $i = 0; $i < 300 && $left; $i++)
{
	$left = kill(0, $postmaster) ||
		system('pgrep', '-f', '^postgres: worker_crash: ') == 0;
	usleep(100_000) if $left;
}
ok(!$left, 'every process of the killed server has exited');
my $started = $node->start(fail_ok => 1);
ok($started, 'the server starts again after kill -9 of the postmaster');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'inventory launcher'"),
	'after kill -9 of the postmaster the launcher starts with the server');
ok(poll('shop_admin',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'across-crash'"),
	'and expires a reservation made before the crash');
is(as_app($node, 'postgres', "SELECT inventory.available('K-1')"), '100',
	'all units are back on sale');
is(as_admin($node, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0', 'verify() is empty');

$node->stop;
done_testing();

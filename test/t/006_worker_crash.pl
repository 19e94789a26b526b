# The workers come back after one crashes and after the whole server
# crashes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node);
use Time::HiRes qw(usleep);

my $node = inventory_node('worker_crash', qq{
inventory.expire_interval = '200ms'
restart_after_crash = on
});
$node->safe_psql('postgres', q{
CREATE EXTENSION inventory;
SELECT inventory.restock('K-1', 100, 'delivery');
});

my $worker_q = "SELECT pid FROM pg_stat_activity WHERE backend_type = 'inventory worker' AND datname = 'postgres'";

# an overdue reservation whose row a session holds keeps a worker in the
# database, trying again every interval
$node->safe_psql('postgres', "SELECT inventory.reserve('K-1', 5, 'held', ttl => '1 second')");
my $holder = $node->background_psql('postgres', on_error_stop => 0);
$holder->query_safe("BEGIN; SELECT 1 FROM inventory.ledger WHERE order_id = 'held' FOR UPDATE");
$node->poll_query_until('postgres', "SELECT count(*) = 1 FROM ($worker_q) w")
	or die 'no worker';

# a crashing worker takes the server through crash recovery; everything
# comes back
my $pid = $node->safe_psql('postgres', $worker_q);
kill 'KILL', $pid;
$holder->{run}->kill_kill;
$node->poll_query_until('postgres', 'SELECT true')
	or die 'the server did not come back';
ok($node->log_contains("inventory worker.*\\(PID $pid\\) was terminated by signal 9"),
	'the worker was killed');
ok($node->poll_query_until('postgres',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'held'"),
	'after a worker crash a new worker expires the reservation it could not');
$node->safe_psql('postgres', "SELECT inventory.reserve('K-1', 5, 'after-worker-crash', ttl => '1 second')");
ok($node->poll_query_until('postgres',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'after-worker-crash'"),
	'and the reservations made after it');

# kill -9 the postmaster, then start the server again
$node->safe_psql('postgres', "SELECT inventory.reserve('K-1', 7, 'across-crash', ttl => '3 seconds')");
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
ok($node->poll_query_until('postgres',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'across-crash'"),
	'and expires a reservation made before the crash');
is($node->safe_psql('postgres', "SELECT inventory.available('K-1')"), '100',
	'all units are back on sale');
is($node->safe_psql('postgres', 'SELECT count(*) FROM inventory.verify()'), '0', 'verify() is empty');

$node->stop;
done_testing();

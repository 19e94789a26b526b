# The extension works only when the server preloads it, and says so.
#
# Who calls: the superuser creates the extension (only a superuser may: its
# functions are C), the login roles and the tables' owner's ALTER TABLE,
# and restarts the server; shop_admin (inventory_admin) restocks, shop_app
# (inventory_app) reserves, cancels and sets its own session's settings,
# shop_monitor (inventory_monitor) reads the server's settings and
# verifies -- each connected as itself.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_roles as_app as_admin as_monitor);

my $node = PostgreSQL::Test::Cluster->new('no_preload');
$node->init;
$node->start;

# CREATE EXTENSION: the superuser's
my ($ret, $out, $err) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nCREATE EXTENSION inventory;");
isnt($ret, 0, 'CREATE EXTENSION fails without shared_preload_libraries');
like($err, qr/ERROR:  55000: inventory must be loaded via shared_preload_libraries/,
	'with SQLSTATE 55000 and a clear message');
like($err, qr/HINT:  Add inventory to shared_preload_libraries in postgresql\.conf/,
	'and a hint that says what to add');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_extension WHERE extname = 'inventory'"),
	'0', 'nothing was created');

# preloaded, it works, and its settings are checked (the server's settings
# and CREATE EXTENSION are the superuser's, and so is creating the roles)
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'inventory'");
$node->restart;
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node);
is(as_admin($node, 'postgres',
	"SELECT status FROM inventory.restock('P-1', 1, 'p-1')"), 'ok',
	'with the preload the extension works');
($ret, $out, $err) = $node->psql('postgres', 'SET inventory.max_skuz = 5',
	extra_params => [ '-U', 'shop_app' ]);
like($err, qr/invalid configuration parameter name "inventory\.max_skuz"/,
	'a misspelt inventory.* setting is refused');
is(as_app($node, 'postgres', 'SHOW inventory.default_ttl'), '15min',
	'default_ttl defaults to 15 minutes');
is(as_monitor($node, 'postgres', 'SHOW inventory.max_skus'), '10000',
	'max_skus defaults to 10000');

# beside other libraries that hook the same places (utility statements,
# shared memory, the executor), in either order: each still does its job
my $round = 0;
for my $libs ('pg_stat_statements, auto_explain, inventory', 'inventory, pg_stat_statements, auto_explain')
{
	my $key = 'p-hook-' . ++$round;
	$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = '$libs'
auto_explain.log_min_duration = 0
});
	$node->restart;
	# scaffolding: pg_stat_statements is the superuser's to create and reset
	$node->safe_psql('postgres', q{
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
SELECT pg_stat_statements_reset()});
	my $offset = -s $node->logfile;
	# after the restart the cache is empty: the application's calls load
	# P-1 as shop_app; ALTER TABLE is the tables' owner's (the superuser
	# that created the extension)
	my $works = as_app($node, 'postgres', qq{
SELECT (inventory.reserve('P-1', 1, '$key')).status;
SELECT (inventory.reserve('P-1', 1, '$key')).status});
	$node->safe_psql('postgres', 'ALTER TABLE inventory.ledger ENABLE TRIGGER a_check');
	$works .= "\n" . as_monitor($node, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')");
	is($works, "ok\nduplicate\n0", "$libs: inventory works");
	# pg_stat_statements shows other roles' statements to a superuser
	is($node->safe_psql('postgres', q{
SELECT calls FROM pg_stat_statements WHERE query LIKE '%inventory.reserve(%'}), '2',
		"$libs: pg_stat_statements counts its calls");
	like(slurp_file($node->logfile, $offset), qr/duration: .*inventory\.reserve/s,
		"$libs: auto_explain logs them");
	# the catalog, read as the tables' owner who just altered them
	is($node->safe_psql('postgres', q{
SELECT string_agg(DISTINCT tgenabled::text, '') FROM pg_trigger
 WHERE tgrelid = 'inventory.ledger'::regclass AND NOT tgisinternal}), 'A',
		"$libs: the utility hook still keeps the triggers");
	as_app($node, 'postgres', "SELECT inventory.cancel('$key')");
}

$node->stop;
done_testing();

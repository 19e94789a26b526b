# The extension works only when the server preloads it, and says so.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('no_preload');
$node->init;
$node->start;

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

# preloaded, it works, and its settings are checked
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'inventory'");
$node->restart;
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
is($node->safe_psql('postgres',
	"SELECT status FROM inventory.restock('P-1', 1, 'p-1')"), 'ok',
	'with the preload the extension works');
($ret, $out, $err) = $node->psql('postgres', 'SET inventory.max_skuz = 5');
like($err, qr/invalid configuration parameter name "inventory\.max_skuz"/,
	'a misspelt inventory.* setting is refused');
is($node->safe_psql('postgres', 'SHOW inventory.default_ttl'), '15min',
	'default_ttl defaults to 15 minutes');
is($node->safe_psql('postgres', 'SHOW inventory.max_skus'), '10000',
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
	$node->safe_psql('postgres', q{
CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
SELECT pg_stat_statements_reset()});
	my $offset = -s $node->logfile;
	is($node->safe_psql('postgres', qq{
SELECT (inventory.reserve('P-1', 1, '$key')).status;
SELECT (inventory.reserve('P-1', 1, '$key')).status;
ALTER TABLE inventory.ledger ENABLE TRIGGER a_check;
SELECT count(*) FROM inventory.verify()}), "ok\nduplicate\n0", "$libs: inventory works");
	is($node->safe_psql('postgres', q{
SELECT calls FROM pg_stat_statements WHERE query LIKE '%inventory.reserve(%'}), '2',
		"$libs: pg_stat_statements counts its calls");
	like(slurp_file($node->logfile, $offset), qr/duration: .*inventory\.reserve/s,
		"$libs: auto_explain logs them");
	is($node->safe_psql('postgres', q{
SELECT string_agg(DISTINCT tgenabled::text, '') FROM pg_trigger
 WHERE tgrelid = 'inventory.ledger'::regclass AND NOT tgisinternal}), 'A',
		"$libs: the utility hook still keeps the triggers");
	$node->safe_psql('postgres', "SELECT inventory.cancel('$key')");
}

$node->stop;
done_testing();

# 64 clients race for the last 100 units of one SKU: exactly 100 succeed,
# nothing is oversold, and the cache agrees with the tables.
#
# Who calls: the buyers are pgbench clients connected as shop_app
# (inventory_app); shop_admin (inventory_admin) restocks and counts the
# ledger; shop_app reads the stock view and the live counter; shop_monitor
# (inventory_monitor) reads the statistics and verifies.  The superuser
# only creates the extension and the roles.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles as_app as_admin as_monitor);

my $node = inventory_node('race', qq{
max_connections = 100
});
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node);
as_admin($node, 'postgres', "SELECT inventory.restock('HOT', 100, 'delivery')");

# every call a new buyer, the benchmark's reserve; a buyer that loses is
# told insufficient
$node->pgbench(
	'--no-vacuum --client=64 --jobs=2 --transactions=50 -M prepared -U shop_app -D sku=HOT -D prefix=buyer-',
	0,
	[qr{processed: 3200/3200}],
	[qr{^$}],
	'64 clients make 3200 reservation attempts',
	{ 'race' => slurp_file("$ENV{TESTDIR}/bench/sql/reserve.sql") });

is(as_admin($node, 'postgres',
	"SELECT count(*) FROM inventory.ledger WHERE kind = 'reserve'"),
	'100', 'exactly 100 reservations succeeded');
is(as_app($node, 'postgres',
	"SELECT on_hand || ' ' || reserved || ' ' || available FROM inventory.stock WHERE sku = 'HOT'"),
	'100 100 0', 'the stock view agrees: 100 on hand, 100 reserved, none available');
is(as_app($node, 'postgres', "SELECT inventory.available('HOT')"),
	'0', 'the live counter agrees');
is(as_monitor($node, 'postgres',
	"SELECT reserves || ' ' || rejects || ' ' || holds || ' ' || in_flight FROM inventory.sku_stats WHERE sku = 'HOT'"),
	'100 3100 0 0', 'statistics: 100 reserves, 3100 rejects, nothing in flight');
# verify(wait): every cached SKU compared, none passed over as busy
is(as_monitor($node, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"),
	'0', 'verify() is empty');

# the same race with confirms and cancels mixed in: units cancelled go back
# on sale and are sold again, and still nothing is oversold
as_admin($node, 'postgres', "SELECT inventory.restock('MIX', 100, 'delivery-mix')");
# the flash-sale buyer of the benchmark and the demo, 7 in 10 paying
my $mixed = slurp_file("$ENV{TESTDIR}/bench/sql/buyer.sql");
$node->pgbench(
	'--no-vacuum --client=64 --jobs=2 --transactions=40 -M prepared -U shop_app -D sku=MIX -D pay=7',
	0,
	[qr{processed: 2560/2560}],
	[qr{^$}],
	'64 clients reserve, confirm and cancel',
	{ 'mixed' => $mixed });

is(as_admin($node, 'postgres', q{
SELECT count(*) FILTER (WHERE state = 'CONFIRMED') FROM inventory.ledger WHERE sku = 'MIX'}),
	'100', 'every unit was sold exactly once');
is(as_app($node, 'postgres',
	"SELECT on_hand || ' ' || reserved FROM inventory.stock WHERE sku = 'MIX'"),
	'0 0', 'nothing left, nothing oversold');
is(as_admin($node, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"),
	'0', 'verify() is empty after the mixed race');

$node->stop;
done_testing();

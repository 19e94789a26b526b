# On a standby the worker does nothing and writes nothing; promotion starts it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node);

my $primary = inventory_node('primary', qq{
inventory.expire_interval = '200ms'
inventory.worker_enabled = off
}, allows_streaming => 1);
$primary->safe_psql('postgres', q{
CREATE EXTENSION inventory;
SELECT inventory.restock('S-1', 10, 'delivery');
SELECT inventory.reserve('S-1', 3, 'unpaid', ttl => '1 second');
});
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', 'inventory.worker_enabled = on');
$standby->start;
$primary->wait_for_catchup($standby);

my $t0 = $standby->safe_psql('postgres', "SELECT clock_timestamp() + interval '2 seconds'");
$standby->poll_query_until('postgres', "SELECT clock_timestamp() > '$t0'");
is($standby->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'inventory%'"),
	'0', 'a standby runs no launcher and no worker');
is($standby->safe_psql('postgres', "SELECT state FROM inventory.ledger WHERE order_id = 'unpaid'"),
	'PENDING', 'the overdue reservation waits on the standby');
is($standby->safe_psql('postgres', "SELECT on_hand || ' ' || reserved FROM inventory.stock"),
	'10 3', 'the read-only views work on the standby');
is($standby->safe_psql('postgres', "SELECT inventory.available('S-1')"),
	'7', 'and so does available()');
my ($ret, $out, $err) = $standby->psql('postgres', "SELECT inventory.reserve('S-1', 1, 'on-standby')");
like($err, qr/cannot execute inventory\.reserve\(\) in a read-only transaction/,
	'a reserve on the standby is refused with the usual error');

$primary->stop;
$standby->promote;
ok($standby->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'inventory launcher'"),
	'promotion starts the launcher');
ok($standby->poll_query_until('postgres',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'unpaid'"),
	'which expires the overdue reservation');
is($standby->safe_psql('postgres', "SELECT inventory.available('S-1')"), '10',
	'its units are back on sale');

$standby->stop;
done_testing();

# On a standby the worker does nothing and writes nothing; promotion starts it.
#
# Who calls: shop_admin (inventory_admin) restocks and reads the ledger,
# shop_app (inventory_app) reserves and reads the stock and the live
# counter -- connected as themselves, on the primary and on the standby
# (the roles come with the backup), and first after the promotion.  The
# superuser creates the extension and the roles, reads the processes' rows
# of pg_stat_activity (other roles' rows), takes the backup, and stops and
# promotes the servers.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles wait_until as_role as_app as_admin);

my $primary = inventory_node('primary', qq{
inventory.expire_interval = '200ms'
inventory.worker_enabled = off
}, allows_streaming => 1);
$primary->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($primary);
as_admin($primary, 'postgres', "SELECT inventory.restock('S-1', 10, 'delivery')");
as_app($primary, 'postgres', "SELECT inventory.reserve('S-1', 3, 'unpaid', ttl => '1 second')");
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', 'inventory.worker_enabled = on');
$standby->start;
$primary->wait_for_catchup($standby);

# poll(ROLE, SQL): SQL, run in postgres on the standby by the login ROLE,
# answers t before the default timeout
sub poll
{
	my ($role, $sql) = @_;
	return wait_until($PostgreSQL::Test::Utils::timeout_default,
		sub { as_role($standby, $role, 'postgres', $sql) eq 't' });
}

# proving that nothing acts takes time: wait until the reservation has been
# overdue for five of the standby's intervals, when a worker on a primary
# would long have expired it
poll('shop_admin', q{
SELECT clock_timestamp() > expires_at + 5 * current_setting('inventory.expire_interval')::interval
  FROM inventory.ledger WHERE order_id = 'unpaid'})
	or die 'the reservation did not fall due';
is($standby->safe_psql('postgres',
	"SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'inventory%'"),
	'0', 'a standby runs no launcher and no worker');
is(as_admin($standby, 'postgres', "SELECT state FROM inventory.ledger WHERE order_id = 'unpaid'"),
	'PENDING', 'the overdue reservation waits on the standby');
is(as_app($standby, 'postgres', "SELECT on_hand || ' ' || reserved FROM inventory.stock"),
	'10 3', 'the read-only views work on the standby');
is(as_app($standby, 'postgres', "SELECT inventory.available('S-1')"),
	'7', 'and so does available()');
my ($ret, $out, $err) = $standby->psql('postgres', "SELECT inventory.reserve('S-1', 1, 'on-standby')",
	extra_params => [ '-U', 'shop_app' ]);
like($err, qr/cannot execute inventory\.reserve\(\) in a read-only transaction/,
	'a reserve on the standby is refused with the usual error');

$primary->stop;
$standby->promote;
ok($standby->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'inventory launcher'"),
	'promotion starts the launcher');
ok(poll('shop_admin',
	"SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'unpaid'"),
	'which expires the overdue reservation');
is(as_app($standby, 'postgres', "SELECT inventory.available('S-1')"), '10',
	'its units are back on sale');

$standby->stop;
done_testing();

# I8, a server's life: pg_upgrade, the tool of a major version upgrade,
# here from one PostgreSQL 15 cluster to a new one (the path is the same:
# a schema dump in binary-upgrade mode, the data files copied).  The
# upgraded database must equal the old one: the same objects, definitions,
# comments and privileges, the same rows, keys, holds and counters; replays
# answered as duplicates, rules in force, verify() empty; and, once its
# worker runs, the key filter rebuilt, the PENDING reservations expiring on
# time and the stock selling exactly once.
use strict;
use warnings;
use File::Temp;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(history_sql sale_sql replay_checks sells_once describe_sql key_checks_sql
  inventory_node);

my $conf = "inventory.worker_enabled = off\n";
my $old = inventory_node('old', $conf);
$old->safe_psql('postgres', 'CREATE DATABASE shop');
$old->safe_psql('shop', 'CREATE EXTENSION inventory');
$old->safe_psql('shop', history_sql());
$old->safe_psql('shop', sale_sql());

my %q = (
	stock    => 'SELECT * FROM inventory.stock ORDER BY sku',
	sku      => 'SELECT * FROM inventory.sku ORDER BY sku',
	ledger   => 'SELECT * FROM inventory.ledger ORDER BY order_id, batch_id',
	objects  => describe_sql(),
	versions => "SELECT extversion FROM pg_extension WHERE extname = 'inventory'",
);
my %want = map { $_ => $old->safe_psql('shop', $q{$_}) } keys %q;
is($old->safe_psql('shop', key_checks_sql()), 'DDDD 4', "a fresh install: the foreign key's four checks are disabled");
is($old->safe_psql('shop',
	"SELECT string_agg(DISTINCT state::text, ' ' ORDER BY state::text) FROM inventory.ledger"),
	'CANCELLED CONFIRMED EXPIRED PENDING', 'the old cluster has reservations in every state');
$old->stop;

# the new cluster, configured as the old one, stopped, as pg_upgrade wants it
my $new = PostgreSQL::Test::Cluster->new('new');
$new->init;
$new->append_conf('postgresql.conf', "shared_preload_libraries = 'inventory'\n$conf");

# pg_upgrade writes its scripts into the working directory
my $cwd = File::Temp->newdir;
chdir $cwd or die "chdir: $!";
command_ok([
		'pg_upgrade', '--no-sync',
		'-d', $old->data_dir, '-D', $new->data_dir,
		'-b', $old->config_data('--bindir'), '-B', $new->config_data('--bindir'),
		'-s', $new->host, '-p', $old->port, '-P', $new->port ],
	'pg_upgrade');
chdir $FindBin::Bin or die "chdir: $!";
$new->start;

for my $what (sort keys %q)
{
	is($new->safe_psql('shop', $q{$what}), $want{$what}, "upgraded: $what is identical");
}
is($new->safe_psql('shop', 'SELECT count(*) FROM inventory.verify()'), '0', 'upgraded: verify() is empty');

# The key from the ledger to inventory.sku orders pg_dump's output; its
# checks would lock the SKU's row for every reservation and stay disabled.
# pg_upgrade creates the key again, with its checks enabled, unless the
# library turns them off.
my $checks = key_checks_sql();
is($new->safe_psql('shop', $checks), 'DDDD 4', "upgraded: the foreign key's four checks stay disabled");
is($new->safe_psql('shop', q{
BEGIN;
SELECT (inventory.reserve('TEE', 1, 'lock-probe', ttl => '1 hour')).status;
SELECT count(*) FROM inventory.sku WHERE sku = 'TEE' AND xmax = pg_current_xact_id()::xid;
ROLLBACK}), "ok\n0", 'upgraded: a reservation leaves the SKU row unlocked (its xmax is not the reserving transaction)');
$new->safe_psql('shop', q{
ALTER TABLE inventory.ledger DROP CONSTRAINT ledger_sku_fkey;
ALTER TABLE inventory.ledger ADD CONSTRAINT ledger_sku_fkey FOREIGN KEY (sku) REFERENCES inventory.sku (sku)});
is($new->safe_psql('shop', $checks), 'DDDD 4', 'the key added again by hand: its checks disabled too');
is($new->safe_psql('shop', $_->[0]), $_->[1], "upgraded: $_->[2]") for replay_checks();
is($new->safe_psql('shop', $q{stock}), $want{stock}, 'upgraded: and change nothing');

# with its worker, the new cluster rebuilds the key filter and expires on time
$new->append_conf('postgresql.conf', 'inventory.worker_enabled = on');
$new->reload;
ok($new->poll_query_until('shop', 'SELECT ready FROM inventory.key_filter'),
	'upgraded: the key filter is rebuilt from the ledger');
is($new->safe_psql('shop', $_->[0]), $_->[1], "upgraded, the filter ready: $_->[2]") for replay_checks();
ok($new->poll_query_until('shop',
	"SELECT count(*) = 0 FROM inventory.ledger WHERE order_id = 'soon' AND state = 'PENDING'"),
	'upgraded: the PENDING reservations that fell due expire');
is($new->safe_psql('shop', q{
SELECT count(*) FROM inventory.ledger WHERE order_id = 'soon' AND settled_at >= expires_at}), '2',
	'at or after their expires_at, which the upgrade kept');
my %before = map { (split /\|/)[0, 3] } split /\n/, $want{stock};
my %avail = map { (split /\|/)[0, 3] } split /\n/, $new->safe_psql('shop', $q{stock});
is(($avail{TEE} - $before{TEE}) . ' ' . ($avail{MUG} - $before{MUG}), '2 1',
	'their units are on sale again: 2 of TEE, 1 of MUG');
my ($sells, $once) = sells_once(\%avail);
is($new->safe_psql('shop', $sells), $once, 'upgraded: the stock sells exactly once');
is($new->safe_psql('shop', 'SELECT count(*) FROM inventory.verify()'), '0', 'upgraded: verify() is empty after it');

$new->stop;
done_testing();

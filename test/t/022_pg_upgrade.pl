# I8, a server's life: pg_upgrade, the tool of a major version upgrade,
# here from one PostgreSQL 15 cluster to a new one (the path is the same:
# a schema dump in binary-upgrade mode, the data files copied).  The
# upgraded database must equal the old one: the same objects, definitions,
# comments and privileges, the same rows, keys, holds and counters; replays
# answered as duplicates, rules in force, verify() empty; and, once its
# worker runs, the key filter rebuilt, the PENDING reservations expiring on
# time and the stock selling exactly once.
#
# Every call is made by the login role the manual gives it, each over a
# connection of its own, before the upgrade and after it (the first calls
# on the new cluster are theirs): shop_app (inventory_app) sells and reads
# inventory.stock, shop_admin (inventory_admin) restocks, sets rules and
# reads the tables and the key filter, shop_monitor (inventory_monitor)
# verifies.  The superuser creates the database, the extension and the
# login roles (pg_upgrade carries them over), runs pg_upgrade as the
# clusters' owner, sets the server's settings, and alters the ledger's
# foreign key as the tables' owner.
use strict;
use warnings;
use File::Temp;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(history_sql sale_sql replay_checks sells_once describe_sql key_checks_sql
  inventory_node inventory_roles as_role as_app as_admin as_monitor as_each_caller poll_as);

my $conf = "inventory.worker_enabled = off\n";
my $old = inventory_node('old', $conf);
$old->safe_psql('postgres', 'CREATE DATABASE shop');
$old->safe_psql('shop', 'CREATE EXTENSION inventory');
inventory_roles($old, 'shop');
# each statement as the role that the manual gives its call
as_each_caller($old, 'shop', history_sql());
as_each_caller($old, 'shop', sale_sql());

# what the upgraded database must hold, and who reads it: inventory.stock
# is the application's to read, the tables the administrator's; the
# catalogs (the extension's objects, its version) are read by the
# administrator too (any role may read them)
my %q = (
	stock    => 'SELECT * FROM inventory.stock ORDER BY sku',
	sku      => 'SELECT * FROM inventory.sku ORDER BY sku',
	ledger   => 'SELECT * FROM inventory.ledger ORDER BY order_id, batch_id',
	objects  => describe_sql(),
	versions => "SELECT extversion FROM pg_extension WHERE extname = 'inventory'",
);
my %reader = (stock => 'shop_app', map { $_ => 'shop_admin' } qw(sku ledger objects versions));
my %want = map { $_ => as_role($old, $reader{$_}, 'shop', $q{$_}) } keys %q;
is(as_admin($old, 'shop', key_checks_sql()), 'DDDD 4', "a fresh install: the foreign key's four checks are disabled");
# the history is what the test needs: reservations in every state
my $states = as_admin($old, 'shop',
	"SELECT string_agg(DISTINCT state::text, ' ' ORDER BY state::text) FROM inventory.ledger");
die "the old cluster's history lacks a state: $states" unless $states eq 'CANCELLED CONFIRMED EXPIRED PENDING';
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

# the first calls on the new cluster: the roles'
for my $what (sort keys %q)
{
	is(as_role($new, $reader{$what}, 'shop', $q{$what}), $want{$what}, "upgraded: $what is identical");
}
# verify('30 s'): waits for a SKU with a change in flight (an error naming
# it if one is still busy), so that none is skipped
is(as_monitor($new, 'shop', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"upgraded: verify('30 s') is empty");

# The key from the ledger to inventory.sku orders pg_dump's output; its
# checks would lock the SKU's row for every reservation and stay disabled.
# pg_upgrade creates the key again, with its checks enabled, unless the
# library turns them off.
my $checks = key_checks_sql();
is(as_admin($new, 'shop', $checks), 'DDDD 4', "upgraded: the foreign key's four checks stay disabled");
# The application reserves in a transaction it keeps open; meanwhile the
# administrator locks the SKU's row FOR UPDATE NOWAIT, which any lock on it
# (the foreign key's FOR KEY SHARE among them) would refuse with 55P03.
my $buyer = $new->background_psql('shop', extra_params => [ '-U', 'shop_app' ]);
$buyer->query_safe('BEGIN');
my $probe = $buyer->query_safe(q{SELECT (inventory.reserve('TEE', 1, 'lock-probe', ttl => '1 hour')).status});
my ($lret, $lout, $lerr) = $new->psql('shop', q{
BEGIN;
SELECT sku FROM inventory.sku WHERE sku = 'TEE' FOR UPDATE NOWAIT;
ROLLBACK}, extra_params => [ '-U', 'shop_admin' ]);
$buyer->query_safe('ROLLBACK');
$buyer->quit;
is("$probe $lret $lout", 'ok 0 TEE',
	'upgraded: a reservation leaves the SKU row unlocked (another session locks it at once)')
  or diag $lerr;
# ALTER TABLE: the tables' owner's
$new->safe_psql('shop', q{
ALTER TABLE inventory.ledger DROP CONSTRAINT ledger_sku_fkey;
ALTER TABLE inventory.ledger ADD CONSTRAINT ledger_sku_fkey FOREIGN KEY (sku) REFERENCES inventory.sku (sku)});
is(as_admin($new, 'shop', $checks), 'DDDD 4', 'the key added again by hand: its checks disabled too');
# replay_checks() mixes the application's calls with the administrator's
# (restock, adjust, withdraw) in one statement: shop_admin makes them, a
# member of inventory_app as the manual has it
is(as_admin($new, 'shop', $_->[0]), $_->[1], "upgraded: $_->[2]") for replay_checks();
is(as_app($new, 'shop', $q{stock}), $want{stock}, 'upgraded: and change nothing');

# with its worker, the new cluster rebuilds the key filter and expires on
# time (a server setting: the superuser's)
$new->append_conf('postgresql.conf', 'inventory.worker_enabled = on');
$new->reload;
ok(poll_as($new, 'shop_monitor', 'shop', 'SELECT ready FROM inventory.key_filter'),
	'upgraded: the key filter is rebuilt from the ledger');
is(as_admin($new, 'shop', $_->[0]), $_->[1], "upgraded, the filter ready: $_->[2]") for replay_checks();
ok(poll_as($new, 'shop_admin', 'shop',
	"SELECT count(*) = 0 FROM inventory.ledger WHERE order_id = 'soon' AND state = 'PENDING'"),
	'upgraded: the PENDING reservations that fell due expire');
is(as_admin($new, 'shop', q{
SELECT count(*) FROM inventory.ledger WHERE order_id = 'soon' AND settled_at >= expires_at}), '2',
	'at or after their expires_at, which the upgrade kept');
my %before = map { (split /\|/)[0, 3] } split /\n/, $want{stock};
my %avail = map { (split /\|/)[0, 3] } split /\n/, as_app($new, 'shop', $q{stock});
is(($avail{TEE} - $before{TEE}) . ' ' . ($avail{MUG} - $before{MUG}), '2 1',
	'their units are on sale again: 2 of TEE, 1 of MUG');
my ($sells, $once) = sells_once(\%avail);
is(as_app($new, 'shop', $sells), $once, 'upgraded: the stock sells exactly once');
is(as_monitor($new, 'shop', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"upgraded: verify('30 s') is empty after it");

$new->stop;
done_testing();

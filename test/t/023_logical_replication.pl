# A server's life with logical replication: a subscription must not copy
# or apply the inventory tables (another server's movements and counters
# would land past this server's cache), and says so clearly, while the
# rest of the database replicates as usual; the publisher sells on,
# untouched.  A publication of the application's own schemas works.
#
# Every call is made by the login role the manual gives it, each over a
# connection of its own: shop_app (inventory_app) reserves, confirms and
# writes the application's own table public.orders (granted to it);
# shop_admin (inventory_admin) restocks and reads the tables;
# shop_monitor (inventory_monitor) verifies.  The superuser creates the
# extension, the roles and the application's table, owns the publications
# and the subscriptions (they are a superuser's: FOR ALL TABLES, FOR TABLES
# IN SCHEMA) and empties the table as its owner (TRUNCATE).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles as_app as_admin as_monitor poll_as);

my $pub = inventory_node('publisher', "inventory.worker_enabled = off\n", allows_streaming => 'logical');
my $sub = inventory_node('subscriber', "inventory.worker_enabled = off\n");

for my $node ($pub, $sub)
{
	$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
	inventory_roles($node, 'postgres');
	$node->safe_psql('postgres', q{
CREATE TABLE public.orders (id int PRIMARY KEY, note text);
GRANT SELECT, INSERT, UPDATE ON public.orders TO shop_app});
}
as_admin($pub, 'postgres', q{SELECT inventory.restock('A', 10, 'in-1')});
as_app($pub, 'postgres', q{
SELECT inventory.reserve('A', 2, 'o-1', ttl => '1 hour');
INSERT INTO public.orders VALUES (1, 'first')});
$pub->safe_psql('postgres', q{
CREATE PUBLICATION everything FOR ALL TABLES;
CREATE PUBLICATION shop FOR TABLES IN SCHEMA public});
my $pubconn = $pub->connstr . ' dbname=postgres';

# FOR ALL TABLES takes the inventory tables along: their copy is refused
my $offset = -s $sub->logfile;
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION everything CONNECTION '$pubconn' PUBLICATION everything");
# (wait_for_log dies at its timeout: eval makes that a failed check)
ok(eval { $sub->wait_for_log(qr/ERROR:  logical replication of inventory\.(ledger|sku) is not supported/, $offset); 1 },
	'FOR ALL TABLES: the copy of an inventory table fails, saying why');
my $log = slurp_file($sub->logfile, $offset);
like($log, qr/HINT:  Leave the inventory tables out of the publication/, 'with a hint that says what to do');
ok(poll_as($sub, 'shop_app', 'postgres', 'SELECT count(*) = 1 FROM public.orders'),
	'the application\'s table is copied all the same');
is(as_admin($sub, 'postgres',
	'SELECT (SELECT count(*) FROM inventory.sku) + (SELECT count(*) FROM inventory.ledger)'),
	'0', 'nothing of the inventory tables landed on the subscriber');
is(as_app($pub, 'postgres', q{
SELECT (inventory.reserve('A', 3, 'o-2')).status || ' ' || inventory.available('A')}),
	'ok 5', 'the publisher sells on');
$sub->safe_psql('postgres', 'DROP SUBSCRIPTION everything');
$sub->safe_psql('postgres', 'TRUNCATE public.orders');

# the application's schema alone replicates, both ways of writing to it
$offset = -s $sub->logfile;
$sub->safe_psql('postgres', "CREATE SUBSCRIPTION shop CONNECTION '$pubconn' PUBLICATION shop");
$sub->wait_for_subscription_sync($pub, 'shop');
as_app($pub, 'postgres', q{
INSERT INTO public.orders VALUES (2, 'second');
SELECT inventory.confirm('o-2');
UPDATE public.orders SET note = 'paid' WHERE id = 2});
$pub->wait_for_catchup('shop');
is(as_app($sub, 'postgres', 'SELECT string_agg(id || note, \' \' ORDER BY id) FROM public.orders'),
	'1first 2paid', 'FOR TABLES IN SCHEMA public: the application\'s rows arrive');
unlike(slurp_file($sub->logfile, $offset), qr/ERROR/, 'without an error');
is(as_admin($sub, 'postgres', 'SELECT count(*) FROM inventory.ledger'), '0',
	'and the subscriber\'s inventory is its own');
# verify('30 s'): waits for a SKU with a change in flight (an error naming
# it if one is still busy), so that none is skipped
is(as_monitor($pub, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"the publisher verifies: verify('30 s') is empty");

$sub->stop;
$pub->stop;
done_testing();

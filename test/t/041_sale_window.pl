# The sale's window where the storefront looks: inventory.stock.on_sale,
# and LISTEN inventory_stock, which hears a SKU's window open and close.
#
#   * a notification carries on_sale, sale_starts and sale_ends with the
#     SKU's units; new rules that take a SKU off sale now are heard;
#   * the worker sends a notification when a window opens and when it
#     closes, within a second of the edge, with on_sale as it is then;
#     inventory.stock's on_sale and reserve() agree with it;
#   * 300 SKUs sharing an edge are each heard, in one send of the worker;
#   * a database without inventory.stock_notifications hears nothing;
#   * after a restart, a window set before it is heard opening.
#
# Who calls: the listeners and the buyers are shop_app's (inventory_app);
# shop_admin (inventory_admin) restocks and sets the rules; shop_monitor
# reads inventory.stock.  The superuser creates the databases, the
# extension and the roles, sets the database's setting and restarts the
# server.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node wait_until listen_session notifications inventory_roles as_app as_admin
  as_monitor);

my $node = inventory_node('window', q{
inventory.stock_notify_interval = 100ms
});
$node->safe_psql('postgres', q{
CREATE DATABASE shop;
ALTER DATABASE shop SET inventory.stock_notifications = on;
CREATE DATABASE quiet});
$node->safe_psql($_, 'CREATE EXTENSION inventory') for ('shop', 'quiet');
inventory_roles($node, 'shop');

# a listener of the application; heard() answers every notification so
# far: [payload, pid] each
sub listener { return listen_session($node, $_[0], 'shop_app', 'inventory_stock'); }
sub heard { return notifications($_[0], 'inventory_stock'); }
# the payloads of one SKU heard so far
sub of_sku
{
	my ($s, $sku) = @_;
	return [ map { $_->[0] } grep { $_->[0] =~ /^\{"sku": "\Q$sku\E"/ } @{ heard($s) } ];
}
# waits for a payload of the SKU with on_sale as said, after the first
# $before payloads of the SKU (how many were heard before what should
# make it); the time it was seen
sub heard_on_sale
{
	my ($s, $sku, $on_sale, $seconds, $before) = @_;
	my $seen;
	wait_until($seconds, sub {
		my $p = of_sku($s, $sku);
		return 0 unless grep { /"on_sale": $on_sale/ } @$p[ $before .. $#$p ];
		$seen = time;
		return 1;
	});
	return $seen;
}
sub epoch_of
{
	my ($db, $sku, $col) = @_;
	return as_monitor($node, $db, "SELECT extract(epoch FROM $col) FROM inventory.stock WHERE sku = '$sku'");
}

my $shop = listener('shop');

# --- a window ahead -----------------------------------------------------------

as_admin($node, 'shop', "SELECT inventory.restock('WIN', 5, 'in-win')");
ok(wait_until(30, sub { grep { /"available": 5, "version": \d+, "on_sale": true, "sale_starts": null, "sale_ends": null\}$/ } @{ of_sku($shop, 'WIN') } }),
	'a SKU on sale is heard with on_sale true and no window');
my $mark = scalar @{ of_sku($shop, 'WIN') };
as_admin($node, 'shop', q{
SELECT inventory.set_rules('WIN', sale_starts => now() + interval '3 s', sale_ends => now() + interval '6 s')});
my ($starts, $ends) = (epoch_of('shop', 'WIN', 'sale_starts'), epoch_of('shop', 'WIN', 'sale_ends'));
ok(heard_on_sale($shop, 'WIN', 'false', 30, $mark), 'rules that take it off sale now are heard: on_sale false');
$mark = scalar @{ of_sku($shop, 'WIN') };
is($mark, 2, 'once');
like(of_sku($shop, 'WIN')->[-1],
	qr/^\{"sku": "WIN", "available": 5, "version": \d+, "on_sale": false, "sale_starts": "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.?\d*[+-]\d\d:\d\d", "sale_ends": "[^"]+"\}$/,
	'the payload carries the window\'s bounds as ISO 8601 timestamps');
is(as_monitor($node, 'shop', "SELECT on_sale FROM inventory.stock WHERE sku = 'WIN'"), 'f',
	'inventory.stock: on_sale false before the window');
is(as_app($node, 'shop', "SELECT status FROM inventory.reserve('WIN', 1, 'early')"), 'not_on_sale',
	'and a reserve is not_on_sale');

# --- the window opens and closes ------------------------------------------------

my $opened = heard_on_sale($shop, 'WIN', 'true', 30, $mark);
ok(defined $opened && $opened >= $starts && $opened - $starts < 1.0,
	sprintf('the window opening is heard within a second (%.3f s after the edge)', ($opened // 0) - $starts));
is(as_monitor($node, 'shop', "SELECT on_sale FROM inventory.stock WHERE sku = 'WIN'"), 't',
	'inventory.stock: on_sale true in the window');
is(as_app($node, 'shop', "SELECT status FROM inventory.reserve('WIN', 1, 'in-window')"), 'ok',
	'and a reserve is ok');
my $closed = heard_on_sale($shop, 'WIN', 'false', 30, $mark + 1);
ok(defined $closed && $closed >= $ends && $closed - $ends < 1.0,
	sprintf('the window closing is heard within a second (%.3f s after the edge)', ($closed // 0) - $ends));
like(of_sku($shop, 'WIN')->[-1], qr/"available": 4,/, 'with the units left');
is(as_app($node, 'shop', "SELECT status FROM inventory.reserve('WIN', 1, 'late')"), 'not_on_sale',
	'after the window: not_on_sale');

# --- many SKUs share an edge ----------------------------------------------------

# stocked and given their window in one transaction: heard off sale first
my $edge = as_admin($node, 'shop', q{
BEGIN;
SELECT count(inventory.restock('DROP-' || g, 2, 'in-drop-' || g)) FROM generate_series(1, 300) g;
SELECT count(inventory.set_rules('DROP-' || g, sale_starts => date_trunc('second', now()) + interval '4 s'))
  FROM generate_series(1, 300) g;
COMMIT;
SELECT extract(epoch FROM date_trunc('second', now()) + interval '4 s')});
$edge = (split /\n/, $edge)[-1];
ok(wait_until(30, sub { (grep { /^\{"sku": "DROP-\d+".*"on_sale": false/ } map { $_->[0] } @{ heard($shop) }) >= 300 }),
	'300 SKUs stocked with a window ahead are heard off sale');
my ($all_at, %pids);
wait_until(30, sub {
	my @open = grep { $_->[0] =~ /^\{"sku": "DROP-\d+".*"on_sale": true/ } @{ heard($shop) };
	return 0 unless @open >= 300;
	$all_at = time;
	%pids = map { $_->[1] => 1 } @open;
	return 1;
});
ok(defined $all_at && $all_at - $edge < 1.0,
	sprintf('300 SKUs sharing an edge are each heard opening within a second (%.3f s)', ($all_at // 0) - $edge));
is(scalar(keys %pids), 1, 'from one worker');
is(as_monitor($node, 'shop', q{SELECT count(*) FROM inventory.stock WHERE sku LIKE 'DROP-%' AND on_sale}), '300',
	'inventory.stock has them on sale');

# --- a database without the setting -----------------------------------------------

my $quiet = listener('quiet');
as_admin($node, 'quiet', q{
SELECT inventory.restock('Q', 1, 'in-q');
SELECT inventory.set_rules('Q', sale_starts => now() + interval '1 s')});
my $q_starts = epoch_of('quiet', 'Q', 'sale_starts');
wait_until(3, sub { time > $q_starts + 1.5 });
is(scalar(@{ heard($quiet) }), 0, 'a database without inventory.stock_notifications hears nothing of its windows');

# --- a restart ------------------------------------------------------------------

as_admin($node, 'shop', q{
SELECT inventory.restock('AFTER', 3, 'in-after');
SELECT inventory.set_rules('AFTER', sale_starts => now() + interval '8 s')});
my $after_starts = epoch_of('shop', 'AFTER', 'sale_starts');
ok(wait_until(30, sub { grep { /"on_sale": false/ } @{ of_sku($shop, 'AFTER') } }), 'AFTER is heard off sale');
$_->{in} .= "\\q\n", $_->{run}->finish for ($shop, $quiet);
$node->restart;
$shop = listener('shop');
my $after = heard_on_sale($shop, 'AFTER', 'true', 30, 0);
ok(defined $after && $after - $after_starts < 1.0,
	sprintf('after a restart, a window set before it is heard opening within a second (%.3f s)', ($after // 0) - $after_starts));

is(as_admin($node, 'shop', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"the cache agrees with the tables: verify('30 s') is empty");
$shop->{in} .= "\\q\n";
$shop->{run}->finish;
$node->stop;
done_testing();

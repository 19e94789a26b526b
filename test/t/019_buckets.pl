# Hot SKUs in buckets: four nodes and a router on one machine.
#
#   * split, merge and rebalance: the units spread, gathered and evened out,
#     rerunnable, with clear errors for what they refuse;
#   * a reservation lives in the bucket of its order (of its buyer), a retry
#     finds it there -- also after the buckets changed -- and a short bucket
#     takes units from the others, so that a call is insufficient only when
#     no bucket can serve it, also when 16 sessions fall through into one
#     bucket at once;
#   * a buyer with a limit on a split SKU, racing from many sessions, gets
#     exactly the limit;
#   * 64 clients through the router racing for a split hot SKU and for
#     plain SKUs, while the SKU is rebalanced, split anew and merged: units
#     sold = units stocked, exactly, each key reserved once;
#   * a transfer interrupted between its two sides is in transit in
#     inventory.nodes and finished by rerunning rebalance;
#   * a node down: the split SKU sells from its other buckets, and the
#     orders whose bucket is on that node fail with an error naming it;
#     orders are paid with or without the SKU when their key is on a node
#     that answers, and a call that may concern the node down fails having
#     done nothing;
#   * a fall-through whose receiving bucket fails answers its error, leaves
#     one transfer's units in transit, and the next fall-through finishes
#     it by itself;
#   * a session remembers a SKU short in every bucket for short_recheck;
#   * carts with a line of a split SKU;
#   * a hot standby of the router database routes split SKUs as its primary.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::Bin/lib";
use RouterCluster qw(start_nodes start_router);
use InventoryTest qw(psql_session wait_said);

my $NPARTS = 4;
my @nodes  = start_nodes($NPARTS);
my $router = start_router(\@nodes, 1);

sub node_sql
{
	my ($p, $sql) = @_;
	return $nodes[$p]->safe_psql("inv_p$p", $sql);
}
sub shop { return $router->safe_psql('shop', $_[0]); }
sub shop_err
{
	my ($sql) = @_;
	my ($r, $out, $err) = $router->psql('shop', "\\set VERBOSITY verbose\n$sql");
	return $err;
}
# the partition of the bucket of an order (or buyer) under a SKU's layout
sub home_of
{
	my ($sku, $basis) = @_;
	return shop("SELECT inventory._home(parts, '$basis') FROM inventory.buckets WHERE sku = '$sku'");
}
# orders whose bucket is on the given partition
sub orders_on
{
	my ($sku, $part, $n, $prefix) = @_;
	return split /\n/, shop(qq{
SELECT o FROM (SELECT '$prefix' || g AS o FROM generate_series(1, 1000) g) x, inventory.buckets b
 WHERE b.sku = '$sku' AND inventory._home(b.parts, o) = $part ORDER BY length(o), o LIMIT $n});
}
# what each partition holds of a SKU: available units, and reserved units
sub per_node
{
	my ($sku) = @_;
	return join ' ', map {
		my $v = node_sql($_, "SELECT available || '/' || reserved FROM inventory.stock WHERE sku = '$sku'");
		$v eq '' ? '-' : $v
	} 0 .. $NPARTS - 1;
}

# --- split, merge, rebalance ---------------------------------------------

shop("SELECT inventory.restock('HOT', 1000, 'in-hot')");
my $home = shop("SELECT inventory.partition_of('HOT')");
my @want = map { ($home + $_) % $NPARTS } 0 .. 3;

# split, merge and rebalance are for inventory_admin; a reserve is for inventory_app
shop("CREATE ROLE shop_api LOGIN IN ROLE inventory_app; CREATE ROLE warehouse LOGIN IN ROLE inventory_admin");
shop("GRANT USAGE ON FOREIGN SERVER inventory_cluster TO inventory_app, inventory_admin");
like(shop_err("SET ROLE shop_api; SELECT * FROM inventory.split('HOT', 2)"),
	qr/ERROR:  42501: permission denied for function split/, 'inventory_app cannot split');
like(shop_err("SET ROLE shop_api; SELECT * FROM inventory.rebalance('HOT')"),
	qr/ERROR:  42501: permission denied for function rebalance/, 'nor rebalance');
like(shop_err("SET ROLE shop_api; SELECT * FROM inventory._transfer('HOT', 0, 1, 5)"),
	qr/ERROR:  42501: permission denied for function _transfer/, 'nor move units between partitions');

like(shop_err("SELECT * FROM inventory.split('NOPE', 2)"), qr/ERROR:  42704: sku "NOPE" does not exist/,
	'split of an unknown SKU: 42704');
like(shop_err("SELECT * FROM inventory.split('HOT', 5)"),
	qr/ERROR:  22023: buckets must be between 1 and 4\nDETAIL:  Each bucket is on a partition of its own, and inventory_cluster has 4 partitions; 5 buckets were asked for/,
	'more buckets than partitions: 22023 with the count');
like(shop_err("SELECT * FROM inventory.split('HOT', 0)"), qr/ERROR:  22023: buckets must be between 1 and 4/,
	'zero buckets: 22023');
like(shop_err("SELECT * FROM inventory.split(NULL, 2)"), qr/ERROR:  22004: sku must not be null/,
	'a NULL SKU: 22004');

is($router->safe_psql('shop', "SET ROLE warehouse; SELECT string_agg(bucket || ':' || part || ':' || available, ' ' ORDER BY bucket) FROM inventory.split('HOT', 4)"),
	join(' ', map { "$_:$want[$_]:250" } 0 .. 3),
	'split(HOT, 4) by inventory_admin: 250 units in each bucket, bucket 0 on the SKU\'s partition, then the next ones');
is(per_node('HOT'), join(' ', map { '250/0' } 0 .. 3), 'each node holds its bucket, as its own SKU HOT');
is(shop("SELECT sku || ' ' || on_hand || ' ' || available FROM inventory.stock WHERE sku = 'HOT'"),
	'HOT 1000 1000', 'inventory.stock sums the buckets: one row');
is(shop("SELECT inventory.available('HOT')"), '1000', 'available() sums the buckets');
is(shop("SELECT buckets || ' ' || parts::text || ' ' || former_layouts FROM inventory.buckets WHERE sku = 'HOT'"),
	"4 {" . join(',', @want) . "} 1", 'inventory.buckets: four buckets, the unsplit layout kept for now');
is(shop("SELECT string_agg(available::text, ' ' ORDER BY bucket) FROM inventory.split('HOT', 4)"),
	'250 250 250 250', 'split again with the same count: nothing moves');
is(shop("SELECT former_layouts FROM inventory.buckets WHERE sku = 'HOT'"), '0',
	'and the unsplit layout, under which no key was made, is forgotten');
is(shop("SELECT count(*) FROM inventory.nodes WHERE in_transit <> 0"), '0', 'nothing in transit');

# inventory_monitor reads a split SKU as one row, and cannot move its units
shop("CREATE ROLE exporter LOGIN IN ROLE inventory_monitor");
is(shop(qq{SET ROLE exporter;
SELECT inventory.available('HOT') || ' ' || (SELECT on_hand FROM inventory.stock WHERE sku = 'HOT')
	   || ' ' || (SELECT buckets FROM inventory.buckets WHERE sku = 'HOT')
	   || ' ' || (SELECT count(*) FROM inventory.nodes WHERE in_transit = 0)}),
	"1000 1000 4 $NPARTS", 'inventory_monitor reads available, stock, buckets and nodes of a split SKU');
like(shop_err("SET ROLE exporter; SELECT * FROM inventory.rebalance('HOT')"),
	qr/ERROR:  42501: permission denied for function rebalance/, 'but cannot rebalance it');
like(shop_err("SET ROLE exporter; SELECT inventory._top_up('HOT', $want[1], 5)"),
	qr/ERROR:  42501: permission denied for function _top_up/, 'nor move units into a bucket');

like(shop_err("SELECT * FROM inventory.adjust('HOT', 5, 'count-hot')"),
	qr/ERROR:  0A000: sku "HOT" is split into buckets\nDETAIL:  A stocktake sets the on_hand of the whole SKU.*\nHINT:  Merge it first/,
	'adjust() of a split SKU: 0A000, merge first');
like(shop_err("SELECT * FROM inventory.reserve('HOT', 1, 'ev-1', expected_version => 3)"),
	qr/ERROR:  0A000: expected_version cannot be checked on a split SKU\nDETAIL:  "HOT" is split into 4 buckets, each with a version of its own/,
	'expected_version on a split SKU: 0A000');

# --- where a reservation lives ------------------------------------------------

my @o = map { "k-$_" } 1 .. 12;
is($router->safe_psql('shop', "SET ROLE shop_api; SELECT count(*) FROM unnest(ARRAY['" . join("','", @o) . "']) o, inventory.reserve('HOT', 2, o) r WHERE r.ok"),
	'12', 'inventory_app reserves on the split SKU');
is(join(' ', map { my $h = home_of('HOT', $_); node_sql($h, "SELECT count(*) FROM inventory.ledger WHERE order_id = '$_'") } @o),
	join(' ', ('1') x 12), 'each reservation is on the partition of its order\'s bucket');
is(shop("SELECT string_agg(status, ' ') FROM unnest(ARRAY['" . join("','", @o) . "']) o, inventory.reserve('HOT', 2, o) r"),
	join(' ', ('duplicate') x 12), 'a retry finds its key: duplicate');
is(shop("SELECT string_agg(r.status || ':' || r.state, ' ') FROM (VALUES ('k-1'), ('k-2')) v(o), inventory.confirm(o, 1, 'HOT') r"),
	'ok:CONFIRMED ok:CONFIRMED', 'confirm with the SKU finds the bucket of the key');
is(shop("SELECT r.status || ':' || r.state FROM inventory.cancel('k-3', 1, 'HOT') r"), 'ok:CANCELLED',
	'cancel with the SKU too');
is(shop("SELECT r.status || ':' || r.state FROM inventory.extend('k-4', 1, '2 hours', 'HOT') r"), 'ok:PENDING',
	'extend with the SKU too');
is(shop("SELECT r.status FROM inventory.confirm('k-404', 1, 'HOT') r"), 'not_found', 'an unknown key: not_found');

# A small SKU, one unit per bucket: four orders of one bucket take all four
# units, three of them moved in from the other buckets, in order.
shop("SELECT inventory.restock('SMALL', 4, 'in-small')");
shop("SELECT count(*) FROM inventory.split('SMALL', 4)");
my $small0 = shop("SELECT parts[1] FROM inventory.buckets WHERE sku = 'SMALL'");
my @s = orders_on('SMALL', $small0, 5, 'sm-');
my $moved_q = "SELECT coalesce(sum(qty), 0) FROM inventory._transfer_rows(ARRAY[0, 1, 2, 3], 'SMALL') t WHERE batch_id = 2";
my $moved_before = shop($moved_q);
is($router->safe_psql('shop', "SET ROLE shop_api; SELECT string_agg(r.status, ' ' ORDER BY o) FROM unnest(ARRAY['" . join("','", @s[0 .. 3]) . "']) o, inventory.reserve('SMALL', 1, o) r"),
	'ok ok ok ok', 'four orders of one bucket get the four units of four buckets (as inventory_app)');
is(node_sql($small0, "SELECT count(*) || ' ' || sum(qty) FROM inventory.ledger WHERE sku = 'SMALL' AND kind = 'reserve'"),
	'4 4', 'all four reservations are in their bucket');
is(shop("SELECT r.status || ' ' || r.available FROM inventory.reserve('SMALL', 1, '$s[4]') r"), 'insufficient 0',
	'a fifth: insufficient, when no bucket can serve it');
is(shop("SELECT r.status FROM inventory.reserve('SMALL', 1, '$s[1]') r"), 'duplicate', 'a retry of one of them: duplicate');
is(shop($moved_q) - $moved_before, 3, 'three units moved in, each as a keyed restock on the receiving node');

# A session that found every bucket short answers from its own bucket
# for inventory_router.short_recheck, while other sessions see units that
# came back in another bucket; with 0, it asks the other buckets each time.
shop("SELECT inventory.restock('SHORT', 2, 'in-short')");
shop("SELECT count(*) FROM inventory.split('SHORT', 2)");
my ($sh0, $sh1) = split /,/, shop("SELECT parts[1] || ',' || parts[2] FROM inventory.buckets WHERE sku = 'SHORT'");
my @sh = orders_on('SHORT', $sh0, 4, 'sh-');
is(shop("SELECT string_agg(r.status, ' ' ORDER BY o) FROM unnest(ARRAY['$sh[0]', '$sh[1]']) o, inventory.reserve('SHORT', 1, o) r"),
	'ok ok', 'two orders of one bucket take both units of the SKU');
my $back = sub { "SELECT ok FROM inventory._restock_at($sh1, 'SHORT', 1, '$_[0]', NULL, NULL, NULL);" };
is(shop("SET inventory_router.short_recheck = '1 hour';
SELECT r.status FROM inventory.reserve('SHORT', 1, '$sh[2]') r;
" . $back->('short-back-1') . "
SELECT r.status FROM inventory.reserve('SHORT', 1, '$sh[2]') r;"),
	"insufficient\nt\ninsufficient", 'a session that found every bucket short does not ask them again within short_recheck');
is(shop("SELECT r.status FROM inventory.reserve('SHORT', 1, '$sh[2]') r"), 'ok',
	'another session gets the unit that came back in the other bucket');
is(shop("SET inventory_router.short_recheck = 0;
SELECT r.status FROM inventory.reserve('SHORT', 1, '$sh[3]') r;
" . $back->('short-back-2') . "
SELECT r.status FROM inventory.reserve('SHORT', 1, '$sh[3]') r;"),
	"insufficient\nt\nok", 'with short_recheck 0, every call asks the other buckets');

# a call that all buckets together cannot serve moves nothing
shop("SELECT inventory.restock('PAIR', 8, 'in-pair')");
shop("SELECT count(*) FROM inventory.split('PAIR', 2)");
is(shop("SELECT r.status FROM inventory.reserve('PAIR', 9, 'pair-1') r"), 'insufficient', '9 of 8: insufficient');
is(shop("SELECT count(*) FROM inventory._transfer_rows(ARRAY[0, 1, 2, 3], 'PAIR') t"), '2',
	'and nothing moved: the split\'s one transfer (two movements) is all');

# --- a retry after the buckets changed ------------------------------------------

shop("SELECT count(*) FROM inventory.merge('HOT')");
is(shop("SELECT buckets || ' ' || former_layouts FROM inventory.buckets WHERE sku = 'HOT'"), '1 1',
	'merged back to one bucket, the four-bucket layout is kept: keys were made under it');
is(shop("SELECT string_agg(status || ':' || state, ' ') FROM unnest(ARRAY['k-1', 'k-5', 'k-6']) o, inventory.reserve('HOT', 2, o) r"),
	'duplicate:CONFIRMED duplicate:PENDING duplicate:PENDING',
	'a retry made before the merge finds its key in its former bucket');
is(shop("SELECT string_agg(coalesce(bucket::text, '-') || ':' || available, ' ' ORDER BY bucket NULLS LAST, part) FROM inventory._bucket_report('HOT')"),
	'0:978 -:0 -:0 -:0', 'the available units are all in bucket 0: 1000 - 12 x 2 + the 2 cancelled');
shop("SELECT count(*) FROM inventory.split('HOT', 4)");

# --- a buyer with a limit -----------------------------------------------------

shop("SELECT inventory.restock('LIM', 400, 'in-lim')");
shop("SELECT inventory.set_rules('LIM', max_per_buyer => 3)");
shop("SELECT count(*) FROM inventory.split('LIM', 4)");
is(join(' ', map { node_sql($_, "SELECT max_per_buyer FROM inventory.sku WHERE sku = 'LIM'") } 0 .. 3), '3 3 3 3',
	'split copies the rules to every bucket');
# empty the buyer's bucket, so that every unit the buyer gets moves in
my $bhome = home_of('LIM', 'buyer-1');
node_sql($bhome, "SELECT inventory.withdraw('LIM', 100, 'drain-lim')");
$router->pgbench(
	'--no-vacuum --client=32 --jobs=2 --transactions=10 -M prepared',
	0,
	[qr{processed: 320/320}],
	[qr{^$}],
	'32 sessions of one buyer make 320 attempts on the split SKU',
	{ 'buyer' => "\\set n random(1, 9000000000000000000)\n"
		  . "SELECT (inventory.reserve('LIM', 1, 'lim-' || :n, buyer_id => 'buyer-1')).status;\n" },
	'shop');
is(join(' ', map { node_sql($_, "SELECT coalesce(sum(qty), 0) FROM inventory.ledger WHERE buyer_id = 'buyer-1'") } 0 .. 3),
	join(' ', map { $_ == $bhome ? 3 : 0 } 0 .. 3), 'the buyer holds exactly 3, all in the buyer\'s bucket');
is(shop("SELECT r.status FROM inventory.reserve('LIM', 1, 'lim-x', buyer_id => 'buyer-1') r"), 'limit_exceeded',
	'a fourth: limit_exceeded');
shop("SELECT count(*) FROM inventory.rebalance('LIM')");

# --- an empty bucket, 16 sessions of its orders at once ---------------------------

# Each falls through; the units moved in for one may be taken by another
# first, and then it moves more: none answers insufficient while the other
# buckets hold units.
shop("SELECT inventory.restock('CROWD', 100000, 'in-crowd')");
shop("SELECT count(*) FROM inventory.split('CROWD', 4)");
my $cp = (split /,/, shop("SELECT array_to_string(parts, ',') FROM inventory.buckets WHERE sku = 'CROWD'"))[2];
node_sql($cp, "SELECT inventory.withdraw('CROWD', inventory.available('CROWD'), 'drain-crowd')");
$router->pgbench(
	'--no-vacuum --client=16 --jobs=2 --transactions=40 -M prepared',
	0,
	[qr{processed: 640/640}],
	[qr{^$}],
	'16 sessions reserve 640 orders of the empty bucket',
	{ 'crowd' => "\\set n random(1, 9000000000000000000)\n"
		  . "SELECT (inventory.reserve('CROWD', 1, x.o)).status FROM (SELECT 'crowd-' || :n || '-' || g AS o FROM generate_series(1, 64) g, inventory.buckets b WHERE b.sku = 'CROWD' AND inventory._home(b.parts, 'crowd-' || :n || '-' || g) = $cp LIMIT 1) x;\n" },
	'shop');
is(join(' ', map { node_sql($_, "SELECT count(*) FROM inventory.ledger WHERE order_id LIKE 'crowd-%'") } 0 .. 3),
	join(' ', map { $_ == $cp ? 640 : 0 } 0 .. 3), 'every one of them is reserved, in that bucket: none was refused');

# --- 64 clients, while the buckets change -----------------------------------------

shop("SELECT inventory.restock('RUSH', 2000, 'in-rush')");
shop("SELECT count(*) FROM inventory.split('RUSH', 4)");
shop("SELECT count(r.status) FROM generate_series(1, 100) g, inventory.restock('P-' || g, 5, 'in-p-' || g) r");
my $script = "$PostgreSQL::Test::Utils::tmp_check/rush.sql";
open my $f, '>', $script or die "$script: $!";
print $f "\\set n random(1, 9000000000000000000)\n\\set s random(1, 100)\n"
  . "SELECT (inventory.reserve('RUSH', 1, 'rush-' || :n)).status;\n"
  . "SELECT (inventory.reserve('RUSH', 1, 'rush2-' || :n, ttl => '1 hour')).status;\n"
  . "SELECT (inventory.reserve('P-' || :s, 1, 'p-' || :n)).status;\n";
close $f;
my ($bench_out, $bench_err);
my $bench = IPC::Run::start(
	[ 'pgbench', '--no-vacuum', '--client=64', '--jobs=2', '--transactions=60', '-M', 'prepared',
	  '-h', $router->host, '-p', $router->port, '-f', $script, 'shop' ],
	'>', \$bench_out, '2>', \$bench_err);
my @admin;
for my $step ('rebalance', 'split 2', 'rebalance', 'merge', 'split 4', 'rebalance')
{
	my $sql = $step eq 'rebalance' ? "SELECT count(*) FROM inventory.rebalance('RUSH')"
	  : $step eq 'merge'           ? "SELECT count(*) FROM inventory.merge('RUSH')"
	  :                              "SELECT count(*) FROM inventory.split('RUSH', " . (split / /, $step)[1] . ")";
	my ($r, $out, $err) = $router->psql('shop', $sql);
	push @admin, $r == 0 ? 'ok' : "$step: $err";
}
$bench->finish;
like($bench_out, qr{processed: 3840/3840}, '64 clients made 11,520 calls through the router');
is(join(' ', @admin), 'ok ok ok ok ok ok', 'rebalance, split to 2, merge and split to 4 under that load');
shop("SELECT count(*) FROM inventory.rebalance('RUSH')");
# what the race left on sale (a call may find units between two buckets
# while they move), sold now
my $left = shop("SELECT count(*) FROM generate_series(1, 2000) g, inventory.reserve('RUSH', 1, 'sweep-' || g) r WHERE r.ok");
note("units left after the race: $left");
my ($sold, $dups) = (0, 0);
my %seen;
for my $p (0 .. $NPARTS - 1)
{
	for (split /\n/, node_sql($p, "SELECT order_id || '|' || qty FROM inventory.ledger WHERE sku = 'RUSH' AND kind = 'reserve'"))
	{
		my ($k, $q) = split /\|/;
		$dups++ if $seen{$k}++;
		$sold += $q;
	}
}
is($sold, 2000, 'all 2000 units of the split SKU sold, on all nodes together, and no more');
is($dups, 0, 'each key reserved once in the whole cluster');
is(shop("SELECT on_hand || ' ' || reserved || ' ' || available FROM inventory.stock WHERE sku = 'RUSH'"),
	'2000 2000 0', 'inventory.stock: 2000 on hand, 2000 reserved, none available: nothing oversold, nothing lost');
is(shop("SELECT sum(reserved) || ' ' || sum(on_hand) FROM inventory.stock WHERE sku LIKE 'P-%'"), '500 500',
	'the plain SKUs sold exactly what they had');
is(shop("SELECT coalesce(sum(in_transit), 0) FROM inventory.nodes"), '0', 'nothing in transit');
is(shop('SELECT count(*) FROM inventory.verify()'), '0', 'verify() is empty on every node');

# --- an interrupted transfer --------------------------------------------------

shop("SELECT inventory.restock('MOVE', 40, 'in-move')");
shop("SELECT count(*) FROM inventory.split('MOVE', 2)");
my @mp = split /,/, shop("SELECT array_to_string(parts, ',') FROM inventory.buckets WHERE sku = 'MOVE'");
# the router died after the giving side: withdrawn, never restocked
node_sql($mp[1], "SELECT inventory.withdraw('MOVE', 15, 'inventory:transfer:$mp[1]:$mp[0]:test-cut', 1)");
is(shop("SELECT part || ':' || in_transit FROM inventory.nodes WHERE in_transit <> 0"), "$mp[1]:15",
	'inventory.nodes: 15 units in transit from the giving partition');
is(shop("SELECT available FROM inventory.stock WHERE sku = 'MOVE'"), '25', 'they are on sale nowhere meanwhile');
is(shop("SELECT string_agg(available::text, ' ' ORDER BY bucket) FROM inventory.rebalance('MOVE')"), '20 20',
	'rebalance restocks them by their key, then evens out');
is(shop("SELECT coalesce(sum(in_transit), 0) FROM inventory.nodes"), '0', 'nothing in transit any more');
is(node_sql($mp[0], "SELECT count(*) FROM inventory.ledger WHERE order_id = 'inventory:transfer:$mp[1]:$mp[0]:test-cut' AND batch_id = 2"),
	'1', 'the receiving side has the transfer\'s restock, under its key');
shop("SELECT count(*) FROM inventory.rebalance('MOVE')");
is(shop("SELECT on_hand FROM inventory.stock WHERE sku = 'MOVE'"), '40', 'a rerun changes nothing: 40 units');

# --- a node down -----------------------------------------------------------------

shop("SELECT inventory.restock('DOWN', 400, 'in-down')");
shop("SELECT count(*) FROM inventory.split('DOWN', 4)");
my ($d0, $dp) = split /,/, shop("SELECT parts[1] || ',' || parts[2] FROM inventory.buckets WHERE sku = 'DOWN'");
my ($other, $other2, $pay_up, $cancel_up, $extend_up) = orders_on('DOWN', $d0, 5, 'down-');
my ($mine, $pay_down) = orders_on('DOWN', $dp, 2, 'down-');
shop("SELECT inventory.reserve('DOWN', 1, '$_', ttl => '1 hour')") for ($pay_up, $cancel_up, $extend_up, $pay_down);
my ($nosku_up, $order_up) = orders_on('DOWN', $d0, 2, 'down-nosku-');
shop("SELECT inventory.reserve('DOWN', 1, '$_', ttl => '1 hour')") for ($nosku_up, $order_up);
# LONE: units only in the bucket on the node that goes down
shop("SELECT inventory.restock('LONE', 8, 'in-lone')");
shop("SELECT count(*) FROM inventory.split('LONE', 4)");
node_sql($_, "SELECT inventory.withdraw('LONE', inventory.available('LONE'), 'drain-lone-$_')")
  for grep { $_ != $dp } split /,/, shop("SELECT array_to_string(parts, ',') FROM inventory.buckets WHERE sku = 'LONE'");
my ($lone_up, $lone_up2) = orders_on('LONE', $d0, 2, 'lone-');
$nodes[$dp]->stop('immediate');
is(shop("SELECT r.status FROM inventory.reserve('DOWN', 1, '$other') r"), 'ok',
	'a node down: an order of another bucket is served');
like(shop_err("SELECT * FROM inventory.reserve('DOWN', 1, '$mine')"), qr/\[inv_p$dp\]/,
	'an order whose bucket is on the node down fails with an error naming its partition');
is(shop("SELECT r.status || ' ' || r.state FROM inventory.confirm('$pay_up', 1, 'DOWN') r"), 'ok CONFIRMED',
	'a node down: an order of another bucket is paid for');
is(shop("SELECT r.status || ' ' || r.state FROM inventory.cancel('$cancel_up', 1, 'DOWN') r"), 'ok CANCELLED',
	'and cancelled');
is(shop("SELECT r.status || ' ' || r.state FROM inventory.extend('$extend_up', 1, '2 hours', 'DOWN') r"),
	'ok PENDING', 'and extended');
my $down_err = shop_err("SELECT * FROM inventory.confirm('$pay_down', 1, 'DOWN')");
like($down_err, qr/\[inv_p$dp\]/, 'the confirm of an order whose bucket is on the node down fails with its error');
like($down_err, qr/it may be on partition $dp, which could not be asked\. The confirm was done nowhere/,
	'saying that it was done nowhere');
like(shop_err("SELECT * FROM inventory.cancel('never-reserved', 1, 'DOWN')"),
	qr/it may be on partition $dp/, 'a key found nowhere that answered may be on the node down: an error, not not_found');
is(shop("SELECT sum(in_transit) || ' ' || (sum(transit_unknown) > 0) FROM inventory.nodes WHERE reachable"), '0 true',
	'inventory.nodes: nothing is in transit, and the units sent to the node down are shown as not known');
is(shop("SELECT count(*) FROM inventory.nodes WHERE NOT reachable AND in_transit IS NULL AND transit_unknown IS NULL"),
	'1', 'the node down itself: not reachable, nothing known');
node_sql($d0, "SELECT inventory.withdraw('DOWN', inventory.available('DOWN'), 'drain-down')");
is(shop("SELECT r.status FROM inventory.reserve('DOWN', 1, '$other2') r"), 'ok',
	'its bucket empty, it falls through the buckets that answer');
is(shop("SELECT r.status || ' ' || r.state FROM inventory.confirm('$nosku_up') r"), 'ok CONFIRMED',
	'confirm without the SKU: the key found on a node that answers is paid');
like(shop_err("SELECT * FROM inventory.cancel('never-reserved')"),
	qr/\[inv_p$dp\].*it may be on partition $dp, which could not be asked\. The cancel was done nowhere/s,
	'without the SKU, a key found nowhere that answered: the node down\'s error, done nowhere');
my $order_err = shop_err("SELECT * FROM inventory.confirm_order('$order_up')");
like($order_err, qr/\[inv_p$dp\].*Order "$order_up" may have lines on partition $dp, which could not be asked\. The confirm_order was done nowhere/s,
	'confirm_order with a node down: its error, since the order may have lines there');
is(node_sql($d0, "SELECT state FROM inventory.ledger WHERE order_id = '$order_up'"), 'PENDING',
	'and it was done nowhere');
is(shop("SELECT r.status || '/' || coalesce(current_setting('inventory_router.short_sku', true), '') FROM inventory.reserve('LONE', 1, '$lone_up') r"),
	'insufficient/', 'the only bucket with units on the node down: insufficient, and the SKU is not remembered as short');
$nodes[$dp]->start;
is(shop("SELECT string_agg(r.status, ' ') FROM inventory.confirm_order('$order_up') r"), 'ok',
	'the node back: confirm_order pays the order');
is(shop("SELECT r.status FROM inventory.reserve('LONE', 1, '$lone_up2') r"), 'ok',
	'and the bucket on it gives its units again');
is(shop("SELECT r.status || ' ' || r.state FROM inventory.confirm('$pay_down', 1, 'DOWN') r"), 'ok CONFIRMED',
	'the node back: the confirm that failed had done nothing, and now pays');
is(shop("SELECT r.status FROM inventory.confirm('$pay_up', 1, 'DOWN') r"), 'duplicate',
	'the one paid during the outage answers duplicate');
is(shop('SELECT count(*) FROM inventory.verify()'), '0', 'the node back: verify() is empty on every node');
is(shop("SELECT count(*) FROM inventory.nodes WHERE reachable"), $NPARTS, 'every partition answers');
is(shop("SELECT sum(in_transit) || ' ' || sum(transit_unknown) FROM inventory.nodes"), '0 0',
	'and nothing is in transit or unknown');

# --- a receiving bucket that fails during a fall-through ---------------------------

# Its restock waits on a lock until lock_timeout: the reserve fails with its
# node's error, one donor's units are in transit (not every donor's), and
# the next fall-through finishes the transfer by itself.
shop("SELECT inventory.restock('RECV', 40, 'in-recv')");
shop("SELECT count(*) FROM inventory.split('RECV', 4)");
my $rp = (split /,/, shop("SELECT array_to_string(parts, ',') FROM inventory.buckets WHERE sku = 'RECV'"))[1];
my ($recv1, $recv2) = orders_on('RECV', $rp, 2, 'recv-');
node_sql($rp, "SELECT inventory.withdraw('RECV', inventory.available('RECV'), 'empty-recv')");
$nodes[$rp]->safe_psql('postgres', "ALTER DATABASE inv_p$rp SET lock_timeout = '300ms'");
my $locker = psql_session($nodes[$rp], 60, 1, "inv_p$rp");
$locker->{in} .= "BEGIN;\nSELECT sku FROM inventory.sku WHERE sku = 'RECV' FOR UPDATE;\n";
wait_said($locker, qr/RECV/);
my $restocks_sql = "SELECT count(*) FROM inventory.ledger WHERE order_id LIKE 'inventory:transfer:%:$rp:%' AND batch_id = 2 AND sku = 'RECV'";
my $restocks = node_sql($rp, $restocks_sql);
my $recv_err = shop_err("SELECT * FROM inventory.reserve('RECV', 1, '$recv1')");
like($recv_err, qr/\[inv_p$rp\].*lock timeout/s, 'a fall-through whose receiving bucket fails: its node\'s error, not insufficient');
like($recv_err, qr/1 units of "RECV" moved into it from partition \d+; they are in transit until partition $rp answers/,
	'saying which units are in transit');
is(shop("SELECT sum(in_transit) FROM inventory.nodes"), '1', 'one unit in transit: the top-up stopped at the failure');
$locker->{in} .= "COMMIT;\n";
$locker->{in} .= "\\q\n";
$locker->{run}->finish;
$nodes[$rp]->safe_psql('postgres', "ALTER DATABASE inv_p$rp RESET lock_timeout");
is(shop("SELECT r.status FROM inventory.reserve('RECV', 1, '$recv1') r"), 'ok',
	'the retry: ok, the unit in transit restocked by the fall-through first');
is(shop("SELECT sum(in_transit) || ' ' || sum(transit_unknown) FROM inventory.nodes"), '0 0',
	'nothing is in transit, without a rebalance');
is(node_sql($rp, $restocks_sql), $restocks + 1,
	'the receiving bucket has the transfer\'s restock, under its key, and no other: the unit that arrived served the retry');
is(shop("SELECT on_hand || ' ' || reserved FROM inventory.stock WHERE sku = 'RECV'"), '30 1',
	'units conserved: 40 restocked, 10 withdrawn, 1 reserved');
# a reservation under a key of the transfers' form is not a transfer: a
# fall-through never restocks its units
my $forged = "inventory:transfer:$d0:$rp:00000000-0000-0000-0000-000000000000";
is(shop("SELECT r.status FROM inventory.reserve('RECV', 1, '$forged', ttl => '1 hour') r"), 'ok',
	'a reservation under a key of the transfers\' form');
my $recv_left = node_sql($rp, "SELECT inventory.available('RECV')");
node_sql($rp, "SELECT inventory.withdraw('RECV', $recv_left, 'empty-recv-2')") if $recv_left > 0;
is(shop("SELECT r.status FROM inventory.reserve('RECV', 1, '$recv2') r"), 'ok', 'another fall-through into the bucket');
is(shop("SELECT on_hand || ' ' || reserved || ' ' || (SELECT sum(in_transit) FROM inventory.nodes) FROM inventory.stock WHERE sku = 'RECV'"),
	(30 - $recv_left) . ' 3 0', 'it restocked nothing for that reservation: units conserved, nothing in transit');

# --- carts ---------------------------------------------------------------------

shop("SELECT inventory.restock('CARTX', 2, 'in-cartx')");
shop("SELECT count(*) FROM inventory.split('CARTX', 2)");
my $cx = home_of('CARTX', 'cart-1');
node_sql($cx, "SELECT inventory.withdraw('CARTX', 1, 'drain-cartx')");
is(shop("SELECT string_agg(r.status, ' ') FROM inventory.reserve_cart('cart-1', ARRAY['CARTX', 'P-1'], '{1,1}') r"),
	'cart_refused insufficient', 'a cart whose plain line is sold out: refused');
is(shop("SELECT reserved FROM inventory.stock WHERE sku = 'CARTX'"), '0', 'and it leaves no hold on the split SKU');
shop("SELECT inventory.restock('P-1', 1, 'in-p-1-again')");
is(shop("SELECT string_agg(r.status, ' ') FROM inventory.reserve_cart('cart-2', ARRAY['CARTX', 'P-1'], '{1,1}') r"),
	'ok ok', 'a cart with a line of the split SKU whose bucket is short: units move in, the cart is whole');
is(shop("SELECT reserved FROM inventory.stock WHERE sku = 'CARTX'"), '1', 'one unit of the split SKU held');

# --- more routers: hot standbys of the router database ----------------------------

# A standby of the router database has its layouts, by replication: it
# routes, falls through and remembers a short SKU as the primary does.
$router->backup('router_backup');
my $standby = PostgreSQL::Test::Cluster->new('router_standby');
$standby->init_from_backup($router, 'router_backup', has_streaming => 1);
$standby->start;
shop("SELECT inventory.restock('REPL', 2, 'in-repl')");
shop("SELECT count(*) FROM inventory.split('REPL', 2)");
shop("SELECT count(*) FROM inventory.rebalance('REPL')");
$router->wait_for_catchup($standby);
my ($r0) = split /,/, shop("SELECT parts[1] || ',' FROM inventory.buckets WHERE sku = 'REPL'");
my @ro = orders_on('REPL', $r0, 3, 'repl-');
is($standby->safe_psql('shop', "SELECT buckets FROM inventory.buckets WHERE sku = 'REPL'"), '2',
	'a standby of the router database has the layouts');
is($standby->safe_psql('shop', "SELECT string_agg(r.status, ' ' ORDER BY o) FROM unnest(ARRAY['$ro[0]', '$ro[1]', '$ro[2]']) o, inventory.reserve('REPL', 1, o) r"),
	'ok ok insufficient', 'through the standby: its bucket, then the other bucket\'s unit moved in, then insufficient');
is($standby->safe_psql('shop', "SELECT r.status FROM inventory.reserve('REPL', 1, '$ro[0]') r"), 'duplicate',
	'a retry through the standby: duplicate');
is(shop("SELECT r.status FROM inventory.reserve('REPL', 1, '$ro[1]') r"), 'duplicate',
	'and through the primary: the same keys');
is(shop('SELECT count(*) FROM inventory.verify()'), '0', 'verify() is empty on every node');

done_testing();

# Users upgrade, they never drop: ALTER EXTENSION inventory UPDATE from every
# earlier version, with the data in place.  A database made with an earlier
# version and full of data keeps working with the new library before it is
# updated, is updated in place one version at a time (0.1 -> 0.2 -> 0.3,
# and 0.2 -> 0.3), and then equals a fresh install of the new version: the
# same objects, definitions, comments and privileges, and the same data,
# keys, holds and counters as before the update.  The router's extension,
# inventory_router, is updated from each of its earlier versions too.
#
# Every call is made by the login role the manual gives it (shop_app,
# shop_admin, shop_monitor), before and after each update: an update must
# keep each role's rights.  The superuser creates and updates the
# extensions and the databases, and compares the catalogs.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(history_sql inventory_node describe_sql key_checks_sql inventory_roles
  as_app as_admin as_monitor as_role as_each_caller);

my $node = inventory_node('upgrade', qq{
inventory.worker_enabled = off
});

# the login roles, once for the server (as the superuser: CREATE ROLE),
# after a CREATE EXTENSION of the default version: only it creates all
# three of the roles they join (inventory_monitor came in 0.3)
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node, 'postgres');

# the catalogs, read by the superuser here and below: scaffolding
my $default = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'inventory'");
my @versions = split /\n/, $node->safe_psql('postgres',
	"SELECT version FROM pg_available_extension_versions WHERE name = 'inventory' ORDER BY string_to_array(version, '.')::int[]");
is($versions[-1], $default, "the default version, $default, is the newest");


# the columns of version 0.1; those added later are checked on their own
# (read by shop_admin: the tables are the administrator's to read)
my $data = q{
SELECT 'stock', (s.sku, s.on_hand, s.reserved, s.available, s.version)::text
  FROM inventory.stock s
UNION ALL SELECT 'sku', (s.sku, s.on_hand, s.version, s.created_at)::text
  FROM inventory.sku s
UNION ALL SELECT 'ledger', (l.order_id, l.batch_id, l.kind, l.sku, l.qty, l.counted,
  l.state, l.created_at, l.expires_at, l.settled_at, l.folded)::text
  FROM inventory.ledger l
ORDER BY 1, 2
};


for my $i (0 .. $#versions - 1)
{
	my $from = $versions[$i];
	my $db = "from_$from" =~ s/\./_/gr;
	# the superuser creates the database and the extension
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION inventory VERSION '$from'");
	as_each_caller($node, $db, history_sql());

	# the new library with the old objects: every entry point still works,
	# for the application's role (its calls first) and the administrator's
	my ($ret_app, $out_app, $err_app) = $node->psql($db, q{
SELECT inventory.available('TEE');
SELECT status FROM inventory.reserve('TEE', 1, 'before-update', ttl => '1 hour');
SELECT status FROM inventory.extend('before-update', 1, '2 hours');
SELECT status FROM inventory.confirm('before-update');
SELECT status FROM inventory.cancel('open');
SELECT status FROM inventory.reserve('TEE', 4, 'open', 1, '1 hour');
SELECT inventory.can_transition('PENDING', 'EXPIRED'), inventory.is_final('PENDING');
}, on_error_stop => 1, extra_params => [ '-U', 'shop_app' ]);
	my ($ret_admin, $out_admin, $err_admin) = $node->psql($db, q{
SELECT status FROM inventory.restock('TEE', 1, 'in-9');
SELECT status FROM inventory.adjust('TEE', 94, 'count-2');
SELECT inventory.expire(), inventory.fold();
SELECT count(*) FROM inventory.verify();
SELECT count(*) FROM inventory.sku_stats;
SELECT count(*) FROM inventory.worker_status;
SELECT * FROM inventory.cache_info();
SELECT inventory.stats_reset();
}, on_error_stop => 1, extra_params => [ '-U', 'shop_admin' ]);
	is("$ret_app $ret_admin", '0 0',
		"version $from works with the new library before the update, for shop_app and shop_admin")
	  or diag "$err_app$err_admin";

	my $before = as_admin($node, $db, $data);

	# a dump of the old version restores into the new one, as a move to a
	# new server does: pg_restore's CREATE EXTENSION makes the new
	# version, and the dump's COPYs, without the columns added since, are
	# restores (the superuser's dump and restore)
	my $dump = $node->basedir . "/$db.dump";
	$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr($db) ], "$from: pg_dump");
	$node->safe_psql('postgres', "CREATE DATABASE restored_$db");
	$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr("restored_$db"), $dump ],
		"$from: its dump restores into a database of $default");
	is($node->safe_psql("restored_$db", "SELECT extversion FROM pg_extension WHERE extname = 'inventory'"),
		$default, "$from: the restored database has $default");
	is(as_admin($node, "restored_$db", $data), $before, "$from: with the dump's data");
	is(as_admin($node, "restored_$db", 'SELECT count(*) FROM inventory.ledger WHERE settled_by IS NOT NULL'),
		'0', "$from: what settled a reservation, unknown before 0.3, is none");
	is(as_monitor($node, "restored_$db", "SELECT count(*) FROM inventory.verify('30 s')"), '0',
		"$from: verify('30 s') of the restored database is empty");

	for my $to (@versions[ $i + 1 .. $#versions ])
	{
		# ALTER EXTENSION UPDATE: the superuser's
		$node->safe_psql($db, "ALTER EXTENSION inventory UPDATE TO '$to'");
		is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'inventory'"),
			$to, "$from: updated to $to");
		is(as_admin($node, $db, $data), $before, "$from: the data is intact at $to");
	}
	# the wait covers any SKU with a change in flight (none should be)
	is(as_monitor($node, $db, "SELECT count(*) FROM inventory.verify('30 s')"), '0',
		"$from: verify('30 s') is empty");
	is($node->safe_psql($db, key_checks_sql()), 'DDDD 4', "$from: the foreign key's four checks are disabled");
	is(as_app($node, $db, q{
SELECT string_agg(s, ' ') FROM (VALUES
  ((inventory.reserve('TEE', 5, 'paid')).status),
  ((inventory.reserve('TEE', 4, 'open')).status),
  ((inventory.cancel('gone')).status),
  ((inventory.confirm('late')).status)) v(s)})
		. ' ' . as_admin($node, $db, q{SELECT (inventory.adjust('MUG', 30, 'count-1')).status}),
		'duplicate duplicate duplicate expired duplicate', "$from: replays are answered as before");
	is(as_admin($node, $db, $data), $before, "$from: and change nothing");
	is(as_app($node, $db, "SELECT status FROM inventory.reserve('TEE', 1, 'after-update')"),
		'ok', "$from: reserves work after the update");

	# the commerce rules of 0.2 on the updated data: none until set
	is(as_admin($node, $db, q{
SELECT count(*) FROM inventory.sku
 WHERE max_per_buyer IS NOT NULL OR sale_starts IS NOT NULL OR sale_ends IS NOT NULL}),
		'0', "$from: no SKU has rules after the update");
	is(join("\n",
		as_admin($node, $db, q{SELECT inventory.set_rules('TEE', 2)}),
		as_app($node, $db, q{
SELECT string_agg(s, ' ') FROM (VALUES
  ((inventory.reserve('TEE', 1, 'rule-1')).status),
  ((inventory.reserve('TEE', 2, 'rule-2', buyer_id => 'ann')).status),
  ((inventory.reserve('TEE', 1, 'rule-3', buyer_id => 'ann')).status)) v(s);
SELECT string_agg(status, ' ') FROM inventory.reserve_cart('cart-1', '{MUG,CAP}', '{1,1}');
SELECT string_agg(status, ' ') FROM inventory.confirm_order('cart-1');}),
		as_admin($node, $db, q{SELECT (inventory.withdraw('MUG', 1, 'out-1')).status}),
		as_monitor($node, $db, q{SELECT count(*) FROM inventory.verify('30 s')})),
		"\nbuyer_required ok limit_exceeded\nok ok\nok ok\nok\n0",
		"$from: per-buyer limits, carts and withdrawals work on the updated data");

	# the same objects as a fresh install (the superuser's catalogs)
	$node->safe_psql('postgres', "CREATE DATABASE fresh_$db");
	$node->safe_psql("fresh_$db", 'CREATE EXTENSION inventory');
	my $updated = $node->safe_psql($db, describe_sql());
	my $fresh   = $node->safe_psql("fresh_$db", describe_sql());
	cmp_ok(scalar(split /\n/, $fresh), '>', 100, 'the description covers the objects');
	is($updated, $fresh, "$from: the updated schema equals a fresh install of $default");
}

# The router's extension: each earlier version updated in place equals a
# fresh install (it holds no data of its own but its cluster's layout).
# Only a superuser creates and updates it.
my $router_default = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'inventory_router'");
my @router_versions = split /\n/, $node->safe_psql('postgres',
	"SELECT version FROM pg_available_extension_versions WHERE name = 'inventory_router' ORDER BY string_to_array(version, '.')::int[]");
is($router_versions[-1], $router_default, "the router's default version, $router_default, is the newest");
$node->safe_psql('postgres', 'CREATE DATABASE router_fresh');
$node->safe_psql('router_fresh', 'CREATE EXTENSION inventory_router CASCADE');
my $router_fresh = $node->safe_psql('router_fresh', describe_sql('inventory_router'));
cmp_ok(scalar(split /\n/, $router_fresh), '>', 100, "the description covers the router's objects");
for my $from (@router_versions[0 .. $#router_versions - 1])
{
	my $db = "router_from_$from" =~ s/\./_/gr;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION inventory_router VERSION '$from' CASCADE");
	$node->safe_psql($db, 'ALTER EXTENSION inventory_router UPDATE');
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'inventory_router'"),
		$router_default, "router $from: updated to $router_default");
	is($node->safe_psql($db, describe_sql('inventory_router')), $router_fresh,
		"router $from: the updated schema equals a fresh install of $router_default");
}

$node->stop;
done_testing();

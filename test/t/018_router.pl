# Scale-out: four nodes and a router on one machine.  The router database
# has inventory_router over PL/Proxy; each node holds one partition
# database inv_pN with the extension inventory.
#
#   * the router's API is the node's: the same names, signatures, types,
#     comments and roles; every routed call answers exactly what one node
#     holding the same SKUs answers (a reference database), errors with
#     their SQLSTATE;
#   * confirm, cancel and extend with and without the SKU; orders; carts on
#     one node (atomic) and across nodes (a refused line leaves no hold
#     anywhere, the lines made are cancelled by key); batches across nodes;
#     the views and verify() gathered from every node;
#   * 64 pgbench clients through the router over many SKUs sell exactly
#     what was stocked, on every node and in total;
#   * a node down fails only its own SKUs, with an error naming its
#     database, and inventory.nodes shows it; statement_timeout bounds a
#     call to a node that is slow, or to a frozen server (SIGSTOP) on a new
#     connection, and not a call already sent to a node process that then
#     freezes (a documented limit);
#   * kill -9 of one node's postmaster under load through the router: the
#     other nodes sell on, and after the restart every acknowledged call is
#     there and verify() is empty on every node;
#   * resharding: a partition database moved to another server with
#     pg_dump / pg_restore and ALTER SERVER keeps its ledger, its keys and
#     its holds, which expire at their time on the new server.
#
# Every call is made by the login role the manual gives it, each over a
# connection of its own (RouterCluster's roles => 1): on the router,
# shop_app (inventory_app) reserves, settles, reads inventory.stock and
# available(), shop_admin (inventory_admin) restocks, adjusts, withdraws,
# sets rules and reads inventory.nodes, shop_monitor (inventory_monitor)
# reads inventory.sku_stats and verifies; the router works on the nodes as
# shop_router (inventory_admin), the role its user mapping names, as
# docs/scaling-out.md sets it up.  The nodes' tables are read by the
# nodes' shop_admin, and the reference database is called by the same
# roles as the router.  The superuser only makes the servers, databases,
# extensions and roles, reads other roles' rows of pg_stat_activity (to
# find the router's sessions on a node), kills and stops processes,
# changes the cluster's server (ALTER SERVER: its owner's), and dumps,
# restores and drops a partition database (as its owner).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(wait_until as_app as_admin as_monitor);
use RouterCluster qw(start_nodes start_router partition_connstr);

my $NPARTS   = 4;
my $DEADLINE = 60;    # seconds, for every wait of this test

# The test command installs postgresql-15-plproxy: its absence is a failure
# (of the setup, not a test).
my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
BAIL_OUT('PL/Proxy is not installed (Debian: postgresql-15-plproxy)')
  unless -e "$sharedir/extension/plproxy.control";

# --- the cluster ------------------------------------------------------------

my @nodes = start_nodes($NPARTS);
my $router = start_router(\@nodes, 0, roles => 1);

# on the router, as each role
sub app   { return as_app($router, 'shop', $_[0]); }
sub admin { return as_admin($router, 'shop', $_[0]); }
sub mon   { return as_monitor($router, 'shop', $_[0]); }
# psql on the router as ROLE: (exit code, stdout, stderr)
sub try_as
{
	my ($role, $sql) = @_;
	return $router->psql('shop', $sql, extra_params => [ '-U', $role ]);
}

# the router refuses a database of a node (only a superuser creates
# inventory_router)
my ($ret, $stdout, $stderr) = $nodes[0]->psql('inv_p0',
	"\\set VERBOSITY verbose\nCREATE EXTENSION inventory_router CASCADE");
like($stderr, qr/ERROR:  55000: inventory_router cannot be installed in a database that has the extension inventory.*HINT:  The router and the nodes are different databases/s,
	'the router refuses a database that has inventory (55000, with a hint)');
is(as_admin($nodes[0], 'inv_p0',
	"SELECT count(*) FROM pg_extension WHERE extname IN ('plproxy', 'inventory_router')"),
	'0', 'and leaves nothing behind');

is(app('SELECT inventory.partitions()'), $NPARTS, "the cluster has $NPARTS partitions");

# SKUs by partition: $on[p] lists SKU names that live on partition p
my %part_of;
for (split /\n/, app(
	"SELECT s, inventory.partition_of(s) FROM (SELECT 'S-' || g AS s FROM generate_series(1, 400) g) x"))
{
	my ($s, $p) = split /\|/;
	$part_of{$s} = $p;
}
my @on;
push @{ $on[ $part_of{$_} ] }, $_ for sort { (split /-/, $a)[1] <=> (split /-/, $b)[1] } keys %part_of;
sub part_of
{
	my ($sku) = @_;
	return $part_of{$sku} // app("SELECT inventory.partition_of('$sku')");
}
# a node's tables, read (and, for the test's own setup, written) by its
# administrator
sub node_sql
{
	my ($p, $sql) = @_;
	return as_admin($nodes[$p], "inv_p$p", $sql);
}

# --- the same API ---------------------------------------------------------

# what an application calls: the node's functions, by name and arguments;
# confirm, cancel and extend take a last sku
my $api = q{
SELECT p.proname || '(' || pg_get_function_arguments(p.oid) || ') ' || pg_get_function_result(p.oid)
  FROM pg_proc p
 WHERE p.pronamespace = 'inventory'::regnamespace
   AND p.proname IN ('reserve', 'confirm', 'cancel', 'extend', 'restock', 'adjust', 'withdraw', 'available',
					 'set_rules', 'reserve_cart', 'reserve_many', 'confirm_order', 'cancel_order',
					 'reservation', 'verify', 'sku_stats', 'expire', 'fold', 'stats_reset', 'can_transition', 'is_final')
 ORDER BY 1};
my $node_api = node_sql(0, $api);
$node_api =~ s/^((?:confirm|cancel)\(order_id text, batch_id integer DEFAULT 1)\)/$1, sku text DEFAULT NULL::text)/mg;
$node_api =~ s/^(extend\(order_id text, batch_id integer, ttl interval)\)/$1, sku text DEFAULT NULL::text)/m;
$node_api =~ s/^(reservation\(order_id text, batch_id integer DEFAULT NULL::integer)\)/$1, sku text DEFAULT NULL::text)/m;
is(mon($api), $node_api,
	'the router has the node\'s functions, arguments and results (and a last sku for confirm, cancel, extend, reservation)');

my $result_type = q{
SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
  FROM pg_attribute WHERE attrelid = 'inventory.result'::regclass AND attnum > 0};
is(mon($result_type), node_sql(0, $result_type),
	'inventory.result has the node\'s columns and types');
is(app(
	q{SELECT string_agg(s::text, ' ' ORDER BY s) FROM unnest(enum_range(NULL::inventory.state)) s}),
	'PENDING CONFIRMED CANCELLED EXPIRED', 'inventory.state sorts in lifecycle order');
my $views = q{
SELECT c.relname || ': ' || string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
 WHERE c.oid IN ('inventory.stock'::regclass, 'inventory.sku_stats'::regclass)
 GROUP BY c.relname ORDER BY 1};
is(mon($views), node_sql(0, $views),
	'inventory.stock and inventory.sku_stats have the node\'s columns');

is(mon(q{
SELECT p.oid::regprocedure::text FROM pg_proc p
 WHERE p.pronamespace = 'inventory'::regnamespace AND obj_description(p.oid, 'pg_proc') IS NULL
UNION ALL
SELECT c.oid::regclass::text FROM pg_class c
 WHERE c.relnamespace = 'inventory'::regnamespace AND c.relkind = 'v'
   AND obj_description(c.oid, 'pg_class') IS NULL
UNION ALL
SELECT c.oid::regclass || '.' || a.attname FROM pg_class c
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
 WHERE c.relnamespace = 'inventory'::regnamespace AND c.relkind IN ('v', 'c')
   AND col_description(c.oid, a.attnum) IS NULL
UNION ALL
SELECT t.oid::regtype::text FROM pg_type t
 WHERE t.typnamespace = 'inventory'::regnamespace AND t.typtype IN ('e', 'c')
   AND (t.typrelid = 0 OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')
   AND obj_description(t.oid, 'pg_type') IS NULL}),
	'', 'every function, view, type and column of the router has a comment');

# the same roles, with the same rights: shop_app, shop_admin and
# shop_monitor, and stranger, a login with none of them (CREATE ROLE: the
# superuser's)
$router->safe_psql('shop', 'CREATE ROLE stranger LOGIN');
# what a statement answers, connected as ROLE: its rows, or its SQLSTATE
sub sqlstate_as
{
	my ($role, $sql) = @_;
	my ($r, $out, $err) = try_as($role, "\\set VERBOSITY sqlstate\n$sql");
	return $r == 0 ? $out : ($err =~ /ERROR:  (\w{5})/ ? $1 : $err);
}
admin("SELECT inventory.restock('$on[0][0]', 100, 'in-priv')");
is(join(' ', map { sqlstate_as('shop_app', $_) }
	"SELECT status FROM inventory.reserve('$on[0][0]', 1, 'priv-1')",
	"SELECT status FROM inventory.confirm('priv-1', 1, '$on[0][0]')",
	"SELECT count(*) FROM inventory.stock WHERE sku = '$on[0][0]'",
	"SELECT inventory.available('$on[0][0]')",
	"SELECT status FROM inventory.restock('$on[0][0]', 1, 'priv-2')",
	"SELECT status FROM inventory.withdraw('$on[0][0]', 1, 'priv-w')",
	'SELECT count(*) FROM inventory.sku_stats',
	'SELECT count(*) FROM inventory.verify()',
	"SELECT count(*) FROM inventory.verify('30 s')",
	'SELECT count(*) FROM inventory.nodes'),
	'ok ok 1 99 42501 42501 42501 42501 42501 42501',
	'inventory_app: reserve, confirm, stock, available; no restock, withdraw, statistics, verify or nodes');
# verify('30 s') waits for a SKU with a change in flight (an error naming
# it if one is still busy), so that its emptiness skips none; verify()
# without the wait is called for the right to call it
is(join(' ', map { sqlstate_as('shop_admin', $_) }
	"SELECT status FROM inventory.restock('$on[0][0]', 1, 'priv-2')",
	"SELECT status FROM inventory.withdraw('$on[0][0]', 1, 'priv-w')",
	"SELECT count(*) FROM inventory.verify('30 s')",
	"SELECT 'called' FROM (SELECT count(*) FROM inventory.verify()) v",
	'SELECT count(*) FROM inventory.nodes WHERE reachable'),
	"ok ok 0 called $NPARTS", 'inventory_admin: restock, withdraw, verify, nodes');
is(join(' ', map { sqlstate_as('stranger', $_) }
	"SELECT status FROM inventory.reserve('$on[0][0]', 1, 'priv-3')",
	"SELECT 'PENDING'::inventory.state < 'EXPIRED'"),
	'42501 t', 'PUBLIC: the state type, and no call');

# inventory_monitor, as on a node: reads every figure of the router, and
# every call that writes, moves units or resets is refused before it is
# made
my $stock_now = q{SELECT string_agg(sku || ' ' || on_hand || ' ' || reserved, ', ' ORDER BY sku) FROM inventory.stock};
my $mon_stock_before = mon($stock_now);
is(join(' ', map { sqlstate_as('shop_monitor', $_) }
	"SELECT count(*) FROM inventory.stock WHERE sku = '$on[0][0]'",
	"SELECT count(*) FROM inventory.sku_stats WHERE sku = '$on[0][0]'",
	'SELECT count(*) FROM inventory.nodes WHERE reachable',
	'SELECT count(*) FROM inventory.buckets',
	"SELECT inventory.available('$on[0][0]')",
	"SELECT inventory.partition_of('$on[0][0]')",
	'SELECT inventory.partitions()',
	"SELECT count(*) FROM inventory.verify('30 s')",
	"SELECT 'called' FROM (SELECT count(*) FROM inventory.verify()) v"),
	join(' ', 1, 1, $NPARTS, 0, app("SELECT inventory.available('$on[0][0]')"), 0, $NPARTS, 0, 'called'),
	'inventory_monitor reads stock, sku_stats, nodes, buckets, available, partition_of, partitions and verify');
my @writes = (
	"SELECT status FROM inventory.reserve('$on[0][0]', 1, 'mon-1')",
	"SELECT inventory.reserve_now('$on[0][0]', 1, 'mon-1')",
	"SELECT status FROM inventory.reserve_cart('mon-2', ARRAY['$on[0][0]'], '{1}')",
	"SELECT status FROM inventory.reserve_many(ARRAY['$on[0][0]'], '{1}', '{mon-3}')",
	"SELECT status FROM inventory.confirm('priv-1', 1, '$on[0][0]')",
	"SELECT status FROM inventory.cancel('priv-1')",
	"SELECT status FROM inventory.extend('priv-1', 1, '1 hour')",
	"SELECT status FROM inventory.confirm_order('priv-1')",
	"SELECT status FROM inventory.cancel_order('priv-1')",
	"SELECT status FROM inventory.restock('$on[0][0]', 1, 'mon-4')",
	"SELECT status FROM inventory.adjust('$on[0][0]', 1, 'mon-5')",
	"SELECT status FROM inventory.withdraw('$on[0][0]', 1, 'mon-6')",
	"SELECT inventory.set_rules('$on[0][0]', 1)",
	"SELECT inventory.set_reconciler('pg_catalog.now()')",
	'SELECT inventory.expire()',
	'SELECT inventory.fold()',
	'SELECT inventory.stats_reset()',
	"SELECT * FROM inventory.split('$on[0][0]', 2)",
	"SELECT * FROM inventory.merge('$on[0][0]')",
	"SELECT * FROM inventory.rebalance('$on[0][0]')",
	"INSERT INTO inventory.bucket_layout (sku, generation, parts) VALUES ('$on[0][0]', 1, '{0,1}')",
	'DELETE FROM inventory.bucket_layout',
	# the helpers that write on a node, each callable alone
	"SELECT * FROM inventory._reserve_at(0, '$on[0][0]', 1, 'mon-7', 1, NULL, NULL, NULL)",
	"SELECT * FROM inventory._reserve_now_at(0, '$on[0][0]', 1, 'mon-7', 1, NULL, NULL)",
	"SELECT * FROM inventory._settle_at('cancel', 0, 'priv-1', 1)",
	"SELECT * FROM inventory._withdraw_at(0, '$on[0][0]', 1, 'mon-8')",
	"SELECT * FROM inventory._restock_at(0, '$on[0][0]', 1, 'mon-9', NULL, NULL, NULL)",
	"SELECT * FROM inventory._transfer('$on[0][0]', 0, 1, 1)",
	"SELECT * FROM inventory._top_up('$on[0][0]', 0, 1)",
	"SELECT * FROM inventory._finish_transfers('$on[0][0]')",
	'SELECT * FROM inventory._stats_reset_all()');
is(join(' ', map { sqlstate_as('shop_monitor', $_) } @writes), join(' ', ('42501') x @writes),
	'inventory_monitor is refused every call that writes, moves units or resets (42501)');
is(mon($stock_now), $mon_stock_before, 'and nothing changed');
# what it may execute and write, from the catalog: a helper added later
# must be placed on purpose (verify twice: verify() and verify(wait))
is(mon(q{
SELECT string_agg(p.proname, ' ' ORDER BY p.proname) FROM pg_proc p
 WHERE p.pronamespace = 'inventory'::regnamespace
   AND p.proname NOT IN ('is_final', 'can_transition')
   AND has_function_privilege('inventory_monitor', p.oid, 'EXECUTE')}),
	'_available _available_at _bucket_parts _conninfo_value _node_info _null_argument _part_of_hash '
	. '_sku_parts _stock _transfer_rows available nodes partition_of partitions sku_hash sku_stats verify verify',
	'inventory_monitor executes the reads and their helpers only');
is(mon(q{
SELECT count(*) FROM pg_class c, unnest('{INSERT,UPDATE,DELETE,TRUNCATE}'::text[]) w
 WHERE c.relnamespace = 'inventory'::regnamespace AND c.relkind IN ('r', 'v')
   AND has_table_privilege('inventory_monitor', c.oid, w)}),
	'0', 'and writes no table or view');

# --- every routed call answers what one node answers ---------------------

# A reference database on one server holds all the SKUs that the router
# spreads over four nodes; the same calls must give the same rows (the
# expiry only compared as present or not), and the same SQLSTATE.  Calls
# with the SKU go to one node, calls without it to every node.  Each call
# is made by the same role on both (caller_of below); the login roles are
# node 0's server's, made by start_router.
$nodes[0]->safe_psql('postgres', 'CREATE DATABASE ref');
$nodes[0]->safe_psql('ref', 'CREATE EXTENSION inventory');
my ($A, $B, $C) = ($on[1][0], $on[2][0], $on[3][0]);    # three nodes
my ($A2) = $on[1][1];                                   # A's node again
my $cols = 'ok, status, sku, qty, state, available, version, expires_at IS NOT NULL AS expires';
my @calls = (
	"SELECT $cols FROM inventory.restock('$A', 10, 'in-a')",
	"SELECT $cols FROM inventory.restock('$B', 5, 'in-b')",
	"SELECT $cols FROM inventory.restock('$C', 3, 'in-c')",
	"SELECT $cols FROM inventory.restock('$A2', 4, 'in-a2')",
	"SELECT $cols FROM inventory.restock('$A', 10, 'in-a')",
	"SELECT $cols FROM inventory.reserve('$A', 2, 'o1')",
	"SELECT $cols FROM inventory.reserve('$A', 2, 'o1')",
	"SELECT $cols FROM inventory.reserve('$A', 100, 'o2')",
	"SELECT $cols FROM inventory.reserve('nowhere', 1, 'o3')",
	"SELECT $cols FROM inventory.reserve('$A', 1, 'o3', expected_version => 0)",
	"SELECT $cols FROM inventory.reserve('$B', 1, 'o4', 1, '1 hour')",
	"SELECT $cols FROM inventory.reserve('$B', 1, 'o4', 2, ttl => '2 hours')",
	"SELECT inventory.available('$A'), inventory.available('$B'), inventory.available('nowhere')",
	"SELECT $cols FROM inventory.confirm('o1', 1, /*sku*/ '$A')",
	"SELECT $cols FROM inventory.confirm('o1')",
	"SELECT $cols FROM inventory.cancel('o1')",
	"SELECT $cols FROM inventory.extend('o4', 1, '3 hours', /*sku*/ '$B')",
	"SELECT $cols FROM inventory.extend('o4', 2, '3 hours')",
	"SELECT $cols FROM inventory.cancel('o4', 1, /*sku*/ '$B')",
	"SELECT $cols FROM inventory.cancel('o4')",
	"SELECT $cols FROM inventory.cancel('o4', 1)",
	"SELECT $cols FROM inventory.confirm('o4', 1, /*sku*/ '$B')",
	"SELECT $cols FROM inventory.extend('o4', 1, '1 hour')",
	"SELECT $cols FROM inventory.confirm('nobody')",
	"SELECT $cols FROM inventory.cancel('nobody', 1, /*sku*/ '$A')",
	"SELECT $cols FROM inventory.extend('nobody', 1, '1 hour')",
	"SELECT $cols FROM inventory.adjust('$A', 20, 'count-1')",
	"SELECT $cols FROM inventory.adjust('$A', 20, 'count-1')",
	"SELECT $cols FROM inventory.reserve('$C', 3, 'o5')",
	"SELECT $cols FROM inventory.adjust('$C', 1, 'count-2')",
	"SELECT $cols FROM inventory.adjust('nowhere', 1, 'count-3')",
	"SELECT $cols FROM inventory.withdraw('$B', 9, 'out-1')",
	"SELECT $cols FROM inventory.withdraw('$B', 1, 'out-1')",
	"SELECT $cols FROM inventory.withdraw('$B', 1, 'out-1')",
	"SELECT $cols FROM inventory.withdraw('nowhere', 1, 'out-2')",
	"SELECT inventory.set_rules('$A', 2)",
	"SELECT $cols FROM inventory.reserve('$A', 1, 'o6', buyer_id => 'ann')",
	"SELECT $cols FROM inventory.reserve('$A', 2, 'o7', buyer_id => 'ann')",
	"SELECT $cols FROM inventory.reserve('$A', 1, 'o8')",
	"SELECT inventory.set_rules('$A', sale_starts => '2100-01-01 00:00+00')",
	"SELECT $cols FROM inventory.reserve('$A', 1, 'o9', buyer_id => 'bob')",
	"SELECT inventory.set_rules('$A')",
	# a cart on one node: taken whole, replayed, refused whole
	"SELECT $cols FROM inventory.reserve_cart('cart-1', ARRAY['$A', '$A2', '$A'], '{1,2,1}', '1 hour', 'cyd')",
	"SELECT $cols FROM inventory.reserve_cart('cart-1', ARRAY['$A', '$A2', '$A'], '{1,2,1}', '1 hour', 'cyd')",
	"SELECT $cols FROM inventory.reserve_cart('cart-2', ARRAY['$A2', '$A'], '{1,100}')",
	"SELECT $cols FROM inventory.reserve_cart('cart-3', ARRAY['$A2', '$A'], '{1,1}', batch_ids => '{5,3}')",
	"SELECT $cols FROM inventory.confirm_order('cart-1')",
	"SELECT $cols FROM inventory.cancel_order('cart-3')",
	"SELECT $cols FROM inventory.confirm_order('cart-none')",
	# a batch across three nodes, in the order of the arrays, an element
	# seeing the ones before it
	"SELECT $cols FROM inventory.reserve_many(ARRAY['$C', '$A', '$B', '$A', '$C', 'nowhere'], '{1,1,1,1,1,1}', '{m1,m2,m3,m4,m5,m6}', '1 hour', '{x,NULL,y,NULL,NULL,NULL}')",
	"SELECT $cols FROM inventory.reserve_many(ARRAY['$B', '$A'], '{1,1}', '{m3,m7}', '1 hour', '{y,NULL}')",
	"SELECT $cols FROM inventory.reserve_many('{}', '{}', '{}')",
	# misuse: the node's SQLSTATE
	"SELECT $cols FROM inventory.reserve('$A', 0, 'bad')",
	"SELECT $cols FROM inventory.reserve(NULL, 1, 'bad')",
	"SELECT $cols FROM inventory.reserve('$A', 1, NULL)",
	"SELECT $cols FROM inventory.reserve('', 1, 'bad')",
	"SELECT $cols FROM inventory.reserve('$A', 1, 'bad', ttl => '-1 hour')",
	"SELECT $cols FROM inventory.restock('$A', 2, 'o6')",
	"SELECT $cols FROM inventory.restock('$A', NULL, 'bad')",
	"SELECT inventory.set_rules('nowhere', 1)",
	"SELECT inventory.set_rules('$A', 0)",
	"SELECT $cols FROM inventory.confirm(NULL)",
	"SELECT $cols FROM inventory.extend('o6', 1, '-1 hour', /*sku*/ '$A')",
	"SELECT $cols FROM inventory.reserve_cart('bad', ARRAY['$A', '$B'], '{1}')",
	"SELECT $cols FROM inventory.reserve_cart('bad', '{}', '{}')",
	"SELECT $cols FROM inventory.reserve_cart('bad', ARRAY['$A', NULL], '{1,1}')",
	"SELECT $cols FROM inventory.reserve_cart('bad', ARRAY['$A', '$A2'], '{1,0}')",
	"SELECT $cols FROM inventory.reserve_cart('bad', ARRAY['$A', '$B'], '{1,1}', batch_ids => '{2,2}')",
	"SELECT $cols FROM inventory.reserve_cart('bad', ARRAY['$A', '$B'], '{1,1}', batch_ids => '{2}')",
	"SELECT $cols FROM inventory.reserve_many(ARRAY['$A', '$B'], '{1}', '{b1,b2}')",
	"SELECT $cols FROM inventory.reserve_many(ARRAY['$A', NULL], '{1,1}', '{b1,b2}')",
	"SELECT $cols FROM inventory.reserve_many(NULL, '{1}', '{b1}')",
	"SELECT $cols FROM inventory.reserve_many(ARRAY['$A', '$B'], '{1,1}', '{b1,b2}', buyer_ids => '{x}')",
	"SELECT $cols FROM inventory.reserve_many(ARRAY['$A', '$B'], '{1,-1}', '{b1,b2}')",
	"SELECT $cols FROM inventory.reserve_many(ARRAY['$A', '$B'], '{1,1}', '{b1,NULL}')",
	"SELECT $cols FROM inventory.reserve_many(ARRAY['$A', '$B'], '{1,1}', '{b1,\"\"}')",
	"SELECT $cols FROM inventory.reserve_many(ARRAY['$A', repeat('x', 64)], '{1,1}', '{b1,b2}')",
	"SELECT 'PENDING'::inventory.state, 'EXPIRED'::inventory.state > 'CANCELLED'",
	"SELECT inventory.is_final('PENDING'), inventory.can_transition('PENDING', 'EXPIRED'), inventory.can_transition('EXPIRED', 'PENDING')",
	# the tables of the SKUs, gathered
	"SELECT sku, on_hand, reserved, available, version, max_per_buyer, sale_starts, sale_ends FROM inventory.stock WHERE sku IN ('$A', '$A2', '$B', '$C') ORDER BY sku COLLATE \"C\"",
	"SELECT sku, on_hand, reserved, holds, available, version, in_flight, reserves, rejects, conflicts, confirms, cancels, restocks, adjusts FROM inventory.sku_stats WHERE sku IN ('$A', '$A2', '$B', '$C') ORDER BY sku COLLATE \"C\"",
	# verify('30 s'): waits for a SKU with a change in flight (an error
	# naming it if one is still busy), so that none is skipped
	"SELECT count(*) FROM inventory.verify('30 s')",
);
# the role whose call a statement is: the administrator's (restock,
# adjust, withdraw, set_rules), the monitor's (sku_stats, verify), the
# application's (the rest)
sub caller_of
{
	my ($sql) = @_;
	return $sql =~ /inventory\.(restock|adjust|withdraw|set_rules)\(/ ? 'shop_admin'
	  : $sql =~ /inventory\.(sku_stats|verify)\b/ ? 'shop_monitor'
	  : 'shop_app';
}
# one statement on one database, by its caller: its rows, or its
# SQLSTATE.  The last argument sku of confirm, cancel and extend, marked
# /*sku*/, is the router's only: a node is called without it.
sub answer
{
	my ($node, $db, $sql) = @_;
	my $role = caller_of($sql);
	$sql =~ s{,\s*/\*sku\*/\s*'[^']*'}{}g unless $node == $router;
	my ($r, $out, $err) = $node->psql($db, "\\set VERBOSITY sqlstate\n$sql", extra_params => [ '-U', $role ]);
	return $r == 0 ? $out : ($err =~ /ERROR:  (\w{5})/ ? "ERROR $1" : "FAILED: $err");
}
my @differ;
my %errors;
for my $sql (@calls)
{
	my $want = answer($nodes[0], 'ref', $sql);
	my $got  = answer($router, 'shop', $sql);
	$errors{$1}++ if $want =~ /^ERROR (\w+)/;
	push @differ, "$sql\n  node:   $want\n  router: $got" if $got ne $want;
}
my $movements = "SELECT order_id, batch_id, kind, sku, qty, state FROM inventory.ledger WHERE sku IN ('$A', '$A2', '$B', '$C') ORDER BY 1, 2";
is(scalar @differ, 0, 'every call through the router answers what one node answers (' . scalar(@calls) . ' calls)')
  or diag(join("\n", @differ), "\nmovements, one node:\n", as_admin($nodes[0], 'ref', $movements),
	"\nmovements, four nodes:\n", join("\n", map { node_sql($_, $movements) } 0 .. $NPARTS - 1));
is(join(' ', sort keys %errors), '22001 22004 22023 2202E 23505 42704',
	'among them errors of every kind the node raises, each with its SQLSTATE');

# each SKU lives on its partition only; the rows went where the router said
is(join(' ', map {
	my $sku = $_;
	join('', map { node_sql($_, "SELECT count(*) FROM inventory.sku WHERE sku = '$sku'") } 0 .. $NPARTS - 1)
} $A, $B, $C), '0100 0010 0001', 'each SKU exists on its own partition only');
# ($C was sold out: m1 and m5 were refused)
is(join(' / ', map { node_sql($_, "SELECT string_agg(order_id || ':' || sku, ' ' ORDER BY order_id) FROM inventory.ledger WHERE order_id LIKE 'm_'") } 0 .. $NPARTS - 1),
	" / m2:$A m4:$A m7:$A / m3:$B / ", "the batch's elements went to the nodes of their SKUs");

# a batch across nodes is a transaction per node: a part that its node
# refuses with an error (here a key reused by another buyer, 23505) does
# not undo a part that another node has reserved by then
# (docs/scaling-out.md says so); whether that part was sent before the error came back is a race
($ret, $stdout, $stderr) = try_as('shop_app',
	"\\set VERBOSITY sqlstate\nSELECT * FROM inventory.reserve_many(ARRAY['$B', '$A'], '{1,1}', '{m3,m8}')");
like($stderr, qr/ERROR:  23505/, 'a batch whose part on one node fails: 23505');
like(node_sql(part_of($A), "SELECT coalesce(string_agg(state::text, ' '), 'none') FROM inventory.ledger WHERE order_id = 'm8'"),
	qr/^(PENDING|none)$/, 'the part on the other node is reserved whole or not at all: a transaction per node');

# a remote error names the partition's database
($ret, $stdout, $stderr) = try_as('shop_app',
	"\\set VERBOSITY verbose\nSELECT inventory.reserve('$B', 0, 'bad')");
my $pb = part_of($B);
like($stderr, qr/ERROR:  22023: .*\[inv_p$pb\] REMOTE ERROR: qty must be positive/,
	'a remote error keeps its SQLSTATE and names the partition database');

# dates and intervals arrive as meant, whatever the caller's formats (the
# administrator's and the application's sessions, each with both styles)
admin(qq{
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = 'sql_standard';
SELECT inventory.set_rules('$B', NULL, '2026-03-04 12:00+00', '2026-03-05 12:00+00');
});
app(qq{
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = 'sql_standard';
SELECT inventory.reserve('$A2', 1, 'styled', 1, '1 day 2 hours');
SELECT inventory.reserve('$A2', 1, 'styled', 2);
SELECT inventory.extend('styled', 2, '3 hours', '$A2');
});
is(node_sql($pb, "SELECT sale_starts = '2026-03-04 12:00+00' AND sale_ends = '2026-03-05 12:00+00' FROM inventory.sku WHERE sku = '$B'"),
	't', 'set_rules: the window arrives as meant under DateStyle SQL, DMY');
is(node_sql(part_of($A2), "SELECT string_agg((expires_at - created_at BETWEEN ttl - interval '1 minute' AND ttl + interval '1 minute')::text, ' ' ORDER BY batch_id) FROM inventory.ledger, (VALUES (1, interval '26 hours'), (2, interval '3 hours')) v(b, ttl) WHERE order_id = 'styled' AND batch_id = b"),
	'true true', 'reserve, extend: the ttl arrives as meant under IntervalStyle sql_standard');
($ret, $stdout, $stderr) = try_as('shop_app', "\\set VERBOSITY sqlstate\nSELECT 'pending'::inventory.state");
like($stderr, qr/ERROR:  22P02/, 'on the router, a state name is upper case (an enum): 22P02 otherwise');
admin("SELECT inventory.set_rules('$B')");

# --- keys without the SKU ---------------------------------------------------

# the same key on two nodes: without the SKU the router cannot say whose it
# is; it asks first, and does the call on neither
app(qq{
SELECT inventory.reserve('$A', 1, 'twice'), inventory.reserve('$B', 1, 'twice')});
($ret, $stdout, $stderr) = try_as('shop_app', "\\set VERBOSITY verbose\nSELECT inventory.confirm('twice')");
like($stderr, qr/ERROR:  21000: key \(twice, 1\) is known on 2 partitions.*HINT:  Keys must be unique across the cluster; pass the sku/s,
	'confirm without a SKU of a key on two nodes: 21000, with a hint');
is(node_sql(part_of($A), "SELECT state FROM inventory.ledger WHERE order_id = 'twice'")
	. ' ' . node_sql($pb, "SELECT state FROM inventory.ledger WHERE order_id = 'twice'"),
	'PENDING PENDING', 'neither node confirmed it, as docs/scaling-out.md says');

# a router transaction is not a node transaction
app("BEGIN; SELECT inventory.reserve('$A', 1, 'rolled-back'); ROLLBACK;");
is(app("SELECT status || ' ' || state FROM inventory.cancel('rolled-back', 1, '$A')"),
	'ok CANCELLED', 'a call commits on its node even when the router transaction rolls back');

# --- carts across nodes -------------------------------------------------------

my @X = ($on[0][2], $on[1][2], $on[2][2], $on[3][2]);    # one SKU per partition
admin(join ";\n", map { "SELECT inventory.restock('$X[$_]', 10, 'in-x$_')" } 0 .. 3);
sub avail_x { join ' ', map { app("SELECT inventory.available('$_')") } @X }
# the ledger rows of an order on every node: "partition:batch:sku:state"
sub order_rows
{
	my ($order) = @_;
	return join ' ', map {
		my $p = $_;
		map { "$p:$_" } split /\n/, node_sql($p,
			"SELECT batch_id || ':' || sku || ':' || state FROM inventory.ledger WHERE order_id = '$order' ORDER BY batch_id")
	} 0 .. $NPARTS - 1;
}

is(app(
	"SELECT string_agg(sku || ':' || status || ':' || state, ' ' ORDER BY i) FROM inventory.reserve_cart("
	  . "'xc-1', ARRAY['$X[2]', '$X[0]', '$X[3]'], '{1,2,3}', '1 hour') WITH ORDINALITY AS r(ok, status, sku, qty, state, available, version, expires_at, i)"),
	"$X[2]:ok:PENDING $X[0]:ok:PENDING $X[3]:ok:PENDING",
	'a cart across three nodes: every line reserved, rows in the order of the arrays');
is(order_rows('xc-1'), "0:2:$X[0]:PENDING 2:1:$X[2]:PENDING 3:3:$X[3]:PENDING",
	'line i is (order_id, i) on the node of its SKU');
is(app(
	"SELECT string_agg(status, ' ') FROM inventory.reserve_cart('xc-1', ARRAY['$X[2]', '$X[0]', '$X[3]'], '{1,2,3}', '1 hour')"),
	'duplicate duplicate duplicate', 'the cart replayed: every line a duplicate');
is(app(
	"SELECT string_agg(sku || ':' || status || ':' || state, ' ' ORDER BY sku) FROM inventory.confirm_order('xc-1')"),
	join(' ', map { "$_:ok:CONFIRMED" } sort @X[0, 2, 3]), 'confirm_order settles the lines on every node');
# what the application reads of the order: its lines from every node, or
# from the partition of the SKU it names
my $lines = q{SELECT string_agg(batch_id || ':' || sku || ':' || state || ':' || settled_by, ' ' ORDER BY batch_id) FROM inventory.reservation(%s)};
is(app(sprintf($lines, "'xc-1'")), "1:$X[2]:CONFIRMED:call 2:$X[0]:CONFIRMED:call 3:$X[3]:CONFIRMED:call",
	'reservation() reads the lines of an order from every node, in the order of batch_id');
is(app(sprintf($lines, "'xc-1', 2")), "2:$X[0]:CONFIRMED:call", 'reservation() of one line');
is(app(sprintf($lines, "'xc-1', NULL, '$X[3]'")), "3:$X[3]:CONFIRMED:call",
	'reservation() with a SKU: the lines of that SKU');

# a refused line on the last node: the lines made on the others are
# cancelled by key, nothing is held anywhere; another reservation of the
# same order on a node is not touched
app("SELECT inventory.reserve('$X[0]', 1, 'xc-2', 42, '1 hour')");
my $before = avail_x();
is(app(
	"SELECT string_agg(sku || ':' || status || ':' || ok, ' ' ORDER BY i) FROM inventory.reserve_cart("
	  . "'xc-2', ARRAY['$X[1]', '$X[3]', '$X[0]'], '{1,1000,2}', '1 hour', NULL, '{7,8,9}') WITH ORDINALITY AS r(ok, status, sku, qty, state, available, version, expires_at, i)"),
	"$X[1]:cart_refused:false $X[3]:insufficient:false $X[0]:cart_refused:false",
	'a cart refused on one node: the refused line says why, the others cart_refused, in the order of the arrays');
is(order_rows('xc-2'), "0:9:$X[0]:CANCELLED 0:42:$X[0]:PENDING 1:7:$X[1]:CANCELLED",
	'the lines made were cancelled by their keys, the order\'s other reservation kept');
is(avail_x(), $before, 'no hold anywhere: every SKU has its units');
# replayed: the lines cancelled before refuse the cart again, and it takes nothing
admin("SELECT inventory.restock('$X[3]', 1000, 'in-x3-more')");
is(app(
	"SELECT string_agg(sku || ':' || status, ' ') FROM inventory.reserve_cart('xc-2', ARRAY['$X[1]', '$X[3]', '$X[0]'], '{1,1000,2}', '1 hour', NULL, '{7,8,9}')"),
	"$X[1]:cart_refused $X[3]:cart_refused $X[0]:cancelled",
	'the refused cart replayed is refused again: its cancelled line says so');
is(order_rows('xc-2'), "0:9:$X[0]:CANCELLED 0:42:$X[0]:PENDING 1:7:$X[1]:CANCELLED",
	'and leaves nothing held');
app("SELECT inventory.cancel('xc-2', 42, '$X[0]')");

# the router dies after one part: that part is a PENDING hold that its
# node expires by its ttl (the part reserved as the router would have,
# with the router's helper, which inventory_app may call)
$before = avail_x();
app(
	"SELECT inventory._reserve_cart_on(1, 'xc-3', ARRAY['$X[1]'], '{2}', '1 second', NULL, '{1}')");
ok(wait_until($DEADLINE, sub { node_sql(1, "SELECT state FROM inventory.ledger WHERE order_id = 'xc-3'") eq 'EXPIRED' }),
	'a part left behind by a router that died expires by its ttl');
is(avail_x(), $before, 'and its units are back on sale');

# --- 64 clients through the router ----------------------------------------

# 200 SKUs of 5 units over the four nodes, 64 clients making 6,400
# attempts (32 per SKU on average): every unit is sold once, on every node
admin("SELECT count(r.status) FROM generate_series(1, 200) g, inventory.restock('R-' || g, 5, 'in-r-' || g) r");
$router->pgbench(
	'--no-vacuum --client=64 --jobs=2 --transactions=100 -M prepared',
	0,
	[qr{processed: 6400/6400}],
	[qr{^$}],
	'64 clients make 6400 reservation attempts through the router',
	{ 'race' => "\\set s random(1, 200)\n\\set n random(1, 9000000000000000000)\n"
		  . "SELECT (inventory.reserve('R-' || :s, 1, 'race-' || :n)).status;\n" },
	'-U', 'shop_app', 'shop');
my ($sold, $stocked) = (0, 0);
my @per_node;
for my $p (0 .. $NPARTS - 1)
{
	my ($s, $k) = split /\|/, node_sql($p, q{
SELECT (SELECT coalesce(sum(qty), 0) FROM inventory.ledger WHERE kind = 'reserve' AND sku LIKE 'R-%'),
	   (SELECT coalesce(sum(on_hand), 0) FROM inventory.stock WHERE sku LIKE 'R-%')});
	push @per_node, "$s/$k";
	$sold += $s;
	$stocked += $k;
}
is(join(' ', map { my ($s, $k) = split m{/}; $s == $k ? 'equal' : $_ } @per_node),
	join(' ', ('equal') x $NPARTS), "units sold = units stocked on every node (@per_node)");
is("$sold $stocked", '1000 1000', 'and in total: 1000 units sold of 1000');
is(app(q{
SELECT count(*) || ' ' || sum(available) || ' ' || count(*) FILTER (WHERE reserved <> on_hand)
  FROM inventory.stock WHERE sku LIKE 'R-%'}),
	'200 0 0', 'inventory.stock through the router: 200 SKUs, nothing available, nothing oversold');
is(mon("SELECT count(*) FROM inventory.verify('30 s')"), '0', "verify('30 s') is empty on every node");

# --- a node down -------------------------------------------------------------

# inventory.nodes with every node up agrees with the nodes
is(admin(q{SELECT string_agg(part || ':' || dbname || ':' || reachable || ':' || skus || ':' || holds, ' ' ORDER BY part) FROM inventory.nodes}),
	join(' ', map { "$_:inv_p$_:true:" . node_sql($_, "SELECT (SELECT count(*) FROM inventory.sku) || ':' || (SELECT count(*) FROM inventory.ledger WHERE state = 'PENDING')") } 0 .. $NPARTS - 1),
	'inventory.nodes: every partition reachable, its SKUs and holds');

my $down = 2;
$nodes[$down]->stop('fast');
($ret, $stdout, $stderr) = try_as('shop_app',
	"\\set VERBOSITY verbose\nSELECT inventory.reserve('$X[$down]', 1, 'while-down')");
like($stderr, qr/ERROR:  XX000: .*\[inv_p$down\] .*(connect|connection)/,
	'a SKU of the node down fails, the error naming its database');
is(join(' ', map { app("SELECT status FROM inventory.reserve('$X[$_]', 1, 'while-down-$_')") } grep { $_ != $down } 0 .. 3),
	'ok ok ok', 'the SKUs of every other node sell on');
is(app(sprintf($lines, "'xc-1', NULL, '$X[0]'")), "2:$X[0]:CONFIRMED:call",
	'reservation() with a SKU asks its partition only: it answers while another node is down');
($ret, $stdout, $stderr) = try_as('shop_app', "\\set VERBOSITY verbose\n" . sprintf($lines, "'xc-1'"));
like($stderr, qr/ERROR:  XX000: .*\[inv_p$down\]/,
	'without a SKU it asks every partition, and fails with the error of the node down: never a partial answer');
is(admin(q{SELECT string_agg(part || ':' || reachable || ':' || (error IS NOT NULL) || ':' || coalesce((error LIKE '%[inv_p' || part || ']%')::text, ''), ' ' ORDER BY part) FROM inventory.nodes}),
	join(' ', map { $_ == $down ? "$_:false:true:true" : "$_:true:false:" } 0 .. 3),
	'inventory.nodes shows the node down, with its error');
# a cart with a line on the node down fails whole; the line made is cancelled
($ret, $stdout, $stderr) = try_as('shop_app',
	"\\set VERBOSITY verbose\nSELECT * FROM inventory.reserve_cart('xc-down', ARRAY['$X[$down]', '$X[1]'], '{1,1}')");
like($stderr, qr/ERROR:  XX000: .*\[inv_p$down\]/, 'a cart with a line on the node down fails with its error');
is(node_sql(1, "SELECT batch_id || ':' || state FROM inventory.ledger WHERE order_id = 'xc-down'"),
	'2:CANCELLED', 'the line made on another node before it is cancelled: nothing is held');
$nodes[$down]->start;
# the first calls on the node back are the router's, as its roles
ok(wait_until($DEADLINE, sub {
	my ($r, $o) = try_as('shop_app', "SELECT status FROM inventory.reserve('$X[$down]', 1, 'after-up')");
	return $r == 0 && $o eq 'ok';
}), 'the node back, its SKUs sell again');

# A node that hangs.  statement_timeout on the router bounds (1) a call
# whose node is slow (here: waiting for a key's lock that another session
# of the node holds) -- the router cancels the node's query -- and (2) a
# call that must connect to a node whose whole server hangs (SIGSTOP).
# (3) A call sent on an established connection to a node process that
# then stops answering waits until the node answers or the connection
# breaks: PL/Proxy waits for the cancelled query's answer.  docs/scaling-out.md
# says so, and recommends TCP keepalives and tcp_user_timeout.
#
# The calls' statement_timeout, and how long past it a call may take to
# end: the time is measured around a whole psql (its start, its connection
# to the router, the router's cancel request to the node and the answer),
# on a machine of 2 cores that other test runs share; 8 s covers that.
# Without the timeout, (1) would wait for the holder's ROLLBACK, which
# comes only after the call, and (2) for the server to be continued: a
# call ending within the slack ended at its statement_timeout.
my $TIMEOUT = 2;
my $SLACK   = 8;
my $hung = 3;
# the holder: an application's transaction on the node, holding the key's
# lock
my $holder = $nodes[$hung]->background_psql("inv_p$hung", extra_params => [ '-U', 'shop_app' ]);
$holder->query_safe("BEGIN; SELECT inventory.reserve('$X[$hung]', 1, 'locked-key')");
my $t0 = time;
($ret, $stdout, $stderr) = try_as('shop_app',
	"SET statement_timeout = '${TIMEOUT}s';\n\\set VERBOSITY verbose\nSELECT inventory.reserve('$X[$hung]', 1, 'locked-key')");
my $waited = time - $t0;
like($stderr, qr/ERROR:  57014: canceling statement due to statement timeout/,
	'a call to a node that is slow ends at statement_timeout (57014)');
ok($waited >= $TIMEOUT && $waited < $TIMEOUT + $SLACK,
	sprintf('after %.1f s: not before its statement_timeout of %d s, and within %d s past it', $waited, $TIMEOUT, $SLACK));
# the router's sessions on the node are shop_router's: their state is for
# a superuser to read
ok(wait_until($DEADLINE, sub { $nodes[$hung]->safe_psql("inv_p$hung",
	"SELECT count(*) FROM pg_stat_activity WHERE application_name = 'inventory_router' AND state = 'active'") eq '0' }),
	'and the node\'s query was cancelled too');
$holder->query_safe('ROLLBACK');
$holder->quit;

my @stopped = node_pids($nodes[$hung]);
kill 'STOP', @stopped;
$t0 = time;
($ret, $stdout, $stderr) = try_as('shop_app',
	"SET statement_timeout = '${TIMEOUT}s';\n\\set VERBOSITY verbose\nSELECT inventory.available('$X[$hung]')");
$waited = time - $t0;
like($stderr, qr/ERROR:  57014: canceling statement due to statement timeout/,
	'a call that must connect to a node whose server hangs ends at statement_timeout (57014)');
ok($waited >= $TIMEOUT && $waited < $TIMEOUT + $SLACK,
	sprintf('after %.1f s: not before its statement_timeout of %d s, and within %d s past it', $waited, $TIMEOUT, $SLACK));
is(app("SELECT status FROM inventory.reserve('$X[0]', 1, 'while-hung')"),
	'ok', 'other nodes sell meanwhile');
kill 'CONT', @stopped;

# (3): the documented limit
my $session = $router->background_psql('shop', on_error_stop => 0, extra_params => [ '-U', 'shop_app' ]);
$session->query_safe("SELECT inventory.available('$X[$hung]')");    # a connection to it, cached
# (the router's session on the node, found by the superuser: it is the
# role of the user mapping's, shop_router)
my @backend = split /\n/, $nodes[$hung]->safe_psql("inv_p$hung",
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'inventory_router' AND usename = 'shop_router'");
is(scalar @backend, 1, 'a router session with a connection to the node, as the user mapping\'s role');
my $session_pid = $session->query_safe('SELECT pg_backend_pid()');
kill 'STOP', @backend;
$session->{stdin} .= "SET statement_timeout = '${TIMEOUT}s';\nSELECT inventory.available('$X[$hung]');\n\\echo done\n";
$session->{run}->pump_nb;
# (shop_app reads its own session's row) still waiting at twice its
# statement_timeout
ok(wait_until($DEADLINE, sub { app(
	"SELECT now() - query_start > interval '" . (2 * $TIMEOUT) . " seconds' FROM pg_stat_activity WHERE pid = $session_pid AND state = 'active'") eq 't' }),
	'a call sent before the node process stopped is still waiting past statement_timeout');
kill 'CONT', @backend;
$session->{run}->pump until $session->{stdout} =~ /done/ || $session->{timeout}->is_expired;
like($session->{stderr}, qr/canceling statement due to statement timeout/,
	'once the node answers, the call ends with 57014');
$session->quit;
ok(wait_until($DEADLINE, sub {
	my ($r, $o) = try_as('shop_app', "SELECT status FROM inventory.reserve('$X[$hung]', 1, 'after-cont')");
	return $r == 0 && $o eq 'ok';
}), 'the node resumed sells again');

# the processes of a node's server: its postmaster and the children named
# after its cluster
sub node_pids
{
	my ($node) = @_;
	my $name = $node->name;
	my $pm = (split /\n/, slurp_file($node->data_dir . '/postmaster.pid'))[0];
	return ($pm, split ' ', `pgrep -f '^postgres: $name: '`);
}

# --- kill -9 of one node's postmaster under load -----------------------------

# Clients run scripts of calls through the router.  A call is its node's
# transaction, committed when it returns: after each call that returned,
# the client prints "ACK <call number> <status>" with \warn, after one that
# failed "FAIL <call number> <SQLSTATE>".  Scripts go on after a failure.
# A client's plan mixes the application's calls with the administrator's
# restocks: its reserves, confirms and cancels, in their order, are the
# script of an application client (shop_app), its restocks go to one of
# $ADMINS administrator clients (shop_admin), each a script of the
# restocks of several plans, in their order.
my $CLIENTS = 12;
my $ADMINS  = 2;
my $CALLS   = 500;
my @HOT  = map { $on[ $_ % 4 ][ 10 + int($_ / 4) ] } 0 .. 15;    # 4 per partition, always enough
my @COLD = map { $on[ $_ % 4 ][ 20 + int($_ / 4) ] } 0 .. 31;    # 8 per partition, 2 units
admin(join ";\n",
	(map { "SELECT inventory.restock('$_', 1000000, 'in-$_')" } @HOT),
	(map { "SELECT inventory.restock('$_', 2, 'in-$_')" } @COLD));

sub make_plan
{
	my ($client) = @_;
	srand(18_000 + $client);
	my (@plan, @open);
	for my $i (1 .. $CALLS)
	{
		my $key = "k-c$client-$i";
		my $dice = rand(100);
		if ($dice < 30 && @open)
		{
			my $r = splice(@open, int(rand(@open)), 1);
			# one in four without the SKU: asks every node
			push @plan, { op => $dice < 18 ? 'confirm' : 'cancel', key => $r->{key},
						  sku => $r->{sku}, with_sku => rand(4) >= 1 };
		}
		elsif ($dice < 40)
		{
			push @plan, { op => 'restock', key => $key, sku => $COLD[ rand @COLD ], qty => 1 };
		}
		else
		{
			my $cold = $dice < 70;
			my $r = { op => 'reserve', key => $key, qty => 1 + int(rand(2)),
					  sku => $cold ? $COLD[ rand @COLD ] : $HOT[ rand @HOT ] };
			push @plan, $r;
			push @open, $r;
		}
	}
	return \@plan;
}

sub plan_to_sql
{
	my ($plan) = @_;
	my $sql = '';
	for my $i (1 .. @$plan)
	{
		my $c = $plan->[ $i - 1 ];
		my $call =
		    $c->{op} eq 'reserve' ? "reserve('$c->{sku}', $c->{qty}, '$c->{key}', 1, '1 hour')"
		  : $c->{op} eq 'restock' ? "restock('$c->{sku}', $c->{qty}, '$c->{key}')"
		  : $c->{with_sku} ? "$c->{op}('$c->{key}', 1, '$c->{sku}')"
		  : "$c->{op}('$c->{key}')";
		$sql .= "SELECT status AS s FROM inventory.$call \\gset\n"
		  . "\\if :ERROR\n\\warn FAIL $i :SQLSTATE\n\\else\n\\warn ACK $i :s\n\\endif\n";
	}
	return $sql;
}

# the outcome of every call a client's log reports: number => [ACK|FAIL, status]
sub read_log
{
	my ($file) = @_;
	my %out;
	for (slurp_file($file) =~ /^((?:ACK|FAIL) \d+ \S+)$/mg)
	{
		my ($what, $i, $s) = split ' ';
		$out{$i} = [ $what, $s ];
	}
	return \%out;
}

my $dir = PostgreSQL::Test::Utils::tempdir;
# the scripts: name => [role, calls]
my %script;
for my $c (1 .. $CLIENTS)
{
	my $admin = 'a' . (($c - 1) % $ADMINS + 1);
	$script{$admin}[0] = 'shop_admin';
	$script{"c$c"}[0] = 'shop_app';
	push @{ $script{ $_->{op} eq 'restock' ? $admin : "c$c" }[1] }, $_ for @{ make_plan($c) };
}
my @clients;
for my $name (sort keys %script)
{
	my ($role, $plan) = @{ $script{$name} };
	my $file = "$dir/$name.sql";
	open my $fh, '>', $file or die "$file: $!";
	print $fh plan_to_sql($plan);
	close $fh;
	my $log = "$PostgreSQL::Test::Utils::log_path/018_router_$name";
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-f', $file, '-d', $router->connstr('shop') . " user=$role" ],
		'<', '/dev/null', '>', "$log.out", '2>', "$log.err",
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	push @clients, { name => $name, plan => $plan, err => "$log.err", h => $h };
}
sub acks
{
	my ($pred) = @_;
	my $n = 0;
	for my $cl (@clients)
	{
		my $log = read_log($cl->{err});
		$n += grep { $log->{$_}[0] eq 'ACK' && $pred->($cl->{plan}[ $_ - 1 ]) } keys %$log;
	}
	return $n;
}
my $victim = 1;
ok(wait_until($DEADLINE, sub { acks(sub { 1 }) >= 600 }), 'the load runs through the router');
my @victim_pids = node_pids($nodes[$victim]);
$nodes[$victim]->kill9;
# calls routed by SKU to the other nodes
my $elsewhere = sub { ($_[0]{op} eq 'reserve' || $_[0]{op} eq 'restock') && part_of($_[0]{sku}) != $victim };
my $others_before = acks($elsewhere);
ok(wait_until($DEADLINE, sub { !grep { kill 0, $_ } node_pids($nodes[$victim]) }),
	"every process of node $victim has exited");
ok(wait_until($DEADLINE, sub { acks($elsewhere) >= $others_before + 100 }),
	"while node $victim is down, the other nodes acknowledge calls");
ok($nodes[$victim]->start(fail_ok => 1), "node $victim starts again");
for my $cl (@clients)
{
	$cl->{h}->finish;
}
ok(wait_until($DEADLINE, sub {
	my ($r, $o) = try_as('shop_app', "SELECT status FROM inventory.reserve('$HOT[$victim]', 1, 'after-crash')");
	return $r == 0 && $o eq 'ok';
}), "node $victim back, its SKUs sell again");
my $named = 0;
for my $cl (@clients)
{
	my $err = slurp_file($cl->{err});
	$named++ if $err =~ /\[inv_p$victim\]/;
}
ok($named, "calls of node $victim failed with an error naming inv_p$victim ($named clients saw one)");

# the rows of the test's keys on every node: key => [partition, kind, sku, qty, state]
my %row;
my @misplaced;
for my $p (0 .. $NPARTS - 1)
{
	for (split /\n/, node_sql($p,
		"SELECT order_id, kind, sku, qty, state FROM inventory.ledger WHERE order_id LIKE 'k-c%' AND batch_id = 1"))
	{
		my ($key, @rest) = split /\|/, $_, -1;
		$row{$key} = [ $p, @rest ];
		push @misplaced, "$key on $p" if part_of($rest[1]) != $p;
	}
}
my (%bad, %count);
$bad{$_} = [] for qw(lost refused missing misplaced unplanned unacknowledged);
my %inflight;    # client => calls that failed and yet took effect
push @{ $bad{misplaced} }, @misplaced;
my %planned;
for my $cl (@clients)
{
	my ($c, $plan) = @{$cl}{qw(name plan)};
	my $log  = read_log($cl->{err});
	for my $i (1 .. @$plan)
	{
		my $call = $plan->[ $i - 1 ];
		my $out = $log->{$i};
		$planned{ $call->{key} } = 1 if $call->{op} eq 'reserve' || $call->{op} eq 'restock';
		if (!$out)
		{
			push @{ $bad{missing} }, "$c call $i";
			next;
		}
		my ($what, $status) = @$out;
		my $r = $row{ $call->{key} };
		$count{"$what $call->{op} $status"}++;
		if ($what eq 'FAIL')
		{
			# routed by SKU: only a call to the node that crashed, in
			# flight at the crash, may have committed unacknowledged
			push @{ $inflight{$c} }, $i
			  if $r && ($call->{op} eq 'reserve' || $call->{op} eq 'restock');
			push @{ $bad{unacknowledged} }, "$c call $i: $call->{op} $call->{key} failed, row is (@$r)"
			  if $r && ($call->{op} eq 'reserve' || $call->{op} eq 'restock')
			  && part_of($call->{sku}) != $victim;
			next;
		}
		if ($status eq 'ok')
		{
			my $want = $call->{op} eq 'confirm' ? 'CONFIRMED' : $call->{op} eq 'cancel' ? 'CANCELLED' : undef;
			push @{ $bad{lost} }, "$c call $i: $call->{op} $call->{key} acknowledged ok, row is "
			  . ($r ? "(@$r)" : 'missing')
			  unless $r && $r->[2] eq $call->{sku}
			  && (!$want || $r->[4] eq $want)
			  && ($call->{op} ne 'reserve' || $r->[3] == $call->{qty});
		}
		elsif ($status eq 'insufficient' || $status eq 'not_found')
		{
			push @{ $bad{refused} }, "$c call $i: $call->{op} $call->{key} acknowledged $status, row is (@$r)"
			  if $r && ($call->{op} eq 'reserve' || $status eq 'not_found');
		}
	}
}
for my $key (sort keys %row)
{
	push @{ $bad{unplanned} }, $key unless $planned{$key};
}
for my $c (sort keys %inflight)
{
	push @{ $bad{unacknowledged} }, "$c: calls @{ $inflight{$c} } failed and took effect"
	  if @{ $inflight{$c} } > 1;
}
note(join ', ', map { "$_: $count{$_}" } sort keys %count);
for my $what (sort keys %bad)
{
	my @v = @{ $bad{$what} };
	is(scalar @v, 0, "after the crash: no call $what")
	  or diag(join "\n", @v[ 0 .. ($#v < 19 ? $#v : 19) ]);
}
ok(($count{'ACK reserve ok'} // 0) && ($count{'ACK confirm ok'} // 0) && ($count{'ACK cancel ok'} // 0)
	  && ($count{'ACK restock ok'} // 0) && ($count{'ACK reserve insufficient'} // 0)
	  && grep({ /^FAIL reserve/ } keys %count),
	'the load acknowledged every kind of call, and calls failed while the node was down');
# verify('30 s'): waits for a SKU with a change in flight (an error naming
# it if one is still busy), so that none is skipped
for my $p (0 .. $NPARTS - 1)
{
	is(node_sql($p, q{
SELECT (SELECT count(*) FROM inventory.verify('30 s')) || ' '
	|| (SELECT count(*) FROM inventory.stock WHERE NOT (0 <= reserved AND reserved <= on_hand))}),
		'0 0', "partition $p: verify('30 s') is empty, nothing oversold");
}

# --- resharding: partition 0 moves to the server of partition 1 -------------

my $m = 0;
my $dest = $nodes[1];
my ($Y, $Y2) = ($on[$m][30], $on[$m][31]);
admin(qq{
SELECT inventory.restock('$Y', 10, 'in-y');
SELECT inventory.restock('$Y2', 10, 'in-y2');
});
app(qq{
SELECT inventory.confirm('paid-y', 1, '$Y') FROM inventory.reserve('$Y', 2, 'paid-y');
SELECT inventory.reserve('$Y2', 3, 'held-y', 1, '20 seconds');
});
my $stock_before = app('SELECT * FROM inventory.stock ORDER BY sku');
my $expires = node_sql($m, "SELECT expires_at FROM inventory.ledger WHERE order_id = 'held-y'");

# 1. freeze the partition's writes through the router: reads go on (ALTER
# SERVER: the server's owner's, here the superuser)
my $old = partition_connstr($nodes[$m], "inv_p$m");
$router->safe_psql('shop',
	"ALTER SERVER inventory_cluster OPTIONS (SET p$m '$old options=''-c default_transaction_read_only=on''')");
($ret, $stdout, $stderr) = try_as('shop_app', "\\set VERBOSITY verbose\nSELECT inventory.reserve('$Y', 1, 'frozen')");
like($stderr, qr/ERROR:  25006: .*\[inv_p$m\]/, 'frozen: a write to the partition is refused (25006)');
is(app("SELECT inventory.available('$Y')"), '8', 'frozen: reads go on');
my $live = $router->background_psql('shop', extra_params => [ '-U', 'shop_app' ]);
$live->query_safe("SELECT inventory.available('$Y')");

# 2. copy it to the other server (pg_dump, pg_restore, CREATE and DROP
# DATABASE: the superuser's, as the databases' owner)
my $dump = "$dir/inv_p$m.dump";
$nodes[$m]->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $nodes[$m]->connstr("inv_p$m") ],
	"pg_dump -Fc of inv_p$m");
$dest->safe_psql('postgres', "CREATE DATABASE inv_p$m");
$dest->command_ok([ 'pg_restore', '-d', $dest->connstr("inv_p$m"), $dump ],
	"pg_restore into inv_p$m on the server of partition 1");

# 3. point the partition at the copy; 4. the old database goes
$router->safe_psql('shop',
	"ALTER SERVER inventory_cluster OPTIONS (SET p$m '" . partition_connstr($dest, "inv_p$m") . "')");
$nodes[$m]->safe_psql('postgres', "DROP DATABASE inv_p$m WITH (FORCE)");

is(admin("SELECT host || ':' || port FROM inventory.nodes WHERE part = $m"),
	$dest->host . ':' . $dest->port, 'inventory.nodes shows the partition on its new server');
is(app('SELECT * FROM inventory.stock ORDER BY sku'), $stock_before,
	'inventory.stock through the router is what it was');
is(as_admin($dest, "inv_p$m", "SELECT state || ' ' || (expires_at = '$expires') FROM inventory.ledger WHERE order_id = 'held-y'"),
	'PENDING true', 'the hold moved with its expiry');
is(app("SELECT status || ' ' || state FROM inventory.reserve('$Y', 2, 'paid-y')"),
	'duplicate CONFIRMED', 'a replayed key answers duplicate on the new server');
is(scalar $live->query("SELECT status FROM inventory.reserve('$Y', 1, 'after-move')"),
	'ok', 'a session opened before the move writes to the new server');
$live->quit;
is(as_admin($dest, "inv_p$m", "SELECT count(*) FROM inventory.ledger WHERE order_id = 'after-move'"),
	'1', 'the write landed on the new server');
ok(wait_until($DEADLINE, sub {
	as_admin($dest, "inv_p$m", "SELECT state FROM inventory.ledger WHERE order_id = 'held-y'") eq 'EXPIRED' }),
	'the hold expires on the new server');
# I5: a hold is expired within inventory.expire_interval (the new server's
# setting, read there) of its expires_at while a worker is free; 4 s more
# for the worker's start in the database (a fork and a connection) and its
# batch, on a machine of 2 cores that other test runs share.  The restore's
# CREATE EXTENSION told the launcher of the database long before the hold
# fell due.
is(as_admin($dest, "inv_p$m", q{
SELECT settled_at >= expires_at
   AND settled_at < expires_at + current_setting('inventory.expire_interval')::interval + interval '4 seconds'
  FROM inventory.ledger WHERE order_id = 'held-y'}),
	't', 'at its time (within inventory.expire_interval and 4 s of expires_at)');
is(app("SELECT inventory.available('$Y2')"), '10', 'its units are back on sale');

# verify('30 s'): waits for a SKU with a change in flight (an error naming
# it if one is still busy), so that none is skipped
for my $p (0 .. $NPARTS - 1)
{
	my $server = $p == $m ? $dest : $nodes[$p];
	is(as_admin($server, "inv_p$p", "SELECT count(*) FROM inventory.verify('30 s')"), '0',
		"at the end, partition $p verifies (verify('30 s') is empty)");
}

$router->stop;
$_->stop for @nodes;
done_testing();

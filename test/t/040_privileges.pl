# Who may use what (invariant I15): the privileges of every member of the
# extension, for each of its roles, against test/privileges.manifest -- the
# members, the rights has_function_privilege and has_table_privilege show,
# a real call of every right refused (42501), and, after a restart with
# nothing in the cache, a real call of every right granted, each as a login
# role of its own (a connection, so the role's settings apply): shop_app in
# inventory_app, shop_admin in inventory_admin, shop_monitor in
# inventory_monitor, and shop_nobody with PUBLIC's rights alone.  The
# manifest is what docs/security.md's table of the roles says: every
# function and view a role may use is named in its row there.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles as_role);
use RouterCluster qw(start_nodes start_router);

my $top = "$FindBin::Bin/../..";
my @ROLES = qw(inventory_app inventory_admin inventory_monitor PUBLIC);
my %LOGIN = (
	inventory_app => 'shop_app',
	inventory_admin => 'shop_admin',
	inventory_monitor => 'shop_monitor',
	PUBLIC => 'shop_nobody');

# --- the manifest ------------------------------------------------------------

# manifest(FILE): {member => {role => rights}}
sub manifest
{
	my ($file) = @_;
	my %m;
	for my $line (split /\n/, slurp_file("$top/$file"))
	{
		next if $line =~ /^\s*(#|$)/;
		my ($member, @rights) = map { s/^\s+|\s+$//gr } split /\|/, $line;
		die "$file: a line without four roles: $line" unless @rights == 4;
		$m{$member} = { map { $ROLES[$_] => $rights[$_] } 0 .. 3 };
	}
	return %m;
}
my %manifest = manifest('test/privileges.manifest');

my $node = inventory_node('privileges', "inventory.worker_enabled = off\ninventory.max_skus = 1000\n");
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node);
$node->safe_psql('postgres', 'CREATE ROLE shop_nobody LOGIN');

# --- the members, and their rights --------------------------------------------

# the rights of every member of extension %s, one line each: member|app admin monitor public
my $rights_sql = q{
WITH m AS (
	SELECT classid, objid FROM pg_depend
	 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = '%s')
	   AND classid IN ('pg_proc'::regclass, 'pg_class'::regclass))
SELECT CASE WHEN classid = 'pg_proc'::regclass THEN objid::regprocedure::text ELSE objid::regclass::text END,
	   string_agg(CASE WHEN classid = 'pg_proc'::regclass
					   THEN CASE WHEN has_function_privilege(r, objid, 'EXECUTE') THEN 'x' ELSE '-' END
					   ELSE coalesce(nullif(CASE WHEN has_table_privilege(r, objid, 'SELECT') THEN 'r' ELSE '' END
										  || CASE WHEN has_table_privilege(r, objid, 'INSERT,UPDATE,DELETE') THEN 'w' ELSE '' END, ''), '-')
				  END, ' ' ORDER BY o)
  FROM m, unnest(ARRAY['inventory_app', 'inventory_admin', 'inventory_monitor', 'public']) WITH ORDINALITY AS u (r, o)
 GROUP BY 1 ORDER BY 1};
my %actual = map { my ($m, $r) = split /\|/; ($m => $r) } split /\n/,
  $node->safe_psql('postgres', sprintf($rights_sql, 'inventory'));

# The members of an extension (WHAT) against its manifest (FILE): each in
# the other, and each role's rights those of the manifest (WHERE: how the
# last test's name begins).
sub compare_rights
{
	my ($manifest, $actual, $what, $file, $where) = @_;
	is(join("\n", sort grep { !exists $manifest->{$_} } keys %$actual), '',
		"every member of $what is in $file");
	is(join("\n", sort grep { !exists $actual->{$_} } keys %$manifest), '',
		"every member of $file is in $what");
	my @wrong;
	for my $m (sort keys %$actual)
	{
		next unless $manifest->{$m};
		my $want = join ' ', map { $manifest->{$m}{$_} } @ROLES;
		push @wrong, "$m: has $actual->{$m}, the manifest says $want" if $actual->{$m} ne $want;
	}
	is(join("\n", @wrong), '',
		"${where}every role has exactly the rights of the manifest on every member (" . scalar(keys %$actual) . ' members)');
}
compare_rights(\%manifest, \%actual, 'the extension', 'test/privileges.manifest', '');

# --- the rights refused, refused to real calls ---------------------------------

# the argument types of a signature, as NULLs: the privilege is checked before
# a function runs, so a call with NULLs is refused as any other would be
sub null_call
{
	my ($sig) = @_;
	my ($name, $args) = $sig =~ /^([^(]+)\((.*)\)$/;
	my @types = grep { length } split /,/, $args;
	return "SELECT $name(" . join(', ', map { "NULL::$_" } @types) . ')';
}

# Every right the manifest refuses, tried by the role's login in DB of
# SERVER: the calls that were not refused with 42501, and how many were
# tried.  A trigger function is called by its trigger only, and a type's I/O
# functions by the type: neither by SQL.
sub not_refused
{
	my ($server, $db, $manifest) = @_;
	my @refused;
	for my $m (sort keys %$manifest)
	{
		next if $m eq 'inventory.enforce()' || $m =~ /internal|cstring/;
		for my $role (@ROLES)
		{
			my $r = $manifest->{$m}{$role};
			if ($m =~ /\(/)
			{
				push @refused, [ null_call($m), $role ] if $r eq '-';
			}
			else
			{
				push @refused, [ "SELECT FROM $m LIMIT 0", $role ] if $r !~ /r/;
				push @refused, [ "DELETE FROM $m WHERE false", $role ]
				  if $r !~ /w/ && $server->safe_psql($db, "SELECT relkind FROM pg_class WHERE oid = '$m'::regclass") eq 'r';
			}
		}
	}
	my @not_refused;
	for my $c (@refused)
	{
		my ($stmt, $role) = @$c;
		my ($ret, $out, $err) = $server->psql($db, $stmt,
			extra_params => [ '-U', $LOGIN{$role}, '-v', 'VERBOSITY=verbose' ]);
		push @not_refused, "$LOGIN{$role}: $stmt: " . ($ret == 0 ? 'ran' : ($err =~ /ERROR:\s+(\w+)/)[0])
		  unless $ret != 0 && $err =~ /ERROR:\s+42501/;
	}
	return (\@not_refused, scalar(@refused));
}
my ($not_refused, $tried) = not_refused($node, 'postgres', \%manifest);
is(join("\n", @$not_refused), '', "$tried calls of a right refused are refused with 42501");

# --- the rights granted, in real calls after a restart --------------------------

# One call per function a role may execute, on a SKU and a key of its own
# (%1$s: the role's login), so that each reaches the cache for a SKU it has
# not loaded; restocked before the restart, which empties the cache.
my %CALL = (
	'inventory.adjust' => q{SELECT status FROM inventory.adjust('%1$s-adjust', 7, '%1$s-k-adjust')},
	'inventory.available' => q{SELECT inventory.available('%1$s-available')},
	'inventory.cache_by_database' => q{SELECT count(*) FROM inventory.cache_by_database()},
	'inventory.cache_info' => q{SELECT capacity FROM inventory.cache_info()},
	'inventory.call_stats' => q{SELECT count(*) FROM inventory.call_stats()},
	'inventory.can_transition' => q{SELECT inventory.can_transition('PENDING', 'CONFIRMED')},
	'inventory.cancel' => q{SELECT status FROM inventory.cancel('%1$s-k-cancel')},
	'inventory.cancel_order' => q{SELECT string_agg(status, ' ') FROM inventory.cancel_order('%1$s-k-cartx')},
	'inventory.changes' => q{SELECT count(*) >= 0 FROM inventory.changes()},
	'inventory.confirm' => q{SELECT status FROM inventory.confirm('%1$s-k-confirm')},
	'inventory.confirm_order' => q{SELECT string_agg(status, ' ') FROM inventory.confirm_order('%1$s-k-manyx')},
	'inventory.effect_on_hand' => q{SELECT inventory.effect_on_hand('reserve', 'CONFIRMED', 2)},
	'inventory.effect_reserved' => q{SELECT inventory.effect_reserved('reserve', 'PENDING', 2)},
	'inventory.effect_version' => q{SELECT inventory.effect_version('reserve', 'PENDING', 2)},
	'inventory.expire' => q{SELECT inventory.expire()},
	'inventory.express_fallbacks' => q{SELECT inventory.express_fallbacks()},
	'inventory.express_status' => q{SELECT count(*) FROM inventory.express_status()},
	'inventory.extend' => q{SELECT status FROM inventory.extend('%1$s-k-extend', 1, '1 hour')},
	'inventory.fold' => q{SELECT inventory.fold()},
	'inventory.hot_skus' => q{SELECT count(*) FROM inventory.hot_skus()},
	'inventory.is_final' => q{SELECT inventory.is_final('EXPIRED')},
	'inventory.key_filter_info' => q{SELECT count(*) FROM inventory.key_filter_info()},
	'inventory.key_filter_rebuild' => q{SELECT inventory.key_filter_rebuild()},
	'inventory.movement_stats' => q{SELECT count(*) FROM inventory.movement_stats()},
	'inventory.reconcile_stats' => q{SELECT count(*) FROM inventory.reconcile_stats()},
	'inventory.reservation' => q{SELECT string_agg(state::text, ' ') FROM inventory.reservation('%1$s-k-held')},
	'inventory.reserve' => q{SELECT status FROM inventory.reserve('%1$s-reserve', 1, '%1$s-k-reserve')},
	'inventory.reserve_cart' => q{SELECT string_agg(status, ' ') FROM inventory.reserve_cart('%1$s-k-cart', '{%1$s-cart}', '{1}')},
	'inventory.reserve_many' => q{SELECT string_agg(status, ' ') FROM inventory.reserve_many('{%1$s-many}', '{1}', '{%1$s-k-many}')},
	'inventory.reserve_now' => q{SELECT inventory.reserve_now('%1$s-now', 1, '%1$s-k-now')},
	'inventory.reserve_now_result' => q{SELECT status FROM inventory.reserve_now_result('%1$s-nowr', 1, '%1$s-k-nowr')},
	'inventory.restock' => q{SELECT status FROM inventory.restock('%1$s-restock', 3, '%1$s-k-restock')},
	'inventory.restore_abandon' => q{SELECT inventory.restore_abandon()},
	'inventory.restore_finish' => q{SELECT inventory.restore_finish()},
	'inventory.set_reconciler' => q{SELECT inventory.set_reconciler(NULL)},
	'inventory.set_rules' => q{SELECT inventory.set_rules('%1$s-rules', 5)},
	'inventory.sku_stats' => q{SELECT count(*) FROM inventory.sku_stats()},
	'inventory.state_cmp' => q{SELECT 'PENDING'::inventory.state < 'EXPIRED'::inventory.state},
	'inventory.stats_reset' => q{SELECT inventory.stats_reset()},
	'inventory.stop_worker' => q{SELECT inventory.stop_worker()},
	'inventory.verify' => q{SELECT count(*) FROM inventory.verify()},
	'inventory.verify_status' => q{SELECT count(*) FROM inventory.verify_status()},
	'inventory.withdraw' => q{SELECT status FROM inventory.withdraw('%1$s-withdraw', 1, '%1$s-k-withdraw')},
	'inventory.worker_status' => q{SELECT count(*) FROM inventory.worker_status()});
# what the calls with a known answer answer (the others must not fail)
my %ANSWER = (
	'inventory.adjust' => 'ok', 'inventory.available' => '5', 'inventory.cancel' => 'ok',
	'inventory.cancel_order' => 'ok', 'inventory.confirm' => 'ok', 'inventory.confirm_order' => 'ok',
	'inventory.extend' => 'ok', 'inventory.reservation' => 'PENDING', 'inventory.reserve' => 'ok', 'inventory.reserve_cart' => 'ok',
	'inventory.reserve_many' => 'ok', 'inventory.reserve_now' => 'ok', 'inventory.reserve_now_result' => 'ok', 'inventory.restock' => 'ok',
	'inventory.withdraw' => 'ok', 'inventory.verify' => '0', 'inventory.stop_worker' => 'f',
	'inventory.can_transition' => 't', 'inventory.is_final' => 't', 'inventory.effect_on_hand' => '-2',
	'inventory.effect_reserved' => '2', 'inventory.effect_version' => '1', 'inventory.key_filter_info' => '1',
	'inventory.expire' => '0', 'inventory.state_cmp' => 't', 'inventory.cache_info' => '1000');

# the SKUs and the reservations the calls settle, for each role that may
my $prepare = '';
$prepare .= "SELECT inventory.restock('shop_monitor-available', 5, 'shop_monitor-in-available');\n";
for my $role (qw(inventory_app inventory_admin))
{
	my $l = $LOGIN{$role};
	$prepare .= "SELECT inventory.restock('$l-$_', 5, '$l-in-$_');\n"
	  for qw(adjust available cancel confirm extend held reserve cart cartx many manyx now nowr withdraw rules);
	$prepare .= "SELECT inventory.reserve('$l-$_', 1, '$l-k-$_');\n" for qw(cancel confirm extend held);
	$prepare .= "SELECT inventory.reserve_cart('$l-k-cartx', '{$l-cartx}', '{1}');\n";
	$prepare .= "SELECT inventory.reserve_many('{$l-manyx}', '{1}', '{$l-k-manyx}');\n";
}
$node->safe_psql('postgres', $prepare);
$node->restart;
is($node->safe_psql('postgres', 'SELECT entries FROM inventory.cache_info()'), '0',
	'after the restart the cache is empty');

my @failed;
my $calls = 0;
for my $m (sort keys %manifest)
{
	my ($name) = $m =~ /^([^(]+)\(/ or next;
	next if $m eq 'inventory.enforce()' || $m =~ /internal|cstring/;
	$name = 'inventory.state_cmp' if $name =~ /^inventory\.state_/;
	for my $role (@ROLES)
	{
		next unless $manifest{$m}{$role} eq 'x';
		my $call = $CALL{$name} or do { push @failed, "$m: no call to make in this test"; next };
		# the verify with a wait, and the settling of orders made just before
		$call =~ s/inventory\.verify\(\)/inventory.verify('1 s')/ if $m eq 'inventory.verify(interval)';
		my $sql = sprintf($call, $LOGIN{$role});
		my ($ret, $out, $err) = $node->psql('postgres', $sql, extra_params => [ '-U', $LOGIN{$role} ]);
		$calls++;
		if ($ret != 0)
		{
			push @failed, "$LOGIN{$role}: $sql: $err";
		}
		elsif (defined $ANSWER{$name} && $out ne $ANSWER{$name})
		{
			push @failed, "$LOGIN{$role}: $sql: answered $out, not $ANSWER{$name}";
		}
	}
}
is(join("\n", @failed), '', "after a restart, each of $calls calls of a right granted works, as its role's login");
is($node->safe_psql('postgres', 'SELECT count(*) FROM inventory.verify()'), '0', 'verify() is empty after them');

# --- the manual --------------------------------------------------------------------

# docs/security.md: a row per role in the table of "The roles"; every function
# and view the manifest gives a role is named there (a role's rights count
# PUBLIC's row, and inventory_admin's inventory_app's, of which it is a
# member; PUBLIC's names the state type's functions at once)
my %row;
for my $line (split /\n/, slurp_file("$top/docs/security.md"))
{
	$row{$1} = $2 if $line =~ /^\|\s*`(inventory_\w+|PUBLIC)`\s*\|(.*)\|\s*$/;
}
is(join(' ', sort keys %row), 'PUBLIC inventory_admin inventory_app inventory_monitor',
	'docs/security.md has a row for each role');
my @unnamed;
for my $m (sort keys %manifest)
{
	my ($name) = $m =~ /^inventory\.(\w+)/;
	next if $name eq 'enforce' || $name =~ /^state_/;
	for my $role (@ROLES)
	{
		next if $manifest{$m}{$role} eq '-';
		my $text = ($row{$role} // '') . ($row{PUBLIC} // '')
		  . ($role eq 'inventory_admin' ? $row{inventory_app} // '' : '');
		push @unnamed, "$role: $m" unless $text =~ /`(inventory\.)?\Q$name\E(\(\))?`/;
	}
}
is(join("\n", @unnamed), '', "docs/security.md names, in each role's row, every function and view the role may use");

# --- the router -----------------------------------------------------------------

# The router database has the same three roles, granted what they may call
# there (test/privileges-router.manifest); every call it routes runs on the
# nodes as the role of its user mapping.  The rights of each member, and a
# real call of every right refused, on a router over two nodes.
$node->stop;
my @nodes = start_nodes(2);
my $router = start_router(\@nodes, 0, roles => 1);
$router->safe_psql('shop', 'CREATE ROLE shop_nobody LOGIN');
my %rmanifest = manifest('test/privileges-router.manifest');
my %ractual = map { my ($m, $r) = split /\|/; ($m => $r) } split /\n/,
  $router->safe_psql('shop', sprintf($rights_sql, 'inventory_router'));
compare_rights(\%rmanifest, \%ractual, 'the router extension', 'test/privileges-router.manifest',
	'on the router, ');
($not_refused, $tried) = not_refused($router, 'shop', \%rmanifest);
is(join("\n", @$not_refused), '', "$tried calls of a right refused on the router are refused with 42501");

done_testing();

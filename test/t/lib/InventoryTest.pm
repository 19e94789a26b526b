# Helpers the TAP tests share.
package InventoryTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Time::HiRes qw(usleep time);
use IPC::Run;
use PostgreSQL::Test::Utils;

our @EXPORT_OK = qw(inventory_node wait_until history_sql sale_sql replay_checks sells_once
  describe_sql key_checks_sql reserve_now_client reserve_now_log stock_vs_ledger_sql
  express_writer_sql psql_session said wait_said listen_session notifications inventory_roles
  as_app as_admin as_monitor as_role ROLES_SQL);

# inventory_node(NAME, [CONF, [INIT_ARGS...]]): a new server, initialised
# with INIT_ARGS (allows_streaming => 1, ...), that preloads inventory and
# has CONF added to its postgresql.conf; started.
sub inventory_node
{
	my ($name, $conf, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%init);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'inventory'\n" . ($conf // ''));
	$node->start;
	return $node;
}

# The login roles the tests call the API as, one per role of the manual:
# shop_app (inventory_app: what an application calls), shop_admin
# (inventory_admin: administration) and shop_monitor (inventory_monitor:
# reading).  ROLES_SQL, test/roles.sql (as the regression files run it),
# creates them, once per server, after CREATE EXTENSION inventory (which
# creates the roles they join).
use constant ROLES_SQL => slurp_file(__FILE__ =~ s{test/t/lib/InventoryTest\.pm$}{test/roles.sql}r);

# inventory_roles(NODE, [DBNAME]): creates the login roles (ROLES_SQL), as
# the superuser, in DBNAME (postgres), where the extension is.
sub inventory_roles
{
	my ($node, $dbname) = @_;
	$node->safe_psql($dbname // 'postgres', ROLES_SQL);
	return;
}

# as_role(NODE, ROLE, DBNAME, SQL, [PSQL_PARAMS...]): safe_psql connected
# as ROLE (a new connection: the role's own settings apply);
# as_app / as_admin / as_monitor(NODE, DBNAME, SQL, ...): as shop_app,
# shop_admin, shop_monitor.
sub as_role
{
	my ($node, $role, $dbname, $sql, %params) = @_;
	return $node->safe_psql($dbname, $sql, %params,
		extra_params => [ '-U', $role, @{ $params{extra_params} // [] } ]);
}
sub as_app { my $node = shift; return as_role($node, 'shop_app', @_); }
sub as_admin { my $node = shift; return as_role($node, 'shop_admin', @_); }
sub as_monitor { my $node = shift; return as_role($node, 'shop_monitor', @_); }

# psql_session(NODE, TIMEOUT, ON_ERROR_STOP, [DBNAME, [ROLE]]): a psql
# session on NODE's database DBNAME (postgres), as ROLE (the superuser),
# driven by hand: write statements to $s->{in}, read what it said in
# $s->{out} (with said() and wait_said()), $s->{err}.
sub psql_session
{
	my ($node, $timeout, $on_error_stop, $dbname, $role) = @_;
	my %s = (in => '', out => '', err => '');
	$s{run} = IPC::Run::start(
		[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=' . ($on_error_stop ? 1 : 0),
		  '-d', $node->connstr($dbname // 'postgres') . (defined $role ? " user=$role" : '') ],
		'<', \$s{in}, '>', \$s{out}, '2>', \$s{err},
		IPC::Run::timeout($timeout));
	return \%s;
}

# said(S, RE): has session S said something that matches RE yet?
sub said
{
	my ($s, $re) = @_;
	$s->{run}->pump_nb;
	return $s->{out} =~ $re;
}

# wait_said(S, RE): waits until session S says something that matches RE
# (the session's timeout bounds the wait).
sub wait_said
{
	my ($s, $re) = @_;
	$s->{run}->pump until $s->{out} =~ $re;
}

# listen_session(NODE, DBNAME, ROLE, CHANNEL...): a psql session of ROLE
# that listens on the CHANNELs; notifications() reads what it heard.
sub listen_session
{
	my ($node, $dbname, $role, @channels) = @_;
	my $s = psql_session($node, 180, 1, $dbname, $role);
	$s->{in} .= join('', map { "LISTEN $_;\n" } @channels);
	notifications($s, $channels[0]);
	return $s;
}

# notifications(S, CHANNEL): asks listen_session S's server for what
# arrived, then answers every notification on CHANNEL so far, in order,
# as [payload ('' for none), pid of the sender] each.
my $polls = 0;
sub notifications
{
	my ($s, $channel) = @_;
	$polls++;
	$s->{in} .= "SELECT 'polled $polls';\n";
	$s->{run}->pump until $s->{out} =~ /polled $polls\n/;
	my @heard;
	push @heard, [ $1 // '', $2 ]
	  while $s->{out} =~ /notification "\Q$channel\E"(?: with payload "(.*?)")? received from server process with PID (\d+)/g;
	return \@heard;
}

# wait_until(SECONDS, CODE): polls CODE every 50 ms until it returns true or
# SECONDS have passed; returns its last answer.
sub wait_until
{
	my ($seconds, $cond) = @_;
	my $end = time + $seconds;
	while (time < $end)
	{
		return 1 if $cond->();
		usleep(50_000);
	}
	return $cond->();
}

# reserve_now_client(NODE, DBNAME, NAME, CALLS, [TIMEOUT, [ROLE]]): a psql
# process that makes the calls of CALLS in order, each {sku, qty, key[,
# buyer]} one inventory.reserve_now() in a statement of its own
# (autocommit; ttl 1 hour), as application NAME, connected as ROLE (the
# superuser; shop_app, say, once inventory_roles() made it).  Before call i it prints "SENT i" and once
# the call has answered "ACK i STATUS", with \warn to its stderr (which is
# unbuffered); with ON_ERROR_STOP a call that fails ends the script.  A
# call with a SENT line and no ACK line is the one that was in flight when
# the client stopped; the calls after it never ran.  Returns {h => the
# IPC::Run handle, err => the file of its stderr, calls => CALLS}; TIMEOUT
# (seconds) bounds its whole run.
sub reserve_now_client
{
	my ($node, $dbname, $name, $calls, $timeout, $role) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir;
	my $script = "$dir/$name.sql";
	open my $fh, '>', $script or die "$script: $!";
	for my $i (1 .. @$calls)
	{
		my $c = $calls->[ $i - 1 ];
		my $buyer = defined $c->{buyer} ? "'$c->{buyer}'" : 'NULL';
		print $fh "\\warn SENT $i\n",
		  "SELECT inventory.reserve_now('$c->{sku}', $c->{qty}, '$c->{key}', 1, '1 hour', $buyer) AS s \\gset\n",
		  "\\warn ACK $i :s\n";
	}
	close $fh;
	my $log = "$PostgreSQL::Test::Utils::log_path/${name}";
	my $h = IPC::Run::start(
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $script,
		  '-d', $node->connstr($dbname) . " application_name=$name"
			. (defined $role ? " user=$role" : '') ],
		'<', '/dev/null', '>', "$log.out", '2>', "$log.err",
		IPC::Run::timeout($timeout // $PostgreSQL::Test::Utils::timeout_default));
	return { h => $h, err => "$log.err", calls => $calls, name => $name };
}

# reserve_now_log(CLIENT): what a reserve_now_client() printed so far:
# (the numbers of the calls sent, {call number => status} of those that
# answered).
sub reserve_now_log
{
	my ($client) = @_;
	my $text = -e $client->{err} ? slurp_file($client->{err}) : '';
	my @sent = $text =~ /^SENT (\d+)\n/mg;
	my %ack = $text =~ /^ACK (\d+) ([^\n]*)\n/mg;
	return (\@sent, \%ack);
}

# stock_vs_ledger_sql(): the SKUs whose counters in inventory.stock are not
# what their whole ledger adds up to (a restock adds qty, a confirm takes qty
# off the shelf, PENDING holds qty, version counts movements and
# settlements), folded or not; empty when they all agree.
sub stock_vs_ledger_sql
{
	return q{
SELECT sku, s.on_hand, s.reserved, s.version, l.on_hand, l.reserved, l.version
  FROM inventory.stock s
  FULL JOIN (SELECT sku,
                    sum(CASE WHEN kind = 'restock' THEN qty
                             WHEN state = 'CONFIRMED' THEN -qty ELSE 0 END) AS on_hand,
                    sum(CASE WHEN state = 'PENDING' THEN qty ELSE 0 END) AS reserved,
                    count(*) + count(*) FILTER (WHERE state <> 'PENDING') AS version
               FROM inventory.ledger GROUP BY sku) l USING (sku)
 WHERE (s.on_hand, s.reserved, s.version) IS DISTINCT FROM (l.on_hand, l.reserved, l.version)
 ORDER BY sku};
}

# express_writer_sql(DBNAME): the pids of the express writers that
# pg_stat_activity shows in database DBNAME, one a line.
sub express_writer_sql
{
	my ($dbname) = @_;
	return qq{
SELECT pid FROM pg_stat_activity
 WHERE backend_type = 'inventory express writer' AND datname = '$dbname' ORDER BY pid};
}

# history_sql(): the statements of a history with movements in every state,
# folded and not -- the first block is folded, the second is not -- with
# keys and SKUs that COPY must escape.  Run it with the workers off.
#   TEE 100 in; paid 5 CONFIRMED, gone 2 CANCELLED (folded);
#       open/1 4 and open/2 1 PENDING, paid-2 1 CONFIRMED
#   MUG 40 in; late 3 EXPIRED (folded); gone-2 2 CANCELLED, late-2 1 EXPIRED,
#       count-1 stocktake to 30
#   CAP 10 in; all 10 PENDING; in-5 3 in
#   ÉTÉ<tab>ß 9 in (key with quote, backslash, double quotes; batch -7);
#       a reservation of 2 under a key with a newline
#   NEW: a SKU without movements
sub history_sql
{
	return <<'SQL';
SELECT inventory.restock('TEE', 100, 'in-1'), inventory.restock('MUG', 40, 'in-2'),
       inventory.restock('CAP', 10, 'in-3'), inventory.restock(E'ÉTÉ\tß', 9, E'in-4 it''s\\a "key"', -7);
SELECT inventory.confirm('paid') FROM inventory.reserve('TEE', 5, 'paid', ttl => '1 hour');
SELECT inventory.cancel('gone') FROM inventory.reserve('TEE', 2, 'gone');
SELECT inventory.reserve('MUG', 3, 'late', ttl => '10 milliseconds');
SELECT pg_sleep(0.05);
SELECT inventory.expire();
SELECT inventory.fold();
SELECT inventory.reserve('TEE', 4, 'open', 1, '1 hour'), inventory.reserve('TEE', 1, 'open', 2, '1 hour');
SELECT inventory.reserve('CAP', 10, 'all', ttl => '1 hour');
SELECT inventory.reserve(E'ÉTÉ\tß', 2, E'ordre\n"été"', ttl => '1 hour');
SELECT inventory.confirm('paid-2') FROM inventory.reserve('TEE', 1, 'paid-2', ttl => '1 hour');
SELECT inventory.cancel('gone-2') FROM inventory.reserve('MUG', 2, 'gone-2');
SELECT inventory.reserve('MUG', 1, 'late-2', ttl => '10 milliseconds');
SELECT pg_sleep(0.05);
SELECT inventory.expire();
SELECT inventory.restock('CAP', 3, 'in-5');
SELECT inventory.adjust('MUG', 30, 'count-1');
INSERT INTO inventory.sku (sku) VALUES ('NEW');
SQL
}

# sale_sql(): on top of history_sql(), with version 0.2: reservations due
# 3 seconds later under the key 'soon' (batches 1 and 2), and LIM: a SKU
# with a per-buyer limit of 2 and a sale window around now, a cart of
# buyer ann that holds the limit, and a withdrawal.
sub sale_sql
{
	return <<'SQL';
SELECT inventory.reserve('MUG', 1, 'soon', ttl => '3 seconds');
SELECT inventory.reserve('TEE', 2, 'soon', 2, '3 seconds');
SELECT inventory.restock('LIM', 10, 'in-lim');
SELECT inventory.set_rules('LIM', 2, now() - interval '1 day', now() + interval '1 day');
SELECT * FROM inventory.reserve_cart('cart-1', '{LIM,LIM}', '{1,1}', '1 hour', 'ann');
SELECT inventory.withdraw('LIM', 3, 'out-lim');
SQL
}

# replay_checks(): [SQL, ANSWER, WHAT] for a database that holds
# history_sql() and sale_sql(), its worker off: each movement replayed is
# answered from its key, and the rules and buyers are in force.  Nothing
# changes.
sub replay_checks
{
	return (
		[ q{
SELECT string_agg(s, ' ') FROM (VALUES
  ((inventory.reserve('TEE', 5, 'paid')).status),
  ((inventory.confirm('paid')).status),
  ((inventory.reserve('TEE', 1, 'open', 2)).status),
  ((inventory.cancel('gone')).status),
  ((inventory.confirm('late')).status),
  ((inventory.cancel('gone-2')).status),
  ((inventory.restock('CAP', 3, 'in-5')).status),
  ((inventory.adjust('MUG', 30, 'count-1')).status),
  ((inventory.restock(E'ÉTÉ\tß', 9, E'in-4 it''s\\\\a "key"', -7)).status),
  ((inventory.reserve(E'ÉTÉ\tß', 2, E'ordre\n"été"')).status)) v(s)},
		  'duplicate duplicate duplicate duplicate expired duplicate duplicate duplicate duplicate duplicate',
		  'replays are answered from the keys' ],
		[ q{
SELECT (SELECT string_agg(status, ' ') FROM inventory.reserve_cart('cart-1', '{LIM,LIM}', '{1,1}', '1 hour', 'ann'))
    || ' ' || (inventory.reserve('LIM', 1, 'ann-more', buyer_id => 'ann')).status
    || ' ' || (inventory.reserve('LIM', 1, 'no-buyer')).status
    || ' ' || (inventory.withdraw('LIM', 3, 'out-lim')).status},
		  'duplicate duplicate limit_exceeded buyer_required duplicate',
		  'the rules, buyers and withdrawals hold' ]);
}

# sells_once(AVAILABLE): [SQL, ANSWER] that asks TEE and CAP for one unit
# more than AVAILABLE (a hash, SKU => units available) says they have,
# then for exactly that: refused, then sold.
sub sells_once
{
	my ($avail) = @_;
	return (qq{
SELECT string_agg(s, ' ') FROM (VALUES
  ((inventory.reserve('TEE', $avail->{TEE} + 1, 'over')).status),
  ((inventory.reserve('TEE', $avail->{TEE}, 'all-tee')).status),
  ((inventory.reserve('CAP', $avail->{CAP} + 1, 'over-cap')).status),
  ((inventory.reserve('CAP', $avail->{CAP}, 'all-cap')).status)) v(s)},
		'insufficient ok insufficient ok');
}

# key_checks_sql(): the states of the triggers that check the ledger's
# foreign key, and how many: 'DDDD 4' when all four are disabled, as the
# extension keeps them (they would lock the SKU's row for every
# reservation).
sub key_checks_sql
{
	return q{
SELECT string_agg(tgenabled::text, '' ORDER BY tgenabled) || ' ' || count(*) FROM pg_trigger
 WHERE tgconstraint = (SELECT oid FROM pg_constraint WHERE conname = 'ledger_sku_fkey')};
}

# describe_sql([EXTNAME]): every object of the extension (inventory, or
# inventory_router), described so that two databases compare: what it is,
# its definition, its comment, its privileges.  Internal triggers are named after OIDs, so they are
# described by what they do.
sub describe_sql
{
	my ($extname) = @_;
	$extname //= 'inventory';
	return qq{
WITH ext AS (SELECT oid FROM pg_extension WHERE extname = '$extname'),
members AS (
  SELECT d.classid, d.objid FROM pg_depend d, ext
   WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
)
SELECT line FROM (
  SELECT 'member ' || pg_describe_object(classid, objid, 0) AS line FROM members
  UNION ALL
  SELECT format('function %s: %s; comment %s; acl %s', p.oid::regprocedure,
                pg_get_functiondef(p.oid), obj_description(p.oid, 'pg_proc'), p.proacl)
    FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
   WHERE p.prokind = 'f'
  UNION ALL
  SELECT format('relation %s kind %s options %s acl %s comment %s', c.oid::regclass, c.relkind,
                c.reloptions, c.relacl, obj_description(c.oid, 'pg_class'))
    FROM pg_class c WHERE c.relnamespace = 'inventory'::regnamespace
  UNION ALL
  SELECT format('column %s.%s %s notnull %s default %s collation %s comment %s', c.oid::regclass,
                a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                pg_get_expr(ad.adbin, ad.adrelid), a.attcollation, col_description(c.oid, a.attnum))
    FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
    LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
   WHERE c.relnamespace = 'inventory'::regnamespace
  UNION ALL
  SELECT format('constraint %s on %s: %s comment %s', co.conname, co.conrelid::regclass,
                pg_get_constraintdef(co.oid), obj_description(co.oid, 'pg_constraint'))
    FROM pg_constraint co WHERE co.connamespace = 'inventory'::regnamespace
  UNION ALL
  SELECT format('index %s', pg_get_indexdef(i.indexrelid))
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
   WHERE c.relnamespace = 'inventory'::regnamespace
  UNION ALL
  SELECT format('trigger on %s: %s enabled %s', t.tgrelid::regclass,
                CASE WHEN t.tgisinternal THEN format('internal %s type %s', t.tgfoid::regproc, t.tgtype)
                     ELSE pg_get_triggerdef(t.oid) END, t.tgenabled)
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
   WHERE c.relnamespace = 'inventory'::regnamespace
  UNION ALL
  SELECT format('view %s: %s', c.oid::regclass, pg_get_viewdef(c.oid))
    FROM pg_class c WHERE c.relnamespace = 'inventory'::regnamespace AND c.relkind = 'v'
  UNION ALL
  SELECT format('type %s comment %s', t.oid::regtype, obj_description(t.oid, 'pg_type'))
    FROM pg_type t WHERE t.typnamespace = 'inventory'::regnamespace
  UNION ALL
  SELECT format('schema acl %s', n.nspacl) FROM pg_namespace n WHERE n.nspname = 'inventory'
  UNION ALL
  SELECT format('config table %s', x) FROM pg_extension, unnest(extconfig::regclass[]) x
   WHERE extname = '$extname'
) l ORDER BY line
};
}

# as_each_caller(NODE, DBNAME, SQL): runs the statements of SQL in order,
# each connected as the login role that the manual gives its calls (a
# script written for one session, such as history_sql() or sale_sql(),
# whose statements each end a line with ";"): shop_admin for a statement
# that calls an administrator's function (restock, adjust, withdraw,
# set_rules, expire, fold, verify, ...) or writes or reads inventory.sku or
# inventory.ledger, shop_app for the others.  Consecutive statements of one
# role share a session.  Dies on an error, as safe_psql; returns what the
# sessions printed, one after the other.
sub as_each_caller
{
	my ($node, $dbname, $sql) = @_;
	my $admin = qr/\binventory\.(?:restock|adjust|withdraw|set_rules|expire|fold|verify|key_filter_rebuild|stats_reset|restore_finish|restore_abandon|set_reconciler|stop_worker)\s*\(|\binventory\.(?:sku|ledger)\b/;
	my @groups;
	for my $stmt (split /(?<=;)\n/, $sql)
	{
		next unless $stmt =~ /\S/;
		my $role = $stmt =~ $admin ? 'shop_admin' : 'shop_app';
		if (@groups && $groups[-1][0] eq $role)
		{
			$groups[-1][1] .= "$stmt\n";
		}
		else
		{
			push @groups, [ $role, "$stmt\n" ];
		}
	}
	return join "\n", grep { $_ ne '' } map { as_role($node, $_->[0], $dbname, $_->[1]) } @groups;
}

# poll_as(NODE, ROLE, DBNAME, SQL, [EXPECTED]): $node->poll_query_until,
# each attempt a new connection as ROLE.
sub poll_as
{
	my ($node, $role, $dbname, $sql, $expected) = @_;
	local $ENV{PGUSER} = $role;
	return $node->poll_query_until($dbname, $sql, $expected);
}

push @EXPORT_OK, qw(as_each_caller poll_as);

# fault_functions(NODE, DBNAME): whether the server's library is a test
# build with faults injected on purpose (src/fault.h); if so, creates in
# DBNAME, as the superuser, the functions that watch and end a park:
# test_fault.parked() (how many processes are parked) and
# test_fault.release() (let them go).
sub fault_functions
{
	my ($node, $dbname) = @_;
	return 0 unless $node->safe_psql($dbname,
		"SELECT count(*) FROM pg_settings WHERE name = 'inventory.inject_fault'") eq '1';
	$node->safe_psql($dbname, q{
CREATE SCHEMA test_fault;
CREATE FUNCTION test_fault.parked() RETURNS integer AS 'inventory', 'inventory_fault_parked' LANGUAGE C;
CREATE FUNCTION test_fault.release() RETURNS void AS 'inventory', 'inventory_fault_release' LANGUAGE C;
});
	return 1;
}
push @EXPORT_OK, qw(fault_functions);

1;

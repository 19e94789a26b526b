# A hostile tenant against the reconciler and the workers (issue 31, R1-R6
# and the smaller findings): each block plays one attack, with the roles of
# the manual, each connected as itself, and checks its outcome.
#
#   app      a login in inventory_app (the application: it sells, and writes
#            the shop's code)
#   alice    a login in inventory_admin (sets reconcilers, restocks, writes
#            overdue lines by hand, runs the expiry, stops a worker)
#   mon      a login in inventory_monitor
#   mallory  a login with no grant at all
#
# The superuser creates the databases, the extension, the roles and the
# schemas it gives them, sets the server's settings (per database), restores
# a dump, and reads the application's own log tables; nothing else.
#
#   * R1: alice sets a function owned by a group -- inventory_app, or a group
#     the app belongs to -- whose body a member then replaces to copy the
#     ledger and alice's own table: the ask runs as the group, gains
#     nothing, and alice's rights are not used;
#   * R2: a superuser sets a function owned by app, whose replaced body
#     tries ALTER ROLE app SUPERUSER and COPY ... TO PROGRAM: both fail, app
#     stays an ordinary role;
#   * R3: the manual's old search_path (shop, pg_catalog) is refused; a
#     schema on the path that another role may create in is refused when
#     set and before the ask, and what mallory planted there (an operator,
#     an overload) does not run;
#   * smaller: a temporary function is refused; inventory_monitor cannot
#     read reconcile_wait or reconcile_waiting; an error of 2 MB is kept to
#     200 bytes in last_answer, the WARNING and the server log; a reconciler
#     that catches the cancel in inventory.expire() ends the caller's own
#     session, and the next round records a failed ask;
#   * R4: pg_dump by alice, pg_restore --no-owner by the superuser: the
#     restored function is the superuser's, the worker's next ask is refused
#     with a WARNING and counted as refused, and nothing runs as the
#     superuser;
#   * R5: a reconciler that catches the cancel in a loop is ended by force
#     after its timeout plus 1 s, its late confirm is not applied, the next
#     worker records a failed ask and asks again only after the retry, and
#     the order is expired after max_asks; LOCK TABLE inventory.ledger inside
#     an ask is refused and sales go on; alice ends a worker stuck in an ask
#     with inventory.stop_worker();
#   * R6: mallory repeats DROP DATABASE, ALTER DATABASE ... RENAME and CREATE
#     DATABASE ... TEMPLATE of a shop: each fails on privileges, and the
#     shop's worker and express writer keep their PIDs while its overdue
#     reservations keep expiring on time;
#   * LISTEN inventory_stock is heard by any role that can connect (the
#     manual says so);
#   * behind the router, set_reconciler(fn, timeout => ...) sets the same
#     timing on every node.
#
# The first blocks run with the workers off, so that alice's expire() is
# the only one that asks; from R4 on the workers are on.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node wait_until express_writer_sql);
use RouterCluster qw(start_nodes start_router);

my $DEADLINE = 60;    # seconds, for every wait of this test that proves no bound

my $node = inventory_node('hostile', q{
inventory.expire_interval = '100ms'
inventory.worker_enabled = off
log_statement = none
});

# the superuser: setup and scaffolding only
sub su { return $node->safe_psql(@_); }

# as(ROLE, DB, SQL): SQL run by the login role ROLE, connected as it; dies
# on an error
sub as
{
	my ($role, $db, $query) = @_;
	return $node->safe_psql($db, $query, extra_params => [ '-U', $role ]);
}

# attempt(ROLE, DB, SQL): the same, for a statement that may fail: (stdout,
# stderr, exit code)
sub attempt
{
	my ($role, $db, $query, %opts) = @_;
	my ($ret, $out, $err) = $node->psql($db, $query, extra_params => [ '-U', $role ], %opts);
	return ($out // '', $err // '', $ret);
}

# need(OK, WHAT): a step the test needs, not a test: the file ends here
# when it did not happen
sub need
{
	my ($ok, $what) = @_;
	die "the test cannot go on: $what did not happen\n" unless $ok;
	return;
}

# the server log from offset FROM on
sub log_since { return slurp_file($node->logfile, $_[0]); }

# a new database with the extension, as the manual has a superuser make it
sub new_db
{
	my ($db) = @_;
	su('postgres', "CREATE DATABASE $db");
	su($db, 'CREATE EXTENSION inventory');
}

# an overdue reservation of one unit of SKU under ORDER, written by hand by
# alice (a new row is PENDING; the trigger checks it as any other)
sub overdue
{
	my ($db, $sku, $order) = @_;
	as('alice', $db, qq{
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES ('$order', 1, 'reserve', '$sku', 1, now() - interval '1 minute')});
}

new_db('r1');
su('postgres', q{
CREATE ROLE app LOGIN IN ROLE inventory_app;
CREATE ROLE alice LOGIN IN ROLE inventory_admin;
CREATE ROLE mon LOGIN IN ROLE inventory_monitor;
CREATE ROLE mallory LOGIN;
CREATE ROLE shop_team NOLOGIN;
GRANT shop_team TO app, alice;
});

# --- R1: a group's function, replaced by a member --------------------------

# alice's own table, which the group may not read
su('r1', 'CREATE SCHEMA alice_s AUTHORIZATION alice');
as('alice', 'r1', q{
CREATE TABLE alice_s.secrets (s text);
INSERT INTO alice_s.secrets VALUES ('alice-only');
SELECT inventory.restock('R1', 10, 'in-r1');
});
for my $v ([ 'inventory_app', 'grp' ], [ 'shop_team', 'team' ])
{
	my ($group, $s) = @$v;
	# app writes a harmless reconciler for the group, and alice sets it
	su('r1', "CREATE SCHEMA $s AUTHORIZATION $group");
	as('app', 'r1', qq{
CREATE TABLE $s.asked (order_id text, who name);
CREATE TABLE $s.loot (what text, val text);
CREATE FUNCTION $s.reconcile(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, $s, pg_temp RETURN 'wait';
ALTER TABLE $s.asked OWNER TO $group;
ALTER TABLE $s.loot OWNER TO $group;
ALTER FUNCTION $s.reconcile(text, integer) OWNER TO $group;
});
	as('alice', 'r1', "SELECT inventory.set_reconciler('$s.reconcile(text, integer)')");
	# then app, a member of the group, replaces its body: copy the ledger
	# and alice's table, each in a block that records how it ended
	as('app', 'r1', qq{
CREATE OR REPLACE FUNCTION $s.reconcile(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, $s, pg_temp AS \$\$
BEGIN
	INSERT INTO asked VALUES (order_id, current_user);
	BEGIN
		INSERT INTO loot SELECT 'ledger', l.order_id FROM inventory.ledger l;
	EXCEPTION WHEN OTHERS THEN
		INSERT INTO loot VALUES ('ledger refused', SQLSTATE);
	END;
	BEGIN
		INSERT INTO loot SELECT 'secret', x.s FROM alice_s.secrets x;
	EXCEPTION WHEN OTHERS THEN
		INSERT INTO loot VALUES ('secret refused', SQLSTATE);
	END;
	RETURN 'wait';
END
\$\$});
	overdue('r1', 'R1', "$s-order");
	as('alice', 'r1', 'SELECT inventory.expire()');
	is(su('r1', "SELECT string_agg(order_id || ' ' || who, ', ') FROM $s.asked"), "$s-order $group",
		"R1 ($group): alice's expire() asked once, as the group that owns the function, not as alice");
	is(su('r1', "SELECT string_agg(what || ' ' || val, ', ' ORDER BY what) FROM $s.loot"),
		'ledger refused 42501, secret refused 42501',
		"R1 ($group): the replaced body copied neither the ledger nor alice's table");
}

# --- R2: a superuser sets app's function ------------------------------------

new_db('r2');
my $marker = PostgreSQL::Test::Utils::tempdir() . '/copied-to-program';
su('r2', 'CREATE SCHEMA app_s AUTHORIZATION app');
as('app', 'r2', q{
CREATE TABLE app_s.tries (what text, outcome text);
CREATE FUNCTION app_s.reconcile(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, app_s, pg_temp RETURN 'wait';
});
my $superuser = su('postgres', 'SELECT current_user');
my (undef, $set_err) = attempt($superuser, 'r2', "SELECT inventory.set_reconciler('app_s.reconcile(text, integer)')");
is($set_err, '', 'R2: a superuser may set a function owned by app (it runs as app)');
as('app', 'r2', qq{
CREATE OR REPLACE FUNCTION app_s.reconcile(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, app_s, pg_temp AS \$\$
BEGIN
	BEGIN
		EXECUTE 'ALTER ROLE app SUPERUSER';
		INSERT INTO tries VALUES ('alter role', 'done');
	EXCEPTION WHEN OTHERS THEN
		INSERT INTO tries VALUES ('alter role', SQLSTATE);
	END;
	BEGIN
		EXECUTE 'COPY (SELECT 1) TO PROGRAM ''touch $marker''';
		INSERT INTO tries VALUES ('copy to program', 'done');
	EXCEPTION WHEN OTHERS THEN
		INSERT INTO tries VALUES ('copy to program', SQLSTATE);
	END;
	RETURN 'wait';
END
\$\$});
as('alice', 'r2', q{SELECT inventory.restock('R2', 10, 'in-r2')});
overdue('r2', 'R2', 'r2-order');
as('alice', 'r2', 'SELECT inventory.expire()');
is(su('r2', "SELECT string_agg(what || ' ' || outcome, ', ' ORDER BY what) FROM app_s.tries"),
	'alter role 42501, copy to program 42501',
	'R2: asked as app, the replaced body could neither ALTER ROLE app SUPERUSER nor COPY TO PROGRAM');
is(su('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'app'"), 'f', 'R2: app is no superuser');
ok(!-e $marker, 'R2: no program ran');

# --- R3: search_path ---------------------------------------------------------

new_db('r3');
su('postgres', 'CREATE ROLE shop3 NOLOGIN; GRANT shop3 TO alice;');
su('r3', q{
CREATE SCHEMA shop3 AUTHORIZATION shop3;
CREATE SCHEMA mal AUTHORIZATION mallory;
});
# the shop's reconciler compares with = and calls its helper verdict(varchar)
# with a text; shop3.manual has the path of the manual before the fix
as('alice', 'r3', q{
CREATE TABLE shop3.payments (order_id text PRIMARY KEY, state text NOT NULL);
CREATE FUNCTION shop3.verdict(state varchar) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp
	RETURN CASE state WHEN 'paid' THEN 'confirm' ELSE 'wait' END;
CREATE FUNCTION shop3.reconcile(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, shop3, pg_temp AS $$
DECLARE
	s text := (SELECT p.state FROM payments p WHERE p.order_id = reconcile.order_id);
BEGIN
	IF s = 'abandoned' THEN
		RETURN 'expire';
	END IF;
	RETURN verdict(s);
END
$$;
CREATE FUNCTION shop3.manual(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = shop3, pg_catalog RETURN 'wait';
ALTER TABLE shop3.payments OWNER TO shop3;
ALTER FUNCTION shop3.verdict(varchar) OWNER TO shop3;
ALTER FUNCTION shop3.reconcile(text, integer) OWNER TO shop3;
ALTER FUNCTION shop3.manual(text, integer) OWNER TO shop3;
SELECT inventory.restock('R3', 10, 'in-r3');
});
my ($out, $err) = attempt('alice', 'r3', "SELECT inventory.set_reconciler('shop3.manual(text, integer)')");
like($err, qr/shop3\.manual\(text,integer\) cannot be a reconciler: its search_path does not name pg_catalog first/,
	'R3: search_path = shop3, pg_catalog is refused');
as('alice', 'r3', "SELECT inventory.set_reconciler('shop3.reconcile(text, integer)')");
# the shop opens its schema to mallory
as('alice', 'r3', 'GRANT CREATE ON SCHEMA shop3 TO mallory');
($out, $err) = attempt('alice', 'r3', "SELECT inventory.set_reconciler('shop3.reconcile(text, integer)')");
like($err, qr/shop3\.reconcile\(text,integer\) cannot be a reconciler: mallory may create objects in schema "shop3" of its search_path/,
	'R3: a schema on the path where mallory may create is refused when set');
# mallory plants an operator =(text, text) and an overload verdict(text)
# there, each logging who ran it
as('mallory', 'r3', q{
CREATE TABLE mal.log (what text, who name);
GRANT USAGE ON SCHEMA mal TO PUBLIC;
GRANT INSERT ON mal.log TO PUBLIC;
CREATE FUNCTION mal.texteq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO mal.log VALUES ('=', current_user);
	RETURN a OPERATOR(pg_catalog.=) b;
END $$;
CREATE OPERATOR shop3.= (LEFTARG = text, RIGHTARG = text, FUNCTION = mal.texteq);
CREATE FUNCTION shop3.verdict(state text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO mal.log VALUES ('verdict', current_user);
	RETURN 'confirm';
END $$;
});
as('alice', 'r3', "INSERT INTO shop3.payments VALUES ('r3-order', 'unpaid')");
overdue('r3', 'R3', 'r3-order');
($out, $err) = attempt('alice', 'r3', 'SELECT inventory.expire()');
like($err, qr/WARNING:  the reconciler of database "r3" could not be asked about order "r3-order" \(batch_id 1\): refused: shop3\.reconcile\(text,integer\) cannot be a reconciler: mallory may create objects in schema "shop3" of its search_path/,
	'R3: the ask is refused too, with a WARNING that names the role and the schema');
is(su('r3', "SELECT count(*) FROM mal.log"), '0', 'R3: nothing mallory planted ran');
is(as('alice', 'r3', q{
SELECT l.state || ' ' || w.asks || ' ' || (w.last_answer LIKE 'refused: %')
  FROM inventory.ledger l JOIN inventory.reconcile_wait w USING (order_id) WHERE order_id = 'r3-order'}),
	'PENDING 1 true', 'R3: the order waits, a failed ask (not confirmed by what mallory planted)');
# the shop takes CREATE back, as the WARNING's hint says; what mallory made
# meanwhile is still hers, and still refused, until it is gone
as('alice', 'r3', 'REVOKE CREATE ON SCHEMA shop3 FROM mallory');
su('r3', "UPDATE inventory.reconcile_wait SET next_ask = now() - interval '1 second'");
($out, $err) = attempt('alice', 'r3', 'SELECT inventory.expire()');
like($err, qr/refused: shop3\.reconcile\(text,integer\) cannot be a reconciler: (function shop3\.verdict\(text\)|operator shop3\.=\(text,text\)) in schema "shop3" of its search_path is owned by role "mallory"/,
	'R3: with CREATE taken back, the objects mallory left in the schema still refuse the ask');
is(su('r3', "SELECT count(*) FROM mal.log"), '0', 'R3: and nothing she planted ran');
# the schema's owner may drop what others made in it
as('alice', 'r3', 'DROP OPERATOR shop3.= (text, text); DROP FUNCTION shop3.verdict(text)');
su('r3', "UPDATE inventory.reconcile_wait SET next_ask = now() - interval '1 second'");
as('alice', 'r3', "UPDATE shop3.payments SET state = 'paid' WHERE order_id = 'r3-order'");
($out, $err) = attempt('alice', 'r3', 'SELECT inventory.expire()');
is(as('alice', 'r3', "SELECT state FROM inventory.ledger WHERE order_id = 'r3-order'") . ' '
	  . su('r3', "SELECT count(*) FROM mal.log"),
	'CONFIRMED 0', 'R3: once they are gone the shop\'s own reconciler is asked, and confirms the paid order');

# --- smaller findings --------------------------------------------------------

new_db('misc');
# a temporary function
($out, $err) = attempt('alice', 'misc', q{
CREATE FUNCTION pg_temp.rec(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN 'confirm';
SELECT inventory.set_reconciler('pg_temp.rec(text, integer)');
});
like($err, qr/cannot be a reconciler: it is a temporary function/, 'a function in pg_temp is refused');

# the monitor sees counts, not order ids or the application's errors
($out, $err) = attempt('mon', 'misc', 'SELECT count(*) FROM inventory.reconcile_wait');
like($err, qr/permission denied for table reconcile_wait/, 'inventory_monitor cannot read reconcile_wait');
($out, $err) = attempt('mon', 'misc', 'SELECT count(*) FROM inventory.reconcile_waiting');
like($err, qr/permission denied for view reconcile_waiting/, 'inventory_monitor cannot read reconcile_waiting');

# alice's reconciler: a 2 MB error, or a loop that catches the cancel and
# confirms after 20 s; its timeout is the database's setting, 200 ms (the
# superuser's; the code before the hardening had only that)
su('misc', q{
ALTER DATABASE misc SET inventory.reconcile_timeout = '200ms';
CREATE SCHEMA m AUTHORIZATION alice;
});
as('alice', 'misc', q{
CREATE FUNCTION m.reconcile(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, m, pg_temp AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	IF order_id = 'm-verbose' THEN
		RAISE EXCEPTION 'gateway said: %', repeat('é', 1000000);
	END IF;
	WHILE clock_timestamp() < t0 + interval '20 s' LOOP
		BEGIN
			PERFORM pg_sleep(0.05);
		EXCEPTION WHEN query_canceled THEN
			NULL;
		END;
	END LOOP;
	RETURN 'confirm';
END
$$;
SELECT inventory.set_reconciler('m.reconcile(text, integer)');
SELECT inventory.restock('M', 10, 'in-m');
});

# an error of 2 MB: 200 bytes of it are kept
overdue('misc', 'M', 'm-verbose');
my $log_from = -s $node->logfile;
($out, $err) = attempt('alice', 'misc', 'SELECT inventory.expire()');
my ($warning) = $err =~ /^(.*WARNING:  the reconciler of database "misc" could not be asked about order "m-verbose".*)$/m;
ok(defined $warning && length($warning) < 512,
	'the WARNING about a 2 MB error is short (' . length($warning // '') . ' bytes)');
cmp_ok(length(log_since($log_from)), '<', 4000, 'and so is what the server log got');
is(as('alice', 'misc', q{
SELECT octet_length(last_answer) <= 213 AND last_answer LIKE 'an error: gateway said: éé%...'
  FROM inventory.reconcile_wait WHERE order_id = 'm-verbose'}),
	't', 'last_answer keeps 200 bytes of the error, cut at a character boundary');

# a reconciler that catches the cancel, in inventory.expire(): the caller's
# session is ended 1 s after the timeout (so 1.2 s after the ask began)
overdue('misc', 'M', 'm-stubborn');
my $t0 = time;
($out, $err) = attempt('alice', 'misc', 'SELECT inventory.expire()', timeout => $DEADLINE);
my $took = time - $t0;
like($err, qr/FATAL:  terminating connection due to administrator command/,
	'a reconciler that catches the cancel ends the session of the caller of expire()');
ok($took >= 1.1 && $took < 5,
	sprintf('... 1 s after its timeout of 200 ms: %.1f s after the call (at least 1.2, at most 5 on a busy machine)', $took));
($out, $err) = attempt('alice', 'misc', 'SELECT inventory.expire()', timeout => $DEADLINE);
like($err, qr/WARNING:  the reconciler of database "misc" was ended while asked about order "m-stubborn" \(batch_id 1\)/,
	'the next round records the ended ask, with a WARNING');
is("$out|" . ($err =~ /FATAL/ ? 'ended' : 'alive'), '0|alive', '... and does not ask about that order again');
is(as('alice', 'misc', q{
SELECT l.state || ' ' || w.asks || ' ' || w.last_answer
  FROM inventory.ledger l JOIN inventory.reconcile_wait w USING (order_id) WHERE order_id = 'm-stubborn'}),
	'PENDING 1 ended by force: still running 1 s after its timeout (200 ms)',
	'its late confirm is not applied: the order waits, a failed ask');

# the workers go to work: the databases above go first
su('postgres', 'DROP DATABASE r1; DROP DATABASE r2; DROP DATABASE r3; DROP DATABASE misc;');
$node->adjust_conf('postgresql.conf', 'inventory.worker_enabled', 'on');
$node->reload;

# --- R4: pg_dump by alice, pg_restore --no-owner by the superuser ------------

new_db('r4');
su('r4', 'CREATE SCHEMA r4s AUTHORIZATION alice');
as('alice', 'r4', q{
CREATE TABLE r4s.log (who name, db name);
CREATE FUNCTION r4s.reconcile(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, r4s, pg_temp AS $$
BEGIN
	INSERT INTO log VALUES (current_user, current_database());
	RETURN 'wait';
END
$$;
SELECT inventory.set_reconciler('r4s.reconcile(text, integer)');
SELECT inventory.restock('R4', 10, 'in-r4');
});
overdue('r4', 'R4', 'r4-order');
need(wait_until($DEADLINE, sub { su('r4', 'SELECT count(*) FROM r4s.log') >= 1 }),
	'an ask of the worker in the source database');
my $dump = PostgreSQL::Test::Utils::tempdir() . '/r4.dump';
need(IPC::Run::run([ 'pg_dump', '-Fc', '-U', 'alice', '-d', $node->connstr('r4'), '-f', $dump ]), 'pg_dump -Fc by alice');
su('postgres', 'CREATE DATABASE r4copy');
$log_from = -s $node->logfile;
need(IPC::Run::run([ 'pg_restore', '--no-owner', '-d', $node->connstr('r4copy'), $dump ]),
	'pg_restore --no-owner by the superuser');
ok(wait_until($DEADLINE, sub {
	log_since($log_from) =~ /WARNING:  the reconciler of database "r4copy" could not be asked about order "r4-order" \(batch_id 1\): refused: r4s\.reconcile\(text,integer\) cannot be a reconciler: it is owned by superuser/ }),
	'R4: the restored function is the superuser\'s: the ask is refused, with a WARNING');
is(su('r4copy', "SELECT count(*) FROM r4s.log WHERE db = 'r4copy'"), '0', 'R4: nothing ran there, as the superuser or anyone');
($out, $err) = attempt('mon', 'r4copy', q{SELECT refused || ' ' || failed FROM inventory.reconcile_stats WHERE datname = 'r4copy'});
is("$out$err", '1 1', 'R4: reconcile_stats counts the refused ask (and it is a failed one)');
is(as('alice', 'r4copy', q{
SELECT l.state || ' ' || w.asks FROM inventory.ledger l JOIN inventory.reconcile_wait w USING (order_id)
 WHERE order_id = 'r4-order'}), 'PENDING 1', 'R4: the order waits');
attempt('alice', $_, 'SELECT inventory.set_reconciler(NULL)') for 'r4', 'r4copy';

# --- R5: a reconciler that will not stop ------------------------------------

# the superuser's settings of the database: timeout 500 ms, retry 3 s, 2 asks
new_db('r5');
su('r5', q{
ALTER DATABASE r5 SET inventory.reconcile_timeout = '500ms';
ALTER DATABASE r5 SET inventory.reconcile_retry = '3s';
ALTER DATABASE r5 SET inventory.reconcile_max_asks = 2;
CREATE SCHEMA r5s AUTHORIZATION alice;
});
# it logs when an ask begins, catches every cancel and confirms after 20 s
as('alice', 'r5', q{
CREATE FUNCTION r5s.stubborn(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, r5s, pg_temp AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	RAISE LOG 'r5 ask of % begins', order_id;
	WHILE clock_timestamp() < t0 + interval '20 s' LOOP
		BEGIN
			PERFORM pg_sleep(0.05);
		EXCEPTION WHEN query_canceled THEN
			NULL;
		END;
	END LOOP;
	RETURN 'confirm';
END
$$;
SELECT inventory.set_reconciler('r5s.stubborn(text, integer)');
SELECT inventory.restock('R5', 10, 'in-r5');
});
$log_from = -s $node->logfile;
overdue('r5', 'R5', 'r5-order');
my $ts = qr/(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \w+) \[(\d+)\]/;
my $state_sql = q{SELECT state FROM inventory.ledger WHERE order_id = 'r5-order'};
# the lines of the log since $log_from that match RE (which captures the
# time and the PID of $ts, and nothing else): [time, pid] each
sub logged
{
	my ($re) = @_;
	my @m = log_since($log_from) =~ /$re/mg;
	my @r;
	push @r, [ splice(@m, 0, 2) ] while @m;
	return @r;
}
# the asks begun; the processes that exited in an ask; the rounds that
# recorded an ask ended so
sub r5_asks { return logged(qr/^$ts .*LOG:  r5 ask of r5-order begins$/m); }
sub r5_ended { return logged(qr/^$ts .*LOG:  the reconciler of database "r5" was ended while asked about order "r5-order"/m); }
sub r5_recorded
{
	return logged(qr/^$ts .*WARNING:  the reconciler of database "r5" was ended while asked about order "r5-order"/m);
}
sub seconds { my ($from, $to) = @_; return su('postgres', "SELECT extract(epoch FROM '$to'::timestamptz - '$from'::timestamptz)"); }
need(wait_until($DEADLINE, sub { r5_asks() >= 1 }), 'an ask of the worker');
ok(wait_until($DEADLINE, sub { r5_ended() >= 1 || as('alice', 'r5', $state_sql) ne 'PENDING' }) && r5_ended() >= 1,
	'R5: the ask that catches the cancel is ended by force, with its process');
my ($first) = r5_asks();
my ($ended) = r5_ended();
my $after = defined $ended ? seconds($first->[0], $ended->[0]) : 'never';
is(defined $ended ? $ended->[1] : 'none ended', $first->[1], 'R5: the process ended is the worker that asked');
ok(defined $ended && $after >= 1.4 && $after <= 4,
	"R5: ended 1.5 s after its ask began -- its timeout (500 ms) plus 1 s; at most 4 on a busy machine (took: $after)");
ok(wait_until($DEADLINE, sub { r5_recorded() >= 1 || as('alice', 'r5', $state_sql) ne 'PENDING' }) && r5_recorded() >= 1,
	'R5: the next worker records the ended ask, with a WARNING');
my ($recorded) = r5_recorded();
isnt(defined $recorded ? $recorded->[1] : $first->[1], $first->[1],
	'R5: ... from another process: the pool started another worker');
my $wait = as('alice', 'r5', q{
SELECT asks || ' ' || (next_ask - first_asked) || ' ' || last_answer || '|' || next_ask
  FROM inventory.reconcile_wait WHERE order_id = 'r5-order'});
my ($wait_row, $next_ask) = split /\|/, $wait // '';
is($wait_row, '1 00:00:03 ended by force: still running 1 s after its timeout (500 ms)',
	'R5: a failed ask; the order is asked again after the retry (3 s)');
is(as('alice', 'r5', $state_sql), 'PENDING', 'R5: its late confirm was not applied');
ok(wait_until($DEADLINE, sub { r5_asks() >= 2 || as('alice', 'r5', $state_sql) ne 'PENDING' }) && r5_asks() >= 2,
	'R5: asked again');
my $second = (r5_asks())[1];
is(defined $second && $next_ask
	? su('postgres', "SELECT '$second->[0]'::timestamptz >= '$next_ask'::timestamptz - interval '1 millisecond'")
	: 'no second ask after a recorded one', 't',
	'R5: ... not before its next ask (' . ($next_ask // '') . '; asked at ' . ($second->[0] // '') . ')');
ok(wait_until($DEADLINE, sub { as('alice', 'r5', $state_sql) ne 'PENDING' }), 'R5: the order is settled at last');
is(as('alice', 'r5', $state_sql) . ' ' . scalar(r5_asks()), 'EXPIRED 2',
	'R5: expired without a third ask (max_asks 2), never confirmed');

# LOCK TABLE inventory.ledger inside an ask: refused, whatever the owner's
# grants (alice's: she may lock the ledger outside an ask), and sales go on
new_db('r5lock');
su('r5lock', 'CREATE SCHEMA r5l AUTHORIZATION alice');
as('alice', 'r5lock', q{
CREATE FUNCTION r5l.locker(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, r5l, pg_temp AS $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	LOCK TABLE inventory.ledger IN ACCESS EXCLUSIVE MODE;
	RAISE LOG 'r5 lock ask of % holds the lock', order_id;
	WHILE clock_timestamp() < t0 + interval '20 s' LOOP
		BEGIN
			PERFORM pg_sleep(0.05);
		EXCEPTION WHEN query_canceled THEN
			NULL;
		END;
	END LOOP;
	RETURN 'wait';
END
$$;
SELECT inventory.set_reconciler('r5l.locker(text, integer)');
SELECT inventory.restock('L', 10, 'in-l');
});
$log_from = -s $node->logfile;
overdue('r5lock', 'L', 'r5lock-order');
my $lock_answer = q{SELECT last_answer FROM inventory.reconcile_wait WHERE order_id = 'r5lock-order'};
need(wait_until($DEADLINE, sub {
	log_since($log_from) =~ /r5 lock ask of r5lock-order holds the lock/ || as('alice', 'r5lock', $lock_answer) ne '' }),
	'an ask of the reconciler that locks the ledger');
($out, $err) = attempt('app', 'r5lock', q{SET statement_timeout = '5s';
SELECT (inventory.reserve('L', 1, 'r5lock-sale')).status});
is("$out$err", 'ok', 'R5: a sale goes on meanwhile');
is(as('alice', 'r5lock', $lock_answer), 'an error: a reconciler cannot use the inventory functions or the inventory tables',
	'R5: LOCK TABLE inventory.ledger in the ask was refused: a failed ask');
unlike(log_since($log_from), qr/holds the lock/, 'R5: the lock was never held');
attempt('alice', 'r5lock', 'SELECT inventory.set_reconciler(NULL)');

# a reconciler that waits longer than anyone will (the superuser's timeout
# of the database: 10 min): alice cannot signal the worker, which runs as
# the superuser, but stop_worker() ends it
new_db('r5stop');
su('r5stop', q{
ALTER DATABASE r5stop SET inventory.reconcile_timeout = '10min';
CREATE SCHEMA r5t AUTHORIZATION alice;
});
as('alice', 'r5stop', q{
CREATE FUNCTION r5t.sleeper(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, r5t, pg_temp AS $$
BEGIN
	RAISE LOG 'r5 stop ask of % begins', order_id;
	PERFORM pg_sleep(600);
	RETURN 'confirm';
END
$$;
SELECT inventory.set_reconciler('r5t.sleeper(text, integer)');
SELECT inventory.restock('S', 10, 'in-s');
});
$log_from = -s $node->logfile;
overdue('r5stop', 'S', 'r5stop-order');
need(wait_until($DEADLINE, sub { log_since($log_from) =~ /r5 stop ask of r5stop-order begins/ }),
	'an ask of the reconciler that sleeps');
my ($stuck) = log_since($log_from) =~ /^$ts .*LOG:  r5 stop ask of r5stop-order begins$/m ? ($2) : ();
is(as('alice', 'r5stop', q{SELECT pid FROM inventory.worker_status WHERE datname = 'r5stop'}), $stuck,
	'R5: inventory.worker_status shows it in the database');
($out, $err) = attempt('alice', 'r5stop', "SELECT pg_terminate_backend($stuck)");
like($err, qr/must be a superuser|must be a member of the role/, 'R5: alice may not pg_terminate_backend() it');
($out, $err) = attempt('alice', 'r5stop', 'SELECT inventory.stop_worker()');
is("$out$err", 't', 'R5: inventory.stop_worker() by alice says it ended it');
ok(wait_until($DEADLINE, sub { as('alice', 'r5stop', "SELECT count(*) FROM pg_stat_activity WHERE pid = $stuck") == 0 }),
	'R5: ... and it is gone');
ok(wait_until($DEADLINE, sub {
	log_since($log_from) =~ /WARNING:  the reconciler of database "r5stop" was ended while asked about order "r5stop-order"/ }),
	'R5: the next worker records the ended ask');
is(as('alice', 'r5stop', q{
SELECT l.state || ' ' || w.asks || ' ' || w.last_answer
  FROM inventory.ledger l JOIN inventory.reconcile_wait w USING (order_id) WHERE order_id = 'r5stop-order'}),
	'PENDING 1 ended: its process was told to end during the ask', 'R5: a failed ask; the order waits, not confirmed');
attempt('alice', 'r5stop', 'SELECT inventory.set_reconciler(NULL)');

# --- R6: statements on a database that PostgreSQL refuses -------------------

# the databases above go first, so that the shop's worker has the pool to
# itself
su('postgres', 'DROP DATABASE r4; DROP DATABASE r4copy; DROP DATABASE r5; DROP DATABASE r5lock; DROP DATABASE r5stop;');
new_db('shop6');
as('alice', 'shop6', q{SELECT inventory.restock('R6', 1000, 'in-r6')});
# 200 reservations falling due every 50 ms, from 2 s to 12 s from now: the
# worker stays in the database (work falls due within expire_interval)
as('app', 'shop6', q{
SELECT count(*) FROM (SELECT inventory.reserve('R6', 1, 'r6-' || g, 1, make_interval(secs => 2 + g * 0.05))
                        FROM generate_series(1, 200) g) r;
SELECT inventory.reserve_now('R6', 1, 'r6-now', 1, '1 hour');
});
my $expired_sql = q{SELECT count(*) FROM inventory.ledger WHERE state = 'EXPIRED'};
need(wait_until($DEADLINE, sub { as('alice', 'shop6', $expired_sql) > 0 }), 'the first expiry in the shop');
my $worker_sql = q{SELECT pid FROM inventory.worker_status WHERE datname = 'shop6'};
my $worker = as('mon', 'shop6', $worker_sql);
my $writer = su('postgres', express_writer_sql('shop6'));
need($worker =~ /^\d+$/, "a worker in the shop");
need($writer =~ /^\d+$/, "an express writer in the shop");
note("R6: the shop's worker is PID $worker, its express writer PID $writer");
# mallory, with no grant, repeats the three statements for a few seconds
my $attack = '';
$attack .= qq{DROP DATABASE shop6;
ALTER DATABASE shop6 RENAME TO shop6_gone;
CREATE DATABASE shop6_copy TEMPLATE shop6;
SELECT pg_sleep(0.1);
} for 1 .. 20;
$log_from = -s $node->logfile;
($out, $err) = attempt('mallory', 'postgres', $attack, on_error_stop => 0, timeout => $DEADLINE);
is(scalar(() = $err =~ /ERROR:  must be owner of database shop6/g) . ' '
	  . scalar(() = $err =~ /ERROR:  permission denied to create database/g),
	'40 20', 'R6: each of mallory\'s 60 statements was refused on privileges');
is(as('mon', 'shop6', $worker_sql), $worker, 'R6: the shop\'s worker was not disturbed: the same PID');
is(su('postgres', express_writer_sql('shop6')), $writer, 'R6: nor its express writer');
unlike(log_since($log_from), qr/"inventory worker" \(PID $worker\) exited/, 'R6: the worker did not exit');
ok(wait_until($DEADLINE, sub {
	as('alice', 'shop6', q{SELECT count(*) FROM inventory.ledger WHERE state = 'PENDING' AND order_id <> 'r6-now'}) == 0 }),
	'R6: every reservation expires');
my $late = as('alice', 'shop6', q{
SELECT max(extract(epoch FROM settled_at - expires_at)) FROM inventory.ledger
 WHERE state = 'EXPIRED' AND order_id LIKE 'r6-%'});
cmp_ok($late, '<', 2,
	"R6: each within 2 s of its expires_at (the latest: ${late}s; the bound is expire_interval, 100 ms, plus a batch, with room for a busy machine)");

# --- LISTEN inventory_stock: any role that can connect hears it -------------

new_db('notes');
su('notes', 'ALTER DATABASE notes SET inventory.stock_notifications = on');
my %listener = (in => "LISTEN inventory_stock;\n", out => '', err => '');
my $connstr = $node->connstr('notes') . ' user=mallory';
$listener{run} = IPC::Run::start([ 'psql', '-XAtq', '-d', $connstr ],
	'<', \$listener{in}, '>', \$listener{out}, '2>', \$listener{err}, IPC::Run::timeout(180));
my $poll = 0;
sub heard
{
	$poll++;
	$listener{in} .= "SELECT 'polled $poll';\n";
	$listener{run}->pump until $listener{out} =~ /polled $poll\n/;
	return $listener{out};
}
heard();
as('alice', 'notes', q{SELECT inventory.restock('LST', 5, 'in-lst')});
ok(wait_until($DEADLINE, sub { heard() =~ /notification "inventory_stock" with payload "\{"sku": "LST", "available": 5/ }),
	'mallory, with no grant, hears LISTEN inventory_stock (as the manual says)');
$listener{in} .= "\\q\n";
$listener{run}->finish;
$node->stop;

# --- behind the router: the timing on every node ----------------------------

my @nodes  = start_nodes(2);
my $router = start_router(\@nodes);
for my $p (0, 1)
{
	$nodes[$p]->safe_psql("inv_p$p", q{
CREATE ROLE shop_owner NOLOGIN;
CREATE SCHEMA shop AUTHORIZATION shop_owner;
CREATE FUNCTION shop.paid(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, shop, pg_temp RETURN 'wait';
ALTER FUNCTION shop.paid(text, integer) OWNER TO shop_owner;
});
}
$router->safe_psql('shop', 'CREATE ROLE alice LOGIN IN ROLE inventory_admin');
$router->psql('shop', q{
SELECT inventory.set_reconciler('shop.paid(text,integer)', timeout => '250ms', retry => '7s', max_asks => 3,
                                max_wait => '20 min')}, extra_params => [ '-U', 'alice' ]);
my @timing = map {
	($nodes[$_]->psql("inv_p$_", q{
SELECT pg_get_function_arguments(p.oid) FROM pg_proc p
 WHERE p.pronamespace = 'inventory'::regnamespace AND p.proname = 'reconciler'}))[1] } 0, 1;
is(join(' / ', @timing),
	join(' / ', ("order_id text, batch_id integer, timeout interval DEFAULT '00:00:00.25'::interval, "
		  . "retry interval DEFAULT '00:00:07'::interval, max_asks integer DEFAULT 3, "
		  . "max_wait interval DEFAULT '00:20:00'::interval") x 2),
	'set_reconciler(fn, timeout => ...) on the router sets the same timing on every node');
$router->stop;
$_->stop for @nodes;

done_testing();

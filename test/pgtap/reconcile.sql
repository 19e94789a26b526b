-- reconcile.sql: the reconciler, inventory.set_reconciler(fn, timeout,
-- retry, max_asks, max_wait).
--
-- Who may set it and with which function (refusals with their SQLSTATEs:
-- the function's shape, a temporary function, a superuser's function --
-- for a superuser too --, its own search_path: pg_catalog first, pg_temp
-- last, no $user, only existing schemas of its owner's where no other role
-- may create; the setter's privileges of the owner and EXECUTE; timing
-- beyond the server's caps), what the setting is (inventory.reconciler:
-- one, depending on fn alone, with the timing it was set with as its
-- defaults, executable by the setter only), and who may read what it
-- leaves (reconcile_wait and reconcile_waiting: the administrator, not the
-- monitor; reconcile_stats: both) and stop the worker (the administrator).
-- What each answer does to the reservation and to the counters: confirm,
-- cancel and expire settle the order's overdue lines (a cart is asked once,
-- with its first overdue line, and settled whole); wait, NULL, another
-- answer, an error and a timeout (also one the function catches, answering
-- after it) leave it PENDING and waiting in inventory.reconcile_wait
-- (asks, next_ask after the reconciler's retry, last_answer); a waiting
-- order is not asked before its next ask; after
-- max_asks asks, or max_wait past its expires_at, an order is expired
-- without asking; a round asks at most 63 orders, or max_rows.  The
-- application's function runs as its owner -- not the setter, not the
-- caller of expire() -- in a sandbox: the inventory API, reads, writes and
-- LOCK of the inventory tables and views, and temporary tables are refused
-- there (42501, recorded by the function itself), even for an owner with
-- the grants of inventory_admin.  The rules are checked again at every ask
-- (a function given to a superuser, a schema on its path opened to
-- others: refused, a failed ask), the setter's privileges are not (they
-- were checked when it was set; the ask does not use them).  A late
-- confirm() is ok while a reconciler is set and expired without one;
-- direct DML still may not confirm past expires_at.  fn cannot be dropped
-- while it is the reconciler; with CASCADE the setting goes and the expiry
-- expires without asking.  The server's settings are for superusers.
-- Inside the ask, inventory.reconcile_wait cannot be written either (only
-- the extension writes it, so no reconciler resets its own asks); an error
-- the function raises with SQLSTATE 57014 is its own, a failed ask, not a
-- cancel of the round.
--
-- What psql shows of these -- the messages, details and hints of the
-- refusals (and the SQLSTATE and message of a superuser's temporary
-- function), inventory.reconciler as a function (its arguments without
-- timing, result, owner and comment), the warnings of failed asks -- is
-- sql/reconcile.sql's.
--
-- Every call is made by the role the manual gives it, connected as that
-- role (dblink, one connection per login role, kept for the file):
-- inv_test_rec_admin (inventory_admin, a member of the shop's role) sets
-- the reconciler, restocks, writes the overdue lines by hand, runs
-- inventory.expire() and reads the tables and views; inv_test_rec_app
-- (inventory_app) confirms; inv_test_rec_monitor (inventory_monitor)
-- reads.  The shop's role inv_test_rec_owner (NOLOGIN) owns the schema,
-- the tables and the reconciler; the administrator creates them for it.
-- This session, the superuser's, runs pgTAP, creates the extensions, the
-- roles and their schema, and does what has no user-facing equivalent:
-- makes a waiting order due (reconcile_wait.next_ask), gives a function to
-- a superuser (as pg_restore --no-owner does), grants and revokes the
-- shop's role, and reads the application's own log tables.
--
-- So the work is committed, not rolled back: the roles and the schema are
-- dropped at the end, the reservations of this run left PENDING are
-- cancelled, and every SKU and key carries the run's prefix.  The workers
-- are off in the test cluster: only inventory.expire() asks.  The overdue
-- reservations earlier files may have left are expired first, before any
-- reconciler is set, so that every ask is about this file's orders.

\set name reconcile
\ir lib/setup.sql
\set p :prefix
\set rsig 'inventory.reconciler(text, integer, interval, interval, integer, interval)'
\set ssig 'inventory.set_reconciler(regprocedure, interval, interval, integer, interval)'

-- what an interrupted earlier run may have left
SET client_min_messages = warning;
SELECT inventory.set_reconciler(NULL) \g /dev/null
DROP SCHEMA IF EXISTS inv_test_rec CASCADE;
DO $$
DECLARE
	r text;
BEGIN
	FOREACH r IN ARRAY ARRAY['inv_test_rec_admin', 'inv_test_rec_stranger', 'inv_test_rec_app',
							 'inv_test_rec_monitor', 'inv_test_rec_public', 'inv_test_rec_owner'] LOOP
		IF EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN
			EXECUTE format('DROP OWNED BY %I', r);
			EXECUTE format('DROP ROLE %I', r);
		END IF;
	END LOOP;
END $$;
-- dblink, which another file may have made already (then it stays)
SELECT NOT EXISTS (SELECT FROM pg_extension WHERE extname = 'dblink') AS dblink_ours \gset
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;

-- the roles: the shop's (it owns the schema and the reconciler, and holds
-- inventory_admin, more than a reconciler needs, so that the fence shows),
-- and the logins
CREATE ROLE inv_test_rec_owner NOLOGIN IN ROLE inventory_admin;
CREATE ROLE inv_test_rec_admin LOGIN IN ROLE inventory_admin, inv_test_rec_owner;
CREATE ROLE inv_test_rec_stranger LOGIN IN ROLE inventory_admin;
CREATE ROLE inv_test_rec_app LOGIN IN ROLE inventory_app;
CREATE ROLE inv_test_rec_monitor LOGIN IN ROLE inventory_monitor;
CREATE ROLE inv_test_rec_public LOGIN;
CREATE SCHEMA inv_test_rec AUTHORIZATION inv_test_rec_owner;

-- run(role, sql): what sql answers (one column, as text; a command's
-- status), run by the login role over its own connection, opened at its
-- first use and kept
CREATE FUNCTION pg_temp.run(r text, sql text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	IF r <> ALL (coalesce(dblink_get_connections(), '{}')) THEN
		PERFORM dblink_connect(r, format('host=%s port=%s dbname=%s user=%s',
			split_part(current_setting('unix_socket_directories'), ',', 1),
			current_setting('port'), current_database(), r));
	END IF;
	RETURN QUERY SELECT t FROM dblink(r, sql) AS x(t text);
END $$;
CREATE FUNCTION pg_temp.admin(sql text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.run('inv_test_rec_admin', sql) $$;
CREATE FUNCTION pg_temp.app(sql text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.run('inv_test_rec_app', sql) $$;
CREATE FUNCTION pg_temp.monitor(sql text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.run('inv_test_rec_monitor', sql) $$;

-- inventory.expire(max_rows), by the administrator
CREATE FUNCTION pg_temp.expire(max_rows integer DEFAULT NULL) RETURNS bigint LANGUAGE sql
AS $$ SELECT pg_temp.admin(format('SELECT inventory.expire(%s)', coalesce(max_rows::text, '')))::bigint $$;

-- the administrator sets the shop's reconciler, with this timing
CREATE FUNCTION pg_temp.set(timing text DEFAULT '') RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.admin(format('SELECT inventory.set_reconciler(%L%s)', 'inv_test_rec.ask(text, integer)',
								  CASE WHEN timing = '' THEN '' ELSE ', ' || timing END)) $$;

-- committed SKUs: A, B, C and D with 100 units each
SELECT pg_temp.admin(format($$SELECT (inventory.restock(%L, 100, %L)).ok AND (inventory.restock(%L, 100, %L)).ok
								  AND (inventory.restock(%L, 100, %L)).ok AND (inventory.restock(%L, 100, %L)).ok$$,
							pg_temp.n('A'), pg_temp.n('rA'), pg_temp.n('B'), pg_temp.n('rB'),
							pg_temp.n('C'), pg_temp.n('rC'), pg_temp.n('D'), pg_temp.n('rD'))) \g /dev/null

-- a line of an order of this run, overdue by a minute or due in an hour,
-- written by hand by the administrator
CREATE FUNCTION pg_temp.line(o text, batch integer, s text, q bigint, overdue boolean DEFAULT true)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_temp.admin(format($f$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
									VALUES (%L, %s, 'reserve', %L, %s, now() + %L::interval)$f$,
								 pg_temp.n(o), batch, pg_temp.n(s), q,
								 CASE WHEN overdue THEN '-1 minute' ELSE '1 hour' END));
END $$;

-- an overdue one-line order, and what the application will answer about it
CREATE FUNCTION pg_temp.order_answered(o text, s text, q bigint, answer text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_temp.line(o, 1, s, q);
	PERFORM pg_temp.admin(format('INSERT INTO inv_test_rec.answers VALUES (%L, %L, %L)',
								 pg_temp.n(o), answer, pg_temp.n(s)));
END $$;

-- an order's lines, batch:state
CREATE FUNCTION pg_temp.lines(o text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.admin(format($f$SELECT coalesce(string_agg(batch_id || ':' || state, ' ' ORDER BY batch_id), 'none')
									   FROM inventory.ledger WHERE order_id = %L$f$, pg_temp.n(o))) $$;

-- the asks the application recorded about an order: batch_id@current_user each
CREATE FUNCTION pg_temp.asked(o text) RETURNS text LANGUAGE plpgsql STABLE
AS $$ BEGIN RETURN (SELECT coalesce(string_agg(batch_id || '@' || who, ' ' ORDER BY seq), 'none')
					  FROM inv_test_rec.asked WHERE order_id = pg_temp.n(o)); END $$;

-- an order's row of inventory.reconcile_wait: asks and last answer
CREATE FUNCTION pg_temp.waits(o text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.admin(format($f$SELECT coalesce((SELECT format('asks=%%s last=%%s', asks, coalesce(last_answer, 'NULL'))
														 FROM inventory.reconcile_wait WHERE order_id = %L), 'not waiting')$f$,
								  pg_temp.n(o))) $$;

-- makes an order's next ask due now
CREATE FUNCTION pg_temp.due(o text) RETURNS void LANGUAGE sql AS $$
	UPDATE inventory.reconcile_wait SET next_ask = now() - interval '1 second'
	 WHERE order_id = pg_temp.n(o)
$$;

-- a round of inventory.expire(): done, or the cancel that ended it (which
-- pgTAP's lives_ok() does not catch)
CREATE FUNCTION pg_temp.round() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_temp.expire();
	RETURN 'done';
EXCEPTION WHEN query_canceled THEN
	RETURN 'cancelled: ' || SQLERRM;
END $$;

-- a SKU's counters in inventory.stock (inventory.available(), the live
-- counter, gives units back when the transaction that settles commits)
CREATE FUNCTION pg_temp.units(s text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.admin(format($f$SELECT format('on_hand=%%s reserved=%%s available=%%s', on_hand, reserved, available)
									   FROM inventory.stock WHERE sku = %L$f$, pg_temp.n(s))) $$;

-- inventory.verify(wait), by the administrator: how many rows, every SKU
-- compared
CREATE FUNCTION pg_temp.verify() RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.admin('SELECT count(*) FROM inventory.verify(''30 s'')') $$;

-- how many inventory.reconciler there are
CREATE FUNCTION pg_temp.settings() RETURNS bigint LANGUAGE sql
AS $$ SELECT count(*) FROM pg_proc WHERE pronamespace = 'inventory'::regnamespace AND proname = 'reconciler' $$;

------------------------------------------------------------------------------
-- the application: its schema, its answers, its function, made by the
-- administrator for the shop's role
------------------------------------------------------------------------------
SELECT pg_temp.admin($ddl$
CREATE TABLE inv_test_rec.answers (order_id text PRIMARY KEY, answer text, sku text);
CREATE TABLE inv_test_rec.asked (seq bigserial, order_id text, batch_id integer, who name);
CREATE TABLE inv_test_rec.probes (order_id text, what text, sqlstate text, message text);

-- answers from inv_test_rec.answers; 'probe' tries what a reconciler may
-- not do, each in a block of its own that undoes it, and records how it
-- ended (P0001 'done' when it was not refused)
CREATE FUNCTION inv_test_rec.ask(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, inv_test_rec, pg_temp
AS $$
DECLARE
	a text;
	its_sku text;
	what text;
BEGIN
	SELECT x.answer, x.sku INTO a, its_sku FROM answers x WHERE x.order_id = ask.order_id;
	INSERT INTO asked (order_id, batch_id, who) VALUES (order_id, batch_id, current_user);
	IF a = 'null' THEN
		RETURN NULL;
	ELSIF a = 'error' THEN
		RAISE EXCEPTION 'payment service down';
	ELSIF a = 'error-57014' THEN
		-- as a remote server's statement_timeout reaches it through postgres_fdw or dblink
		RAISE EXCEPTION 'canceling statement due to statement timeout' USING ERRCODE = 'query_canceled';
	ELSIF a = 'slow' THEN
		PERFORM pg_sleep(30);
		RETURN 'confirm';
	ELSIF a = 'stubborn' THEN
		-- it catches the cancel of its timeout, and answers after it
		BEGIN
			PERFORM pg_sleep(30);
		EXCEPTION WHEN query_canceled THEN
			RETURN 'confirm';
		END;
	ELSIF a = 'probe' THEN
		FOREACH what IN ARRAY ARRAY['reserve', 'confirm', 'cancel', 'available', 'expire',
									'set_reconciler', 'stop_worker', 'stats_reset', 'cache_info',
									'ledger', 'sku', 'read', 'view', 'lock', 'temp', 'reconcile_wait'] LOOP
			BEGIN
				CASE what
					WHEN 'reserve' THEN PERFORM inventory.reserve(its_sku, 1, order_id || '-more');
					WHEN 'confirm' THEN PERFORM inventory.confirm(order_id, batch_id);
					WHEN 'cancel' THEN PERFORM inventory.cancel(order_id, batch_id);
					WHEN 'available' THEN PERFORM inventory.available(its_sku);
					WHEN 'expire' THEN PERFORM inventory.expire();
					WHEN 'set_reconciler' THEN PERFORM inventory.set_reconciler(NULL);
					WHEN 'stop_worker' THEN PERFORM inventory.stop_worker();
					WHEN 'stats_reset' THEN PERFORM inventory.stats_reset();
					WHEN 'cache_info' THEN PERFORM inventory.cache_info();
					WHEN 'ledger' THEN UPDATE inventory.ledger l SET state = 'CONFIRMED'
										WHERE l.order_id = ask.order_id;
					WHEN 'sku' THEN UPDATE inventory.sku s SET on_hand = s.on_hand + 1000
									 WHERE s.sku = its_sku;
					WHEN 'read' THEN PERFORM count(*) FROM inventory.ledger;
					WHEN 'view' THEN PERFORM count(*) FROM inventory.stock;
					WHEN 'lock' THEN LOCK TABLE inventory.ledger IN ACCESS EXCLUSIVE MODE;
					WHEN 'temp' THEN CREATE TEMP TABLE reconciler_scratch (x integer);
					WHEN 'reconcile_wait' THEN
						INSERT INTO inventory.reconcile_wait VALUES (order_id || '-forged', 0, now(), now(), 'forged');
				END CASE;
				RAISE EXCEPTION 'done';
			EXCEPTION WHEN OTHERS THEN
				INSERT INTO probes VALUES (order_id, what, SQLSTATE, SQLERRM);
			END;
		END LOOP;
		RETURN 'wait';
	END IF;
	RETURN a;
END
$$;

-- functions that cannot be the reconciler
CREATE FUNCTION inv_test_rec.no_path(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql RETURN 'confirm';
CREATE FUNCTION inv_test_rec.wrong_args(order_id text) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN 'confirm';
CREATE FUNCTION inv_test_rec.wrong_result(order_id text, batch_id integer) RETURNS boolean
	LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN true;
CREATE FUNCTION inv_test_rec.many(order_id text, batch_id integer) RETURNS SETOF text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp AS $$ SELECT 'confirm' $$;
CREATE FUNCTION inv_test_rec.catalog_later(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = inv_test_rec, pg_catalog, pg_temp RETURN 'confirm';
CREATE FUNCTION inv_test_rec.user_path(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, "$user", pg_temp RETURN 'confirm';
CREATE FUNCTION inv_test_rec.no_such_schema(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, inv_test_rec_nowhere, pg_temp RETURN 'confirm';
CREATE FUNCTION inv_test_rec.temp_first(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp, inv_test_rec RETURN 'confirm';
CREATE FUNCTION inv_test_rec.no_temp(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, inv_test_rec RETURN 'confirm';
CREATE FUNCTION inv_test_rec.public_path(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, public, pg_temp RETURN 'confirm';
CREATE FUNCTION inv_test_rec.not_executable(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN 'confirm';
-- and another application, whose function is a spare one
CREATE FUNCTION inv_test_rec.spare(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN 'confirm';

-- all of it the shop's role's
ALTER TABLE inv_test_rec.answers OWNER TO inv_test_rec_owner;
ALTER TABLE inv_test_rec.asked OWNER TO inv_test_rec_owner;
ALTER TABLE inv_test_rec.probes OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.ask(text, integer) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.no_path(text, integer) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.wrong_args(text) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.wrong_result(text, integer) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.many(text, integer) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.catalog_later(text, integer) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.user_path(text, integer) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.no_such_schema(text, integer) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.temp_first(text, integer) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.no_temp(text, integer) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.public_path(text, integer) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.not_executable(text, integer) OWNER TO inv_test_rec_owner;
ALTER FUNCTION inv_test_rec.spare(text, integer) OWNER TO inv_test_rec_owner;
REVOKE EXECUTE ON FUNCTION inv_test_rec.not_executable(text, integer) FROM PUBLIC, inv_test_rec_owner;
$ddl$) \g /dev/null
-- a superuser's function
CREATE FUNCTION inv_test_rec.superusers(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN 'confirm';
-- the administrator's temporary function
SELECT pg_temp.admin($$CREATE FUNCTION pg_temp.temporary(order_id text, batch_id integer) RETURNS text
						LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN 'confirm'$$) \g /dev/null

SELECT plan(161);
-- the failed asks' warnings are checked by the regression test
SET client_min_messages = error;

SELECT is(pg_temp.settings(), 0::bigint, 'no reconciler is set at the start');
-- overdue reservations of earlier files are expired first, without asking
SELECT pg_temp.expire() \g /dev/null

------------------------------------------------------------------------------
-- who may set it, with which function
------------------------------------------------------------------------------
-- refused(fn, timing): the statement by which the administrator sets it
CREATE FUNCTION pg_temp.refused(fn text, timing text DEFAULT '') RETURNS text LANGUAGE sql
AS $$ SELECT format('SELECT pg_temp.admin(%L)', format('SELECT inventory.set_reconciler(%L%s)', fn, timing)) $$;

SELECT throws_ok(pg_temp.refused('inv_test_rec.no_path(text, integer)'), '42P13', NULL,
				 'refused: a function without its own SET search_path (42P13)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.wrong_args(text)'), '42P13', NULL,
				 'refused: a function of other arguments (42P13)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.wrong_result(text, integer)'), '42P13', NULL,
				 'refused: a function returning another type (42P13)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.many(text, integer)'), '42P13', NULL,
				 'refused: a set-returning function (42P13)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.absent(text, integer)'), '42883', NULL,
				 'refused: a function that does not exist (42883)');
SELECT throws_ok(pg_temp.refused('pg_temp.temporary(text, integer)'), '42P13', NULL,
				 'refused: a temporary function (42P13)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.catalog_later(text, integer)'), '42P13', NULL,
				 'refused: a search_path that does not name pg_catalog first (42P13)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.user_path(text, integer)'), '42P13', NULL,
				 'refused: a search_path that names $user (42P13)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.no_such_schema(text, integer)'), '42P13', NULL,
				 'refused: a search_path that names a schema that does not exist (42P13)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.temp_first(text, integer)'), '42P13', NULL,
				 'refused: a search_path that names pg_temp before another schema (42P13)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.no_temp(text, integer)'), '42P13', NULL,
				 'refused: a search_path that does not name pg_temp last (42P13)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.public_path(text, integer)'), '42P13', NULL,
				 'refused: a schema of another role''s on the search_path, public (42P13)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.superusers(text, integer)'), '42501', NULL,
				 'refused: a superuser''s function, for an administrator (42501)');
SELECT throws_ok($$SELECT inventory.set_reconciler('inv_test_rec.superusers(text, integer)')$$, '42501', NULL,
				 '... and for a superuser (42501)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.not_executable(text, integer)'), '42501', NULL,
				 'refused: a function that its owner and the administrator may not execute (42501)');
SELECT throws_ok(format('SELECT pg_temp.run(%L, %L)', 'inv_test_rec_stranger',
						'SELECT inventory.set_reconciler(''inv_test_rec.ask(text, integer)'')'), '42501', NULL,
				 'refused: an administrator without the privileges of the function''s owner (42501)');
SELECT throws_ok($$SELECT pg_temp.app('SELECT inventory.set_reconciler(''inv_test_rec.ask(text, integer)'')')$$,
				 '42501', NULL, 'refused: the application role may not set it (42501)');
SELECT throws_ok($$SELECT pg_temp.app('SELECT inventory.set_reconciler(NULL)')$$, '42501', NULL,
				 'refused: the application role may not remove it (42501)');
SELECT throws_ok($$SELECT pg_temp.monitor('SELECT inventory.set_reconciler(NULL)')$$, '42501', NULL,
				 'refused: the monitoring role may not remove it (42501)');
SELECT throws_ok($$SELECT pg_temp.run('inv_test_rec_public', 'SELECT inventory.set_reconciler(NULL)')$$, '42501', NULL,
				 'refused: PUBLIC may not call set_reconciler (42501)');
-- a schema on the path where another role may create objects
SELECT pg_temp.admin('GRANT CREATE ON SCHEMA inv_test_rec TO inv_test_rec_public') \g /dev/null
SELECT throws_ok(pg_temp.refused('inv_test_rec.ask(text, integer)'), '42P13', NULL,
				 'refused: a schema on the path where another role may create objects (42P13)');
SELECT pg_temp.admin('REVOKE CREATE ON SCHEMA inv_test_rec FROM inv_test_rec_public') \g /dev/null
-- timing beyond the server's caps, or not positive
SELECT throws_ok(pg_temp.refused('inv_test_rec.ask(text, integer)', ', timeout => ''1 minute'''), '22023', NULL,
				 'refused: a timeout longer than inventory.reconcile_timeout (22023)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.ask(text, integer)', ', max_asks => 1000'), '22023', NULL,
				 'refused: max_asks more than inventory.reconcile_max_asks (22023)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.ask(text, integer)', ', max_wait => ''2 days'''), '22023', NULL,
				 'refused: max_wait longer than inventory.reconcile_max_wait (22023)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.ask(text, integer)', ', retry => ''-1 s'''), '22023', NULL,
				 'refused: a retry that is not positive (22023)');
SELECT throws_ok(pg_temp.refused('inv_test_rec.ask(text, integer)', ', max_asks => 0'), '22023', NULL,
				 'refused: max_asks 0 (22023)');
SELECT is(pg_temp.settings(), 0::bigint, 'the refused calls set nothing');

------------------------------------------------------------------------------
-- privileges on the new objects
------------------------------------------------------------------------------
SELECT ok(has_function_privilege('inventory_admin', :'ssig', 'EXECUTE')
		  AND has_function_privilege('inventory_admin', 'inventory.stop_worker()', 'EXECUTE'),
		  'inventory_admin may execute set_reconciler and stop_worker');
SELECT ok(NOT has_function_privilege('inventory_app', :'ssig', 'EXECUTE')
		  AND NOT has_function_privilege('inventory_app', 'inventory.stop_worker()', 'EXECUTE'),
		  'inventory_app may execute neither');
SELECT ok(NOT has_function_privilege('inventory_monitor', :'ssig', 'EXECUTE')
		  AND NOT has_function_privilege('inventory_monitor', 'inventory.stop_worker()', 'EXECUTE'),
		  'inventory_monitor may execute neither');
SELECT ok(NOT has_function_privilege('inv_test_rec_public', :'ssig', 'EXECUTE')
		  AND NOT has_function_privilege('inv_test_rec_public', 'inventory.stop_worker()', 'EXECUTE'),
		  'PUBLIC may execute neither');
SELECT ok(has_table_privilege('inventory_admin', 'inventory.reconcile_waiting', 'SELECT')
		  AND has_table_privilege('inventory_admin', 'inventory.reconcile_wait', 'SELECT')
		  AND has_table_privilege('inventory_admin', 'inventory.reconcile_stats', 'SELECT'),
		  'inventory_admin reads reconcile_waiting, reconcile_wait and reconcile_stats');
SELECT ok(has_table_privilege('inventory_monitor', 'inventory.reconcile_stats', 'SELECT')
		  AND has_function_privilege('inventory_monitor', 'inventory.reconcile_stats()', 'EXECUTE'),
		  'inventory_monitor reads reconcile_stats');
SELECT ok(NOT has_table_privilege('inventory_monitor', 'inventory.reconcile_waiting', 'SELECT')
		  AND NOT has_table_privilege('inventory_monitor', 'inventory.reconcile_wait', 'SELECT'),
		  'inventory_monitor reads neither reconcile_waiting nor reconcile_wait (order ids, the application''s errors)');
SELECT ok(NOT has_table_privilege('inventory_monitor', 'inventory.reconcile_wait', 'INSERT')
		  AND NOT has_table_privilege('inventory_monitor', 'inventory.reconcile_wait', 'UPDATE')
		  AND NOT has_table_privilege('inventory_monitor', 'inventory.reconcile_wait', 'DELETE')
		  AND NOT has_table_privilege('inventory_admin', 'inventory.reconcile_wait', 'INSERT')
		  AND NOT has_table_privilege('inventory_admin', 'inventory.reconcile_wait', 'UPDATE')
		  AND NOT has_table_privilege('inventory_admin', 'inventory.reconcile_wait', 'DELETE'),
		  'neither inventory_monitor nor inventory_admin writes reconcile_wait: only the extension does');
SELECT ok(NOT has_table_privilege('inventory_app', 'inventory.reconcile_waiting', 'SELECT')
		  AND NOT has_table_privilege('inventory_app', 'inventory.reconcile_wait', 'SELECT')
		  AND NOT has_function_privilege('inventory_app', 'inventory.reconcile_stats()', 'EXECUTE'),
		  'inventory_app reads none of them');
SELECT ok(NOT has_table_privilege('inv_test_rec_public', 'inventory.reconcile_waiting', 'SELECT')
		  AND NOT has_table_privilege('inv_test_rec_public', 'inventory.reconcile_wait', 'SELECT')
		  AND NOT has_table_privilege('inv_test_rec_public', 'inventory.reconcile_stats', 'SELECT'),
		  'PUBLIC reads none of them');
-- and so it goes for the roles, connected
SELECT lives_ok($$SELECT pg_temp.monitor('SELECT count(*) FROM inventory.reconcile_stats')$$,
				'monitor: reads reconcile_stats');
SELECT throws_ok($$SELECT pg_temp.monitor('SELECT count(*) FROM inventory.reconcile_wait')$$, '42501', NULL,
				 'monitor: cannot read reconcile_wait (42501)');
SELECT throws_ok($$SELECT pg_temp.monitor('SELECT count(*) FROM inventory.reconcile_waiting')$$, '42501', NULL,
				 'monitor: cannot read reconcile_waiting (42501)');
SELECT throws_ok($$SELECT pg_temp.monitor('SELECT inventory.stop_worker()')$$, '42501', NULL,
				 'monitor: cannot stop the worker (42501)');
SELECT lives_ok($$SELECT pg_temp.admin('SELECT count(*) FROM inventory.reconcile_wait')$$,
				'admin: reads reconcile_wait');
SELECT lives_ok($$SELECT pg_temp.admin('SELECT count(*) FROM inventory.reconcile_waiting')$$,
				'admin: reads reconcile_waiting');
SELECT throws_ok($$SELECT pg_temp.admin('DELETE FROM inventory.reconcile_wait')$$, '42501', NULL,
				 'admin: cannot delete from reconcile_wait (42501)');
SELECT is(pg_temp.admin('SELECT inventory.stop_worker()'), 'f',
		  'admin: stop_worker() answers false when no worker serves the database (the workers are off here)');
SELECT throws_ok($$SELECT pg_temp.app('SELECT count(*) FROM inventory.reconcile_waiting')$$, '42501', NULL,
				 'app: cannot read reconcile_waiting (42501)');
SELECT throws_ok($$SELECT pg_temp.app('SELECT inventory.stop_worker()')$$, '42501', NULL,
				 'app: cannot stop the worker (42501)');

------------------------------------------------------------------------------
-- the setting: inventory.reconciler, calling fn, with the timing as its
-- defaults (its owner, its comment and its defaults without timing:
-- sql/reconcile.sql)
------------------------------------------------------------------------------
SELECT lives_ok($$SELECT pg_temp.admin('SELECT inventory.set_reconciler(''inv_test_rec.spare(text, integer)'')')$$,
				'an administrator with the privileges of the owner sets a function');
SELECT lives_ok($$SELECT pg_temp.set()$$, '... and sets another in its place');
SELECT is(pg_temp.settings(), 1::bigint, 'there is one inventory.reconciler');
SELECT is((SELECT array_agg(refobjid::regprocedure::text) FROM pg_depend
			WHERE classid = 'pg_proc'::regclass AND objid = :'rsig'::regprocedure
			  AND refclassid = 'pg_proc'::regclass AND deptype = 'n'),
		  ARRAY['inv_test_rec.ask(text,integer)'], 'it depends on the function set last, and on it alone');
SELECT ok(NOT has_function_privilege('inventory_app', :'rsig', 'EXECUTE')
		  AND NOT has_function_privilege('inv_test_rec_public', :'rsig', 'EXECUTE')
		  AND NOT has_function_privilege('inv_test_rec_stranger', :'rsig', 'EXECUTE'),
		  'only its owner may execute it: not the application, PUBLIC or another administrator');
SELECT lives_ok($$SELECT pg_temp.set('timeout => ''250ms'', retry => ''1 hour'', max_asks => 5, max_wait => ''50 min''')$$,
				'set again with its timing');
SELECT is(pg_get_function_arguments(:'rsig'::regprocedure),
		  'order_id text, batch_id integer, timeout interval DEFAULT ''00:00:00.25''::interval, retry interval DEFAULT ''01:00:00''::interval, max_asks integer DEFAULT 5, max_wait interval DEFAULT ''00:50:00''::interval',
		  '... its defaults are the timing');
SELECT is(pg_temp.settings(), 1::bigint, '... still one inventory.reconciler');
SELECT lives_ok($$SELECT pg_temp.set()$$, 'set again without its timing');

------------------------------------------------------------------------------
-- comments on every new object
------------------------------------------------------------------------------
SELECT is_empty($$
SELECT p.oid::regprocedure FROM pg_proc p
 WHERE p.pronamespace = 'inventory'::regnamespace AND p.proname NOT LIKE 'state\_%'
   AND obj_description(p.oid, 'pg_proc') IS NULL$$,
	'every function of the schema has a comment, inventory.reconciler included');
SELECT isnt(obj_description(:'ssig'::regprocedure, 'pg_proc'), NULL, 'set_reconciler has a comment');
SELECT isnt(obj_description('inventory.stop_worker()'::regprocedure, 'pg_proc'), NULL, 'stop_worker has a comment');
SELECT isnt(obj_description('inventory.reconcile_stats()'::regprocedure, 'pg_proc'), NULL,
			'the function reconcile_stats() has a comment');
SELECT is_empty($$
SELECT c.oid::regclass FROM pg_class c
 WHERE c.oid IN ('inventory.reconcile_wait'::regclass, 'inventory.reconcile_waiting'::regclass,
				 'inventory.reconcile_stats'::regclass)
   AND obj_description(c.oid, 'pg_class') IS NULL$$,
	'reconcile_wait, reconcile_waiting and reconcile_stats have a comment');
SELECT is_empty($$
SELECT c.oid::regclass || '.' || a.attname FROM pg_class c
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE c.oid IN ('inventory.reconcile_wait'::regclass, 'inventory.reconcile_waiting'::regclass,
				 'inventory.reconcile_stats'::regclass)
   AND col_description(c.oid, a.attnum) IS NULL$$,
	'every column of reconcile_wait, reconcile_waiting and reconcile_stats has a comment');

------------------------------------------------------------------------------
-- one round: each answer's effect
------------------------------------------------------------------------------
SELECT pg_temp.order_answered('conf', 'A', 2, 'confirm') \g /dev/null
SELECT pg_temp.order_answered('canc', 'A', 3, 'cancel') \g /dev/null
SELECT pg_temp.order_answered('expi', 'A', 4, 'expire') \g /dev/null
SELECT pg_temp.order_answered('wait', 'A', 1, 'wait') \g /dev/null
SELECT pg_temp.order_answered('null', 'A', 1, 'null') \g /dev/null
SELECT pg_temp.order_answered('odd', 'A', 1, 'Confirm') \g /dev/null
SELECT pg_temp.order_answered('err', 'A', 1, 'error') \g /dev/null
SELECT pg_temp.order_answered('probe', 'B', 1, 'probe') \g /dev/null
-- a cart of two overdue lines and one due in an hour, answered confirm
SELECT pg_temp.line('cart', 2, 'A', 2), pg_temp.line('cart', 3, 'B', 3), pg_temp.line('cart', 5, 'B', 1, false) \g /dev/null
SELECT pg_temp.admin(format('INSERT INTO inv_test_rec.answers VALUES (%L, %L)', pg_temp.n('cart'), 'confirm')) \g /dev/null
-- a cart of two overdue lines, answered wait
SELECT pg_temp.line('wcart', 1, 'A', 1), pg_temp.line('wcart', 2, 'B', 2) \g /dev/null
SELECT pg_temp.admin(format('INSERT INTO inv_test_rec.answers VALUES (%L, %L)', pg_temp.n('wcart'), 'wait')) \g /dev/null

SELECT is(pg_temp.units('A'), 'on_hand=100 reserved=16 available=84', 'A: 16 units held by overdue reservations');
SELECT is(pg_temp.units('B'), 'on_hand=100 reserved=7 available=93', 'B: 7 units held');

SELECT is(pg_temp.expire(), 5::bigint, 'one round settles 5 reservations: confirm, cancel, expire and the cart''s two lines');

SELECT is(pg_temp.lines('conf'), '1:CONFIRMED', 'confirm: CONFIRMED past expires_at');
SELECT is(pg_temp.lines('canc'), '1:CANCELLED', 'cancel: CANCELLED');
SELECT is(pg_temp.lines('expi'), '1:EXPIRED', 'expire: EXPIRED');
SELECT is(pg_temp.lines('wait'), '1:PENDING', 'wait: still PENDING');
SELECT is(pg_temp.lines('null'), '1:PENDING', 'NULL: still PENDING');
SELECT is(pg_temp.lines('odd'), '1:PENDING', 'another answer: still PENDING');
SELECT is(pg_temp.lines('err'), '1:PENDING', 'an error: still PENDING');
SELECT is(pg_temp.lines('cart'), '2:CONFIRMED 3:CONFIRMED 5:PENDING',
		  'a cart answered confirm: its overdue lines are CONFIRMED, the line not due is left alone');
SELECT is(pg_temp.lines('wcart'), '1:PENDING 2:PENDING', 'a cart answered wait: its lines are PENDING');

SELECT is(pg_temp.asked('cart'), '2@inv_test_rec_owner', 'a cart is asked once, with its first overdue line');
SELECT is(pg_temp.asked('wcart'), '1@inv_test_rec_owner', '... every cart');
SELECT is((SELECT count(*) FROM inv_test_rec.asked WHERE starts_with(order_id, :'p')),
		  9::bigint, 'one ask per order whose ask returned (the failed ask''s writes are undone)');
SELECT is((SELECT array_agg(DISTINCT who) FROM inv_test_rec.asked), ARRAY['inv_test_rec_owner'::name],
		  'the function ran as its owner: not the role that set the reconciler, not the caller of expire()');

SELECT is(pg_temp.waits('conf') || ' ' || pg_temp.waits('canc') || ' ' || pg_temp.waits('expi') || ' ' || pg_temp.waits('cart'),
		  'not waiting not waiting not waiting not waiting', 'the settled orders do not wait');
SELECT is(pg_temp.waits('wait'), 'asks=1 last=wait', 'wait: waits, asked once');
SELECT is(pg_temp.waits('null'), 'asks=1 last=no answer (NULL)', 'NULL: a failed ask; waits');
SELECT is(pg_temp.waits('odd'), 'asks=1 last=an unknown answer "Confirm"', 'another answer: a failed ask; waits');
SELECT is(pg_temp.waits('err'), 'asks=1 last=an error: payment service down', 'an error: a failed ask; waits, with its message');
SELECT is(pg_temp.admin(format('SELECT next_ask - first_asked FROM inventory.reconcile_wait WHERE order_id = %L',
							   pg_temp.n('wait')))::interval,
		  interval '60 seconds', 'the next ask is inventory.reconcile_retry (60 s: the setting has no retry) after this one');
SELECT is(pg_temp.admin(format('SELECT ROW(lines, units, asks, last_answer) FROM inventory.reconcile_waiting WHERE order_id = %L',
							   pg_temp.n('wcart'))),
		  '(2,3,1,wait)', 'reconcile_waiting: the waiting cart, its lines and units');
-- from here on an order is asked again only when the file makes it due, however long the file takes
UPDATE inventory.reconcile_wait SET next_ask = next_ask + interval '1 hour';
SELECT pg_temp.set('retry => ''1 hour''') \g /dev/null

-- what the application's function was refused
SELECT results_eq($$SELECT what, sqlstate, message FROM inv_test_rec.probes
					WHERE what <> 'reconcile_wait' ORDER BY what$$,
				  $$SELECT w, '42501', m FROM (VALUES
					('available', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('cache_info', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('cancel', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('confirm', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('expire', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('ledger', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('lock', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('read', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('reserve', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('set_reconciler', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('sku', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('stats_reset', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('stop_worker', 'a reconciler cannot use the inventory functions or the inventory tables'),
					('temp', 'cannot create temporary table within security-restricted operation'),
					('view', 'a reconciler cannot use the inventory functions or the inventory tables')) v(w, m) ORDER BY w$$,
				  'inside the ask, the inventory API (its figures too), reads, writes and LOCK of its tables and views, and temporary tables are refused (42501), whatever the owner''s grants');
SELECT is((SELECT sqlstate FROM inv_test_rec.probes WHERE what = 'reconcile_wait'), '42501',
		  'inside the ask, writes to inventory.reconcile_wait are refused (42501)');
SELECT is(pg_temp.lines('probe'), '1:PENDING', 'the refused calls changed nothing: the probing order waits');
SELECT is(pg_temp.waits('probe'), 'asks=1 last=wait', '... as it answered');

SELECT is(pg_temp.units('A'), 'on_hand=96 reserved=5 available=91',
		  'A: 4 units confirmed (2 + the cart''s 2), 7 released (cancel, expire), 5 still held');
SELECT is(pg_temp.units('B'), 'on_hand=97 reserved=4 available=93',
		  'B: the cart''s 3 units confirmed, 4 still held');
SELECT is(pg_temp.verify(), '0', 'inventory.verify() is empty after the round');

------------------------------------------------------------------------------
-- waiting orders: not asked before their next ask, settled once answered
------------------------------------------------------------------------------
SELECT pg_temp.admin('TRUNCATE inv_test_rec.asked') \g /dev/null
SELECT is(pg_temp.expire(), 0::bigint, 'a round with every overdue order waiting settles nothing');
SELECT is((SELECT count(*) FROM inv_test_rec.asked), 0::bigint, '... and asks nobody');

SELECT pg_temp.set('retry => ''5 minutes''') \g /dev/null
SELECT pg_temp.due('wait') \g /dev/null
SELECT clock_timestamp() AS before_ask \gset
SELECT is(pg_temp.expire(), 0::bigint, 'wait, asked again when due: answers wait again');
SELECT is(pg_temp.asked('wait'), '1@inv_test_rec_owner', '... it was asked');
SELECT is(pg_temp.waits('wait'), 'asks=2 last=wait', '... asks counts 2');
SELECT ok((SELECT next_ask >= :'before_ask'::timestamptz + interval '5 minutes'
			  AND next_ask <= clock_timestamp() + interval '5 minutes'
			 FROM inventory.reconcile_wait WHERE order_id = pg_temp.n('wait')),
		  'the next ask is the reconciler''s retry (here 5 min) after this one');
SELECT pg_temp.set('retry => ''1 hour''') \g /dev/null

SELECT pg_temp.admin(format('UPDATE inv_test_rec.answers SET answer = %L WHERE order_id = %L',
							'confirm', pg_temp.n('null'))) \g /dev/null
SELECT pg_temp.due('null') \g /dev/null
SELECT is(pg_temp.expire(), 1::bigint, 'an order whose ask failed is asked again when due, and settled by the answer');
SELECT is(pg_temp.lines('null') || ' ' || pg_temp.waits('null'), '1:CONFIRMED not waiting', '... CONFIRMED, and no longer waits');
SELECT is(pg_temp.units('A'), 'on_hand=95 reserved=4 available=91', 'A: its unit confirmed');

------------------------------------------------------------------------------
-- max_asks: expired without asking
------------------------------------------------------------------------------
SELECT pg_temp.set('retry => ''1 hour'', max_asks => 2') \g /dev/null
SELECT pg_temp.due('wait'), pg_temp.due('odd'), pg_temp.due('err') \g /dev/null
SELECT pg_temp.admin('TRUNCATE inv_test_rec.asked') \g /dev/null
SELECT is(pg_temp.expire(), 1::bigint, 'max_asks 2: the order asked twice is expired');
SELECT is(pg_temp.lines('wait') || ' ' || pg_temp.asked('wait') || ' ' || pg_temp.waits('wait'),
		  '1:EXPIRED none not waiting', '... without asking');
SELECT is(pg_temp.waits('odd') || ', ' || pg_temp.waits('err'),
		  'asks=2 last=an unknown answer "Confirm", asks=2 last=an error: payment service down',
		  'the orders asked once are asked again: a failed ask counts as an ask');
SELECT pg_temp.due('odd'), pg_temp.due('err') \g /dev/null
SELECT pg_temp.admin('TRUNCATE inv_test_rec.asked') \g /dev/null
SELECT is(pg_temp.expire(), 2::bigint, 'asked twice, failed twice: both expired');
SELECT is(pg_temp.lines('odd') || ' ' || pg_temp.lines('err') || ' ' || pg_temp.asked('odd'),
		  '1:EXPIRED 1:EXPIRED none', '... without asking');
SELECT is(pg_temp.units('A'), 'on_hand=95 reserved=1 available=94', 'A: their 3 units released');
SELECT pg_temp.set('retry => ''1 hour''') \g /dev/null

------------------------------------------------------------------------------
-- timeout: a failed ask, also when the function catches the cancel and
-- answers after it
------------------------------------------------------------------------------
SELECT pg_temp.order_answered('slow', 'A', 1, 'slow') \g /dev/null
SELECT pg_temp.order_answered('stubborn', 'D', 1, 'stubborn') \g /dev/null
SELECT pg_temp.set('retry => ''1 hour'', timeout => ''200ms''') \g /dev/null
SELECT is(pg_temp.expire(), 0::bigint,
		  'an ask that outlasts the reconciler''s timeout settles nothing, nor one that catches the cancel and answers after it');
SELECT pg_temp.set('retry => ''1 hour''') \g /dev/null
SELECT is(pg_temp.lines('slow') || ' ' || pg_temp.lines('stubborn'), '1:PENDING 1:PENDING',
		  '... the orders are PENDING (their answer confirm never came, or came too late)');
SELECT is(pg_temp.waits('slow') || ', ' || pg_temp.waits('stubborn'),
		  'asks=1 last=no answer within its timeout (200 ms), asks=1 last=no answer within its timeout (200 ms)',
		  '... and wait, failed asks');
SELECT is((SELECT count(*) FROM inv_test_rec.asked WHERE order_id = pg_temp.n('slow')), 0::bigint,
		  '... what the slow ask wrote is undone');

------------------------------------------------------------------------------
-- max_wait: expired without asking
------------------------------------------------------------------------------
SELECT pg_temp.admin(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
								VALUES (%L, 1, 'reserve', %L, 2, now() - interval '2 hours');
							  INSERT INTO inv_test_rec.answers VALUES (%1$L, 'confirm')$$,
							pg_temp.n('ancient'), pg_temp.n('A'))) \g /dev/null
SELECT pg_temp.admin('TRUNCATE inv_test_rec.asked') \g /dev/null
SELECT is(pg_temp.expire(), 1::bigint, 'an order overdue for longer than inventory.reconcile_max_wait (1 h) is expired');
SELECT is(pg_temp.lines('ancient') || ' ' || pg_temp.asked('ancient'), '1:EXPIRED none', '... without asking');
SELECT pg_temp.order_answered('minute', 'A', 1, 'confirm') \g /dev/null
SELECT pg_temp.set('retry => ''1 hour'', max_wait => ''30 seconds''') \g /dev/null
SELECT is(pg_temp.expire(), 1::bigint, 'max_wait 30 s: an order a minute overdue is expired');
SELECT pg_temp.set('retry => ''1 hour''') \g /dev/null
SELECT is(pg_temp.lines('minute') || ' ' || pg_temp.asked('minute'), '1:EXPIRED none', '... without asking');
SELECT is(pg_temp.units('A'), 'on_hand=95 reserved=2 available=93', 'A: their units released (2 held: wcart, slow)');
SELECT is(pg_temp.verify(), '0', 'inventory.verify() is empty');

------------------------------------------------------------------------------
-- how many a round asks
------------------------------------------------------------------------------
SELECT pg_temp.order_answered('few-' || i, 'C', 1, 'expire') FROM generate_series(1, 3) i \g /dev/null
SELECT is(pg_temp.expire(2), 2::bigint, 'expire(2) asks about 2 orders');
SELECT is(pg_temp.expire(), 1::bigint, '... the next round about the third');
SELECT pg_temp.order_answered('many-' || i, 'C', 1, 'confirm') FROM generate_series(1, 64) i \g /dev/null
SELECT pg_temp.admin('TRUNCATE inv_test_rec.asked') \g /dev/null
SELECT is(pg_temp.expire(), 63::bigint, 'a round asks about 63 orders at most');
SELECT is((SELECT count(*) FROM inv_test_rec.asked), 63::bigint, '... 63 asks');
SELECT is(pg_temp.expire(), 1::bigint, '... the next round about the last one');
SELECT is(pg_temp.units('C'), 'on_hand=36 reserved=0 available=36', 'C: 64 units confirmed, 3 released');

------------------------------------------------------------------------------
-- the rules, not the setter's rights, are checked at every ask
------------------------------------------------------------------------------
-- the setter loses the privileges of the function's owner: the ask does
-- not use them, and runs as the owner
SELECT pg_temp.order_answered('revoked', 'A', 1, 'confirm') \g /dev/null
REVOKE inv_test_rec_owner FROM inv_test_rec_admin;
SELECT is(pg_temp.expire(), 1::bigint, 'the setter without the privileges of the function''s owner: the order is asked and settled');
GRANT inv_test_rec_owner TO inv_test_rec_admin;
SELECT is(pg_temp.lines('revoked') || ' ' || pg_temp.asked('revoked'), '1:CONFIRMED 1@inv_test_rec_owner',
		  '... CONFIRMED, asked as the owner');
-- the function given to a superuser (as pg_restore --no-owner does): not
-- asked, a failed ask that says why
SELECT pg_temp.order_answered('disowned', 'A', 1, 'confirm') \g /dev/null
ALTER FUNCTION inv_test_rec.ask(text, integer) OWNER TO CURRENT_USER;
SELECT is(pg_temp.expire(), 0::bigint, 'the function owned by a superuser: nothing settles');
SELECT matches(pg_temp.waits('disowned'),
			   '^asks=1 last=refused: inv_test_rec\.ask\(text,integer\) cannot be a reconciler: it is owned by superuser ',
			   '... a failed ask that names the rule; the order waits');
ALTER FUNCTION inv_test_rec.ask(text, integer) OWNER TO inv_test_rec_owner;
-- a schema on its path opened to another role
SELECT pg_temp.admin('GRANT CREATE ON SCHEMA inv_test_rec TO inv_test_rec_public') \g /dev/null
SELECT pg_temp.due('disowned') \g /dev/null
SELECT is(pg_temp.expire(), 0::bigint, 'another role may create objects in a schema on its path: nothing settles');
SELECT is(pg_temp.waits('disowned'),
		  'asks=2 last=refused: inv_test_rec.ask(text,integer) cannot be a reconciler: inv_test_rec_public may create objects in schema "inv_test_rec" of its search_path',
		  '... a failed ask that names the role and the schema');
SELECT is(pg_temp.asked('disowned'), 'none', 'the refused function was not called');
SELECT pg_temp.admin('REVOKE CREATE ON SCHEMA inv_test_rec FROM inv_test_rec_public') \g /dev/null
SELECT pg_temp.due('disowned') \g /dev/null
SELECT is(pg_temp.expire(), 1::bigint, 'the rules followed again: the order is asked and settled');
SELECT is(pg_temp.lines('disowned') || ' ' || pg_temp.waits('disowned'), '1:CONFIRMED not waiting', '... CONFIRMED');

------------------------------------------------------------------------------
-- a late confirm
------------------------------------------------------------------------------
SELECT pg_temp.line('late', 1, 'A', 2) \g /dev/null
SELECT pg_temp.line('late-cart', 1, 'B', 1), pg_temp.line('late-cart', 2, 'B', 1) \g /dev/null
SELECT pg_temp.line('late-dml', 1, 'A', 1) \g /dev/null
SELECT is(pg_temp.res_id(pg_temp.app(format('SELECT inventory.confirm(%L)', pg_temp.n('late')))::inventory.result),
		  'ok=true status=ok sku=A qty=2 state=CONFIRMED',
		  'with a reconciler, the application''s late confirm is ok');
SELECT is(pg_temp.res_id(pg_temp.app(format('SELECT inventory.confirm(%L)', pg_temp.n('late')))::inventory.result),
		  'ok=true status=duplicate sku=A qty=2 state=CONFIRMED',
		  '... and its replay duplicate');
SELECT is(pg_temp.app(format($$SELECT string_agg(status || '/' || state, ' ') FROM inventory.confirm_order(%L)$$,
							 pg_temp.n('late-cart'))),
		  'ok/CONFIRMED ok/CONFIRMED', 'a late confirm_order confirms every line');
SELECT throws_ok(format('SELECT pg_temp.admin(%L)',
						format($$UPDATE inventory.ledger SET state = 'CONFIRMED' WHERE order_id = %L$$, pg_temp.n('late-dml'))),
				 '23514', NULL, 'direct DML still may not confirm past expires_at (23514)');
SELECT is(pg_temp.units('A'), 'on_hand=91 reserved=3 available=88', 'A: the late confirm''s 2 units confirmed');
SELECT is(pg_temp.units('B'), 'on_hand=95 reserved=4 available=91', 'B: the late cart''s 2 units confirmed');
SELECT is(pg_temp.verify(), '0', 'inventory.verify() is empty');

------------------------------------------------------------------------------
-- an error of the function with the SQLSTATE of a cancel (57014) is its own:
-- a failed ask, not a cancel of the round
------------------------------------------------------------------------------
SELECT pg_temp.order_answered('err57014', 'C', 1, 'error-57014') \g /dev/null
SELECT is(pg_temp.round(), 'done', 'an error 57014 of the function does not fail the round');
SELECT is(pg_temp.waits('err57014'), 'asks=1 last=an error: canceling statement due to statement timeout',
		  '... it is a failed ask; the order waits');
-- (either way the order is overdue and PENDING, and expired below)

------------------------------------------------------------------------------
-- the server's settings are a superuser's
------------------------------------------------------------------------------
SELECT throws_ok($$SELECT pg_temp.admin('SET inventory.reconcile_timeout = ''1h''')$$, '42501', NULL,
				 'an administrator may not set reconcile_timeout');
SELECT throws_ok($$SELECT pg_temp.admin('SET inventory.reconcile_retry = ''1s''')$$, '42501', NULL, '... nor reconcile_retry');
SELECT throws_ok($$SELECT pg_temp.admin('SET inventory.reconcile_max_asks = 1000000')$$, '42501', NULL, '... nor reconcile_max_asks');
SELECT throws_ok($$SELECT pg_temp.admin('SET inventory.reconcile_max_wait = ''1d''')$$, '42501', NULL, '... nor reconcile_max_wait');
SELECT throws_ok($$SELECT pg_temp.admin('SET inventory.reconcile_budget = ''1h''')$$, '42501', NULL, '... nor reconcile_budget');

------------------------------------------------------------------------------
-- removing it: set_reconciler(NULL), DROP FUNCTION ... CASCADE
------------------------------------------------------------------------------
SELECT lives_ok($$SELECT pg_temp.admin('SELECT inventory.set_reconciler(NULL)')$$, 'set_reconciler(NULL) removes it');
SELECT is(pg_temp.settings(), 0::bigint, '... inventory.reconciler is gone');
SELECT lives_ok($$SELECT pg_temp.admin('SELECT inventory.set_reconciler(NULL)')$$, '... and removing none is not an error');
SELECT lives_ok($$SELECT pg_temp.set()$$, 'set again');

SELECT throws_ok($$SELECT pg_temp.admin('DROP FUNCTION inv_test_rec.ask(text, integer)')$$, '2BP01', NULL,
				 'the function cannot be dropped while it is the reconciler (2BP01)');
SELECT is(pg_temp.settings(), 1::bigint, '... the setting is still there');
SELECT lives_ok($$SELECT pg_temp.admin('DROP FUNCTION inv_test_rec.ask(text, integer) CASCADE')$$,
				'DROP FUNCTION ... CASCADE, by a member of its owner');
SELECT is(pg_temp.settings(), 0::bigint, '... drops the setting with it');

SELECT pg_temp.order_answered('unasked', 'A', 1, 'confirm') \g /dev/null
-- overdue and PENDING: probe, wcart (2 lines), slow, stubborn, late-dml, err57014, unasked
SELECT is(pg_temp.expire(), 8::bigint, 'without a reconciler the expiry expires every overdue reservation');
SELECT is(pg_temp.lines('unasked') || ' ' || pg_temp.lines('wcart') || ' ' || pg_temp.lines('probe') || ' ' || pg_temp.lines('slow'),
		  '1:EXPIRED 1:EXPIRED 2:EXPIRED 1:EXPIRED 1:EXPIRED', '... the waiting ones too, without asking');
SELECT pg_temp.line('late-none', 1, 'A', 1) \g /dev/null
SELECT is(pg_temp.res_id(pg_temp.app(format('SELECT inventory.confirm(%L)', pg_temp.n('late-none')))::inventory.result),
		  'ok=false status=expired sku=A qty=1 state=EXPIRED',
		  'without a reconciler, a late confirm is told expired');
SELECT is(pg_temp.units('A'), 'on_hand=91 reserved=0 available=91', 'A: nothing held, nothing sold twice');
SELECT is(pg_temp.units('B'), 'on_hand=95 reserved=1 available=94', 'B: only the cart''s line not due is held');
SELECT is(pg_temp.verify(), '0', 'inventory.verify() is empty at the end');

SELECT * FROM finish();

-- what this run leaves: nothing PENDING, no role, no schema
SET client_min_messages = warning;
SELECT pg_temp.admin(format($$SELECT count(inventory.cancel(order_id, batch_id)) FROM inventory.ledger
							   WHERE starts_with(order_id, %L) AND state = 'PENDING'$$, :'p')) \g /dev/null
SELECT dblink_disconnect(c) FROM unnest(dblink_get_connections()) c WHERE c LIKE 'inv\_test\_rec\_%' \g /dev/null
DROP SCHEMA inv_test_rec CASCADE;
DROP OWNED BY inv_test_rec_admin, inv_test_rec_stranger, inv_test_rec_app, inv_test_rec_monitor,
	inv_test_rec_public, inv_test_rec_owner;
DROP ROLE inv_test_rec_admin, inv_test_rec_stranger, inv_test_rec_app, inv_test_rec_monitor,
	inv_test_rec_public, inv_test_rec_owner;
\if :dblink_ours
DROP EXTENSION dblink;
\endif

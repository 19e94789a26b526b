-- reconcile.sql: the reconciler, inventory.set_reconciler(fn).
--
-- Who may set it and with which function (refusals with their SQLSTATEs),
-- what the setting is (inventory.reconciler: owned by the setter, calling
-- fn, executable by the setter only, commented), and who may read what it
-- leaves (inventory.reconcile_wait, reconcile_waiting, reconcile_stats).
-- What each answer does to the reservation and to the counters: confirm,
-- cancel and expire settle the order's overdue lines (a cart is asked once,
-- with its first overdue line, and settled whole); wait, NULL, another
-- answer, an error and a timeout leave it PENDING and waiting in
-- inventory.reconcile_wait (asks, next_ask after inventory.reconcile_retry,
-- last_answer); a waiting order is not asked before its next ask; after
-- inventory.reconcile_max_asks asks, or inventory.reconcile_max_wait past
-- its expires_at, an order is expired without asking; a round asks at most
-- 63 orders, or max_rows.  The application's function runs as the setter,
-- in a sandbox: the inventory API, writes to the inventory tables and
-- temporary tables are refused there (42501, recorded by the function
-- itself), and the setter's right to the function is checked again at
-- every ask.  A late confirm() is ok while a reconciler is set and expired
-- without one; direct DML still may not confirm past expires_at.  fn cannot
-- be dropped while it is the reconciler; with CASCADE the setting goes and
-- the expiry expires without asking.  The settings are for superusers.
-- Inside the ask, inventory.reconcile_wait cannot be written either (only
-- the extension writes it, so no reconciler resets its own asks); an error
-- the function raises with SQLSTATE 57014 is its own, a failed ask, not a
-- cancel of the round.
--
-- The SKUs are committed first (units restocked in the test's transaction
-- are not on sale until it commits); everything else, roles and the
-- application's schema included, happens in one transaction that is rolled
-- back.  The workers are off in the test cluster: only inventory.expire()
-- asks.  The overdue reservations earlier files may have left are expired
-- first, before any reconciler is set, so that every ask is about this
-- file's orders.

\set name reconcile
\ir lib/setup.sql
-- pg_temp.n() is called by the roles of the test too
GRANT EXECUTE ON FUNCTION pg_temp.n(text) TO PUBLIC;

\set p :prefix
-- committed SKUs: A, B and C with 100 units each
DO $$
BEGIN
	PERFORM inventory.restock(pg_temp.n('A'), 100, pg_temp.n('rA'));
	PERFORM inventory.restock(pg_temp.n('B'), 100, pg_temp.n('rB'));
	PERFORM inventory.restock(pg_temp.n('C'), 100, pg_temp.n('rC'));
END $$;

-- a line of an order of this run, overdue by a minute or due in an hour
CREATE FUNCTION pg_temp.line(o text, batch integer, s text, q bigint, overdue boolean DEFAULT true)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
	VALUES (pg_temp.n(o), batch, 'reserve', pg_temp.n(s), q,
			now() + CASE WHEN overdue THEN interval '-1 minute' ELSE interval '1 hour' END)
$$;

-- an overdue one-line order, and what the application will answer about it
-- (inv_test_rec is made in the test's transaction, below)
CREATE FUNCTION pg_temp.order_answered(o text, s text, q bigint, answer text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_temp.line(o, 1, s, q);
	INSERT INTO inv_test_rec.answers VALUES (pg_temp.n(o), answer);
END $$;

-- an order's lines, batch:state
CREATE FUNCTION pg_temp.lines(o text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT coalesce(string_agg(batch_id || ':' || state, ' ' ORDER BY batch_id), 'none')
		FROM inventory.ledger WHERE order_id = pg_temp.n(o) $$;

-- the asks the application recorded about an order: batch_id@current_user each
CREATE FUNCTION pg_temp.asked(o text) RETURNS text LANGUAGE plpgsql STABLE
AS $$ BEGIN RETURN (SELECT coalesce(string_agg(batch_id || '@' || who, ' ' ORDER BY seq), 'none')
					  FROM inv_test_rec.asked WHERE order_id = pg_temp.n(o)); END $$;

-- an order's row of inventory.reconcile_wait: asks and last answer
CREATE FUNCTION pg_temp.waits(o text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT coalesce((SELECT format('asks=%s last=%s', asks, coalesce(last_answer, 'NULL'))
						 FROM inventory.reconcile_wait WHERE order_id = pg_temp.n(o)), 'not waiting') $$;

-- makes an order's next ask due now
CREATE FUNCTION pg_temp.due(o text) RETURNS void LANGUAGE sql AS $$
	UPDATE inventory.reconcile_wait SET next_ask = now() - interval '1 second'
	 WHERE order_id = pg_temp.n(o)
$$;

-- a round of inventory.expire(): done, or the cancel that ended it (which
-- pgTAP's lives_ok() does not catch)
CREATE FUNCTION pg_temp.round() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM inventory.expire();
	RETURN 'done';
EXCEPTION WHEN query_canceled THEN
	RETURN 'cancelled: ' || SQLERRM;
END $$;

-- a SKU's counters in inventory.stock (inventory.available(), the live
-- counter, gives units back when the transaction that settles commits)
CREATE FUNCTION pg_temp.units(s text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT format('on_hand=%s reserved=%s available=%s', on_hand, reserved, available)
		FROM inventory.stock WHERE sku = pg_temp.n(s) $$;

BEGIN;
SELECT plan(132);
-- the failed asks' warnings are checked by the regression test
SET client_min_messages = error;

SELECT is(to_regprocedure('inventory.reconciler(text, integer)'), NULL, 'no reconciler is set at the start');
SELECT cmp_ok(inventory.expire(), '>=', 0::bigint, 'overdue reservations of earlier files are expired, without asking');

------------------------------------------------------------------------------
-- the application: its schema, its answers, its function
------------------------------------------------------------------------------
CREATE ROLE inv_test_rec_owner;
CREATE ROLE inv_test_rec_admin IN ROLE inventory_admin, inv_test_rec_owner;
CREATE ROLE inv_test_rec_stranger IN ROLE inventory_admin;
CREATE ROLE inv_test_rec_app IN ROLE inventory_app;
CREATE ROLE inv_test_rec_monitor IN ROLE inventory_monitor;
CREATE ROLE inv_test_rec_public;

CREATE SCHEMA inv_test_rec AUTHORIZATION inv_test_rec_owner;
SET ROLE inv_test_rec_owner;
CREATE TABLE inv_test_rec.answers (order_id text PRIMARY KEY, answer text);
CREATE TABLE inv_test_rec.asked (seq bigserial, order_id text, batch_id integer, who name);
CREATE TABLE inv_test_rec.probes (order_id text, what text, sqlstate text, message text);

-- answers from inv_test_rec.answers; 'probe' tries what a reconciler may
-- not do, each in a block of its own that undoes it, and records how it
-- ended (P0001 'done' when it was not refused)
CREATE FUNCTION inv_test_rec.ask(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = inv_test_rec, pg_catalog
AS $$
DECLARE
	a text := (SELECT x.answer FROM answers x WHERE x.order_id = ask.order_id);
	its_sku text := (SELECT l.sku FROM inventory.ledger l WHERE l.order_id = ask.order_id LIMIT 1);
	what text;
BEGIN
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
	ELSIF a = 'probe' THEN
		FOREACH what IN ARRAY ARRAY['reserve', 'confirm', 'cancel', 'available', 'expire',
									'set_reconciler', 'ledger', 'sku', 'temp', 'reconcile_wait'] LOOP
			BEGIN
				CASE what
					WHEN 'reserve' THEN PERFORM inventory.reserve(its_sku, 1, order_id || '-more');
					WHEN 'confirm' THEN PERFORM inventory.confirm(order_id, batch_id);
					WHEN 'cancel' THEN PERFORM inventory.cancel(order_id, batch_id);
					WHEN 'available' THEN PERFORM inventory.available(its_sku);
					WHEN 'expire' THEN PERFORM inventory.expire();
					WHEN 'set_reconciler' THEN PERFORM inventory.set_reconciler(NULL);
					WHEN 'ledger' THEN UPDATE inventory.ledger l SET state = 'CONFIRMED'
										WHERE l.order_id = ask.order_id;
					WHEN 'sku' THEN UPDATE inventory.sku s SET on_hand = s.on_hand + 1000
									 WHERE s.sku = its_sku;
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
	LANGUAGE sql SET search_path = pg_catalog RETURN 'confirm';
CREATE FUNCTION inv_test_rec.wrong_result(order_id text, batch_id integer) RETURNS boolean
	LANGUAGE sql SET search_path = pg_catalog RETURN true;
CREATE FUNCTION inv_test_rec.many(order_id text, batch_id integer) RETURNS SETOF text
	LANGUAGE sql SET search_path = pg_catalog AS $$ SELECT 'confirm' $$;
CREATE FUNCTION inv_test_rec.not_executable(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog RETURN 'confirm';
REVOKE EXECUTE ON FUNCTION inv_test_rec.not_executable(text, integer) FROM PUBLIC, inv_test_rec_owner;
-- and another application, whose function is a spare one
CREATE FUNCTION inv_test_rec.spare(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog RETURN 'confirm';
RESET ROLE;
CREATE FUNCTION inv_test_rec.superusers(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog RETURN 'confirm';

------------------------------------------------------------------------------
-- who may set it, with which function
------------------------------------------------------------------------------
SELECT throws_ok($$SELECT inventory.set_reconciler('inv_test_rec.no_path(text, integer)')$$, '42P13', NULL,
				 'refused: a function without its own SET search_path (42P13)');
SELECT throws_ok($$SELECT inventory.set_reconciler('inv_test_rec.wrong_args(text)')$$, '42P13', NULL,
				 'refused: a function of other arguments (42P13)');
SELECT throws_ok($$SELECT inventory.set_reconciler('inv_test_rec.wrong_result(text, integer)')$$, '42P13', NULL,
				 'refused: a function returning another type (42P13)');
SELECT throws_ok($$SELECT inventory.set_reconciler('inv_test_rec.many(text, integer)')$$, '42P13', NULL,
				 'refused: a set-returning function (42P13)');
SELECT throws_ok($$SELECT inventory.set_reconciler('inv_test_rec.absent(text, integer)')$$, '42883', NULL,
				 'refused: a function that does not exist (42883)');

SET ROLE inv_test_rec_stranger;
SELECT throws_ok($$SELECT inventory.set_reconciler('inv_test_rec.ask(text, integer)')$$, '42501', NULL,
				 'refused: an administrator without the privileges of the function''s owner (42501)');
SET ROLE inv_test_rec_admin;
SELECT throws_ok($$SELECT inventory.set_reconciler('inv_test_rec.superusers(text, integer)')$$, '42501', NULL,
				 'refused: a superuser''s function, for an administrator (42501)');
SELECT throws_ok($$SELECT inventory.set_reconciler('inv_test_rec.not_executable(text, integer)')$$, '42501', NULL,
				 'refused: a function the administrator may not execute (42501)');
SET ROLE inv_test_rec_app;
SELECT throws_ok($$SELECT inventory.set_reconciler('inv_test_rec.ask(text, integer)')$$, '42501', NULL,
				 'refused: the application role may not set it (42501)');
SELECT throws_ok($$SELECT inventory.set_reconciler(NULL)$$, '42501', NULL,
				 'refused: the application role may not remove it (42501)');
SET ROLE inv_test_rec_public;
SELECT throws_ok($$SELECT inventory.set_reconciler(NULL)$$, '42501', NULL,
				 'refused: PUBLIC may not call set_reconciler (42501)');
RESET ROLE;
SELECT is(to_regprocedure('inventory.reconciler(text, integer)'), NULL, 'the refused calls set nothing');

------------------------------------------------------------------------------
-- privileges on the new objects
------------------------------------------------------------------------------
SELECT ok(has_function_privilege('inventory_admin', 'inventory.set_reconciler(regprocedure)', 'EXECUTE'),
		  'inventory_admin may execute set_reconciler');
SELECT ok(NOT has_function_privilege('inventory_app', 'inventory.set_reconciler(regprocedure)', 'EXECUTE'),
		  'inventory_app may not execute set_reconciler');
SELECT ok(NOT has_function_privilege('inventory_monitor', 'inventory.set_reconciler(regprocedure)', 'EXECUTE'),
		  'inventory_monitor may not execute set_reconciler');
SELECT ok(NOT has_function_privilege('inv_test_rec_public', 'inventory.set_reconciler(regprocedure)', 'EXECUTE'),
		  'PUBLIC may not execute set_reconciler');
SELECT ok(has_table_privilege('inventory_monitor', 'inventory.reconcile_waiting', 'SELECT')
		  AND has_table_privilege('inventory_monitor', 'inventory.reconcile_wait', 'SELECT')
		  AND has_table_privilege('inventory_monitor', 'inventory.reconcile_stats', 'SELECT')
		  AND has_function_privilege('inventory_monitor', 'inventory.reconcile_stats()', 'EXECUTE'),
		  'inventory_monitor reads reconcile_waiting, reconcile_wait and reconcile_stats');
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
SET ROLE inv_test_rec_monitor;
SELECT lives_ok($$SELECT * FROM inventory.reconcile_waiting$$, 'monitor: reads reconcile_waiting');
SELECT lives_ok($$SELECT * FROM inventory.reconcile_wait$$, 'monitor: reads reconcile_wait');
SELECT lives_ok($$SELECT * FROM inventory.reconcile_stats$$, 'monitor: reads reconcile_stats');
SELECT throws_ok($$DELETE FROM inventory.reconcile_wait$$, '42501', NULL, 'monitor: cannot delete from reconcile_wait');
SET ROLE inv_test_rec_app;
SELECT throws_ok($$SELECT * FROM inventory.reconcile_waiting$$, '42501', NULL, 'app: cannot read reconcile_waiting');
RESET ROLE;

------------------------------------------------------------------------------
-- the setting: inventory.reconciler, owned by the setter, calling fn
------------------------------------------------------------------------------
SET ROLE inv_test_rec_admin;
SELECT lives_ok($$SELECT inventory.set_reconciler('inv_test_rec.spare(text, integer)')$$,
				'an administrator with the privileges of the owner sets a function');
SELECT lives_ok($$SELECT inventory.set_reconciler('inv_test_rec.ask(text, integer)')$$,
				'... and sets another in its place');
RESET ROLE;
SELECT is((SELECT count(*) FROM pg_proc WHERE pronamespace = 'inventory'::regnamespace AND proname = 'reconciler'),
		  1::bigint, 'there is one inventory.reconciler');
SELECT is((SELECT proowner::regrole::text FROM pg_proc WHERE oid = 'inventory.reconciler(text, integer)'::regprocedure),
		  'inv_test_rec_admin', 'it is owned by the role that set it');
SELECT is((SELECT array_agg(refobjid::regprocedure::text) FROM pg_depend
			WHERE classid = 'pg_proc'::regclass AND objid = 'inventory.reconciler(text, integer)'::regprocedure
			  AND refclassid = 'pg_proc'::regclass AND deptype = 'n'),
		  ARRAY['inv_test_rec.ask(text,integer)'], 'it depends on the function set last, and on it alone');
SELECT ok(NOT has_function_privilege('inventory_app', 'inventory.reconciler(text, integer)', 'EXECUTE')
		  AND NOT has_function_privilege('inv_test_rec_public', 'inventory.reconciler(text, integer)', 'EXECUTE')
		  AND NOT has_function_privilege('inv_test_rec_stranger', 'inventory.reconciler(text, integer)', 'EXECUTE'),
		  'only its owner may execute it: not the application, PUBLIC or another administrator');
SELECT matches(obj_description('inventory.reconciler(text, integer)'::regprocedure, 'pg_proc'),
			   'inv_test_rec\.ask\(text,integer\)', 'its comment names the function it asks');

------------------------------------------------------------------------------
-- comments on every new object
------------------------------------------------------------------------------
SELECT is_empty($$
SELECT p.oid::regprocedure FROM pg_proc p
 WHERE p.pronamespace = 'inventory'::regnamespace AND p.proname NOT LIKE 'state\_%'
   AND obj_description(p.oid, 'pg_proc') IS NULL$$,
	'every function of the schema has a comment, inventory.reconciler included');
SELECT isnt(obj_description('inventory.set_reconciler(regprocedure)'::regprocedure, 'pg_proc'), NULL,
			'set_reconciler has a comment');
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
INSERT INTO inv_test_rec.answers VALUES (pg_temp.n('cart'), 'confirm');
-- a cart of two overdue lines, answered wait
SELECT pg_temp.line('wcart', 1, 'A', 1), pg_temp.line('wcart', 2, 'B', 2) \g /dev/null
INSERT INTO inv_test_rec.answers VALUES (pg_temp.n('wcart'), 'wait');

SELECT is(pg_temp.units('A'), 'on_hand=100 reserved=16 available=84', 'A: 16 units held by overdue reservations');
SELECT is(pg_temp.units('B'), 'on_hand=100 reserved=7 available=93', 'B: 7 units held');

SELECT is(inventory.expire(), 5::bigint, 'one round settles 5 reservations: confirm, cancel, expire and the cart''s two lines');

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

SELECT is(pg_temp.asked('cart'), '2@inv_test_rec_admin', 'a cart is asked once, with its first overdue line');
SELECT is(pg_temp.asked('wcart'), '1@inv_test_rec_admin', '... every cart');
SELECT is((SELECT count(*) FROM inv_test_rec.asked WHERE starts_with(order_id, :'p')),
		  9::bigint, 'one ask per order whose ask returned (the failed ask''s writes are undone)');
SELECT is((SELECT array_agg(DISTINCT who) FROM inv_test_rec.asked), ARRAY['inv_test_rec_admin'::name],
		  'the function ran as the role that set the reconciler: not the caller of expire(), not the function''s owner');

SELECT is(pg_temp.waits('conf') || ' ' || pg_temp.waits('canc') || ' ' || pg_temp.waits('expi') || ' ' || pg_temp.waits('cart'),
		  'not waiting not waiting not waiting not waiting', 'the settled orders do not wait');
SELECT is(pg_temp.waits('wait'), 'asks=1 last=wait', 'wait: waits, asked once');
SELECT is(pg_temp.waits('null'), 'asks=1 last=no answer (NULL)', 'NULL: a failed ask; waits');
SELECT is(pg_temp.waits('odd'), 'asks=1 last=an unknown answer "Confirm"', 'another answer: a failed ask; waits');
SELECT is(pg_temp.waits('err'), 'asks=1 last=an error: payment service down', 'an error: a failed ask; waits, with its message');
SELECT is((SELECT next_ask - first_asked FROM inventory.reconcile_wait WHERE order_id = pg_temp.n('wait')),
		  interval '60 seconds', 'the next ask is inventory.reconcile_retry (60 s) after this one');
SELECT results_eq($$SELECT lines, units, asks, last_answer FROM inventory.reconcile_waiting
					WHERE order_id = pg_temp.n('wcart')$$,
				  $$VALUES (2::bigint, 3::bigint, 1, 'wait')$$,
				  'reconcile_waiting: the waiting cart, its lines and units');
-- from here on an order is asked again only when the file makes it due, however long the file takes
UPDATE inventory.reconcile_wait SET next_ask = next_ask + interval '1 hour';
SET inventory.reconcile_retry = '1h';

-- what the application's function was refused
SELECT results_eq($$SELECT what, sqlstate, message FROM inv_test_rec.probes
					WHERE what <> 'reconcile_wait' ORDER BY what$$,
				  $$SELECT w, '42501', m FROM (VALUES
					('available', 'a reconciler cannot use the inventory functions or write the inventory tables'),
					('cancel', 'a reconciler cannot use the inventory functions or write the inventory tables'),
					('confirm', 'a reconciler cannot use the inventory functions or write the inventory tables'),
					('expire', 'a reconciler cannot use the inventory functions or write the inventory tables'),
					('ledger', 'a reconciler cannot use the inventory functions or write the inventory tables'),
					('reserve', 'a reconciler cannot use the inventory functions or write the inventory tables'),
					('set_reconciler', 'a reconciler cannot use the inventory functions or write the inventory tables'),
					('sku', 'a reconciler cannot use the inventory functions or write the inventory tables'),
					('temp', 'cannot create temporary table within security-restricted operation')) v(w, m) ORDER BY w$$,
				  'inside the ask, the inventory API, writes to the ledger and the SKUs, and temporary tables are refused (42501)');
SELECT is((SELECT sqlstate FROM inv_test_rec.probes WHERE what = 'reconcile_wait'), '42501',
		  'inside the ask, writes to inventory.reconcile_wait are refused (42501)');
SELECT is(pg_temp.lines('probe'), '1:PENDING', 'the refused calls changed nothing: the probing order waits');
SELECT is(pg_temp.waits('probe'), 'asks=1 last=wait', '... as it answered');

SELECT is(pg_temp.units('A'), 'on_hand=96 reserved=5 available=91',
		  'A: 4 units confirmed (2 + the cart''s 2), 7 released (cancel, expire), 5 still held');
SELECT is(pg_temp.units('B'), 'on_hand=97 reserved=4 available=93',
		  'B: the cart''s 3 units confirmed, 4 still held');
SELECT is_empty($$SELECT * FROM inventory.verify()$$, 'inventory.verify() is empty after the round');

------------------------------------------------------------------------------
-- waiting orders: not asked before their next ask, settled once answered
------------------------------------------------------------------------------
TRUNCATE inv_test_rec.asked;
SELECT is(inventory.expire(), 0::bigint, 'a round with every overdue order waiting settles nothing');
SELECT is((SELECT count(*) FROM inv_test_rec.asked), 0::bigint, '... and asks nobody');

SET inventory.reconcile_retry = '5min';
SELECT pg_temp.due('wait') \g /dev/null
SELECT is(inventory.expire(), 0::bigint, 'wait, asked again when due: answers wait again');
SELECT is(pg_temp.asked('wait'), '1@inv_test_rec_admin', '... it was asked');
SELECT is(pg_temp.waits('wait'), 'asks=2 last=wait', '... asks counts 2');
SELECT ok((SELECT next_ask >= now() + interval '5 minutes' AND next_ask <= clock_timestamp() + interval '5 minutes'
			 FROM inventory.reconcile_wait WHERE order_id = pg_temp.n('wait')),
		  'the next ask is inventory.reconcile_retry (here 5 min) after this one');
SET inventory.reconcile_retry = '1h';

UPDATE inv_test_rec.answers SET answer = 'confirm' WHERE order_id = pg_temp.n('null');
SELECT pg_temp.due('null') \g /dev/null
SELECT is(inventory.expire(), 1::bigint, 'an order whose ask failed is asked again when due, and settled by the answer');
SELECT is(pg_temp.lines('null') || ' ' || pg_temp.waits('null'), '1:CONFIRMED not waiting', '... CONFIRMED, and no longer waits');
SELECT is(pg_temp.units('A'), 'on_hand=95 reserved=4 available=91', 'A: its unit confirmed');

------------------------------------------------------------------------------
-- reconcile_max_asks: expired without asking
------------------------------------------------------------------------------
SET inventory.reconcile_max_asks = 2;
SELECT pg_temp.due('wait'), pg_temp.due('odd'), pg_temp.due('err') \g /dev/null
TRUNCATE inv_test_rec.asked;
SELECT is(inventory.expire(), 1::bigint, 'max_asks 2: the order asked twice is expired');
SELECT is(pg_temp.lines('wait') || ' ' || pg_temp.asked('wait') || ' ' || pg_temp.waits('wait'),
		  '1:EXPIRED none not waiting', '... without asking');
SELECT is(pg_temp.waits('odd') || ', ' || pg_temp.waits('err'),
		  'asks=2 last=an unknown answer "Confirm", asks=2 last=an error: payment service down',
		  'the orders asked once are asked again: a failed ask counts as an ask');
SELECT pg_temp.due('odd'), pg_temp.due('err') \g /dev/null
TRUNCATE inv_test_rec.asked;
SELECT is(inventory.expire(), 2::bigint, 'asked twice, failed twice: both expired');
SELECT is(pg_temp.lines('odd') || ' ' || pg_temp.lines('err') || ' ' || pg_temp.asked('odd'),
		  '1:EXPIRED 1:EXPIRED none', '... without asking');
SELECT is(pg_temp.units('A'), 'on_hand=95 reserved=1 available=94', 'A: their 3 units released');
RESET inventory.reconcile_max_asks;

------------------------------------------------------------------------------
-- reconcile_timeout: a failed ask
------------------------------------------------------------------------------
SELECT pg_temp.order_answered('slow', 'A', 1, 'slow') \g /dev/null
SET inventory.reconcile_timeout = '200ms';
SELECT is(inventory.expire(), 0::bigint, 'an ask that outlasts inventory.reconcile_timeout settles nothing');
RESET inventory.reconcile_timeout;
SELECT is(pg_temp.lines('slow'), '1:PENDING', '... the order is PENDING (its answer confirm never came)');
SELECT is(pg_temp.waits('slow'), 'asks=1 last=no answer within inventory.reconcile_timeout (200 ms)',
		  '... and waits, a failed ask');
SELECT is((SELECT count(*) FROM inv_test_rec.asked WHERE order_id = pg_temp.n('slow')), 0::bigint,
		  '... what its ask wrote is undone');

------------------------------------------------------------------------------
-- reconcile_max_wait: expired without asking
------------------------------------------------------------------------------
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES (pg_temp.n('ancient'), 1, 'reserve', pg_temp.n('A'), 2, now() - interval '2 hours');
INSERT INTO inv_test_rec.answers VALUES (pg_temp.n('ancient'), 'confirm');
TRUNCATE inv_test_rec.asked;
SELECT is(inventory.expire(), 1::bigint, 'an order overdue for longer than reconcile_max_wait (1 h) is expired');
SELECT is(pg_temp.lines('ancient') || ' ' || pg_temp.asked('ancient'), '1:EXPIRED none', '... without asking');
SELECT pg_temp.order_answered('minute', 'A', 1, 'confirm') \g /dev/null
SET inventory.reconcile_max_wait = '30s';
SELECT is(inventory.expire(), 1::bigint, 'max_wait 30 s: an order a minute overdue is expired');
RESET inventory.reconcile_max_wait;
SELECT is(pg_temp.lines('minute') || ' ' || pg_temp.asked('minute'), '1:EXPIRED none', '... without asking');
SELECT is(pg_temp.units('A'), 'on_hand=95 reserved=2 available=93', 'A: their units released (2 held: wcart, slow)');
SELECT is_empty($$SELECT * FROM inventory.verify()$$, 'inventory.verify() is empty');

------------------------------------------------------------------------------
-- how many a round asks
------------------------------------------------------------------------------
SELECT pg_temp.order_answered('few-' || i, 'C', 1, 'expire') FROM generate_series(1, 3) i \g /dev/null
SELECT is(inventory.expire(2), 2::bigint, 'expire(2) asks about 2 orders');
SELECT is(inventory.expire(), 1::bigint, '... the next round about the third');
SELECT pg_temp.order_answered('many-' || i, 'C', 1, 'confirm') FROM generate_series(1, 64) i \g /dev/null
TRUNCATE inv_test_rec.asked;
SELECT is(inventory.expire(), 63::bigint, 'a round asks about 63 orders at most');
SELECT is((SELECT count(*) FROM inv_test_rec.asked), 63::bigint, '... 63 asks');
SELECT is(inventory.expire(), 1::bigint, '... the next round about the last one');
SELECT is(pg_temp.units('C'), 'on_hand=36 reserved=0 available=36', 'C: 64 units confirmed, 3 released');

------------------------------------------------------------------------------
-- the setter's right to the function, checked at every ask
------------------------------------------------------------------------------
SELECT pg_temp.order_answered('revoked', 'A', 1, 'confirm') \g /dev/null
REVOKE inv_test_rec_owner FROM inv_test_rec_admin;
SELECT is(inventory.expire(), 0::bigint, 'the setter lost the privileges of the function''s owner: nothing settles');
SELECT matches(pg_temp.waits('revoked'),
			   '^asks=1 last=an error: role "inv_test_rec_admin" does not have the privileges of the owner of inv_test_rec\.ask',
			   '... a failed ask that says why; the order waits');
GRANT inv_test_rec_owner TO inv_test_rec_admin;
SELECT pg_temp.due('revoked') \g /dev/null
SELECT is(inventory.expire(), 1::bigint, 'the privileges back: the order is asked and settled');
SELECT is(pg_temp.lines('revoked'), '1:CONFIRMED', '... CONFIRMED');

------------------------------------------------------------------------------
-- a late confirm
------------------------------------------------------------------------------
SELECT pg_temp.line('late', 1, 'A', 2) \g /dev/null
SELECT pg_temp.line('late-cart', 1, 'B', 1), pg_temp.line('late-cart', 2, 'B', 1) \g /dev/null
SELECT pg_temp.line('late-dml', 1, 'A', 1) \g /dev/null
SET ROLE inv_test_rec_app;
SELECT is(pg_temp.res_id(inventory.confirm(pg_temp.n('late'))), 'ok=true status=ok sku=A qty=2 state=CONFIRMED',
		  'with a reconciler, the application''s late confirm is ok');
SELECT is(pg_temp.res_id(inventory.confirm(pg_temp.n('late'))), 'ok=true status=duplicate sku=A qty=2 state=CONFIRMED',
		  '... and its replay duplicate');
SELECT is((SELECT string_agg(status || '/' || state, ' ') FROM inventory.confirm_order(pg_temp.n('late-cart'))),
		  'ok/CONFIRMED ok/CONFIRMED', 'a late confirm_order confirms every line');
RESET ROLE;
SELECT throws_ok(format($$UPDATE inventory.ledger SET state = 'CONFIRMED' WHERE order_id = %L$$, pg_temp.n('late-dml')),
				 '23514', NULL, 'direct DML still may not confirm past expires_at (23514)');
SELECT is(pg_temp.units('A'), 'on_hand=92 reserved=3 available=89', 'A: the late confirm''s 2 units confirmed');
SELECT is(pg_temp.units('B'), 'on_hand=95 reserved=4 available=91', 'B: the late cart''s 2 units confirmed');
SELECT is_empty($$SELECT * FROM inventory.verify()$$, 'inventory.verify() is empty');

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
-- the settings are a superuser's
------------------------------------------------------------------------------
SET ROLE inv_test_rec_admin;
SELECT throws_ok($$SET inventory.reconcile_timeout = '1h'$$, '42501', NULL, 'an administrator may not set reconcile_timeout');
SELECT throws_ok($$SET inventory.reconcile_retry = '1s'$$, '42501', NULL, '... nor reconcile_retry');
SELECT throws_ok($$SET inventory.reconcile_max_asks = 1000000$$, '42501', NULL, '... nor reconcile_max_asks');
SELECT throws_ok($$SET inventory.reconcile_max_wait = '1d'$$, '42501', NULL, '... nor reconcile_max_wait');
SELECT throws_ok($$SET inventory.reconcile_budget = '1h'$$, '42501', NULL, '... nor reconcile_budget');
RESET ROLE;

------------------------------------------------------------------------------
-- removing it: set_reconciler(NULL), DROP FUNCTION ... CASCADE
------------------------------------------------------------------------------
SET ROLE inv_test_rec_admin;
SELECT lives_ok($$SELECT inventory.set_reconciler(NULL)$$, 'set_reconciler(NULL) removes it');
RESET ROLE;
SELECT is(to_regprocedure('inventory.reconciler(text, integer)'), NULL, '... inventory.reconciler is gone');
SET ROLE inv_test_rec_admin;
SELECT lives_ok($$SELECT inventory.set_reconciler(NULL)$$, '... and removing none is not an error');
SELECT lives_ok($$SELECT inventory.set_reconciler('inv_test_rec.ask(text, integer)')$$, 'set again');
RESET ROLE;

SELECT throws_ok($$DROP FUNCTION inv_test_rec.ask(text, integer)$$, '2BP01', NULL,
				 'the function cannot be dropped while it is the reconciler (2BP01)');
SELECT isnt(to_regprocedure('inventory.reconciler(text, integer)'), NULL, '... the setting is still there');
SELECT lives_ok($$DROP FUNCTION inv_test_rec.ask(text, integer) CASCADE$$, 'DROP FUNCTION ... CASCADE');
SELECT is(to_regprocedure('inventory.reconciler(text, integer)'), NULL, '... drops the setting with it');

SELECT pg_temp.order_answered('unasked', 'A', 1, 'confirm') \g /dev/null
-- overdue and PENDING: probe, wcart (2 lines), slow, late-dml, err57014, unasked
SELECT is(inventory.expire(), 7::bigint, 'without a reconciler the expiry expires every overdue reservation');
SELECT is(pg_temp.lines('unasked') || ' ' || pg_temp.lines('wcart') || ' ' || pg_temp.lines('probe') || ' ' || pg_temp.lines('slow'),
		  '1:EXPIRED 1:EXPIRED 2:EXPIRED 1:EXPIRED 1:EXPIRED', '... the waiting ones too, without asking');
SELECT pg_temp.line('late-none', 1, 'A', 1) \g /dev/null
SET ROLE inv_test_rec_app;
SELECT is(pg_temp.res_id(inventory.confirm(pg_temp.n('late-none'))), 'ok=false status=expired sku=A qty=1 state=EXPIRED',
		  'without a reconciler, a late confirm is told expired');
RESET ROLE;
SELECT is(pg_temp.units('A'), 'on_hand=92 reserved=0 available=92', 'A: nothing held, nothing sold twice');
SELECT is(pg_temp.units('B'), 'on_hand=95 reserved=1 available=94', 'B: only the cart''s line not due is held');
SELECT is_empty($$SELECT * FROM inventory.verify()$$, 'inventory.verify() is empty at the end');

SELECT * FROM finish();
ROLLBACK;

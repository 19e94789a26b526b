-- the reconciler: the expiry asks the application before it settles an
-- overdue order, and a late confirm is the application's answer too.  What
-- psql shows of it: why a function cannot be a reconciler (every rule's
-- message, detail and hint, at set and before an ask), the setting as a
-- function, the warnings of failed asks, the waits as
-- inventory.reconcile_waiting shows them (an answer or an error kept to
-- 200 bytes), who is refused what, and the dependency of the setting on
-- its function.  What each answer does, the asks, the counters, max_asks,
-- max_wait and the SQLSTATEs are test/pgtap/reconcile.sql's.  The shop's
-- role owns its schema and its reconciler; an administrator with that
-- role's rights sets it and runs the expiry; the application reserves.
-- Each connects as itself.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\set VERBOSITY default

CREATE ROLE regress_shop IN ROLE inventory_app;
CREATE ROLE regress_shop_admin LOGIN IN ROLE inventory_admin, regress_shop;
CREATE ROLE regress_shop_app LOGIN IN ROLE inventory_app;
CREATE ROLE regress_shop_monitor LOGIN IN ROLE inventory_monitor;
CREATE ROLE regress_other;
CREATE SCHEMA shop AUTHORIZATION regress_shop;
-- more than an application role has, so that the fence shows
GRANT SELECT, UPDATE ON inventory.ledger TO regress_shop;
GRANT EXECUTE ON FUNCTION inventory.cache_info() TO regress_shop;

-- the application's payments, and its answer from them
\c - regress_shop_admin
SET ROLE regress_shop;
CREATE TABLE shop.payments (order_id text PRIMARY KEY, state text NOT NULL);
CREATE FUNCTION shop.paid(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = pg_catalog, shop, pg_temp
	AS $$
DECLARE
	s text := (SELECT p.state FROM payments p WHERE p.order_id = paid.order_id);
BEGIN
	CASE s
		WHEN 'paid' THEN RETURN 'confirm';
		WHEN 'failed' THEN RETURN 'cancel';
		WHEN 'abandoned' THEN RETURN 'expire';
		WHEN 'pending' THEN RETURN 'wait';
		WHEN 'unknown' THEN RETURN NULL;
		WHEN 'odd' THEN RETURN 'Confirm';
		WHEN 'broken' THEN RETURN (1 / 0)::text;
		WHEN 'verbose' THEN RAISE EXCEPTION 'gateway said: %', repeat('é', 2000);
		WHEN 'slow' THEN PERFORM pg_sleep(10); RETURN 'confirm';
		WHEN 'stubborn' THEN
			BEGIN
				PERFORM pg_sleep(10);
			EXCEPTION WHEN query_canceled THEN
				RETURN 'confirm';
			END;
		WHEN 'sneaky-api' THEN PERFORM inventory.reserve('RCN-CUP', 1, 'rcn-sneaky'); RETURN 'confirm';
		WHEN 'sneaky-dml' THEN UPDATE inventory.ledger l SET state = 'CONFIRMED' WHERE l.order_id = paid.order_id; RETURN 'cancel';
		WHEN 'sneaky-read' THEN RETURN (SELECT pg_catalog.count(*)::text FROM inventory.ledger);
		WHEN 'sneaky-lock' THEN LOCK TABLE inventory.ledger IN ACCESS EXCLUSIVE MODE; RETURN 'confirm';
		WHEN 'sneaky-figures' THEN RETURN (SELECT c.entries::text FROM inventory.cache_info() c);
		ELSE RETURN 'expire';
	END CASE;
END
$$;
RESET ROLE;
SELECT ok FROM inventory.restock('RCN-CUP', 100, 'rcn-delivery');

-- what cannot be a reconciler
\c - postgres
CREATE FUNCTION shop.no_path(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql RETURN 'confirm';
CREATE FUNCTION shop.wrong_args(order_id text) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN 'confirm';
CREATE FUNCTION shop.wrong_result(order_id text, batch_id integer) RETURNS boolean
	LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN true;
CREATE FUNCTION shop.superusers(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN 'wait';
CREATE FUNCTION shop.catalog_later(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = shop, pg_catalog, pg_temp RETURN 'wait';
CREATE FUNCTION shop.user_path(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, "$user", pg_temp RETURN 'wait';
CREATE FUNCTION shop.no_such_schema(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, nowhere, pg_temp RETURN 'wait';
CREATE FUNCTION shop.temp_first(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp, shop RETURN 'wait';
CREATE FUNCTION shop.no_temp(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, shop RETURN 'wait';
CREATE FUNCTION shop.public_path(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, public, pg_temp RETURN 'wait';
ALTER FUNCTION shop.no_path(text, integer) OWNER TO regress_shop;
ALTER FUNCTION shop.wrong_args(text) OWNER TO regress_shop;
ALTER FUNCTION shop.wrong_result(text, integer) OWNER TO regress_shop;
ALTER FUNCTION shop.catalog_later(text, integer) OWNER TO regress_shop;
ALTER FUNCTION shop.user_path(text, integer) OWNER TO regress_shop;
ALTER FUNCTION shop.no_such_schema(text, integer) OWNER TO regress_shop;
ALTER FUNCTION shop.temp_first(text, integer) OWNER TO regress_shop;
ALTER FUNCTION shop.no_temp(text, integer) OWNER TO regress_shop;
ALTER FUNCTION shop.public_path(text, integer) OWNER TO regress_shop;
CREATE FUNCTION pg_temp.temporary(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN 'wait';
-- (the temporary schema's number, which varies, is taken out)
DO $$
BEGIN
	PERFORM inventory.set_reconciler('pg_temp.temporary(text, integer)');
EXCEPTION WHEN OTHERS THEN
	RAISE NOTICE '%: %', SQLSTATE,
		replace(SQLERRM, pg_my_temp_schema()::regnamespace::text, 'pg_temp');
END
$$;
-- a superuser's function, even for a superuser: whoever replaces it runs as one
SELECT inventory.set_reconciler('shop.superusers(text, integer)');
\c - regress_shop_admin
SELECT inventory.set_reconciler('shop.no_path(text, integer)');
SELECT inventory.set_reconciler('shop.wrong_args(text)');
SELECT inventory.set_reconciler('shop.wrong_result(text, integer)');
SELECT inventory.set_reconciler('shop.absent(text, integer)');
SELECT inventory.set_reconciler('shop.superusers(text, integer)');
SELECT inventory.set_reconciler('shop.catalog_later(text, integer)');
SELECT inventory.set_reconciler('shop.user_path(text, integer)');
SELECT inventory.set_reconciler('shop.no_such_schema(text, integer)');
SELECT inventory.set_reconciler('shop.temp_first(text, integer)');
SELECT inventory.set_reconciler('shop.no_temp(text, integer)');
-- public belongs to pg_database_owner, not to the function's owner
SELECT inventory.set_reconciler('shop.public_path(text, integer)');
-- a schema on the path where another role may create objects
\c - postgres
GRANT CREATE ON SCHEMA shop TO regress_other;
\c - regress_shop_admin
SELECT inventory.set_reconciler('shop.paid(text, integer)');
\c - postgres
REVOKE CREATE ON SCHEMA shop FROM regress_other;
-- and an object another role made there while it could, left behind: it
-- could stand in for the owner's, and its maker can replace it at will
CREATE FUNCTION shop.planted(o text) RETURNS text LANGUAGE sql RETURN 'confirm';
ALTER FUNCTION shop.planted(text) OWNER TO regress_other;
\c - regress_shop_admin
SELECT inventory.set_reconciler('shop.paid(text, integer)');
\c - postgres
DROP FUNCTION shop.planted(text);
-- timing beyond the server's caps, or not positive
\c - regress_shop_admin
SELECT inventory.set_reconciler('shop.paid(text, integer)', timeout => '1 minute');
SELECT inventory.set_reconciler('shop.paid(text, integer)', max_asks => 1000);
SELECT inventory.set_reconciler('shop.paid(text, integer)', max_wait => '2 days');
SELECT inventory.set_reconciler('shop.paid(text, integer)', retry => '-1 s');
SELECT inventory.set_reconciler('shop.paid(text, integer)', max_asks => 0);

-- the setting is the function inventory.reconciler, which calls it, with
-- the timing it was given as its defaults (NULL: the server's setting)
SELECT inventory.set_reconciler('shop.paid(text, integer)');
SELECT p.proname, pg_get_function_arguments(p.oid) AS args,
	   pg_get_function_result(p.oid) AS result, p.proowner::regrole AS owner,
	   obj_description(p.oid, 'pg_proc') LIKE '%shop.paid(text,integer)%' AS says_what
  FROM pg_proc p WHERE p.proname = 'reconciler';

-- overdue reservations, one order per answer; a cart of three lines
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
SELECT 'rcn-' || s, 1, 'reserve', 'RCN-CUP', 1, now() - interval '1 minute'
  FROM unnest(ARRAY['paid', 'failed', 'abandoned', 'pending', 'unknown', 'odd', 'broken',
					'verbose', 'sneaky-api', 'sneaky-dml', 'sneaky-read', 'sneaky-lock',
					'sneaky-figures']) s;
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
SELECT 'rcn-cart', b, 'reserve', 'RCN-CUP', b, now() - interval '2 minutes' FROM generate_series(2, 4) b;
INSERT INTO shop.payments
SELECT 'rcn-' || s, s FROM unnest(ARRAY['paid', 'failed', 'abandoned', 'pending', 'unknown', 'odd',
									  'broken', 'verbose', 'sneaky-api', 'sneaky-dml',
									  'sneaky-read', 'sneaky-lock', 'sneaky-figures']) s;
INSERT INTO shop.payments VALUES ('rcn-cart', 'paid');

-- one round asks each order once, as the function's owner, and settles as
-- it answered; the extension's API and tables are closed to it
\set VERBOSITY terse
SELECT inventory.expire();
\set VERBOSITY default
-- what waits, and why: an answer or an error kept to 200 bytes
SELECT order_id, lines, units, asks, next_ask > now() + interval '50 seconds' AS later,
	   left(last_answer, 90) AS last_answer, octet_length(last_answer) AS bytes
  FROM inventory.reconcile_waiting ORDER BY order_id;

-- its next ask due: asked again, and settled once the payment is known
\c - postgres
UPDATE inventory.reconcile_wait SET next_ask = now() - interval '1 second';
\c - regress_shop_admin
UPDATE shop.payments SET state = 'paid' WHERE order_id = 'rcn-pending';
UPDATE shop.payments SET state = 'failed' WHERE order_id = 'rcn-unknown';
\set VERBOSITY terse
SELECT inventory.expire();
\set VERBOSITY default

-- asked enough (max_asks of the setting): expired without asking
SELECT inventory.set_reconciler('shop.paid(text, integer)', max_asks => 2);
\c - postgres
UPDATE inventory.reconcile_wait SET next_ask = now() - interval '1 second';
\c - regress_shop_admin
SELECT inventory.expire();

-- an ask that overruns its timeout fails, also when it catches the cancel
-- and answers after it
SELECT inventory.set_reconciler('shop.paid(text, integer)', timeout => '100ms');
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES ('rcn-slow', 1, 'reserve', 'RCN-CUP', 1, now() - interval '1 minute'),
	   ('rcn-stubborn', 1, 'reserve', 'RCN-CUP', 1, now() - interval '1 minute');
INSERT INTO shop.payments VALUES ('rcn-slow', 'slow'), ('rcn-stubborn', 'stubborn');
\set VERBOSITY terse
SELECT inventory.expire();
\set VERBOSITY default

-- the rules are checked again before every ask: a function given to a
-- superuser (as pg_restore --no-owner does), or a schema on its path
-- opened to others, is not asked; the order waits
SELECT inventory.set_reconciler('shop.paid(text, integer)');
\c - postgres
UPDATE inventory.reconcile_wait SET next_ask = now() - interval '1 second';
ALTER FUNCTION shop.paid(text, integer) OWNER TO postgres;
\c - regress_shop_admin
SELECT inventory.expire();
\c - postgres
ALTER FUNCTION shop.paid(text, integer) OWNER TO regress_shop;
GRANT CREATE ON SCHEMA shop TO PUBLIC;
UPDATE inventory.reconcile_wait SET next_ask = now() - interval '1 second';
\c - regress_shop_admin
SELECT inventory.expire();
\c - postgres
REVOKE CREATE ON SCHEMA shop FROM PUBLIC;

-- a late confirm while a reconciler is set is the application's answer
-- (test/pgtap/reconcile.sql); the state machine's rule holds for everyone
-- else
\c - regress_shop_admin
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES ('rcn-dml', 1, 'reserve', 'RCN-CUP', 1, now() - interval '1 minute');
\set VERBOSITY terse
UPDATE inventory.ledger SET state = 'CONFIRMED' WHERE order_id = 'rcn-dml';
\set VERBOSITY default

-- who may read the waits: the administrator, not the monitor (order ids,
-- the application's errors); who may set it and stop the worker: the
-- administrator, not the application
\c - regress_shop_monitor
SELECT count(*) FROM inventory.reconcile_wait;
SELECT count(*) FROM inventory.reconcile_waiting;
SELECT inventory.stop_worker();
\c - regress_shop_app
SELECT inventory.set_reconciler(NULL);
SELECT inventory.stop_worker();

-- who may set it: an administrator with the rights of the function's owner
\c - postgres
CREATE FUNCTION shop.others(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN 'wait';
ALTER FUNCTION shop.others(text, integer) OWNER TO regress_other;
\c - regress_shop_admin
SELECT inventory.set_reconciler('shop.others(text, integer)');

-- the function cannot go while it is the reconciler; with CASCADE, the setting goes with it
SET ROLE regress_shop;
DROP FUNCTION shop.paid(text, integer);
DROP FUNCTION shop.paid(text, integer) CASCADE;
RESET ROLE;

-- no reconciler: the expiry settles what is left overdue without asking,
-- so that no later file finds it
SELECT inventory.expire() >= 1 AS expired;

\c - postgres
SET client_min_messages = warning;
DROP SCHEMA shop CASCADE;
RESET client_min_messages;
REVOKE ALL ON inventory.ledger FROM regress_shop;
REVOKE ALL ON FUNCTION inventory.cache_info() FROM regress_shop;
DROP ROLE regress_shop_admin, regress_shop_app, regress_shop_monitor, regress_shop, regress_other;

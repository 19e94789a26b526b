-- the reconciler: the expiry asks the application before it settles an
-- overdue order, and a late confirm is the application's answer too
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\set VERBOSITY default

SELECT ok FROM inventory.restock('RCN-CUP', 100, 'rcn-delivery');

-- the application's payments, and its answer from them; every ask logged
CREATE SCHEMA shop;
CREATE TABLE shop.payments (order_id text PRIMARY KEY, state text NOT NULL);
CREATE TABLE shop.asked (order_id text, batch_id integer);
CREATE FUNCTION shop.paid(order_id text, batch_id integer) RETURNS text
	LANGUAGE plpgsql SET search_path = shop, pg_catalog
	AS $$
DECLARE
	s text := (SELECT p.state FROM payments p WHERE p.order_id = paid.order_id);
BEGIN
	INSERT INTO asked VALUES (order_id, batch_id);
	CASE s
		WHEN 'paid' THEN RETURN 'confirm';
		WHEN 'failed' THEN RETURN 'cancel';
		WHEN 'abandoned' THEN RETURN 'expire';
		WHEN 'pending' THEN RETURN 'wait';
		WHEN 'unknown' THEN RETURN NULL;
		WHEN 'odd' THEN RETURN 'Confirm';
		WHEN 'broken' THEN RETURN (1 / 0)::text;
		WHEN 'slow' THEN PERFORM pg_sleep(10); RETURN 'confirm';
		WHEN 'sneaky-api' THEN PERFORM inventory.restock('RCN-CUP', 1000, 'rcn-sneaky'); RETURN 'confirm';
		WHEN 'sneaky-dml' THEN UPDATE inventory.ledger l SET state = 'CONFIRMED' WHERE l.order_id = paid.order_id; RETURN 'cancel';
		ELSE RETURN 'expire';
	END CASE;
END
$$;

-- what cannot be a reconciler
CREATE FUNCTION shop.no_path(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql RETURN 'confirm';
CREATE FUNCTION shop.wrong_args(order_id text) RETURNS text
	LANGUAGE sql SET search_path = shop RETURN 'confirm';
CREATE FUNCTION shop.wrong_result(order_id text, batch_id integer) RETURNS boolean
	LANGUAGE sql SET search_path = shop RETURN true;
SELECT inventory.set_reconciler('shop.no_path(text, integer)');
SELECT inventory.set_reconciler('shop.wrong_args(text)');
SELECT inventory.set_reconciler('shop.wrong_result(text, integer)');
SELECT inventory.set_reconciler('shop.absent(text, integer)');

-- the setting is the function inventory.reconciler, which calls it
SELECT inventory.set_reconciler('shop.paid(text, integer)');
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args,
	   pg_get_function_result(p.oid) AS result, p.proowner::regrole = current_user::regrole AS owned_by_setter,
	   obj_description(p.oid, 'pg_proc') LIKE '%shop.paid(text,integer)%' AS says_what
  FROM pg_proc p WHERE p.oid = 'inventory.reconciler(text, integer)'::regprocedure;
SELECT has_function_privilege('inventory_app', 'inventory.reconciler(text, integer)', 'EXECUTE') AS app_may_run_it;
-- setting it again replaces it
SELECT inventory.set_reconciler('shop.paid(text, integer)');
SELECT count(*) FROM pg_proc WHERE proname = 'reconciler';

-- overdue reservations, one order per answer; a cart of three lines
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
SELECT 'rcn-' || s, 1, 'reserve', 'RCN-CUP', 1, now() - interval '1 minute'
  FROM unnest(ARRAY['paid', 'failed', 'abandoned', 'pending', 'unknown', 'odd', 'broken',
					'sneaky-api', 'sneaky-dml']) s;
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
SELECT 'rcn-cart', b, 'reserve', 'RCN-CUP', b, now() - interval '2 minutes' FROM generate_series(2, 4) b;
INSERT INTO shop.payments
SELECT 'rcn-' || s, s FROM unnest(ARRAY['paid', 'failed', 'abandoned', 'pending', 'unknown', 'odd',
									  'broken', 'sneaky-api', 'sneaky-dml']) s;
INSERT INTO shop.payments VALUES ('rcn-cart', 'paid');
SELECT on_hand, reserved FROM inventory.stock WHERE sku = 'RCN-CUP';

-- one round asks each order once and settles as it answered
SELECT inventory.expire();
SELECT order_id, string_agg(batch_id || ':' || state, ' ' ORDER BY batch_id) AS lines
  FROM inventory.ledger WHERE order_id LIKE 'rcn-%' AND kind = 'reserve'
 GROUP BY order_id ORDER BY order_id;
-- the cart was asked about once, with its first line
SELECT order_id, batch_id, count(*) FROM shop.asked GROUP BY 1, 2 ORDER BY 1, 2;
-- what waits, and why
SELECT order_id, lines, units, asks, next_ask > now() AS later, last_answer
  FROM inventory.reconcile_waiting ORDER BY order_id;
SELECT on_hand, reserved FROM inventory.stock WHERE sku = 'RCN-CUP';
SELECT count(*) AS verify FROM inventory.verify();

-- a waiting order is not asked again before its next ask
TRUNCATE shop.asked;
SELECT inventory.expire();
SELECT count(*) AS asked FROM shop.asked;

-- its next ask due: asked again, and settled once the payment is known
UPDATE inventory.reconcile_wait SET next_ask = now() - interval '1 second';
UPDATE shop.payments SET state = 'paid' WHERE order_id = 'rcn-pending';
UPDATE shop.payments SET state = 'failed' WHERE order_id = 'rcn-unknown';
SELECT inventory.expire();
SELECT order_id, state FROM inventory.ledger WHERE order_id IN ('rcn-pending', 'rcn-unknown') ORDER BY 1;
SELECT order_id, asks FROM inventory.reconcile_wait ORDER BY 1;

-- asked enough: expired without asking
SET inventory.reconcile_max_asks = 2;
UPDATE inventory.reconcile_wait SET next_ask = now() - interval '1 second';
TRUNCATE shop.asked;
SELECT inventory.expire();
SELECT count(*) AS asked FROM shop.asked;
SELECT order_id, state FROM inventory.ledger WHERE order_id IN ('rcn-odd', 'rcn-broken', 'rcn-sneaky-api', 'rcn-sneaky-dml') ORDER BY 1;
SELECT count(*) AS waiting FROM inventory.reconcile_wait;
RESET inventory.reconcile_max_asks;

-- overdue for longer than reconcile_max_wait: expired without asking
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES ('rcn-ancient', 1, 'reserve', 'RCN-CUP', 1, now() - interval '2 hours');
INSERT INTO shop.payments VALUES ('rcn-ancient', 'paid');
TRUNCATE shop.asked;
SELECT inventory.expire();
SELECT count(*) AS asked FROM shop.asked;
SELECT state FROM inventory.ledger WHERE order_id = 'rcn-ancient';

-- an ask that takes longer than reconcile_timeout fails
SET inventory.reconcile_timeout = '100ms';
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES ('rcn-slow', 1, 'reserve', 'RCN-CUP', 1, now() - interval '1 minute');
INSERT INTO shop.payments VALUES ('rcn-slow', 'slow');
SELECT inventory.expire();
SELECT state FROM inventory.ledger WHERE order_id = 'rcn-slow';
SELECT last_answer FROM inventory.reconcile_wait WHERE order_id = 'rcn-slow';
RESET inventory.reconcile_timeout;

-- a late confirm while a reconciler is set: the application's answer
SELECT ok FROM inventory.reserve('RCN-CUP', 2, 'rcn-late');
UPDATE inventory.ledger SET expires_at = now() - interval '1 second' WHERE order_id = 'rcn-late';
SELECT ok, status, state FROM inventory.confirm('rcn-late');
SELECT ok, status, state FROM inventory.confirm('rcn-late');
-- the state machine's rule holds for everyone else
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES ('rcn-dml', 1, 'reserve', 'RCN-CUP', 1, now() - interval '1 minute');
\set VERBOSITY terse
UPDATE inventory.ledger SET state = 'CONFIRMED' WHERE order_id = 'rcn-dml';
\set VERBOSITY default

-- the function cannot go while it is the reconciler; with CASCADE, the setting goes with it
DROP FUNCTION shop.paid(text, integer);
DROP FUNCTION shop.paid(text, integer) CASCADE;
SELECT count(*) FROM pg_proc WHERE proname = 'reconciler';

-- no reconciler: a late confirm is told expired, the expiry asks nobody
SELECT ok FROM inventory.reserve('RCN-CUP', 1, 'rcn-late-2');
UPDATE inventory.ledger SET expires_at = now() - interval '1 second' WHERE order_id = 'rcn-late-2';
SELECT ok, status, state FROM inventory.confirm('rcn-late-2');
SELECT inventory.expire() >= 1 AS expired;
SELECT state FROM inventory.ledger WHERE order_id = 'rcn-dml';

-- who may set it: an administrator with the rights of the function's owner
CREATE ROLE regress_reconcile_admin IN ROLE inventory_admin;
CREATE ROLE regress_reconcile_other;
GRANT USAGE ON SCHEMA shop TO regress_reconcile_admin;
CREATE FUNCTION shop.others(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = shop RETURN 'wait';
ALTER FUNCTION shop.others(text, integer) OWNER TO regress_reconcile_other;
CREATE FUNCTION shop.superusers(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = shop RETURN 'wait';
CREATE FUNCTION shop.admins(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql SET search_path = shop RETURN 'wait';
ALTER FUNCTION shop.admins(text, integer) OWNER TO regress_reconcile_admin;
SET ROLE regress_reconcile_admin;
SELECT inventory.set_reconciler('shop.others(text, integer)');
SELECT inventory.set_reconciler('shop.superusers(text, integer)');
SELECT inventory.set_reconciler('shop.admins(text, integer)');
SELECT p.proowner::regrole FROM pg_proc p WHERE p.oid = 'inventory.reconciler(text, integer)'::regprocedure;
SELECT inventory.set_reconciler(NULL);
RESET ROLE;
SELECT count(*) FROM pg_proc WHERE proname = 'reconciler';
-- not for the application's own role
SET ROLE inventory_app;
SELECT inventory.set_reconciler(NULL);
RESET ROLE;

DROP FUNCTION shop.admins(text, integer), shop.others(text, integer);
SET client_min_messages = warning;
DROP SCHEMA shop CASCADE;
RESET client_min_messages;
DROP ROLE regress_reconcile_admin, regress_reconcile_other;

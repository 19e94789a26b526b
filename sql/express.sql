-- reserve_now: the express lane, as psql shows it.  The same ledger row
-- and key space as reserve() (a key reused: the error reserve() raises,
-- with its detail and hint), a commit of its own, the refusals of a call
-- that cannot commit on its own and the errors of misuse, with their
-- messages, details, hints and SQLSTATEs; a replay at a buyer's limit.
-- The statuses of refusals decided in shared memory and by the writer,
-- what they write (nothing), and the writer's figures are
-- test/pgtap/express.sql's.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
-- errors show their message, detail and hint; \echo shows their SQLSTATE
\set VERBOSITY default
\set SHOW_CONTEXT never
\ir test/roles.sql

\c - shop_admin
SELECT ok, status FROM inventory.restock('EX-TEE', 5, 'ex-in-1');
SELECT ok, status FROM inventory.restock('EX-CAP', 10, 'ex-in-2');
SELECT ok, status FROM inventory.restock('EX-LTD', 10, 'ex-in-3');
SELECT inventory.set_rules('EX-LTD', max_per_buyer => 2);
SELECT ok, status FROM inventory.restock('EX-SOON', 10, 'ex-in-4');

\echo '== reservations, and a replay at a buyer''s limit'
\c - shop_app
SELECT inventory.reserve_now('EX-TEE', 2, 'ex-1');
-- another batch of the same order is another key
SELECT inventory.reserve_now('EX-TEE', 1, 'ex-1', batch_id => 2);
-- exactly what is left
SELECT inventory.reserve_now('EX-TEE', 2, 'ex-3');
-- ann takes her limit of 2 units, in two orders
SELECT inventory.reserve_now('EX-LTD', 1, 'ex-8', buyer_id => 'ann');
SELECT inventory.reserve_now('EX-LTD', 1, 'ex-10', buyer_id => 'ann');
-- a replay at the limit is a duplicate; another buyer has a limit of their own
SELECT inventory.reserve_now('EX-LTD', 1, 'ex-8', buyer_id => 'ann');
SELECT inventory.reserve_now('EX-LTD', 2, 'ex-11', buyer_id => 'bob');
SELECT sku, on_hand, reserved, available FROM inventory.stock
 WHERE sku LIKE 'EX-%' ORDER BY sku;

\echo '== a key reused for another movement raises what reserve() raises'
-- (LAST_ERROR_SQLSTATE and LAST_ERROR_MESSAGE: psql's, of the last error)
-- another quantity
SELECT inventory.reserve_now('EX-TEE', 1, 'ex-1');
\set e_now :LAST_ERROR_SQLSTATE ' ' :LAST_ERROR_MESSAGE
SELECT status FROM inventory.reserve('EX-TEE', 1, 'ex-1');
\set e_reserve :LAST_ERROR_SQLSTATE ' ' :LAST_ERROR_MESSAGE
\echo :e_now
SELECT :'e_now' = :'e_reserve' AS same_error;
-- another quantity, the SKU sold out
SELECT inventory.reserve_now('EX-TEE', 1, 'ex-3');
\set e_now :LAST_ERROR_SQLSTATE ' ' :LAST_ERROR_MESSAGE
SELECT status FROM inventory.reserve('EX-TEE', 1, 'ex-3');
\set e_reserve :LAST_ERROR_SQLSTATE ' ' :LAST_ERROR_MESSAGE
SELECT :'e_now' = :'e_reserve' AS same_error;
-- another SKU
SELECT inventory.reserve_now('EX-CAP', 2, 'ex-1');
\set e_now :LAST_ERROR_SQLSTATE ' ' :LAST_ERROR_MESSAGE
SELECT status FROM inventory.reserve('EX-CAP', 2, 'ex-1');
\set e_reserve :LAST_ERROR_SQLSTATE ' ' :LAST_ERROR_MESSAGE
SELECT :'e_now' = :'e_reserve' AS same_error;
-- another buyer
SELECT inventory.reserve_now('EX-LTD', 1, 'ex-8', buyer_id => 'bob');
\set e_now :LAST_ERROR_SQLSTATE ' ' :LAST_ERROR_MESSAGE
SELECT status FROM inventory.reserve('EX-LTD', 1, 'ex-8', buyer_id => 'bob');
\set e_reserve :LAST_ERROR_SQLSTATE ' ' :LAST_ERROR_MESSAGE
SELECT :'e_now' = :'e_reserve' AS same_error;
-- the key of a restock
SELECT inventory.reserve_now('EX-TEE', 5, 'ex-in-1');
\set e_now :LAST_ERROR_SQLSTATE ' ' :LAST_ERROR_MESSAGE
SELECT status FROM inventory.reserve('EX-TEE', 5, 'ex-in-1');
\set e_reserve :LAST_ERROR_SQLSTATE ' ' :LAST_ERROR_MESSAGE
SELECT :'e_now' = :'e_reserve' AS same_error;
-- nothing was written by any of them
\c - shop_admin
SELECT order_id, batch_id, sku, qty, buyer_id FROM inventory.ledger
 WHERE order_id IN ('ex-1', 'ex-3', 'ex-8', 'ex-in-1') ORDER BY order_id, batch_id;

\echo '== the row: a reservation like reserve()''s, made at the statement''s time'
\c - shop_app
SELECT statement_timestamp() AS t1, inventory.reserve_now('EX-CAP', 1, 'ex-20', ttl => '90 seconds', buyer_id => 'cy') AS s1 \gset
\echo :s1
\c - shop_admin
SELECT kind, sku, qty, state, buyer_id, counted, settled_at, folded,
       created_at = :'t1'::timestamptz AS made_at_statement_time,
       expires_at = created_at + interval '90 seconds' AS expires_after_ttl
  FROM inventory.ledger WHERE order_id = 'ex-20' AND batch_id = 1;
-- no ttl: inventory.default_ttl, the caller's setting
\c - shop_app
SET inventory.default_ttl = '2min';
SELECT statement_timestamp() AS t2, inventory.reserve_now('EX-CAP', 1, 'ex-21') AS s2 \gset
RESET inventory.default_ttl;
\echo :s2
\c - shop_admin
SELECT kind, qty, state, buyer_id IS NULL AS no_buyer,
       created_at = :'t2'::timestamptz AS made_at_statement_time,
       expires_at = created_at + interval '2 minutes' AS expires_after_default_ttl
  FROM inventory.ledger WHERE order_id = 'ex-21';

\echo '== confirm, cancel and extend work on it'
\c - shop_app
SELECT ok, status, qty, state FROM inventory.confirm('ex-20');
SELECT ok, status, qty, state FROM inventory.extend('ex-21', 1, '1 hour');
SELECT ok, status, qty, state FROM inventory.cancel('ex-21');
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-20', buyer_id => 'cy');
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-21');
SELECT sku, on_hand, reserved, available FROM inventory.stock WHERE sku = 'EX-CAP';

\echo '== one key space with reserve()'
-- reserve() of a reserve_now() key: a duplicate, with the row's state
SELECT inventory.reserve_now('EX-CAP', 2, 'ex-30');
SELECT ok, status, qty, state FROM inventory.reserve('EX-CAP', 2, 'ex-30');
-- reserve_now() of a reserve() key: a duplicate
SELECT ok, status, qty, state FROM inventory.reserve('EX-CAP', 2, 'ex-31');
SELECT inventory.reserve_now('EX-CAP', 2, 'ex-31');
\c - shop_admin
SELECT order_id, count(*) FROM inventory.ledger WHERE order_id IN ('ex-30', 'ex-31')
 GROUP BY order_id ORDER BY order_id;
-- a replay answers duplicate whatever the refusal a new key would get
SELECT inventory.set_rules('EX-CAP', sale_ends => now());
\c - shop_app
SELECT inventory.reserve_now('EX-CAP', 2, 'ex-30');
SELECT inventory.reserve_now('EX-CAP', 2, 'ex-32');
\c - shop_admin
SELECT inventory.set_rules('EX-CAP');

\echo '== it commits on its own: only where that is what the caller gets'
-- inside a transaction block: refused, with a hint
\c - shop_app
BEGIN;
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-40');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- even as the first statement of a transaction block that has done nothing else
START TRANSACTION ISOLATION LEVEL READ COMMITTED;
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-40');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- a query string of several statements is a transaction block too
SELECT 1 AS first \; SELECT inventory.reserve_now('EX-CAP', 1, 'ex-40');
\echo :LAST_ERROR_SQLSTATE
-- after a write in the same statement: refused, and the write rolled back
-- (a restock and a reserve_now in one statement: an administrator's, who
-- may call both)
\c - shop_admin
SELECT (inventory.restock('EX-CAP', 1, 'ex-in-5')).status, inventory.reserve_now('EX-CAP', 1, 'ex-40');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM inventory.ledger WHERE order_id IN ('ex-in-5', 'ex-40');
-- a write after it in the same statement is the caller's own
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-41'), (inventory.restock('EX-CAP', 1, 'ex-in-6')).status;
SELECT order_id, kind, qty, state FROM inventory.ledger
 WHERE order_id IN ('ex-41', 'ex-in-6') ORDER BY order_id;
-- the reservation stays when the statement fails after it answered
\c - shop_app
SELECT s, 1 / (length(s) - 2) AS fails
  FROM (SELECT inventory.reserve_now('EX-CAP', 1, 'ex-42') AS s OFFSET 0) q;
\echo :LAST_ERROR_SQLSTATE
\c - shop_admin
SELECT order_id, kind, qty, state FROM inventory.ledger WHERE order_id = 'ex-42';
-- read-only: refused as a write (25006), whichever way the transaction is read-only
\c - shop_app
SET default_transaction_read_only = on;
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-43');
\echo :LAST_ERROR_SQLSTATE
RESET default_transaction_read_only;
SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY;
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-43');
\echo :LAST_ERROR_SQLSTATE
SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE;
BEGIN;
SET TRANSACTION READ ONLY;
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-43');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
-- a block with an exception handler runs in a subtransaction: refused too
DO $$
BEGIN
	PERFORM inventory.reserve_now('EX-CAP', 1, 'ex-43');
EXCEPTION WHEN division_by_zero THEN
	NULL;
END $$;
\echo :LAST_ERROR_SQLSTATE
-- a DO block or a function called in autocommit is not a transaction block
DO $$
BEGIN
	IF inventory.reserve_now('EX-CAP', 1, 'ex-44') <> 'ok' THEN
		RAISE EXCEPTION 'not ok';
	END IF;
END $$;
CREATE FUNCTION pg_temp.reserve_one(o text) RETURNS text LANGUAGE sql
AS $$ SELECT inventory.reserve_now('EX-CAP', 1, o) $$;
SELECT pg_temp.reserve_one('ex-45');
\c - shop_admin
SELECT order_id, kind, qty, state FROM inventory.ledger
 WHERE order_id IN ('ex-40', 'ex-43', 'ex-44', 'ex-45') ORDER BY order_id;
SELECT sku, on_hand, reserved, available FROM inventory.stock WHERE sku = 'EX-CAP';

\echo '== misuse: the errors of reserve()'
\c - shop_app
SELECT inventory.reserve_now(NULL, 1, 'ex-50');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.reserve_now('EX-CAP', NULL, 'ex-50');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.reserve_now('EX-CAP', 1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-50', batch_id => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.reserve_now('EX-CAP', 0, 'ex-50');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-50', ttl => '-1 second');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.reserve_now('EX-CAP', 1, '');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.reserve_now(repeat('s', 64), 1, 'ex-50');
\echo :LAST_ERROR_SQLSTATE
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-50', buyer_id => '');
\echo :LAST_ERROR_SQLSTATE
-- NULL ttl and buyer_id are the defaults
SELECT inventory.reserve_now('EX-CAP', 1, 'ex-51', ttl => NULL, buyer_id => NULL);
\c - shop_admin
SELECT count(*) FROM inventory.ledger WHERE order_id = 'ex-50';

\c - shop_monitor
SELECT sku, on_hand, reserved, available FROM inventory.stock
 WHERE sku LIKE 'EX-%' ORDER BY sku;
SELECT * FROM inventory.verify();

-- leave nothing to fold for the tests that count folds
\c - shop_admin
SELECT inventory.fold() > 0 AS folded;

-- rollback leaves no trace: transactions, savepoints, exception blocks
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

\c - shop_admin
SELECT ok FROM inventory.restock('B-HAT', 3, 'b-delivery');

-- a rolled-back transaction returns its holds
\c - shop_app
BEGIN;
SELECT ok, status, available FROM inventory.reserve('B-HAT', 2, 'b-1');
SELECT inventory.available('B-HAT');
ROLLBACK;
SELECT inventory.available('B-HAT');
\c - shop_admin
SELECT count(*) FROM inventory.ledger WHERE order_id = 'b-1';

-- a rolled-back savepoint returns its holds at once (reserves and a
-- restock in one transaction: an administrator's, who may call both)
BEGIN;
SELECT ok, status, available FROM inventory.reserve('B-HAT', 1, 'b-2');
SAVEPOINT s1;
SELECT ok, status, available FROM inventory.reserve('B-HAT', 2, 'b-3');
SAVEPOINT s2;
SELECT ok, status, available FROM inventory.restock('B-HAT', 10, 'b-4');
ROLLBACK TO s2;
SELECT inventory.available('B-HAT');
ROLLBACK TO s1;
SELECT inventory.available('B-HAT');
-- the key of the rolled-back reserve is free again
SELECT ok, status, available FROM inventory.reserve('B-HAT', 2, 'b-3');
RELEASE SAVEPOINT s1;
COMMIT;
SELECT order_id, state FROM inventory.ledger WHERE sku = 'B-HAT' AND kind = 'reserve'
 ORDER BY order_id;
SELECT * FROM inventory.stock WHERE sku = 'B-HAT';

-- a PL/pgSQL exception block is a savepoint too
SELECT ok FROM inventory.restock('B-HAT', 5, 'b-delivery-2');
\c - shop_app
DO $$
DECLARE
	r inventory.result;
BEGIN
	BEGIN
		SELECT * INTO r FROM inventory.reserve('B-HAT', 4, 'b-5');
		RAISE NOTICE 'inside: % %, available %', r.ok, r.status, inventory.available('B-HAT');
		RAISE EXCEPTION 'payment service down';
	EXCEPTION WHEN raise_exception THEN
		RAISE NOTICE 'after the error: available %', inventory.available('B-HAT');
	END;
END
$$;
\c - shop_admin
SELECT count(*) FROM inventory.ledger WHERE order_id = 'b-5';

-- a confirm and a cancel rolled back leave the reservation PENDING
\c - shop_app
SELECT ok FROM inventory.reserve('B-HAT', 1, 'b-6');
BEGIN;
SELECT ok, status, state FROM inventory.confirm('b-6');
ROLLBACK;
BEGIN;
SAVEPOINT s;
SELECT ok, status, state FROM inventory.cancel('b-6');
ROLLBACK TO s;
COMMIT;
\c - shop_admin
SELECT state FROM inventory.ledger WHERE order_id = 'b-6';

-- nested savepoints released into their parents, then committed
\c - shop_app
BEGIN;
SAVEPOINT a;
SELECT ok FROM inventory.reserve('B-HAT', 1, 'b-7');
SAVEPOINT b;
SELECT ok FROM inventory.confirm('b-7');
RELEASE b;
RELEASE a;
COMMIT;
\c - shop_admin
SELECT state FROM inventory.ledger WHERE order_id = 'b-7';

-- PREPARE TRANSACTION is refused once inventory was touched
\c - shop_app
BEGIN;
SELECT ok FROM inventory.reserve('B-HAT', 1, 'b-8');
PREPARE TRANSACTION 'b-prepared';
\c - shop_admin
SELECT count(*) FROM inventory.ledger WHERE order_id = 'b-8';
SELECT * FROM pg_prepared_xacts;
-- (a transaction that did not touch inventory can still be prepared)
BEGIN;
SELECT count(*) FROM inventory.ledger WHERE order_id = 'b-8';
PREPARE TRANSACTION 'b-untouched';
COMMIT PREPARED 'b-untouched';

\c - shop_monitor
SELECT * FROM inventory.stock WHERE sku = 'B-HAT';
SELECT sku, on_hand, reserved, holds, available, in_flight FROM inventory.sku_stats
 WHERE sku = 'B-HAT';
SELECT * FROM inventory.verify();

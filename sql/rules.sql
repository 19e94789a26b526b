-- rules: a per-buyer limit across orders and a sale window, per SKU, as
-- psql shows them: the errors of set_rules(), of the table's checks and of
-- reservations written by hand, with their details and hints; a buyer's
-- units in the ledger; inventory.stock; and what verify() shows of rules
-- changed behind the trigger's back.  Also a lowered limit, a closed
-- window's reservations settled, and a change not in force in its own
-- transaction.  The statuses of reserve(), the errors' SQLSTATEs and the
-- rows a refusal leaves are test/pgtap/rules.sql's.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

\c - shop_admin
SELECT ok, status FROM inventory.restock('RU-TEE', 10, 'l-in-1');
SELECT ok, status FROM inventory.restock('RU-CAP', 10, 'l-in-2');

SELECT inventory.set_rules('RU-TEE', max_per_buyer => 2);

\c - shop_app
-- a buyer's units count across orders, PENDING and CONFIRMED alike
SELECT ok, status FROM inventory.reserve('RU-TEE', 1, 'l-ann-1', buyer_id => 'ann');
SELECT ok, status FROM inventory.confirm('l-ann-1');
SELECT ok, status FROM inventory.reserve('RU-TEE', 1, 'l-ann-2', buyer_id => 'ann');
-- another buyer has a limit of their own
SELECT ok, status FROM inventory.reserve('RU-TEE', 2, 'l-bob-1', buyer_id => 'bob');

-- the same key for another buyer, or for none, is a reused key
SELECT ok, status FROM inventory.reserve('RU-TEE', 1, 'l-ann-2', buyer_id => 'bob');
SELECT ok, status FROM inventory.reserve('RU-TEE', 1, 'l-ann-2');

-- cancelled and expired units no longer count
SELECT ok, status FROM inventory.cancel('l-ann-2');
SELECT ok, status FROM inventory.reserve('RU-TEE', 1, 'l-ann-4', buyer_id => 'ann', ttl => '1 millisecond');
SELECT pg_sleep(0.01);
\c - shop_admin
SELECT inventory.expire();
\c - shop_app
SELECT ok, status FROM inventory.reserve('RU-TEE', 1, 'l-ann-5', buyer_id => 'ann');

-- folding moves the stock into inventory.sku; the buyer's units stay in
-- the ledger, where they are counted
\c - shop_admin
SELECT inventory.fold() > 0 AS folded;
SELECT buyer_id, sum(qty) AS units FROM inventory.ledger
 WHERE sku = 'RU-TEE' AND state IN ('PENDING', 'CONFIRMED') GROUP BY buyer_id ORDER BY buyer_id;

-- a lower limit keeps what buyers hold and stops new units
SELECT inventory.set_rules('RU-TEE', max_per_buyer => 1);
\c - shop_app
SELECT ok, status FROM inventory.reserve('RU-TEE', 1, 'l-bob-2', buyer_id => 'bob');
SELECT ok, status FROM inventory.reserve('RU-TEE', 1, 'l-dee-1', buyer_id => 'dee');

-- a confirmed reservation that counts towards a limit stays in the ledger,
-- even folded
\c - shop_admin
SELECT inventory.fold() >= 0 AS folded;
DELETE FROM inventory.ledger WHERE order_id = 'l-ann-1';

-- without the limit, anyone may buy, and a buyer is still recorded
SELECT inventory.set_rules('RU-TEE');
\c - shop_app
SELECT ok, status FROM inventory.reserve('RU-TEE', 1, 'l-anon');
SELECT ok, status FROM inventory.reserve('RU-TEE', 1, 'l-eve-1', buyer_id => 'eve');
\c - shop_admin
SELECT buyer_id FROM inventory.ledger WHERE order_id = 'l-eve-1';

-- the sale window [sale_starts, sale_ends)
SELECT inventory.set_rules('RU-CAP', sale_starts => now() - interval '1 hour',
                           sale_ends => now() + interval '1 hour');
\c - shop_app
SELECT ok, status FROM inventory.reserve('RU-CAP', 1, 'l-in-window', ttl => '1 day');
SELECT ok, status FROM inventory.reserve('RU-CAP', 1, 'l-in-window-2', ttl => '1 day');
-- the window closes: the reservations made inside it are still
-- extended, confirmed and cancelled
\c - shop_admin
SELECT inventory.set_rules('RU-CAP', sale_ends => now());
\c - shop_app
SELECT ok, status FROM inventory.extend('l-in-window', 1, '2 days');
SELECT ok, status FROM inventory.confirm('l-in-window');
SELECT ok, status FROM inventory.cancel('l-in-window-2');
\c - shop_admin

-- set_rules checks its input
SELECT inventory.set_rules('RU-CAP', max_per_buyer => 0);
SELECT inventory.set_rules('RU-CAP', sale_starts => '2026-02-01', sale_ends => '2026-01-01');
SELECT inventory.set_rules('RU-NOPE', max_per_buyer => 1);
SELECT inventory.set_rules(NULL, max_per_buyer => 1);

-- direct DML passes the same enforcement point: the table's checks, and the
-- cache follows at commit (terse: the failing rows hold timestamps); the
-- reserve in the transaction of the UPDATE is the administrator's, who may
-- call it too
\set VERBOSITY terse
UPDATE inventory.sku SET max_per_buyer = -1 WHERE sku = 'RU-CAP';
UPDATE inventory.sku SET sale_starts = '2026-02-01', sale_ends = '2026-01-01' WHERE sku = 'RU-CAP';
\set VERBOSITY default
BEGIN;
UPDATE inventory.sku SET sale_ends = NULL, max_per_buyer = 1 WHERE sku = 'RU-CAP';
-- not before the commit
SELECT ok, status FROM inventory.reserve('RU-CAP', 1, 'l-before-commit');
ROLLBACK;
BEGIN;
SAVEPOINT s;
UPDATE inventory.sku SET sale_ends = NULL WHERE sku = 'RU-CAP';
ROLLBACK TO SAVEPOINT s;
UPDATE inventory.sku SET max_per_buyer = 1 WHERE sku = 'RU-CAP';
COMMIT;
-- open again, with the limit of 1 of that transaction: ann takes her unit
UPDATE inventory.sku SET sale_ends = NULL WHERE sku = 'RU-CAP';
\c - shop_app
SELECT ok, status FROM inventory.reserve('RU-CAP', 1, 'l-open-again', buyer_id => 'ann');

-- a reservation inserted by hand follows the rules, with errors
\c - shop_admin
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('l-hand-1', 1, 'reserve', 'RU-CAP', 1);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, buyer_id)
VALUES ('l-hand-1', 1, 'reserve', 'RU-CAP', 1, 'ann');
-- the rows of one statement count together
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, buyer_id)
VALUES ('l-hand-2', 1, 'reserve', 'RU-CAP', 1, 'fay'), ('l-hand-2', 2, 'reserve', 'RU-CAP', 1, 'fay');
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, buyer_id)
VALUES ('l-hand-3', 1, 'reserve', 'RU-CAP', 1, 'fay');
UPDATE inventory.sku SET sale_starts = now() + interval '1 hour' WHERE sku = 'RU-CAP';
\set VERBOSITY terse
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, buyer_id)
VALUES ('l-hand-4', 1, 'reserve', 'RU-CAP', 1, 'gus');
\set VERBOSITY default
-- a buyer belongs to reservations only, and does not change
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, buyer_id)
VALUES ('l-hand-5', 1, 'restock', 'RU-CAP', 1, 'gus');
UPDATE inventory.ledger SET buyer_id = 'bob' WHERE order_id = 'l-ann-5';
UPDATE inventory.ledger SET buyer_id = NULL WHERE order_id = 'l-ann-5';

\c - shop_monitor
SELECT sku, on_hand, reserved, available, max_per_buyer FROM inventory.stock
 WHERE sku LIKE 'RU-%' ORDER BY sku;
SELECT * FROM inventory.verify();

-- verify() compares the cached rules with the table's too: a change made
-- behind the trigger's back, by a superuser who turns it off in the catalog
-- (ALTER TABLE ... DISABLE TRIGGER leaves it on), shows (moments as seconds
-- since 1970)
\c - postgres
UPDATE pg_catalog.pg_trigger SET tgenabled = 'D'
 WHERE tgrelid = 'inventory.sku'::regclass AND tgname IN ('a_check', 'z_register');
\c
UPDATE inventory.sku SET max_per_buyer = 5, sale_starts = '2026-01-01 00:00+00'
 WHERE sku = 'RU-CAP';
UPDATE pg_catalog.pg_trigger SET tgenabled = 'A'
 WHERE tgrelid = 'inventory.sku'::regclass AND tgname IN ('a_check', 'z_register');
\c - shop_monitor
SELECT * FROM inventory.verify() WHERE what <> 'sale_starts';
SELECT what, cached > extract(epoch FROM now()) AS cached_later, truth
  FROM inventory.verify() WHERE what = 'sale_starts';
-- a change through the trigger brings them together again
\c - shop_admin
SELECT inventory.set_rules('RU-CAP');
\c - shop_monitor
SELECT * FROM inventory.verify();

-- withdraw: available units taken out of on_hand for good, never reserved
-- or held ones; idempotent by key like every movement
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
\ir test/roles.sql

\c - shop_admin
SELECT ok, status, available FROM inventory.restock('WD-A', 10, 'wd-in-1');
\c - shop_app
SELECT ok, status, available FROM inventory.reserve('WD-A', 4, 'wd-r-1');

-- more than is available is refused, and writes nothing
\c - shop_admin
SELECT ok, status, sku, qty, state, available, version FROM inventory.withdraw('WD-A', 7, 'wd-out-1');
SELECT count(*) FROM inventory.ledger WHERE order_id = 'wd-out-1';
-- what is available is taken
SELECT ok, status, sku, qty, state, available, version FROM inventory.withdraw('WD-A', 6, 'wd-out-1');
SELECT order_id, batch_id, kind, sku, qty, counted, state, expires_at, settled_at
  FROM inventory.ledger WHERE order_id = 'wd-out-1';
SELECT sku, on_hand, reserved, available, version FROM inventory.stock WHERE sku = 'WD-A';
SELECT inventory.available('WD-A');
-- a replay answers duplicate; the key with another movement is an error
SELECT ok, status, sku, qty, available FROM inventory.withdraw('WD-A', 6, 'wd-out-1');
SELECT * FROM inventory.withdraw('WD-A', 5, 'wd-out-1');
SELECT * FROM inventory.restock('WD-A', 6, 'wd-out-1');
SELECT * FROM inventory.withdraw('WD-A', 4, 'wd-r-1');
-- the reservation is untouched: cancelling it makes its units available
\c - shop_app
SELECT ok, status, available FROM inventory.cancel('wd-r-1');
\c - shop_admin
SELECT ok, status, available FROM inventory.withdraw('WD-A', 4, 'wd-out-2', 2);

-- unknown SKU, nothing available, a rolled-back withdrawal
SELECT ok, status, sku, qty, available FROM inventory.withdraw('WD-NOPE', 1, 'wd-out-3');
SELECT ok, status, sku, qty, available FROM inventory.withdraw('WD-A', 1, 'wd-out-3');
SELECT ok, status, available FROM inventory.restock('WD-A', 3, 'wd-in-2');
BEGIN;
SELECT ok, status, available FROM inventory.withdraw('WD-A', 3, 'wd-out-4');
ROLLBACK;
SELECT inventory.available('WD-A');
SELECT count(*) FROM inventory.ledger WHERE order_id = 'wd-out-4';

-- by hand, a withdrawal follows the same rule
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('wd-dml-1', 1, 'withdraw', 'WD-A', 4);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('wd-dml-1', 1, 'withdraw', 'WD-A', 2);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, counted)
VALUES ('wd-dml-2', 1, 'withdraw', 'WD-A', 1, 1);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, state)
VALUES ('wd-dml-2', 1, 'withdraw', 'WD-A', 1, 'PENDING');
SELECT inventory.available('WD-A');

-- misuse is an error
SELECT * FROM inventory.withdraw('WD-A', 0, 'wd-bad');
SELECT * FROM inventory.withdraw('WD-A', -1, 'wd-bad');
SELECT * FROM inventory.withdraw(NULL, 1, 'wd-bad');
SELECT * FROM inventory.withdraw('WD-A', NULL, 'wd-bad');
SELECT * FROM inventory.withdraw('WD-A', 1, NULL);

-- folded like any movement; the statistics count it with the stocktakes
SELECT inventory.fold() > 0 AS folded;
SELECT sku, on_hand, reserved, available, version FROM inventory.stock WHERE sku = 'WD-A';
SELECT on_hand FROM inventory.sku WHERE sku = 'WD-A';
\c - shop_monitor
SELECT restocks, adjusts, rejects FROM inventory.sku_stats WHERE sku = 'WD-A';
SELECT * FROM inventory.verify();

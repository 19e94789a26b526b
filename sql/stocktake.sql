-- restock and adjust
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

-- restock creates the SKU on first use
\c - shop_admin
SELECT ok, status, sku, qty, state, available, version
  FROM inventory.restock('S-PEN', 10, 's-delivery-1');
SELECT sku, on_hand, version FROM inventory.sku WHERE sku = 'S-PEN';
SELECT ok, status, available, version FROM inventory.restock('S-PEN', 5, 's-delivery-2');
SELECT ok, status, available, version FROM inventory.restock('S-PEN', 5, 's-delivery-2');
SELECT * FROM inventory.restock('S-PEN', 6, 's-delivery-2');

\c - shop_app
SELECT ok, status FROM inventory.reserve('S-PEN', 4, 's-order-1');
SELECT * FROM inventory.stock WHERE sku = 'S-PEN';

-- adjust sets the counted on_hand
\c - shop_admin
SELECT ok, status, qty, available, version FROM inventory.adjust('S-PEN', 12, 's-count-1');
SELECT * FROM inventory.stock WHERE sku = 'S-PEN';
SELECT kind, qty, counted FROM inventory.ledger WHERE order_id = 's-count-1';
SELECT ok, status, qty FROM inventory.adjust('S-PEN', 12, 's-count-1');   -- replay
SELECT * FROM inventory.adjust('S-PEN', 11, 's-count-1');                 -- another count

-- not below what is reserved
SELECT ok, status, available FROM inventory.adjust('S-PEN', 3, 's-count-2');
SELECT ok, status, available FROM inventory.adjust('S-PEN', 4, 's-count-2');
SELECT * FROM inventory.stock WHERE sku = 'S-PEN';

-- a count equal to on_hand is recorded too
SELECT ok, status FROM inventory.adjust('S-PEN', 4, 's-count-3');
SELECT kind, qty, counted FROM inventory.ledger WHERE order_id = 's-count-3';

-- expected_version
SELECT ok, status, version FROM inventory.adjust('S-PEN', 20, 's-count-4', expected_version => 1);
SELECT ok, status, version FROM inventory.adjust('S-PEN', 20, 's-count-4', expected_version => 6);
SELECT * FROM inventory.stock WHERE sku = 'S-PEN';

-- an unknown SKU is not created by a stocktake
SELECT ok, status, available FROM inventory.adjust('S-NOPE', 1, 's-count-5');

-- in one transaction, a stocktake counts the transaction's own restock
BEGIN;
SELECT ok, status FROM inventory.restock('S-PEN', 10, 's-delivery-3');
SELECT ok, status FROM inventory.adjust('S-PEN', 25, 's-count-6');
COMMIT;
SELECT * FROM inventory.stock WHERE sku = 'S-PEN';

-- and of a SKU the transaction itself created (0.2 answered unknown_sku)
BEGIN;
SELECT ok, status, available FROM inventory.restock('S-NEW', 10, 's-new-1');
SELECT ok, status, qty, available FROM inventory.adjust('S-NEW', 12, 's-new-count-1');
COMMIT;
SELECT sku, on_hand, reserved, available FROM inventory.stock WHERE sku = 'S-NEW';

-- on_hand cannot leave the range of bigint
SELECT ok, status FROM inventory.restock('S-BIG', 9223372036854775000, 's-big-1');
SELECT * FROM inventory.restock('S-BIG', 1000, 's-big-2');
SELECT * FROM inventory.stock WHERE sku = 'S-BIG';

\c - shop_monitor
SELECT * FROM inventory.verify();

-- reserve: escrow admission, duplicates, keys and version checks
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

\c - shop_admin
SELECT ok, status, sku, qty, state, available, version
  FROM inventory.restock('R-TEE', 5, 'r-delivery-1');

-- a successful reserve holds its units at once
\c - shop_app
SELECT ok, status, sku, qty, state, available, version,
       expires_at > now() + interval '14 minutes' AS default_ttl
  FROM inventory.reserve('R-TEE', 2, 'r-order-1');
SELECT inventory.available('R-TEE');

-- the same key again is a duplicate: ok, and nothing changes
SELECT ok, status, sku, qty, state, available, version
  FROM inventory.reserve('R-TEE', 2, 'r-order-1');
SELECT inventory.available('R-TEE');

-- batches of one order are separate keys
SELECT ok, status, qty, available
  FROM inventory.reserve('R-TEE', 1, 'r-order-1', batch_id => 2);

-- not enough: refused, nothing written
SELECT ok, status, qty, state, available
  FROM inventory.reserve('R-TEE', 3, 'r-order-2');
\c - shop_admin
SELECT count(*) FROM inventory.ledger WHERE order_id = 'r-order-2';

-- exactly what is left
\c - shop_app
SELECT ok, status, available FROM inventory.reserve('R-TEE', 2, 'r-order-3');
SELECT ok, status, available FROM inventory.reserve('R-TEE', 1, 'r-order-4');

-- a replay is recognised even when the SKU is sold out
SELECT ok, status, state, available FROM inventory.reserve('R-TEE', 2, 'r-order-3');

-- an unknown SKU
SELECT ok, status, sku, available, version FROM inventory.reserve('R-NOPE', 1, 'r-order-5');

-- a key reused for another SKU, quantity or kind of movement is an error
SELECT * FROM inventory.reserve('R-TEE', 1, 'r-order-1');
SELECT * FROM inventory.reserve('R-NOPE', 2, 'r-order-1');
SELECT * FROM inventory.reserve('R-TEE', 1, 'r-delivery-1');

-- ttl
\c - shop_admin
SELECT ok, status FROM inventory.restock('R-CAP', 10, 'r-delivery-2');
\c - shop_app
SELECT ok, status, expires_at - statement_timestamp() AS ttl
  FROM inventory.reserve('R-CAP', 1, 'r-order-6', ttl => '90 seconds');
SET inventory.default_ttl = '2min';
SELECT ok, status, expires_at - statement_timestamp() AS ttl
  FROM inventory.reserve('R-CAP', 1, 'r-order-7');
RESET inventory.default_ttl;

-- expected_version: succeeds only against the committed version
SELECT version FROM inventory.stock WHERE sku = 'R-CAP';
SELECT ok, status, available, version
  FROM inventory.reserve('R-CAP', 1, 'r-order-8', expected_version => 0);
SELECT ok, status, available, version
  FROM inventory.reserve('R-CAP', 1, 'r-order-8', expected_version => 3);
SELECT version FROM inventory.stock WHERE sku = 'R-CAP';

-- every committed change counts one version; the cache agrees with the tables
SELECT * FROM inventory.stock WHERE sku LIKE 'R-%' ORDER BY sku;
\c - shop_admin
SELECT sku, kind, qty, state FROM inventory.ledger
 WHERE sku LIKE 'R-%' ORDER BY order_id, batch_id;
\c - shop_monitor
SELECT * FROM inventory.verify();

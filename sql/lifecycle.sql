-- confirm, cancel, extend and expire: the lifecycle of a reservation
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

\c - shop_admin
SELECT ok, status FROM inventory.restock('L-MUG', 10, 'l-delivery');
\c - shop_app
SELECT ok, status FROM inventory.reserve('L-MUG', 3, 'l-paid');
SELECT ok, status FROM inventory.reserve('L-MUG', 2, 'l-dropped');
SELECT ok, status FROM inventory.reserve('L-MUG', 1, 'l-slow');
SELECT * FROM inventory.stock WHERE sku = 'L-MUG';

-- confirm: the units leave on_hand
SELECT ok, status, sku, qty, state, available FROM inventory.confirm('l-paid');
SELECT on_hand, reserved, available FROM inventory.stock WHERE sku = 'L-MUG';
SELECT ok, status, state FROM inventory.confirm('l-paid');     -- replay
SELECT ok, status, state FROM inventory.cancel('l-paid');      -- a sale is not undone
SELECT ok, status, state FROM inventory.extend('l-paid', 1, '1 hour');

-- cancel: the units go back on sale
SELECT ok, status, qty, state, available FROM inventory.cancel('l-dropped');
SELECT ok, status, state FROM inventory.cancel('l-dropped');   -- replay
SELECT ok, status, state FROM inventory.confirm('l-dropped');
SELECT ok, status, state FROM inventory.extend('l-dropped', 1, '1 hour');

-- extend: a PENDING reservation gets a new expiry
SELECT ok, status, state, expires_at - statement_timestamp() AS ttl
  FROM inventory.extend('l-slow', 1, '1 hour');
\c - shop_admin
SELECT expires_at - created_at > interval '59 minutes' AS moved
  FROM inventory.ledger WHERE order_id = 'l-slow';

-- unknown keys
\c - shop_app
SELECT ok, status, sku, qty, state FROM inventory.confirm('l-nothing');
SELECT ok, status, sku, qty, state FROM inventory.cancel('l-nothing');
SELECT ok, status, sku, qty, state FROM inventory.extend('l-nothing', 1, '1 hour');

-- a key that is not a reservation
SELECT * FROM inventory.confirm('l-delivery');

-- overdue reservations (written directly, already past expires_at)
\c - shop_admin
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES ('l-late-1', 1, 'reserve', 'L-MUG', 1, now() - interval '1 minute'),
       ('l-late-2', 1, 'reserve', 'L-MUG', 1, now() - interval '1 minute'),
       ('l-late-3', 1, 'reserve', 'L-MUG', 1, now() - interval '1 minute'),
       ('l-late-4', 1, 'reserve', 'L-MUG', 1, now() - interval '2 minutes'),
       ('l-late-5', 1, 'reserve', 'L-MUG', 1, now() - interval '3 minutes');
SELECT on_hand, reserved, available FROM inventory.stock WHERE sku = 'L-MUG';

-- a late payment is told expired, and the reservation is expired now
\c - shop_app
SELECT ok, status, state FROM inventory.confirm('l-late-1');
SELECT ok, status, state FROM inventory.confirm('l-late-1');
-- extending an overdue reservation expires it too
SELECT ok, status, state FROM inventory.extend('l-late-2', 1, '1 hour');
-- cancel still works on an overdue PENDING reservation
SELECT ok, status, state FROM inventory.cancel('l-late-3');
-- expire(): oldest first, up to max_rows
\c - shop_admin
SELECT inventory.expire(1);
SELECT order_id, state FROM inventory.ledger
 WHERE order_id LIKE 'l-late-%' ORDER BY order_id;
SELECT inventory.expire();
SELECT inventory.expire();
\c - shop_app
SELECT ok, status, state FROM inventory.cancel('l-late-4');  -- already back on sale
SELECT on_hand, reserved, available FROM inventory.stock WHERE sku = 'L-MUG';

-- settled_at is stamped when a reservation leaves PENDING
\c - shop_admin
SELECT order_id, state, settled_at IS NOT NULL AS settled
  FROM inventory.ledger WHERE sku = 'L-MUG' AND kind = 'reserve' ORDER BY order_id;

\c - shop_monitor
SELECT * FROM inventory.stock WHERE sku = 'L-MUG';
SELECT * FROM inventory.verify();

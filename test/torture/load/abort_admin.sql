-- Work thrown away on purpose, by the administrator (shop_admin): a
-- restock in a transaction that rolls back (the checkpoints find no
-- 'abort-' row).  The application's part of it is abort.sql.
\set order random(1, 9000000000000000000)
\set seed random(1, 1000000000)
BEGIN;
SELECT torture.judge('restock', r, m.sku, 5, allowed => '{ok}')
  FROM torture.reservation(:seed) m, inventory.restock(m.sku, 5, 'abort-' || :order, 2) r;
ROLLBACK;

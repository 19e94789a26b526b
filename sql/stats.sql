-- statistics from shared memory, and verify()
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

\c - shop_admin
SELECT ok FROM inventory.restock('T-BAG', 2, 't-delivery');
\c - shop_app
SELECT ok FROM inventory.reserve('T-BAG', 1, 't-1');
SELECT ok FROM inventory.reserve('T-BAG', 1, 't-2');
SELECT status FROM inventory.reserve('T-BAG', 1, 't-3');
SELECT status FROM inventory.reserve('T-BAG', 1, 't-4', expected_version => 99);
SELECT status FROM inventory.confirm('t-1');
SELECT status FROM inventory.cancel('t-2');
\c - shop_admin
SELECT ok FROM inventory.adjust('T-BAG', 5, 't-count');
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES ('t-5', 1, 'reserve', 'T-BAG', 1, now() - interval '1 minute');
SELECT inventory.expire();

\c - shop_monitor
SELECT sku, on_hand, reserved, holds, available, version, in_flight, unfolded,
       reserves, rejects, conflicts, confirms, cancels, expiries, restocks, adjusts,
       loaded_at <= last_used AS times
  FROM inventory.sku_stats WHERE sku = 'T-BAG';

-- holds of a transaction in flight (the reserve, the statistics and the
-- verify in one transaction: an administrator's, who may call all three)
\c - shop_admin
BEGIN;
SELECT ok FROM inventory.reserve('T-BAG', 2, 't-6');
SELECT holds, available, in_flight FROM inventory.sku_stats WHERE sku = 'T-BAG';
SELECT * FROM inventory.verify();
ROLLBACK;

SELECT inventory.stats_reset();
\c - shop_monitor
SELECT reserves, rejects, conflicts, confirms, cancels, expiries, restocks, adjusts
  FROM inventory.sku_stats WHERE sku = 'T-BAG';

SELECT capacity, entries > 0 AS some, bytes_per_entry <= 320 AS small, loads > 0 AS loaded
  FROM inventory.cache_info();

-- verify() sees a difference made behind the trigger's back: by a
-- superuser who turns it off in the catalog (ALTER TABLE ... DISABLE
-- TRIGGER leaves it on), in sessions that read the catalog afresh
\c - shop_app
SELECT ok FROM inventory.reserve('T-BAG', 1, 't-6');
\c - postgres
UPDATE pg_catalog.pg_trigger SET tgenabled = 'D'
 WHERE tgrelid = 'inventory.ledger'::regclass AND tgname = 'z_register';
\c
UPDATE inventory.ledger SET state = 'CANCELLED' WHERE order_id = 't-6';
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('t-7', 1, 'restock', 'T-BAG', 4);
UPDATE pg_catalog.pg_trigger SET tgenabled = 'A'
 WHERE tgrelid = 'inventory.ledger'::regclass AND tgname = 'z_register';
\c - shop_monitor
SELECT * FROM inventory.verify() ORDER BY what;

-- dropping the extension forgets the cache: a new one starts from its tables
\c - postgres
DROP EXTENSION inventory;
CREATE EXTENSION inventory;
\c - shop_monitor
SELECT * FROM inventory.sku_stats;
\c - shop_app
SELECT ok, status FROM inventory.reserve('T-BAG', 1, 't-8');
\c - shop_admin
SELECT ok, status, available FROM inventory.restock('T-BAG', 1, 't-9');
\c - shop_monitor
SELECT * FROM inventory.stock;
SELECT * FROM inventory.verify();

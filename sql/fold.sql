-- fold: settled movements move into the base counters, so that loading a
-- SKU reads only what changed since
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

\c - shop_admin
SELECT ok FROM inventory.restock('F-BOX', 10, 'f-delivery');
\c - shop_app
SELECT count(*) FROM generate_series(1, 6) i, inventory.reserve('F-BOX', 1, 'f-' || i);
SELECT ok FROM inventory.confirm('f-1');
SELECT ok FROM inventory.confirm('f-2');
SELECT ok FROM inventory.cancel('f-3');
\c - shop_admin
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES ('f-late', 1, 'reserve', 'F-BOX', 1, now() - interval '1 minute');
SELECT inventory.expire();
SELECT * FROM inventory.stock WHERE sku = 'F-BOX';

-- restock, two confirms, a cancel and an expiry are settled: fold them
SELECT unfolded FROM inventory.sku_stats WHERE sku = 'F-BOX';
SELECT inventory.fold(2);
SELECT unfolded FROM inventory.sku_stats WHERE sku = 'F-BOX';
SELECT inventory.fold();
SELECT inventory.fold();
SELECT unfolded FROM inventory.sku_stats WHERE sku = 'F-BOX';
SELECT * FROM inventory.stock WHERE sku = 'F-BOX';
SELECT sku, on_hand, version FROM inventory.sku WHERE sku = 'F-BOX';
SELECT order_id, state, folded FROM inventory.ledger WHERE sku = 'F-BOX' ORDER BY order_id;
SELECT * FROM inventory.verify();

-- a load reads the base row and the unfolded rows only (once VACUUM has
-- removed the index entries of the rows' old versions); VACUUM is the
-- tables' owner's, the superuser who created the extension (test
-- scaffolding: none of the inventory roles may vacuum the tables)
\c - postgres
VACUUM ANALYZE inventory.ledger;
\c - shop_app
SET enable_bitmapscan = off;
SET enable_seqscan = off;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT * FROM inventory.stock WHERE sku = 'F-BOX';
RESET enable_bitmapscan;
RESET enable_seqscan;

-- a folded movement still answers replays, and can be confirmed no more
SELECT ok, status, state FROM inventory.reserve('F-BOX', 1, 'f-1');
SELECT ok, status, state FROM inventory.cancel('f-1');
SELECT ok, status, state FROM inventory.confirm('f-late');

-- folded movements may be deleted (their keys are then free again)
\c - shop_admin
DELETE FROM inventory.ledger WHERE sku = 'F-BOX' AND folded AND kind = 'restock';
SELECT * FROM inventory.stock WHERE sku = 'F-BOX';
SELECT * FROM inventory.verify();

SELECT inventory.fold(-1);

\set n random(1, 9000000000000000000)
BEGIN;
UPDATE stock SET qty = qty - 1 WHERE sku = :sku AND qty >= 1;
INSERT INTO ledger (order_id, batch_id, sku, qty) VALUES ('o2b-' || :n, 1, :sku, 1);
COMMIT;

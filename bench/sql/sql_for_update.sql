BEGIN;
SELECT qty FROM stock WHERE sku = :sku FOR UPDATE;
UPDATE stock SET qty = qty - 1 WHERE sku = :sku;
COMMIT;

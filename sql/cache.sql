-- the cache is bounded: idle SKUs are evicted and loaded again on demand
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

\c - shop_monitor
SELECT capacity FROM inventory.cache_info();

-- one transaction cannot pin more SKUs than the cache holds
\c - shop_admin
INSERT INTO inventory.sku (sku, on_hand)
SELECT 'C-' || i, 1 FROM generate_series(1, 1100) i;

-- in smaller transactions, idle SKUs make room
INSERT INTO inventory.sku (sku, on_hand) SELECT 'C-' || i, 1 FROM generate_series(1, 500) i;
INSERT INTO inventory.sku (sku, on_hand) SELECT 'C-' || i, 1 FROM generate_series(501, 1000) i;
INSERT INTO inventory.sku (sku, on_hand) SELECT 'C-' || i, 1 FROM generate_series(1001, 1500) i;
\c - shop_app
DO $$
BEGIN
	FOR i IN 1..1500 LOOP
		PERFORM inventory.reserve('C-' || i, 1, 'c-' || i);
		COMMIT;
	END LOOP;
END
$$;
\c - shop_monitor
SELECT entries <= capacity AS bounded, evictions > 0 AS evicted FROM inventory.cache_info();

-- evicted SKUs come back from the tables with nothing lost
\c - shop_app
SELECT count(*) FROM inventory.stock WHERE sku LIKE 'C-%' AND reserved = 1 AND available = 0;
SELECT count(*) FROM generate_series(1, 1500) i WHERE inventory.available('C-' || i) = 0;
SELECT count(*) FROM generate_series(1, 1500) i
 WHERE (inventory.reserve('C-' || i, 1, 'c-again-' || i)).status = 'insufficient';
\c - shop_monitor
SELECT * FROM inventory.verify();

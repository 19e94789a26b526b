-- batch: independent reservations in one call, each as reserve() would
-- answer it at its place in the array
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

\c - shop_admin
SELECT ok, status FROM inventory.restock('M-TEE', 3, 'bt-in-1');
SELECT ok, status FROM inventory.restock('M-CAP', 5, 'bt-in-2');
SELECT inventory.set_rules('M-CAP', max_per_buyer => 2);

-- one row per element, in the order of the arrays; each element sees those
-- before it: the stock they took, the units of the same buyer, a key used
-- twice
\c - shop_app
SELECT ok, status, sku, qty, state, available
  FROM inventory.reserve_many('{M-TEE,M-TEE,M-CAP,M-CAP,M-TEE,M-NOPE,M-CAP,M-TEE}',
                              '{1,1,1,2,5,1,1,1}',
                              '{bt-1,bt-2,bt-3,bt-4,bt-5,bt-6,bt-7,bt-1}',
                              buyer_ids => '{ann,NULL,bob,bob,NULL,NULL,NULL,ann}');
\c - shop_admin
SELECT order_id, batch_id, sku, qty, state, buyer_id FROM inventory.ledger
 WHERE order_id LIKE 'bt-%' AND kind = 'reserve' ORDER BY order_id;

-- all of it commits together, or none of it
\c - shop_app
BEGIN;
SELECT ok, status FROM inventory.reserve_many('{M-TEE}', '{1}', '{bt-8}', '1 hour');
ROLLBACK;
\c - shop_admin
SELECT count(*) FROM inventory.ledger WHERE order_id = 'bt-8';

-- a replayed batch answers each element as a duplicate, and changes nothing
\c - shop_app
SELECT ok, status, sku FROM inventory.reserve_many('{M-TEE,M-TEE,M-CAP}', '{1,1,1}', '{bt-1,bt-2,bt-3}',
                                                   buyer_ids => '{ann,NULL,bob}');
SELECT sku, available FROM inventory.stock WHERE sku LIKE 'M-%' ORDER BY sku;

-- misuse is an error, for the whole call
SELECT * FROM inventory.reserve_many('{M-TEE}', '{1}', '{bt-1}');
SELECT * FROM inventory.reserve_many('{M-TEE,M-CAP}', '{1}', '{bt-9,bt-10}');
SELECT * FROM inventory.reserve_many('{M-TEE}', '{1}', '{bt-9}', buyer_ids => '{ann,bob}');
SELECT * FROM inventory.reserve_many('{M-TEE}', '{0}', '{bt-9}');
SELECT * FROM inventory.reserve_many('{M-TEE}', '{1}', '{NULL}');
SELECT * FROM inventory.reserve_many('{M-TEE}', '{1}', '{""}');
SELECT count(*) FROM inventory.reserve_many('{}', '{}', '{}');

\c - shop_monitor
SELECT * FROM inventory.verify();
\c - shop_admin
SELECT inventory.fold() >= 0 AS folded;

-- keyfilter: a refused reserve whose key is certainly absent from the
-- ledger reads no index and takes no lock; every key in the ledger is
-- still recognised
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

-- scans of the key's index so far (pending statistics of this backend),
-- and key locks held (test scaffolding, made by the superuser in a schema
-- of the test's own, so that they outlive the application's reconnections)
CREATE SCHEMA probe;
GRANT USAGE ON SCHEMA probe TO shop_app;
CREATE FUNCTION probe.scans() RETURNS bigint LANGUAGE sql AS $$
SELECT pg_stat_get_xact_numscans('inventory.ledger_pkey'::regclass)
$$;
CREATE FUNCTION probe.key_locks() RETURNS bigint LANGUAGE sql AS $$
SELECT count(*) FROM pg_locks
 WHERE locktype = 'object' AND classid = 'inventory.ledger'::regclass
   AND objsubid = 0 AND pid = pg_backend_pid()
$$;

\c - shop_admin
SELECT ok, status FROM inventory.restock('K-TEE', 2, 'k-in-1');
\c - shop_app
SELECT ok, status FROM inventory.reserve('K-TEE', 2, 'k-order-1');

-- until this database's keys have been read (the worker does it after a
-- start), every key is looked up
\c - shop_monitor
SELECT bytes > 0 AS on, hashes, ready FROM inventory.key_filter;
\c - shop_app
BEGIN;
SELECT probe.scans() AS scans \gset
SELECT ok, status FROM inventory.reserve('K-TEE', 1, 'k-order-2');
SELECT probe.scans() - :scans AS scans, probe.key_locks() AS key_locks;
COMMIT;

\c - shop_admin
SELECT inventory.key_filter_rebuild() > 0 AS keys_read;
\c - shop_monitor
SELECT ready, keys_added > 0 AS added, fill > 0 AS filled,
       false_positive_rate < 0.001 AS few_false_positives
  FROM inventory.key_filter;

-- now a refusal of a new key reads nothing...
\c - shop_app
BEGIN;
SELECT probe.scans() AS scans \gset
SELECT ok, status FROM inventory.reserve('K-TEE', 1, 'k-order-3');
SELECT probe.scans() - :scans AS scans, probe.key_locks() AS key_locks;
COMMIT;
-- ... and a replayed key is still a duplicate, sold out or not
SELECT ok, status FROM inventory.reserve('K-TEE', 2, 'k-order-1');
\c - shop_admin
SELECT ok, status FROM inventory.restock('K-TEE', 2, 'k-in-1');

-- an admitted reserve of a new key locks it and leaves the lookup to the
-- insert's own unique check
SELECT ok, status FROM inventory.restock('K-TEE', 1, 'k-in-2');
\c - shop_app
BEGIN;
SELECT probe.scans() AS scans \gset
SELECT ok, status FROM inventory.reserve('K-TEE', 1, 'k-order-4');
SELECT probe.scans() - :scans AS scans, probe.key_locks() AS key_locks;
COMMIT;
SELECT ok, status FROM inventory.reserve('K-TEE', 1, 'k-order-4');

-- keys written by hand and by a restore's COPY are known too: reusing them
-- for a reservation is the reused-key error, not a refusal (the restore is
-- the tables' owner's, the superuser who created the extension)
\c - shop_admin
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('k-by-hand', 1, 'restock', 'K-TEE', 1);
\c - shop_app
SELECT ok, status FROM inventory.reserve('K-TEE', 9, 'k-by-hand');
\c - postgres
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
k-restored	1	restock	K-TEE	1	\N	\N	2026-01-01 00:00:00+00	\N	\N	f	\N
\.
\c - shop_app
SELECT ok, status FROM inventory.reserve('K-TEE', 9, 'k-restored');

-- a key of a rolled-back reservation leaves its bits: a lookup, not found,
-- and the key is free
BEGIN;
SELECT ok, status FROM inventory.reserve('K-TEE', 1, 'k-rolled-back');
ROLLBACK;
\c - shop_monitor
SELECT false_positives AS fp FROM inventory.key_filter \gset
\c - shop_app
SELECT ok, status FROM inventory.reserve('K-TEE', 1, 'k-rolled-back');
\c - shop_monitor
SELECT false_positives - :fp AS new_false_positives FROM inventory.key_filter;

-- a key whose folded movement an administrator deleted is free again
\c - shop_app
SELECT ok, status FROM inventory.confirm('k-order-1');
\c - shop_admin
SELECT inventory.fold() > 0 AS folded;
DELETE FROM inventory.ledger WHERE order_id = 'k-order-1';
SELECT ok, status FROM inventory.restock('K-TEE', 5, 'k-order-1');

SELECT sku, on_hand, reserved, available FROM inventory.stock WHERE sku = 'K-TEE';
SELECT * FROM inventory.verify();
SELECT inventory.fold() >= 0 AS folded;
-- the probes go, by the superuser who made them
\c - postgres
SET client_min_messages = warning;
DROP SCHEMA probe CASCADE;
RESET client_min_messages;

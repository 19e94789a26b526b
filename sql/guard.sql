-- direct DML: every write passes the same trigger
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

-- an administrator creates SKUs and movements by hand
\c - shop_admin
SET search_path = public, inventory;
INSERT INTO inventory.sku (sku, on_hand) VALUES ('G-CUP', 3), ('G-BOWL', 0);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('g-delivery', 1, 'restock', 'G-CUP', 2);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('g-order-1', 1, 'reserve', 'G-CUP', 2);
SELECT order_id, state, expires_at > now() AS has_expiry FROM inventory.ledger
 WHERE order_id = 'g-order-1';
SELECT * FROM inventory.stock WHERE sku LIKE 'G-%' ORDER BY sku;
SELECT inventory.available('G-CUP');

-- a write that would oversell fails
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('g-order-2', 1, 'reserve', 'G-CUP', 4);
-- a multi-row INSERT fails as a whole
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('g-order-3', 1, 'reserve', 'G-CUP', 2), ('g-order-4', 1, 'reserve', 'G-CUP', 2);
SELECT inventory.available('G-CUP');

-- new movements must follow the rules
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, state)
VALUES ('g-order-5', 1, 'reserve', 'G-CUP', 1, 'CONFIRMED');
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('g-order-5', 1, 'reserve', 'G-CUP', 0);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('g-order-5', 1, 'restock', 'G-CUP', -1);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('g-order-5', 1, 'refund', 'G-CUP', 1);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('g-order-5', 1, 'reserve', 'G-NONE', 1);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, folded)
VALUES ('g-order-5', 1, 'restock', 'G-CUP', 1, true);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, state)
VALUES ('g-order-5', 1, 'restock', 'G-CUP', 1, 'PENDING');
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('g-order-1', 1, 'restock', 'G-CUP', 1);

-- the state machine holds for UPDATE too
UPDATE inventory.ledger SET state = 'CONFIRMED' WHERE order_id = 'g-order-1';
UPDATE inventory.ledger SET state = 'PENDING' WHERE order_id = 'g-order-1';
UPDATE inventory.ledger SET state = 'CANCELLED' WHERE order_id = 'g-order-1';
UPDATE inventory.ledger SET state = NULL WHERE order_id = 'g-order-1';
SELECT order_id, state, settled_at IS NOT NULL AS settled FROM inventory.ledger
 WHERE order_id = 'g-order-1';
SELECT * FROM inventory.stock WHERE sku = 'G-CUP';

-- what a movement records never changes
UPDATE inventory.ledger SET qty = 1 WHERE order_id = 'g-order-1';
UPDATE inventory.ledger SET sku = 'G-BOWL' WHERE order_id = 'g-order-1';
UPDATE inventory.ledger SET order_id = 'g-other' WHERE order_id = 'g-order-1';
UPDATE inventory.ledger SET kind = 'restock' WHERE order_id = 'g-order-1';
UPDATE inventory.ledger SET expires_at = now() WHERE order_id = 'g-order-1';
UPDATE inventory.ledger SET settled_at = now() WHERE order_id = 'g-order-1';
UPDATE inventory.ledger SET folded = true WHERE order_id = 'g-order-1';

-- expiry rules: not CONFIRMED after expires_at, not EXPIRED before it
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('g-order-6', 1, 'reserve', 'G-CUP', 1);
\set VERBOSITY terse
UPDATE inventory.ledger SET state = 'EXPIRED' WHERE order_id = 'g-order-6';
UPDATE inventory.ledger SET expires_at = now() - interval '1 second'
 WHERE order_id = 'g-order-6';
UPDATE inventory.ledger SET state = 'CONFIRMED' WHERE order_id = 'g-order-6';
\set VERBOSITY default
UPDATE inventory.ledger SET state = 'EXPIRED' WHERE order_id = 'g-order-6';

-- deletes: only folded movements; only SKUs without movements
DELETE FROM inventory.ledger WHERE order_id = 'g-order-6';
DELETE FROM inventory.ledger WHERE order_id = 'g-delivery';
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES ('g-order-7', 1, 'reserve', 'G-CUP', 1);
DELETE FROM inventory.ledger WHERE order_id = 'g-order-7';
DELETE FROM inventory.sku WHERE sku = 'G-CUP';
DELETE FROM inventory.sku WHERE sku = 'G-BOWL';
\c - shop_app
SELECT ok, status FROM inventory.reserve('G-BOWL', 1, 'g-order-8');
\c - shop_admin
SET search_path = public, inventory;

-- base counters change only through the ledger; SKUs keep their names
UPDATE inventory.sku SET on_hand = 100 WHERE sku = 'G-CUP';
UPDATE inventory.sku SET version = 5 WHERE sku = 'G-CUP';
UPDATE inventory.sku SET sku = 'G-MUG' WHERE sku = 'G-CUP';
INSERT INTO inventory.sku (sku, on_hand) VALUES ('G-NEG', -1);
INSERT INTO inventory.sku (sku) VALUES ('');

-- TRUNCATE is refused: of the ledger by the trigger, of inventory.sku by
-- the ledger's foreign key, and with CASCADE by the trigger again.  Only
-- the tables' owner, the superuser who created the extension, may
-- TRUNCATE them at all (inventory_admin has no TRUNCATE privilege); so
-- from here to the COPY below, the owner's statements: TRUNCATE, the
-- superuser's session_replication_role, the owner's ALTER TABLE
\c - postgres
SET search_path = public, inventory;
TRUNCATE inventory.ledger;
TRUNCATE inventory.sku;
TRUNCATE inventory.sku CASCADE;

-- the triggers fire for replication sessions too
SET session_replication_role = replica;
UPDATE inventory.ledger SET state = 'PENDING' WHERE order_id = 'g-order-6';
RESET session_replication_role;

-- DISABLE TRIGGER, by name, ALL or USER, leaves the extension's triggers
-- enabled, with a WARNING (pg_restore --disable-triggers commits it alone,
-- and other sessions would write past them); ENABLE TRIGGER makes a
-- trigger fire on origin only (not in a replication session), and with ALL
-- enables the foreign key's checks, which lock the SKU's row: the
-- extension sets its triggers back, the foreign key's checks disabled
ALTER TABLE inventory.ledger DISABLE TRIGGER ALL;
ALTER TABLE inventory.ledger ENABLE TRIGGER ALL;
ALTER TABLE inventory.sku DISABLE TRIGGER USER;
ALTER TABLE inventory.sku ENABLE TRIGGER no_truncate;
SELECT tgrelid::regclass AS "table",
       CASE WHEN tgisinternal THEN 'the foreign key''s check' ELSE tgname END AS trigger,
       tgenabled
  FROM pg_trigger
 WHERE tgrelid IN ('inventory.ledger'::regclass, 'inventory.sku'::regclass)
 ORDER BY 1, 2, 3;
ALTER TABLE inventory.sku ENABLE TRIGGER USER;
-- also when the statement names the table through the search_path
SET search_path = inventory, public;
ALTER TABLE ledger DISABLE TRIGGER a_check;
ALTER TABLE ledger ENABLE TRIGGER a_check;
RESET search_path;
SELECT string_agg(DISTINCT tgenabled::text, '') AS ours
  FROM pg_trigger
 WHERE tgrelid IN ('inventory.ledger'::regclass, 'inventory.sku'::regclass)
   AND NOT tgisinternal;
SET session_replication_role = replica;
UPDATE inventory.ledger SET state = 'PENDING' WHERE order_id = 'g-order-6';
RESET session_replication_role;

-- COPY of some columns passes the same rules (of every column, by the
-- owner, it is a restore: see restore.sql)
\c - shop_admin
SET search_path = public, inventory;
COPY inventory.ledger (order_id, batch_id, kind, sku, qty) FROM stdin;
g-copy-1	1	reserve	G-CUP	1
g-copy-2	1	restock	G-CUP	5
\.
COPY inventory.ledger (order_id, batch_id, kind, sku, qty) FROM stdin;
g-copy-3	1	reserve	G-CUP	100
\.

\c - shop_monitor
SELECT * FROM inventory.stock WHERE sku LIKE 'G-%' ORDER BY sku;
SELECT sku, on_hand, reserved, available, version FROM inventory.sku_stats
 WHERE sku LIKE 'G-%' ORDER BY sku;
SELECT * FROM inventory.verify();

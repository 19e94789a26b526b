-- a restore: COPY of every column, by the owner, as pg_dump writes them
-- (the dumps here are 0.2's, whose ledger has no settled_by, but for the
-- one of 0.3 that names it).
-- The owner of the tables is the superuser who created the extension, as
-- pg_restore runs it: every restoring COPY here is the superuser's; the
-- application, the administrator and the monitor connect as themselves
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql
SET search_path = public, inventory;

-- the SKUs' base rows, then their movements in every state: folded
-- (their effect is in the base) and not folded; the base of X-TEE is below
-- zero, because a sale was folded before the restock that supplied it;
-- X-LIM has rules, and its reservation a buyer
COPY inventory.sku FROM stdin;
X-LIM	5	1	2026-01-01 10:00:00+00	2	2026-01-01 00:00:00+00	2099-01-01 00:00:00+00
X-TEE	-3	4	2026-01-01 10:00:00+00	\N	\N	\N
X-MUG	5	1	2026-01-01 10:00:00+00	\N	\N	\N
\.
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
x-in-1	1	restock	X-TEE	10	\N	\N	2026-01-01 10:00:00+00	\N	\N	f	\N
x-in-2	1	restock	X-MUG	5	\N	\N	2026-01-01 10:00:00+00	\N	\N	t	\N
x-sold	1	reserve	X-TEE	3	\N	CONFIRMED	2026-01-01 10:01:00+00	2026-01-01 10:16:00+00	2026-01-01 10:02:00+00	t	\N
x-paid	1	reserve	X-TEE	2	\N	CONFIRMED	2026-01-01 10:03:00+00	2026-01-01 10:18:00+00	2026-01-01 10:04:00+00	f	\N
x-gone	1	reserve	X-TEE	1	\N	CANCELLED	2026-01-01 10:03:00+00	2026-01-01 10:18:00+00	2026-01-01 10:05:00+00	f	\N
x-late	1	reserve	X-MUG	1	\N	EXPIRED	2026-01-01 10:03:00+00	2026-01-01 10:18:00+00	2026-01-01 10:18:01+00	f	\N
x-open	1	reserve	X-TEE	4	\N	PENDING	2026-01-01 10:06:00+00	2099-01-01 00:00:00+00	\N	f	\N
x-open	2	reserve	X-MUG	2	\N	PENDING	2026-01-01 10:06:00+00	2099-01-01 00:00:00+00	\N	f	\N
x-count	1	adjust	X-MUG	-1	4	\N	2026-01-01 10:07:00+00	\N	\N	f	\N
x-open	3	reserve	X-LIM	2	\N	PENDING	2026-01-01 10:06:00+00	2099-01-01 00:00:00+00	\N	f	buyer-1
\.
\c - shop_app
SELECT * FROM inventory.stock WHERE sku LIKE 'X-%' ORDER BY sku;
-- a restore does not go through the cache: the SKUs are loaded from the
-- restored tables at their first use
\c - shop_monitor
SELECT count(*) AS cached FROM inventory.sku_stats WHERE sku LIKE 'X-%';
\c - shop_app
SELECT inventory.available('X-TEE'), inventory.available('X-MUG');
\c - shop_monitor
SELECT sku, on_hand, reserved, holds, available, version, unfolded
  FROM inventory.sku_stats WHERE sku LIKE 'X-%' ORDER BY sku;
SELECT * FROM inventory.verify();

-- the restored keys answer replays; the PENDING ones hold their units
\c - shop_app
SELECT ok, status, state FROM inventory.reserve('X-TEE', 2, 'x-paid');
SELECT ok, status, state FROM inventory.confirm('x-paid');
SELECT ok, status, state FROM inventory.cancel('x-gone');
SELECT ok, status, state FROM inventory.confirm('x-late');
\c - shop_admin
SELECT ok, status, state FROM inventory.restock('X-MUG', 5, 'x-in-2');
\c - shop_app
SELECT ok, status, available FROM inventory.reserve('X-TEE', 1, 'x-one-more');
SELECT ok, status, available FROM inventory.reserve('X-MUG', 3, 'x-too-many');
-- the rules and the buyers come back with them: buyer-1 holds 2 units of
-- X-LIM, its limit
SELECT ok, status FROM inventory.reserve('X-LIM', 1, 'x-buyer-1', buyer_id => 'buyer-1');
SELECT ok, status FROM inventory.reserve('X-LIM', 1, 'x-buyer-2', buyer_id => 'buyer-2');
SELECT ok, status FROM inventory.reserve('X-LIM', 1, 'x-buyer-3');
SELECT ok, status, state FROM inventory.confirm('x-open', 2);

-- a row that the state machine cannot have produced is refused, and with
-- it the whole COPY
\c - postgres
SET search_path = public, inventory;
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
y-1	1	reserve	X-TEE	1	\N	PENDING	2026-01-01 10:00:00+00	2099-01-01 00:00:00+00	\N	f	\N
y-2	1	reserve	X-TEE	1	\N	PENDING	2026-01-01 10:00:00+00	2099-01-01 00:00:00+00	2026-01-01 10:01:00+00	f	\N
\.
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
y-3	1	reserve	X-TEE	1	\N	CONFIRMED	2026-01-01 10:00:00+00	2099-01-01 00:00:00+00	\N	f	\N
\.
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
y-4	1	reserve	X-TEE	1	\N	PENDING	2026-01-01 10:00:00+00	2099-01-01 00:00:00+00	\N	t	\N
\.
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
y-5	1	reserve	X-TEE	1	\N	EXPIRED	2026-01-01 10:00:00+00	2026-01-01 10:15:00+00	2026-01-01 10:14:00+00	f	\N
\.
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
y-6	1	reserve	X-TEE	1	\N	CANCELLED	2026-01-01 10:00:00+00	2026-01-01 10:15:00+00	2026-01-01 09:59:00+00	f	\N
\.
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
y-7	1	restock	X-TEE	1	\N	PENDING	2026-01-01 10:00:00+00	\N	\N	f	\N
\.
\c - shop_admin
SELECT count(*) AS landed FROM inventory.ledger WHERE order_id LIKE 'y-%';

-- a dump of 0.3 names settled_by, which is restored as it was; a value it
-- cannot have, or one on a PENDING reservation, is refused
\c - postgres
SET search_path = public, inventory;
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id, settled_by) FROM stdin;
v-1	1	reserve	X-TEE	1	\N	CANCELLED	2026-01-01 10:00:00+00	2026-01-01 10:15:00+00	2026-01-01 10:01:00+00	f	\N	call
v-1	2	reserve	X-TEE	1	\N	EXPIRED	2026-01-01 10:00:00+00	2026-01-01 10:15:00+00	2026-01-01 10:15:00+00	f	\N	expiry
\.
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id, settled_by) FROM stdin;
v-2	1	reserve	X-TEE	1	\N	CANCELLED	2026-01-01 10:00:00+00	2026-01-01 10:15:00+00	2026-01-01 10:01:00+00	f	\N	nobody
\.
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id, settled_by) FROM stdin;
v-3	1	reserve	X-TEE	1	\N	PENDING	2026-01-01 10:00:00+00	2099-01-01 00:00:00+00	\N	f	\N	call
\.
-- what the application reads of restored reservations: settled_by as
-- restored, none in a 0.2 dump's rows; a restock is not a reservation
\c - shop_app
SELECT * FROM inventory.reservation('v-1');
SELECT * FROM inventory.reservation('x-paid');
SELECT count(*) AS restocks FROM inventory.reservation('x-in-1');

-- movements that together take more than the SKU has are refused as a
-- whole, whatever their order
\c - postgres
SET search_path = public, inventory;
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
z-1	1	restock	X-MUG	1	\N	\N	2026-01-01 10:00:00+00	\N	\N	f	\N
z-2	1	reserve	X-MUG	4	\N	CONFIRMED	2026-01-01 10:00:00+00	2099-01-01 00:00:00+00	2026-01-01 10:01:00+00	f	\N
\.
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
z-3	1	reserve	X-MUG	4	\N	PENDING	2026-01-01 10:00:00+00	2099-01-01 00:00:00+00	\N	f	\N
z-4	1	restock	X-MUG	1	\N	\N	2026-01-01 10:00:00+00	\N	\N	f	\N
\.
-- but in any order when they add up
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
z-5	1	reserve	X-MUG	3	\N	CONFIRMED	2026-01-01 10:00:00+00	2099-01-01 00:00:00+00	2026-01-01 10:01:00+00	f	\N
z-6	1	restock	X-MUG	3	\N	\N	2026-01-01 10:00:00+00	\N	\N	f	\N
\.
\c - shop_app
SELECT * FROM inventory.stock WHERE sku = 'X-MUG';

-- the ledger may come before the SKUs' base rows (a parallel pg_restore):
-- until its base row arrives, the SKU does not exist
\c - postgres
SET search_path = public, inventory;
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
w-in	1	restock	X-CAP	2	\N	\N	2026-01-01 10:00:00+00	\N	\N	f	\N
w-sold	1	reserve	X-CAP	5	\N	CONFIRMED	2026-01-01 10:01:00+00	2026-01-01 10:16:00+00	2026-01-01 10:02:00+00	f	\N
w-open	1	reserve	X-CAP	1	\N	PENDING	2026-01-01 10:01:00+00	2099-01-01 00:00:00+00	\N	f	\N
\.
\c - shop_app
SELECT ok, status FROM inventory.reserve('X-CAP', 1, 'w-early');
SELECT inventory.available('X-CAP');
\c - shop_admin
SELECT count(*) AS folded FROM (SELECT inventory.fold()) f, inventory.ledger
 WHERE sku = 'X-CAP' AND folded;
SELECT * FROM inventory.stock WHERE sku = 'X-CAP';
-- a base that does not add up with them is refused
\c - postgres
SET search_path = public, inventory;
COPY inventory.sku FROM stdin;
X-CAP	2	0	2026-01-01 10:00:00+00	\N	\N	\N
\.
COPY inventory.sku FROM stdin;
X-CAP	4	0	2026-01-01 10:00:00+00	\N	\N	\N
\.
\c - shop_app
SELECT * FROM inventory.stock WHERE sku = 'X-CAP';
SELECT ok, status, available FROM inventory.reserve('X-CAP', 1, 'w-late');
\c - shop_monitor
SELECT * FROM inventory.verify();

-- a base below zero waits for the movements that bring it back: the
-- ledger's restore refuses it when they are not there
\c - postgres
SET search_path = public, inventory;
COPY inventory.sku FROM stdin;
X-BAD	-1	0	2026-01-01 10:00:00+00	\N	\N	\N
\.
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
v-in	1	restock	X-MUG	1	\N	\N	2026-01-01 10:00:00+00	\N	\N	f	\N
\.
\c - shop_admin
SELECT count(*) AS landed FROM inventory.ledger WHERE order_id = 'v-in';
DELETE FROM inventory.sku WHERE sku = 'X-BAD';

-- a restore does not go through the cache, so it takes any number of
-- SKUs: more than the cache holds (inventory.max_skus is 1000 here)
\c - postgres
SET search_path = public, inventory;
COPY inventory.sku FROM PROGRAM $$seq 1 1500 | awk '{printf "X-MANY-%d\t0\t0\t2026-01-01 00:00:00+00\t\\N\t\\N\t\\N\n", $1}'$$;
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM PROGRAM $$seq 1 1500 | awk '{printf "m-%d\t1\trestock\tX-MANY-%d\t2\t\\N\t\\N\t2026-01-01 00:00:00+00\t\\N\t\\N\tf\t\\N\n", $1, $1}'$$;
\c - shop_app
SELECT count(*) AS skus, sum(available) AS available FROM inventory.stock WHERE sku LIKE 'X-MANY-%';
SELECT count(*) AS on_sale FROM generate_series(1, 1500) i
 WHERE inventory.available('X-MANY-' || i) = 2;
\c - shop_monitor
SELECT count(*) FROM inventory.verify();

-- a SKU created by hand or by restock() meets the movements restored
-- without it, and must add up with them
\c - postgres
SET search_path = public, inventory;
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
t-sold	1	reserve	X-HAT	3	\N	CONFIRMED	2026-01-01 10:01:00+00	2026-01-01 10:16:00+00	2026-01-01 10:02:00+00	f	\N
\.
\c - shop_admin
SELECT ok, status FROM inventory.restock('X-HAT', 5, 't-in');
INSERT INTO inventory.sku (sku, on_hand) VALUES ('X-HAT', 2);
INSERT INTO inventory.sku (sku, on_hand) VALUES ('X-HAT', 3);
SELECT * FROM inventory.stock WHERE sku = 'X-HAT';

-- after a restore, its transaction changes nothing else until it commits;
-- a restore must come first in its transaction (the calls are the
-- owner's, in the restoring transaction itself)
\c - postgres
SET search_path = public, inventory;
BEGIN;
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
s-1	1	restock	X-TEE	1	\N	\N	2026-01-01 10:00:00+00	\N	\N	f	\N
\.
SELECT inventory.available('X-TEE');
SELECT ok, status FROM inventory.reserve('X-TEE', 1, 's-2');
ROLLBACK;
BEGIN;
SELECT ok, status FROM inventory.restock('X-TEE', 1, 's-3');
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id) FROM stdin;
s-4	1	restock	X-TEE	1	\N	\N	2026-01-01 10:00:00+00	\N	\N	f	\N
\.
ROLLBACK;
\c - shop_admin
SELECT count(*) AS landed FROM inventory.ledger WHERE order_id LIKE 's-%';

-- COPY of some columns, or by anyone but the owner, is not a restore: its
-- rows are new movements
\c - postgres
SET search_path = public, inventory;
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, state) FROM stdin;
u-1	1	reserve	X-TEE	1	CONFIRMED
\.
\c - shop_admin
COPY inventory.ledger (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at, folded, buyer_id, settled_by) FROM stdin;
u-2	1	reserve	X-TEE	1	\N	CONFIRMED	2026-01-01 10:00:00+00	2099-01-01 00:00:00+00	2026-01-01 10:01:00+00	f	\N	call
\.
-- INSERT never is, not even the owner's
\c - postgres
SET search_path = public, inventory;
INSERT INTO inventory.ledger
VALUES ('u-3', 1, 'reserve', 'X-TEE', 1, NULL, 'CONFIRMED', '2026-01-01 10:00:00+00',
		'2099-01-01 00:00:00+00', '2026-01-01 10:01:00+00', false);

\c - shop_app
SELECT * FROM inventory.stock WHERE sku LIKE 'X-%' AND sku NOT LIKE 'X-MANY-%' ORDER BY sku;
\c - shop_monitor
SELECT * FROM inventory.verify();

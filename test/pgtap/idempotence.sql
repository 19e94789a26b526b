-- idempotence.sql: invariant I3 -- a call replayed with the same key returns
-- the same result (status duplicate where the first call succeeded, the
-- same ok) and changes nothing: inventory.stock, inventory.ledger and
-- inventory.available() are snapshotted before the replays and compared
-- after them.  Replays are checked against committed originals, against
-- originals of the replaying transaction itself, and twice in a row.
--
-- All names carry a prefix unique to this run; every reservation left
-- behind is settled.

\set name idempotence
\ir lib/setup.sql

-- first results, to compare the replays with
CREATE TEMP TABLE kept (label text PRIMARY KEY, r inventory.result);
CREATE FUNCTION pg_temp.keep(label text, r inventory.result) RETURNS inventory.result
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO kept VALUES (label, r);
	RETURN r;
END $$;
CREATE FUNCTION pg_temp.first(label text) RETURNS inventory.result LANGUAGE sql STABLE
AS $$ SELECT r FROM kept WHERE kept.label = first.label $$;

SELECT plan(92);

------------------------------------------------------------------------------
-- committed originals
------------------------------------------------------------------------------

SELECT is(pg_temp.res_id(pg_temp.keep('restock r1', inventory.restock(pg_temp.n('A'), 20, pg_temp.n('r1')))),
		  'ok=true status=ok sku=A qty=20 state=NULL', 'original: restock');
SELECT is(pg_temp.res_id(pg_temp.keep('adjust a1', inventory.adjust(pg_temp.n('A'), 30, pg_temp.n('a1')))),
		  'ok=true status=ok sku=A qty=30 state=NULL', 'original: adjust');
SELECT is(pg_temp.res_id(pg_temp.keep('reserve p', inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('p'), ttl => '1 hour'))),
		  'ok=true status=ok sku=A qty=2 state=PENDING', 'original: reserve p (stays PENDING)');
SELECT is(pg_temp.res_id(pg_temp.keep('reserve c', inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('c')))),
		  'ok=true status=ok sku=A qty=3 state=PENDING', 'original: reserve c');
SELECT is(pg_temp.res_id(pg_temp.keep('confirm c', inventory.confirm(pg_temp.n('c')))),
		  'ok=true status=ok sku=A qty=3 state=CONFIRMED', 'original: confirm c');
SELECT is(pg_temp.res_id(pg_temp.keep('extend c', inventory.extend(pg_temp.n('c'), 1, '1 hour'))),
		  'ok=false status=confirmed sku=A qty=3 state=CONFIRMED', 'original: extend of CONFIRMED c');
SELECT is(pg_temp.res_id(pg_temp.keep('reserve x', inventory.reserve(pg_temp.n('A'), 4, pg_temp.n('x')))),
		  'ok=true status=ok sku=A qty=4 state=PENDING', 'original: reserve x');
SELECT is(pg_temp.res_id(pg_temp.keep('cancel x', inventory.cancel(pg_temp.n('x')))),
		  'ok=true status=ok sku=A qty=4 state=CANCELLED', 'original: cancel x');
SELECT is(pg_temp.res_id(pg_temp.keep('confirm x', inventory.confirm(pg_temp.n('x')))),
		  'ok=false status=cancelled sku=A qty=4 state=CANCELLED', 'original: confirm of CANCELLED x');
-- made and confirmed in one transaction, before the worker can expire it
BEGIN;
SELECT lives_ok($$SELECT pg_temp.overdue('e', 'A', 1)$$, 'original: an overdue reservation e');
SELECT is(pg_temp.res_id(pg_temp.keep('confirm e', inventory.confirm(pg_temp.n('e')))),
		  'ok=false status=expired sku=A qty=1 state=EXPIRED', 'original: confirm of overdue e');
COMMIT;
SELECT is(pg_temp.res_id(pg_temp.keep('cancel e', inventory.cancel(pg_temp.n('e')))),
		  'ok=true status=expired sku=A qty=1 state=EXPIRED', 'original: cancel of EXPIRED e');
SELECT is(pg_temp.counters('A'), 'on_hand=27 reserved=2 available=25 version=9 live=25',
		  'counters after the originals');

------------------------------------------------------------------------------
-- replays of committed originals, each in its own transaction
------------------------------------------------------------------------------

SELECT lives_ok('SELECT pg_temp.snapshot()', 'snapshot before the replays');

-- restock
SELECT is(pg_temp.res_id(pg_temp.keep('replay restock r1', inventory.restock(pg_temp.n('A'), 20, pg_temp.n('r1')))),
		  'ok=true status=duplicate sku=A qty=20 state=NULL', 'replayed restock: duplicate');
SELECT is((pg_temp.first('replay restock r1')).ok, (pg_temp.first('restock r1')).ok,
		  'replayed restock: same ok');
-- adjust
SELECT is(pg_temp.res_id(pg_temp.keep('replay adjust a1', inventory.adjust(pg_temp.n('A'), 30, pg_temp.n('a1')))),
		  'ok=true status=duplicate sku=A qty=30 state=NULL', 'replayed adjust: duplicate, qty is the count');
SELECT is((pg_temp.first('replay adjust a1')).ok, (pg_temp.first('adjust a1')).ok,
		  'replayed adjust: same ok');
-- reserve, PENDING
SELECT is(pg_temp.res_id(pg_temp.keep('replay reserve p', inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('p'), ttl => '1 hour'))),
		  'ok=true status=duplicate sku=A qty=2 state=PENDING', 'replayed reserve (PENDING): duplicate');
SELECT is((pg_temp.first('replay reserve p')).ok, (pg_temp.first('reserve p')).ok,
		  'replayed reserve (PENDING): same ok');
SELECT is((pg_temp.first('replay reserve p')).expires_at, (pg_temp.first('reserve p')).expires_at,
		  'replayed reserve (PENDING): the original expires_at, not a new one');
-- a replay with another ttl is still the same movement
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('p'), ttl => '3 hours')),
		  'ok=true status=duplicate sku=A qty=2 state=PENDING', 'replayed reserve with another ttl: duplicate');
-- reserve, CONFIRMED / CANCELLED / EXPIRED
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('c'))),
		  'ok=true status=duplicate sku=A qty=3 state=CONFIRMED', 'replayed reserve (CONFIRMED): duplicate');
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 4, pg_temp.n('x'))),
		  'ok=true status=duplicate sku=A qty=4 state=CANCELLED', 'replayed reserve (CANCELLED): duplicate');
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('e'))),
		  'ok=true status=duplicate sku=A qty=1 state=EXPIRED', 'replayed reserve (EXPIRED): duplicate');
-- confirm
SELECT is(pg_temp.res_id(pg_temp.keep('replay confirm c', inventory.confirm(pg_temp.n('c')))),
		  'ok=true status=duplicate sku=A qty=3 state=CONFIRMED', 'replayed confirm: duplicate');
SELECT is((pg_temp.first('replay confirm c')).ok, (pg_temp.first('confirm c')).ok,
		  'replayed confirm: same ok');
-- cancel
SELECT is(pg_temp.res_id(pg_temp.keep('replay cancel x', inventory.cancel(pg_temp.n('x')))),
		  'ok=true status=duplicate sku=A qty=4 state=CANCELLED', 'replayed cancel: duplicate');
SELECT is((pg_temp.first('replay cancel x')).ok, (pg_temp.first('cancel x')).ok,
		  'replayed cancel: same ok');
-- refusals replay to the same refusal
SELECT is(pg_temp.res_id(inventory.confirm(pg_temp.n('x'))), pg_temp.res_id(pg_temp.first('confirm x')),
		  'replayed confirm of a CANCELLED reservation: the same result');
SELECT is(pg_temp.res_id(inventory.confirm(pg_temp.n('e'))), pg_temp.res_id(pg_temp.first('confirm e')),
		  'replayed confirm of an expired reservation: the same result');
SELECT is(pg_temp.res_id(inventory.cancel(pg_temp.n('e'))), pg_temp.res_id(pg_temp.first('cancel e')),
		  'replayed cancel of an EXPIRED reservation: the same result (ok)');
SELECT is(pg_temp.res_id(inventory.extend(pg_temp.n('c'), 1, '1 hour')), pg_temp.res_id(pg_temp.first('extend c')),
		  'replayed extend of a CONFIRMED reservation: the same result');

SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku',
				  'SELECT * FROM snap_stock ORDER BY sku',
				  'after the replays: inventory.stock unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'after the replays: inventory.ledger unchanged, every column but folded');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku',
				  'SELECT * FROM snap_live ORDER BY sku',
				  'after the replays: inventory.available() unchanged');
SELECT is(pg_temp.counters('A'), 'on_hand=27 reserved=2 available=25 version=9 live=25',
		  'after the replays: the counters are those of the originals');

------------------------------------------------------------------------------
-- the same replays again, all in one transaction
------------------------------------------------------------------------------

BEGIN;
SELECT is(pg_temp.res_id(inventory.restock(pg_temp.n('A'), 20, pg_temp.n('r1'))),
		  'ok=true status=duplicate sku=A qty=20 state=NULL', 'second replay of restock: duplicate');
SELECT is(pg_temp.res_id(inventory.adjust(pg_temp.n('A'), 30, pg_temp.n('a1'))),
		  'ok=true status=duplicate sku=A qty=30 state=NULL', 'second replay of adjust: duplicate');
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('p'))),
		  'ok=true status=duplicate sku=A qty=2 state=PENDING', 'second replay of reserve (PENDING): duplicate');
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('c'))),
		  'ok=true status=duplicate sku=A qty=3 state=CONFIRMED', 'second replay of reserve (CONFIRMED): duplicate');
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 4, pg_temp.n('x'))),
		  'ok=true status=duplicate sku=A qty=4 state=CANCELLED', 'second replay of reserve (CANCELLED): duplicate');
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('e'))),
		  'ok=true status=duplicate sku=A qty=1 state=EXPIRED', 'second replay of reserve (EXPIRED): duplicate');
SELECT is(pg_temp.res_id(inventory.confirm(pg_temp.n('c'))),
		  'ok=true status=duplicate sku=A qty=3 state=CONFIRMED', 'second replay of confirm: duplicate');
SELECT is(pg_temp.res_id(inventory.cancel(pg_temp.n('x'))),
		  'ok=true status=duplicate sku=A qty=4 state=CANCELLED', 'second replay of cancel: duplicate');
SELECT is(inventory.available(pg_temp.n('A')), 25::bigint,
		  'inside the replaying transaction: available() unchanged (no hold kept)');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'inside the replaying transaction: inventory.ledger unchanged');
COMMIT;

SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku',
				  'SELECT * FROM snap_stock ORDER BY sku',
				  'after the second replays: inventory.stock unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'after the second replays: inventory.ledger unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku',
				  'SELECT * FROM snap_live ORDER BY sku',
				  'after the second replays: inventory.available() unchanged');

------------------------------------------------------------------------------
-- replays of the transaction's own, uncommitted originals
------------------------------------------------------------------------------

BEGIN;
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 5, pg_temp.n('t1'))),
		  'ok=true status=ok sku=A qty=5 state=PENDING', 'in a transaction: reserve t1');
SELECT is(pg_temp.res_id(inventory.restock(pg_temp.n('A'), 7, pg_temp.n('tr'))),
		  'ok=true status=ok sku=A qty=7 state=NULL', 'in a transaction: restock tr');
SELECT is(pg_temp.res_id(inventory.adjust(pg_temp.n('A'), 40, pg_temp.n('ta'))),
		  'ok=true status=ok sku=A qty=40 state=NULL', 'in a transaction: adjust ta');
SELECT is(pg_temp.counters('A'), 'on_hand=40 reserved=7 available=33 version=12 live=20',
		  'in a transaction: own changes in the view; live counts the own hold of 5, not the uncommitted restock');
SELECT lives_ok('SELECT pg_temp.snapshot()', 'in a transaction: snapshot');
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 5, pg_temp.n('t1'))),
		  'ok=true status=duplicate sku=A qty=5 state=PENDING', 'own reserve replayed: duplicate');
SELECT is(pg_temp.res_id(inventory.restock(pg_temp.n('A'), 7, pg_temp.n('tr'))),
		  'ok=true status=duplicate sku=A qty=7 state=NULL', 'own restock replayed: duplicate');
SELECT is(pg_temp.res_id(inventory.adjust(pg_temp.n('A'), 40, pg_temp.n('ta'))),
		  'ok=true status=duplicate sku=A qty=40 state=NULL', 'own adjust replayed: duplicate');
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku',
				  'SELECT * FROM snap_stock ORDER BY sku',
				  'own replays: inventory.stock unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'own replays: inventory.ledger unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku',
				  'SELECT * FROM snap_live ORDER BY sku',
				  'own replays: inventory.available() unchanged');
SELECT is(pg_temp.res_id(inventory.confirm(pg_temp.n('t1'))),
		  'ok=true status=ok sku=A qty=5 state=CONFIRMED', 'in a transaction: confirm t1');
SELECT lives_ok('SELECT pg_temp.snapshot()', 'in a transaction: snapshot after the confirm');
SELECT is(pg_temp.res_id(inventory.confirm(pg_temp.n('t1'))),
		  'ok=true status=duplicate sku=A qty=5 state=CONFIRMED', 'own confirm replayed: duplicate');
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 5, pg_temp.n('t1'))),
		  'ok=true status=duplicate sku=A qty=5 state=CONFIRMED', 'own reserve replayed after the confirm: duplicate');
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku',
				  'SELECT * FROM snap_stock ORDER BY sku',
				  'own confirm replayed: inventory.stock unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'own confirm replayed: inventory.ledger unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku',
				  'SELECT * FROM snap_live ORDER BY sku',
				  'own confirm replayed: inventory.available() unchanged');
COMMIT;

SELECT is(pg_temp.counters('A'), 'on_hand=35 reserved=2 available=33 version=13 live=33',
		  'after commit: each movement counted once');
SELECT is((SELECT count(*) FROM pg_temp.my_ledger WHERE order_id IN (pg_temp.n('t1'), pg_temp.n('tr'), pg_temp.n('ta'))),
		  3::bigint, 'after commit: one ledger row per key');

------------------------------------------------------------------------------
-- replayed cancel of a PENDING reservation, in one transaction and after
------------------------------------------------------------------------------

SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('t3'))),
		  'ok=true status=ok sku=A qty=3 state=PENDING', 'reserve t3');
BEGIN;
SELECT is(pg_temp.res_id(inventory.cancel(pg_temp.n('t3'))),
		  'ok=true status=ok sku=A qty=3 state=CANCELLED', 'cancel t3');
SELECT lives_ok('SELECT pg_temp.snapshot()', 'snapshot after the cancel');
SELECT is(pg_temp.res_id(inventory.cancel(pg_temp.n('t3'))),
		  'ok=true status=duplicate sku=A qty=3 state=CANCELLED', 'cancel replayed in the same transaction: duplicate');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'cancel replayed in the same transaction: inventory.ledger unchanged');
COMMIT;
SELECT is(pg_temp.counters('A'), 'on_hand=35 reserved=2 available=33 version=15 live=33',
		  'after commit: the cancel counted once');
SELECT lives_ok('SELECT pg_temp.snapshot()', 'snapshot after commit');
SELECT is(pg_temp.res_id(inventory.cancel(pg_temp.n('t3'))),
		  'ok=true status=duplicate sku=A qty=3 state=CANCELLED', 'cancel replayed after commit: duplicate');
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku',
				  'SELECT * FROM snap_stock ORDER BY sku',
				  'cancel replayed after commit: inventory.stock unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'cancel replayed after commit: inventory.ledger unchanged');

------------------------------------------------------------------------------
-- extend is not a movement: a replay moves the expiry again, from its own
-- now, and changes no counter
------------------------------------------------------------------------------

SELECT lives_ok('SELECT pg_temp.snapshot()', 'snapshot before extending');
SELECT is((inventory.extend(pg_temp.n('p'), 1, '2 hours')).expires_at - statement_timestamp(),
		  interval '2 hours', 'extend: expires now + ttl');
SELECT is((inventory.extend(pg_temp.n('p'), 1, '2 hours')).expires_at - statement_timestamp(),
		  interval '2 hours', 'extend replayed: ok again, expires at its own now + ttl');
SELECT is(pg_temp.res_id(inventory.extend(pg_temp.n('p'), 1, '2 hours')),
		  'ok=true status=ok sku=A qty=2 state=PENDING', 'extend replayed: ok, PENDING');
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku',
				  'SELECT * FROM snap_stock ORDER BY sku',
				  'extend replayed: inventory.stock unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku',
				  'SELECT * FROM snap_live ORDER BY sku',
				  'extend replayed: inventory.available() unchanged');
SELECT results_eq($$SELECT order_id, batch_id, kind, sku, qty, counted, state::text, created_at, settled_at
					  FROM pg_temp.my_ledger ORDER BY order_id, batch_id$$,
				  $$SELECT order_id, batch_id, kind, sku, qty, counted, state::text, created_at, settled_at
					  FROM snap_ledger ORDER BY order_id, batch_id$$,
				  'extend replayed: the ledger unchanged but for expires_at');
SELECT results_eq($$SELECT order_id, expires_at FROM pg_temp.my_ledger WHERE order_id <> pg_temp.n('p') ORDER BY 1$$,
				  $$SELECT order_id, expires_at FROM snap_ledger WHERE order_id <> pg_temp.n('p') ORDER BY 1$$,
				  'extend replayed: no other expires_at moved');

------------------------------------------------------------------------------
-- settle what is left
------------------------------------------------------------------------------

SELECT is(pg_temp.res_id(inventory.cancel(pg_temp.n('p'))),
		  'ok=true status=ok sku=A qty=2 state=CANCELLED', 'cancel p');
SELECT is(pg_temp.counters('A'), 'on_hand=35 reserved=0 available=35 version=16 live=35',
		  'final counters');
SELECT is((SELECT count(*) FROM pg_temp.my_ledger WHERE state::text = 'PENDING'), 0::bigint,
		  'no reservation of this file is left PENDING');
SELECT is_empty('SELECT * FROM inventory.verify()', 'inventory.verify() is empty');

SELECT * FROM finish();

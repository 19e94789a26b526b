-- idempotence.sql: invariant I3 -- a call replayed with the same key returns
-- the same result (status duplicate where the first call succeeded, the
-- same ok) and changes nothing: inventory.stock, inventory.ledger and
-- inventory.available() are snapshotted before the replays and compared
-- after them.  Replays are checked against committed originals, against
-- originals of the replaying transaction itself, and twice in a row.
--
-- The application (shop_app) makes the reservations of this session,
-- in its transactions; the administrator restocks and takes stock through
-- its connection, in transactions of its own, and reads the ledger, which
-- the application may not: what the application's transaction has not
-- committed yet is compared through inventory.stock and available(),
-- which it reads, and the ledger once it commits.  All names carry a prefix
-- unique to this run; every reservation left behind is settled.

\set name idempotence
\set role shop_app
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

-- the administrator's restock and stocktake of this run's A
CREATE FUNCTION pg_temp.restock_a(q bigint, o text) RETURNS inventory.result LANGUAGE sql
AS $$ SELECT pg_temp.admin_r(format('inventory.restock(%L, %s, %L)', pg_temp.n('A'), q, pg_temp.n(o))) $$;
CREATE FUNCTION pg_temp.adjust_a(q bigint, o text) RETURNS inventory.result LANGUAGE sql
AS $$ SELECT pg_temp.admin_r(format('inventory.adjust(%L, %s, %L)', pg_temp.n('A'), q, pg_temp.n(o))) $$;

-- A's row of inventory.stock and this run's ledger rows (but folded), as
-- the administrator's connection sees them -- inside its transaction, when
-- one is open there
CREATE FUNCTION pg_temp.admin_view() RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.admin_says(format($f$
	SELECT (SELECT s::text FROM inventory.stock s WHERE sku = %L) || ' ' ||
		   (SELECT string_agg(l::text, ' ' ORDER BY l.order_id, l.batch_id)
			  FROM (SELECT order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at
					  FROM inventory.ledger WHERE starts_with(order_id, %L)) l)$f$,
	pg_temp.n('A'), current_setting('inventory_test.prefix'))) $$;

SELECT plan(86);

------------------------------------------------------------------------------
-- committed originals
------------------------------------------------------------------------------

SELECT is(pg_temp.res_id(pg_temp.keep('restock r1', pg_temp.restock_a(20, 'r1'))),
		  'ok=true status=ok sku=A qty=20 state=NULL', 'original: restock');
SELECT is(pg_temp.res_id(pg_temp.keep('adjust a1', pg_temp.adjust_a(30, 'a1'))),
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
-- an overdue reservation e, made by hand by the administrator
SELECT pg_temp.overdue('e', 'A', 1) \g /dev/null
SELECT is(pg_temp.res_id(pg_temp.keep('confirm e', inventory.confirm(pg_temp.n('e')))),
		  'ok=false status=expired sku=A qty=1 state=EXPIRED', 'original: confirm of overdue e');
SELECT is(pg_temp.res_id(pg_temp.keep('cancel e', inventory.cancel(pg_temp.n('e')))),
		  'ok=true status=expired sku=A qty=1 state=EXPIRED', 'original: cancel of EXPIRED e');
SELECT is(pg_temp.counters('A'), 'on_hand=27 reserved=2 available=25 version=9 live=25',
		  'counters after the originals');

------------------------------------------------------------------------------
-- replays of committed originals, each in its own transaction
------------------------------------------------------------------------------

-- snapshot before the replays
SELECT pg_temp.snapshot() \g /dev/null

-- restock
SELECT is(pg_temp.res_id(pg_temp.keep('replay restock r1', pg_temp.restock_a(20, 'r1'))),
		  'ok=true status=duplicate sku=A qty=20 state=NULL', 'replayed restock: duplicate');
SELECT is((pg_temp.first('replay restock r1')).ok, (pg_temp.first('restock r1')).ok,
		  'replayed restock: same ok');
-- adjust
SELECT is(pg_temp.res_id(pg_temp.keep('replay adjust a1', pg_temp.adjust_a(30, 'a1'))),
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
-- the same replays again, all in one transaction of each role's
------------------------------------------------------------------------------

SELECT pg_temp.admin_view() AS admin_before \gset
SELECT pg_temp.as_admin('BEGIN') \g /dev/null
SELECT is(pg_temp.res_id(pg_temp.restock_a(20, 'r1')),
		  'ok=true status=duplicate sku=A qty=20 state=NULL', 'second replay of restock: duplicate');
SELECT is(pg_temp.res_id(pg_temp.adjust_a(30, 'a1')),
		  'ok=true status=duplicate sku=A qty=30 state=NULL', 'second replay of adjust: duplicate');
SELECT is(pg_temp.admin_view(), :'admin_before',
		  'inside the administrator''s replaying transaction: its inventory.stock and inventory.ledger unchanged');
SELECT pg_temp.as_admin('COMMIT') \g /dev/null

BEGIN;
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
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku',
				  'SELECT * FROM snap_stock ORDER BY sku',
				  'inside the replaying transaction: inventory.stock unchanged, as the transaction sees it');
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
-- replays of the transaction's own, uncommitted originals: the
-- administrator's restock and stocktake in its transaction, the
-- application's reservation in its own
------------------------------------------------------------------------------

SELECT pg_temp.as_admin('BEGIN') \g /dev/null
SELECT is(pg_temp.res_id(pg_temp.restock_a(7, 'tr')),
		  'ok=true status=ok sku=A qty=7 state=NULL', 'in a transaction of the administrator''s: restock tr');
SELECT is(pg_temp.res_id(pg_temp.adjust_a(40, 'ta')),
		  'ok=true status=ok sku=A qty=40 state=NULL', 'in that transaction: adjust ta');
SELECT pg_temp.admin_view() AS admin_own \gset
SELECT is(pg_temp.counters('A'), 'on_hand=27 reserved=2 available=25 version=9 live=25',
		  'in that transaction: nothing shows to the application before the commit');
SELECT is(pg_temp.res_id(pg_temp.restock_a(7, 'tr')),
		  'ok=true status=duplicate sku=A qty=7 state=NULL', 'own restock replayed: duplicate');
SELECT is(pg_temp.res_id(pg_temp.adjust_a(40, 'ta')),
		  'ok=true status=duplicate sku=A qty=40 state=NULL', 'own adjust replayed: duplicate');
SELECT is(pg_temp.admin_view(), :'admin_own',
		  'own replays of the administrator: inventory.stock and inventory.ledger unchanged, as its transaction sees them');
SELECT pg_temp.as_admin('COMMIT') \g /dev/null

BEGIN;
SELECT is(pg_temp.res_id(pg_temp.keep('own reserve t1', inventory.reserve(pg_temp.n('A'), 5, pg_temp.n('t1')))),
		  'ok=true status=ok sku=A qty=5 state=PENDING', 'in a transaction: reserve t1');
SELECT is(pg_temp.counters('A'), 'on_hand=40 reserved=7 available=33 version=12 live=33',
		  'in a transaction: own change in the view; live counts the own hold of 5');
-- snapshot, in the transaction (its ledger: the administrator's view, committed)
SELECT pg_temp.snapshot() \g /dev/null
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 5, pg_temp.n('t1'))),
		  'ok=true status=duplicate sku=A qty=5 state=PENDING', 'own reserve replayed: duplicate');
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku',
				  'SELECT * FROM snap_stock ORDER BY sku',
				  'own replay: inventory.stock unchanged, as the transaction sees it');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku',
				  'SELECT * FROM snap_live ORDER BY sku',
				  'own replay: inventory.available() unchanged');
SELECT is(pg_temp.res_id(inventory.confirm(pg_temp.n('t1'))),
		  'ok=true status=ok sku=A qty=5 state=CONFIRMED', 'in a transaction: confirm t1');
-- snapshot after the confirm
SELECT pg_temp.snapshot() \g /dev/null
SELECT is(pg_temp.res_id(inventory.confirm(pg_temp.n('t1'))),
		  'ok=true status=duplicate sku=A qty=5 state=CONFIRMED', 'own confirm replayed: duplicate');
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 5, pg_temp.n('t1'))),
		  'ok=true status=duplicate sku=A qty=5 state=CONFIRMED', 'own reserve replayed after the confirm: duplicate');
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku',
				  'SELECT * FROM snap_stock ORDER BY sku',
				  'own confirm replayed: inventory.stock unchanged, as the transaction sees it');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku',
				  'SELECT * FROM snap_live ORDER BY sku',
				  'own confirm replayed: inventory.available() unchanged');
COMMIT;

SELECT is(pg_temp.counters('A'), 'on_hand=35 reserved=2 available=33 version=13 live=33',
		  'after commit: each movement counted once');
SELECT is((SELECT count(*) FROM pg_temp.my_ledger WHERE order_id IN (pg_temp.n('t1'), pg_temp.n('tr'), pg_temp.n('ta'))),
		  3::bigint, 'after commit: one ledger row per key');
SELECT is((SELECT format('%s %s %s %s', kind, qty, state, expires_at = (pg_temp.first('own reserve t1')).expires_at)
			 FROM pg_temp.my_ledger WHERE order_id = pg_temp.n('t1')),
		  'reserve 5 CONFIRMED t', 'after commit: t1 is the reservation first made, confirmed');

------------------------------------------------------------------------------
-- replayed cancel of a PENDING reservation, in one transaction and after
------------------------------------------------------------------------------

SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('t3'))) \g /dev/null
BEGIN;
SELECT is(pg_temp.res_id(inventory.cancel(pg_temp.n('t3'))),
		  'ok=true status=ok sku=A qty=3 state=CANCELLED', 'cancel t3');
-- snapshot after the cancel
SELECT pg_temp.snapshot() \g /dev/null
SELECT is(pg_temp.res_id(inventory.cancel(pg_temp.n('t3'))),
		  'ok=true status=duplicate sku=A qty=3 state=CANCELLED', 'cancel replayed in the same transaction: duplicate');
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku',
				  'SELECT * FROM snap_stock ORDER BY sku',
				  'cancel replayed in the same transaction: inventory.stock unchanged, as the transaction sees it');
COMMIT;
SELECT is(pg_temp.counters('A'), 'on_hand=35 reserved=2 available=33 version=15 live=33',
		  'after commit: the cancel counted once');
-- snapshot after commit
SELECT pg_temp.snapshot() \g /dev/null
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

-- snapshot before extending
SELECT pg_temp.snapshot() \g /dev/null
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
SELECT is_empty('SELECT * FROM pg_temp.drift()', 'inventory.verify(''30 s'') is empty');

SELECT * FROM finish();

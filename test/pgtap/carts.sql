-- carts.sql: reserve_cart(), confirm_order() and cancel_order().
--
-- A cart is reserved whole or not at all: one result row per line in array
-- order, line i the movement (order_id, i), demand summed per SKU (stock
-- and the buyer's limit are checked on the sum).  A refused cart carries
-- the status of each SKU that cannot serve on its lines and cart_refused
-- on the others, and holds and writes nothing: no ledger row, no
-- transaction id, no WAL record (pg_temp.probe, before pgTAP writes).  A
-- call that reads ledger rows (a replay's, a buyer's) may prune their heap
-- page, as any read may, which writes WAL: VACUUM goes first there.
-- Replays answer duplicate on every line; an order_id reused for another
-- cart is an error.  confirm_order() and cancel_order() settle
-- every line as confirm() and cancel() would.  Every argument error with
-- its SQLSTATE; the messages, details and hints of those sql/cart.sql
-- shows are checked there, not here.
--
-- The application (shop_app) makes every call of this session; the
-- administrator restocks, sets the rules, writes an overdue line by hand
-- and reads the ledger through its connection.  SKUs are CT-*, under a
-- prefix unique to this run; every reservation left behind is settled.

\set name carts
\set role shop_app
\ir lib/setup.sql

-- this run's names for an array of SKUs
CREATE FUNCTION pg_temp.ns(skus text[]) RETURNS text[] LANGUAGE sql STABLE
AS $$ SELECT array_agg(pg_temp.n(s) ORDER BY i) FROM unnest(skus) WITH ORDINALITY u(s, i) $$;

-- the result rows of a call, in order, as pg_temp.res_id gives them
CREATE FUNCTION pg_temp.rows_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r inventory.result;
	answer text := NULL;
BEGIN
	FOR r IN EXECUTE sql LOOP
		answer := coalesce(answer || ' | ', '') || pg_temp.res_id(r);
	END LOOP;
	RETURN coalesce(answer, 'no rows');
END $$;

-- a cart with this run's names, for an hour; its result rows
CREATE FUNCTION pg_temp.cart(o text, skus text[], qtys bigint[], buyer text DEFAULT NULL,
							 ttl interval DEFAULT '1 hour')
RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.rows_of(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L, %L, %L)',
									 pg_temp.n(o), pg_temp.ns(skus), qtys, ttl, buyer)) $$;

-- the same, for a step of the set-up: raises unless every line is ok
CREATE FUNCTION pg_temp.cart_ok(o text, skus text[], qtys bigint[], buyer text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	rows text := pg_temp.cart(o, skus, qtys, buyer);
BEGIN
	IF rows ~ 'ok=false' OR rows !~ 'status=ok ' THEN
		RAISE EXCEPTION 'the cart % answered %', o, rows;
	END IF;
END $$;

-- a cart's result rows, and what it wrote
CREATE FUNCTION pg_temp.try_cart(o text, skus text[], qtys bigint[], buyer text DEFAULT NULL,
								 ttl interval DEFAULT '1 hour')
RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.probe(format('SELECT set_config(%L, pg_temp.cart(%L, %L, %L, %L, %L), false)',
								   'inventory_test.answer', o, skus, qtys, buyer, ttl)) $$;

-- confirm_order() or cancel_order() of an order of this run
CREATE FUNCTION pg_temp.settle(fn text, o text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.rows_of(format('SELECT * FROM inventory.%I(%L)', fn, pg_temp.n(o))) $$;

-- the ledger rows of an order: batch:sku/qty/buyer/state
CREATE FUNCTION pg_temp.lines(o text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.read1(format($f$SELECT coalesce(string_agg(format('%%s:%%s/%%s/%%s/%%s', batch_id,
										replace(sku, %L, ''), qty, coalesce(buyer_id, 'NULL'), state), ' ' ORDER BY batch_id), 'none')
		FROM inventory.ledger WHERE order_id = %L$f$, current_setting('inventory_test.prefix'), pg_temp.n(o))) $$;

-- live available of SKUs, as 'A=n B=n'
CREATE FUNCTION pg_temp.live(skus text[]) RETURNS text LANGUAGE sql
AS $$ SELECT string_agg(format('%s=%s', s, coalesce(inventory.available(pg_temp.n(s))::text, 'NULL')), ' ' ORDER BY i)
		FROM unnest(skus) WITH ORDINALITY u(s, i) $$;

-- an overdue PENDING reservation (order o, batch b), made by hand by the
-- administrator
CREATE FUNCTION pg_temp.overdue_line(o text, b int, s text, q bigint) RETURNS void LANGUAGE sql
AS $$ SELECT pg_temp.write(format($f$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
									 VALUES (%L, %s, 'reserve', %L, %s, now() - interval '1 minute')$f$,
								  pg_temp.n(o), b, pg_temp.n(s), q)) $$;

SELECT plan(75);

------------------------------------------------------------------------------
-- set-up: CT-A, CT-B 10 units; CT-C 3; CT-S 5; CT-L, CT-M 10 with a limit
-- of 3 per buyer; CT-W 10, on sale in an hour
------------------------------------------------------------------------------

SELECT pg_temp.restock(s, q, 'd-' || s)
  FROM (VALUES ('CT-A', 10), ('CT-B', 10), ('CT-C', 3), ('CT-L', 10), ('CT-M', 10),
			   ('CT-S', 5), ('CT-W', 10)) v(s, q) \g /dev/null
SELECT pg_temp.set_rules('CT-L', 3), pg_temp.set_rules('CT-M', 3),
	   pg_temp.set_rules('CT-W', NULL, now() + interval '1 hour') \g /dev/null

------------------------------------------------------------------------------
-- argument errors
------------------------------------------------------------------------------

SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(NULL, %L, %L)', pg_temp.ns('{CT-A}'), '{1}'),
				 '22004', NULL, 'reserve_cart: NULL order_id');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, NULL, %L)', pg_temp.n('ct-bad'), '{1}'),
				 '22004', NULL, 'reserve_cart: NULL skus');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, NULL)', pg_temp.n('ct-bad'), pg_temp.ns('{CT-A}')),
				 '22004', 'qtys must not be null', 'reserve_cart: NULL qtys');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, ARRAY[%L, NULL], %L)', pg_temp.n('ct-bad'), pg_temp.n('CT-A'), '{1,1}'),
				 '22004', NULL, 'reserve_cart: a NULL SKU');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L)', pg_temp.n('ct-bad'), pg_temp.ns('{CT-A,CT-B}'), '{1,NULL}'),
				 '22004', 'qtys must not contain nulls', 'reserve_cart: a NULL qty');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L)', pg_temp.n('ct-bad'), pg_temp.ns('{CT-A,CT-B}'), '{1}'),
				 '2202E', NULL, 'reserve_cart: fewer qtys than skus');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L)', pg_temp.n('ct-bad'), pg_temp.ns('{CT-A}'), '{1,1}'),
				 '2202E', 'skus and qtys must have the same number of elements', 'reserve_cart: more qtys than skus');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L)', pg_temp.n('ct-bad'), '{}', '{}'),
				 '22023', NULL, 'reserve_cart: an empty cart');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L)', pg_temp.n('ct-bad'), pg_temp.ns('{CT-A,CT-B}'), '{1,0}'),
				 '22023', NULL, 'reserve_cart: a qty of 0');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L)', pg_temp.n('ct-bad'), pg_temp.ns('{CT-A}'), '{-1}'),
				 '22023', 'every element of qtys must be positive', 'reserve_cart: a negative qty');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, ARRAY[%L, %L], %L)', pg_temp.n('ct-bad'), pg_temp.n('CT-A'), '', '{1,1}'),
				 '22023', 'sku must not be empty', 'reserve_cart: an empty SKU');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, ARRAY[ARRAY[%L], ARRAY[%L]], %L)', pg_temp.n('ct-bad'), pg_temp.n('CT-A'), pg_temp.n('CT-B'), '{1,1}'),
				 '2202E', NULL, 'reserve_cart: a two-dimensional array');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L, ttl => %L)', pg_temp.n('ct-bad'), pg_temp.ns('{CT-A}'), '{1}', '0'),
				 '22023', 'ttl must be positive', 'reserve_cart: a ttl of 0');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L, buyer_id => %L)', pg_temp.n('ct-bad'), pg_temp.ns('{CT-A}'), '{1}', ''),
				 '22023', 'buyer_id must not be empty', 'reserve_cart: an empty buyer_id');
SELECT throws_ok('SELECT * FROM inventory.confirm_order(NULL)', '22004', NULL, 'confirm_order: NULL order_id');
SELECT throws_ok('SELECT * FROM inventory.cancel_order(NULL)', '22004', 'order_id must not be null', 'cancel_order: NULL order_id');
SELECT is(pg_temp.lines('ct-bad'), 'none', 'the errors wrote nothing');
SELECT is(pg_temp.live('{CT-A,CT-B}'), 'CT-A=10 CT-B=10', 'the errors hold nothing');

------------------------------------------------------------------------------
-- a cart served, and its replays
------------------------------------------------------------------------------

SELECT is(pg_temp.try_cart('ct-1', '{CT-B,CT-A,CT-B}', '{1,2,3}', 'alice'),
		  'ok=true status=ok sku=CT-B qty=1 state=PENDING | ok=true status=ok sku=CT-A qty=2 state=PENDING'
		  ' | ok=true status=ok sku=CT-B qty=3 state=PENDING xid=taken wal=written',
		  'a cart: one row per line, in array order');
SELECT is(pg_temp.lines('ct-1'), '1:CT-B/1/alice/PENDING 2:CT-A/2/alice/PENDING 3:CT-B/3/alice/PENDING',
		  'line i is the movement (order_id, i), for the buyer');
SELECT is(pg_temp.read1(format($$SELECT count(*) FROM inventory.ledger
								 WHERE order_id = %L AND expires_at - created_at = interval '1 hour'$$, pg_temp.n('ct-1'))),
		  '3', 'every line expires after the ttl');
SELECT is(pg_temp.live('{CT-A,CT-B}'), 'CT-A=8 CT-B=6', 'the cart holds its units');

SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try_cart('ct-1', '{CT-B,CT-A,CT-B}', '{1,2,3}', 'alice'),
		  'ok=true status=duplicate sku=CT-B qty=1 state=PENDING | ok=true status=duplicate sku=CT-A qty=2 state=PENDING'
		  ' | ok=true status=duplicate sku=CT-B qty=3 state=PENDING xid=none wal=none',
		  'the cart replayed: duplicate on every line; no xid, no WAL');
SELECT is(pg_temp.cart('ct-1', '{CT-B,CT-A,CT-B}', '{1,2,3}', 'alice', '5 minutes'),
		  'ok=true status=duplicate sku=CT-B qty=1 state=PENDING | ok=true status=duplicate sku=CT-A qty=2 state=PENDING'
		  ' | ok=true status=duplicate sku=CT-B qty=3 state=PENDING',
		  'the cart replayed with another ttl: duplicate');
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('CT-A'), 2, pg_temp.n('ct-1'), 2, buyer_id => 'alice')),
		  'ok=true status=duplicate sku=CT-A qty=2 state=PENDING', 'a line replayed by reserve(): duplicate');
SELECT is(pg_temp.live('{CT-A,CT-B}'), 'CT-A=8 CT-B=6', 'the replays hold nothing more');
SELECT is(pg_temp.lines('ct-1'), '1:CT-B/1/alice/PENDING 2:CT-A/2/alice/PENDING 3:CT-B/3/alice/PENDING',
		  'the replays changed nothing');

SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L, buyer_id => %L)', pg_temp.n('ct-1'), pg_temp.ns('{CT-B,CT-B,CT-B}'), '{1,2,3}', 'alice'),
				 '23505', NULL, 'the order_id reused with other SKUs: 23505');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L, buyer_id => %L)', pg_temp.n('ct-1'), pg_temp.ns('{CT-B,CT-A,CT-B}'), '{1,2,4}', 'alice'),
				 '23505', NULL, 'the order_id reused with other quantities: 23505');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L, buyer_id => %L)', pg_temp.n('ct-1'), pg_temp.ns('{CT-B,CT-A,CT-B}'), '{1,2,3}', 'bob'),
				 '23505', NULL, 'the order_id reused for another buyer: 23505');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L)', pg_temp.n('ct-1'), pg_temp.ns('{CT-B,CT-A,CT-B}'), '{1,2,3}'),
				 '23505', NULL, 'the order_id reused without the buyer: 23505');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L, buyer_id => %L)', pg_temp.n('ct-1'), pg_temp.ns('{CT-B,CT-A}'), '{1,2}', 'alice'),
				 '23505', NULL, 'the order_id reused for the first lines only: 23505');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L, buyer_id => %L)', pg_temp.n('ct-1'), pg_temp.ns('{CT-B,CT-A,CT-B,CT-A}'), '{1,2,3,1}', 'alice'),
				 '23505', NULL, 'the order_id reused with one more line: 23505');
-- a single reservation (ct-single, 1)
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('CT-A'), 1, pg_temp.n('ct-single'), ttl => '1 hour')) \g /dev/null
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, %L, %L)', pg_temp.n('ct-single'), pg_temp.ns('{CT-A,CT-B}'), '{1,1}'),
				 '23505', format('order_id "%s" is already used by other movements', pg_temp.n('ct-single')),
				 'its order_id reused for a cart of two lines: 23505');
SELECT is(pg_temp.lines('ct-single'), '1:CT-A/1/NULL/PENDING', 'the reuses wrote nothing');
SELECT is(pg_temp.live('{CT-A,CT-B}'), 'CT-A=7 CT-B=6', 'the reuses hold nothing');

-- a replay is recognised even when the stock is gone
-- a cart takes all of CT-S
SELECT pg_temp.cart_ok('ct-s', '{CT-S}', '{5}') \g /dev/null
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try_cart('ct-s', '{CT-S}', '{5}'), 'ok=true status=duplicate sku=CT-S qty=5 state=PENDING xid=none wal=none',
		  'its replay, sold out: duplicate');

------------------------------------------------------------------------------
-- refused carts: every status, nothing held or written
------------------------------------------------------------------------------

SELECT is(pg_temp.try_cart('ct-r1', '{CT-A,CT-C,CT-C}', '{1,2,2}'),
		  'ok=false status=cart_refused sku=CT-A qty=1 state=NULL | ok=false status=insufficient sku=CT-C qty=2 state=NULL'
		  ' | ok=false status=insufficient sku=CT-C qty=2 state=NULL xid=none wal=none',
		  'insufficient on the sum of two lines of CT-C (3 units); no xid, no WAL');
SELECT is(pg_temp.try_cart('ct-r2', '{CT-A,CT-NOPE}', '{1,1}'),
		  'ok=false status=cart_refused sku=CT-A qty=1 state=NULL | ok=false status=unknown_sku sku=CT-NOPE qty=1 state=NULL xid=none wal=none',
		  'unknown_sku; no xid, no WAL');
SELECT is(pg_temp.try_cart('ct-r3', '{CT-W,CT-A}', '{1,1}'),
		  'ok=false status=not_on_sale sku=CT-W qty=1 state=NULL | ok=false status=cart_refused sku=CT-A qty=1 state=NULL xid=none wal=none',
		  'not_on_sale; no xid, no WAL');
SELECT is(pg_temp.try_cart('ct-r4', '{CT-L,CT-A}', '{1,1}'),
		  'ok=false status=buyer_required sku=CT-L qty=1 state=NULL | ok=false status=cart_refused sku=CT-A qty=1 state=NULL xid=none wal=none',
		  'buyer_required; no xid, no WAL');
SELECT is(pg_temp.try_cart('ct-r5', '{CT-L,CT-A,CT-L}', '{2,1,2}', 'bob'),
		  'ok=false status=limit_exceeded sku=CT-L qty=2 state=NULL | ok=false status=cart_refused sku=CT-A qty=1 state=NULL'
		  ' | ok=false status=limit_exceeded sku=CT-L qty=2 state=NULL xid=none wal=none',
		  'limit_exceeded on the sum of two lines of CT-L (3 per buyer); no xid, no WAL');
SELECT is(pg_temp.try_cart('ct-r6', '{CT-W,CT-NOPE,CT-A,CT-C}', '{1,1,1,99}', 'bob'),
		  'ok=false status=not_on_sale sku=CT-W qty=1 state=NULL | ok=false status=unknown_sku sku=CT-NOPE qty=1 state=NULL'
		  ' | ok=false status=cart_refused sku=CT-A qty=1 state=NULL | ok=false status=insufficient sku=CT-C qty=99 state=NULL xid=none wal=none',
		  'several SKUs refused: each line carries its SKU''s status');
SELECT is(pg_temp.try_cart('ct-r7', '{CT-L,CT-C}', '{4,99}', 'carol'),
		  'ok=false status=limit_exceeded sku=CT-L qty=4 state=NULL | ok=false status=insufficient sku=CT-C qty=99 state=NULL xid=none wal=none',
		  'limit_exceeded beside insufficient');
SELECT is(pg_temp.read1(format('SELECT count(*) FROM inventory.ledger WHERE order_id LIKE %L', pg_temp.n('ct-r%'))), '0',
		  'the refused carts wrote no ledger row');
SELECT is(pg_temp.live('{CT-A,CT-C,CT-L,CT-W}'), 'CT-A=7 CT-C=3 CT-L=10 CT-W=10', 'the refused carts hold nothing');
SELECT is(pg_temp.cart('ct-r1', '{CT-A,CT-C,CT-C}', '{1,2,1}'),
		  'ok=true status=ok sku=CT-A qty=1 state=PENDING | ok=true status=ok sku=CT-C qty=2 state=PENDING'
		  ' | ok=true status=ok sku=CT-C qty=1 state=PENDING',
		  'the order_id of a refused cart is free: a cart with the sum exactly the stock');
SELECT is(pg_temp.live('{CT-A,CT-C}'), 'CT-A=6 CT-C=0', '... holds its units');

-- the buyer's limit counts what the buyer holds already
-- bob holds 2 of CT-L
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('CT-L'), 2, pg_temp.n('ct-bob'), ttl => '1 hour', buyer_id => 'bob')) \g /dev/null
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try_cart('ct-l1', '{CT-M,CT-L}', '{3,2}', 'bob'),
		  'ok=false status=cart_refused sku=CT-M qty=3 state=NULL | ok=false status=limit_exceeded sku=CT-L qty=2 state=NULL xid=none wal=none',
		  'a cart of 2 more for bob: limit_exceeded');
SELECT is(pg_temp.cart('ct-l1', '{CT-M,CT-L}', '{3,1}', 'bob'),
		  'ok=true status=ok sku=CT-M qty=3 state=PENDING | ok=true status=ok sku=CT-L qty=1 state=PENDING',
		  'a cart of 1 more: exactly the limit');
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try_cart('ct-l2', '{CT-L}', '{1}', 'bob'),
		  'ok=false status=limit_exceeded sku=CT-L qty=1 state=NULL xid=none wal=none', 'bob is at his limit');
SELECT is(pg_temp.settle('cancel_order', 'ct-l1'),
		  'ok=true status=ok sku=CT-M qty=3 state=CANCELLED | ok=true status=ok sku=CT-L qty=1 state=CANCELLED',
		  'cancel_order() of bob''s cart');
SELECT is(pg_temp.cart('ct-l2', '{CT-L}', '{1}', 'bob'), 'ok=true status=ok sku=CT-L qty=1 state=PENDING',
		  'the cancelled cart no longer counts');

-- a cart rolled back leaves nothing
BEGIN;
SELECT is(pg_temp.cart('ct-rb', '{CT-A,CT-B}', '{1,1}'),
		  'ok=true status=ok sku=CT-A qty=1 state=PENDING | ok=true status=ok sku=CT-B qty=1 state=PENDING',
		  'a cart in a transaction ...');
ROLLBACK;
SELECT is(pg_temp.live('{CT-A,CT-B}'), 'CT-A=6 CT-B=6', '... rolled back: its holds are returned');
SELECT is(pg_temp.lines('ct-rb'), 'none', '... and its rows are gone');

------------------------------------------------------------------------------
-- confirm_order() and cancel_order()
------------------------------------------------------------------------------

SELECT is(pg_temp.settle('confirm_order', 'ct-1'),
		  'ok=true status=ok sku=CT-B qty=1 state=CONFIRMED | ok=true status=ok sku=CT-A qty=2 state=CONFIRMED'
		  ' | ok=true status=ok sku=CT-B qty=3 state=CONFIRMED',
		  'confirm_order(): every line ok, in batch_id order');
SELECT is(pg_temp.lines('ct-1'), '1:CT-B/1/alice/CONFIRMED 2:CT-A/2/alice/CONFIRMED 3:CT-B/3/alice/CONFIRMED',
		  'confirm_order(): every line CONFIRMED');
SELECT is(pg_temp.counters('CT-B'), 'on_hand=6 reserved=0 available=6 version=5 live=6',
		  'confirm_order(): the units of CT-B leave on_hand');
SELECT is(pg_temp.settle('confirm_order', 'ct-1'),
		  'ok=true status=duplicate sku=CT-B qty=1 state=CONFIRMED | ok=true status=duplicate sku=CT-A qty=2 state=CONFIRMED'
		  ' | ok=true status=duplicate sku=CT-B qty=3 state=CONFIRMED',
		  'confirm_order() replayed: duplicate');
SELECT is(pg_temp.settle('cancel_order', 'ct-1'),
		  'ok=false status=confirmed sku=CT-B qty=1 state=CONFIRMED | ok=false status=confirmed sku=CT-A qty=2 state=CONFIRMED'
		  ' | ok=false status=confirmed sku=CT-B qty=3 state=CONFIRMED',
		  'cancel_order() of a confirmed order: confirmed, not ok');
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try_cart('ct-1', '{CT-B,CT-A,CT-B}', '{1,2,3}', 'alice'),
		  'ok=true status=duplicate sku=CT-B qty=1 state=CONFIRMED | ok=true status=duplicate sku=CT-A qty=2 state=CONFIRMED'
		  ' | ok=true status=duplicate sku=CT-B qty=3 state=CONFIRMED xid=none wal=none',
		  'the confirmed cart replayed: duplicate, CONFIRMED');

SELECT pg_temp.cart_ok('ct-2', '{CT-A,CT-B}', '{1,1}') \g /dev/null
SELECT is(pg_temp.settle('cancel_order', 'ct-2'),
		  'ok=true status=ok sku=CT-A qty=1 state=CANCELLED | ok=true status=ok sku=CT-B qty=1 state=CANCELLED',
		  'cancel_order(): every line ok');
SELECT is(pg_temp.live('{CT-A,CT-B}'), 'CT-A=6 CT-B=6', 'cancel_order(): the units are back on sale');
SELECT is(pg_temp.settle('cancel_order', 'ct-2'),
		  'ok=true status=duplicate sku=CT-A qty=1 state=CANCELLED | ok=true status=duplicate sku=CT-B qty=1 state=CANCELLED',
		  'cancel_order() replayed: duplicate');
SELECT is(pg_temp.settle('confirm_order', 'ct-2'),
		  'ok=false status=cancelled sku=CT-A qty=1 state=CANCELLED | ok=false status=cancelled sku=CT-B qty=1 state=CANCELLED',
		  'confirm_order() of a cancelled order: cancelled, not ok');

-- cart ct-3, its line 1 cancelled alone
SELECT pg_temp.cart_ok('ct-3', '{CT-A,CT-B}', '{1,1}') \g /dev/null
SELECT pg_temp.expect(inventory.cancel(pg_temp.n('ct-3'), 1)) \g /dev/null
SELECT is(pg_temp.settle('confirm_order', 'ct-3'),
		  'ok=false status=cancelled sku=CT-A qty=1 state=CANCELLED | ok=true status=ok sku=CT-B qty=1 state=CONFIRMED',
		  'confirm_order(): each line as confirm() would');

-- line 1 overdue, by hand; line 2 for an hour (confirm_order() says
-- expired of line 1 whether or not a worker expired it first)
SELECT pg_temp.overdue_line('ct-4', 1, 'CT-A', 1);
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('CT-B'), 2, pg_temp.n('ct-4'), 2, ttl => '1 hour')) \g /dev/null
SELECT is(pg_temp.settle('confirm_order', 'ct-4'),
		  'ok=false status=expired sku=CT-A qty=1 state=EXPIRED | ok=true status=ok sku=CT-B qty=2 state=CONFIRMED',
		  'confirm_order(): an overdue line expired, the other confirmed');
SELECT is(pg_temp.settle('cancel_order', 'ct-4'),
		  'ok=true status=expired sku=CT-A qty=1 state=EXPIRED | ok=false status=confirmed sku=CT-B qty=2 state=CONFIRMED',
		  'cancel_order(): expired is ok, confirmed is not');

-- an order of single reservations: batch_id order, not the order made
-- ct-5: batches 5, -1 and 2
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('CT-A'), q, pg_temp.n('ct-5'), b, ttl => '1 hour'))
  FROM (VALUES (5, 3), (-1, 1), (2, 2)) v(b, q) \g /dev/null
SELECT is(pg_temp.settle('cancel_order', 'ct-5'),
		  'ok=true status=ok sku=CT-A qty=1 state=CANCELLED | ok=true status=ok sku=CT-A qty=2 state=CANCELLED'
		  ' | ok=true status=ok sku=CT-A qty=3 state=CANCELLED',
		  'cancel_order(): in batch_id order');

SELECT is(pg_temp.settle('confirm_order', 'ct-none'),
		  'ok=false status=not_found sku=NULL qty=NULL state=NULL', 'confirm_order() of an unknown order: one row, not_found');
SELECT is(pg_temp.settle('cancel_order', 'ct-none'),
		  'ok=false status=not_found sku=NULL qty=NULL state=NULL', 'cancel_order() of an unknown order: one row, not_found');
SELECT throws_ok(format('SELECT * FROM inventory.confirm_order(%L)', pg_temp.n('d-CT-A')), '23505', NULL,
				 'confirm_order() of a restock''s order_id: 23505');

-- settle what is left, and check the cache against the tables
\ir lib/settle.sql

SELECT * FROM finish();

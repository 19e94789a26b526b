-- metrics.sql: the counters a monitoring tool reads.  inventory.call_stats
-- counts what every call answered, by status, whether or not the caller's
-- transaction then commits; inventory.movement_stats counts the movements
-- that committed.  A call that fails with an error answered nothing and
-- counts nothing.  inventory.hot_skus shows each database's hottest SKUs,
-- at most inventory.hot_skus of them; inventory.cache_by_database sums the
-- holds of transactions in flight.
--
-- The counters are cluster-wide and monotonic since the server started, so
-- every assertion is on what one step moved: pg_temp.moved() gives the
-- counters of this database that changed since the last pg_temp.mark().
-- The worker is off (test/inventory.conf) and no other file runs at the
-- same time, so nothing else moves them.  Calls run in autocommit, one
-- transaction per statement.
--
-- This session is the monitoring role's (shop_monitor), which reads the
-- counters; the calls are made by the roles the manual gives them, over
-- their connections: pg_temp.app(sql, ...) by the application,
-- pg_temp.admin(sql, ...) by the administrator.  inventory.hot_skus, the
-- setting, is a superuser's: set, with the view read, in the superuser's
-- session.

\set name metrics
\set role shop_monitor
\ir lib/setup.sql

-- runs each statement as the application, or the administrator
CREATE FUNCTION pg_temp.app(VARIADIC sqls text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	q text;
BEGIN
	FOREACH q IN ARRAY sqls LOOP
		PERFORM pg_temp.as_app(q);
	END LOOP;
END $$;
CREATE FUNCTION pg_temp.admin(VARIADIC sqls text[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	q text;
BEGIN
	FOREACH q IN ARRAY sqls LOOP
		PERFORM pg_temp.as_admin(q);
	END LOOP;
END $$;

CREATE TEMP TABLE mark_told AS
	SELECT call, status, calls FROM inventory.call_stats WHERE false;
CREATE TEMP TABLE mark_committed AS
	SELECT movement, committed FROM inventory.movement_stats WHERE false;

CREATE FUNCTION pg_temp.mark() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM mark_told;
	DELETE FROM mark_committed;
	INSERT INTO mark_told SELECT call, status, calls FROM inventory.call_stats
	 WHERE datname = current_database();
	INSERT INTO mark_committed SELECT movement, committed FROM inventory.movement_stats
	 WHERE datname = current_database();
END $$;

-- 'told: call/status+n ... | committed: movement+n ...', sorted
CREATE FUNCTION pg_temp.moved() RETURNS text LANGUAGE sql AS $$
	SELECT 'told:' || coalesce((
		SELECT string_agg(format(' %s/%s+%s', c.call, c.status, c.calls - coalesce(m.calls, 0)),
						  '' ORDER BY c.call, c.status)
		  FROM inventory.call_stats c
		  LEFT JOIN mark_told m USING (call, status)
		 WHERE c.datname = current_database() AND c.calls <> coalesce(m.calls, 0)), '')
	|| ' | committed:' || coalesce((
		SELECT string_agg(format(' %s+%s', c.movement, c.committed - coalesce(m.committed, 0)),
						  '' ORDER BY c.movement)
		  FROM inventory.movement_stats c
		  LEFT JOIN mark_committed m USING (movement)
		 WHERE c.datname = current_database() AND c.committed <> coalesce(m.committed, 0)), '')
$$;

SELECT plan(33);

-- restock
SELECT pg_temp.mark();
SELECT pg_temp.admin($$SELECT inventory.restock(pg_temp.n('A'), 10, pg_temp.n('in-a'))$$,
					 $$SELECT inventory.restock(pg_temp.n('A'), 10, pg_temp.n('in-a'))$$);
SELECT is(pg_temp.moved(), 'told: restock/duplicate+1 restock/ok+1 | committed: restock+1',
		  'a restock and its replay: both told, one committed');

-- reserve, every status it answers in this set-up
SELECT pg_temp.mark();
SELECT pg_temp.app($$SELECT inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('o-1'))$$,
				   $$SELECT inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('o-1'))$$,
				   $$SELECT inventory.reserve(pg_temp.n('A'), 99, pg_temp.n('o-2'))$$,
				   $$SELECT inventory.reserve(pg_temp.n('nothing'), 1, pg_temp.n('o-3'))$$,
				   $$SELECT inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('o-4'), expected_version => 1)$$);
SELECT is(pg_temp.moved(),
		  'told: reserve/duplicate+1 reserve/insufficient+1 reserve/ok+1 reserve/unknown_sku+1 reserve/version_conflict+1 | committed: reserve+1',
		  'reserve: each answer told once, the one reservation committed');

-- the refusals of a SKU's rules: R has a limit per buyer, W a sale window
-- that has not begun; F has neither
SELECT pg_temp.restock(s, 10, 'in-' || s) FROM unnest('{R,W,F}'::text[]) s \g /dev/null
SELECT pg_temp.set_rules('R', max_per_buyer => 2), pg_temp.set_rules('W', sale_starts => now() + interval '1 day') \g /dev/null
SELECT pg_temp.mark() \g /dev/null
SELECT pg_temp.app($$SELECT inventory.reserve(pg_temp.n('W'), 1, pg_temp.n('rule-1'), buyer_id => 'ann')$$,
				   $$SELECT inventory.reserve(pg_temp.n('R'), 1, pg_temp.n('rule-2'))$$,
				   $$SELECT inventory.reserve(pg_temp.n('R'), 2, pg_temp.n('rule-3'), buyer_id => 'ann')$$,
				   $$SELECT inventory.reserve(pg_temp.n('R'), 1, pg_temp.n('rule-4'), buyer_id => 'ann')$$);
SELECT is(pg_temp.moved(),
		  'told: reserve/buyer_required+1 reserve/limit_exceeded+1 reserve/not_on_sale+1 reserve/ok+1 | committed: reserve+1',
		  'reserve: not_on_sale, buyer_required and limit_exceeded told once each, only the reservation committed');

SELECT pg_temp.mark();
SELECT pg_temp.app($$SELECT status FROM inventory.reserve_cart(pg_temp.n('rule-cart-1'), ARRAY[pg_temp.n('F'), pg_temp.n('W')],
																ARRAY[1, 1], buyer_id => 'bob')$$,
				   $$SELECT status FROM inventory.reserve_cart(pg_temp.n('rule-cart-2'), ARRAY[pg_temp.n('R'), pg_temp.n('F')],
																ARRAY[1, 1])$$,
				   $$SELECT status FROM inventory.reserve_cart(pg_temp.n('rule-cart-3'), ARRAY[pg_temp.n('F'), pg_temp.n('R')],
																ARRAY[1, 1], buyer_id => 'ann')$$);
SELECT is(pg_temp.moved(),
		  'told: reserve_cart/buyer_required+1 reserve_cart/cart_refused+3 reserve_cart/limit_exceeded+1 reserve_cart/not_on_sale+1 | committed:',
		  'reserve_cart: the refusing line told its status, the others cart_refused, nothing committed');

-- told and never committed
SELECT pg_temp.mark();
SELECT pg_temp.app('BEGIN', $$SELECT inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('o-rolled-back'))$$, 'ROLLBACK');
SELECT is(pg_temp.moved(), 'told: reserve/ok+1 | committed:',
		  'an ok reserve whose transaction rolls back is told, and not committed');

SELECT pg_temp.mark();
SELECT pg_temp.app('BEGIN', $$SELECT inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('o-5'))$$, 'SAVEPOINT s',
				   $$SELECT inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('o-6'))$$, 'ROLLBACK TO s', 'COMMIT');
SELECT is(pg_temp.moved(), 'told: reserve/ok+2 | committed: reserve+1',
		  'a reservation undone by ROLLBACK TO is told, and not committed');

-- an error answers nothing
SELECT pg_temp.mark();
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 1, %L)', pg_temp.n('A'), pg_temp.n('o-1'))),
				 '23505', NULL, 'a key reused for another movement is an error');
SELECT throws_ok(pg_temp.by_app(format('SELECT status FROM inventory.reserve_many(ARRAY[%L, %L], ARRAY[1, 1], ARRAY[%L, %L])',
									   pg_temp.n('A'), pg_temp.n('A'), pg_temp.n('o-many-1'), pg_temp.n('in-a'))),
				 '23505', NULL, 'reserve_many with a reused key in its second element is an error');
SELECT is(pg_temp.moved(), 'told: | committed:',
		  'calls that fail, also after answering some rows, count nothing');

-- sets: each row counts, when the call has answered them all
SELECT pg_temp.mark();
SELECT pg_temp.app($$SELECT status FROM inventory.reserve_many(ARRAY[pg_temp.n('A'), pg_temp.n('A'), pg_temp.n('A')],
															   ARRAY[1, 1, 99],
															   ARRAY[pg_temp.n('m-1'), pg_temp.n('m-2'), pg_temp.n('m-3')])$$);
SELECT is(pg_temp.moved(), 'told: reserve_many/insufficient+1 reserve_many/ok+2 | committed: reserve+2',
		  'reserve_many: each element told, the reservations committed');

SELECT pg_temp.restock('B', 5, 'in-b') \g /dev/null
SELECT pg_temp.mark();
SELECT pg_temp.app($$SELECT status FROM inventory.reserve_cart(pg_temp.n('cart-1'), ARRAY[pg_temp.n('A'), pg_temp.n('nothing')], ARRAY[1, 1])$$,
				   $$SELECT status FROM inventory.reserve_cart(pg_temp.n('cart-2'), ARRAY[pg_temp.n('A'), pg_temp.n('B')], ARRAY[1, 1])$$,
				   $$SELECT status FROM inventory.reserve_cart(pg_temp.n('cart-2'), ARRAY[pg_temp.n('A'), pg_temp.n('B')], ARRAY[1, 1])$$);
SELECT is(pg_temp.moved(),
		  'told: reserve_cart/cart_refused+1 reserve_cart/duplicate+2 reserve_cart/ok+2 reserve_cart/unknown_sku+1 | committed: reserve+2',
		  'reserve_cart: each line told, a cart''s lines committed once');

-- confirm, cancel, extend, and the orders
SELECT pg_temp.mark();
SELECT pg_temp.app($$SELECT inventory.confirm(pg_temp.n('o-1'))$$,
				   $$SELECT inventory.confirm(pg_temp.n('o-1'))$$,
				   $$SELECT inventory.confirm(pg_temp.n('no-such-order'))$$,
				   $$SELECT inventory.cancel(pg_temp.n('o-1'))$$,
				   $$SELECT inventory.cancel(pg_temp.n('o-5'))$$,
				   $$SELECT inventory.extend(pg_temp.n('o-5'), 1, '1 hour')$$,
				   $$SELECT inventory.extend(pg_temp.n('m-1'), 1, '1 hour')$$);
SELECT is(pg_temp.moved(),
		  'told: cancel/confirmed+1 cancel/ok+1 confirm/duplicate+1 confirm/not_found+1 confirm/ok+1 extend/cancelled+1 extend/ok+1 | committed: cancel+1 confirm+1 extend+1',
		  'confirm, cancel and extend: each answer told, each change committed');

SELECT pg_temp.mark();
SELECT pg_temp.app($$SELECT status FROM inventory.confirm_order(pg_temp.n('cart-2'))$$,
				   $$SELECT status FROM inventory.cancel_order(pg_temp.n('cart-2'))$$,
				   $$SELECT status FROM inventory.cancel_order(pg_temp.n('no-such-order'))$$);
SELECT is(pg_temp.moved(),
		  'told: cancel_order/confirmed+2 cancel_order/not_found+1 confirm_order/ok+2 | committed: confirm+2',
		  'confirm_order and cancel_order: each line told');

-- told expired: an overdue reservation that confirm or extend expires
-- (committed as an expire), and calls on an expired one (nothing)
SELECT pg_temp.restock('E', 5, 'in-e') \g /dev/null
SELECT pg_temp.overdue('late-c', 'E', 1), pg_temp.overdue('late-e', 'E', 1) \g /dev/null
SELECT pg_temp.mark() \g /dev/null
SELECT pg_temp.app($$SELECT inventory.confirm(pg_temp.n('late-c'))$$,
				   $$SELECT inventory.extend(pg_temp.n('late-e'), 1, '1 hour')$$,
				   $$SELECT inventory.cancel(pg_temp.n('late-c'))$$,
				   $$SELECT inventory.cancel(pg_temp.n('late-e'))$$,
				   $$SELECT inventory.extend(pg_temp.n('late-c'), 1, '1 hour')$$);
SELECT is(pg_temp.moved(),
		  'told: cancel/expired+2 confirm/expired+1 extend/expired+2 | committed: expire+2',
		  'expired: told by confirm, cancel and extend; committed only where the call expired the reservation');

-- stocktakes refused: a stale version, and a count below what is reserved
SELECT pg_temp.restock('D', 5, 'in-d') \g /dev/null
SELECT pg_temp.app($$SELECT inventory.reserve(pg_temp.n('D'), 3, pg_temp.n('held-d'))$$);
SELECT pg_temp.mark();
SELECT pg_temp.admin($$SELECT inventory.adjust(pg_temp.n('D'), 9, pg_temp.n('count-d1'), expected_version => 0)$$,
					 $$SELECT inventory.adjust(pg_temp.n('D'), 2, pg_temp.n('count-d2'))$$);
SELECT is(pg_temp.moved(), 'told: adjust/insufficient+1 adjust/version_conflict+1 | committed:',
		  'adjust: version_conflict and insufficient told, nothing committed');

-- stocktakes and withdrawals
SELECT pg_temp.mark();
SELECT pg_temp.admin($$SELECT inventory.adjust(pg_temp.n('B'), 20, pg_temp.n('count-b'))$$,
					 $$SELECT inventory.adjust(pg_temp.n('nothing'), 20, pg_temp.n('count-x'))$$,
					 $$SELECT inventory.withdraw(pg_temp.n('B'), 3, pg_temp.n('out-b'))$$,
					 $$SELECT inventory.withdraw(pg_temp.n('B'), 300, pg_temp.n('out-b2'))$$);
SELECT is(pg_temp.moved(),
		  'told: adjust/ok+1 adjust/unknown_sku+1 withdraw/insufficient+1 withdraw/ok+1 | committed: stocktake+1 withdraw+1',
		  'adjust and withdraw: told, and committed as stocktake and withdraw');

-- direct DML and inventory.expire() commit movements that no call told
SELECT pg_temp.mark();
SELECT pg_temp.overdue('late-1', 'A', 1) \g /dev/null
SELECT pg_temp.admin('SELECT inventory.expire()',
					 $$UPDATE inventory.ledger SET state = 'CANCELLED' WHERE order_id = pg_temp.n('m-2') AND batch_id = 1$$);
SELECT is(pg_temp.moved(), 'told: | committed: cancel+1 expire+1 reserve+1',
		  'movements written by statements and by expire() are committed, and told to nobody');

-- the express lane: told in the caller, committed by its writer
SELECT pg_temp.mark();
SELECT pg_temp.app($$SELECT inventory.reserve_now(pg_temp.n('A'), 1, pg_temp.n('now-1'))$$,
				   $$SELECT inventory.reserve_now(pg_temp.n('A'), 1, pg_temp.n('now-1'))$$,
				   $$SELECT inventory.reserve_now(pg_temp.n('A'), 999, pg_temp.n('now-2'))$$);
SELECT is(pg_temp.moved(),
		  'told: reserve_now/duplicate+1 reserve_now/insufficient+1 reserve_now/ok+1 | committed: reserve+1',
		  'reserve_now: told to its caller, committed once, in the writer''s commit');

-- the statuses a call can answer are there at zero; the others are not
SELECT ok(EXISTS (SELECT FROM inventory.call_stats
				   WHERE datname = current_database() AND call = 'withdraw' AND status = 'duplicate'),
		  'a status a call can answer is shown, also at zero');
SELECT ok(NOT EXISTS (SELECT FROM inventory.call_stats
					   WHERE datname = current_database() AND call = 'withdraw' AND status = 'not_found'),
		  'a status a call never answers is not');
SELECT is((SELECT count(*) FROM inventory.movement_stats WHERE datname = current_database()), 8::bigint,
		  'movement_stats: the eight movements');

-- holds in flight: a reservation of the application's, not committed
SELECT pg_temp.app('BEGIN', $$SELECT inventory.reserve(pg_temp.n('B'), 4, pg_temp.n('held'))$$);
SELECT is((SELECT holds FROM inventory.cache_by_database WHERE datname = current_database()),
		  4::bigint, 'a reservation in flight is a hold of its database');
SELECT is((SELECT pins FROM inventory.cache_by_database WHERE datname = current_database()),
		  1::bigint, 'its transaction pins the SKU');
SELECT pg_temp.app('ROLLBACK');
SELECT is((SELECT holds FROM inventory.cache_by_database WHERE datname = current_database()), 0::bigint,
		  'no hold once it has ended');
SELECT is((SELECT restoring_since FROM inventory.cache_by_database WHERE datname = current_database()), NULL,
		  'no restore under way');

-- the hottest SKUs: three with 300, 200 and 100 refusals
SELECT pg_temp.restock('hot-' || i, 1, 'in-hot-' || i) FROM generate_series(1, 3) i \g /dev/null
SELECT pg_temp.app($d$DO $$
BEGIN
	FOR i IN 1..3 LOOP
		FOR j IN 1..(4 - i) * 100 LOOP
			PERFORM inventory.reserve(pg_temp.n('hot-' || i), 2, pg_temp.n('try-' || i || '-' || j));
		END LOOP;
	END LOOP;
END $$$d$);

-- at the default setting (10), in this session
SELECT is((SELECT string_agg(replace(sku, current_setting('inventory_test.prefix'), ''), ' ' ORDER BY rank)
			 FROM inventory.hot_skus
			WHERE datname = current_database() AND starts_with(sku, current_setting('inventory_test.prefix') || 'hot-')),
		  'hot-1 hot-2 hot-3', 'hot_skus: ranked by the reserves they were asked for');
SELECT is((SELECT format('on_hand=%s reserved=%s holds=%s available=%s rejects=%s', on_hand, reserved, holds, available, rejects)
			 FROM inventory.hot_skus WHERE sku = pg_temp.n('hot-1')),
		  'on_hand=1 reserved=0 holds=0 available=1 rejects=300', 'with its counters');
-- a sale of hot-1: calls counted in reserves and confirms, units in held and sold
SELECT pg_temp.restock('hot-1', 10, 'in-hot-1b') \g /dev/null
SELECT pg_temp.app(format('SELECT (inventory.reserve(%L, 3, %L)).status', pg_temp.n('hot-1'), pg_temp.n('sold-1'))) \g /dev/null
SELECT pg_temp.app(format('SELECT (inventory.confirm(%L)).status', pg_temp.n('sold-1'))) \g /dev/null
SELECT pg_temp.app(format('SELECT (inventory.reserve(%L, 2, %L)).status', pg_temp.n('hot-1'), pg_temp.n('held-1'))) \g /dev/null
SELECT is((SELECT format('reserves=%s confirms=%s held=%s sold=%s', reserves, confirms, held, sold)
			 FROM inventory.hot_skus WHERE sku = pg_temp.n('hot-1')),
		  'reserves=2 confirms=1 held=5 sold=3', 'hot_skus: calls in reserves and confirms, units in held and sold');
SELECT pg_temp.app(format('SELECT (inventory.cancel(%L)).status', pg_temp.n('held-1'))) \g /dev/null
-- the setting is a superuser's: in the superuser's session
SELECT pg_temp.as_super('SET inventory.hot_skus = 2') \g /dev/null
SELECT is(pg_temp.as_super('SELECT count(*) FROM inventory.hot_skus WHERE datname = current_database()'),
		  '2', 'inventory.hot_skus = 2: two rows for this database, its hottest');
SELECT pg_temp.as_super('SET inventory.hot_skus = 0') \g /dev/null
SELECT is(pg_temp.as_super('SELECT count(*) FROM inventory.hot_skus'), '0', 'none at 0');
SELECT pg_temp.as_super('RESET inventory.hot_skus') \g /dev/null
SELECT throws_ok('SET inventory.hot_skus = 100', '42501', NULL,
				 'the monitoring role may not change inventory.hot_skus (a superuser''s setting)');

-- settle what this run leaves behind, and check the cache against the tables
\ir lib/settle.sql

SELECT * FROM finish();

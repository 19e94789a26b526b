-- reserve_now_result.sql: reserve_now_result(), the express lane answering
-- the whole inventory.result -- what reserve() answers for the same call:
-- an ok with its state, quantity, expires_at (the statement's start plus
-- ttl, as the ledger has it), the units available once the reservation
-- holds and the SKU's version before it; a replay a duplicate with the original's expires_at; a refusal
-- with what a reserve can take.  It goes through the writer as
-- reserve_now() does (no call falls back to its own transaction), shares
-- reserve_now()'s call counter, and is refused in a transaction block.
-- Declared as reserve_now() is.  Each call is made by the application's
-- own connection (pg_temp.app_r), in autocommit, as reserve_now requires.

\set name reserve_now_result
\set role shop_app
\ir lib/setup.sql

-- reserve_now_result() by the application, for an hour: its result
CREATE FUNCTION pg_temp.now_r(s text, q bigint, o text, buyer text DEFAULT NULL) RETURNS inventory.result
LANGUAGE sql AS $$ SELECT pg_temp.app_r(format('inventory.reserve_now_result(%L, %s, %L, 1, %L, %L)',
												pg_temp.n(s), q, pg_temp.n(o), '1 hour', buyer)) $$;

-- reserve_now()'s calls counted in call_stats, as the monitor reads them
CREATE FUNCTION pg_temp.told(status text) RETURNS bigint LANGUAGE sql
AS $$ SELECT pg_temp.monitor_says(format($f$SELECT coalesce(sum(calls), 0) FROM inventory.call_stats
											 WHERE datname = current_database() AND call = 'reserve_now'
											   AND status = %L$f$, status))::bigint $$;

\set sig 'inventory.reserve_now_result(text, bigint, text, integer, interval, text)'

SELECT plan(16);

SELECT is((SELECT format('%s %s %s %s', prosecdef, provolatile, proparallel, proisstrict)
			 FROM pg_proc WHERE oid = :'sig'::regprocedure),
		  't v u f', 'SECURITY DEFINER, VOLATILE, PARALLEL UNSAFE, not STRICT, as reserve_now()');
SELECT is(pg_get_function_result(:'sig'::regprocedure), 'inventory.result', 'it returns inventory.result');

SELECT pg_temp.restock('A', 10, 'in-A') \g /dev/null
SELECT pg_temp.restock('B', 1, 'in-B') \g /dev/null

SELECT pg_temp.monitor_says('SELECT inventory.express_fallbacks()') AS fallbacks \gset
SELECT pg_temp.told('ok') AS told_ok \gset
SELECT version AS version_before FROM inventory.stock WHERE sku = pg_temp.n('A') \gset

-- an ok
CREATE TEMP TABLE first AS SELECT * FROM pg_temp.now_r('A', 3, 'k1');
SELECT is((SELECT format('%s %s %s %s %s %s', ok, status, sku = pg_temp.n('A'), qty, state, available) FROM first),
		  't ok t 3 PENDING 7', 'an ok answers its quantity, PENDING and the units left once it holds');
SELECT is((SELECT expires_at FROM first),
		  (SELECT expires_at FROM inventory.reservation(pg_temp.n('k1'))),
		  'expires_at is the reservation''s, as the ledger has it');
SELECT ok((SELECT expires_at - created_at = interval '1 hour' FROM inventory.reservation(pg_temp.n('k1'))),
		  'which is the call''s start plus its ttl');
SELECT is((SELECT version FROM first), :version_before::bigint,
		  'version: the SKU''s last committed before the call, as reserve() answers it');

-- a replay
SELECT is((SELECT format('%s %s %s %s', ok, status, qty, state) FROM pg_temp.now_r('A', 3, 'k1')),
		  't duplicate 3 PENDING', 'a replay answers duplicate, with the reservation');
SELECT is((pg_temp.now_r('A', 3, 'k1')).expires_at, (SELECT expires_at FROM first),
		  'and the original''s expires_at');

-- refusals
SELECT is((SELECT format('%s %s %s %s', ok, status, available, state IS NULL) FROM pg_temp.now_r('B', 2, 'k2')),
		  'f insufficient 1 t', 'too many: insufficient, with what a reserve can take');
SELECT is((SELECT format('%s %s %s', ok, status, coalesce(available::text, 'NULL')) FROM pg_temp.now_r('NONE', 1, 'k3')),
		  'f unknown_sku NULL', 'an unknown SKU: unknown_sku, no counters');
SELECT throws_ok(format('SELECT pg_temp.now_r(%L, 5, %L)', 'A', 'k1'), '23505', NULL,
				 'the key reused for another quantity is 23505, as for reserve()');

-- the writer's, and counted as reserve_now's
SELECT is(pg_temp.monitor_says('SELECT inventory.express_fallbacks()'), :'fallbacks',
		  'no call fell back to its own transaction: the writer wrote it');
SELECT is(pg_temp.told('ok') - :told_ok, 1::bigint, 'the ok is counted as a call of reserve_now');

-- a transaction block
SELECT throws_ok(pg_temp.by_app(format($$BEGIN; SELECT inventory.reserve_now_result(%L, 1, %L)$$,
										pg_temp.n('A'), pg_temp.n('k4'))),
				 '25001', 'inventory.reserve_now() cannot run inside a transaction block',
				 'refused in a transaction block, with reserve_now()''s error');
SELECT pg_temp.as_app('ROLLBACK') \g /dev/null
SELECT is(pg_temp.app_says(format('SELECT count(*) FROM inventory.reservation(%L)', pg_temp.n('k4'))), '0',
		  'and it reserved nothing');

-- the reservations left behind
SELECT is((pg_temp.app_r(format('inventory.cancel(%L)', pg_temp.n('k1')))).status, 'ok', 'the reservation made is cancelled');

SELECT * FROM finish();

-- in_place.sql: settling a reservation writes no index entry.
--   A reservation leaves PENDING once -- confirm, cancel or expiry -- and no
--   index covers the columns that change, while the ledger's fillfactor
--   leaves room on every page for each row written there to be settled once.
--   So every settle is a HOT update, even when all the reservations of a page
--   are settled in one transaction, where no earlier version can be pruned to
--   make room: a backlog of overdue reservations is expired without touching
--   the ledger's indexes.
--
-- The counts are those of this transaction (pg_stat_xact_user_tables).

\set name in_place
\ir lib/setup.sql

SELECT plan(9);

-- updates of the ledger since the baseline taken at the start of the
-- transaction: the backend's counts may still hold earlier transactions'
CREATE FUNCTION pg_temp.ledger_counts() RETURNS bigint[] LANGUAGE sql
AS $$ SELECT ARRAY[coalesce(sum(n_tup_upd), 0), coalesce(sum(n_tup_hot_upd), 0)]::bigint[]
		FROM pg_stat_xact_user_tables WHERE relid = 'inventory.ledger'::regclass $$;
CREATE FUNCTION pg_temp.ledger_updates() RETURNS text LANGUAGE sql
AS $$ SELECT format('updates=%s hot=%s', c[1] - b[1], c[2] - b[2])
		FROM pg_temp.ledger_counts() c, CAST(current_setting('inventory_test.base') AS bigint[]) b $$;

SELECT is((inventory.restock(pg_temp.n('A'), 3000, pg_temp.n('rA'))).status, 'ok', 'restock A 3000');
-- reservations other files left overdue are expired first, so that the
-- expiry below meets only this file's backlog
SELECT inventory.expire() \g /dev/null

BEGIN;
SELECT set_config('inventory_test.base', pg_temp.ledger_counts()::text, true) \g /dev/null

-- 300 reservations through the API, one page after another
SELECT is((SELECT count(*) FILTER (WHERE ok)
			 FROM inventory.reserve_many(array_fill(pg_temp.n('A'), ARRAY[300]),
										 array_fill(1::bigint, ARRAY[300]),
										 ARRAY(SELECT pg_temp.n('a' || g) FROM generate_series(1, 300) g),
										 ttl => '1 hour')),
		  300::bigint, '300 reservations of A');
SELECT ok((SELECT count(DISTINCT (ctid::text::point)[0]) FROM inventory.ledger
			WHERE starts_with(order_id, pg_temp.n('a'))) > 2,
		  'they fill several pages');
SELECT is(pg_temp.ledger_updates(), 'updates=0 hot=0', 'no update yet');

SELECT is((SELECT count(*) FILTER (WHERE (inventory.confirm(pg_temp.n('a' || g))).ok)
			 FROM generate_series(1, 300, 2) g),
		  150::bigint, 'every other one confirmed');
SELECT is((SELECT count(*) FILTER (WHERE (inventory.cancel(pg_temp.n('a' || g))).ok)
			 FROM generate_series(2, 300, 2) g),
		  150::bigint, 'the rest cancelled');
SELECT is(pg_temp.ledger_updates(), 'updates=300 hot=300',
		  'all 300 settled in place (HOT)');

-- a backlog of 2,000 overdue reservations, written in one statement
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
SELECT pg_temp.n('e' || g), 1, 'reserve', pg_temp.n('A'), 1, now() - interval '1 minute'
  FROM generate_series(1, 2000) g;
SELECT is(inventory.expire(), 2000::bigint, 'expire() clears the backlog');
SELECT is(pg_temp.ledger_updates(), 'updates=2300 hot=2300',
		  'every expiry in place as well');

SELECT * FROM finish();

-- nothing of this file stays but the SKU
ROLLBACK;

-- in_place.sql: settling a reservation writes no index entry.
--   A reservation leaves PENDING once -- confirm, cancel or expiry -- and no
--   index covers the columns that change, while the ledger's fillfactor
--   leaves room on every page for each row written there to be settled once.
--   So every settle is a HOT update, even when all the reservations of a page
--   are settled in one transaction, where no earlier version can be pruned to
--   make room: a backlog of overdue reservations is expired without touching
--   the ledger's indexes.
--
-- The counts are those of one transaction (pg_stat_xact_user_tables): the
-- application's (this session, shop_app), which reserves and settles, and
-- the administrator's (its connection), which writes a backlog of overdue
-- reservations by hand and expires it, and is rolled back.  The
-- application's reservations are committed (the administrator reads their
-- pages) and all settled.

\set name in_place
\set role shop_app
\ir lib/setup.sql

SELECT plan(9);

-- updates of the ledger since the baseline taken at the start of the
-- transaction: the backend's counts may still hold earlier transactions'
\set counts_sql 'SELECT ARRAY[coalesce(sum(n_tup_upd), 0), coalesce(sum(n_tup_hot_upd), 0)]::bigint[] FROM pg_stat_xact_user_tables WHERE relid = \'inventory.ledger\'::regclass'
CREATE FUNCTION pg_temp.ledger_counts() RETURNS bigint[] LANGUAGE sql
AS :'counts_sql';
CREATE FUNCTION pg_temp.ledger_updates() RETURNS text LANGUAGE sql
AS $$ SELECT format('updates=%s hot=%s', c[1] - b[1], c[2] - b[2])
		FROM pg_temp.ledger_counts() c, CAST(current_setting('inventory_test.base') AS bigint[]) b $$;
-- the same, in the administrator's transaction
CREATE FUNCTION pg_temp.admin_updates(base bigint[]) RETURNS text LANGUAGE sql
AS $$ SELECT format('updates=%s hot=%s', c[1] - base[1], c[2] - base[2])
		FROM CAST(pg_temp.admin_says(current_setting('inventory_test.counts_sql')) AS bigint[]) c $$;
SELECT set_config('inventory_test.counts_sql', :'counts_sql', false) \g /dev/null

SELECT pg_temp.restock('A', 3000, 'rA') \g /dev/null
-- reservations other files left overdue are expired first, so that the
-- expiry below meets only this file's backlog
SELECT pg_temp.as_admin('SELECT inventory.expire()') \g /dev/null

-- 300 reservations through the API, one page after another
BEGIN;
SELECT set_config('inventory_test.base', pg_temp.ledger_counts()::text, true) \g /dev/null
SELECT is((SELECT count(*) FILTER (WHERE ok)
			 FROM inventory.reserve_many(array_fill(pg_temp.n('A'), ARRAY[300]),
										 array_fill(1::bigint, ARRAY[300]),
										 ARRAY(SELECT pg_temp.n('a' || g) FROM generate_series(1, 300) g),
										 ttl => '1 hour')),
		  300::bigint, '300 reservations of A');
SELECT is(pg_temp.ledger_updates(), 'updates=0 hot=0', 'no update yet');
COMMIT;
SELECT ok(pg_temp.read1(format('SELECT count(DISTINCT (ctid::text::point)[0]) FROM inventory.ledger WHERE starts_with(order_id, %L)',
							   pg_temp.n('a')))::bigint > 2,
		  'they fill several pages');

-- all of them settled in one transaction
BEGIN;
SELECT set_config('inventory_test.base', pg_temp.ledger_counts()::text, true) \g /dev/null
SELECT is((SELECT count(*) FILTER (WHERE (inventory.confirm(pg_temp.n('a' || g))).ok)
			 FROM generate_series(1, 300, 2) g),
		  150::bigint, 'every other one confirmed');
SELECT is((SELECT count(*) FILTER (WHERE (inventory.cancel(pg_temp.n('a' || g))).ok)
			 FROM generate_series(2, 300, 2) g),
		  150::bigint, 'the rest cancelled');
SELECT is(pg_temp.ledger_updates(), 'updates=300 hot=300',
		  'all 300 settled in place (HOT)');
COMMIT;

-- a backlog of 2,000 overdue reservations, written by the administrator in
-- one statement, and expired in the same transaction, which is rolled back
SELECT pg_temp.as_admin('BEGIN') \g /dev/null
SELECT pg_temp.admin_says(:'counts_sql') AS admin_base \gset
SELECT pg_temp.as_admin(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
								 SELECT %L || g, 1, 'reserve', %L, 1, now() - interval '1 minute'
								   FROM generate_series(1, 2000) g$$, pg_temp.n('e'), pg_temp.n('A'))) \g /dev/null
SELECT is(pg_temp.admin_says('SELECT inventory.expire()'), '2000', 'expire() clears the backlog');
SELECT is(pg_temp.admin_updates(:'admin_base'), 'updates=2000 hot=2000',
		  'every expiry in place as well');
SELECT pg_temp.as_admin('ROLLBACK') \g /dev/null

-- every reservation of this file is settled
SELECT is(pg_temp.read1(format($$SELECT count(*) FROM inventory.ledger WHERE starts_with(order_id, %L) AND state = 'PENDING'$$,
							   current_setting('inventory_test.prefix'))),
		  '0', 'no reservation of this file is left PENDING');

SELECT * FROM finish();

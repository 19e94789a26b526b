-- maintenance.sql: the administrator's maintenance calls, as its login
-- (shop_admin, this session): key_filter_rebuild() reads every key of the
-- ledger into the key filter, which then knows them all; restore_finish()
-- and restore_abandon() end a restore that stands incomplete -- the first
-- refuses while a table is missing, the second sells from what is there.
-- The restore is made in a database of its own (a restore marks only a
-- database whose other inventory table is empty): the superuser creates
-- it, with the extension, and restores inventory.sku there as pg_restore
-- would (a COPY of every column, by the tables' owner), and drops it at
-- the end; the application and the monitoring role connect to it too.
-- SKUs and keys of this database carry a prefix unique to this run.

\set name maintenance
\set role shop_admin
\ir lib/setup.sql

-- the scratch database's name
SELECT 'inv_pgtap_restore' AS restore_db \gset
SELECT set_config('inventory_test.restore_db', :'restore_db', false) \g /dev/null
-- sql, run in the scratch database by a role ('super', 'app', 'admin' or
-- 'monitor'), over a connection of its own
CREATE FUNCTION pg_temp.there(who text, sql text) RETURNS SETOF text LANGUAGE sql AS $$
	SELECT pg_temp.as_role(CASE who WHEN 'super' THEN current_setting('inventory_test.superuser') ELSE 'shop_' || who END,
						   sql, who || ' in ' || current_setting('inventory_test.restore_db'),
						   current_setting('inventory_test.restore_db'))
$$;

SELECT plan(10);

------------------------------------------------------------------------------
-- key_filter_rebuild()
------------------------------------------------------------------------------

SELECT pg_temp.restock('A', 5, 'rA') \g /dev/null
SELECT pg_temp.expect(pg_temp.app_r(format('inventory.reserve(%L, 1, %L)', pg_temp.n('A'), pg_temp.n('k1')))) \g /dev/null
SELECT inventory.key_filter_rebuild() AS keys_read, (SELECT count(*) FROM inventory.ledger) AS ledger_rows \gset
SELECT is(:'keys_read'::bigint, :'ledger_rows'::bigint,
		  'key_filter_rebuild() reads every key of the ledger, and says how many');
SELECT is((SELECT ready FROM inventory.key_filter), true, 'the key filter then knows every key of this database');
SELECT is((pg_temp.app_r(format('inventory.reserve(%L, 1, %L)', pg_temp.n('A'), pg_temp.n('k1')))).status, 'duplicate',
		  'after the rebuild, a replayed key is recognised');
SELECT is((pg_temp.app_r(format('inventory.reserve(%L, 1, %L)', pg_temp.n('A'), pg_temp.n('k2')))).status, 'ok',
		  '... and a new key is free');

------------------------------------------------------------------------------
-- a restore that stands incomplete: inventory.sku restored, the ledger not
------------------------------------------------------------------------------

SET client_min_messages = warning;
SELECT pg_temp.as_super(format('DROP DATABASE IF EXISTS %I', :'restore_db')) \g /dev/null
RESET client_min_messages;
SELECT pg_temp.as_super(format('CREATE DATABASE %I', :'restore_db')) \g /dev/null
SELECT pg_temp.there('super', 'CREATE EXTENSION inventory') \g /dev/null
SELECT pg_temp.there('super', $$COPY inventory.sku FROM PROGRAM 'printf ''X\t5\t0\t2026-01-01 00:00:00+00\t\\N\t\\N\t\\N\n'''$$) \g /dev/null

SELECT throws_ok(format('SELECT pg_temp.there(%L, %L)', 'app', 'SELECT (inventory.reserve(''X'', 1, ''o1'')).status'),
				 '55000', 'the restore of this database''s inventory is incomplete',
				 'while the restore stands incomplete, a sale is refused (55000)');
SELECT is(pg_temp.there('monitor', 'SELECT format(''sku_restored=%s ledger_restored=%s'', sku_restored, ledger_restored) FROM inventory.restore_state'),
		  'sku_restored=t ledger_restored=f', 'inventory.restore_state shows it');
SELECT throws_ok(format('SELECT pg_temp.there(%L, %L)', 'admin', 'SELECT inventory.restore_finish()'),
				 '55000', NULL, 'restore_finish() refuses while the ledger is missing (55000)');
SELECT lives_ok(format('SELECT pg_temp.there(%L, %L)', 'admin', 'SELECT inventory.restore_abandon()'),
				'restore_abandon() ends it');
SELECT is(pg_temp.there('monitor', 'SELECT count(*) FROM inventory.restore_state'), '0',
		  '... inventory.restore_state is empty');
SELECT is(pg_temp.there('app', 'SELECT (inventory.reserve(''X'', 1, ''o1'')).status'), 'ok',
		  '... and the database sells again, from what is there');

SELECT dblink_disconnect(c) FROM unnest(dblink_get_connections()) c WHERE c LIKE '% in ' || :'restore_db' \g /dev/null
SELECT pg_temp.as_super(format('DROP DATABASE %I', :'restore_db')) \g /dev/null

SELECT * FROM finish();

-- settle this database's reservations of this run
SELECT pg_temp.expect(pg_temp.app_r(format('inventory.cancel(%L)', pg_temp.n(o)))) FROM unnest('{k1,k2}'::text[]) o \g /dev/null

-- in_flight.sql: the outcome-table rows that need a second transaction
-- with a change to the SKU in flight:
--   reserve | none; another transaction has a change to the SKU in flight
--           (expected_version given) | version_conflict | f | none
--   adjust  | same | version_conflict | f | none
-- "available counts the holds of transactions in flight; other changes
-- count once they commit", and what inventory.verify() can say of a SKU
-- that a transaction in flight is changing: the cache is right meanwhile
-- (sku_stats against inventory.stock), verify() passes over the SKU with a
-- NOTICE and no row, verify(wait) raises 55000 naming it when the wait ends
-- with the SKU still busy, and once the transaction has ended verify(wait)
-- compares it.
--
-- This session is the application's (shop_app).  The second transaction is
-- the peer: another connection of the application's (dblink), or the
-- administrator's for a restock; the administrator restocks, takes stock
-- and reads the ledger, and the monitoring role reads the cache and
-- verifies, through their connections.  A transaction that both restocks
-- and reserves is an administrator's (a member of inventory_app).  All
-- names carry a prefix unique to this run.

\set name in_flight
\set role shop_app
\ir lib/setup.sql

-- runs sql in the peer's session (the application's, or the
-- administrator's with who 'admin'): its answer; raises unless it is
-- expect, when expect is given
CREATE FUNCTION pg_temp.peer(sql text, expect text DEFAULT NULL, who text DEFAULT 'app') RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	login text := CASE who WHEN 'admin' THEN 'shop_admin' ELSE 'shop_app' END;
	a text[] := ARRAY(SELECT pg_temp.as_role(login, sql, login || ' peer'));
BEGIN
	IF cardinality(a) <> 1 OR (expect IS NOT NULL AND a[1] IS DISTINCT FROM expect) THEN
		RAISE EXCEPTION 'the peer (%) answered % to: %, not %', login, a, sql, expect;
	END IF;
	RETURN a[1];
END $$;

-- the ledger rows under a key of this run
CREATE FUNCTION pg_temp.rows(o text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.read1(format('SELECT count(*) FROM inventory.ledger WHERE order_id = %L', pg_temp.n(o))) $$;

-- a SKU in the cache, as the monitoring role reads it in sku_stats, and in
-- the tables, as inventory.stock shows them
CREATE FUNCTION pg_temp.cache_of(s text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.monitor_says(format($f$SELECT format('on_hand=%%s reserved=%%s version=%%s holds=%%s',
															on_hand, reserved, version, holds)
											  FROM inventory.sku_stats WHERE sku = %L$f$, pg_temp.n(s))) $$;
CREATE FUNCTION pg_temp.tables_of(s text) RETURNS text LANGUAGE sql
AS $$ SELECT format('on_hand=%s reserved=%s version=%s', on_hand, reserved, version)
		FROM inventory.stock WHERE sku = pg_temp.n(s) $$;

SELECT plan(35);

SELECT pg_temp.restock('A', 10, 'rA') \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=0 available=10 version=1 live=10', 'A: 10 units, version 1');

------------------------------------------------------------------------------
-- a reservation in flight in another transaction
------------------------------------------------------------------------------

-- the peer reserves 3 units, and does not commit
SELECT pg_temp.peer('BEGIN', 'BEGIN') \g /dev/null
SELECT pg_temp.peer(format('SELECT status FROM inventory.reserve(%L, 3, %L)', pg_temp.n('A'), pg_temp.n('p1')), 'ok') \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=0 available=10 version=1 live=7',
		  'available() counts the hold in flight; the tables do not show it yet');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('v1'), expected_version => 1)),
		  'ok=false status=version_conflict sku=A qty=1 state=NULL available=7 version=1',
		  'reserve with the current version while another transaction has a change in flight: version_conflict');
SELECT is(pg_temp.rows('v1'), '0', 'version_conflict: no ledger row');
SELECT is(pg_temp.res(pg_temp.admin_r(format('inventory.adjust(%L, 12, %L, expected_version => 1)', pg_temp.n('A'), pg_temp.n('v2')))),
		  'ok=false status=version_conflict sku=A qty=12 state=NULL available=7 version=1',
		  'adjust with the current version while another transaction has a change in flight: version_conflict');
SELECT is(pg_temp.rows('v2'), '0', 'version_conflict of adjust: no ledger row');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 8, pg_temp.n('i1'))),
		  'ok=false status=insufficient sku=A qty=8 state=NULL available=7 version=1',
		  'the hold in flight counts for admission: 8 of 7 is insufficient');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 7, pg_temp.n('l1'))),
		  'ok=true status=ok sku=A qty=7 state=PENDING available=0 version=1',
		  'without expected_version a reservation does not wait for the other transaction');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=7 available=3 version=2 live=0',
		  'our reservation committed; the peer''s hold is still in flight');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('i2'))),
		  'ok=false status=insufficient sku=A qty=1 state=NULL available=0 version=2',
		  'nothing is left for anyone while the peer holds its units');

-- what verify() can say of A meanwhile: the cache is right, but verify()
-- cannot compare A, and says so
SELECT is(pg_temp.cache_of('A'), pg_temp.tables_of('A') || ' holds=3',
		  'while the peer has changes in flight, the cache of A equals the tables, and holds the peer''s 3 units');
-- verify() by the monitoring role's psql, whose NOTICE this session cannot
-- see through dblink: its output and messages
SELECT format('SELECT count(*) FROM inventory.verify() WHERE sku = %L', pg_temp.n('A')) AS verify_sql \gset
\set verify_out `psql -X -q -A -t -h :'pghost' -p :'pgport' -d :'dbname' -U shop_monitor -c :'verify_sql' 2>&1`
SELECT matches(:'verify_out'::text, '(^|\n)NOTICE:  1 SKU had changes in flight and was not verified(\n|$)',
			   'verify() passes over A, busy, with a NOTICE');
SELECT matches(:'verify_out'::text, '(^|\n)0$', '... and answers no row for it');
SELECT throws_ok(pg_temp.by_monitor('SELECT count(*) FROM inventory.verify(''0.2 s'')'), '55000',
				 format('1 SKU still had changes in flight after the wait: %s', quote_ident(pg_temp.n('A'))),
				 'verify(''0.2 s'') raises 55000 naming A, still busy when the wait ends');

SELECT pg_temp.peer('ROLLBACK', 'ROLLBACK') \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=7 available=3 version=2 live=3',
		  'after the peer rolled back its hold is returned');
SELECT is_empty(format('SELECT pg_temp.as_monitor(%L)', 'SELECT sku || '' '' || what FROM inventory.verify(''5 s'')'),
				'once the peer''s transaction has ended, verify(''5 s'') compares A, and is empty');
SELECT pg_temp.quiesce('A') \g /dev/null
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('v3'), expected_version => 2)),
		  'ok=true status=ok sku=A qty=1 state=PENDING available=2 version=2',
		  'with nothing in flight the current version is accepted');
SELECT pg_temp.quiesce_end() \g /dev/null

------------------------------------------------------------------------------
-- a confirmation in flight
------------------------------------------------------------------------------

-- the peer confirms our reservation, and does not commit
SELECT pg_temp.peer('BEGIN', 'BEGIN') \g /dev/null
SELECT pg_temp.peer(format('SELECT status FROM inventory.confirm(%L)', pg_temp.n('l1')), 'ok') \g /dev/null
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('v4'), expected_version => 3)),
		  'ok=false status=version_conflict sku=A qty=1 state=NULL available=2 version=3',
		  'reserve with the current version while a confirm is in flight: version_conflict');
SELECT pg_temp.peer('COMMIT', 'COMMIT') \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=3 reserved=1 available=2 version=4 live=2',
		  'after the peer committed: the sale left on_hand, available unchanged');

------------------------------------------------------------------------------
-- a restock in flight (the administrator's): version checks conflict, its
-- units count at commit
------------------------------------------------------------------------------

SELECT pg_temp.peer('BEGIN', 'BEGIN', 'admin') \g /dev/null
SELECT pg_temp.peer(format('SELECT status FROM inventory.restock(%L, 5, %L)', pg_temp.n('A'), pg_temp.n('pr')), 'ok', 'admin') \g /dev/null
SELECT is(inventory.available(pg_temp.n('A')), 2::bigint, 'units of a restock in flight are not available yet');
SELECT is(pg_temp.res(pg_temp.admin_r(format('inventory.adjust(%L, 3, %L, expected_version => 4)', pg_temp.n('A'), pg_temp.n('v5')))),
		  'ok=false status=version_conflict sku=A qty=3 state=NULL available=2 version=4',
		  'adjust with the current version while a restock is in flight: version_conflict');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('i3'))),
		  'ok=false status=insufficient sku=A qty=3 state=NULL available=2 version=4',
		  'the restock in flight does not make a reservation possible');
SELECT pg_temp.peer('COMMIT', 'COMMIT', 'admin') \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=8 reserved=1 available=7 version=5 live=7',
		  'after the peer committed its units are available');
SELECT pg_temp.quiesce('A') \g /dev/null
SELECT is(pg_temp.res(pg_temp.admin_r(format('inventory.adjust(%L, 9, %L, expected_version => 5)', pg_temp.n('A'), pg_temp.n('a1')))),
		  'ok=true status=ok sku=A qty=9 state=NULL available=8 version=5',
		  'with nothing in flight the stocktake with the current version works');
SELECT pg_temp.quiesce_end() \g /dev/null

------------------------------------------------------------------------------
-- what a movement answers: available once the caller's transaction
-- commits; a refused reserve, what a reserve can take now.  A transaction
-- that restocks and reserves is an administrator's: its connection's.
------------------------------------------------------------------------------

SELECT pg_temp.as_admin('BEGIN') \g /dev/null
SELECT is(pg_temp.res(pg_temp.admin_r(format('inventory.restock(%L, 4, %L)', pg_temp.n('A'), pg_temp.n('r4')))),
		  'ok=true status=ok sku=A qty=4 state=NULL available=12 version=6',
		  'a restock answers the units available once its transaction commits');
SELECT is(pg_temp.peer(format('SELECT available FROM inventory.reserve(%L, 9, %L)', pg_temp.n('A'), pg_temp.n('p9'))),
		  '8', 'another transaction still sees the live count: its reserve of 9 is refused with 8 available');
SELECT is(pg_temp.res(pg_temp.admin_r(format('inventory.reserve(%L, 9, %L)', pg_temp.n('A'), pg_temp.n('o9')))),
		  'ok=false status=insufficient sku=A qty=9 state=NULL available=8 version=6',
		  'nor can the restocking transaction reserve them before it commits; it is told the 8 a reserve can take now');
SELECT is(pg_temp.res(pg_temp.admin_r(format('inventory.cancel(%L)', pg_temp.n('v3')))),
		  'ok=true status=ok sku=A qty=1 state=CANCELLED available=13 version=6',
		  'a cancel in the same transaction answers with its unit back as well');
SELECT pg_temp.as_admin('ROLLBACK') \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=9 reserved=1 available=8 version=6 live=8',
		  'rolled back: the answers were what a commit would have made, nothing more');
SELECT pg_temp.as_admin('BEGIN') \g /dev/null
SELECT is(pg_temp.res(pg_temp.admin_r(format('inventory.restock(%L, 4, %L)', pg_temp.n('NEW'), pg_temp.n('rn')))),
		  'ok=true status=ok sku=NEW qty=4 state=NULL available=4 version=0',
		  'a restock that creates its SKU answers its units');
SELECT is(pg_temp.res(pg_temp.admin_r(format('inventory.reserve(%L, 1, %L)', pg_temp.n('NEW'), pg_temp.n('on')))),
		  'ok=false status=insufficient sku=NEW qty=1 state=NULL available=0 version=0',
		  'a reserve of that SKU in the same transaction: insufficient, told the 0 a reserve can take now');
SELECT pg_temp.as_admin('ROLLBACK') \g /dev/null
SELECT is(pg_temp.counters('NEW'), 'no sku live=NULL', 'rolled back: the SKU was not created');

------------------------------------------------------------------------------
-- settle what is left (v3), and check the cache against the tables
------------------------------------------------------------------------------

\ir lib/settle.sql
SELECT is(pg_temp.counters('A'), 'on_hand=9 reserved=0 available=9 version=7 live=9', 'final counters');
SELECT dblink_disconnect(c) FROM unnest(dblink_get_connections()) c WHERE c LIKE '% peer' \g /dev/null

SELECT * FROM finish();

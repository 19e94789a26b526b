-- reject_writes_nothing.sql: a buyer who cannot be served -- insufficient,
-- version_conflict, unknown_sku, duplicate -- is turned away without taking
-- a transaction id and without writing anything; a successful reserve
-- does take one.
--
-- pgTAP itself writes (to temporary tables, which takes a transaction id),
-- so each call runs in a transaction of its own that runs no assertion:
-- psql keeps what it saw (\gset), the transaction is rolled back, and the
-- assertions come after.  This session is the application's (shop_app),
-- which reads inventory.stock -- its own transaction's changes included --
-- but not the ledger: the administrator restocks and reads the ledger,
-- which shows committed rows, through its connection.  All names carry a
-- prefix unique to this run; the reservations of the set-up are settled at
-- the end.

\set name reject_writes_nothing
\set role shop_app
\ir lib/setup.sql

-- a ledger row as text, as committed: every column but folded, which the
-- background worker sets at any moment without changing the movement
CREATE FUNCTION pg_temp.row_of(o text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.read1(format($f$SELECT coalesce((SELECT (l.order_id, l.batch_id, l.kind, l.sku, l.qty, l.counted, l.state,
															  l.created_at, l.expires_at, l.settled_at)::text
														 FROM inventory.ledger l WHERE order_id = %L AND batch_id = 1), 'no row')$f$,
								  pg_temp.n(o))) $$;

SELECT plan(43);

------------------------------------------------------------------------------
-- set-up (committed): A has 5 units, 2 held by "dup", 1 sold to "conf";
-- B has 1 unit, held by "bsold"
------------------------------------------------------------------------------

SELECT pg_temp.restock('A', 5, 'rA'), pg_temp.restock('B', 1, 'rB') \g /dev/null
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('dup'), ttl => '1 hour')),
	   pg_temp.expect(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('conf'), ttl => '1 hour')),
	   pg_temp.expect(inventory.reserve(pg_temp.n('B'), 1, pg_temp.n('bsold'), ttl => '1 hour')) \g /dev/null
SELECT pg_temp.expect(inventory.confirm(pg_temp.n('conf'))) \g /dev/null
SELECT pg_temp.row_of('dup') AS dup_row, pg_temp.row_of('bsold') AS bsold_row, pg_temp.row_of('conf') AS conf_row,
	   (SELECT version FROM inventory.stock WHERE sku = pg_temp.n('A')) AS a_version,
	   pg_temp.stock('A') AS a_stock, pg_temp.stock('B') AS b_stock \gset

------------------------------------------------------------------------------
-- insufficient
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'A', 3, :'prefix' || 'ins')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.stock('A') AS st,
	   inventory.available(pg_temp.n('A')) AS live \gset
ROLLBACK;
SELECT is(:'s'::text, 'insufficient', 'insufficient: status');
SELECT is(:'noxid'::bool, true, 'insufficient: no transaction id taken');
SELECT is(:'st'::text, :'a_stock'::text, 'insufficient: inventory.stock unchanged, as the transaction sees it (no row)');
SELECT is(:'live'::bigint, 2::bigint, 'insufficient: available() unchanged');

------------------------------------------------------------------------------
-- version_conflict
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'A', 1, :'prefix' || 'vc', expected_version => :'a_version'::bigint - 1)).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.stock('A') AS st,
	   inventory.available(pg_temp.n('A')) AS live \gset
ROLLBACK;
SELECT is(:'s'::text, 'version_conflict', 'version_conflict: status');
SELECT is(:'noxid'::bool, true, 'version_conflict: no transaction id taken');
SELECT is(:'st'::text, :'a_stock'::text, 'version_conflict: inventory.stock unchanged, as the transaction sees it (no row)');
SELECT is(:'live'::bigint, 2::bigint, 'version_conflict: available() unchanged');

------------------------------------------------------------------------------
-- unknown_sku
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'NOPE', 1, :'prefix' || 'unk')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.stock('NOPE') AS st \gset
ROLLBACK;
SELECT is(:'s'::text, 'unknown_sku', 'unknown_sku: status');
SELECT is(:'noxid'::bool, true, 'unknown_sku: no transaction id taken');
SELECT is(:'st'::text, 'no sku', 'unknown_sku: no SKU, as the transaction sees it');

------------------------------------------------------------------------------
-- duplicate, with enough stock to admit the replay again
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'A', 2, :'prefix' || 'dup')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.stock('A') AS st,
	   inventory.available(pg_temp.n('A')) AS live \gset
ROLLBACK;
SELECT is(:'s'::text, 'duplicate', 'duplicate (stock available): status');
SELECT is(:'noxid'::bool, true, 'duplicate (stock available): no transaction id taken');
SELECT is(:'st'::text, :'a_stock'::text, 'duplicate (stock available): inventory.stock unchanged, as the transaction sees it');
SELECT is(:'live'::bigint, 2::bigint, 'duplicate (stock available): available() unchanged, no hold kept');

------------------------------------------------------------------------------
-- duplicate of a reservation of a sold-out SKU
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'B', 1, :'prefix' || 'bsold')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.stock('B') AS st,
	   inventory.available(pg_temp.n('B')) AS live \gset
ROLLBACK;
SELECT is(:'s'::text, 'duplicate', 'duplicate (sold out): status');
SELECT is(:'noxid'::bool, true, 'duplicate (sold out): no transaction id taken');
SELECT is(:'st'::text, :'b_stock'::text, 'duplicate (sold out): inventory.stock unchanged, as the transaction sees it');
SELECT is(:'live'::bigint, 0::bigint, 'duplicate (sold out): available() unchanged');

------------------------------------------------------------------------------
-- duplicate of a CONFIRMED reservation, and one with a stale version
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'A', 1, :'prefix' || 'conf')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.stock('A') AS st \gset
ROLLBACK;
SELECT is(:'s'::text, 'duplicate', 'duplicate (CONFIRMED): status');
SELECT is(:'noxid'::bool, true, 'duplicate (CONFIRMED): no transaction id taken');
SELECT is(:'st'::text, :'a_stock'::text, 'duplicate (CONFIRMED): inventory.stock unchanged, as the transaction sees it');

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'A', 2, :'prefix' || 'dup', expected_version => 0)).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.stock('A') AS st \gset
ROLLBACK;
SELECT is(:'s'::text, 'duplicate', 'duplicate with a stale expected_version: status');
SELECT is(:'noxid'::bool, true, 'duplicate with a stale expected_version: no transaction id taken');
SELECT is(:'st'::text, :'a_stock'::text, 'duplicate with a stale expected_version: inventory.stock unchanged, as the transaction sees it');

------------------------------------------------------------------------------
-- many refusals in one transaction still take no transaction id
------------------------------------------------------------------------------

BEGIN;
SELECT inventory.reserve(:'prefix' || 'A', 3, :'prefix' || 'm1') \g /dev/null
SELECT inventory.reserve(:'prefix' || 'B', 1, :'prefix' || 'm2') \g /dev/null
SELECT inventory.reserve(:'prefix' || 'A', 1, :'prefix' || 'm3', expected_version => 0) \g /dev/null
SELECT inventory.reserve(:'prefix' || 'NOPE', 1, :'prefix' || 'm4') \g /dev/null
SELECT inventory.reserve(:'prefix' || 'A', 2, :'prefix' || 'dup') \g /dev/null
SELECT inventory.reserve(:'prefix' || 'B', 1, :'prefix' || 'bsold') \g /dev/null
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid,
	   pg_temp.stock('A') || ' ' || pg_temp.stock('B') || ' ' || pg_temp.stock('NOPE') AS st,
	   inventory.available(pg_temp.n('A')) AS live_a, inventory.available(pg_temp.n('B')) AS live_b \gset
ROLLBACK;
SELECT is(:'noxid'::bool, true, 'six refusals in one transaction: no transaction id taken');
SELECT is(:'st'::text, :'a_stock' || ' ' || :'b_stock' || ' no sku',
		  'six refusals in one transaction: inventory.stock unchanged, as the transaction sees it');
SELECT is(:'live_a'::bigint, 2::bigint, 'six refusals in one transaction: available() of A unchanged');
SELECT is(:'live_b'::bigint, 0::bigint, 'six refusals in one transaction: available() of B unchanged');
SELECT is(pg_temp.read1(format('SELECT count(*) FROM inventory.ledger WHERE order_id IN (%L, %L, %L, %L, %L, %L, %L)',
							   pg_temp.n('ins'), pg_temp.n('vc'), pg_temp.n('unk'), pg_temp.n('m1'), pg_temp.n('m2'),
							   pg_temp.n('m3'), pg_temp.n('m4'))),
		  '0', 'no refused key has a ledger row');

------------------------------------------------------------------------------
-- a successful reserve does take a transaction id and writes its row
------------------------------------------------------------------------------

BEGIN;
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid_before \gset
SELECT (inventory.reserve(:'prefix' || 'A', 2, :'prefix' || 'okk')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.stock('A') AS st,
	   inventory.available(pg_temp.n('A')) AS live \gset
ROLLBACK;
SELECT is(:'noxid_before'::bool, true, 'a new transaction has no transaction id');
SELECT is(:'s'::text, 'ok', 'success: status');
SELECT is(:'noxid'::bool, false, 'success: a transaction id is taken');
SELECT is(:'st'::text, 'on_hand=4 reserved=4 available=0 version=5',
		  'success: its row is written, as inventory.stock shows to the transaction (reserved + 2, version + 1)');
SELECT is(:'live'::bigint, 0::bigint, 'success: available() counts the hold');
SELECT is(inventory.available(pg_temp.n('A')), 2::bigint, 'after its rollback the hold is returned');
SELECT is(pg_temp.row_of('okk'), 'no row', 'after its rollback the row is gone');
SELECT is(pg_temp.stock('A'), :'a_stock', '... and inventory.stock is what it was');

------------------------------------------------------------------------------
-- the replayed reservations are unchanged; settle the set-up
------------------------------------------------------------------------------

SELECT is(pg_temp.row_of('dup'), :'dup_row'::text, 'the replayed reservation dup is unchanged at the end');
SELECT is(pg_temp.row_of('bsold'), :'bsold_row'::text, 'the replayed reservation bsold is unchanged at the end');
SELECT is(pg_temp.row_of('conf'), :'conf_row'::text, 'the replayed reservation conf is unchanged at the end');
\ir lib/settle.sql

SELECT * FROM finish();

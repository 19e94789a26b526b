-- reject_writes_nothing.sql: a buyer who cannot be served -- insufficient,
-- version_conflict, unknown_sku, duplicate -- is turned away without taking
-- a transaction id and without writing a ledger row; a successful reserve
-- does take one.
--
-- pgTAP itself writes (to temporary tables, which takes a transaction id),
-- so each call runs in a transaction of its own that runs no assertion:
-- psql keeps what it saw (\gset), the transaction is rolled back, and the
-- assertions come after.  All names carry a prefix unique to this run; the
-- reservations of the setup are settled at the end.

\set name reject_writes_nothing
\ir lib/setup.sql

-- a ledger row as text: every column but folded, which the background
-- worker sets at any moment without changing the movement
CREATE FUNCTION pg_temp.row_of(o text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT coalesce((SELECT (l.order_id, l.batch_id, l.kind, l.sku, l.qty, l.counted, l.state,
									l.created_at, l.expires_at, l.settled_at)::text
						 FROM inventory.ledger l WHERE order_id = pg_temp.n(o) AND batch_id = 1), 'no row') $$;

SELECT plan(50);

------------------------------------------------------------------------------
-- setup (committed): A has 5 units, 2 held by "dup", 1 sold to "conf";
-- B has 1 unit, held by "bsold"
------------------------------------------------------------------------------

SELECT is((inventory.restock(pg_temp.n('A'), 5, pg_temp.n('rA'))).status, 'ok', 'setup: restock A 5');
SELECT is((inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('dup'), ttl => '1 hour')).status, 'ok', 'setup: reserve dup');
SELECT is((inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('conf'), ttl => '1 hour')).status, 'ok', 'setup: reserve conf');
SELECT is((inventory.confirm(pg_temp.n('conf'))).status, 'ok', 'setup: confirm conf');
SELECT is((inventory.restock(pg_temp.n('B'), 1, pg_temp.n('rB'))).status, 'ok', 'setup: restock B 1');
SELECT is((inventory.reserve(pg_temp.n('B'), 1, pg_temp.n('bsold'), ttl => '1 hour')).status, 'ok', 'setup: reserve bsold');
SELECT is(inventory.available(pg_temp.n('A')), 2::bigint, 'setup: A has 2 available');
SELECT is(inventory.available(pg_temp.n('B')), 0::bigint, 'setup: B is sold out');
SELECT pg_temp.row_of('dup') AS dup_row, pg_temp.row_of('bsold') AS bsold_row, pg_temp.row_of('conf') AS conf_row,
	   (SELECT version FROM inventory.stock WHERE sku = pg_temp.n('A')) AS a_version \gset

------------------------------------------------------------------------------
-- insufficient
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'A', 3, :'prefix' || 'ins')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.row_of('ins') AS r,
	   inventory.available(pg_temp.n('A')) AS live \gset
ROLLBACK;
SELECT is(:'s'::text, 'insufficient', 'insufficient: status');
SELECT is(:'noxid'::bool, true, 'insufficient: no transaction id taken');
SELECT is(:'r'::text, 'no row', 'insufficient: no ledger row');
SELECT is(:'live'::bigint, 2::bigint, 'insufficient: available() unchanged');

------------------------------------------------------------------------------
-- version_conflict
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'A', 1, :'prefix' || 'vc', expected_version => :'a_version'::bigint - 1)).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.row_of('vc') AS r,
	   inventory.available(pg_temp.n('A')) AS live \gset
ROLLBACK;
SELECT is(:'s'::text, 'version_conflict', 'version_conflict: status');
SELECT is(:'noxid'::bool, true, 'version_conflict: no transaction id taken');
SELECT is(:'r'::text, 'no row', 'version_conflict: no ledger row');
SELECT is(:'live'::bigint, 2::bigint, 'version_conflict: available() unchanged');

------------------------------------------------------------------------------
-- unknown_sku
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'NOPE', 1, :'prefix' || 'unk')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.row_of('unk') AS r,
	   (SELECT count(*) FROM inventory.sku WHERE sku = pg_temp.n('NOPE')) AS skus \gset
ROLLBACK;
SELECT is(:'s'::text, 'unknown_sku', 'unknown_sku: status');
SELECT is(:'noxid'::bool, true, 'unknown_sku: no transaction id taken');
SELECT is(:'r'::text, 'no row', 'unknown_sku: no ledger row');
SELECT is(:'skus'::bigint, 0::bigint, 'unknown_sku: no SKU row');

------------------------------------------------------------------------------
-- duplicate, with enough stock to admit the replay again
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'A', 2, :'prefix' || 'dup')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.row_of('dup') AS r,
	   inventory.available(pg_temp.n('A')) AS live \gset
ROLLBACK;
SELECT is(:'s'::text, 'duplicate', 'duplicate (stock available): status');
SELECT is(:'noxid'::bool, true, 'duplicate (stock available): no transaction id taken');
SELECT is(:'r'::text, :'dup_row'::text, 'duplicate (stock available): the ledger row is untouched');
SELECT is(:'live'::bigint, 2::bigint, 'duplicate (stock available): available() unchanged, no hold kept');

------------------------------------------------------------------------------
-- duplicate of a reservation of a sold-out SKU
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'B', 1, :'prefix' || 'bsold')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.row_of('bsold') AS r,
	   inventory.available(pg_temp.n('B')) AS live \gset
ROLLBACK;
SELECT is(:'s'::text, 'duplicate', 'duplicate (sold out): status');
SELECT is(:'noxid'::bool, true, 'duplicate (sold out): no transaction id taken');
SELECT is(:'r'::text, :'bsold_row'::text, 'duplicate (sold out): the ledger row is untouched');
SELECT is(:'live'::bigint, 0::bigint, 'duplicate (sold out): available() unchanged');

------------------------------------------------------------------------------
-- duplicate of a CONFIRMED reservation, and one with a stale version
------------------------------------------------------------------------------

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'A', 1, :'prefix' || 'conf')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.row_of('conf') AS r \gset
ROLLBACK;
SELECT is(:'s'::text, 'duplicate', 'duplicate (CONFIRMED): status');
SELECT is(:'noxid'::bool, true, 'duplicate (CONFIRMED): no transaction id taken');
SELECT is(:'r'::text, :'conf_row'::text, 'duplicate (CONFIRMED): the ledger row is untouched');

BEGIN;
SELECT (inventory.reserve(:'prefix' || 'A', 2, :'prefix' || 'dup', expected_version => 0)).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.row_of('dup') AS r \gset
ROLLBACK;
SELECT is(:'s'::text, 'duplicate', 'duplicate with a stale expected_version: status');
SELECT is(:'noxid'::bool, true, 'duplicate with a stale expected_version: no transaction id taken');
SELECT is(:'r'::text, :'dup_row'::text, 'duplicate with a stale expected_version: the ledger row is untouched');

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
	   (SELECT count(*) FROM inventory.ledger WHERE order_id IN (pg_temp.n('m1'), pg_temp.n('m2'), pg_temp.n('m3'), pg_temp.n('m4'))) AS rows,
	   inventory.available(pg_temp.n('A')) AS live_a, inventory.available(pg_temp.n('B')) AS live_b \gset
ROLLBACK;
SELECT is(:'noxid'::bool, true, 'six refusals in one transaction: no transaction id taken');
SELECT is(:'rows'::bigint, 0::bigint, 'six refusals in one transaction: no ledger row');
SELECT is(:'live_a'::bigint, 2::bigint, 'six refusals in one transaction: available() of A unchanged');
SELECT is(:'live_b'::bigint, 0::bigint, 'six refusals in one transaction: available() of B unchanged');

------------------------------------------------------------------------------
-- a successful reserve does take a transaction id and writes its row
------------------------------------------------------------------------------

BEGIN;
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid_before \gset
SELECT (inventory.reserve(:'prefix' || 'A', 2, :'prefix' || 'okk')).status AS s \gset
SELECT pg_current_xact_id_if_assigned() IS NULL AS noxid, pg_temp.row_of('okk') <> 'no row' AS has_row,
	   inventory.available(pg_temp.n('A')) AS live \gset
ROLLBACK;
SELECT is(:'noxid_before'::bool, true, 'a new transaction has no transaction id');
SELECT is(:'s'::text, 'ok', 'success: status');
SELECT is(:'noxid'::bool, false, 'success: a transaction id is taken');
SELECT is(:'has_row'::bool, true, 'success: the ledger row is written');
SELECT is(:'live'::bigint, 0::bigint, 'success: available() counts the hold');
SELECT is(inventory.available(pg_temp.n('A')), 2::bigint, 'after its rollback the hold is returned');
SELECT is(pg_temp.row_of('okk'), 'no row', 'after its rollback the row is gone');

------------------------------------------------------------------------------
-- settle the setup
------------------------------------------------------------------------------

SELECT is(pg_temp.row_of('dup'), :'dup_row'::text, 'the replayed reservation is unchanged at the end');
SELECT is((inventory.cancel(pg_temp.n('dup'))).status, 'ok', 'cancel dup');
SELECT is((inventory.cancel(pg_temp.n('bsold'))).status, 'ok', 'cancel bsold');
SELECT is((SELECT count(*) FROM inventory.ledger
			WHERE starts_with(order_id, current_setting('inventory_test.prefix')) AND state::text = 'PENDING'),
		  0::bigint, 'no reservation of this file is left PENDING');
SELECT is_empty('SELECT * FROM inventory.verify()', 'inventory.verify() is empty');

SELECT * FROM finish();

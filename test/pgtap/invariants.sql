-- invariants.sql:
--   I1  0 <= reserved <= on_hand for every SKU of inventory.stock, after a
--       mix of reservations, confirmations, cancellations, stocktakes,
--       restocks and expiries;
--   I2  inventory.verify() returns no rows after committed work, after
--       aborted work (rollback, error, exception block, savepoint), and
--       inside a transaction with changes of its own -- and it does report
--       a write that bypassed the triggers, so its silence means something;
--   I7  a reserve in a rolled-back savepoint changes neither the tables nor
--       inventory.available().
--
-- Work is committed (that is what these promises are about), so all names
-- carry a prefix unique to this run; every reservation left is settled.

\set name invariants
\ir lib/setup.sql

-- I1, over every SKU of the database
CREATE VIEW pg_temp.i1_violations AS
	SELECT sku, on_hand, reserved FROM inventory.stock WHERE NOT (0 <= reserved AND reserved <= on_hand);

SELECT plan(80);

------------------------------------------------------------------------------
-- committed work: a mix of every movement
------------------------------------------------------------------------------

SELECT is((inventory.restock(pg_temp.n('A'), 50, pg_temp.n('rA'))).status, 'ok', 'restock A 50');
SELECT is((inventory.restock(pg_temp.n('B'), 20, pg_temp.n('rB'))).status, 'ok', 'restock B 20');
SELECT is((inventory.restock(pg_temp.n('C'), 5, pg_temp.n('rC'))).status, 'ok', 'restock C 5');
SELECT is((inventory.reserve(pg_temp.n('A'), 5, pg_temp.n('a1'))).status, 'ok', 'reserve A 5');
SELECT is((inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('a2'))).status, 'ok', 'reserve A 3');
SELECT is((inventory.reserve(pg_temp.n('B'), 4, pg_temp.n('b1'), ttl => '1 hour')).status, 'ok', 'reserve B 4');
SELECT is((inventory.reserve(pg_temp.n('C'), 5, pg_temp.n('c1'))).status, 'ok', 'reserve all of C');
SELECT is((inventory.reserve(pg_temp.n('C'), 1, pg_temp.n('c2'))).status, 'insufficient', 'C is sold out');
SELECT is((inventory.confirm(pg_temp.n('a1'))).status, 'ok', 'confirm A 5');
SELECT is((inventory.cancel(pg_temp.n('a2'))).status, 'ok', 'cancel A 3');
SELECT is((inventory.adjust(pg_temp.n('B'), 25, pg_temp.n('ba1'))).status, 'ok', 'stocktake B to 25');
SELECT is((inventory.adjust(pg_temp.n('C'), 4, pg_temp.n('ca1'))).status, 'insufficient',
		  'stocktake of C below its reserved units is refused');
SELECT is((inventory.restock(pg_temp.n('C'), 2, pg_temp.n('rC2'))).status, 'ok', 'restock C 2');
SELECT is((inventory.confirm(pg_temp.n('c1'))).status, 'ok', 'confirm C 5');

-- expire() expires every overdue PENDING reservation and says how many.
-- The overdue reservations are made in the same transaction, so that the
-- background worker cannot expire them first.
BEGIN;
SELECT lives_ok($$SELECT pg_temp.overdue('od1', 'A', 2)$$, 'an overdue reservation of A');
SELECT lives_ok($$SELECT pg_temp.overdue('od2', 'B', 1)$$, 'an overdue reservation of B');
SELECT count(*) AS overdue_before FROM inventory.ledger
 WHERE state::text = 'PENDING' AND expires_at <= statement_timestamp() \gset
SELECT cmp_ok(:'overdue_before'::bigint, '>=', 2::bigint, 'at least our two reservations are overdue');
SELECT is(inventory.expire(), :'overdue_before'::bigint, 'expire() returns the number of overdue reservations');
SELECT is((SELECT count(*) FROM inventory.ledger WHERE state::text = 'PENDING' AND expires_at <= now()),
		  0::bigint, 'no overdue PENDING reservation is left');
COMMIT;
SELECT is(pg_temp.state_of('od1') || ' ' || pg_temp.state_of('od2'), 'EXPIRED EXPIRED', 'both are EXPIRED');

SELECT is(pg_temp.counters('A'), 'on_hand=45 reserved=0 available=45 version=7 live=45', 'counters of A');
SELECT is(pg_temp.counters('B'), 'on_hand=25 reserved=4 available=21 version=5 live=21', 'counters of B');
SELECT is(pg_temp.counters('C'), 'on_hand=2 reserved=0 available=2 version=4 live=2', 'counters of C');
SELECT is_empty('SELECT * FROM pg_temp.i1_violations', 'I1 holds for every SKU after committed work');
SELECT is_empty('SELECT * FROM inventory.verify()', 'I2: verify() is empty after committed work');

-- expire(max_rows) expires the oldest first; run in a transaction that is
-- rolled back, so nothing overdue is ever committed
BEGIN;
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES (pg_temp.n('old1'), 1, 'reserve', pg_temp.n('A'), 1, '-infinity'),
	   (pg_temp.n('old2'), 1, 'reserve', pg_temp.n('A'), 1, '-infinity'::timestamptz + interval '1 microsecond');
SELECT inventory.expire(1) AS expired_one \gset
SELECT pg_temp.state_of('old1') || ' ' || pg_temp.state_of('old2') AS old_states \gset
ROLLBACK;
SELECT is(:'expired_one'::bigint, 1::bigint, 'expire(1) expires one reservation');
SELECT is(:'old_states'::text, 'EXPIRED PENDING', 'expire(1) expires the oldest first');

------------------------------------------------------------------------------
-- aborted work
------------------------------------------------------------------------------

SELECT lives_ok('SELECT pg_temp.snapshot()', 'snapshot before the aborted work');

-- a rolled-back transaction
BEGIN;
SELECT inventory.reserve(pg_temp.n('A'), 10, pg_temp.n('x1')) \g /dev/null
SELECT inventory.restock(pg_temp.n('B'), 5, pg_temp.n('x2')) \g /dev/null
SELECT inventory.adjust(pg_temp.n('C'), 0, pg_temp.n('x3')) \g /dev/null
SELECT inventory.confirm(pg_temp.n('b1')) \g /dev/null
SELECT inventory.restock(pg_temp.n('NEW'), 5, pg_temp.n('x4')) \g /dev/null
ROLLBACK;
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku', 'SELECT * FROM snap_stock ORDER BY sku',
				  'after ROLLBACK: inventory.stock unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'after ROLLBACK: inventory.ledger unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku', 'SELECT * FROM snap_live ORDER BY sku',
				  'after ROLLBACK: inventory.available() unchanged');
SELECT is(inventory.available(pg_temp.n('NEW')), NULL, 'after ROLLBACK: the SKU the transaction created does not exist');
SELECT is_empty('SELECT * FROM pg_temp.i1_violations', 'I1 holds after ROLLBACK');
SELECT is_empty('SELECT * FROM inventory.verify()', 'I2: verify() is empty after ROLLBACK');

-- work aborted by an error
SELECT throws_ok(format($f$DO $do$ BEGIN
		PERFORM inventory.reserve(%L, 10, %L);
		PERFORM inventory.restock(%L, 5, %L);
		PERFORM inventory.cancel(%L);
		RAISE EXCEPTION 'boom';
	END $do$$f$, pg_temp.n('A'), pg_temp.n('x5'), pg_temp.n('B'), pg_temp.n('x6'), pg_temp.n('b1')),
	'P0001', 'boom', 'work that ends in an error');
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku', 'SELECT * FROM snap_stock ORDER BY sku',
				  'after the error: inventory.stock unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'after the error: inventory.ledger unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku', 'SELECT * FROM snap_live ORDER BY sku',
				  'after the error: inventory.available() unchanged');
SELECT is_empty('SELECT * FROM inventory.verify()', 'I2: verify() is empty after the error');

-- a PL/pgSQL exception block: its work is undone, the rest commits
DO $$
BEGIN
	PERFORM inventory.reserve(pg_temp.n('A'), 7, pg_temp.n('x7'));
	BEGIN
		PERFORM inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('x8'));
		PERFORM inventory.restock(pg_temp.n('C'), 1, pg_temp.n('x9'));
		RAISE EXCEPTION 'undo';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
END $$;
SELECT is(pg_temp.state_of('x7') || ' ' || pg_temp.state_of('x8') || ' ' || pg_temp.state_of('x9'),
		  'PENDING no row no row', 'exception block: only the work outside it is kept');
SELECT is(pg_temp.counters('A'), 'on_hand=45 reserved=7 available=38 version=8 live=38',
		  'exception block: A counts only the kept reservation');
SELECT is(pg_temp.counters('C'), 'on_hand=2 reserved=0 available=2 version=4 live=2',
		  'exception block: C unchanged');
SELECT is_empty('SELECT * FROM inventory.verify()', 'I2: verify() is empty after the exception block');

------------------------------------------------------------------------------
-- I7: a reserve in a rolled-back savepoint
------------------------------------------------------------------------------

SELECT lives_ok('SELECT pg_temp.snapshot()', 'snapshot before the savepoint');
BEGIN;
SAVEPOINT s1;
SELECT (inventory.reserve(pg_temp.n('A'), 4, pg_temp.n('sp1'))).status AS sp_status \gset
SELECT inventory.available(pg_temp.n('A')) AS sp_live_inside \gset
SELECT count(*) AS sp_rows_inside FROM inventory.ledger WHERE order_id = pg_temp.n('sp1') \gset
ROLLBACK TO SAVEPOINT s1;
SELECT is(:'sp_status'::text, 'ok', 'inside the savepoint the reserve succeeded');
SELECT is(:'sp_live_inside'::bigint, 34::bigint, 'inside the savepoint available() counted its hold');
SELECT is(:'sp_rows_inside'::bigint, 1::bigint, 'inside the savepoint its row existed');
SELECT is((SELECT count(*) FROM inventory.ledger WHERE order_id = pg_temp.n('sp1')), 0::bigint,
		  'after ROLLBACK TO: no ledger row');
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku', 'SELECT * FROM snap_stock ORDER BY sku',
				  'after ROLLBACK TO: inventory.stock unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'after ROLLBACK TO: inventory.ledger unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku', 'SELECT * FROM snap_live ORDER BY sku',
				  'after ROLLBACK TO: inventory.available() unchanged, in the transaction');
SELECT is_empty('SELECT * FROM inventory.verify()', 'I2: verify() is empty after ROLLBACK TO, in the transaction');
-- nested: a released savepoint inside one that is rolled back
SAVEPOINT s2;
SELECT inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('sp2')) \g /dev/null
SAVEPOINT s3;
SELECT inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('sp3')) \g /dev/null
SELECT inventory.restock(pg_temp.n('B'), 2, pg_temp.n('sp4')) \g /dev/null
RELEASE SAVEPOINT s3;
ROLLBACK TO SAVEPOINT s2;
SELECT is((SELECT count(*) FROM inventory.ledger WHERE order_id IN (pg_temp.n('sp2'), pg_temp.n('sp3'), pg_temp.n('sp4'))),
		  0::bigint, 'nested savepoints rolled back: no ledger rows');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku', 'SELECT * FROM snap_live ORDER BY sku',
				  'nested savepoints rolled back: inventory.available() unchanged');
-- the same reserve, made again after the rollback, works
SELECT is((inventory.reserve(pg_temp.n('A'), 4, pg_temp.n('sp1'))).status, 'ok',
		  'the rolled-back key can be used again');
SELECT is(inventory.available(pg_temp.n('A')), 34::bigint, 'and holds its units once');
COMMIT;
SELECT is(pg_temp.counters('A'), 'on_hand=45 reserved=11 available=34 version=9 live=34',
		  'after commit: only the reservation made outside the savepoints counts');
SELECT is(pg_temp.counters('B'), 'on_hand=25 reserved=4 available=21 version=5 live=21',
		  'after commit: B unchanged');
SELECT is_empty('SELECT * FROM inventory.verify()', 'I2: verify() is empty after the savepoint work committed');

------------------------------------------------------------------------------
-- I2 inside a transaction with changes of its own
------------------------------------------------------------------------------

BEGIN;
SELECT is((inventory.reserve(pg_temp.n('B'), 2, pg_temp.n('x10'))).status, 'ok', 'in a transaction: reserve B 2');
SELECT is((inventory.restock(pg_temp.n('C'), 3, pg_temp.n('x11'))).status, 'ok', 'in a transaction: restock C 3');
SELECT is((inventory.confirm(pg_temp.n('sp1'))).status, 'ok', 'in a transaction: confirm A 4');
SELECT is((inventory.adjust(pg_temp.n('A'), 50, pg_temp.n('x12'))).status, 'ok', 'in a transaction: stocktake A');
SELECT is_empty('SELECT * FROM inventory.verify()', 'I2: verify() is empty inside a transaction with its own changes');
SELECT is_empty('SELECT * FROM pg_temp.i1_violations', 'I1 holds inside the transaction');
COMMIT;
SELECT is(pg_temp.counters('A'), 'on_hand=50 reserved=7 available=43 version=11 live=43', 'after commit: A');
SELECT is(pg_temp.counters('B'), 'on_hand=25 reserved=6 available=19 version=6 live=19', 'after commit: B');
SELECT is(pg_temp.counters('C'), 'on_hand=5 reserved=0 available=5 version=5 live=5', 'after commit: C');
SELECT is_empty('SELECT * FROM inventory.verify()', 'I2: verify() is empty after that commit');

------------------------------------------------------------------------------
-- verify() is not silent by construction: a write that bypasses the
-- triggers shows up.  ALTER TABLE ... DISABLE TRIGGER leaves them on; a
-- superuser who edits pg_trigger can turn them off (ANALYZE makes this
-- session read the table's triggers again)
------------------------------------------------------------------------------

BEGIN;
SET LOCAL lock_timeout = '30s';
SAVEPOINT bypass;
UPDATE pg_catalog.pg_trigger SET tgenabled = 'D'
 WHERE tgrelid = 'inventory.ledger'::regclass AND NOT tgisinternal;
ANALYZE inventory.ledger;
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
VALUES (pg_temp.n('bypass'), 1, 'restock', pg_temp.n('C'), 7);
SELECT string_agg(what || ':' || cached || '->' || truth, ',' ORDER BY what) AS bypass_drift
  FROM inventory.verify() WHERE sku = pg_temp.n('C') \gset
ROLLBACK TO SAVEPOINT bypass;
COMMIT;
SELECT is(:'bypass_drift'::text, 'on_hand:5->12,version:5->6',
		  'verify() reports the on_hand and version of a write made with the triggers disabled');
SELECT is_empty($$SELECT tgname FROM pg_trigger
				   WHERE tgrelid IN ('inventory.ledger'::regclass, 'inventory.sku'::regclass)
				     AND NOT tgisinternal AND tgenabled <> 'A'$$,
				'the triggers are enabled (ALWAYS) again');

------------------------------------------------------------------------------
-- settle what is left
------------------------------------------------------------------------------

SELECT is((inventory.cancel(pg_temp.n('b1'))).status, 'ok', 'cancel b1');
SELECT is((inventory.cancel(pg_temp.n('x7'))).status, 'ok', 'cancel x7');
SELECT is((inventory.cancel(pg_temp.n('x10'))).status, 'ok', 'cancel x10');
SELECT is(pg_temp.counters('A'), 'on_hand=50 reserved=0 available=50 version=12 live=50', 'final counters of A');
SELECT is(pg_temp.counters('B'), 'on_hand=25 reserved=0 available=25 version=8 live=25', 'final counters of B');
SELECT is(pg_temp.counters('C'), 'on_hand=5 reserved=0 available=5 version=5 live=5', 'final counters of C');
SELECT is((SELECT count(*) FROM pg_temp.my_ledger WHERE state::text = 'PENDING'), 0::bigint,
		  'no reservation of this file is left PENDING');
SELECT is_empty('SELECT * FROM pg_temp.i1_violations', 'I1 holds at the end');
SELECT is_empty('SELECT * FROM inventory.verify()', 'I2: verify() is empty at the end');

SELECT * FROM finish();

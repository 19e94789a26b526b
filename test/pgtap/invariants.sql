-- invariants.sql:
--   I1  0 <= reserved <= on_hand for every SKU of inventory.stock, after a
--       mix of reservations, confirmations, cancellations, stocktakes,
--       restocks and expiries;
--   I2  inventory.verify(wait) returns no rows after committed work, after
--       aborted work (rollback, error, exception block, savepoint), and
--       inside a transaction with changes of its own -- and it does report
--       a write that bypassed the triggers, so its silence means something;
--   I7  a reserve in a rolled-back savepoint changes neither the tables nor
--       inventory.available().
--
-- This session is the application's (shop_app): it reserves, confirms and
-- cancels, in its transactions.  The administrator restocks, takes stock,
-- writes overdue reservations by hand, expires them, reads the ledger and
-- verifies, through its connection, in transactions of its own; what the
-- application's transaction has not committed yet is compared through
-- inventory.stock and available(), which it reads, and the ledger once it
-- commits.  Only a superuser can write past the triggers (by editing
-- pg_trigger): that check is the superuser's, over its connection.
--
-- Work is committed (that is what these promises are about), so all names
-- carry a prefix unique to this run; every reservation left is settled.

\set name invariants
\set role shop_app
\ir lib/setup.sql

-- I1, over every SKU of the database
CREATE VIEW pg_temp.i1_violations AS
	SELECT sku, on_hand, reserved FROM inventory.stock WHERE NOT (0 <= reserved AND reserved <= on_hand);

-- the application's reservations, confirmations and cancellations of this
-- run's names, for the steps that must succeed
CREATE FUNCTION pg_temp.reserve(s text, q bigint, o text) RETURNS void LANGUAGE sql
AS $$ SELECT pg_temp.expect(inventory.reserve(pg_temp.n(s), q, pg_temp.n(o), ttl => '1 hour')) $$;
CREATE FUNCTION pg_temp.confirm(o text) RETURNS void LANGUAGE sql
AS $$ SELECT pg_temp.expect(inventory.confirm(pg_temp.n(o))) $$;
CREATE FUNCTION pg_temp.cancel(o text) RETURNS void LANGUAGE sql
AS $$ SELECT pg_temp.expect(inventory.cancel(pg_temp.n(o))) $$;
-- the administrator's stocktake
CREATE FUNCTION pg_temp.adjust(s text, q bigint, o text) RETURNS inventory.result LANGUAGE sql
AS $$ SELECT pg_temp.admin_r(format('inventory.adjust(%L, %s, %L)', pg_temp.n(s), q, pg_temp.n(o))) $$;

-- I1, as the administrator's connection sees it (inside its transaction,
-- when one is open there)
CREATE FUNCTION pg_temp.admin_i1() RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.admin_says('SELECT count(*) FROM inventory.stock WHERE NOT (0 <= reserved AND reserved <= on_hand)') $$;

SELECT plan(59);

------------------------------------------------------------------------------
-- committed work: a mix of every movement
------------------------------------------------------------------------------

SELECT pg_temp.restock('A', 50, 'rA'), pg_temp.restock('B', 20, 'rB'), pg_temp.restock('C', 5, 'rC') \g /dev/null
SELECT pg_temp.reserve('A', 5, 'a1'), pg_temp.reserve('A', 3, 'a2'), pg_temp.reserve('B', 4, 'b1'),
	   pg_temp.reserve('C', 5, 'c1') \g /dev/null
SELECT is((inventory.reserve(pg_temp.n('C'), 1, pg_temp.n('c2'))).status, 'insufficient', 'C is sold out');
SELECT pg_temp.confirm('a1'), pg_temp.cancel('a2') \g /dev/null
SELECT pg_temp.expect(pg_temp.adjust('B', 25, 'ba1')) \g /dev/null
SELECT is((pg_temp.adjust('C', 4, 'ca1')).status, 'insufficient',
		  'stocktake of C below its reserved units is refused');
SELECT pg_temp.restock('C', 2, 'rC2'), pg_temp.confirm('c1') \g /dev/null

-- expire() expires every overdue PENDING reservation and says how many:
-- those other files left first, then the two of this file, written by hand
SELECT pg_temp.as_admin('SELECT inventory.expire()') \g /dev/null
SELECT pg_temp.overdue('od1', 'A', 2), pg_temp.overdue('od2', 'B', 1) \g /dev/null
SELECT is(pg_temp.admin_says('SELECT inventory.expire()'), '2', 'expire() returns the number of overdue reservations: this file''s two');
SELECT is(pg_temp.admin_says($$SELECT count(*) FROM inventory.ledger WHERE state = 'PENDING' AND expires_at <= now()$$),
		  '0', 'no overdue PENDING reservation is left');
SELECT is(pg_temp.state_of('od1') || ' ' || pg_temp.state_of('od2'), 'EXPIRED EXPIRED', 'both are EXPIRED');

SELECT is(pg_temp.counters('A'), 'on_hand=45 reserved=0 available=45 version=7 live=45', 'counters of A');
SELECT is(pg_temp.counters('B'), 'on_hand=25 reserved=4 available=21 version=5 live=21', 'counters of B');
SELECT is(pg_temp.counters('C'), 'on_hand=2 reserved=0 available=2 version=4 live=2', 'counters of C');
SELECT is_empty('SELECT * FROM pg_temp.i1_violations', 'I1 holds for every SKU after committed work');
SELECT is_empty('SELECT * FROM pg_temp.drift()', 'I2: verify(''30 s'') is empty after committed work');

-- expire(max_rows) expires the oldest first; in a transaction of the
-- administrator's that is rolled back, so nothing overdue is ever committed
SELECT pg_temp.as_admin('BEGIN') \g /dev/null
SELECT pg_temp.as_admin(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
								 VALUES (%L, 1, 'reserve', %L, 1, '-infinity'),
										(%L, 1, 'reserve', %L, 1, '-infinity'::timestamptz + interval '1 microsecond')$$,
							   pg_temp.n('old1'), pg_temp.n('A'), pg_temp.n('old2'), pg_temp.n('A'))) \g /dev/null
SELECT pg_temp.admin_says('SELECT inventory.expire(1)') AS expired_one \gset
SELECT pg_temp.state_of('old1') || ' ' || pg_temp.state_of('old2') AS old_states \gset
SELECT pg_temp.as_admin('ROLLBACK') \g /dev/null
SELECT is(:'expired_one'::bigint, 1::bigint, 'expire(1) expires one reservation');
SELECT is(:'old_states'::text, 'EXPIRED PENDING', 'expire(1) expires the oldest first');

------------------------------------------------------------------------------
-- aborted work
------------------------------------------------------------------------------

-- snapshot before the aborted work
SELECT pg_temp.snapshot() \g /dev/null

-- rolled-back transactions: the application's and the administrator's
BEGIN;
SELECT inventory.reserve(pg_temp.n('A'), 10, pg_temp.n('x1')) \g /dev/null
SELECT inventory.confirm(pg_temp.n('b1')) \g /dev/null
SELECT pg_temp.as_admin('BEGIN') \g /dev/null
SELECT pg_temp.admin_r(format('inventory.restock(%L, 5, %L)', pg_temp.n('B'), pg_temp.n('x2'))) \g /dev/null
SELECT pg_temp.admin_r(format('inventory.adjust(%L, 0, %L)', pg_temp.n('C'), pg_temp.n('x3'))) \g /dev/null
SELECT pg_temp.admin_r(format('inventory.restock(%L, 5, %L)', pg_temp.n('NEW'), pg_temp.n('x4'))) \g /dev/null
SELECT pg_temp.as_admin('ROLLBACK') \g /dev/null
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
SELECT is_empty('SELECT * FROM pg_temp.drift()', 'I2: verify(''30 s'') is empty after ROLLBACK');

-- work aborted by an error: the application's, and the administrator's
SELECT throws_ok(format($f$DO $do$ BEGIN
		PERFORM inventory.reserve(%L, 10, %L);
		PERFORM inventory.cancel(%L);
		RAISE EXCEPTION 'boom';
	END $do$$f$, pg_temp.n('A'), pg_temp.n('x5'), pg_temp.n('b1')),
	'P0001', 'boom', 'the application''s work that ends in an error');
SELECT throws_ok(pg_temp.by_admin(format($f$DO $do$ BEGIN
		PERFORM inventory.restock(%L, 5, %L);
		PERFORM inventory.adjust(%L, 0, %L);
		RAISE EXCEPTION 'boom';
	END $do$$f$, pg_temp.n('B'), pg_temp.n('x6'), pg_temp.n('C'), pg_temp.n('x6a'))),
	'P0001', 'boom', 'the administrator''s work that ends in an error');
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku', 'SELECT * FROM snap_stock ORDER BY sku',
				  'after the errors: inventory.stock unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'after the errors: inventory.ledger unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku', 'SELECT * FROM snap_live ORDER BY sku',
				  'after the errors: inventory.available() unchanged');
SELECT is_empty('SELECT * FROM pg_temp.drift()', 'I2: verify(''30 s'') is empty after the errors');

-- PL/pgSQL exception blocks: their work is undone, the rest commits
DO $$
BEGIN
	PERFORM inventory.reserve(pg_temp.n('A'), 7, pg_temp.n('x7'));
	BEGIN
		PERFORM inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('x8'));
		RAISE EXCEPTION 'undo';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
END $$;
SELECT pg_temp.as_admin(format($f$DO $do$
BEGIN
	BEGIN
		PERFORM inventory.restock(%L, 1, %L);
		RAISE EXCEPTION 'undo';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
END $do$$f$, pg_temp.n('C'), pg_temp.n('x9'))) \g /dev/null
SELECT is(pg_temp.state_of('x7') || ' ' || pg_temp.state_of('x8') || ' ' || pg_temp.state_of('x9'),
		  'PENDING no row no row', 'exception blocks: only the work outside them is kept');
SELECT is(pg_temp.counters('A'), 'on_hand=45 reserved=7 available=38 version=8 live=38',
		  'exception block: A counts only the kept reservation');
SELECT is(pg_temp.counters('C'), 'on_hand=2 reserved=0 available=2 version=4 live=2',
		  'exception block: C unchanged');
SELECT is_empty('SELECT * FROM pg_temp.drift()', 'I2: verify(''30 s'') is empty after the exception blocks');

------------------------------------------------------------------------------
-- I7: a reserve in a rolled-back savepoint
------------------------------------------------------------------------------

-- snapshot before the savepoint
SELECT pg_temp.snapshot() \g /dev/null
BEGIN;
SAVEPOINT s1;
SELECT (inventory.reserve(pg_temp.n('A'), 4, pg_temp.n('sp1'))).status AS sp_status \gset
SELECT inventory.available(pg_temp.n('A')) AS sp_live_inside \gset
SELECT reserved AS sp_reserved_inside FROM inventory.stock WHERE sku = pg_temp.n('A') \gset
ROLLBACK TO SAVEPOINT s1;
SELECT is(:'sp_status'::text, 'ok', 'inside the savepoint the reserve succeeded');
SELECT is(:'sp_live_inside'::bigint, 34::bigint, 'inside the savepoint available() counted its hold');
SELECT is(:'sp_reserved_inside'::bigint, 11::bigint, 'inside the savepoint its row counted in inventory.stock');
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku', 'SELECT * FROM snap_stock ORDER BY sku',
				  'after ROLLBACK TO: inventory.stock unchanged, as the transaction sees it');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku', 'SELECT * FROM snap_live ORDER BY sku',
				  'after ROLLBACK TO: inventory.available() unchanged, in the transaction');
SELECT is_empty('SELECT * FROM pg_temp.drift()',
				'I2: verify(''30 s'') is empty after ROLLBACK TO, the transaction still open: it holds A no more');
-- nested: a released savepoint inside one that is rolled back
SAVEPOINT s2;
SELECT inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('sp2')) \g /dev/null
SAVEPOINT s3;
SELECT inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('sp3')) \g /dev/null
RELEASE SAVEPOINT s3;
ROLLBACK TO SAVEPOINT s2;
SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku', 'SELECT * FROM snap_stock ORDER BY sku',
				  'nested savepoints rolled back: inventory.stock unchanged, as the transaction sees it');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku', 'SELECT * FROM snap_live ORDER BY sku',
				  'nested savepoints rolled back: inventory.available() unchanged');
-- the same reserve, made again after the rollback, works
SELECT is((inventory.reserve(pg_temp.n('A'), 4, pg_temp.n('sp1'))).status, 'ok',
		  'the rolled-back key can be used again');
SELECT is(inventory.available(pg_temp.n('A')), 34::bigint, 'and holds its units once');
COMMIT;
-- the administrator's nested savepoints: a restock in a released savepoint
-- inside one that is rolled back
SELECT pg_temp.as_admin(sql) FROM unnest(ARRAY['BEGIN', 'SAVEPOINT s2', 'SAVEPOINT s3',
		format('SELECT inventory.restock(%L, 2, %L)', pg_temp.n('B'), pg_temp.n('sp4')),
		'RELEASE SAVEPOINT s3', 'ROLLBACK TO SAVEPOINT s2', 'COMMIT']) sql \g /dev/null
SELECT results_eq($$SELECT * FROM pg_temp.my_ledger WHERE order_id <> pg_temp.n('sp1') ORDER BY order_id, batch_id$$,
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'after the commits: the ledger is what it was, but for sp1: no row of the savepoints rolled back');
SELECT is((SELECT format('%s %s %s', kind, qty, state) FROM pg_temp.my_ledger WHERE order_id = pg_temp.n('sp1')),
		  'reserve 4 PENDING', 'after commit: sp1 once, the reservation made outside the savepoints');
SELECT is(pg_temp.counters('A'), 'on_hand=45 reserved=11 available=34 version=9 live=34',
		  'after commit: only the reservation made outside the savepoints counts');
SELECT is(pg_temp.counters('B'), 'on_hand=25 reserved=4 available=21 version=5 live=21',
		  'after commit: B unchanged');
SELECT is_empty('SELECT * FROM pg_temp.drift()', 'I2: verify(''30 s'') is empty after the savepoint work committed');

------------------------------------------------------------------------------
-- I2 inside a transaction with changes of its own: the administrator's,
-- verifying before it commits
------------------------------------------------------------------------------

SELECT pg_temp.reserve('B', 2, 'x10'), pg_temp.confirm('sp1') \g /dev/null
SELECT pg_temp.as_admin('BEGIN') \g /dev/null
SELECT is((pg_temp.admin_r(format('inventory.restock(%L, 3, %L)', pg_temp.n('C'), pg_temp.n('x11')))).status, 'ok',
		  'in a transaction of the administrator''s: restock C 3');
SELECT is((pg_temp.adjust('A', 50, 'x12')).status, 'ok', 'in that transaction: stocktake A');
SELECT is_empty('SELECT * FROM pg_temp.drift()', 'I2: verify(''30 s'') is empty inside a transaction with its own changes');
SELECT is(pg_temp.admin_i1(), '0', 'I1 holds inside the transaction');
SELECT pg_temp.as_admin('COMMIT') \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=50 reserved=7 available=43 version=11 live=43', 'after commit: A');
SELECT is(pg_temp.counters('B'), 'on_hand=25 reserved=6 available=19 version=6 live=19', 'after commit: B');
SELECT is(pg_temp.counters('C'), 'on_hand=5 reserved=0 available=5 version=5 live=5', 'after commit: C');
SELECT is_empty('SELECT * FROM pg_temp.drift()', 'I2: verify(''30 s'') is empty after that commit');

------------------------------------------------------------------------------
-- verify() is not silent by construction: a write that bypasses the
-- triggers shows up.  ALTER TABLE ... DISABLE TRIGGER leaves them on; a
-- superuser who edits pg_trigger can turn them off (ANALYZE makes the
-- session read the table's triggers again).  The superuser's, by its
-- connection.
------------------------------------------------------------------------------

SELECT pg_temp.as_super(sql) FROM unnest(ARRAY['BEGIN', 'SET LOCAL lock_timeout = ''30s''', 'SAVEPOINT bypass',
		$$UPDATE pg_catalog.pg_trigger SET tgenabled = 'D'
		   WHERE tgrelid = 'inventory.ledger'::regclass AND NOT tgisinternal$$,
		'ANALYZE inventory.ledger',
		format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
				 VALUES (%L, 1, 'restock', %L, 7)$$, pg_temp.n('bypass'), pg_temp.n('C'))]) sql \g /dev/null
SELECT pg_temp.as_super(format($$SELECT string_agg(what || ':' || cached || '->' || truth, ',' ORDER BY what)
								  FROM inventory.verify('30 s') WHERE sku = %L$$, pg_temp.n('C'))) AS bypass_drift \gset
SELECT pg_temp.as_super(sql) FROM unnest(ARRAY['ROLLBACK TO SAVEPOINT bypass', 'COMMIT']) sql \g /dev/null
SELECT is(:'bypass_drift'::text, 'on_hand:5->12,version:5->6',
		  'verify() reports the on_hand and version of a write made with the triggers disabled');
SELECT is_empty($$SELECT tgname FROM pg_trigger
				   WHERE tgrelid IN ('inventory.ledger'::regclass, 'inventory.sku'::regclass)
				     AND NOT tgisinternal AND tgenabled <> 'A'$$,
				'the triggers are enabled (ALWAYS) again');

------------------------------------------------------------------------------
-- settle what is left
------------------------------------------------------------------------------

SELECT pg_temp.cancel('b1'), pg_temp.cancel('x7'), pg_temp.cancel('x10') \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=50 reserved=0 available=50 version=12 live=50', 'final counters of A');
SELECT is(pg_temp.counters('B'), 'on_hand=25 reserved=0 available=25 version=8 live=25', 'final counters of B');
SELECT is(pg_temp.counters('C'), 'on_hand=5 reserved=0 available=5 version=5 live=5', 'final counters of C');
SELECT is((SELECT count(*) FROM pg_temp.my_ledger WHERE state::text = 'PENDING'), 0::bigint,
		  'no reservation of this file is left PENDING');
SELECT is_empty('SELECT * FROM pg_temp.i1_violations', 'I1 holds at the end');
SELECT is_empty('SELECT * FROM pg_temp.drift()', 'I2: verify(''30 s'') is empty at the end');

SELECT * FROM finish();

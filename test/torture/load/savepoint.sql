-- A transaction that changes its mind.  Line 1 is kept; line 2 is reserved
-- (and confirmed) in a savepoint that is rolled back; line 3 is reserved in
-- an exception block that fails.  Lines 2 and 3 must leave nothing: not
-- found in the same transaction, no row after it (the checkpoints look),
-- no hold (verify() and sku_stats.holds at the checkpoints).
\set order random(1, 9000000000000000000)
\set seed random(1, 1000000000)
BEGIN;
SELECT torture.judge('reserve', r, m.sku, m.qty, allowed => '{ok,insufficient}') AS line1
  FROM torture.reservation(:seed + 1) m,
	   inventory.reserve(m.sku, m.qty, 'sp-' || :order, 1, '10 min') r \gset
SAVEPOINT s;
SELECT torture.judge('reserve', r, m.sku, m.qty, allowed => '{ok,insufficient}') AS line2
  FROM torture.reservation(:seed + 2) m,
	   inventory.reserve(m.sku, m.qty, 'sp-' || :order, 2, '10 min') r \gset
SELECT torture.judge('confirm', r, m.sku, m.qty,
					 allowed => CASE WHEN ':line2' = 'ok' THEN '{ok}' ELSE '{not_found}' END::text[])
  FROM torture.reservation(:seed + 2) m, inventory.confirm('sp-' || :order, 2) r;
ROLLBACK TO SAVEPOINT s;
SELECT torture.judge('confirm', r, NULL, NULL, allowed => '{not_found}')
  FROM inventory.confirm('sp-' || :order, 2) r;
DO $$
BEGIN
	PERFORM inventory.reserve(m.sku, m.qty, 'sp-' || :order, 3, '10 min')
	   FROM torture.reservation(:seed + 3) m;
	RAISE EXCEPTION 'changed my mind';
EXCEPTION WHEN raise_exception THEN
	NULL;
END
$$;
SELECT torture.judge('cancel', r, NULL, NULL, allowed => '{not_found}')
  FROM inventory.cancel('sp-' || :order, 3) r;
SELECT torture.judge('confirm', r, m.sku, m.qty,
					 allowed => CASE WHEN ':line1' = 'ok' THEN '{ok}' ELSE '{not_found}' END::text[])
  FROM torture.reservation(:seed + 1) m, inventory.confirm('sp-' || :order, 1) r;
COMMIT;

-- fold_plan.sql: a fold finds its movements through the SKU index.
--   The worker folds in batches (inventory.fold_batch) and runs the same
--   prepared statement again and again, so it soon runs its generic plan.
--   For a LIMIT query that plan may read the ledger from its first page,
--   expecting matching rows everywhere; but settled movements waiting for a
--   fold are the newest rows, at the ledger's end, behind every reservation
--   still pending.  A batch must come from ledger_sku_idx, never from a scan
--   of the whole ledger.
--
-- The counts are those of this transaction (pg_stat_xact_user_tables), and
-- all but A's restock is rolled back.

\set name fold_plan
\ir lib/setup.sql

SELECT plan(5);

SELECT is((inventory.restock(pg_temp.n('A'), 20000, pg_temp.n('rA'))).status, 'ok', 'restock A 20000');

BEGIN;

-- the ledger's front: 20,000 reservations of A, pending for a day
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
SELECT pg_temp.n('a' || g), 1, 'reserve', pg_temp.n('A'), 1, now() + interval '1 day'
  FROM generate_series(1, 20000) g;
-- its end: 200 restocks of B, settled and not folded yet
SELECT is((SELECT count(*) FILTER (WHERE (inventory.restock(pg_temp.n('B'), 1, pg_temp.n('rB' || g))).ok)
			 FROM generate_series(1, 200) g),
		  200::bigint, '200 restocks of B');
ANALYZE inventory.ledger;

-- scans of the ledger since here
CREATE FUNCTION pg_temp.ledger_scans() RETURNS bigint[] LANGUAGE sql
AS $$ SELECT ARRAY[coalesce(sum(seq_scan), 0), coalesce(sum(idx_scan), 0)]::bigint[]
		FROM pg_stat_xact_user_tables WHERE relid = 'inventory.ledger'::regclass $$;
SELECT set_config('inventory_test.base', pg_temp.ledger_scans()::text, true) \g /dev/null

-- what the worker runs after a few batches
SET LOCAL plan_cache_mode = force_generic_plan;
SELECT ok(inventory.fold() >= 200, 'fold() folds them (and what other files left)');
SELECT is((SELECT format('seq_scan=%s', c[1] - b[1])
			 FROM pg_temp.ledger_scans() c, CAST(current_setting('inventory_test.base') AS bigint[]) b),
		  'seq_scan=0', 'the fold never scanned the whole ledger');
SELECT is((SELECT count(*) FROM inventory.ledger WHERE sku = pg_temp.n('B') AND NOT folded),
		  0::bigint, 'every movement of B is folded');

SELECT * FROM finish();

ROLLBACK;

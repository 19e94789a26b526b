-- Work thrown away on purpose, by the application (shop_app): a
-- reservation and the confirm of a live reservation in a transaction that
-- rolls back (the checkpoints find no 'abort-' row; the administrator's
-- restock thrown away is abort_admin.sql); then a live key asked for one
-- unit more -- a reuse of the key, ERROR 23505 -- caught in an exception
-- block (and when the key was free, the reservation made under it is
-- thrown away too).
\set order random(1, 9000000000000000000)
\set seed random(1, 1000000000)
\set back random(0, 999)
BEGIN;
SELECT torture.judge('reserve', r, m.sku, m.qty, allowed => '{ok,insufficient}')
  FROM torture.reservation(:seed) m,
	   inventory.reserve(m.sku, m.qty, 'abort-' || :order, 1, '10 min') r;
SELECT torture.judge('confirm', r, m.sku, m.qty)
  FROM torture.key(:back) n, torture.reservation(n) m, inventory.confirm('k' || n) r;
ROLLBACK;
DO $$
BEGIN
	PERFORM inventory.reserve(m.sku, m.qty + 1, 'k' || n, 1, '10 s')
	   FROM torture.key(:back) n, torture.reservation(n) m;
	RAISE unique_violation USING MESSAGE = 'the key was free: throw the reservation away';
EXCEPTION WHEN unique_violation THEN
	NULL;
END
$$;

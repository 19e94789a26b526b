-- Work thrown away on purpose: a reservation, a restock and the confirm of a
-- live reservation in a transaction that rolls back (the checkpoints find
-- no 'abort-' row); then a live key asked for one unit more -- a reuse of
-- the key, ERROR 23505 -- caught in an exception block (and when the key was
-- free, the reservation made under it is thrown away too).
\set order random(1, 9000000000000000000)
\set seed random(1, 1000000000)
\set back random(0, 999)
BEGIN;
SELECT torture.judge('reserve', r, m.sku, m.qty, allowed => '{ok,insufficient}')
  FROM torture.reservation(:seed) m,
	   inventory.reserve(m.sku, m.qty, 'abort-' || :order, 1, '10 min') r;
SELECT torture.judge('restock', r, m.sku, 5, allowed => '{ok}')
  FROM torture.reservation(:seed) m, inventory.restock(m.sku, 5, 'abort-' || :order, 2) r;
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

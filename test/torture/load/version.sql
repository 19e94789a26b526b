-- A version-checked reservation of a live key: the SKU's version read from
-- inventory.stock just before.  A hot SKU changes all the time, so most are
-- refused with version_conflict (a replay is still a duplicate).
\set back random(0, 999)
\set ttl random(100, 4000)
SELECT n, m.sku FROM torture.key(:back) n, torture.reservation(n) m \gset
SELECT version AS v FROM inventory.stock WHERE sku = ':sku' \gset
SELECT torture.judge('reserve', r, m.sku, m.qty, ttl => :ttl * interval '1 ms',
					 wrote => pg_current_xact_id_if_assigned() IS NOT NULL, versioned => true)
  FROM torture.reservation(:n) m,
	   inventory.reserve(m.sku, m.qty, 'k' || :n, 1, :ttl * interval '1 ms', :v) r;

-- A stocktake, by the administrator (shop_admin), under a live key, a
-- third of them version-checked with the version read from
-- inventory.stock just before.  A count below what is reserved is
-- refused; a replay is a duplicate and writes nothing.
\set back random(0, 999)
\if random(1, 3) = 1
SELECT n, m.sku FROM torture.key(:back) n, torture.stocktake(n) m \gset
SELECT version AS v FROM inventory.stock WHERE sku = ':sku' \gset
SELECT torture.judge('adjust', r, m.sku, m.counted,
					 wrote => pg_current_xact_id_if_assigned() IS NOT NULL, versioned => true)
  FROM torture.stocktake(:n) m, inventory.adjust(m.sku, m.counted, 'a' || :n, 1, :v) r;
\else
SELECT torture.judge('adjust', r, m.sku, m.counted,
					 wrote => pg_current_xact_id_if_assigned() IS NOT NULL)
  FROM torture.key(:back) n, torture.stocktake(n) m,
	   inventory.adjust(m.sku, m.counted, 'a' || n) r;
\endif

-- A delivery, by the administrator (shop_admin), under a live key, or now
-- and then an old one: a replay is a duplicate and writes nothing.  A few
-- create SKUs NEW-0 .. NEW-9.
\set back random(0, 999)
\if random(1, 10) = 1
\set back random(0, :oldest)
\endif
SELECT torture.judge('restock', r, m.sku, m.qty,
					 wrote => pg_current_xact_id_if_assigned() IS NOT NULL)
  FROM torture.key(:back) n, torture.restock(n) m,
	   inventory.restock(m.sku, m.qty, 'r' || n) r;

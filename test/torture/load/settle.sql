-- Confirm (50%), cancel (25%) or extend (25%) a live key, or now and then an
-- old one: the reservation may not exist, be pending, overdue (the confirm
-- races the worker and inventory.expire()), or settled already.
\set back random(0, 999)
\if random(1, 10) = 1
\set back random(0, :oldest)
\endif
\set op random(1, 4)
\set ttl random(20, 2000)
\if :op <= 2
SELECT torture.judge('confirm', r, m.sku, m.qty)
  FROM torture.key(:back) n, torture.reservation(n) m, inventory.confirm('k' || n) r;
\elif :op = 3
SELECT torture.judge('cancel', r, m.sku, m.qty)
  FROM torture.key(:back) n, torture.reservation(n) m, inventory.cancel('k' || n) r;
\else
SELECT torture.judge('extend', r, m.sku, m.qty, ttl => :ttl * interval '1 ms')
  FROM torture.key(:back) n, torture.reservation(n) m,
	   inventory.extend('k' || n, 1, :ttl * interval '1 ms') r;
\endif

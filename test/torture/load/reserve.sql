-- A reservation under a live key (born in the last 10 s), or now and then an
-- old one, held for 20 ms to 4 s: new the first time, a replay after that.
-- Alone in its transaction, the call must take a transaction id exactly when
-- it reserves: a refusal or a replay writes nothing.
\set back random(0, 999)
\if random(1, 10) = 1
\set back random(0, :oldest)
\endif
\set ttl random(20, 4000)
SELECT torture.judge('reserve', r, m.sku, m.qty, ttl => :ttl * interval '1 ms',
					 wrote => pg_current_xact_id_if_assigned() IS NOT NULL)
  FROM torture.key(:back) n, torture.reservation(n) m,
	   inventory.reserve(m.sku, m.qty, 'k' || n, 1, :ttl * interval '1 ms') r;

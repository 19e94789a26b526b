-- reserve_now(), alone in its statement and outside any transaction block,
-- where it runs.  Two in three calls take a live key (born in the
-- last 10 s, now and then an old one) that reserve.sql, version.sql and
-- batches reserve, settle.sql and admin.sql settle, abort.sql holds in
-- transactions rolled back: new, a replay, or in flight elsewhere.  The
-- others take a key of their own, held for 50 ms to 3 s, then paid (60%),
-- cancelled (20%) or left to expire, each in a statement of its own.  Every
-- answer is judged and logged (torture.judge_now()).  The application's
-- (shop_app); whether the key had a row when the statement began is read
-- by torture.has_row(), with the statement's snapshot.
\set back random(0, 999)
\if random(1, 10) = 1
\set back random(0, :oldest)
\endif
\set order random(1, 9000000000000000000)
\set seed random(1, 1000000000)
\set what random(1, 15)
\if :what <= 10
\set ttl random(20, 4000)
SELECT torture.judge_now(inventory.reserve_now(m.sku, m.qty, 'k' || n, 1, :ttl * interval '1 ms'),
						 'k' || n, m.sku, m.qty, :ttl * interval '1 ms', NULL, true,
						 torture.has_row('k' || n, 1),
						 '{ok,duplicate,insufficient}')
  FROM torture.key(:back) n, torture.reservation(n) m;
\else
\set ttl random(50, 3000)
SELECT torture.judge_now(inventory.reserve_now(m.sku, m.qty, 'now-' || :order, 1, :ttl * interval '1 ms'),
						 'now-' || :order, m.sku, m.qty, :ttl * interval '1 ms', NULL, false, false,
						 '{ok,insufficient}') AS got
  FROM torture.reservation(:seed) m \gset
\if :what <= 13
SELECT torture.judge('confirm', r, m.sku, m.qty,
					 allowed => CASE WHEN ':got' = 'ok' THEN '{ok,expired}' ELSE '{not_found}' END::text[])
  FROM torture.reservation(:seed) m, inventory.confirm('now-' || :order) r;
\elif :what = 14
SELECT torture.judge('cancel', r, m.sku, m.qty,
					 allowed => CASE WHEN ':got' = 'ok' THEN '{ok,expired}' ELSE '{not_found}' END::text[])
  FROM torture.reservation(:seed) m, inventory.cancel('now-' || :order) r;
\endif
\endif

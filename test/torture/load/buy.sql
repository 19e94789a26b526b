-- A shopper: a cart of 1-3 lines under a fresh order id, held for 50 ms to
-- 3 s, then paid (60%), abandoned (20%) or left to expire (20%), in one
-- transaction.  Nobody else knows the order id: a line held is confirmed
-- (or found expired, when the machine is slow), a line refused is not found.
\set order random(1, 9000000000000000000)
\set seed random(1, 1000000000)
\set lines random(1, 3)
\set pay random(1, 10)
\set ttl random(50, 3000)
BEGIN;
SELECT torture.judge('reserve', r, m.sku, m.qty, ttl => :ttl * interval '1 ms',
					 allowed => '{ok,insufficient}')
  FROM generate_series(1, :lines) b, torture.reservation(:seed + b) m,
	   inventory.reserve(m.sku, m.qty, 'buy-' || :order, b, :ttl * interval '1 ms') r;
\if :pay <= 6
SELECT torture.judge('confirm', r, m.sku, m.qty, allowed => '{ok,expired,not_found}')
  FROM generate_series(1, :lines) b, torture.reservation(:seed + b) m,
	   inventory.confirm('buy-' || :order, b) r;
\elif :pay <= 8
SELECT torture.judge('cancel', r, m.sku, m.qty, allowed => '{ok,not_found}')
  FROM generate_series(1, :lines) b, torture.reservation(:seed + b) m,
	   inventory.cancel('buy-' || :order, b) r;
\endif
COMMIT;

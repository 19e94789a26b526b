-- case 13 and 13s: reserve 1 unit of :sku under a key of its own through the
-- express lane, one reservation per call
\set n random(1, 9000000000000000000)
SELECT inventory.reserve_now(:sku, 1, :prefix || :n);

-- case 13r: case 13 through reserve_now_result, which answers the whole
-- result row (a checkout's expires_at), one reservation per call
\set n random(1, 9000000000000000000)
SELECT * FROM inventory.reserve_now_result(:sku, 1, :prefix || :n);

-- case 4b: reserve on a SKU with a per-buyer limit, for a buyer drawn from
-- :buyers, so that (with a large range) almost every call is a buyer's first
\set n random(1, 9000000000000000000)
\set b random(1, :buyers)
SELECT (inventory.reserve(:sku, 1, :prefix || :n, buyer_id => 'b-' || :b)).status;

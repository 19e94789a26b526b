\set n random(1, 9000000000000000000)
SELECT * FROM inventory.reserve(:sku, 1, :prefix || :n);

-- A monitor (shop_monitor) reading.  At every instant, live or in the
-- tables, nothing is oversold.
\set hot random(0, 3)
SELECT torture.must(count(*) = 0, 'oversold in sku_stats: ' || string_agg(s::text, ', '))
  FROM inventory.sku_stats s
 WHERE NOT (s.available >= 0 AND s.holds >= 0 AND 0 <= s.reserved AND s.reserved <= s.on_hand);
SELECT torture.must(count(*) = 0, 'oversold in inventory.stock: ' || string_agg(s::text, ', '))
  FROM inventory.stock s
 WHERE s.sku = 'HOT-' || :hot AND NOT (0 <= s.reserved AND s.reserved <= s.on_hand);

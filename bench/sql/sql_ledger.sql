\set n random(1, 9000000000000000000)
INSERT INTO ledger (order_id, batch_id, sku, qty) VALUES ('o2d-' || :n, 1, :sku, 1);

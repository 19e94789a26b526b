\set n random(1, 9000000000000000000)
INSERT INTO ledger3 (order_id, batch_id, kind, sku, qty, state, expires_at)
VALUES ('o2e-' || :n, 1, 'reserve', :sku, 1, 'PENDING', now() + interval '1 day');

\set n random(1, 9000000000000000000)
INSERT INTO ledger3c (order_id, batch_id, kind, sku, qty, state, expires_at)
VALUES ('o2f-' || :n, 1, 'reserve', :sku, 1, 'PENDING', now() + interval '1 day')
ON CONFLICT (order_id, batch_id) DO NOTHING;

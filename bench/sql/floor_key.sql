-- the index probe by which a refused reserve recognises a replayed key
\set n random(1, 9000000000000000000)
SELECT 1 FROM inventory.ledger WHERE order_id = 'o1c-' || :n AND batch_id = 1;

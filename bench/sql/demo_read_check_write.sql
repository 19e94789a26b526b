-- one buyer in a flash sale of :sku, written as a naive application does:
-- read the count, check it, write back the count it computed, take the
-- order; then pay (:pay in 10 buyers do) or change their mind (the unit goes
-- back).  Oversells: buyers who read the same count all sell, and each write
-- overwrites the one before (a lost update), which the transaction does not
-- prevent under READ COMMITTED.  Used by scripts/demo.sh (pgbench -M
-- prepared), on the tables stock(sku, qty) and orders(order_id, sku, status).
\set buyer random(1, 9000000000000000000)
\set pays random(1, 10)
BEGIN;
SELECT qty FROM stock WHERE sku = :sku \gset
\if :qty >= 1
  \set left :qty - 1
  UPDATE stock SET qty = :left WHERE sku = :sku;
  INSERT INTO orders (order_id, sku) VALUES ('buyer-' || :buyer, :sku);
  \if :pays <= :pay
    UPDATE orders SET status = 'paid' WHERE order_id = 'buyer-' || :buyer;
  \else
    UPDATE orders SET status = 'cancelled' WHERE order_id = 'buyer-' || :buyer;
    UPDATE stock SET qty = qty + 1 WHERE sku = :sku;
  \endif
\endif
COMMIT;

-- one buyer in a flash sale of :sku, with the conditional UPDATE of one hot
-- row: takes a unit only if one is left, in the same statement, and takes
-- the order when it got one; then pays (:pay in 10 buyers do) or changes
-- their mind (the unit goes back).  Never oversells, but every buyer waits
-- for the row lock of the one before until that one commits.  Used by
-- scripts/demo.sh (pgbench -M prepared), on the tables stock(sku, qty) and
-- orders(order_id, sku, status).
\set buyer random(1, 9000000000000000000)
\set pays random(1, 10)
-- \aset leaves got alone when no row was updated
\set got 0
BEGIN;
UPDATE stock SET qty = qty - 1 WHERE sku = :sku AND qty >= 1 RETURNING 1 AS got \aset
\if :got
  INSERT INTO orders (order_id, sku) VALUES ('buyer-' || :buyer, :sku);
  \if :pays <= :pay
    UPDATE orders SET status = 'paid' WHERE order_id = 'buyer-' || :buyer;
  \else
    UPDATE orders SET status = 'cancelled' WHERE order_id = 'buyer-' || :buyer;
    UPDATE stock SET qty = qty + 1 WHERE sku = :sku;
  \endif
\endif
COMMIT;

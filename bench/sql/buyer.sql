-- one buyer in a flash sale of :sku: reserves a unit and, when it got one,
-- pays (:pay in 10 buyers do) or changes their mind; used by
-- scripts/demo.sh and test/t/002_concurrency.pl (pgbench -M prepared)
\set buyer random(1, 9000000000000000000)
\set pays random(1, 10)
BEGIN;
SELECT ok AS got FROM inventory.reserve(:sku, 1, 'buyer-' || :buyer) \gset
\if :got
  \if :pays <= :pay
    SELECT status FROM inventory.confirm('buyer-' || :buyer);
  \else
    SELECT status FROM inventory.cancel('buyer-' || :buyer);
  \endif
\endif
COMMIT;

-- one buyer in a flash sale of :sku: reserves a unit and, when it got one,
-- pays (:pay in 10 buyers do) or changes their mind; used by
-- scripts/demo.sh and test/t/002_concurrency.pl (pgbench -M prepared)
\set buyer random(1, 9000000000000000000)
\set pays random(1, 10)
BEGIN;
SELECT (inventory.reserve(:sku, 1, 'buyer-' || :buyer)).ok AS got \gset
\if :got
  \if :pays <= :pay
    SELECT (inventory.confirm('buyer-' || :buyer)).status;
  \else
    SELECT (inventory.cancel('buyer-' || :buyer)).status;
  \endif
\endif
COMMIT;

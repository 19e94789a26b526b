-- one buyer in a flash sale of :sku through the router: bench/sql/buyer.sql
-- with the SKU passed to confirm and cancel, so that each reaches the one
-- node of the buyer's bucket; used by scripts/demo.sh --nodes (pgbench -M
-- prepared)
\set buyer random(1, 9000000000000000000)
\set pays random(1, 10)
BEGIN;
SELECT (inventory.reserve(:sku, 1, 'buyer-' || :buyer)).ok AS got \gset
\if :got
  \if :pays <= :pay
    SELECT (inventory.confirm('buyer-' || :buyer, 1, :sku)).status;
  \else
    SELECT (inventory.cancel('buyer-' || :buyer, 1, :sku)).status;
  \endif
\endif
COMMIT;

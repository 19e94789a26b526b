-- one buyer in a flash sale of :sku through the express lane: reserves a
-- unit with reserve_now (its own commit, shared with the other buyers of
-- the moment) and, when it got one, pays (:pay in 10 buyers do) or changes
-- their mind, in a transaction of its own as a payment step would; used by
-- scripts/demo.sh (pgbench -M prepared)
\set buyer random(1, 9000000000000000000)
\set pays random(1, 10)
SELECT inventory.reserve_now(:sku, 1, 'buyer-' || :buyer) = 'ok' AS got \gset
\if :got
  \if :pays <= :pay
    SELECT (inventory.confirm('buyer-' || :buyer)).status;
  \else
    SELECT (inventory.cancel('buyer-' || :buyer)).status;
  \endif
\endif

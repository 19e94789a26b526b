-- one buyer: 70% pay, 20% change their mind, 10% walk away (1 s ttl)
\set n random(1, 9000000000000000000)
\set r random(1, 100)
\if :r <= 90
SELECT (inventory.reserve(:sku, 1, 'o7-' || :n)).status;
\if :r <= 70
SELECT (inventory.confirm('o7-' || :n)).status;
\else
SELECT (inventory.cancel('o7-' || :n)).status;
\endif
\else
SELECT (inventory.reserve(:sku, 1, 'o7-' || :n, ttl => interval '1 second')).status;
\endif

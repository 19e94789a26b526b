-- cases 4, 5 and 8's load: reserve 1 unit of :sku under a key of its own, in
-- the cheapest call form ("The cheapest call form" in docs/applications.md: in the
-- select list, only the status asked for)
\set n random(1, 9000000000000000000)
SELECT (inventory.reserve(:sku, 1, :prefix || :n)).status;

-- case 13u: reserve_now 1 unit of a SKU drawn from :nskus, under a key of its own
\set n random(1, 9000000000000000000)
\set k random(1, :nskus)
SELECT inventory.reserve_now('U-' || :k, 1, 'o13u-' || :n);

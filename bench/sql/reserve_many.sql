\set n random(1, 9000000000000000000)
\set k random(1, :nskus)
SELECT * FROM inventory.reserve('U-' || :k, 1, 'o6-' || :n);

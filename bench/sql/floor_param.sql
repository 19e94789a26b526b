-- a round trip that carries a random order key, as every call naming one
-- does: the floor of a refusal, which must at least receive its key
\set n random(1, 9000000000000000000)
SELECT :prefix || :n;

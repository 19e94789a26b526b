-- the executor's cost of a function in FROM that returns a row, with next to
-- no work inside: what any SELECT * FROM inventory.reserve(...) pays at least
SELECT * FROM inventory.cache_info();

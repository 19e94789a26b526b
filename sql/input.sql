-- bad input: the messages a person reads (what each argument's check
-- raises, its SQLSTATE, and that nothing changes: test/pgtap/input.sql)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

\c - shop_app

-- the messages a person reads
SELECT * FROM inventory.reserve('I-ONE', 0, 'i-1');
SELECT * FROM inventory.reserve(repeat('x', 64), 1, 'i-1');
SELECT * FROM inventory.reserve('I-ONE', 1, 'i-1', ttl => '0 seconds');

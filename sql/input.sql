-- bad input: every argument is checked, with a specific SQLSTATE
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql
\set VERBOSITY sqlstate

\c - shop_admin
SELECT ok FROM inventory.restock('I-ONE', 5, 'i-delivery');

-- NULLs
\c - shop_app
SELECT * FROM inventory.reserve(NULL, 1, 'i-1');
SELECT * FROM inventory.reserve('I-ONE', NULL, 'i-1');
SELECT * FROM inventory.reserve('I-ONE', 1, NULL);
SELECT * FROM inventory.reserve('I-ONE', 1, 'i-1', NULL);
SELECT * FROM inventory.confirm(NULL);
SELECT * FROM inventory.cancel('i-1', NULL);
SELECT * FROM inventory.extend('i-1', 1, NULL);
\c - shop_admin
SELECT * FROM inventory.restock('I-ONE', NULL, 'i-2');
SELECT * FROM inventory.adjust('I-ONE', NULL, 'i-3');
\c - shop_app
SELECT inventory.available(NULL);

-- quantities
SELECT * FROM inventory.reserve('I-ONE', 0, 'i-1');
SELECT * FROM inventory.reserve('I-ONE', -1, 'i-1');
\c - shop_admin
SELECT * FROM inventory.restock('I-ONE', 0, 'i-2');
SELECT * FROM inventory.adjust('I-ONE', -1, 'i-3');
SELECT * FROM inventory.expire(-1);

-- empty and over-long keys
\c - shop_app
SELECT * FROM inventory.reserve('', 1, 'i-1');
SELECT * FROM inventory.reserve(repeat('x', 64), 1, 'i-1');
SELECT * FROM inventory.reserve('I-ONE', 1, '');
SELECT * FROM inventory.reserve('I-ONE', 1, repeat('x', 256));
SELECT inventory.available('');
SELECT ok, status FROM inventory.reserve(repeat('x', 63), 1, repeat('y', 255));

-- ttl
SELECT * FROM inventory.reserve('I-ONE', 1, 'i-1', ttl => '0 seconds');
SELECT * FROM inventory.reserve('I-ONE', 1, 'i-1', ttl => '-5 minutes');
SELECT * FROM inventory.reserve('I-ONE', 1, 'i-1', ttl => '1 day -25 hours');
SELECT * FROM inventory.extend('i-1', 1, '-1 second');

-- a read-only transaction can read but not reserve
BEGIN READ ONLY;
SELECT inventory.available('I-ONE');
SELECT * FROM inventory.reserve('I-ONE', 1, 'i-ro');
ROLLBACK;
BEGIN READ ONLY;
SELECT * FROM inventory.confirm('i-ro');
ROLLBACK;

-- the messages a person reads
\set VERBOSITY default
SELECT * FROM inventory.reserve('I-ONE', 0, 'i-1');
SELECT * FROM inventory.reserve(repeat('x', 64), 1, 'i-1');
SELECT * FROM inventory.reserve('I-ONE', 1, 'i-1', ttl => '0 seconds');

-- nothing changed
SELECT * FROM inventory.stock WHERE sku = 'I-ONE';
\c - shop_admin
SELECT count(*) FROM inventory.ledger WHERE order_id LIKE 'i-%' AND order_id <> 'i-delivery';
\c - shop_monitor
SELECT * FROM inventory.verify();

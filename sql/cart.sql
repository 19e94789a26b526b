-- carts: every line reserved or none, in one call; orders settled whole.
-- What psql shows of them: a cart's rows, one per line with the available
-- it leaves; the errors of an order_id reused and of misuse, with their
-- details and hints; a cart whose lines the caller numbers (batch_ids).
-- The statuses of refused carts, replays and settled orders, and the rows
-- a refusal leaves, are test/pgtap/carts.sql's.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql

\c - shop_admin
SELECT ok, status FROM inventory.restock('CA-TEE', 5, 'c-in-1');
SELECT ok, status FROM inventory.restock('CA-MUG', 3, 'c-in-2');
SELECT ok, status FROM inventory.restock('CA-CAP', 2, 'c-in-3');

-- one row per line, in the order of the arrays; line i is (order_id, i)
\c - shop_app
SELECT ok, status, sku, qty, state, available
  FROM inventory.reserve_cart('c-cart-1', '{CA-TEE,CA-MUG,CA-TEE}', '{1,2,1}');

-- a different cart under the same order_id is a reused key
SELECT * FROM inventory.reserve_cart('c-cart-1', '{CA-TEE,CA-MUG}', '{1,2}');
SELECT * FROM inventory.reserve_cart('c-cart-1', '{CA-TEE,CA-MUG,CA-TEE,CA-TEE}', '{1,2,1,1}');
SELECT * FROM inventory.reserve_cart('c-cart-1', '{CA-TEE,CA-MUG,CA-TEE}', '{1,1,1}');
SELECT * FROM inventory.reserve_cart('c-cart-1', '{CA-TEE,CA-MUG,CA-TEE}', '{1,2,1}', buyer_id => 'ann');

-- a limit of 1 per buyer: ann's cart takes her unit of CA-CAP
\c - shop_admin
SELECT inventory.set_rules('CA-CAP', max_per_buyer => 1);
\c - shop_app
SELECT ok, status, sku FROM inventory.reserve_cart('c-cart-4', '{CA-CAP,CA-MUG}', '{1,1}', buyer_id => 'ann');

-- confirm_order and cancel_order settle every line, as confirm and cancel
SELECT ok, status, sku, state FROM inventory.confirm_order('c-cart-1');
SELECT ok, status, sku, state FROM inventory.cancel_order('c-cart-4');
-- ann's units of CA-CAP were cancelled: she may buy again
SELECT ok, status FROM inventory.reserve_cart('c-cart-7', '{CA-CAP}', '{1}', buyer_id => 'ann');

-- a cart's lines numbered by the caller (a router's part of a cart that
-- spans servers): line i is (order_id, batch_ids[i])
SELECT ok, status, sku, qty FROM inventory.reserve_cart('c-cart-8', '{CA-MUG,CA-TEE}', '{1,1}', batch_ids => '{5,2}');
\c - shop_admin
SELECT batch_id, sku, qty, state FROM inventory.ledger WHERE order_id = 'c-cart-8' ORDER BY batch_id;
\c - shop_app
SELECT ok, status, sku, qty FROM inventory.reserve_cart('c-cart-8', '{CA-MUG,CA-TEE}', '{1,1}', batch_ids => '{5,2}');
-- another part of the same order, under numbers of its own
SELECT ok, status, sku, qty FROM inventory.reserve_cart('c-cart-8', '{CA-TEE}', '{1}', batch_ids => '{3}');
-- a part that takes some lines already there is a reused key
SELECT * FROM inventory.reserve_cart('c-cart-8', '{CA-MUG,CA-TEE}', '{1,1}', batch_ids => '{5,7}');
SELECT * FROM inventory.reserve_cart('c-cart-8', '{CA-TEE}', '{1}', batch_ids => '{5}');
\c - shop_admin
SELECT count(*) FROM inventory.ledger WHERE order_id = 'c-cart-8';
\c - shop_app
SELECT ok, status, sku, state FROM inventory.cancel_order('c-cart-8');

-- misuse is an error
SELECT * FROM inventory.reserve_cart('c-bad', '{CA-TEE,CA-MUG}', '{1}');
SELECT * FROM inventory.reserve_cart('c-bad', '{}', '{}');
SELECT * FROM inventory.reserve_cart('c-bad', '{CA-TEE,NULL}', '{1,1}');
SELECT * FROM inventory.reserve_cart('c-bad', '{CA-TEE}', '{0}');
SELECT * FROM inventory.reserve_cart('c-bad', NULL, '{1}');
SELECT * FROM inventory.reserve_cart(NULL, '{CA-TEE}', '{1}');
SELECT * FROM inventory.reserve_cart('c-bad', '{{CA-TEE}}', '{{1}}');
SELECT * FROM inventory.reserve_cart('c-bad', '{CA-TEE}', '{1}', ttl => '-1 minute');
SELECT * FROM inventory.reserve_cart('c-bad', '{CA-TEE,CA-MUG}', '{1,1}', batch_ids => '{1}');
SELECT * FROM inventory.reserve_cart('c-bad', '{CA-TEE,CA-MUG}', '{1,1}', batch_ids => '{4,4}');
SELECT * FROM inventory.reserve_cart('c-bad', '{CA-TEE,CA-MUG}', '{1,1}', batch_ids => '{4,NULL}');
SELECT * FROM inventory.reserve_cart('c-bad', '{CA-TEE}', '{1}', batch_ids => '{{4}}');
SELECT * FROM inventory.confirm_order(NULL);

SELECT sku, on_hand, reserved, available FROM inventory.stock WHERE sku LIKE 'CA-%' ORDER BY sku;
\c - shop_monitor
SELECT * FROM inventory.verify();
-- leave nothing to fold for the tests that count folds
\c - shop_admin
SELECT inventory.fold() > 0 AS folded;

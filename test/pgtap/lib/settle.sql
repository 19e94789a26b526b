-- The end of a file that leaves reservations behind: cancels every one of
-- this run that is still PENDING, then checks the cache against the tables.
-- Three tests.

SELECT is((SELECT count(*) FILTER (WHERE NOT (inventory.cancel(order_id, batch_id)).ok)
			 FROM inventory.ledger
			WHERE starts_with(order_id, current_setting('inventory_test.prefix')) AND state = 'PENDING'),
		  0::bigint, 'every reservation left PENDING is cancelled');
SELECT is((SELECT count(*) FROM inventory.ledger
			WHERE starts_with(order_id, current_setting('inventory_test.prefix')) AND state = 'PENDING'),
		  0::bigint, 'no reservation of this file is left PENDING');
SELECT is_empty('SELECT * FROM inventory.verify()', 'inventory.verify() is empty');

-- The end of a file that leaves reservations behind: the application
-- cancels every one of this run that is still PENDING (a statement, which
-- raises when a cancel does not answer ok), then the cache is checked
-- against the tables.  Two tests.

DO $$
DECLARE
	k record;
	st text;
BEGIN
	FOR k IN SELECT split_part(t, ' ', 1) AS batch_id, substr(t, strpos(t, ' ') + 1) AS order_id
			   FROM pg_temp.read(format($f$SELECT batch_id || ' ' || order_id FROM inventory.ledger
											WHERE starts_with(order_id, %L) AND state = 'PENDING'$f$,
										current_setting('inventory_test.prefix'))) t
	LOOP
		st := pg_temp.app_says(format('SELECT (inventory.cancel(%L, %s)).status', k.order_id, k.batch_id));
		IF st <> 'ok' THEN
			RAISE EXCEPTION 'the cancel of (%, %) answered %', k.order_id, k.batch_id, st;
		END IF;
	END LOOP;
END $$;
SELECT is(pg_temp.read1(format($f$SELECT count(*) FROM inventory.ledger
								   WHERE starts_with(order_id, %L) AND state = 'PENDING'$f$,
							   current_setting('inventory_test.prefix'))),
		  '0', 'no reservation of this file is left PENDING');
SELECT is_empty('SELECT * FROM pg_temp.drift()', 'inventory.verify(''30 s'') is empty');

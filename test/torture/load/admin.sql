-- An administrator (shop_admin) at the psql prompt, writing the tables
-- directly: the trigger holds these writes to the same rules as the API's.
\set what random(1, 7)
\set back random(0, 999)
\set order random(1, 9000000000000000000)
\set seed random(1, 1000000000)
\set ttl random(50, 3000)
\if :what = 1
-- cancels a live reservation
UPDATE inventory.ledger SET state = 'CANCELLED'
 WHERE order_id = 'k' || torture.key(:back) AND batch_id = 1 AND state = 'PENDING';
\elif :what = 2
-- confirms one still in time
UPDATE inventory.ledger SET state = 'CONFIRMED'
 WHERE order_id = 'k' || torture.key(:back) AND batch_id = 1 AND state = 'PENDING'
   AND expires_at > now();
\elif :what = 3
-- expires one overdue, or gives one 2 s more
UPDATE inventory.ledger
   SET state = CASE WHEN expires_at <= now() THEN 'EXPIRED'::inventory.state ELSE state END,
	   expires_at = CASE WHEN expires_at <= now() THEN expires_at ELSE now() + interval '2 s' END
 WHERE order_id = 'k' || torture.key(:back) AND batch_id = 1 AND state = 'PENDING';
\elif :what = 4
-- takes a reservation by hand: without enough stock the trigger refuses it
-- with 23514, which the block catches
DO $$
BEGIN
	INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
	SELECT 'dml-' || :order, 1, 'reserve', m.sku, m.qty, now() + :ttl * interval '1 ms'
	  FROM torture.reservation(:seed) m;
EXCEPTION WHEN check_violation THEN
	NULL;
END
$$;
\elif :what = 5
-- books a delivery of one unit, to be deleted once folded
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
SELECT 'del-' || :order, 1, 'restock', m.sku, 1 FROM torture.reservation(:seed) m;
\elif :what = 6
-- deletes the folded deliveries, keeping a copy for the checks (skipping
-- those another administrator is deleting: two deletes never wait for each
-- other, so they cannot deadlock)
WITH gone AS (
	DELETE FROM inventory.ledger
	 WHERE ctid = ANY (ARRAY(SELECT ctid FROM inventory.ledger
							  WHERE order_id LIKE 'del-%' AND folded
							  FOR UPDATE SKIP LOCKED))
	RETURNING *
)
INSERT INTO torture.deleted SELECT * FROM gone;
\else
-- folds by hand, racing the worker
SELECT inventory.fold(100);
\endif

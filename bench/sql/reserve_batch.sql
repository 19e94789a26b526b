-- case 10: one call of inventory.reserve_many() with :batch independent
-- reservations of 1 unit of :sku, each under a key of its own (:prefix, a
-- random number, then the element's place in the batch): a gateway's
-- millisecond of buyers, admitted in one call and one commit.  g::text, not
-- g: text || integer is a SQL function, which the planner would inline (and
-- parse) at every call, the plan being a custom one for each
\set n random(1, 9000000000000000000)
SELECT count(*) FROM inventory.reserve_many(
	array_fill(:sku::text, ARRAY[:batch::int]),
	array_fill(1::bigint, ARRAY[:batch::int]),
	ARRAY(SELECT :prefix::text || :n::text || '-' || g::text FROM generate_series(1, :batch::int) g));

/* inventory_router--0.2--0.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION inventory_router UPDATE TO '0.3'" to load this file. \quit

-- A movement's answer counts its own units, as the node's 0.3 answers it.
COMMENT ON COLUMN inventory.result.available IS
	'units available on the SKU''s node once the call commits there, if nothing else commits meanwhile (the node''s count, holds in flight taken out); NULL when the SKU does not exist';

-- The express lane: reserve_now() on the SKU's node, where it commits in a
-- batch with other callers'.  A SKU split into buckets is reserved as
-- reserve() reserves it: in the bucket of its key, falling through the
-- others, each in the node's own transaction.
CREATE FUNCTION inventory._reserve_now_at(route integer, sku text, qty bigint, order_id text,
										  batch_id integer, ttl interval, buyer_id text)
	RETURNS text
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON route;
	SELECT inventory.reserve_now(sku, qty, order_id, batch_id, ttl, buyer_id);
$$;
COMMENT ON FUNCTION inventory._reserve_now_at(integer, text, bigint, text, integer, interval, text) IS
	'reserve_now() on one partition (route: sku_hash(sku))';

CREATE FUNCTION inventory.reserve_now(sku text, qty bigint, order_id text,
									  batch_id integer DEFAULT 1,
									  ttl interval DEFAULT NULL,
									  buyer_id text DEFAULT NULL)
	RETURNS text
	LANGUAGE plpgsql
	AS $$
DECLARE
	parts integer[] := inventory._bucket_parts(reserve_now.sku);
BEGIN
	IF parts IS NULL THEN
		RETURN inventory._reserve_now_at(inventory.sku_hash(reserve_now.sku), reserve_now.sku,
										 reserve_now.qty, reserve_now.order_id,
										 reserve_now.batch_id, reserve_now.ttl,
										 reserve_now.buyer_id);
	END IF;
	RETURN (inventory._reserve_split(reserve_now.sku, reserve_now.qty, reserve_now.order_id,
									 reserve_now.batch_id, reserve_now.ttl, NULL,
									 reserve_now.buyer_id, parts)).status;
END
$$;
COMMENT ON FUNCTION inventory.reserve_now(text, bigint, text, integer, interval, text) IS
	'reserve_now() on the SKU''s node, committed there with other callers'' reservations; a split SKU is reserved as reserve() reserves it; answers the status';

REVOKE EXECUTE ON FUNCTION
	inventory._reserve_now_at(integer, text, bigint, text, integer, interval, text),
	inventory.reserve_now(text, bigint, text, integer, interval, text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
	inventory._reserve_now_at(integer, text, bigint, text, integer, interval, text),
	inventory.reserve_now(text, bigint, text, integer, interval, text)
TO inventory_app;

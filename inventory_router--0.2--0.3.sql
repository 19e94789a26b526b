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

-- Confirm, cancel and extend of a split SKU's key: first ask the
-- partitions of its buckets which holds the key (reading only), then act
-- on that one alone.  A partition that is down matters only when the key
-- is not found on the others, and then the call fails with its error,
-- having done nothing anywhere.

-- Where a key of a split SKU is: the partitions that hold it; when some
-- could not be asked, the first of them with its error.  Asked all at
-- once, then one by one when one of them fails.
CREATE FUNCTION inventory._key_where(parts integer[], key_order text, key_batch integer, key_sku text,
									 OUT holders integer[], OUT down integer,
									 OUT down_state text, OUT down_message text)
	LANGUAGE plpgsql
	AS $$
DECLARE
	p integer;
BEGIN
	BEGIN
		holders := ARRAY(SELECT inventory._key_at(parts, key_order, key_batch, key_sku));
		RETURN;
	EXCEPTION WHEN OTHERS THEN
		holders := '{}';
	END;
	FOREACH p IN ARRAY parts LOOP
		BEGIN
			holders := holders OPERATOR(pg_catalog.||)
				ARRAY(SELECT inventory._key_at(ARRAY[p], key_order, key_batch, key_sku));
		EXCEPTION WHEN OTHERS THEN
			IF down IS NULL THEN
				down := p;
				GET STACKED DIAGNOSTICS down_state = RETURNED_SQLSTATE, down_message = MESSAGE_TEXT;
			END IF;
		END;
	END LOOP;
END
$$;
COMMENT ON FUNCTION inventory._key_where(integer[], text, integer, text) IS
	'the partitions that hold a key of a split SKU, and the first that could not be asked, with its error';

-- The one partition that holds a key of a split SKU, NULL when none does;
-- an error, before anything is done, when several do or when it is not
-- found and a partition could not be asked.
CREATE FUNCTION inventory._key_home(sku text, order_id text, batch_id integer, op text)
	RETURNS integer
	LANGUAGE plpgsql
	AS $$
DECLARE
	w record;
BEGIN
	SELECT * INTO w FROM inventory._key_where(inventory._sku_parts(_key_home.sku), _key_home.order_id,
											  _key_home.batch_id, _key_home.sku);
	IF pg_catalog.cardinality(w.holders) > 1 THEN
		RAISE EXCEPTION 'key (%, %) is known on % partitions', order_id, batch_id,
				pg_catalog.cardinality(w.holders)
			USING ERRCODE = 'cardinality_violation',
				  DETAIL = pg_catalog.format('The %s was done on none of them.', op),
				  HINT = 'Keys must be unique across the cluster.';
	END IF;
	IF pg_catalog.cardinality(w.holders) = 1 THEN
		RETURN w.holders[1];
	END IF;
	IF w.down IS NOT NULL THEN
		RAISE EXCEPTION '%', w.down_message
			USING ERRCODE = w.down_state,
				  DETAIL = pg_catalog.format('Key (%s, %s) of sku "%s" is on no partition that answered; it may be on partition %s, which could not be asked. The %s was done nowhere.',
											 order_id, batch_id, sku, w.down, op),
				  HINT = 'Retry when the partition answers; a retry with the same key is safe.';
	END IF;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION inventory._key_home(text, text, integer, text) IS
	'the partition that holds a key of a split SKU; NULL when none does; an error, with nothing done, when it may be on a partition that is down';

CREATE OR REPLACE FUNCTION inventory._settle(op text, order_id text, batch_id integer, sku text)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
DECLARE
	r inventory.result;
	part integer;
BEGIN
	IF _settle.sku IS NULL THEN
		RETURN inventory._answer_of_one(
			ARRAY(SELECT a FROM inventory._settle_all(op, _settle.order_id, _settle.batch_id) a),
			op, _settle.order_id, _settle.batch_id);
	END IF;
	IF inventory._bucket_parts(_settle.sku) IS NULL THEN
		SELECT * INTO r FROM inventory._settle_at(op, inventory.sku_hash(_settle.sku),
												  _settle.order_id, _settle.batch_id);
		RETURN r;
	END IF;
	part := inventory._key_home(_settle.sku, _settle.order_id, _settle.batch_id, op);
	IF part IS NULL THEN
		RETURN ROW(false, 'not_found', NULL, NULL, NULL, NULL, NULL, NULL)::inventory.result;
	END IF;
	SELECT * INTO r FROM inventory._settle_at(op, part, _settle.order_id, _settle.batch_id);
	RETURN r;
END
$$;

CREATE FUNCTION inventory._extend_at(route integer, order_id text, batch_id integer, ttl interval)
	RETURNS inventory.result
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON route;
	SELECT * FROM inventory.extend(order_id, batch_id, ttl);
$$;
COMMENT ON FUNCTION inventory._extend_at(integer, text, integer, interval) IS 'extend() on one partition';

CREATE OR REPLACE FUNCTION inventory.extend(order_id text, batch_id integer, ttl interval,
											sku text DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
DECLARE
	part integer;
BEGIN
	IF extend.sku IS NOT NULL AND inventory._bucket_parts(extend.sku) IS NOT NULL THEN
		part := inventory._key_home(extend.sku, extend.order_id, extend.batch_id, 'extend');
		IF part IS NULL THEN
			RETURN ROW(false, 'not_found', NULL, NULL, NULL, NULL, NULL, NULL)::inventory.result;
		END IF;
		RETURN inventory._extend_at(part, extend.order_id, extend.batch_id, extend.ttl);
	ELSIF extend.sku IS NOT NULL THEN
		RETURN inventory._extend_on(extend.order_id, extend.batch_id, extend.ttl, extend.sku);
	END IF;
	RETURN inventory._answer_of_one(
		ARRAY(SELECT a FROM inventory._extend_all(extend.order_id, extend.batch_id, extend.ttl) a),
		'extend', extend.order_id, extend.batch_id);
END
$$;

DROP FUNCTION inventory._settle_keyed(text, integer[], text, integer, text);
DROP FUNCTION inventory._extend_keyed(integer[], text, integer, interval, text);

REVOKE EXECUTE ON FUNCTION
	inventory._key_where(integer[], text, integer, text),
	inventory._key_home(text, text, integer, text),
	inventory._extend_at(integer, text, integer, interval)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
	inventory._key_where(integer[], text, integer, text),
	inventory._key_home(text, text, integer, text),
	inventory._extend_at(integer, text, integer, interval)
TO inventory_app;

-- inventory.nodes: units withdrawn toward a partition that could not be
-- asked are not known to be in transit -- every past transfer into it
-- would count -- and are shown apart, in transit_unknown.
DROP VIEW inventory.nodes;
DROP FUNCTION inventory.nodes();

CREATE FUNCTION inventory.nodes(OUT part integer, OUT dbname text, OUT host text, OUT port text,
								OUT reachable boolean, OUT error text,
								OUT skus bigint, OUT holds bigint, OUT in_transit bigint,
								OUT transit_unknown bigint)
	RETURNS SETOF record
	LANGUAGE plpgsql
	AS $$
DECLARE
	i integer;
	conninfo text;
	rows inventory.nodes[] := '{}';
	moves text[] := '{}';		-- transfer movements seen: order_id and batch_id
	sent text[] := '{}';		-- withdraws of transfers: order_id
	sent_qty bigint[] := '{}';
	asked integer[] := '{}';	-- the partitions that answered
	t record;
	n inventory.nodes;
BEGIN
	FOR i IN 0 .. inventory.partitions() - 1 LOOP
		SELECT o.option_value INTO conninfo
		  FROM pg_catalog.pg_foreign_server s, pg_catalog.pg_options_to_table(s.srvoptions) o
		 WHERE s.srvname = 'inventory_cluster' AND o.option_name = 'p' || i;
		n := ROW(i, inventory._conninfo_value(conninfo, 'dbname'),
				 inventory._conninfo_value(conninfo, 'host'),
				 inventory._conninfo_value(conninfo, 'port'), NULL, NULL, NULL, NULL, NULL, NULL);
		BEGIN
			SELECT true, NULL, x.skus, x.holds INTO n.reachable, n.error, n.skus, n.holds
			  FROM inventory._node_info(i) x;
			FOR t IN SELECT * FROM inventory._transfer_rows(ARRAY[i]) LOOP
				moves := moves || (t.order_id || '/' || t.batch_id);
				IF t.batch_id = 1 THEN
					sent := sent || t.order_id;
					sent_qty := sent_qty || t.qty;
				END IF;
			END LOOP;
			asked := asked || i;
		EXCEPTION WHEN OTHERS THEN
			n.reachable := false;
			n.skus := NULL;
			n.holds := NULL;
			GET STACKED DIAGNOSTICS n.error = MESSAGE_TEXT;
		END;
		rows := rows || n;
	END LOOP;
	-- units withdrawn from a partition by a transfer (its key
	-- inventory:transfer:FROM:TO:...) whose restock is not on its receiving
	-- partition; or, when that partition did not answer, not known
	FOREACH n IN ARRAY rows LOOP
		IF n.reachable THEN
			SELECT coalesce(pg_catalog.sum(q) FILTER (WHERE pg_catalog.split_part(o, ':', 4)::integer = ANY (asked)
													  AND NOT ((o || '/2') = ANY (moves))), 0),
				   coalesce(pg_catalog.sum(q) FILTER (WHERE NOT pg_catalog.split_part(o, ':', 4)::integer = ANY (asked)), 0)
			  INTO n.in_transit, n.transit_unknown
			  FROM ROWS FROM (pg_catalog.unnest(sent), pg_catalog.unnest(sent_qty)) x(o, q)
			 WHERE pg_catalog.split_part(o, ':', 3)::integer = n.part;
		END IF;
		part := n.part; dbname := n.dbname; host := n.host; port := n.port;
		reachable := n.reachable; error := n.error; skus := n.skus; holds := n.holds;
		in_transit := n.in_transit; transit_unknown := n.transit_unknown;
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION inventory.nodes() IS
	'each partition of inventory_cluster: where it is, whether it answers, its SKUs, PENDING reservations and units in transit';

CREATE VIEW inventory.nodes AS SELECT * FROM inventory.nodes();
COMMENT ON VIEW inventory.nodes IS
	'each partition of inventory_cluster: where it is, whether it answers, its SKUs, PENDING reservations and units in transit';
COMMENT ON COLUMN inventory.nodes.part IS 'the partition number (option pN of the server inventory_cluster)';
COMMENT ON COLUMN inventory.nodes.dbname IS 'the partition''s database, from its connection string';
COMMENT ON COLUMN inventory.nodes.host IS 'its host or socket directory, from its connection string; NULL: the default';
COMMENT ON COLUMN inventory.nodes.port IS 'its port, from its connection string; NULL: the default';
COMMENT ON COLUMN inventory.nodes.reachable IS 'whether the partition answered now';
COMMENT ON COLUMN inventory.nodes.error IS 'why it did not; NULL when it did';
COMMENT ON COLUMN inventory.nodes.skus IS 'SKUs of the partition';
COMMENT ON COLUMN inventory.nodes.holds IS 'PENDING reservations of the partition';
COMMENT ON COLUMN inventory.nodes.in_transit IS
	'units withdrawn from the partition by a transfer between buckets and not yet restocked on the other side; rebalance() of the SKU finishes it';
COMMENT ON COLUMN inventory.nodes.transit_unknown IS
	'units withdrawn from the partition by transfers toward a partition that did not answer now: whether they arrived is not known until it does';

REVOKE ALL ON inventory.nodes FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION inventory.nodes() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.nodes() TO inventory_admin;
GRANT SELECT ON inventory.nodes TO inventory_admin;

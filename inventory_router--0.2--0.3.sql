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

CREATE FUNCTION inventory._reserve_now_result_at(route integer, sku text, qty bigint,
												 order_id text, batch_id integer, ttl interval,
												 buyer_id text)
	RETURNS inventory.result
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON route;
	SELECT * FROM inventory.reserve_now_result(sku, qty, order_id, batch_id, ttl, buyer_id);
$$;
COMMENT ON FUNCTION inventory._reserve_now_result_at(integer, text, bigint, text, integer, interval, text) IS
	'reserve_now_result() on one partition (route: sku_hash(sku))';

CREATE FUNCTION inventory.reserve_now_result(sku text, qty bigint, order_id text,
											 batch_id integer DEFAULT 1,
											 ttl interval DEFAULT NULL,
											 buyer_id text DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
DECLARE
	parts integer[] := inventory._bucket_parts(reserve_now_result.sku);
BEGIN
	IF parts IS NULL THEN
		RETURN inventory._reserve_now_result_at(inventory.sku_hash(reserve_now_result.sku),
												reserve_now_result.sku, reserve_now_result.qty,
												reserve_now_result.order_id,
												reserve_now_result.batch_id,
												reserve_now_result.ttl,
												reserve_now_result.buyer_id);
	END IF;
	RETURN inventory._reserve_split(reserve_now_result.sku, reserve_now_result.qty,
									reserve_now_result.order_id, reserve_now_result.batch_id,
									reserve_now_result.ttl, NULL, reserve_now_result.buyer_id,
									parts);
END
$$;
COMMENT ON FUNCTION inventory.reserve_now_result(text, bigint, text, integer, interval, text) IS
	'reserve_now() on the SKU''s node answering the whole inventory.result; a split SKU is reserved as reserve() reserves it';

REVOKE EXECUTE ON FUNCTION
	inventory._reserve_now_at(integer, text, bigint, text, integer, interval, text),
	inventory.reserve_now(text, bigint, text, integer, interval, text),
	inventory._reserve_now_result_at(integer, text, bigint, text, integer, interval, text),
	inventory.reserve_now_result(text, bigint, text, integer, interval, text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
	inventory._reserve_now_at(integer, text, bigint, text, integer, interval, text),
	inventory.reserve_now(text, bigint, text, integer, interval, text),
	inventory._reserve_now_result_at(integer, text, bigint, text, integer, interval, text),
	inventory.reserve_now_result(text, bigint, text, integer, interval, text)
TO inventory_app;

-- Confirm, cancel and extend by key: first ask the partitions that may hold
-- the key which one does (reading only), then act on that one alone: the
-- buckets of a split SKU, or every partition when the call has no SKU.  A
-- partition that is down matters only when the key is not found on the
-- others, and then the call fails with its error, having done nothing
-- anywhere.  Orders (confirm_order, cancel_order) likewise: the
-- partitions holding lines of the order, found first.

-- Those of the partitions that hold a reservation under the key (batch_id
-- NULL: any line of the order; sku NULL: of any SKU).
CREATE FUNCTION inventory._reservation_at(parts integer[], key_order text, key_batch integer, key_sku text)
	RETURNS SETOF integer
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT parts;
	RUN ON parts;
	SELECT p FROM pg_catalog.unnest(parts) p
	 WHERE EXISTS (SELECT FROM inventory.ledger l
					WHERE l.order_id = key_order
					  AND (key_batch IS NULL OR l.batch_id = key_batch)
					  AND (key_sku IS NULL OR l.sku = key_sku)
					  AND l.kind = 'reserve');
$$;
COMMENT ON FUNCTION inventory._reservation_at(integer[], text, integer, text) IS
	'those of the partitions that hold a reservation under the key (batch NULL: any line of the order; sku NULL: any SKU)';

-- Where a key of a split SKU is, or goes, found by the one lookup of
-- reservations above: its bucket in a former layout that holds it, else
-- home, its bucket now.
CREATE OR REPLACE FUNCTION inventory._key_part(sku text, order_id text, batch_id integer, basis text,
											   home integer)
	RETURNS integer
	LANGUAGE plpgsql STABLE
	AS $$
DECLARE
	former integer[];
	found integer;
BEGIN
	IF _key_part.order_id IS NULL OR _key_part.batch_id IS NULL THEN
		PERFORM inventory._null_argument(CASE WHEN _key_part.order_id IS NULL THEN 'order_id' ELSE 'batch_id' END);
	END IF;
	former := ARRAY(SELECT DISTINCT h
					  FROM (SELECT inventory._home(l.parts, _key_part.basis) h
							  FROM inventory.bucket_layout l
							 WHERE l.sku = _key_part.sku
							 ORDER BY l.generation DESC OFFSET 1) x
					 WHERE h <> home);
	IF pg_catalog.cardinality(former) > 0 THEN
		found := (SELECT k FROM inventory._reservation_at(former, _key_part.order_id,
														  _key_part.batch_id, _key_part.sku) k LIMIT 1);
		IF found IS NOT NULL THEN
			RETURN found;
		END IF;
	END IF;
	RETURN home;
END
$$;
DROP FUNCTION inventory._key_at(integer[], text, integer, text);

-- Where a reservation is: the partitions that hold it; when some could
-- not be asked, the first of them with its error.  Asked all at once, then one by
-- one when one of them fails.
CREATE FUNCTION inventory._key_where(parts integer[], key_order text, key_batch integer, key_sku text,
									 OUT holders integer[], OUT down integer,
									 OUT down_state text, OUT down_message text)
	LANGUAGE plpgsql
	AS $$
DECLARE
	p integer;
BEGIN
	BEGIN
		holders := ARRAY(SELECT h FROM inventory._reservation_at(parts, key_order, key_batch, key_sku) h ORDER BY 1);
		RETURN;
	EXCEPTION WHEN OTHERS THEN
		holders := '{}';
	END;
	FOREACH p IN ARRAY parts LOOP
		BEGIN
			holders := holders OPERATOR(pg_catalog.||)
				ARRAY(SELECT inventory._reservation_at(ARRAY[p], key_order, key_batch, key_sku));
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
	'the partitions that hold a reservation under a key, and the first that could not be asked, with its error';

-- Every partition a bucket of the SKU is or was on, its own included.
CREATE FUNCTION inventory._parts_of(sku text) RETURNS integer[]
	LANGUAGE sql STABLE
	AS $$
	SELECT ARRAY(SELECT DISTINCT p
				   FROM pg_catalog.unnest(inventory._sku_parts($1)
										  OPERATOR(pg_catalog.||) inventory.partition_of($1)) p
				  ORDER BY 1)
$$;
COMMENT ON FUNCTION inventory._parts_of(text) IS
	'the partitions of a SKU: its own, and those of the buckets of its kept layouts';

-- Every partition, for a call without a SKU.
CREATE FUNCTION inventory._every_part() RETURNS integer[]
	LANGUAGE sql STABLE
	AS $$ SELECT ARRAY(SELECT pg_catalog.generate_series(0, inventory.partitions() OPERATOR(pg_catalog.-) 1)) $$;
COMMENT ON FUNCTION inventory._every_part() IS 'every partition of inventory_cluster';

-- The one partition that holds a key, NULL when none does: of a split
-- SKU's buckets, or of every partition when sku is NULL.  An error, before
-- anything is done, when several hold it or when it is not found and a
-- partition could not be asked.
CREATE FUNCTION inventory._key_home(sku text, order_id text, batch_id integer, op text)
	RETURNS integer
	LANGUAGE plpgsql
	AS $$
DECLARE
	w record;
	what text;
BEGIN
	IF _key_home.order_id IS NULL OR _key_home.batch_id IS NULL THEN
		PERFORM inventory._null_argument(CASE WHEN _key_home.order_id IS NULL THEN 'order_id' ELSE 'batch_id' END);
	END IF;
	-- a merge may have forgotten the SKU's layouts since the caller looked
	SELECT * INTO w FROM inventory._key_where(
		CASE WHEN _key_home.sku IS NULL THEN inventory._every_part()
			 ELSE inventory._parts_of(_key_home.sku) END,
		_key_home.order_id, _key_home.batch_id, _key_home.sku);
	IF pg_catalog.cardinality(w.holders) > 1 THEN
		RAISE EXCEPTION 'key (%, %) is known on % partitions', order_id, batch_id,
				pg_catalog.cardinality(w.holders)
			USING ERRCODE = 'cardinality_violation',
				  DETAIL = pg_catalog.format('The %s was done on none of them.', op),
				  HINT = CASE WHEN sku IS NULL
							  THEN 'Keys must be unique across the cluster; pass the sku to reach its node only.'
							  ELSE 'Keys must be unique across the cluster.' END;
	END IF;
	IF pg_catalog.cardinality(w.holders) = 1 THEN
		RETURN w.holders[1];
	END IF;
	IF w.down IS NOT NULL THEN
		what := pg_catalog.format('Key (%s, %s)', order_id, batch_id);
		IF sku IS NOT NULL THEN
			what := pg_catalog.format('%s of sku "%s"', what, sku);
		END IF;
		RAISE EXCEPTION '%', w.down_message
			USING ERRCODE = w.down_state,
				  DETAIL = pg_catalog.format('%s is on no partition that answered; it may be on partition %s, which could not be asked. The %s was done nowhere.',
											 what, w.down, op),
				  HINT = 'Retry when the partition answers; a retry with the same key is safe.';
	END IF;
	RETURN NULL;
END
$$;
COMMENT ON FUNCTION inventory._key_home(text, text, integer, text) IS
	'the partition that holds a key (of a split SKU, or anywhere when sku is NULL); NULL when none does; an error, with nothing done, when it may be on a partition that is down';

CREATE OR REPLACE FUNCTION inventory._settle(op text, order_id text, batch_id integer, sku text)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
DECLARE
	r inventory.result;
	part integer;
BEGIN
	IF _settle.sku IS NOT NULL AND inventory._bucket_parts(_settle.sku) IS NULL THEN
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
	IF extend.sku IS NOT NULL AND inventory._bucket_parts(extend.sku) IS NULL THEN
		RETURN inventory._extend_on(extend.order_id, extend.batch_id, extend.ttl, extend.sku);
	END IF;
	part := inventory._key_home(extend.sku, extend.order_id, extend.batch_id, 'extend');
	IF part IS NULL THEN
		RETURN ROW(false, 'not_found', NULL, NULL, NULL, NULL, NULL, NULL)::inventory.result;
	END IF;
	RETURN inventory._extend_at(part, extend.order_id, extend.batch_id, extend.ttl);
END
$$;

-- confirm_order() or cancel_order() (op) on one partition
CREATE FUNCTION inventory._order_at(op text, route integer, order_id text)
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON route;
	SELECT * FROM inventory.confirm_order(order_id) WHERE op = 'confirm'
	UNION ALL
	SELECT * FROM inventory.cancel_order(order_id) WHERE op = 'cancel';
$$;
COMMENT ON FUNCTION inventory._order_at(text, integer, text) IS
	'confirm_order() or cancel_order() (op) on one partition';

-- confirm_order() or cancel_order() (op): on the partitions holding lines
-- of the order, found first, one after the other.  One that fails after
-- others were done says so: a retry is safe, the lines done answer as
-- replays.
CREATE FUNCTION inventory._settle_order(op text, order_id text)
	RETURNS SETOF inventory.result
	LANGUAGE plpgsql ROWS 5
	AS $$
DECLARE
	w record;
	k integer;
	answers inventory.result[] := '{}';
	failed_state text;
	failed_message text;
BEGIN
	IF _settle_order.order_id IS NULL THEN
		PERFORM inventory._null_argument('order_id');
	END IF;
	SELECT * INTO w FROM inventory._key_where(inventory._every_part(), _settle_order.order_id, NULL, NULL);
	IF w.down IS NOT NULL THEN
		RAISE EXCEPTION '%', w.down_message
			USING ERRCODE = w.down_state,
				  DETAIL = pg_catalog.format('Order "%s" may have lines on partition %s, which could not be asked. The %s was done nowhere.',
											 _settle_order.order_id, w.down, op || '_order'),
				  HINT = 'Retry when the partition answers, or settle each line with its sku; a retry is safe.';
	END IF;
	FOR k IN 1 .. pg_catalog.cardinality(w.holders) LOOP
		BEGIN
			answers := answers OPERATOR(pg_catalog.||)
				ARRAY(SELECT a FROM inventory._order_at(op, w.holders[k], _settle_order.order_id) a);
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS failed_state = RETURNED_SQLSTATE, failed_message = MESSAGE_TEXT;
			RAISE EXCEPTION '%', failed_message
				USING ERRCODE = failed_state,
					  DETAIL = CASE WHEN k = 1
						THEN pg_catalog.format('The %s of order "%s" was done nowhere.', op || '_order',
											   _settle_order.order_id)
						ELSE pg_catalog.format('The %s of order "%s" was done on partitions %s; on partitions %s it may not have been done.',
											   op || '_order', _settle_order.order_id,
											   pg_catalog.array_to_string(w.holders[1:k - 1], ', '),
											   pg_catalog.array_to_string(w.holders[k:], ', ')) END,
					  HINT = 'A retry is safe: the lines done answer as replays.';
		END;
	END LOOP;
	RETURN QUERY SELECT * FROM inventory._order_rows(answers);
	IF NOT FOUND THEN
		RETURN NEXT ROW(false, 'not_found', NULL, NULL, NULL, NULL, NULL, NULL)::inventory.result;
	END IF;
END
$$;
COMMENT ON FUNCTION inventory._settle_order(text, text) IS
	'confirm_order() or cancel_order() (op) on the partitions that hold lines of the order, found first';

CREATE OR REPLACE FUNCTION inventory.confirm_order(order_id text)
	RETURNS SETOF inventory.result
	LANGUAGE plpgsql ROWS 5
	AS $$
BEGIN
	RETURN QUERY SELECT * FROM inventory._settle_order('confirm', confirm_order.order_id);
END
$$;
COMMENT ON FUNCTION inventory.confirm_order(text) IS
	'confirm every reservation of order_id, as confirm() would, on the nodes that hold its lines; one result row each, node after node';

CREATE OR REPLACE FUNCTION inventory.cancel_order(order_id text)
	RETURNS SETOF inventory.result
	LANGUAGE plpgsql ROWS 5
	AS $$
BEGIN
	RETURN QUERY SELECT * FROM inventory._settle_order('cancel', cancel_order.order_id);
END
$$;
COMMENT ON FUNCTION inventory.cancel_order(text) IS
	'cancel every reservation of order_id, as cancel() would, on the nodes that hold its lines; one result row each, node after node';

DROP FUNCTION inventory._settle_keyed(text, integer[], text, integer, text);
DROP FUNCTION inventory._extend_keyed(integer[], text, integer, interval, text);
DROP FUNCTION inventory._settle_all(text, text, integer);
DROP FUNCTION inventory._extend_all(text, integer, interval);
DROP FUNCTION inventory._answer_of_one(inventory.result[], text, text, integer);
DROP FUNCTION inventory._confirm_order_all(text);
DROP FUNCTION inventory._cancel_order_all(text);

REVOKE EXECUTE ON FUNCTION
	inventory._reservation_at(integer[], text, integer, text),
	inventory._parts_of(text),
	inventory._key_where(integer[], text, integer, text),
	inventory._every_part(),
	inventory._key_home(text, text, integer, text),
	inventory._extend_at(integer, text, integer, interval),
	inventory._order_at(text, integer, text),
	inventory._settle_order(text, text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
	inventory._reservation_at(integer[], text, integer, text),
	inventory._parts_of(text),
	inventory._key_where(integer[], text, integer, text),
	inventory._every_part(),
	inventory._key_home(text, text, integer, text),
	inventory._extend_at(integer, text, integer, interval),
	inventory._order_at(text, integer, text),
	inventory._settle_order(text, text)
TO inventory_app;

-- Transfers between buckets that fail half-way.  A transfer is a keyed
-- withdraw on the giving partition, then a keyed restock of the same units
-- on the receiving one.  When the restock fails, whether the receiving
-- partition committed it is not always known (a connection lost after the
-- query was sent), so the units are never put back on the giving side:
-- they are restocked on the receiving side by their key, which is safe
-- whatever happened there, by a later fall-through of the same SKU (at
-- most once per inventory_router.transfer_recheck in a session), or by
-- split, merge and rebalance.  A fall-through whose receiving partition
-- fails stops there and raises its error; one whose giving partition
-- fails asks the next.

-- The movements of transfers, of one SKU or (t_sku NULL) of every SKU:
-- only withdraws (batch 1) and restocks (batch 2) under a key of the
-- router's own form, so that no reservation or other movement under a
-- look-alike key is ever taken for one.
DROP FUNCTION inventory._transfer_rows(integer[]);
CREATE FUNCTION inventory._transfer_rows(parts integer[], t_sku text)
	RETURNS TABLE (order_id text, batch_id integer, sku text, qty bigint)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT parts;
	RUN ON parts;
	SELECT l.order_id, l.batch_id, l.sku, l.qty FROM inventory.ledger l
	 WHERE l.order_id >= 'inventory:transfer:' AND l.order_id < 'inventory:transfer;'
	   AND (t_sku IS NULL OR l.sku = t_sku)
	   AND ((l.batch_id = 1 AND l.kind = 'withdraw') OR (l.batch_id = 2 AND l.kind = 'restock'))
	   AND l.order_id ~ '^inventory:transfer:[0-9]{1,9}:[0-9]{1,9}:';
$$;
COMMENT ON FUNCTION inventory._transfer_rows(integer[], text) IS
	'the movements of transfers on the partitions, of one SKU or (NULL) of every SKU';

DROP FUNCTION inventory._transfer(text, integer, integer, bigint);

-- Moves qty available units of a SKU from one partition to another, as two
-- keyed movements; returns the units moved (0 when the giving side has
-- fewer available now).  For a fall-through: NULL when the giving side
-- fails, and the receiving side's error, raised, when it fails; otherwise
-- (rebalance) the giving side's error is raised and a failed restock is a
-- warning.  Units withdrawn and not restocked are in transit.
CREATE FUNCTION inventory._transfer(sku text, from_part integer, to_part integer, qty bigint,
									fall_through boolean DEFAULT false)
	RETURNS bigint
	LANGUAGE plpgsql
	AS $$
DECLARE
	key text := pg_catalog.format('inventory:transfer:%s:%s:%s', from_part, to_part,
								  pg_catalog.gen_random_uuid());
	w record;
	failed_state text;
	failed_message text;
BEGIN
	IF fall_through THEN
		BEGIN
			SELECT * INTO w FROM inventory._withdraw_at(from_part, _transfer.sku, _transfer.qty, key);
		EXCEPTION WHEN OTHERS THEN
			-- if the withdraw committed before its answer was lost, its
			-- units are in transit, and finished as any other
			RETURN NULL;
		END;
	ELSE
		SELECT * INTO w FROM inventory._withdraw_at(from_part, _transfer.sku, _transfer.qty, key);
	END IF;
	IF NOT w.ok THEN
		RETURN 0;
	END IF;
	BEGIN
		PERFORM inventory._restock_at(to_part, _transfer.sku, _transfer.qty, key,
									  w.max_per_buyer, w.sale_starts, w.sale_ends);
	EXCEPTION WHEN OTHERS THEN
		GET STACKED DIAGNOSTICS failed_state = RETURNED_SQLSTATE, failed_message = MESSAGE_TEXT;
		IF fall_through THEN
			RAISE EXCEPTION '%', failed_message
				USING ERRCODE = failed_state,
					  DETAIL = pg_catalog.format('The bucket of this call, on partition %s, failed while %s units of "%s" moved into it from partition %s; they are in transit until partition %s answers, then restocked there by their key (%s, 2).',
												 to_part, _transfer.qty, _transfer.sku, from_part, to_part, key),
					  HINT = 'A retry with the same key is safe.';
		END IF;
		RAISE WARNING '% units of "%" are in transit from partition % to partition %',
			_transfer.qty, _transfer.sku, from_part, to_part
			USING DETAIL = pg_catalog.format('Withdrawn by key (%s, 1), not restocked: %s', key, failed_message),
				  HINT = 'A later fall-through of the SKU, or inventory.rebalance() of it, restocks them.';
		RETURN 0;
	END;
	RETURN _transfer.qty;
END
$$;
COMMENT ON FUNCTION inventory._transfer(text, integer, integer, bigint, boolean) IS
	'move available units of a SKU between partitions by two keyed movements; the units moved';

-- Restocks, by their keys, the units of a SKU's transfers that were
-- withdrawn and never restocked, toward the partitions of its layouts;
-- the units restocked.  Strict (split, merge, rebalance): a partition that
-- does not answer, or a restock that fails, is an error.  Otherwise (a
-- fall-through): they are left for the next time.
DROP FUNCTION inventory._finish_transfers(text);
CREATE FUNCTION inventory._finish_transfers(sku text, strict boolean DEFAULT true) RETURNS bigint
	LANGUAGE plpgsql
	AS $$
DECLARE
	parts integer[] := inventory._parts_of(_finish_transfers.sku);
	asked integer[] := '{}';
	p integer;
	o text[] := '{}';
	b integer[] := '{}';
	q bigint[] := '{}';
	t record;
	rules record;
	done bigint := 0;
BEGIN
	IF strict THEN
		SELECT pg_catalog.array_agg(r.order_id), pg_catalog.array_agg(r.batch_id), pg_catalog.array_agg(r.qty)
		  INTO o, b, q
		  FROM inventory._transfer_rows(parts, _finish_transfers.sku) r;
		asked := parts;
	ELSE
		FOREACH p IN ARRAY parts LOOP
			BEGIN
				SELECT o OPERATOR(pg_catalog.||) coalesce(pg_catalog.array_agg(r.order_id), '{}'),
					   b OPERATOR(pg_catalog.||) coalesce(pg_catalog.array_agg(r.batch_id), '{}'),
					   q OPERATOR(pg_catalog.||) coalesce(pg_catalog.array_agg(r.qty), '{}')
				  INTO o, b, q
				  FROM inventory._transfer_rows(ARRAY[p], _finish_transfers.sku) r;
				asked := asked OPERATOR(pg_catalog.||) p;
			EXCEPTION WHEN OTHERS THEN
				NULL;
			END;
		END LOOP;
	END IF;
	-- a withdraw whose receiving partition answered without its restock
	FOR t IN WITH x AS MATERIALIZED (
				SELECT * FROM ROWS FROM (pg_catalog.unnest(o), pg_catalog.unnest(b), pg_catalog.unnest(q))
							  x(order_id, batch_id, qty))
			 SELECT w.order_id, w.qty, pg_catalog.split_part(w.order_id, ':', 4)::integer AS target
			   FROM x w
			  WHERE w.batch_id = 1
				AND pg_catalog.split_part(w.order_id, ':', 4)::integer = ANY (asked)
				AND NOT EXISTS (SELECT FROM x r WHERE r.order_id = w.order_id AND r.batch_id = 2)
			  ORDER BY w.order_id
	LOOP
		IF strict THEN
			IF rules IS NULL THEN
				SELECT * INTO rules FROM inventory._rules_of(_finish_transfers.sku);
			END IF;
			PERFORM inventory._restock_at(t.target, _finish_transfers.sku, t.qty, t.order_id,
										  rules.max_per_buyer, rules.sale_starts, rules.sale_ends);
			done := done + t.qty;
		ELSE
			BEGIN
				IF rules IS NULL THEN
					SELECT * INTO rules FROM inventory._rules_of(_finish_transfers.sku);
				END IF;
				PERFORM inventory._restock_at(t.target, _finish_transfers.sku, t.qty, t.order_id,
											  rules.max_per_buyer, rules.sale_starts, rules.sale_ends);
				done := done + t.qty;
			EXCEPTION WHEN OTHERS THEN
				-- a partition failed meanwhile: the next time
				NULL;
			END;
		END IF;
	END LOOP;
	RETURN done;
END
$$;
COMMENT ON FUNCTION inventory._finish_transfers(text, boolean) IS
	'restock by their keys the units of a SKU in transit; the units restocked; strict: a partition that fails is an error, else skipped';

-- The available units of a SKU on each of the partitions, in their order:
-- asked at once, then one by one when one fails (NULL for those that do
-- not answer, and *unknown set).
CREATE FUNCTION inventory._available_each(parts integer[], a_sku text,
										  OUT avail bigint[], OUT unknown boolean)
	LANGUAGE plpgsql
	AS $$
DECLARE
	p integer;
	a bigint;
BEGIN
	unknown := false;
	BEGIN
		avail := ARRAY(SELECT x.available FROM pg_catalog.unnest(parts) WITH ORDINALITY d(p, o)
						 LEFT JOIN inventory._available_at(parts, a_sku) x ON x.part = d.p
						ORDER BY d.o);
		RETURN;
	EXCEPTION WHEN OTHERS THEN
		avail := '{}';
	END;
	FOREACH p IN ARRAY parts LOOP
		BEGIN
			a := (SELECT x.available FROM inventory._available_at(ARRAY[p], a_sku) x);
		EXCEPTION WHEN OTHERS THEN
			a := NULL;
			unknown := true;
		END;
		avail := avail OPERATOR(pg_catalog.||) a;
	END LOOP;
END
$$;
COMMENT ON FUNCTION inventory._available_each(integer[], text) IS
	'the available units of a SKU on each partition, NULL where it did not answer';

-- Moves need units of a split SKU into the bucket on partition home from
-- its other buckets, in their fixed order (the buckets after it, then
-- partitions of former layouts), skipping those that do not answer; none
-- when the buckets that answer do not have that many together.  NULL when
-- none moved and a bucket did not answer: the SKU is not known to be
-- short.  A failure of home itself is raised.  First, at most once per
-- inventory_router.transfer_recheck in a session, the SKU's transfers left
-- in transit by failures are finished; when that restocked units, they
-- are the answer, and the caller tries its bucket again.
-- Runs as the extension's owner: it only moves units between the buckets
-- of a SKU, never out of it.
CREATE OR REPLACE FUNCTION inventory._top_up(sku text, home integer, need bigint)
	RETURNS bigint
	LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	cur integer[] := inventory._bucket_parts(_top_up.sku);
	n integer;
	i integer;
	donors integer[];
	each record;
	d integer;
	a bigint;
	got bigint;
	moved bigint := 0;
	unknown boolean;
	now_s float8 := date_part('epoch', clock_timestamp());
BEGIN
	IF cur IS NULL OR NOT (_top_up.home = ANY (cur)) THEN
		RETURN 0;
	END IF;
	IF now_s >= coalesce(NULLIF(current_setting('inventory_router.transfers_checked', true), '')::float8, 0)
				+ date_part('epoch', coalesce(NULLIF(current_setting('inventory_router.transfer_recheck', true), '')::interval,
											  interval '10 seconds')) THEN
		PERFORM set_config('inventory_router.transfers_checked', now_s::text, false);
		moved := inventory._finish_transfers(_top_up.sku, false);
		IF moved > 0 THEN
			RETURN moved;
		END IF;
	END IF;
	need := greatest(coalesce(need, 1), 1);
	n := cardinality(cur);
	i := array_position(cur, _top_up.home);
	donors := ARRAY(SELECT cur[1 + (i - 1 + k) % n] FROM generate_series(1, n - 1) k)
		|| ARRAY(SELECT p FROM unnest(inventory._sku_parts(_top_up.sku)) p
				  WHERE NOT (p = ANY (cur)) ORDER BY p);
	IF cardinality(donors) = 0 THEN
		RETURN 0;
	END IF;
	SELECT * INTO each FROM inventory._available_each(donors, _top_up.sku);
	unknown := each.unknown;
	-- nothing moves for a call that the buckets that answer cannot serve
	IF coalesce((SELECT sum(greatest(x, 0)) FROM unnest(each.avail) x), 0) < need THEN
		RETURN CASE WHEN unknown THEN NULL ELSE 0 END;
	END IF;
	FOR k IN 1 .. cardinality(donors) LOOP
		EXIT WHEN moved >= need;
		d := donors[k];
		a := each.avail[k];
		-- a donor whose units others took meanwhile gives what it has left
		FOR attempt IN 1 .. 3 LOOP
			EXIT WHEN a IS NULL OR a <= 0;
			got := inventory._transfer(_top_up.sku, d, _top_up.home, least(a, need - moved), true);
			IF got IS NULL THEN
				unknown := true;
				EXIT;
			ELSIF got > 0 THEN
				moved := moved + got;
				EXIT;
			END IF;
			BEGIN
				a := (SELECT x.available FROM inventory._available_at(ARRAY[d], _top_up.sku) x);
			EXCEPTION WHEN OTHERS THEN
				unknown := true;
				EXIT;
			END;
		END LOOP;
	END LOOP;
	IF moved = 0 AND unknown THEN
		RETURN NULL;
	END IF;
	RETURN moved;
END
$$;
COMMENT ON FUNCTION inventory._top_up(text, integer, bigint) IS
	'move units of a split SKU into one of its buckets from the others, in their fixed order; the units moved, NULL when none and a bucket did not answer';

-- A reserve of a split SKU: in the bucket of its key; when that bucket is
-- short, units move into it and the reserve is made there again, until it
-- is served or the other buckets have none to give.  Found short only when
-- every bucket answered.
CREATE OR REPLACE FUNCTION inventory._reserve_split(sku text, qty bigint, order_id text, batch_id integer,
													ttl interval, expected_version bigint, buyer_id text,
													parts integer[])
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
DECLARE
	home integer;
	part integer;
	moved bigint;
	r inventory.result;
BEGIN
	IF _reserve_split.expected_version IS NOT NULL THEN
		RAISE EXCEPTION 'expected_version cannot be checked on a split SKU'
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = pg_catalog.format('"%s" is split into %s buckets, each with a version of its own.',
											 _reserve_split.sku, pg_catalog.cardinality(parts)),
				  HINT = 'Reserve without expected_version, or merge the SKU with inventory.merge().';
	END IF;
	home := inventory._home(parts, coalesce(_reserve_split.buyer_id, _reserve_split.order_id));
	part := inventory._key_part(_reserve_split.sku, _reserve_split.order_id, _reserve_split.batch_id,
								coalesce(_reserve_split.buyer_id, _reserve_split.order_id), home);
	r := inventory._reserve_at(part, _reserve_split.sku, _reserve_split.qty, _reserve_split.order_id,
							   _reserve_split.batch_id, _reserve_split.ttl, NULL, _reserve_split.buyer_id);
	IF part <> home OR r.status NOT IN ('insufficient', 'unknown_sku') THEN
		RETURN r;
	END IF;
	-- Found short in every bucket by this session a moment ago: a sold-out
	-- SKU costs one call per refusal, as unsplit (see _reserve_short).
	IF r.status = 'insufficient'
	   AND pg_catalog.current_setting('inventory_router.short_sku', true) = _reserve_split.sku
	   AND pg_catalog.current_setting('inventory_router.short_until', true)::float8
		   > pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) THEN
		RETURN r;
	END IF;
	-- Falling through: each round moves what is missing, until the bucket
	-- serves the call or no other bucket has units to give.  Another
	-- reserve of the bucket may take the units moved in before this one
	-- does; then the next round moves more, a bounded number of times.
	FOR attempt IN 1 .. 4 * pg_catalog.cardinality(parts) LOOP
		moved := inventory._top_up(_reserve_split.sku, home,
								   _reserve_split.qty - greatest(coalesce(r.available, 0), 0));
		IF moved IS NULL THEN
			-- a bucket did not answer: not known to be short, not remembered
			EXIT;
		ELSIF moved = 0 THEN
			PERFORM inventory._reserve_short(_reserve_split.sku);
			EXIT;
		END IF;
		r := inventory._reserve_at(home, _reserve_split.sku, _reserve_split.qty, _reserve_split.order_id,
								   _reserve_split.batch_id, _reserve_split.ttl, NULL, _reserve_split.buyer_id);
		EXIT WHEN r.status NOT IN ('insufficient', 'unknown_sku');
	END LOOP;
	IF r.status = 'unknown_sku' THEN
		-- a bucket that never received units: the SKU exists, sold out
		r := ROW(false, 'insufficient', _reserve_split.sku, _reserve_split.qty, NULL, 0, NULL, NULL);
	END IF;
	RETURN r;
END
$$;

CREATE OR REPLACE FUNCTION inventory._cart_top_up(part integer, skus text[], qtys bigint[],
												  answers inventory.result[])
	RETURNS boolean
	LANGUAGE plpgsql
	AS $$
DECLARE
	l record;
	moved bigint := 0;
BEGIN
	FOR l IN SELECT x.sku, pg_catalog.sum(x.qty)::bigint AS demand,
					pg_catalog.min(coalesce(a.available, 0)) AS available
			   FROM ROWS FROM (pg_catalog.unnest(skus), pg_catalog.unnest(qtys)) WITH ORDINALITY x(sku, qty, i)
			   JOIN pg_catalog.unnest(answers) WITH ORDINALITY a ON a.ordinality = x.i
			  GROUP BY x.sku
			 HAVING pg_catalog.bool_or(a.status IN ('insufficient', 'unknown_sku'))
	LOOP
		IF inventory._bucket_parts(l.sku) IS NOT NULL THEN
			moved := moved + coalesce(inventory._top_up(l.sku, part, l.demand - l.available), 0);
		END IF;
	END LOOP;
	RETURN moved > 0;
END
$$;

REVOKE EXECUTE ON FUNCTION
	inventory._transfer(text, integer, integer, bigint, boolean),
	inventory._transfer_rows(integer[], text),
	inventory._finish_transfers(text, boolean),
	inventory._available_each(integer[], text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
	inventory._transfer(text, integer, integer, bigint, boolean),
	inventory._transfer_rows(integer[], text),
	inventory._finish_transfers(text, boolean),
	inventory._available_each(integer[], text)
TO inventory_admin;

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
			FOR t IN SELECT * FROM inventory._transfer_rows(ARRAY[i], NULL) LOOP
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
	'units withdrawn from the partition by a transfer between buckets and not yet restocked on the other side; a later fall-through of the SKU, or rebalance() of it, finishes it';
COMMENT ON COLUMN inventory.nodes.transit_unknown IS
	'units withdrawn from the partition by transfers toward a partition that did not answer now: whether they arrived is not known until it does';

REVOKE ALL ON inventory.nodes FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION inventory.nodes() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.nodes() TO inventory_admin;
GRANT SELECT ON inventory.nodes TO inventory_admin;

------------------------------------------------------------------------------
-- The reconciler of every node
------------------------------------------------------------------------------

-- The function, as each node resolves its signature: an error from the
-- first node that does not answer or does not have it.
CREATE FUNCTION inventory._reconciler_check_all(fn text)
	RETURNS SETOF text
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	SELECT fn::regprocedure::text;
$$;
COMMENT ON FUNCTION inventory._reconciler_check_all(text) IS
	'the reconciler function as every node resolves it; the error of a node that does not answer or lacks it';

CREATE FUNCTION inventory._set_reconciler_all(fn text, timeout interval, retry interval,
												max_asks integer, max_wait interval)
	RETURNS SETOF integer
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	SELECT 1 FROM inventory.set_reconciler(fn::regprocedure, timeout, retry, max_asks, max_wait);
$$;
COMMENT ON FUNCTION inventory._set_reconciler_all(text, interval, interval, integer, interval) IS
	'set_reconciler() on every node';

-- set_reconciler() on every node, by the function's signature: first
-- every node is asked (reading only) whether it answers and has the
-- function, so that a node that is down fails the call before anything
-- is set.
CREATE FUNCTION inventory.set_reconciler(fn text,
										  timeout interval DEFAULT NULL,
										  retry interval DEFAULT NULL,
										  max_asks integer DEFAULT NULL,
										  max_wait interval DEFAULT NULL)
	RETURNS void
	LANGUAGE plpgsql
	AS $$
BEGIN
	PERFORM inventory._reconciler_check_all(fn);
	PERFORM inventory._set_reconciler_all(fn, timeout, retry, max_asks, max_wait);
END
$$;
COMMENT ON FUNCTION inventory.set_reconciler(text, interval, interval, integer, interval) IS
	'set_reconciler() on every node, by the function''s signature (text: each node resolves it), with the same timing; fails, having set nothing, when a node does not answer or lacks the function; NULL removes it';

-- stop_worker() on every node
CREATE FUNCTION inventory._stop_worker_all()
	RETURNS SETOF boolean
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	SELECT inventory.stop_worker();
$$;
COMMENT ON FUNCTION inventory._stop_worker_all() IS 'stop_worker() on every node';

CREATE FUNCTION inventory.stop_worker() RETURNS boolean
	LANGUAGE sql
	AS $$ SELECT coalesce(pg_catalog.bool_or(s), false) FROM inventory._stop_worker_all() s $$;
COMMENT ON FUNCTION inventory.stop_worker() IS
	'stop_worker() on every node: ends the background worker serving each node''s database now, if one does (true if any did)';

REVOKE EXECUTE ON FUNCTION
	inventory._reconciler_check_all(text),
	inventory._set_reconciler_all(text, interval, interval, integer, interval),
	inventory.set_reconciler(text, interval, interval, integer, interval),
	inventory._stop_worker_all(),
	inventory.stop_worker()
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
	inventory._reconciler_check_all(text),
	inventory._set_reconciler_all(text, interval, interval, integer, interval),
	inventory.set_reconciler(text, interval, interval, integer, interval),
	inventory._stop_worker_all(),
	inventory.stop_worker()
TO inventory_admin;

------------------------------------------------------------------------------
-- inventory_monitor: reads every figure of the router and writes nothing,
-- as on a node.  Like inventory_app and inventory_admin, it also needs
-- USAGE on the server inventory_cluster, which the administrator grants.
-- The helpers run as the caller, so it has those of the reads alone:
-- nothing that reserves, settles, restocks, withdraws, moves units
-- between buckets, expires, folds or resets.
------------------------------------------------------------------------------

DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'inventory_monitor') THEN
		CREATE ROLE inventory_monitor NOLOGIN;
	END IF;
END
$$;

GRANT EXECUTE ON FUNCTION
	inventory.available(text),
	inventory.sku_stats(),
	inventory.verify(),
	inventory.nodes(),
	inventory.partitions(),
	inventory.partition_of(text),
	inventory.sku_hash(text),
	inventory._null_argument(text),
	inventory._part_of_hash(integer),
	inventory._stock(),
	inventory._available(text),
	inventory._available_at(integer[], text),
	inventory._bucket_parts(text),
	inventory._sku_parts(text),
	inventory._conninfo_value(text, text),
	inventory._node_info(integer),
	inventory._transfer_rows(integer[], text)
TO inventory_monitor;
GRANT SELECT ON inventory.stock, inventory.sku_stats, inventory.nodes, inventory.buckets,
	inventory.bucket_layout
TO inventory_monitor;

------------------------------------------------------------------------------
-- verify(wait) of every node
------------------------------------------------------------------------------

CREATE FUNCTION inventory.verify(wait interval)
	RETURNS TABLE (sku text, what text, cached bigint, truth bigint)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
$$;
COMMENT ON FUNCTION inventory.verify(interval) IS
	'verify(wait) of every node: waits on each node up to wait for SKUs with changes in flight; a node''s error names those still busy';
REVOKE EXECUTE ON FUNCTION inventory.verify(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.verify(interval) TO inventory_admin, inventory_monitor;

------------------------------------------------------------------------------
-- reservation(): the lines of an order, from the partitions of its SKU, or
-- from every partition when the call names no SKU
------------------------------------------------------------------------------

CREATE TYPE inventory.reservation_line AS (
	order_id	text,
	batch_id	integer,
	sku			text,
	qty			bigint,
	state		inventory.state,
	created_at	timestamptz,
	expires_at	timestamptz,
	settled_at	timestamptz,
	settled_by	text
);
COMMENT ON TYPE inventory.reservation_line IS
	'a reservation as inventory.reservation() answers it, as the node''s';
COMMENT ON COLUMN inventory.reservation_line.order_id IS 'the order''s key, as reserve() was given it';
COMMENT ON COLUMN inventory.reservation_line.batch_id IS 'the line of the order';
COMMENT ON COLUMN inventory.reservation_line.sku IS 'the SKU reserved';
COMMENT ON COLUMN inventory.reservation_line.qty IS 'units reserved';
COMMENT ON COLUMN inventory.reservation_line.state IS 'PENDING, CONFIRMED, CANCELLED or EXPIRED';
COMMENT ON COLUMN inventory.reservation_line.created_at IS 'when the reservation was made';
COMMENT ON COLUMN inventory.reservation_line.expires_at IS 'when it expires unless confirmed or cancelled (or extended)';
COMMENT ON COLUMN inventory.reservation_line.settled_at IS 'when it left PENDING; NULL while PENDING';
COMMENT ON COLUMN inventory.reservation_line.settled_by IS 'what settled it: call (confirm or cancel), expiry, reconciler (its answer applied) or statement (an UPDATE by hand); NULL while PENDING and for reservations settled before 0.3';

CREATE FUNCTION inventory._reservation_lines(parts integer[], key_order text, key_batch integer,
											 key_sku text)
	RETURNS SETOF inventory.reservation_line
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT parts;
	RUN ON parts;
	SELECT r.* FROM inventory.reservation(key_order, key_batch) r
	 WHERE key_sku IS NULL OR r.sku = key_sku;
$$;
COMMENT ON FUNCTION inventory._reservation_lines(integer[], text, integer, text) IS
	'reservation() on these partitions (sku NULL: lines of any SKU)';

CREATE FUNCTION inventory.reservation(order_id text, batch_id integer DEFAULT NULL,
									  sku text DEFAULT NULL)
	RETURNS SETOF inventory.reservation_line
	LANGUAGE sql ROWS 5
	AS $$
	SELECT * FROM inventory._reservation_lines(
		CASE WHEN $3 IS NULL THEN inventory._every_part() ELSE inventory._parts_of($3) END,
		$1, $2, $3)
	 ORDER BY batch_id, sku
$$;
COMMENT ON FUNCTION inventory.reservation(text, integer, text) IS
	'the reservations of an order (batch_id NULL: every line) from the nodes: those of the SKU''s partitions, or every partition when sku is NULL';

REVOKE EXECUTE ON FUNCTION
	inventory._reservation_lines(integer[], text, integer, text),
	inventory.reservation(text, integer, text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
	inventory._reservation_lines(integer[], text, integer, text),
	inventory.reservation(text, integer, text)
TO inventory_app;

------------------------------------------------------------------------------
-- inventory.stock's on_sale, as the node's: at the router's statement time
------------------------------------------------------------------------------

CREATE OR REPLACE VIEW inventory.stock AS
SELECT s.sku, pg_catalog.sum(s.on_hand)::bigint AS on_hand,
	   pg_catalog.sum(s.reserved)::bigint AS reserved,
	   pg_catalog.sum(s.available)::bigint AS available,
	   pg_catalog.sum(s.version)::bigint AS version,
	   pg_catalog.max(s.max_per_buyer) AS max_per_buyer,
	   pg_catalog.max(s.sale_starts) AS sale_starts,
	   pg_catalog.max(s.sale_ends) AS sale_ends,
	   (pg_catalog.max(s.sale_starts) IS NULL
		OR pg_catalog.max(s.sale_starts) OPERATOR(pg_catalog.<=) pg_catalog.statement_timestamp())
	   AND (pg_catalog.max(s.sale_ends) IS NULL
			OR pg_catalog.statement_timestamp() OPERATOR(pg_catalog.<) pg_catalog.max(s.sale_ends)) AS on_sale
  FROM inventory._stock() s
 GROUP BY s.sku;
COMMENT ON COLUMN inventory.stock.on_sale IS
	'whether the SKU is within its sale window at the statement''s time, as the node judges a call (whatever its units)';

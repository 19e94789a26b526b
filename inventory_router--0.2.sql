/* inventory_router--0.2.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION inventory_router" to load this file. \quit

-- The router: the node's API in schema inventory, in a database of its own,
-- each call routed over PL/Proxy to the node that owns its SKU.  The nodes
-- are the partitions of the SQL/MED server inventory_cluster, which the
-- administrator creates (it holds connection strings and passwords):
--
--   CREATE SERVER inventory_cluster FOREIGN DATA WRAPPER plproxy
--       OPTIONS (p0 'dbname=inv_p0 host=...', p1 '...', ...);
--   CREATE USER MAPPING FOR PUBLIC SERVER inventory_cluster OPTIONS (user '...');
--   GRANT USAGE ON FOREIGN SERVER inventory_cluster TO inventory_app, inventory_admin;
--
-- The functions find the cluster by name at call time, so they can be
-- created first, and ALTER SERVER (a partition moved to another server) is
-- seen by every session at its next call.
--
-- What PL/Proxy does and does not do shapes this file:
--   * A SKU lives on partition hashtext(sku) & (partitions - 1).
--   * Every value crosses as text (PL/Proxy's binary transfer is off), so
--     the router needs no module: its inventory.state is an enum with the
--     node's labels, and inventory.result matches the node's row.
--   * Arguments are written out in the router session's formats, so every
--     function that sends a date, time or interval pins DateStyle and
--     IntervalStyle to formats every node reads the same way.
--   * Each call is its own transaction on its node, committed when the call
--     returns: a router transaction is not a node transaction.
--   * A call to several partitions (RUN ON ALL) returns their rows one
--     partition after the other; where the caller's order matters, each
--     element carries its place and the rows are put back in order.

DO $$
BEGIN
	IF EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname OPERATOR(pg_catalog.=) 'inventory') THEN
		RAISE EXCEPTION 'inventory_router cannot be installed in a database that has the extension inventory'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'Both extensions own the schema inventory with the same functions.',
				  HINT = 'The router and the nodes are different databases: create inventory_router in a database of its own, and inventory in each partition database.';
	END IF;
END
$$;

------------------------------------------------------------------------------
-- Types: the node's, as the router receives them
------------------------------------------------------------------------------

-- The node's inventory.state is a C base type; its text output is the
-- upper-case name, which this enum accepts.  Enum labels sort in the order
-- they are declared: lifecycle order, as on the node.
CREATE TYPE inventory.state AS ENUM ('PENDING', 'CONFIRMED', 'CANCELLED', 'EXPIRED');
COMMENT ON TYPE inventory.state IS
	'state of a reservation, in lifecycle order: PENDING, CONFIRMED, CANCELLED, EXPIRED (on the router, an enum: upper-case input only)';

CREATE FUNCTION inventory.is_final(inventory.state) RETURNS boolean
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT $1 OPERATOR(pg_catalog.<>) 'PENDING'::inventory.state $$;
COMMENT ON FUNCTION inventory.is_final(inventory.state) IS
	'whether a state is final (CONFIRMED, CANCELLED, EXPIRED): nothing ever leaves it';

CREATE FUNCTION inventory.can_transition(from_state inventory.state, to_state inventory.state)
	RETURNS boolean
	LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
	AS $$ SELECT $1 OPERATOR(pg_catalog.=) 'PENDING'::inventory.state AND inventory.is_final($2) $$;
COMMENT ON FUNCTION inventory.can_transition(inventory.state, inventory.state) IS
	'whether a reservation may go from one state to the other: PENDING to any final state, and nothing else';

CREATE TYPE inventory.result AS (
	ok			boolean,
	status		text,
	sku			text,
	qty			bigint,
	state		inventory.state,
	available	bigint,
	version		bigint,
	expires_at	timestamptz
);
COMMENT ON TYPE inventory.result IS
	'outcome of reserve, confirm, cancel, extend, restock, withdraw and adjust, as the node answered it';
COMMENT ON COLUMN inventory.result.ok IS
	'whether the caller''s intent now holds, made now or by an earlier call with the same key';
COMMENT ON COLUMN inventory.result.status IS
	'what happened: ok, duplicate, insufficient, unknown_sku, version_conflict, not_on_sale, buyer_required, limit_exceeded, cart_refused, not_found, expired, cancelled or confirmed';
COMMENT ON COLUMN inventory.result.sku IS 'the SKU of the movement; NULL for not_found';
COMMENT ON COLUMN inventory.result.qty IS 'units of the movement; for adjust, the on_hand counted';
COMMENT ON COLUMN inventory.result.state IS 'the reservation''s state after the call; NULL where there is none';
COMMENT ON COLUMN inventory.result.available IS
	'units available at the call on the SKU''s node, from its shared memory (holds in flight counted); NULL when the SKU does not exist';
COMMENT ON COLUMN inventory.result.version IS 'the SKU''s last committed version at the call';
COMMENT ON COLUMN inventory.result.expires_at IS 'the reservation''s expiry, by the node''s clock; NULL where there is none';

------------------------------------------------------------------------------
-- Where a SKU lives
------------------------------------------------------------------------------

CREATE FUNCTION inventory._null_argument(name text) RETURNS integer
	LANGUAGE plpgsql VOLATILE
	AS $$
BEGIN
	RAISE EXCEPTION '% must not be null', name USING ERRCODE = 'null_value_not_allowed';
END
$$;
COMMENT ON FUNCTION inventory._null_argument(text) IS
	'raises the node''s error for a NULL argument (22004); used by sku_hash()';

-- The hash PL/Proxy maps to a partition.  hashtext(NULL) would fail inside
-- PL/Proxy with an internal error (XX000); a NULL SKU gets the node's 22004
-- instead.  A plain SQL function, so that the planner inlines it into
-- PL/Proxy's "select * from inventory.sku_hash($1)": a SKU costs the same
-- as hashtext() alone, and only a NULL calls the PL/pgSQL function.  Not
-- IMMUTABLE: that would forbid inlining a body that can raise.
CREATE FUNCTION inventory.sku_hash(sku text) RETURNS integer
	LANGUAGE sql PARALLEL SAFE
	AS $$
	SELECT CASE WHEN $1 IS NULL THEN inventory._null_argument('sku')
				ELSE pg_catalog.hashtext($1) END
$$;
COMMENT ON FUNCTION inventory.sku_hash(text) IS
	'the hash that places a SKU on a partition (hashtext); ERROR 22004 for NULL';

CREATE FUNCTION inventory.partitions() RETURNS integer
	LANGUAGE sql STABLE PARALLEL SAFE
	AS $$
	SELECT pg_catalog.count(*)::integer
	  FROM pg_catalog.pg_foreign_server s,
		   pg_catalog.pg_options_to_table(s.srvoptions) o
	 WHERE s.srvname OPERATOR(pg_catalog.=) 'inventory_cluster'
	   AND o.option_name OPERATOR(pg_catalog.~) '^p[0-9]+$'
$$;
COMMENT ON FUNCTION inventory.partitions() IS
	'the number of partitions of the server inventory_cluster (its options p0, p1, ...)';

-- As PL/Proxy maps a hash: bits of it (a power of two partitions), or the
-- remainder with the server option modular_mapping.
CREATE FUNCTION inventory.partition_of(sku text) RETURNS integer
	LANGUAGE sql STABLE PARALLEL SAFE
	AS $$
	SELECT CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_foreign_server s,
										 pg_catalog.pg_options_to_table(s.srvoptions) o
								WHERE s.srvname OPERATOR(pg_catalog.=) 'inventory_cluster'
								  AND o.option_name OPERATOR(pg_catalog.=) 'modular_mapping'
								  AND o.option_value OPERATOR(pg_catalog.=) '1')
				THEN pg_catalog.abs(inventory.sku_hash($1) OPERATOR(pg_catalog.%) n)
				ELSE inventory.sku_hash($1) OPERATOR(pg_catalog.&) (n OPERATOR(pg_catalog.-) 1) END
	  FROM (SELECT inventory.partitions() AS n) p
$$;
COMMENT ON FUNCTION inventory.partition_of(text) IS
	'the partition that owns a SKU: the one PL/Proxy routes its calls to';

------------------------------------------------------------------------------
-- Routed by SKU: one call to one node, the node's function of the same
-- name, with the same arguments.  Plain PL/Proxy functions, no wrapper.
------------------------------------------------------------------------------

CREATE FUNCTION inventory.reserve(sku text, qty bigint, order_id text,
								  batch_id integer DEFAULT 1,
								  ttl interval DEFAULT NULL,
								  expected_version bigint DEFAULT NULL,
								  buyer_id text DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
$$;
COMMENT ON FUNCTION inventory.reserve(text, bigint, text, integer, interval, bigint, text) IS
	'hold qty units of sku for (order_id, batch_id) until confirm, cancel or expiry, on the SKU''s node';

CREATE FUNCTION inventory.restock(sku text, qty bigint, order_id text,
								  batch_id integer DEFAULT 1)
	RETURNS inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
$$;
COMMENT ON FUNCTION inventory.restock(text, bigint, text, integer) IS
	'add qty units to sku on its node, creating the SKU on first use';

CREATE FUNCTION inventory.adjust(sku text, on_hand bigint, order_id text,
								 batch_id integer DEFAULT 1,
								 expected_version bigint DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
$$;
COMMENT ON FUNCTION inventory.adjust(text, bigint, text, integer, bigint) IS
	'stocktake: set the on_hand of sku to a counted value, on its node';

CREATE FUNCTION inventory.withdraw(sku text, qty bigint, order_id text,
								   batch_id integer DEFAULT 1)
	RETURNS inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
$$;
COMMENT ON FUNCTION inventory.withdraw(text, bigint, text, integer) IS
	'take qty available units of sku out of on_hand for good, on its node; insufficient when fewer are available';

CREATE FUNCTION inventory.available(sku text) RETURNS bigint
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
$$;
COMMENT ON FUNCTION inventory.available(text) IS
	'units of sku available now, from its node''s shared memory';

-- The node's set_rules returns void, which PL/Proxy cannot receive: ask
-- for a constant after the call.
CREATE FUNCTION inventory._set_rules(sku text, max_per_buyer bigint,
									 sale_starts timestamptz, sale_ends timestamptz)
	RETURNS integer
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
	SELECT 1 AS done FROM inventory.set_rules(sku, max_per_buyer, sale_starts, sale_ends);
$$;
COMMENT ON FUNCTION inventory._set_rules(text, bigint, timestamptz, timestamptz) IS
	'set_rules() on the SKU''s node';

CREATE FUNCTION inventory.set_rules(sku text, max_per_buyer bigint DEFAULT NULL,
									sale_starts timestamptz DEFAULT NULL,
									sale_ends timestamptz DEFAULT NULL)
	RETURNS void
	LANGUAGE sql
	AS $$ SELECT FROM inventory._set_rules($1, $2, $3, $4) $$;
COMMENT ON FUNCTION inventory.set_rules(text, bigint, timestamptz, timestamptz) IS
	'set the rules of sku on its node (NULL: no such rule), replacing those it had';

------------------------------------------------------------------------------
-- confirm, cancel, extend: the node's arguments and a last sku.  With the
-- SKU, one call to its node.  Without it, every node is asked and the one
-- that knows the key answers: one call per node, and the keys must be
-- unique in the whole cluster for the answer to be one reservation's.
------------------------------------------------------------------------------

-- The answer of the one node that knows a key, from every node's answer.
-- Two or more knowing it means the key is not unique across the cluster;
-- each of them has done the call by then, which the error says.
CREATE FUNCTION inventory._answer_of_one(answers inventory.result[], op text,
										 order_id text, batch_id integer)
	RETURNS inventory.result
	LANGUAGE plpgsql STABLE
	AS $$
DECLARE
	r inventory.result;
	found inventory.result;
	n integer := 0;
BEGIN
	FOREACH r IN ARRAY answers LOOP
		IF r.status OPERATOR(pg_catalog.<>) 'not_found' THEN
			n := n + 1;
			found := r;
		END IF;
	END LOOP;
	IF n > 1 THEN
		RAISE EXCEPTION 'key (%, %) is known on % partitions', order_id, batch_id, n
			USING ERRCODE = 'cardinality_violation',
				  DETAIL = pg_catalog.format('Without a SKU, %s was done on each of them.', op),
				  HINT = 'Keys must be unique across the cluster; pass the sku to reach its node only.';
	END IF;
	IF n = 1 THEN
		RETURN found;
	END IF;
	RETURN ROW(false, 'not_found', NULL, NULL, NULL, NULL, NULL, NULL)::inventory.result;
END
$$;
COMMENT ON FUNCTION inventory._answer_of_one(inventory.result[], text, text, integer) IS
	'the answer of the one node that knows a key; ERROR 21000 when several do';

CREATE FUNCTION inventory._confirm_on(order_id text, batch_id integer, sku text)
	RETURNS inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
	SELECT * FROM inventory.confirm(order_id, batch_id);
$$;
COMMENT ON FUNCTION inventory._confirm_on(text, integer, text) IS 'confirm() on the node of sku';

CREATE FUNCTION inventory._confirm_all(order_id text, batch_id integer)
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	TARGET inventory.confirm;
$$;
COMMENT ON FUNCTION inventory._confirm_all(text, integer) IS 'confirm() on every node';

CREATE FUNCTION inventory.confirm(order_id text, batch_id integer DEFAULT 1,
								  sku text DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
BEGIN
	IF confirm.sku IS NOT NULL THEN
		RETURN inventory._confirm_on(confirm.order_id, confirm.batch_id, confirm.sku);
	END IF;
	RETURN inventory._answer_of_one(
		ARRAY(SELECT a FROM inventory._confirm_all(confirm.order_id, confirm.batch_id) a),
		'confirm', confirm.order_id, confirm.batch_id);
END
$$;
COMMENT ON FUNCTION inventory.confirm(text, integer, text) IS
	'confirm a PENDING reservation: its units leave on_hand; with sku, on its node, else on the node that knows the key';

CREATE FUNCTION inventory._cancel_on(order_id text, batch_id integer, sku text)
	RETURNS inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
	SELECT * FROM inventory.cancel(order_id, batch_id);
$$;
COMMENT ON FUNCTION inventory._cancel_on(text, integer, text) IS 'cancel() on the node of sku';

CREATE FUNCTION inventory._cancel_all(order_id text, batch_id integer)
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	TARGET inventory.cancel;
$$;
COMMENT ON FUNCTION inventory._cancel_all(text, integer) IS 'cancel() on every node';

CREATE FUNCTION inventory.cancel(order_id text, batch_id integer DEFAULT 1,
								 sku text DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
BEGIN
	IF cancel.sku IS NOT NULL THEN
		RETURN inventory._cancel_on(cancel.order_id, cancel.batch_id, cancel.sku);
	END IF;
	RETURN inventory._answer_of_one(
		ARRAY(SELECT a FROM inventory._cancel_all(cancel.order_id, cancel.batch_id) a),
		'cancel', cancel.order_id, cancel.batch_id);
END
$$;
COMMENT ON FUNCTION inventory.cancel(text, integer, text) IS
	'cancel a PENDING reservation: its units go back on sale; with sku, on its node, else on the node that knows the key';

CREATE FUNCTION inventory._extend_on(order_id text, batch_id integer, ttl interval, sku text)
	RETURNS inventory.result
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
	SELECT * FROM inventory.extend(order_id, batch_id, ttl);
$$;
COMMENT ON FUNCTION inventory._extend_on(text, integer, interval, text) IS 'extend() on the node of sku';

CREATE FUNCTION inventory._extend_all(order_id text, batch_id integer, ttl interval)
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	TARGET inventory.extend;
$$;
COMMENT ON FUNCTION inventory._extend_all(text, integer, interval) IS 'extend() on every node';

CREATE FUNCTION inventory.extend(order_id text, batch_id integer, ttl interval,
								 sku text DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
BEGIN
	IF extend.sku IS NOT NULL THEN
		RETURN inventory._extend_on(extend.order_id, extend.batch_id, extend.ttl, extend.sku);
	END IF;
	RETURN inventory._answer_of_one(
		ARRAY(SELECT a FROM inventory._extend_all(extend.order_id, extend.batch_id, extend.ttl) a),
		'extend', extend.order_id, extend.batch_id);
END
$$;
COMMENT ON FUNCTION inventory.extend(text, integer, interval, text) IS
	'move the expiry of a PENDING reservation to now + ttl; with sku, on its node, else on the node that knows the key';

------------------------------------------------------------------------------
-- Orders: every node is asked, those without a line of the order answer
-- one not_found row, which is kept only when no node knows the order
------------------------------------------------------------------------------

CREATE FUNCTION inventory._confirm_order_all(order_id text)
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	TARGET inventory.confirm_order;
$$;
COMMENT ON FUNCTION inventory._confirm_order_all(text) IS 'confirm_order() on every node';

CREATE FUNCTION inventory._cancel_order_all(order_id text)
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	TARGET inventory.cancel_order;
$$;
COMMENT ON FUNCTION inventory._cancel_order_all(text) IS 'cancel_order() on every node';

CREATE FUNCTION inventory._order_rows(answers inventory.result[])
	RETURNS SETOF inventory.result
	LANGUAGE sql IMMUTABLE
	AS $$
	SELECT r.ok, r.status, r.sku, r.qty, r.state, r.available, r.version, r.expires_at
	  FROM pg_catalog.unnest(answers) WITH ORDINALITY r
	 WHERE r.status OPERATOR(pg_catalog.<>) 'not_found'
	 ORDER BY r.ordinality
$$;
COMMENT ON FUNCTION inventory._order_rows(inventory.result[]) IS
	'the rows of the nodes that know an order, in the order they came';

CREATE FUNCTION inventory.confirm_order(order_id text)
	RETURNS SETOF inventory.result
	LANGUAGE plpgsql ROWS 5
	AS $$
DECLARE
	answers inventory.result[] :=
		ARRAY(SELECT a FROM inventory._confirm_order_all(confirm_order.order_id) a);
BEGIN
	RETURN QUERY SELECT * FROM inventory._order_rows(answers);
	IF NOT FOUND THEN
		RETURN NEXT ROW(false, 'not_found', NULL, NULL, NULL, NULL, NULL, NULL)::inventory.result;
	END IF;
END
$$;
COMMENT ON FUNCTION inventory.confirm_order(text) IS
	'confirm every reservation of order_id on every node, as confirm() would; one result row each, node after node';

CREATE FUNCTION inventory.cancel_order(order_id text)
	RETURNS SETOF inventory.result
	LANGUAGE plpgsql ROWS 5
	AS $$
DECLARE
	answers inventory.result[] :=
		ARRAY(SELECT a FROM inventory._cancel_order_all(cancel_order.order_id) a);
BEGIN
	RETURN QUERY SELECT * FROM inventory._order_rows(answers);
	IF NOT FOUND THEN
		RETURN NEXT ROW(false, 'not_found', NULL, NULL, NULL, NULL, NULL, NULL)::inventory.result;
	END IF;
END
$$;
COMMENT ON FUNCTION inventory.cancel_order(text) IS
	'cancel every reservation of order_id on every node, as cancel() would; one result row each, node after node';

------------------------------------------------------------------------------
-- Batches: each node gets the elements whose SKU it owns (SPLIT), in one
-- call and one transaction of its own
------------------------------------------------------------------------------

-- ord is each element's place in the caller's arrays: the nodes' rows come
-- partition after partition, and are put back in the caller's order.
CREATE FUNCTION inventory._reserve_many(ords integer[], skus text[], qtys bigint[],
										order_ids text[], ttl interval, buyer_ids text[])
	RETURNS TABLE (ord integer, ok boolean, status text, sku text, qty bigint,
				   state inventory.state, available bigint, version bigint,
				   expires_at timestamptz)
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT ords, skus, qtys, order_ids, buyer_ids;
	RUN ON inventory.sku_hash(skus);
	SELECT x.o AS ord, r.ok, r.status, r.sku, r.qty, r.state, r.available, r.version, r.expires_at
	  FROM inventory.reserve_many(skus, qtys, order_ids, ttl, buyer_ids) WITH ORDINALITY r
	  JOIN pg_catalog.unnest(ords) WITH ORDINALITY x(o, n) ON x.n OPERATOR(pg_catalog.=) r.ordinality;
$$;
COMMENT ON FUNCTION inventory._reserve_many(integer[], text[], bigint[], text[], interval, text[]) IS
	'reserve_many() of each node''s elements, each row with its place in the caller''s arrays';

-- The arrays are checked here, as the node would, because the split would
-- otherwise fail with PL/Proxy's internal error.
CREATE FUNCTION inventory._check_arrays(names text, lengths integer[], dims integer[])
	RETURNS integer
	LANGUAGE plpgsql IMMUTABLE
	AS $$
DECLARE
	n integer := coalesce(lengths[1], 0);
BEGIN
	IF EXISTS (SELECT FROM pg_catalog.unnest(dims) d WHERE d OPERATOR(pg_catalog.>) 1) THEN
		RAISE EXCEPTION '% must be one-dimensional arrays', names
			USING ERRCODE = 'array_subscript_error';
	END IF;
	IF EXISTS (SELECT FROM pg_catalog.unnest(lengths) l
				WHERE coalesce(l, 0) OPERATOR(pg_catalog.<>) n) THEN
		RAISE EXCEPTION '% must have the same number of elements', names
			USING ERRCODE = 'array_subscript_error',
				  DETAIL = pg_catalog.format('They have %s elements.',
											 pg_catalog.array_to_string(lengths, ', ', '0'));
	END IF;
	RETURN n;
END
$$;
COMMENT ON FUNCTION inventory._check_arrays(text, integer[], integer[]) IS
	'ERROR 2202E unless the arrays are one-dimensional and of one length; returns it';

-- What each element must be, checked before anything is sent: a part that
-- one node refuses with an error could otherwise be reserved on the others
-- (each node's part is its own transaction).  The node checks the same.
CREATE FUNCTION inventory._check_elements(skus text[], qtys bigint[], order_ids text[],
										  buyer_ids text[])
	RETURNS void
	LANGUAGE plpgsql IMMUTABLE
	AS $$
DECLARE
	k integer;
	q bigint;
	a record;
BEGIN
	k := pg_catalog.array_position(skus, NULL);
	IF k IS NOT NULL THEN
		RAISE EXCEPTION 'skus must not contain nulls' USING ERRCODE = 'null_value_not_allowed',
			DETAIL = pg_catalog.format('Element %s is null.', k);
	END IF;
	k := pg_catalog.array_position(qtys, NULL);
	IF k IS NOT NULL THEN
		RAISE EXCEPTION 'qtys must not contain nulls' USING ERRCODE = 'null_value_not_allowed',
			DETAIL = pg_catalog.format('Element %s is null.', k);
	END IF;
	k := pg_catalog.array_position(order_ids, NULL);
	IF k IS NOT NULL THEN
		RAISE EXCEPTION 'order_ids must not contain nulls' USING ERRCODE = 'null_value_not_allowed',
			DETAIL = pg_catalog.format('Element %s is null.', k);
	END IF;
	SELECT i, x INTO k, q FROM pg_catalog.unnest(qtys) WITH ORDINALITY AS u(x, i)
	 WHERE x OPERATOR(pg_catalog.<=) 0 ORDER BY i LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'every element of qtys must be positive' USING ERRCODE = 'invalid_parameter_value',
			DETAIL = pg_catalog.format('Element %s is %s.', k, q);
	END IF;
	FOR a IN SELECT * FROM (VALUES ('skus', skus, 63), ('order_ids', order_ids, 255),
								   ('buyer_ids', buyer_ids, 255)) v(name, elems, max_bytes) LOOP
		SELECT i, pg_catalog.octet_length(x) INTO k, q
		  FROM pg_catalog.unnest(a.elems) WITH ORDINALITY AS u(x, i)
		 WHERE x OPERATOR(pg_catalog.=) '' OR pg_catalog.octet_length(x) OPERATOR(pg_catalog.>) a.max_bytes
		 ORDER BY i LIMIT 1;
		IF FOUND AND q = 0 THEN
			RAISE EXCEPTION 'the elements of % must not be empty', a.name
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = pg_catalog.format('Element %s is empty.', k);
		ELSIF FOUND THEN
			RAISE EXCEPTION 'an element of % is too long', a.name
				USING ERRCODE = 'string_data_right_truncation',
					  DETAIL = pg_catalog.format('Element %s has %s bytes; at most %s are allowed.', k, q, a.max_bytes);
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION inventory._check_elements(text[], bigint[], text[], text[]) IS
	'the node''s checks of the elements of a batch or a cart, made before any node is asked';

CREATE FUNCTION inventory.reserve_many(skus text[], qtys bigint[], order_ids text[],
									   ttl interval DEFAULT NULL,
									   buyer_ids text[] DEFAULT NULL)
	RETURNS SETOF inventory.result
	LANGUAGE plpgsql ROWS 50
	AS $$
DECLARE
	n integer;
BEGIN
	IF skus IS NULL OR qtys IS NULL OR order_ids IS NULL THEN
		RAISE EXCEPTION '% must not be null',
			CASE WHEN skus IS NULL THEN 'skus' WHEN qtys IS NULL THEN 'qtys' ELSE 'order_ids' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	n := inventory._check_arrays(
		CASE WHEN buyer_ids IS NULL THEN 'skus, qtys and order_ids'
			 ELSE 'skus, qtys, order_ids and buyer_ids' END,
		ARRAY[pg_catalog.cardinality(skus), pg_catalog.cardinality(qtys),
			  pg_catalog.cardinality(order_ids)]
			|| CASE WHEN buyer_ids IS NULL THEN '{}'::integer[]
					ELSE ARRAY[pg_catalog.cardinality(buyer_ids)] END,
		ARRAY[pg_catalog.array_ndims(skus), pg_catalog.array_ndims(qtys),
			  pg_catalog.array_ndims(order_ids), pg_catalog.array_ndims(buyer_ids)]);
	IF n = 0 THEN
		RETURN;
	END IF;
	PERFORM inventory._check_elements(skus, qtys, order_ids, buyer_ids);
	RETURN QUERY
		SELECT m.ok, m.status, m.sku, m.qty, m.state, m.available, m.version, m.expires_at
		  FROM inventory._reserve_many(
				ARRAY(SELECT pg_catalog.generate_series(1, n)),
				skus, qtys, order_ids, ttl,
				coalesce(buyer_ids, pg_catalog.array_fill(NULL::text, ARRAY[n]))) m
		 ORDER BY m.ord;
END
$$;
COMMENT ON FUNCTION inventory.reserve_many(text[], bigint[], text[], interval, text[]) IS
	'independent reservations in one call: element i holds qtys[i] units of skus[i] for (order_ids[i], 1); each node reserves its elements in one transaction; one result row each, in the order of the arrays';

------------------------------------------------------------------------------
-- Carts
--
-- A cart whose SKUs all live on one node is that node's cart: one call, all
-- or nothing.  A cart across nodes is reserved part by part, each part a
-- cart on its node with the lines' own batch ids, so that line i is
-- (order_id, batch_ids[i]) wherever it lives.  When a part is refused, or
-- its node fails, the lines already reserved are cancelled by their keys.
-- There is no atomic commit across nodes: if the router dies in between,
-- the lines made stay PENDING until their ttl expires them.
------------------------------------------------------------------------------

CREATE FUNCTION inventory._reserve_cart_on(part integer, order_id text, skus text[],
										   qtys bigint[], ttl interval, buyer_id text,
										   batch_ids integer[])
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON part;
	SELECT * FROM inventory.reserve_cart(order_id, skus, qtys, ttl, buyer_id, batch_ids);
$$;
COMMENT ON FUNCTION inventory._reserve_cart_on(integer, text, text[], bigint[], interval, text, integer[]) IS
	'reserve_cart() on one partition';

CREATE FUNCTION inventory._reserve_cart_one(sku text, order_id text, skus text[],
											qtys bigint[], ttl interval, buyer_id text,
											batch_ids integer[])
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
	SELECT * FROM inventory.reserve_cart(order_id, skus, qtys, ttl, buyer_id, batch_ids);
$$;
COMMENT ON FUNCTION inventory._reserve_cart_one(text, text, text[], bigint[], interval, text, integer[]) IS
	'reserve_cart() on the node of sku, which owns every line';

CREATE FUNCTION inventory._cancel_at(part integer, order_id text, batch_id integer)
	RETURNS inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON part;
	SELECT * FROM inventory.cancel(order_id, batch_id);
$$;
COMMENT ON FUNCTION inventory._cancel_at(integer, text, integer) IS 'cancel() on one partition';

-- Cancels the lines made, by their keys; a line that cannot be cancelled
-- (its node failed meanwhile) is left to its ttl, with a warning.
CREATE FUNCTION inventory._cancel_lines(order_id text, parts integer[], batch_ids integer[],
										lines integer[])
	RETURNS void
	LANGUAGE plpgsql
	AS $$
DECLARE
	k integer;
BEGIN
	FOREACH k IN ARRAY lines LOOP
		BEGIN
			PERFORM inventory._cancel_at(parts[k], order_id, batch_ids[k]);
		EXCEPTION WHEN OTHERS THEN
			RAISE WARNING 'line (%, %) of a refused cart could not be cancelled on partition %: %',
				order_id, batch_ids[k], parts[k], SQLERRM
				USING DETAIL = 'It stays PENDING until its ttl expires it.';
		END;
	END LOOP;
END
$$;
COMMENT ON FUNCTION inventory._cancel_lines(text, integer[], integer[], integer[]) IS
	'cancel the given lines of a cart on their partitions, by key';

CREATE FUNCTION inventory.reserve_cart(order_id text, skus text[], qtys bigint[],
									   ttl interval DEFAULT NULL,
									   buyer_id text DEFAULT NULL,
									   batch_ids integer[] DEFAULT NULL)
	RETURNS SETOF inventory.result
	LANGUAGE plpgsql ROWS 5
	AS $$
DECLARE
	n integer;
	parts integer[];
	lines integer[];
	p integer;
	k integer;
	r inventory.result;
	res inventory.result[];
	made integer[] := '{}';		-- lines PENDING on their node: cancelled if refused
	refused boolean := false;
BEGIN
	IF skus IS NULL OR qtys IS NULL THEN
		RAISE EXCEPTION '% must not be null', CASE WHEN skus IS NULL THEN 'skus' ELSE 'qtys' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	n := inventory._check_arrays('skus and qtys',
		ARRAY[pg_catalog.cardinality(skus), pg_catalog.cardinality(qtys)],
		ARRAY[pg_catalog.array_ndims(skus), pg_catalog.array_ndims(qtys)]);
	IF n = 0 THEN
		RAISE EXCEPTION 'a cart must have at least one line' USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF order_id IS NULL THEN
		RAISE EXCEPTION 'order_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM inventory._check_elements(skus, qtys, ARRAY[order_id],
									  CASE WHEN buyer_id IS NULL THEN '{}'::text[] ELSE ARRAY[buyer_id] END);
	parts := ARRAY(SELECT inventory.partition_of(s) FROM pg_catalog.unnest(skus) s);

	-- one node: its own cart, atomic, in one call
	IF (SELECT pg_catalog.count(DISTINCT x) FROM pg_catalog.unnest(parts) x) = 1 THEN
		RETURN QUERY SELECT * FROM inventory._reserve_cart_one(skus[1], order_id, skus, qtys,
															   ttl, buyer_id, batch_ids);
		RETURN;
	END IF;

	-- across nodes, each line carries its global batch id to its node
	IF batch_ids IS NULL THEN
		batch_ids := ARRAY(SELECT pg_catalog.generate_series(1, n));
	ELSE
		PERFORM inventory._check_arrays('skus and batch_ids',
			ARRAY[n, pg_catalog.cardinality(batch_ids)],
			ARRAY[1, pg_catalog.array_ndims(batch_ids)]);
		k := pg_catalog.array_position(batch_ids, NULL);
		IF k IS NOT NULL THEN
			RAISE EXCEPTION 'batch_ids must not contain nulls' USING ERRCODE = 'null_value_not_allowed',
				DETAIL = pg_catalog.format('Element %s is null.', k);
		END IF;
		SELECT b INTO k FROM pg_catalog.unnest(batch_ids) b
		 GROUP BY b HAVING pg_catalog.count(*) > 1 ORDER BY b LIMIT 1;
		IF FOUND THEN
			RAISE EXCEPTION 'every element of batch_ids must be distinct'
				USING ERRCODE = 'invalid_parameter_value',
					  DETAIL = pg_catalog.format('%s appears more than once.', k);
		END IF;
	END IF;

	res := pg_catalog.array_fill(NULL::inventory.result, ARRAY[n]);
	BEGIN
		FOR p IN SELECT DISTINCT x FROM pg_catalog.unnest(parts) x ORDER BY 1 LOOP
			lines := ARRAY(SELECT i FROM pg_catalog.generate_subscripts(skus, 1) i
							WHERE parts[i] = p ORDER BY i);
			k := 0;
			FOR r IN SELECT * FROM inventory._reserve_cart_on(p, order_id,
							ARRAY(SELECT skus[i] FROM pg_catalog.unnest(lines) i),
							ARRAY(SELECT qtys[i] FROM pg_catalog.unnest(lines) i),
							ttl, buyer_id,
							ARRAY(SELECT batch_ids[i] FROM pg_catalog.unnest(lines) i)) LOOP
				k := k + 1;
				-- a line replayed from an earlier attempt of this cart that
				-- was refused (cancelled) or has expired: the cart is not whole
				IF r.ok AND r.state IN ('CANCELLED', 'EXPIRED') THEN
					r.ok := false;
					r.status := pg_catalog.lower(r.state::text);
				END IF;
				res[lines[k]] := r;
				IF NOT r.ok THEN
					refused := true;
				ELSIF r.state = 'PENDING' THEN
					made := made || lines[k];
				END IF;
			END LOOP;
			EXIT WHEN refused;
		END LOOP;
	EXCEPTION WHEN OTHERS THEN
		-- a node that fails (down, or an error) refuses the whole cart: the
		-- lines made are cancelled, then its error goes on as it was
		PERFORM inventory._cancel_lines(order_id, parts, batch_ids, made);
		RAISE;
	END;

	IF refused THEN
		PERFORM inventory._cancel_lines(order_id, parts, batch_ids, made);
	END IF;
	FOR k IN 1 .. n LOOP
		r := res[k];
		IF refused AND (r.status IS NULL OR r.ok) THEN
			r := ROW(false, 'cart_refused', skus[k], qtys[k], NULL, r.available, r.version, NULL);
		END IF;
		RETURN NEXT r;
	END LOOP;
END
$$;
COMMENT ON FUNCTION inventory.reserve_cart(text, text[], bigint[], interval, text, integer[]) IS
	'reserve every line of a cart, or none as the caller sees it: line i is (order_id, i), or (order_id, batch_ids[i]), on the node of its SKU; one result row per line, in the order of the arrays';

------------------------------------------------------------------------------
-- Gathered from every node
------------------------------------------------------------------------------

CREATE FUNCTION inventory._stock()
	RETURNS TABLE (sku text, on_hand bigint, reserved bigint, available bigint, version bigint,
				   max_per_buyer bigint, sale_starts timestamptz, sale_ends timestamptz)
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	SELECT s.sku, s.on_hand, s.reserved, s.available, s.version,
		   s.max_per_buyer, s.sale_starts, s.sale_ends
	  FROM inventory.stock s;
$$;
COMMENT ON FUNCTION inventory._stock() IS 'inventory.stock of every node';

CREATE VIEW inventory.stock AS SELECT * FROM inventory._stock();
COMMENT ON VIEW inventory.stock IS
	'per SKU: on_hand, reserved, available and version, computed from the tables of every node';
COMMENT ON COLUMN inventory.stock.sku IS 'the SKU';
COMMENT ON COLUMN inventory.stock.on_hand IS 'physical units: the base in inventory.sku plus unfolded movements';
COMMENT ON COLUMN inventory.stock.reserved IS 'units held by PENDING reservations';
COMMENT ON COLUMN inventory.stock.available IS 'on_hand - reserved';
COMMENT ON COLUMN inventory.stock.version IS 'grows by one with every committed change to the SKU';
COMMENT ON COLUMN inventory.stock.max_per_buyer IS 'units one buyer may hold (PENDING + CONFIRMED); NULL: no limit';
COMMENT ON COLUMN inventory.stock.sale_starts IS 'start of the sale window; NULL: since ever';
COMMENT ON COLUMN inventory.stock.sale_ends IS 'end of the sale window (excluded); NULL: for ever';

CREATE FUNCTION inventory.verify()
	RETURNS TABLE (sku text, what text, cached bigint, truth bigint)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
$$;
COMMENT ON FUNCTION inventory.verify() IS
	'verify() of every node: one row for every counter where a node''s cache differs from its tables; empty means consistent';

CREATE FUNCTION inventory.sku_stats(
	OUT sku text, OUT on_hand bigint, OUT reserved bigint, OUT holds bigint,
	OUT available bigint, OUT version bigint, OUT in_flight integer,
	OUT unfolded bigint, OUT reserves bigint, OUT rejects bigint, OUT conflicts bigint,
	OUT confirms bigint, OUT cancels bigint, OUT expiries bigint,
	OUT restocks bigint, OUT adjusts bigint,
	OUT loaded_at timestamptz, OUT last_used timestamptz)
	RETURNS SETOF record
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
$$;
COMMENT ON FUNCTION inventory.sku_stats() IS
	'the cached SKUs of every node, with their live counters and statistics';

CREATE VIEW inventory.sku_stats AS SELECT * FROM inventory.sku_stats();
COMMENT ON VIEW inventory.sku_stats IS
	'the cached SKUs of every node, with their live counters and statistics';
COMMENT ON COLUMN inventory.sku_stats.sku IS 'a SKU held in its node''s shared-memory cache';
COMMENT ON COLUMN inventory.sku_stats.on_hand IS 'committed on_hand';
COMMENT ON COLUMN inventory.sku_stats.reserved IS 'committed reserved';
COMMENT ON COLUMN inventory.sku_stats.holds IS 'units held by transactions in flight';
COMMENT ON COLUMN inventory.sku_stats.available IS 'on_hand - reserved - holds: what a reserve can take now';
COMMENT ON COLUMN inventory.sku_stats.version IS 'committed version';
COMMENT ON COLUMN inventory.sku_stats.in_flight IS 'transactions with a change to the SKU in flight';
COMMENT ON COLUMN inventory.sku_stats.unfolded IS 'settled movements the worker has yet to fold (a hint)';
COMMENT ON COLUMN inventory.sku_stats.reserves IS 'reservations committed since the SKU was loaded';
COMMENT ON COLUMN inventory.sku_stats.rejects IS 'reserves refused for lack of stock';
COMMENT ON COLUMN inventory.sku_stats.conflicts IS 'version-checked calls refused';
COMMENT ON COLUMN inventory.sku_stats.confirms IS 'reservations confirmed';
COMMENT ON COLUMN inventory.sku_stats.cancels IS 'reservations cancelled';
COMMENT ON COLUMN inventory.sku_stats.expiries IS 'reservations expired';
COMMENT ON COLUMN inventory.sku_stats.restocks IS 'restocks committed';
COMMENT ON COLUMN inventory.sku_stats.adjusts IS 'stocktakes committed';
COMMENT ON COLUMN inventory.sku_stats.loaded_at IS 'when the SKU was loaded into its node''s cache; its statistics count from then';
COMMENT ON COLUMN inventory.sku_stats.last_used IS 'the start of the last statement that used it';

-- Maintenance on every node; the counts are summed.  The node's
-- stats_reset returns void, which PL/Proxy cannot receive.
CREATE FUNCTION inventory._expire_all(max_rows integer) RETURNS SETOF bigint
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	TARGET inventory.expire;
$$;
COMMENT ON FUNCTION inventory._expire_all(integer) IS 'expire() on every node';

CREATE FUNCTION inventory.expire(max_rows integer DEFAULT NULL) RETURNS bigint
	LANGUAGE sql
	AS $$ SELECT coalesce(pg_catalog.sum(n), 0)::bigint FROM inventory._expire_all($1) n $$;
COMMENT ON FUNCTION inventory.expire(integer) IS
	'expire overdue PENDING reservations now on every node (up to max_rows on each); returns how many';

CREATE FUNCTION inventory._fold_all(max_rows integer) RETURNS SETOF bigint
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	TARGET inventory.fold;
$$;
COMMENT ON FUNCTION inventory._fold_all(integer) IS 'fold() on every node';

CREATE FUNCTION inventory.fold(max_rows integer DEFAULT NULL) RETURNS bigint
	LANGUAGE sql
	AS $$ SELECT coalesce(pg_catalog.sum(n), 0)::bigint FROM inventory._fold_all($1) n $$;
COMMENT ON FUNCTION inventory.fold(integer) IS
	'move the effect of settled movements into inventory.sku now on every node (up to max_rows on each); returns how many';

CREATE FUNCTION inventory._stats_reset_all() RETURNS SETOF integer
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	SELECT 1 AS done FROM inventory.stats_reset();
$$;
COMMENT ON FUNCTION inventory._stats_reset_all() IS 'stats_reset() on every node';

CREATE FUNCTION inventory.stats_reset() RETURNS void
	LANGUAGE plpgsql
	AS $$ BEGIN PERFORM pg_catalog.count(*) FROM inventory._stats_reset_all(); END $$;
COMMENT ON FUNCTION inventory.stats_reset() IS
	'zero the statistics of the cached SKUs of every node';

------------------------------------------------------------------------------
-- The partitions, one by one, each reachable or not
------------------------------------------------------------------------------

-- a keyword's value in a connection string (keyword=value or a URI),
-- quotes and escapes of the keyword form undone
CREATE FUNCTION inventory._conninfo_value(conninfo text, keyword text) RETURNS text
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	AS $$
	SELECT CASE
		WHEN $1 OPERATOR(pg_catalog.~) '^postgres(ql)?://' THEN
			(pg_catalog.regexp_match($1,
				'^postgres(?:ql)?://(?:[^@/]*@)?([^/:?]*)(?::([0-9]+))?(?:/([^?]*))?'))
				[CASE $2 WHEN 'host' THEN 1 WHEN 'port' THEN 2 WHEN 'dbname' THEN 3 END]
		ELSE
			pg_catalog.regexp_replace(pg_catalog.regexp_replace(
				(pg_catalog.regexp_match($1,
					'(?:^|\s)' OPERATOR(pg_catalog.||) $2 OPERATOR(pg_catalog.||)
					'\s*=\s*(''(?:[^''\\]|\\.)*''|[^\s'']\S*)'))[1],
				'^''(.*)''$', '\1'), '\\(.)', '\1', 'g')
	END
$$;
COMMENT ON FUNCTION inventory._conninfo_value(text, text) IS
	'the value of a keyword (host, port, dbname) in a connection string';

-- PENDING reservations are never folded: the node's index on (folded,
-- expires_at) keeps the count to the unfolded rows.
CREATE FUNCTION inventory._node_info(part integer, OUT skus bigint, OUT holds bigint)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON part;
	SELECT (SELECT pg_catalog.count(*) FROM inventory.sku) AS skus,
		   (SELECT pg_catalog.count(*) FROM inventory.ledger l
			 WHERE NOT l.folded AND l.state = 'PENDING') AS holds;
$$;
COMMENT ON FUNCTION inventory._node_info(integer) IS 'SKUs and PENDING reservations of one partition';

CREATE FUNCTION inventory.nodes(OUT part integer, OUT dbname text, OUT host text, OUT port text,
								OUT reachable boolean, OUT error text,
								OUT skus bigint, OUT holds bigint)
	RETURNS SETOF record
	LANGUAGE plpgsql
	AS $$
DECLARE
	i integer;
	conninfo text;
BEGIN
	FOR i IN 0 .. inventory.partitions() - 1 LOOP
		SELECT o.option_value INTO conninfo
		  FROM pg_catalog.pg_foreign_server s, pg_catalog.pg_options_to_table(s.srvoptions) o
		 WHERE s.srvname = 'inventory_cluster' AND o.option_name = 'p' || i;
		part := i;
		dbname := inventory._conninfo_value(conninfo, 'dbname');
		host := inventory._conninfo_value(conninfo, 'host');
		port := inventory._conninfo_value(conninfo, 'port');
		BEGIN
			SELECT true, NULL, n.skus, n.holds INTO reachable, error, skus, holds
			  FROM inventory._node_info(i) n;
		EXCEPTION WHEN OTHERS THEN
			reachable := false;
			skus := NULL;
			holds := NULL;
			GET STACKED DIAGNOSTICS error = MESSAGE_TEXT;
		END;
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION inventory.nodes() IS
	'each partition of inventory_cluster: where it is, whether it answers, its SKUs and PENDING reservations';

CREATE VIEW inventory.nodes AS SELECT * FROM inventory.nodes();
COMMENT ON VIEW inventory.nodes IS
	'each partition of inventory_cluster: where it is, whether it answers, its SKUs and PENDING reservations';
COMMENT ON COLUMN inventory.nodes.part IS 'the partition number (option pN of the server inventory_cluster)';
COMMENT ON COLUMN inventory.nodes.dbname IS 'the partition''s database, from its connection string';
COMMENT ON COLUMN inventory.nodes.host IS 'its host or socket directory, from its connection string; NULL: the default';
COMMENT ON COLUMN inventory.nodes.port IS 'its port, from its connection string; NULL: the default';
COMMENT ON COLUMN inventory.nodes.reachable IS 'whether the partition answered now';
COMMENT ON COLUMN inventory.nodes.error IS 'why it did not; NULL when it did';
COMMENT ON COLUMN inventory.nodes.skus IS 'SKUs of the partition';
COMMENT ON COLUMN inventory.nodes.holds IS 'PENDING reservations of the partition';

------------------------------------------------------------------------------
-- Privileges: the node's roles, with the same rights on the router
------------------------------------------------------------------------------

DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'inventory_app') THEN
		CREATE ROLE inventory_app NOLOGIN;
	END IF;
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname OPERATOR(pg_catalog.=) 'inventory_admin') THEN
		CREATE ROLE inventory_admin NOLOGIN;
	END IF;
	IF NOT pg_catalog.pg_has_role('inventory_admin', 'inventory_app', 'MEMBER') THEN
		GRANT inventory_app TO inventory_admin;
	END IF;
END
$$;

-- Nothing for PUBLIC but the names and the state type; the helpers (_name)
-- run as the caller, so each goes to the roles of the functions that call it.
DO $$
DECLARE
	f regprocedure;
BEGIN
	FOR f IN
		SELECT p.oid::pg_catalog.regprocedure FROM pg_catalog.pg_proc p
		 WHERE p.pronamespace OPERATOR(pg_catalog.=) 'inventory'::pg_catalog.regnamespace
		   AND p.proname NOT IN ('is_final', 'can_transition')
	LOOP
		EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
	END LOOP;
END
$$;
REVOKE ALL ON inventory.stock, inventory.sku_stats, inventory.nodes FROM PUBLIC;
GRANT USAGE ON SCHEMA inventory TO PUBLIC;

GRANT EXECUTE ON FUNCTION
	inventory.reserve(text, bigint, text, integer, interval, bigint, text),
	inventory.confirm(text, integer, text),
	inventory.cancel(text, integer, text),
	inventory.extend(text, integer, interval, text),
	inventory.available(text),
	inventory.reserve_cart(text, text[], bigint[], interval, text, integer[]),
	inventory.reserve_many(text[], bigint[], text[], interval, text[]),
	inventory.confirm_order(text),
	inventory.cancel_order(text),
	inventory.sku_hash(text),
	inventory._null_argument(text),
	inventory.partitions(),
	inventory.partition_of(text),
	inventory._answer_of_one(inventory.result[], text, text, integer),
	inventory._confirm_on(text, integer, text),
	inventory._confirm_all(text, integer),
	inventory._cancel_on(text, integer, text),
	inventory._cancel_all(text, integer),
	inventory._extend_on(text, integer, interval, text),
	inventory._extend_all(text, integer, interval),
	inventory._confirm_order_all(text),
	inventory._cancel_order_all(text),
	inventory._order_rows(inventory.result[]),
	inventory._check_arrays(text, integer[], integer[]),
	inventory._check_elements(text[], bigint[], text[], text[]),
	inventory._reserve_many(integer[], text[], bigint[], text[], interval, text[]),
	inventory._reserve_cart_on(integer, text, text[], bigint[], interval, text, integer[]),
	inventory._reserve_cart_one(text, text, text[], bigint[], interval, text, integer[]),
	inventory._cancel_at(integer, text, integer),
	inventory._cancel_lines(text, integer[], integer[], integer[]),
	inventory._stock()
TO inventory_app;
GRANT SELECT ON inventory.stock TO inventory_app;

GRANT EXECUTE ON FUNCTION
	inventory.restock(text, bigint, text, integer),
	inventory.adjust(text, bigint, text, integer, bigint),
	inventory.withdraw(text, bigint, text, integer),
	inventory.set_rules(text, bigint, timestamptz, timestamptz),
	inventory._set_rules(text, bigint, timestamptz, timestamptz),
	inventory.verify(),
	inventory.sku_stats(),
	inventory.expire(integer),
	inventory._expire_all(integer),
	inventory.fold(integer),
	inventory._fold_all(integer),
	inventory.stats_reset(),
	inventory._stats_reset_all(),
	inventory.nodes(),
	inventory._conninfo_value(text, text),
	inventory._node_info(integer)
TO inventory_admin;
GRANT SELECT ON inventory.sku_stats, inventory.nodes TO inventory_admin;

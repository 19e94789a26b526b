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

-- As PL/Proxy maps a RUN ON value: bits of it (a power of two partitions),
-- or the remainder with the server option modular_mapping.  A partition
-- number maps to itself.
CREATE FUNCTION inventory._part_of_hash(route integer) RETURNS integer
	LANGUAGE sql STABLE PARALLEL SAFE
	AS $$
	SELECT CASE WHEN EXISTS (SELECT FROM pg_catalog.pg_foreign_server s,
										 pg_catalog.pg_options_to_table(s.srvoptions) o
								WHERE s.srvname OPERATOR(pg_catalog.=) 'inventory_cluster'
								  AND o.option_name OPERATOR(pg_catalog.=) 'modular_mapping'
								  AND o.option_value OPERATOR(pg_catalog.=) '1')
				THEN pg_catalog.abs($1 OPERATOR(pg_catalog.%) n)
				ELSE $1 OPERATOR(pg_catalog.&) (n OPERATOR(pg_catalog.-) 1) END
	  FROM (SELECT inventory.partitions() AS n) p
$$;
COMMENT ON FUNCTION inventory._part_of_hash(integer) IS
	'the partition PL/Proxy runs a call on for a RUN ON value';

CREATE FUNCTION inventory.partition_of(sku text) RETURNS integer
	LANGUAGE sql STABLE PARALLEL SAFE
	AS $$ SELECT inventory._part_of_hash(inventory.sku_hash($1)) $$;
COMMENT ON FUNCTION inventory.partition_of(text) IS
	'the partition that owns a SKU: the one PL/Proxy routes its calls to';

------------------------------------------------------------------------------
-- Hot SKUs in buckets
--
-- A split SKU's units are spread over buckets, each the same SKU on a
-- partition of its own: bucket 0 on the SKU's own partition p, bucket k on
-- partition (p + k) mod partitions.  A reservation lives in one bucket, the
-- bucket of its order (of its buyer, when it names one): hashtext of it
-- modulo the number of buckets.  A retried reserve therefore finds its key
-- where it was made, and a buyer's units of a SKU are all in one bucket, so
-- that the node's per-buyer limit is exact.  When its bucket is short, units
-- move into it from the other buckets, in a fixed order, and the reserve is
-- made there again: a reservation never lives outside its bucket.
--
-- Units move only as keyed movements on both nodes: a withdraw on the
-- giving node with key ('inventory:transfer:<from>:<to>:<uuid>', 1), then a
-- restock on the receiving one with the same order_id and batch 2.  The
-- withdraw rows without their restock are the units in transit; rerunning
-- split, merge or rebalance restocks them, by their keys.
--
-- The layouts a SKU had are kept while keys made under them could be asked
-- for again: a reserve whose bucket changed looks for its key in its former
-- buckets first.  A layout is forgotten when no router transaction could
-- still be using it and no reservation of the SKU lies outside the bucket
-- the current layout gives its key.
------------------------------------------------------------------------------

CREATE TABLE inventory.bucket_layout (
	sku			text COLLATE "C" NOT NULL,
	generation	integer NOT NULL,
	parts		integer[] NOT NULL,
	created_at	timestamptz NOT NULL DEFAULT pg_catalog.transaction_timestamp(),
	PRIMARY KEY (sku, generation)
);
COMMENT ON TABLE inventory.bucket_layout IS
	'the layouts of split SKUs: the newest generation is the current one, older ones are kept while keys made under them may be asked for again';
COMMENT ON COLUMN inventory.bucket_layout.parts IS
	'the partition of each bucket: bucket k is parts[k + 1]; parts[1] is the SKU''s own partition';
SELECT pg_catalog.pg_extension_config_dump('inventory.bucket_layout', '');

-- The partitions of the current buckets of a split SKU; NULL when the SKU
-- is not split.  Asked by every reserve and every call about a SKU that
-- depends on its buckets: PL/pgSQL, whose plan is kept for the session (a
-- SQL function's would be made at every call).
CREATE FUNCTION inventory._bucket_parts(sku text) RETURNS integer[]
	LANGUAGE plpgsql STABLE PARALLEL SAFE
	AS $$
BEGIN
	RETURN (SELECT l.parts FROM inventory.bucket_layout l
			 WHERE l.sku OPERATOR(pg_catalog.=) _bucket_parts.sku
			 ORDER BY l.generation DESC LIMIT 1);
END
$$;
COMMENT ON FUNCTION inventory._bucket_parts(text) IS
	'the partitions of the current buckets of a split SKU; NULL when it is not split';

-- Every partition a bucket of the SKU was ever on, in any kept layout.
CREATE FUNCTION inventory._sku_parts(sku text) RETURNS integer[]
	LANGUAGE plpgsql STABLE PARALLEL SAFE
	AS $$
BEGIN
	RETURN ARRAY(SELECT DISTINCT p FROM inventory.bucket_layout l, pg_catalog.unnest(l.parts) p
				  WHERE l.sku OPERATOR(pg_catalog.=) _sku_parts.sku ORDER BY 1);
END
$$;
COMMENT ON FUNCTION inventory._sku_parts(text) IS
	'the partitions of the buckets of a split SKU in its kept layouts';

-- The bucket of a key: hashtext of the buyer, or of the order, modulo the
-- number of buckets.
CREATE FUNCTION inventory._home(parts integer[], basis text) RETURNS integer
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	AS $$
	SELECT $1[1 OPERATOR(pg_catalog.+)
			  ((pg_catalog.hashtext($2) OPERATOR(pg_catalog.&) 2147483647)
			   OPERATOR(pg_catalog.%) pg_catalog.cardinality($1))]
$$;
COMMENT ON FUNCTION inventory._home(integer[], text) IS
	'the partition of the bucket that a buyer or an order (basis) gets in a layout';

CREATE FUNCTION inventory._key_at(parts integer[], key_order text, key_batch integer, key_sku text)
	RETURNS SETOF integer
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT parts;
	RUN ON parts;
	SELECT p FROM pg_catalog.unnest(parts) p
	 WHERE EXISTS (SELECT FROM inventory.ledger l
					WHERE l.order_id = key_order AND l.batch_id = key_batch AND l.sku = key_sku);
$$;
COMMENT ON FUNCTION inventory._key_at(integer[], text, integer, text) IS
	'those of the partitions that hold the key for the SKU';

-- Where a key of a split SKU is, or goes: its bucket in a former layout
-- that holds it, else home, its bucket now (the caller's _home of the
-- current layout for basis, the buyer or the order).
CREATE FUNCTION inventory._key_part(sku text, order_id text, batch_id integer, basis text,
									home integer)
	RETURNS integer
	LANGUAGE plpgsql STABLE
	AS $$
DECLARE
	former integer[];
	found integer;
BEGIN
	IF _key_part.order_id IS NULL THEN
		RAISE EXCEPTION 'order_id must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	former := ARRAY(SELECT DISTINCT h
					  FROM (SELECT inventory._home(l.parts, _key_part.basis) h
							  FROM inventory.bucket_layout l
							 WHERE l.sku = _key_part.sku
							 ORDER BY l.generation DESC OFFSET 1) x
					 WHERE h <> home);
	IF pg_catalog.cardinality(former) > 0 THEN
		found := (SELECT k FROM inventory._key_at(former, _key_part.order_id,
												  _key_part.batch_id, _key_part.sku) k LIMIT 1);
		IF found IS NOT NULL THEN
			RETURN found;
		END IF;
	END IF;
	RETURN home;
END
$$;
COMMENT ON FUNCTION inventory._key_part(text, text, integer, text, integer) IS
	'the partition of the bucket where a key of a split SKU is, or goes';

-- The RUN ON value of a reservation: the SKU's hash, or the partition of
-- its bucket for a split SKU.
CREATE FUNCTION inventory._route(sku text, order_id text, batch_id integer, buyer_id text)
	RETURNS integer
	LANGUAGE plpgsql STABLE
	AS $$
DECLARE
	parts integer[] := inventory._bucket_parts(_route.sku);
BEGIN
	IF parts IS NULL THEN
		RETURN inventory.sku_hash(_route.sku);
	END IF;
	RETURN inventory._key_part(_route.sku, _route.order_id, _route.batch_id,
							   coalesce(_route.buyer_id, _route.order_id),
							   inventory._home(parts, coalesce(_route.buyer_id, _route.order_id)));
END
$$;
COMMENT ON FUNCTION inventory._route(text, text, integer, text) IS
	'the value a reservation is routed by: hashtext(sku), or the partition of its bucket';

CREATE FUNCTION inventory._reserve_at(route integer, sku text, qty bigint, order_id text,
									  batch_id integer, ttl interval, expected_version bigint,
									  buyer_id text)
	RETURNS inventory.result
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON route;
	SELECT * FROM inventory.reserve(sku, qty, order_id, batch_id, ttl, expected_version, buyer_id);
$$;
COMMENT ON FUNCTION inventory._reserve_at(integer, text, bigint, text, integer, interval, bigint, text) IS
	'reserve() on one partition (route: sku_hash(sku) or a partition number)';

CREATE FUNCTION inventory._available_at(parts integer[], avail_sku text)
	RETURNS TABLE (part integer, available bigint)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT parts;
	RUN ON parts;
	SELECT p AS part, inventory.available(avail_sku) AS available FROM pg_catalog.unnest(parts) p;
$$;
COMMENT ON FUNCTION inventory._available_at(integer[], text) IS
	'available() of a SKU on each of the partitions';

-- The giving side of a transfer, with the rules of the SKU there, which the
-- receiving side takes over in the same transaction as the units.
CREATE FUNCTION inventory._withdraw_at(part integer, w_sku text, w_qty bigint, w_key text,
									   OUT ok boolean, OUT status text,
									   OUT max_per_buyer bigint, OUT sale_starts timestamptz,
									   OUT sale_ends timestamptz)
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON part;
	SELECT w.ok, w.status, s.max_per_buyer, s.sale_starts, s.sale_ends
	  FROM inventory.withdraw(w_sku, w_qty, w_key, 1) w
	  LEFT JOIN inventory.sku s ON s.sku = w_sku;
$$;
COMMENT ON FUNCTION inventory._withdraw_at(integer, text, bigint, text) IS
	'the giving side of a transfer: withdraw() by its key on one partition, with the SKU''s rules there';

CREATE FUNCTION inventory._restock_at(part integer, r_sku text, r_qty bigint, r_key text,
									  r_max bigint, r_starts timestamptz, r_ends timestamptz,
									  OUT ok boolean, OUT status text)
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON part;
	SELECT r.ok, r.status
	  FROM inventory.restock(r_sku, r_qty, r_key, 2) r
	  LEFT JOIN LATERAL (SELECT inventory.set_rules(r.sku, r_max, r_starts, r_ends)) x ON true;
$$;
COMMENT ON FUNCTION inventory._restock_at(integer, text, bigint, text, bigint, timestamptz, timestamptz) IS
	'the receiving side of a transfer: restock() by its key on one partition, and the rules of the giving side, in one transaction';

CREATE FUNCTION inventory._rules_of(r_sku text,
									OUT max_per_buyer bigint, OUT sale_starts timestamptz,
									OUT sale_ends timestamptz)
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(r_sku);
	SELECT s.max_per_buyer, s.sale_starts, s.sale_ends FROM inventory.sku s WHERE s.sku = r_sku;
$$;
COMMENT ON FUNCTION inventory._rules_of(text) IS 'the rules of a SKU on its own partition';

-- Moves qty available units of a SKU from one partition to another, as two
-- keyed movements; returns the units moved (0 when the giving side has
-- fewer available now).  A failure after the withdraw leaves them in
-- transit, with a warning: rebalance() finishes the transfer.
CREATE FUNCTION inventory._transfer(sku text, from_part integer, to_part integer, qty bigint)
	RETURNS bigint
	LANGUAGE plpgsql
	AS $$
DECLARE
	key text := pg_catalog.format('inventory:transfer:%s:%s:%s', from_part, to_part,
								  pg_catalog.gen_random_uuid());
	w record;
BEGIN
	SELECT * INTO w FROM inventory._withdraw_at(from_part, _transfer.sku, _transfer.qty, key);
	IF NOT w.ok THEN
		RETURN 0;
	END IF;
	BEGIN
		PERFORM inventory._restock_at(to_part, _transfer.sku, _transfer.qty, key,
									  w.max_per_buyer, w.sale_starts, w.sale_ends);
	EXCEPTION WHEN OTHERS THEN
		RAISE WARNING '% units of "%" are in transit from partition % to partition %',
			_transfer.qty, _transfer.sku, from_part, to_part
			USING DETAIL = pg_catalog.format('Withdrawn by key (%s, 1), not restocked: %s', key, SQLERRM),
				  HINT = 'inventory.rebalance() of the SKU restocks them.';
		RETURN 0;
	END;
	RETURN _transfer.qty;
END
$$;
COMMENT ON FUNCTION inventory._transfer(text, integer, integer, bigint) IS
	'move available units of a SKU between partitions by two keyed movements; the units moved';

-- Moves need units of a split SKU into the bucket on partition home from
-- its other buckets, in their fixed order (the buckets after it, then
-- partitions of former layouts), skipping those that do not answer; none
-- when they do not have that many together.
-- Runs as the extension's owner: it only moves units between the buckets
-- of a SKU, never out of it.
CREATE FUNCTION inventory._top_up(sku text, home integer, need bigint)
	RETURNS bigint
	LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	cur integer[] := inventory._bucket_parts(_top_up.sku);
	n integer;
	i integer;
	donors integer[];
	avail bigint[];
	d integer;
	a bigint;
	moved bigint := 0;
BEGIN
	IF cur IS NULL OR NOT (_top_up.home = ANY (cur)) THEN
		RETURN 0;
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
	-- what each has, in one parallel call; one by one if a node fails
	BEGIN
		avail := ARRAY(SELECT a.available FROM unnest(donors) WITH ORDINALITY d(p, o)
						 LEFT JOIN inventory._available_at(donors, _top_up.sku) a ON a.part = d.p
						ORDER BY d.o);
	EXCEPTION WHEN OTHERS THEN
		avail := NULL;
	END;
	-- nothing moves for a call that all the buckets together cannot serve
	IF (SELECT sum(greatest(x, 0)) FROM unnest(avail) x) < need THEN
		RETURN 0;
	END IF;
	FOR k IN 1 .. cardinality(donors) LOOP
		EXIT WHEN moved >= need;
		d := donors[k];
		BEGIN
			IF avail IS NULL THEN
				a := (SELECT x.available FROM inventory._available_at(ARRAY[d], _top_up.sku) x);
			ELSE
				a := avail[k];
			END IF;
			IF a > 0 THEN
				moved := moved + inventory._transfer(_top_up.sku, d, _top_up.home, least(a, need - moved));
			END IF;
		EXCEPTION WHEN OTHERS THEN
			-- a bucket whose node does not answer: the next one
			NULL;
		END;
	END LOOP;
	RETURN moved;
END
$$;
COMMENT ON FUNCTION inventory._top_up(text, integer, bigint) IS
	'move units of a split SKU into one of its buckets from the others, in their fixed order; the units moved';

-- Remembers for this session that a split SKU's buckets could not serve a
-- call, for inventory_router.short_recheck (default 1 s; 0: never): until
-- then a refusal of its own bucket is the answer, without asking the other
-- buckets again.  Once a SKU is sold out, that makes its refusals one call
-- each instead of one per bucket; units that come back in another bucket
-- meanwhile (a cancel, an expiry) are sold at once to the orders of that
-- bucket, and to this session's others after the recheck.  One SKU per
-- session: the last one found short.
CREATE FUNCTION inventory._reserve_short(sku text) RETURNS void
	LANGUAGE plpgsql
	AS $$
DECLARE
	recheck float8 := pg_catalog.date_part('epoch',
		coalesce(NULLIF(pg_catalog.current_setting('inventory_router.short_recheck', true), '')::interval,
				 interval '1 second'));
BEGIN
	IF recheck > 0 THEN
		PERFORM pg_catalog.set_config('inventory_router.short_sku', _reserve_short.sku, false),
				pg_catalog.set_config('inventory_router.short_until',
					(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) + recheck)::text, false);
	END IF;
END
$$;
COMMENT ON FUNCTION inventory._reserve_short(text) IS
	'remember for this session, for inventory_router.short_recheck, that no bucket of a split SKU could serve a call';

-- A reserve of a split SKU: in the bucket of its key; when that bucket is
-- short, units move into it and the reserve is made there again.
CREATE FUNCTION inventory._reserve_split(sku text, qty bigint, order_id text, batch_id integer,
										 ttl interval, expected_version bigint, buyer_id text,
										 parts integer[])
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
DECLARE
	home integer;
	part integer;
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
	-- falling through: each round moves what is missing, until the bucket
	-- serves the call or no other bucket has units to give
	FOR attempt IN 1 .. pg_catalog.cardinality(parts) LOOP
		IF inventory._top_up(_reserve_split.sku, home,
							 _reserve_split.qty - greatest(coalesce(r.available, 0), 0)) = 0 THEN
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
COMMENT ON FUNCTION inventory._reserve_split(text, bigint, text, integer, interval, bigint, text, integer[]) IS
	'reserve() of a split SKU in the bucket of its key, falling through the other buckets when it is short';

------------------------------------------------------------------------------
-- Split, merge, rebalance: administration, under live traffic, rerunnable
------------------------------------------------------------------------------

CREATE FUNCTION inventory._transfer_rows(parts integer[])
	RETURNS TABLE (order_id text, batch_id integer, sku text, qty bigint)
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT parts;
	RUN ON parts;
	SELECT l.order_id, l.batch_id, l.sku, l.qty FROM inventory.ledger l
	 WHERE l.order_id >= 'inventory:transfer:' AND l.order_id < 'inventory:transfer;';
$$;
COMMENT ON FUNCTION inventory._transfer_rows(integer[]) IS
	'the movements of transfers on the partitions';

-- Restocks, by their keys, the units of a SKU's transfers that were
-- withdrawn and never restocked; the units restocked.
CREATE FUNCTION inventory._finish_transfers(sku text) RETURNS bigint
	LANGUAGE plpgsql
	AS $$
DECLARE
	t record;
	rules record;
	done bigint := 0;
BEGIN
	FOR t IN WITH x AS MATERIALIZED (
				SELECT * FROM inventory._transfer_rows(
								ARRAY(SELECT pg_catalog.generate_series(0, inventory.partitions() - 1))) r
				 WHERE r.sku = _finish_transfers.sku)
			 SELECT w.order_id, w.qty, pg_catalog.split_part(w.order_id, ':', 4)::integer AS target
			   FROM x w
			  WHERE w.batch_id = 1
				AND NOT EXISTS (SELECT FROM x r WHERE r.order_id = w.order_id AND r.batch_id = 2)
	LOOP
		IF rules IS NULL THEN
			SELECT * INTO rules FROM inventory._rules_of(_finish_transfers.sku);
		END IF;
		PERFORM inventory._restock_at(t.target, _finish_transfers.sku, t.qty, t.order_id,
									  rules.max_per_buyer, rules.sale_starts, rules.sale_ends);
		done := done + t.qty;
	END LOOP;
	RETURN done;
END
$$;
COMMENT ON FUNCTION inventory._finish_transfers(text) IS
	'restock by their keys the units of a SKU in transit; the units restocked';

CREATE FUNCTION inventory._misrouted_at(parts integer[], m_sku text, layout integer[])
	RETURNS SETOF integer
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT parts;
	RUN ON parts;
	SELECT p FROM pg_catalog.unnest(parts) p
	 WHERE EXISTS (SELECT FROM inventory.ledger l
					WHERE l.sku = m_sku AND l.kind = 'reserve'
					  AND (layout)[1 + (pg_catalog.hashtext(coalesce(l.buyer_id, l.order_id)) & 2147483647)
								   % pg_catalog.cardinality(layout)] <> p);
$$;
COMMENT ON FUNCTION inventory._misrouted_at(integer[], text, integer[]) IS
	'those of the partitions that hold a reservation of the SKU that the layout would look for elsewhere';

-- Forgets the former layouts of a SKU when no key needs them: no router
-- transaction began while one was current (its snapshot could still show
-- it), no reservation of the SKU lies outside the bucket that the
-- current layout gives its key, and no units are left outside the current
-- buckets.  A SKU merged back to one bucket with no
-- former layout left is not split any more.  Runs as the extension's
-- owner, to see every session's snapshot.
CREATE FUNCTION inventory._forget_layouts(sku text) RETURNS void
	LANGUAGE plpgsql SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
DECLARE
	cur inventory.bucket_layout;
	outside integer[];
BEGIN
	SELECT * INTO cur FROM inventory.bucket_layout l
	 WHERE l.sku = _forget_layouts.sku ORDER BY l.generation DESC LIMIT 1;
	IF NOT FOUND THEN
		RETURN;
	END IF;
	outside := ARRAY(SELECT p FROM unnest(inventory._sku_parts(_forget_layouts.sku)) p
					  WHERE NOT (p = ANY (cur.parts)));
	IF EXISTS (SELECT FROM inventory.bucket_layout l
				WHERE l.sku = _forget_layouts.sku AND l.generation < cur.generation) THEN
		-- the current layout was made by an earlier transaction, and every
		-- snapshot taken since shows it
		IF cur.created_at >= transaction_timestamp()
		   OR EXISTS (SELECT FROM pg_stat_activity a, inventory.bucket_layout l
					   WHERE l.sku = _forget_layouts.sku AND l.generation = cur.generation
						 AND a.datname = current_database() AND a.pid <> pg_backend_pid()
						 AND a.backend_xmin IS NOT NULL
						 AND age(a.backend_xmin) >= age(l.xmin))
		   OR EXISTS (SELECT FROM inventory._misrouted_at(inventory._sku_parts(_forget_layouts.sku),
														  _forget_layouts.sku, cur.parts))
		   OR (cardinality(outside) > 0
			   AND EXISTS (SELECT FROM inventory._available_at(outside, _forget_layouts.sku) a
							WHERE a.available > 0)) THEN
			RETURN;
		END IF;
		DELETE FROM inventory.bucket_layout l
		 WHERE l.sku = _forget_layouts.sku AND l.generation < cur.generation;
	END IF;
	IF cardinality(cur.parts) = 1 THEN
		DELETE FROM inventory.bucket_layout l WHERE l.sku = _forget_layouts.sku;
	END IF;
END
$$;
COMMENT ON FUNCTION inventory._forget_layouts(text) IS
	'drop the former layouts of a SKU that no key needs any more';

-- Evens out the available units of a SKU over its current buckets: units
-- on partitions outside them (a former layout) move in; a bucket above its
-- share gives to those below, by keyed transfers.  Under live traffic the
-- shares are of what each bucket had when asked; a giving side that has
-- fewer by then gives nothing, and a rerun evens out again.
CREATE FUNCTION inventory._even_out(sku text) RETURNS bigint
	LANGUAGE plpgsql
	AS $$
DECLARE
	cur integer[] := coalesce(inventory._bucket_parts(_even_out.sku),
							  ARRAY[inventory.partition_of(_even_out.sku)]);
	every integer[];
	n integer := pg_catalog.cardinality(cur);
	total bigint;
	src record;
	dst record;
	give bigint;
	moved bigint := 0;
BEGIN
	every := ARRAY(SELECT DISTINCT p FROM pg_catalog.unnest(cur || inventory._sku_parts(_even_out.sku)) p ORDER BY 1);
	CREATE TEMP TABLE IF NOT EXISTS inventory_even_out (part integer, bucket integer, have bigint, share bigint)
		ON COMMIT DROP;
	TRUNCATE inventory_even_out;
	INSERT INTO inventory_even_out
	SELECT a.part, pg_catalog.array_position(cur, a.part) - 1, greatest(coalesce(a.available, 0), 0), 0
	  FROM inventory._available_at(every, _even_out.sku) a;
	total := (SELECT pg_catalog.sum(have) FROM inventory_even_out);
	UPDATE inventory_even_out
	   SET share = total / n + CASE WHEN bucket < total % n THEN 1 ELSE 0 END
	 WHERE bucket IS NOT NULL;
	FOR dst IN SELECT * FROM inventory_even_out WHERE have < share ORDER BY bucket LOOP
		FOR src IN SELECT * FROM inventory_even_out WHERE have > share
					ORDER BY bucket IS NOT NULL, bucket, part LOOP
			give := least(src.have - src.share, dst.share - dst.have);
			EXIT WHEN give <= 0;
			give := inventory._transfer(_even_out.sku, src.part, dst.part, give);
			UPDATE inventory_even_out SET have = have - give WHERE part = src.part;
			dst.have := dst.have + give;
			moved := moved + give;
			EXIT WHEN dst.have >= dst.share;
		END LOOP;
	END LOOP;
	RETURN moved;
END
$$;
COMMENT ON FUNCTION inventory._even_out(text) IS
	'even out the available units of a SKU over its current buckets; the units moved';

CREATE FUNCTION inventory._bucket_report(sku text)
	RETURNS TABLE (bucket integer, part integer, available bigint)
	LANGUAGE sql
	AS $$
	SELECT pg_catalog.array_position(c.parts, a.part) - 1, a.part, a.available
	  FROM (SELECT coalesce(inventory._bucket_parts($1), ARRAY[inventory.partition_of($1)]) AS parts) c,
		   inventory._available_at(
				ARRAY(SELECT DISTINCT p FROM pg_catalog.unnest(c.parts || inventory._sku_parts($1)) p),
				$1) a
	 ORDER BY 1 NULLS LAST, 2
$$;
COMMENT ON FUNCTION inventory._bucket_report(text) IS
	'each bucket of a SKU (NULL: a partition of a former layout) and its available units';

CREATE FUNCTION inventory.split(sku text, buckets integer)
	RETURNS TABLE (bucket integer, part integer, available bigint)
	LANGUAGE plpgsql
	AS $$
DECLARE
	np integer := inventory.partitions();
	home integer;
	want integer[];
	cur integer[];
BEGIN
	IF split.sku IS NULL OR split.buckets IS NULL THEN
		RAISE EXCEPTION '% must not be null', CASE WHEN split.sku IS NULL THEN 'sku' ELSE 'buckets' END
			USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF split.buckets < 1 OR split.buckets > np THEN
		RAISE EXCEPTION 'buckets must be between 1 and %', np
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = pg_catalog.format('Each bucket is on a partition of its own, and inventory_cluster has %s partitions; %s buckets were asked for.', np, split.buckets);
	END IF;
	-- one split, merge or rebalance of a SKU at a time
	PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('inventory.split'),
											 pg_catalog.hashtext(split.sku));
	IF inventory._available(split.sku) IS NULL THEN
		RAISE EXCEPTION 'sku "%" does not exist', split.sku
			USING ERRCODE = 'undefined_object',
				  HINT = 'Create it with inventory.restock().';
	END IF;
	PERFORM inventory._finish_transfers(split.sku);
	home := inventory.partition_of(split.sku);
	want := ARRAY(SELECT (home + k) % np FROM pg_catalog.generate_series(0, split.buckets - 1) k);
	cur := coalesce(inventory._bucket_parts(split.sku), ARRAY[home]);
	IF cur IS DISTINCT FROM want THEN
		IF NOT EXISTS (SELECT FROM inventory.bucket_layout l WHERE l.sku = split.sku) THEN
			-- the layout of the SKU unsplit, for the keys made under it
			INSERT INTO inventory.bucket_layout (sku, generation, parts) VALUES (split.sku, 1, cur);
		END IF;
		INSERT INTO inventory.bucket_layout (sku, generation, parts)
		SELECT split.sku, pg_catalog.max(l.generation) + 1, want
		  FROM inventory.bucket_layout l WHERE l.sku = split.sku;
	END IF;
	PERFORM inventory._even_out(split.sku);
	PERFORM inventory._forget_layouts(split.sku);
	RETURN QUERY SELECT * FROM inventory._bucket_report(split.sku);
END
$$;
COMMENT ON FUNCTION inventory.split(text, integer) IS
	'spread the available units of sku over buckets on as many partitions, under live traffic; rerun to finish or even out; returns each bucket';

CREATE FUNCTION inventory.merge(sku text)
	RETURNS TABLE (bucket integer, part integer, available bigint)
	LANGUAGE sql
	AS $$ SELECT * FROM inventory.split($1, 1) $$;
COMMENT ON FUNCTION inventory.merge(text) IS
	'gather the available units of a split SKU back on its own partition, under live traffic; rerun to finish; returns each bucket';

CREATE FUNCTION inventory.rebalance(sku text)
	RETURNS TABLE (bucket integer, part integer, available bigint)
	LANGUAGE plpgsql
	AS $$
BEGIN
	IF rebalance.sku IS NULL THEN
		RAISE EXCEPTION 'sku must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	PERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('inventory.split'),
											 pg_catalog.hashtext(rebalance.sku));
	PERFORM inventory._finish_transfers(rebalance.sku);
	PERFORM inventory._even_out(rebalance.sku);
	PERFORM inventory._forget_layouts(rebalance.sku);
	RETURN QUERY SELECT * FROM inventory._bucket_report(rebalance.sku);
END
$$;
COMMENT ON FUNCTION inventory.rebalance(text) IS
	'finish the transfers of sku in transit and even out its available units over its buckets, under live traffic; returns each bucket';

CREATE VIEW inventory.buckets AS
SELECT l.sku, pg_catalog.cardinality(l.parts) AS buckets, l.parts, l.created_at AS since,
	   (SELECT pg_catalog.count(*) FROM inventory.bucket_layout f
		 WHERE f.sku = l.sku AND f.generation < l.generation)::integer AS former_layouts
  FROM inventory.bucket_layout l
 WHERE l.generation = (SELECT pg_catalog.max(m.generation) FROM inventory.bucket_layout m
						WHERE m.sku = l.sku);
COMMENT ON VIEW inventory.buckets IS
	'the split SKUs: their buckets'' partitions (bucket k on parts[k + 1]) and former layouts still kept for retried reserves';
COMMENT ON COLUMN inventory.buckets.sku IS 'a split SKU';
COMMENT ON COLUMN inventory.buckets.buckets IS 'the number of buckets';
COMMENT ON COLUMN inventory.buckets.parts IS 'the partition of each bucket: bucket k is on parts[k + 1]';
COMMENT ON COLUMN inventory.buckets.since IS 'when this layout was made';
COMMENT ON COLUMN inventory.buckets.former_layouts IS
	'layouts kept for keys made under them: a reserve whose bucket changed looks there first';

------------------------------------------------------------------------------
-- Routed by SKU: one call to one node, the node's function of the same
-- name, with the same arguments.  reserve, adjust, available and set_rules
-- look first whether the SKU is split (above); restock and withdraw are
-- plain PL/Proxy functions: a split SKU's bucket 0.
------------------------------------------------------------------------------

CREATE FUNCTION inventory.reserve(sku text, qty bigint, order_id text,
								  batch_id integer DEFAULT 1,
								  ttl interval DEFAULT NULL,
								  expected_version bigint DEFAULT NULL,
								  buyer_id text DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
DECLARE
	parts integer[] := inventory._bucket_parts(reserve.sku);
BEGIN
	IF parts IS NULL THEN
		RETURN inventory._reserve_at(inventory.sku_hash(reserve.sku), reserve.sku, reserve.qty,
									 reserve.order_id, reserve.batch_id, reserve.ttl,
									 reserve.expected_version, reserve.buyer_id);
	END IF;
	RETURN inventory._reserve_split(reserve.sku, reserve.qty, reserve.order_id, reserve.batch_id,
									reserve.ttl, reserve.expected_version, reserve.buyer_id, parts);
END
$$;
COMMENT ON FUNCTION inventory.reserve(text, bigint, text, integer, interval, bigint, text) IS
	'hold qty units of sku for (order_id, batch_id) until confirm, cancel or expiry, on the SKU''s node (a split SKU: in the bucket of the order, or of the buyer)';

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

CREATE FUNCTION inventory._adjust(sku text, on_hand bigint, order_id text,
								  batch_id integer, expected_version bigint)
	RETURNS inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
	SELECT * FROM inventory.adjust(sku, on_hand, order_id, batch_id, expected_version);
$$;
COMMENT ON FUNCTION inventory._adjust(text, bigint, text, integer, bigint) IS
	'adjust() on the node of sku';

-- A count of a split SKU is a count of all its buckets, which no one node
-- can set: merge first.
CREATE FUNCTION inventory.adjust(sku text, on_hand bigint, order_id text,
								 batch_id integer DEFAULT 1,
								 expected_version bigint DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
BEGIN
	IF inventory._bucket_parts(adjust.sku) IS NOT NULL THEN
		RAISE EXCEPTION 'sku "%" is split into buckets', adjust.sku
			USING ERRCODE = 'feature_not_supported',
				  DETAIL = 'A stocktake sets the on_hand of the whole SKU, which its buckets hold in parts.',
				  HINT = 'Merge it first with inventory.merge(), or restock and withdraw the difference.';
	END IF;
	RETURN inventory._adjust(adjust.sku, adjust.on_hand, adjust.order_id, adjust.batch_id,
							 adjust.expected_version);
END
$$;
COMMENT ON FUNCTION inventory.adjust(text, bigint, text, integer, bigint) IS
	'stocktake: set the on_hand of sku to a counted value, on its node (not for a split SKU)';

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

CREATE FUNCTION inventory._available(sku text) RETURNS bigint
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON inventory.sku_hash(sku);
	SELECT inventory.available(sku);
$$;
COMMENT ON FUNCTION inventory._available(text) IS 'available() on the node of sku';

CREATE FUNCTION inventory.available(sku text) RETURNS bigint
	LANGUAGE plpgsql
	AS $$
DECLARE
	parts integer[] := inventory._bucket_parts(available.sku);
BEGIN
	IF parts IS NULL THEN
		RETURN inventory._available(available.sku);
	END IF;
	RETURN (SELECT pg_catalog.sum(a.available)::bigint
			  FROM inventory._available_at(inventory._sku_parts(available.sku), available.sku) a);
END
$$;
COMMENT ON FUNCTION inventory.available(text) IS
	'units of sku available now, from its node''s shared memory (a split SKU: summed over its buckets)';

-- The node's set_rules returns void, which PL/Proxy cannot receive: ask
-- for a constant after the call.  On the partitions given, those that
-- hold the SKU: every bucket of a split SKU.
CREATE FUNCTION inventory._set_rules_at(parts integer[], rule_sku text, max_per_buyer bigint,
										sale_starts timestamptz, sale_ends timestamptz)
	RETURNS SETOF integer
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT parts;
	RUN ON parts;
	SELECT 1 AS done
	  FROM inventory.sku s
	 CROSS JOIN LATERAL inventory.set_rules(s.sku, max_per_buyer, sale_starts, sale_ends) r
	 WHERE s.sku = rule_sku;
$$;
COMMENT ON FUNCTION inventory._set_rules_at(integer[], text, bigint, timestamptz, timestamptz) IS
	'set_rules() on those of the partitions that hold the SKU';

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
	LANGUAGE plpgsql
	AS $$
BEGIN
	-- the SKU's own partition first: its errors (unknown SKU, bad rules) are the node's
	PERFORM inventory._set_rules(set_rules.sku, set_rules.max_per_buyer,
								 set_rules.sale_starts, set_rules.sale_ends);
	IF inventory._bucket_parts(set_rules.sku) IS NOT NULL THEN
		PERFORM pg_catalog.count(*)
		   FROM inventory._set_rules_at(inventory._sku_parts(set_rules.sku), set_rules.sku,
										set_rules.max_per_buyer, set_rules.sale_starts,
										set_rules.sale_ends);
	END IF;
END
$$;
COMMENT ON FUNCTION inventory.set_rules(text, bigint, timestamptz, timestamptz) IS
	'set the rules of sku on its node, and on every bucket of a split SKU (NULL: no such rule), replacing those it had';

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

-- confirm() or cancel() (op) by key, in one statement on the node: each
-- branch sits under a one-time filter on op (also in a generic plan), so
-- the other operation's function never runs.
-- route: a RUN ON value, sku_hash(sku) or a partition number.
CREATE FUNCTION inventory._settle_at(op text, route integer, order_id text, batch_id integer)
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON route;
	SELECT * FROM inventory.confirm(order_id, batch_id) WHERE op = 'confirm'
	UNION ALL
	SELECT * FROM inventory.cancel(order_id, batch_id) WHERE op = 'cancel';
$$;
COMMENT ON FUNCTION inventory._settle_at(text, integer, text, integer) IS
	'confirm() or cancel() (op) on one partition';

CREATE FUNCTION inventory._settle_all(op text, order_id text, batch_id integer)
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	RUN ON ALL;
	SELECT * FROM inventory.confirm(order_id, batch_id) WHERE op = 'confirm'
	UNION ALL
	SELECT * FROM inventory.cancel(order_id, batch_id) WHERE op = 'cancel';
$$;
COMMENT ON FUNCTION inventory._settle_all(text, text, integer) IS
	'confirm() or cancel() (op) on every node';

-- confirm() or cancel() on those of the partitions that hold the key for
-- the SKU: the bucket of a split SKU that has the reservation
CREATE FUNCTION inventory._settle_keyed(op text, parts integer[], key_order text,
										key_batch integer, key_sku text)
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT parts;
	RUN ON parts;
	SELECT r.* FROM inventory.ledger l
	 CROSS JOIN LATERAL (
		SELECT * FROM inventory.confirm(l.order_id, l.batch_id) WHERE op = 'confirm'
		UNION ALL
		SELECT * FROM inventory.cancel(l.order_id, l.batch_id) WHERE op = 'cancel') r
	 WHERE l.order_id = key_order AND l.batch_id = key_batch AND l.sku = key_sku;
$$;
COMMENT ON FUNCTION inventory._settle_keyed(text, integer[], text, integer, text) IS
	'confirm() or cancel() (op) of a key of a SKU on those of the partitions that hold it';

-- confirm() or cancel() as the router routes it: with the SKU, on its
-- partition, or on the buckets of a split SKU; without it, on every node
CREATE FUNCTION inventory._settle(op text, order_id text, batch_id integer, sku text)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
DECLARE
	r inventory.result;
BEGIN
	IF _settle.sku IS NOT NULL AND inventory._bucket_parts(_settle.sku) IS NULL THEN
		SELECT * INTO r FROM inventory._settle_at(op, inventory.sku_hash(_settle.sku),
												  _settle.order_id, _settle.batch_id);
		RETURN r;
	END IF;
	RETURN inventory._answer_of_one(
		CASE WHEN _settle.sku IS NULL
			 THEN ARRAY(SELECT a FROM inventory._settle_all(op, _settle.order_id, _settle.batch_id) a)
			 ELSE ARRAY(SELECT a FROM inventory._settle_keyed(op, inventory._sku_parts(_settle.sku),
									_settle.order_id, _settle.batch_id, _settle.sku) a) END,
		op, _settle.order_id, _settle.batch_id);
END
$$;
COMMENT ON FUNCTION inventory._settle(text, text, integer, text) IS
	'confirm() or cancel() (op) by key, routed as the router routes them';

CREATE FUNCTION inventory.confirm(order_id text, batch_id integer DEFAULT 1,
								  sku text DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
BEGIN
	RETURN inventory._settle('confirm', confirm.order_id, confirm.batch_id, confirm.sku);
END
$$;
COMMENT ON FUNCTION inventory.confirm(text, integer, text) IS
	'confirm a PENDING reservation: its units leave on_hand; with sku, on its node, else on the node that knows the key';

CREATE FUNCTION inventory.cancel(order_id text, batch_id integer DEFAULT 1,
								 sku text DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
BEGIN
	RETURN inventory._settle('cancel', cancel.order_id, cancel.batch_id, cancel.sku);
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

-- extend() on those of the partitions that hold the key for the SKU: the
-- bucket of a split SKU that has the reservation
CREATE FUNCTION inventory._extend_keyed(parts integer[], key_order text, key_batch integer, ttl interval,
									key_sku text)
	RETURNS SETOF inventory.result
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT parts;
	RUN ON parts;
	SELECT r.* FROM inventory.ledger l
	 CROSS JOIN LATERAL inventory.extend(l.order_id, l.batch_id, ttl) r
	 WHERE l.order_id = key_order AND l.batch_id = key_batch AND l.sku = key_sku;
$$;
COMMENT ON FUNCTION inventory._extend_keyed(integer[], text, integer, interval, text) IS
	'extend() of a key of a SKU on those of the partitions that hold it';

CREATE FUNCTION inventory.extend(order_id text, batch_id integer, ttl interval,
								 sku text DEFAULT NULL)
	RETURNS inventory.result
	LANGUAGE plpgsql
	AS $$
BEGIN
	IF extend.sku IS NOT NULL AND inventory._bucket_parts(extend.sku) IS NOT NULL THEN
		RETURN inventory._answer_of_one(
			ARRAY(SELECT a FROM inventory._extend_keyed(inventory._sku_parts(extend.sku),
					extend.order_id, extend.batch_id, extend.ttl, extend.sku) a),
			'extend', extend.order_id, extend.batch_id);
	ELSIF extend.sku IS NOT NULL THEN
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
-- routes are the elements' hashes: hashtext(sku), or for a split SKU the
-- partition of the element's bucket.
CREATE FUNCTION inventory._reserve_many(routes integer[], ords integer[], skus text[],
										qtys bigint[], order_ids text[], ttl interval,
										buyer_ids text[])
	RETURNS TABLE (ord integer, ok boolean, status text, sku text, qty bigint,
				   state inventory.state, available bigint, version bigint,
				   expires_at timestamptz)
	LANGUAGE plproxy
	SET DateStyle = 'ISO, MDY' SET IntervalStyle = 'postgres'
	AS $$
	CLUSTER 'inventory_cluster';
	SPLIT routes, ords, skus, qtys, order_ids, buyer_ids;
	RUN ON routes;
	SELECT x.o AS ord, r.ok, r.status, r.sku, r.qty, r.state, r.available, r.version, r.expires_at
	  FROM inventory.reserve_many(skus, qtys, order_ids, ttl, buyer_ids) WITH ORDINALITY r
	  JOIN pg_catalog.unnest(ords) WITH ORDINALITY x(o, n) ON x.n OPERATOR(pg_catalog.=) r.ordinality;
$$;
COMMENT ON FUNCTION inventory._reserve_many(integer[], integer[], text[], bigint[], text[], interval, text[]) IS
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
	buyers text[];
	routes integer[];
	r record;
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
	buyers := coalesce(buyer_ids, pg_catalog.array_fill(NULL::text, ARRAY[n]));
	routes := ARRAY(SELECT inventory._route(skus[i], order_ids[i], 1, buyers[i])
					  FROM pg_catalog.generate_series(1, n) i);
	FOR r IN SELECT * FROM inventory._reserve_many(routes,
				ARRAY(SELECT pg_catalog.generate_series(1, n)),
				skus, qtys, order_ids, ttl, buyers) m ORDER BY m.ord LOOP
		-- an element of a split SKU that its bucket could not serve falls
		-- through the other buckets, as a reserve() would
		IF r.status IN ('insufficient', 'unknown_sku') AND inventory._bucket_parts(r.sku) IS NOT NULL THEN
			RETURN NEXT inventory.reserve(skus[r.ord], qtys[r.ord], order_ids[r.ord], 1, ttl,
										  NULL, buyers[r.ord]);
		ELSE
			RETURN NEXT ROW(r.ok, r.status, r.sku, r.qty, r.state, r.available, r.version,
							r.expires_at)::inventory.result;
		END IF;
	END LOOP;
END
$$;
COMMENT ON FUNCTION inventory.reserve_many(text[], bigint[], text[], interval, text[]) IS
	'independent reservations in one call: element i holds qtys[i] units of skus[i] for (order_ids[i], 1); each node reserves its elements in one transaction (an element of a split SKU its bucket cannot serve falls through alone); one result row each, in the order of the arrays';

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

-- Moves units into a partition's buckets for the lines of a refused cart
-- part that a split SKU's bucket could not serve; whether any moved.
CREATE FUNCTION inventory._cart_top_up(part integer, skus text[], qtys bigint[],
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
			moved := moved + inventory._top_up(l.sku, part, l.demand - l.available);
		END IF;
	END LOOP;
	RETURN moved > 0;
END
$$;
COMMENT ON FUNCTION inventory._cart_top_up(integer, text[], bigint[], inventory.result[]) IS
	'move units of the split SKUs that refused a cart part into its partition''s buckets; whether any moved';

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
			PERFORM inventory._settle_at('cancel', parts[k], order_id, batch_ids[k]);
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
	got inventory.result[];
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
	-- the partition of each line: its SKU's, or its bucket's for a split SKU
	parts := ARRAY(SELECT inventory._part_of_hash(inventory._route(skus[i], order_id,
												coalesce(batch_ids[i], i::integer), buyer_id))
					 FROM pg_catalog.generate_subscripts(skus, 1) i);

	-- one node: its own cart, atomic, in one call (again once after units
	-- of a split SKU moved into its bucket: a refused cart wrote nothing)
	IF (SELECT pg_catalog.count(DISTINCT x) FROM pg_catalog.unnest(parts) x) = 1 THEN
		FOR attempt IN 1 .. 2 LOOP
			res := ARRAY(SELECT c FROM inventory._reserve_cart_on(parts[1], order_id, skus, qtys,
																   ttl, buyer_id, batch_ids) c);
			EXIT WHEN attempt = 2
				OR NOT EXISTS (SELECT FROM pg_catalog.unnest(res) c WHERE NOT c.ok)
				OR NOT inventory._cart_top_up(parts[1], skus, qtys, res);
		END LOOP;
		RETURN QUERY SELECT * FROM pg_catalog.unnest(res);
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
			FOR attempt IN 1 .. 2 LOOP
				got := ARRAY(SELECT c FROM inventory._reserve_cart_on(p, order_id,
							ARRAY(SELECT skus[i] FROM pg_catalog.unnest(lines) i),
							ARRAY(SELECT qtys[i] FROM pg_catalog.unnest(lines) i),
							ttl, buyer_id,
							ARRAY(SELECT batch_ids[i] FROM pg_catalog.unnest(lines) i)) c);
				EXIT WHEN attempt = 2
					OR NOT EXISTS (SELECT FROM pg_catalog.unnest(got) c WHERE NOT c.ok)
					OR NOT inventory._cart_top_up(p,
							ARRAY(SELECT skus[i] FROM pg_catalog.unnest(lines) i),
							ARRAY(SELECT qtys[i] FROM pg_catalog.unnest(lines) i), got);
			END LOOP;
			k := 0;
			FOREACH r IN ARRAY got LOOP
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

-- a split SKU's buckets summed: one row per SKU
CREATE VIEW inventory.stock AS
SELECT s.sku, pg_catalog.sum(s.on_hand)::bigint AS on_hand,
	   pg_catalog.sum(s.reserved)::bigint AS reserved,
	   pg_catalog.sum(s.available)::bigint AS available,
	   pg_catalog.sum(s.version)::bigint AS version,
	   pg_catalog.max(s.max_per_buyer) AS max_per_buyer,
	   pg_catalog.max(s.sale_starts) AS sale_starts,
	   pg_catalog.max(s.sale_ends) AS sale_ends
  FROM inventory._stock() s
 GROUP BY s.sku;
COMMENT ON VIEW inventory.stock IS
	'per SKU: on_hand, reserved, available and version, computed from the tables of every node (a split SKU''s buckets summed)';
COMMENT ON COLUMN inventory.stock.sku IS 'the SKU';
COMMENT ON COLUMN inventory.stock.on_hand IS 'physical units: the base in inventory.sku plus unfolded movements';
COMMENT ON COLUMN inventory.stock.reserved IS 'units held by PENDING reservations';
COMMENT ON COLUMN inventory.stock.available IS 'on_hand - reserved';
COMMENT ON COLUMN inventory.stock.version IS 'grows by one with every committed change to the SKU (a split SKU: the sum of its buckets'' versions)';
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

CREATE VIEW inventory.sku_stats AS
SELECT s.sku, pg_catalog.sum(s.on_hand)::bigint AS on_hand,
	   pg_catalog.sum(s.reserved)::bigint AS reserved,
	   pg_catalog.sum(s.holds)::bigint AS holds,
	   pg_catalog.sum(s.available)::bigint AS available,
	   pg_catalog.sum(s.version)::bigint AS version,
	   pg_catalog.sum(s.in_flight)::integer AS in_flight,
	   pg_catalog.sum(s.unfolded)::bigint AS unfolded,
	   pg_catalog.sum(s.reserves)::bigint AS reserves,
	   pg_catalog.sum(s.rejects)::bigint AS rejects,
	   pg_catalog.sum(s.conflicts)::bigint AS conflicts,
	   pg_catalog.sum(s.confirms)::bigint AS confirms,
	   pg_catalog.sum(s.cancels)::bigint AS cancels,
	   pg_catalog.sum(s.expiries)::bigint AS expiries,
	   pg_catalog.sum(s.restocks)::bigint AS restocks,
	   pg_catalog.sum(s.adjusts)::bigint AS adjusts,
	   pg_catalog.min(s.loaded_at) AS loaded_at,
	   pg_catalog.max(s.last_used) AS last_used
  FROM inventory.sku_stats() s
 GROUP BY s.sku;
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
								OUT skus bigint, OUT holds bigint, OUT in_transit bigint)
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
	t record;
	n inventory.nodes;
BEGIN
	FOR i IN 0 .. inventory.partitions() - 1 LOOP
		SELECT o.option_value INTO conninfo
		  FROM pg_catalog.pg_foreign_server s, pg_catalog.pg_options_to_table(s.srvoptions) o
		 WHERE s.srvname = 'inventory_cluster' AND o.option_name = 'p' || i;
		n := ROW(i, inventory._conninfo_value(conninfo, 'dbname'),
				 inventory._conninfo_value(conninfo, 'host'),
				 inventory._conninfo_value(conninfo, 'port'), NULL, NULL, NULL, NULL, NULL);
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
		EXCEPTION WHEN OTHERS THEN
			n.reachable := false;
			n.skus := NULL;
			n.holds := NULL;
			GET STACKED DIAGNOSTICS n.error = MESSAGE_TEXT;
		END;
		rows := rows || n;
	END LOOP;
	-- units withdrawn from a partition by a transfer whose restock is not
	-- on its receiving partition (or that partition did not answer)
	FOREACH n IN ARRAY rows LOOP
		IF n.reachable THEN
			n.in_transit := coalesce((SELECT pg_catalog.sum(q)
										FROM ROWS FROM (pg_catalog.unnest(sent), pg_catalog.unnest(sent_qty)) x(o, q)
									   WHERE pg_catalog.split_part(o, ':', 3)::integer = n.part
										 AND NOT ((o || '/2') = ANY (moves))), 0);
		END IF;
		part := n.part; dbname := n.dbname; host := n.host; port := n.port;
		reachable := n.reachable; error := n.error; skus := n.skus; holds := n.holds;
		in_transit := n.in_transit;
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
REVOKE ALL ON inventory.stock, inventory.sku_stats, inventory.nodes, inventory.buckets,
	inventory.bucket_layout FROM PUBLIC;
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
	inventory._settle_at(text, integer, text, integer),
	inventory._settle_all(text, text, integer),
	inventory._settle_keyed(text, integer[], text, integer, text),
	inventory._settle(text, text, integer, text),
	inventory._extend_on(text, integer, interval, text),
	inventory._extend_all(text, integer, interval),
	inventory._confirm_order_all(text),
	inventory._cancel_order_all(text),
	inventory._order_rows(inventory.result[]),
	inventory._check_arrays(text, integer[], integer[]),
	inventory._check_elements(text[], bigint[], text[], text[]),
	inventory._reserve_many(integer[], integer[], text[], bigint[], text[], interval, text[]),
	inventory._reserve_cart_on(integer, text, text[], bigint[], interval, text, integer[]),
	inventory._cancel_lines(text, integer[], integer[], integer[]),
	inventory._stock(),
	inventory._available(text),
	inventory._bucket_parts(text),
	inventory._sku_parts(text),
	inventory._home(integer[], text),
	inventory._key_at(integer[], text, integer, text),
	inventory._key_part(text, text, integer, text, integer),
	inventory._route(text, text, integer, text),
	inventory._part_of_hash(integer),
	inventory._reserve_at(integer, text, bigint, text, integer, interval, bigint, text),
	inventory._available_at(integer[], text),
	inventory._top_up(text, integer, bigint),
	inventory._reserve_split(text, bigint, text, integer, interval, bigint, text, integer[]),
	inventory._reserve_short(text),
	inventory._cart_top_up(integer, text[], bigint[], inventory.result[]),
	inventory._extend_keyed(integer[], text, integer, interval, text)
TO inventory_app;
GRANT SELECT ON inventory.stock, inventory.bucket_layout, inventory.buckets TO inventory_app;

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
	inventory._node_info(integer),
	inventory._adjust(text, bigint, text, integer, bigint),
	inventory._set_rules_at(integer[], text, bigint, timestamptz, timestamptz),
	inventory.split(text, integer),
	inventory.merge(text),
	inventory.rebalance(text),
	inventory._withdraw_at(integer, text, bigint, text),
	inventory._restock_at(integer, text, bigint, text, bigint, timestamptz, timestamptz),
	inventory._rules_of(text),
	inventory._transfer(text, integer, integer, bigint),
	inventory._transfer_rows(integer[]),
	inventory._finish_transfers(text),
	inventory._misrouted_at(integer[], text, integer[]),
	inventory._forget_layouts(text),
	inventory._even_out(text),
	inventory._bucket_report(text)
TO inventory_admin;
GRANT INSERT ON inventory.bucket_layout TO inventory_admin;
GRANT SELECT ON inventory.sku_stats, inventory.nodes TO inventory_admin;

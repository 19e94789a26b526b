/* inventory--0.1.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION inventory" to load this file. \quit

-- The schema inventory is created by CREATE EXTENSION (see inventory.control).

------------------------------------------------------------------------------
-- The state type
------------------------------------------------------------------------------

CREATE TYPE inventory.state;

CREATE FUNCTION inventory.state_in(cstring) RETURNS inventory.state
	AS 'MODULE_PATHNAME', 'state_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION inventory.state_out(inventory.state) RETURNS cstring
	AS 'MODULE_PATHNAME', 'state_out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION inventory.state_recv(internal) RETURNS inventory.state
	AS 'MODULE_PATHNAME', 'state_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION inventory.state_send(inventory.state) RETURNS bytea
	AS 'MODULE_PATHNAME', 'state_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE inventory.state (
	INPUT = inventory.state_in,
	OUTPUT = inventory.state_out,
	RECEIVE = inventory.state_recv,
	SEND = inventory.state_send,
	INTERNALLENGTH = 1,
	PASSEDBYVALUE,
	ALIGNMENT = char,
	STORAGE = plain
);
COMMENT ON TYPE inventory.state IS
	'state of a reservation: PENDING, then CONFIRMED, CANCELLED or EXPIRED, which are final';

CREATE FUNCTION inventory.state_eq(inventory.state, inventory.state) RETURNS boolean
	AS 'MODULE_PATHNAME', 'state_eq' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION inventory.state_ne(inventory.state, inventory.state) RETURNS boolean
	AS 'MODULE_PATHNAME', 'state_ne' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION inventory.state_lt(inventory.state, inventory.state) RETURNS boolean
	AS 'MODULE_PATHNAME', 'state_lt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION inventory.state_le(inventory.state, inventory.state) RETURNS boolean
	AS 'MODULE_PATHNAME', 'state_le' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION inventory.state_gt(inventory.state, inventory.state) RETURNS boolean
	AS 'MODULE_PATHNAME', 'state_gt' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION inventory.state_ge(inventory.state, inventory.state) RETURNS boolean
	AS 'MODULE_PATHNAME', 'state_ge' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION inventory.state_cmp(inventory.state, inventory.state) RETURNS integer
	AS 'MODULE_PATHNAME', 'state_cmp' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION inventory.state_hash(inventory.state) RETURNS integer
	AS 'MODULE_PATHNAME', 'state_hash' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION inventory.state_hash_extended(inventory.state, bigint) RETURNS bigint
	AS 'MODULE_PATHNAME', 'state_hash_extended' LANGUAGE C IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;

-- The comparison operators live in pg_catalog, as those of built-in types
-- do, so that state = 'PENDING' works whatever the caller's search_path.
-- They take only inventory.state and are dropped with the extension.
CREATE OPERATOR pg_catalog.= (
	LEFTARG = inventory.state, RIGHTARG = inventory.state,
	FUNCTION = inventory.state_eq, COMMUTATOR = OPERATOR(pg_catalog.=),
	NEGATOR = OPERATOR(pg_catalog.<>), RESTRICT = eqsel, JOIN = eqjoinsel,
	HASHES, MERGES
);
CREATE OPERATOR pg_catalog.<> (
	LEFTARG = inventory.state, RIGHTARG = inventory.state,
	FUNCTION = inventory.state_ne, COMMUTATOR = OPERATOR(pg_catalog.<>),
	NEGATOR = OPERATOR(pg_catalog.=), RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR pg_catalog.< (
	LEFTARG = inventory.state, RIGHTARG = inventory.state,
	FUNCTION = inventory.state_lt, COMMUTATOR = OPERATOR(pg_catalog.>),
	NEGATOR = OPERATOR(pg_catalog.>=), RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR pg_catalog.<= (
	LEFTARG = inventory.state, RIGHTARG = inventory.state,
	FUNCTION = inventory.state_le, COMMUTATOR = OPERATOR(pg_catalog.>=),
	NEGATOR = OPERATOR(pg_catalog.>), RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR pg_catalog.> (
	LEFTARG = inventory.state, RIGHTARG = inventory.state,
	FUNCTION = inventory.state_gt, COMMUTATOR = OPERATOR(pg_catalog.<),
	NEGATOR = OPERATOR(pg_catalog.<=), RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR pg_catalog.>= (
	LEFTARG = inventory.state, RIGHTARG = inventory.state,
	FUNCTION = inventory.state_ge, COMMUTATOR = OPERATOR(pg_catalog.<=),
	NEGATOR = OPERATOR(pg_catalog.<), RESTRICT = scalargesel, JOIN = scalargejoinsel
);

CREATE OPERATOR CLASS inventory.state_ops
	DEFAULT FOR TYPE inventory.state USING btree AS
		OPERATOR 1 pg_catalog.<,
		OPERATOR 2 pg_catalog.<=,
		OPERATOR 3 pg_catalog.=,
		OPERATOR 4 pg_catalog.>=,
		OPERATOR 5 pg_catalog.>,
		FUNCTION 1 inventory.state_cmp(inventory.state, inventory.state);

CREATE OPERATOR CLASS inventory.state_ops
	DEFAULT FOR TYPE inventory.state USING hash AS
		OPERATOR 1 pg_catalog.=,
		FUNCTION 1 inventory.state_hash(inventory.state),
		FUNCTION 2 inventory.state_hash_extended(inventory.state, bigint);

CREATE FUNCTION inventory.can_transition(from_state inventory.state, to_state inventory.state)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'state_can_transition' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION inventory.can_transition(inventory.state, inventory.state) IS
	'whether a reservation may go from one state to another: PENDING to any final state, nothing else';

CREATE FUNCTION inventory.is_final(inventory.state) RETURNS boolean
	AS 'MODULE_PATHNAME', 'state_is_terminal' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION inventory.is_final(inventory.state) IS
	'whether a state is final (CONFIRMED, CANCELLED or EXPIRED)';

------------------------------------------------------------------------------
-- Tables
------------------------------------------------------------------------------

CREATE TABLE inventory.sku (
	sku			text COLLATE "C" PRIMARY KEY,
	on_hand		bigint NOT NULL DEFAULT 0,
	version		bigint NOT NULL DEFAULT 0,
	created_at	timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp()
);
COMMENT ON TABLE inventory.sku IS
	'one row per SKU: the base counters into which settled movements are folded';
COMMENT ON COLUMN inventory.sku.on_hand IS
	'base on_hand; the current value adds the unfolded ledger movements (see inventory.stock)';
COMMENT ON COLUMN inventory.sku.version IS
	'base version; the current value adds the unfolded ledger movements (see inventory.stock)';

CREATE TABLE inventory.ledger (
	order_id	text COLLATE "C" NOT NULL,
	batch_id	integer NOT NULL,
	kind		text COLLATE "C" NOT NULL,
	sku			text COLLATE "C" NOT NULL,
	qty			bigint NOT NULL,
	counted		bigint,
	state		inventory.state,
	created_at	timestamptz NOT NULL DEFAULT pg_catalog.statement_timestamp(),
	expires_at	timestamptz,
	settled_at	timestamptz,
	folded		boolean NOT NULL DEFAULT false,
	PRIMARY KEY (order_id, batch_id)
) WITH (
	-- room on each page to settle reservations in place (HOT updates)
	fillfactor = 85,
	-- a fold leaves the replaced row versions in ledger_sku_idx, where a
	-- load of the SKU meets them until VACUUM: vacuum early
	autovacuum_vacuum_scale_factor = 0.01,
	autovacuum_vacuum_insert_scale_factor = 0.05
);
COMMENT ON TABLE inventory.ledger IS
	'one row per movement (reserve, restock, adjust), unique by (order_id, batch_id)';
COMMENT ON COLUMN inventory.ledger.kind IS 'reserve, restock or adjust';
COMMENT ON COLUMN inventory.ledger.qty IS
	'reserve: units held; restock: units added; adjust: change of on_hand';
COMMENT ON COLUMN inventory.ledger.counted IS 'adjust: the on_hand counted';
COMMENT ON COLUMN inventory.ledger.state IS 'reserve: PENDING, CONFIRMED, CANCELLED or EXPIRED';
COMMENT ON COLUMN inventory.ledger.settled_at IS 'when the reservation left PENDING';
COMMENT ON COLUMN inventory.ledger.folded IS
	'the movement''s effect has been moved into inventory.sku by the worker';

-- No index covers state or settled_at, so that confirming, cancelling or
-- expiring a reservation updates its row in place (a HOT update) and
-- touches no index.
-- loads a SKU's unfolded movements; finds those to fold; any movement of a SKU
CREATE INDEX ledger_sku_idx ON inventory.ledger (sku, folded);
-- finds overdue reservations: those not folded, by expires_at (a plain
-- index, not a partial one, spares every insert evaluating a predicate)
CREATE INDEX ledger_due_idx ON inventory.ledger (folded, expires_at);

-- keep the data in pg_dump; a restore passes the trigger, which recognises
-- and checks it (docs/operations.md, Backup and restore)
SELECT pg_catalog.pg_extension_config_dump('inventory.sku', '');
SELECT pg_catalog.pg_extension_config_dump('inventory.ledger', '');

------------------------------------------------------------------------------
-- The one enforcement point
------------------------------------------------------------------------------

CREATE FUNCTION inventory.enforce() RETURNS trigger
	AS 'MODULE_PATHNAME', 'inventory_enforce' LANGUAGE C;
COMMENT ON FUNCTION inventory.enforce() IS
	'checks every write to inventory.sku and inventory.ledger and registers it with the cache';

CREATE TRIGGER a_check BEFORE INSERT OR UPDATE OR DELETE ON inventory.ledger
	FOR EACH ROW EXECUTE FUNCTION inventory.enforce();
CREATE TRIGGER z_register AFTER INSERT OR UPDATE OR DELETE ON inventory.ledger
	FOR EACH ROW EXECUTE FUNCTION inventory.enforce();
CREATE TRIGGER no_truncate BEFORE TRUNCATE ON inventory.ledger
	FOR EACH STATEMENT EXECUTE FUNCTION inventory.enforce();
CREATE TRIGGER a_check BEFORE INSERT OR UPDATE OR DELETE ON inventory.sku
	FOR EACH ROW EXECUTE FUNCTION inventory.enforce();
CREATE TRIGGER z_register AFTER INSERT OR UPDATE OR DELETE ON inventory.sku
	FOR EACH ROW EXECUTE FUNCTION inventory.enforce();
CREATE TRIGGER no_truncate BEFORE TRUNCATE ON inventory.sku
	FOR EACH STATEMENT EXECUTE FUNCTION inventory.enforce();

-- fire under session_replication_role = replica too
ALTER TABLE inventory.ledger ENABLE ALWAYS TRIGGER a_check;
ALTER TABLE inventory.ledger ENABLE ALWAYS TRIGGER z_register;
ALTER TABLE inventory.ledger ENABLE ALWAYS TRIGGER no_truncate;
ALTER TABLE inventory.sku ENABLE ALWAYS TRIGGER a_check;
ALTER TABLE inventory.sku ENABLE ALWAYS TRIGGER z_register;
ALTER TABLE inventory.sku ENABLE ALWAYS TRIGGER no_truncate;

------------------------------------------------------------------------------
-- Counters from the tables
------------------------------------------------------------------------------

CREATE FUNCTION inventory.effect_on_hand(kind text, state inventory.state, qty bigint)
	RETURNS bigint AS 'MODULE_PATHNAME', 'inventory_effect_on_hand'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION inventory.effect_reserved(kind text, state inventory.state, qty bigint)
	RETURNS bigint AS 'MODULE_PATHNAME', 'inventory_effect_reserved'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION inventory.effect_version(kind text, state inventory.state, qty bigint)
	RETURNS bigint AS 'MODULE_PATHNAME', 'inventory_effect_version'
	LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION inventory.effect_on_hand(text, inventory.state, bigint) IS
	'what a ledger movement adds to its SKU''s on_hand';
COMMENT ON FUNCTION inventory.effect_reserved(text, inventory.state, bigint) IS
	'what a ledger movement adds to its SKU''s reserved';
COMMENT ON FUNCTION inventory.effect_version(text, inventory.state, bigint) IS
	'what a ledger movement adds to its SKU''s version';

CREATE VIEW inventory.stock AS
SELECT s.sku,
	   s.on_hand + COALESCE(m.on_hand, 0) AS on_hand,
	   COALESCE(m.reserved, 0) AS reserved,
	   s.on_hand + COALESCE(m.on_hand, 0) - COALESCE(m.reserved, 0) AS available,
	   s.version + COALESCE(m.version, 0) AS version
  FROM inventory.sku s
  LEFT JOIN (
	SELECT l.sku,
		   pg_catalog.sum(inventory.effect_on_hand(l.kind, l.state, l.qty))::bigint AS on_hand,
		   pg_catalog.sum(inventory.effect_reserved(l.kind, l.state, l.qty))::bigint AS reserved,
		   pg_catalog.sum(inventory.effect_version(l.kind, l.state, l.qty))::bigint AS version
	  FROM inventory.ledger l
	 WHERE NOT l.folded
	 GROUP BY l.sku
  ) m ON m.sku OPERATOR(pg_catalog.=) s.sku;
COMMENT ON VIEW inventory.stock IS
	'per SKU: on_hand, reserved, available and version, computed from the tables';

------------------------------------------------------------------------------
-- The API
------------------------------------------------------------------------------

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
	'outcome of reserve, confirm, cancel, extend, restock and adjust';

CREATE FUNCTION inventory.reserve(sku text, qty bigint, order_id text,
								  batch_id integer DEFAULT 1,
								  ttl interval DEFAULT NULL,
								  expected_version bigint DEFAULT NULL)
	RETURNS inventory.result
	AS 'MODULE_PATHNAME', 'inventory_reserve' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.reserve(text, bigint, text, integer, interval, bigint) IS
	'hold qty units of sku for (order_id, batch_id) until confirm, cancel or expiry';

CREATE FUNCTION inventory.confirm(order_id text, batch_id integer DEFAULT 1)
	RETURNS inventory.result
	AS 'MODULE_PATHNAME', 'inventory_confirm' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.confirm(text, integer) IS
	'confirm a PENDING reservation: its units leave on_hand';

CREATE FUNCTION inventory.cancel(order_id text, batch_id integer DEFAULT 1)
	RETURNS inventory.result
	AS 'MODULE_PATHNAME', 'inventory_cancel' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.cancel(text, integer) IS
	'cancel a PENDING reservation: its units go back on sale';

CREATE FUNCTION inventory.extend(order_id text, batch_id integer, ttl interval)
	RETURNS inventory.result
	AS 'MODULE_PATHNAME', 'inventory_extend' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.extend(text, integer, interval) IS
	'move the expiry of a PENDING reservation to now + ttl';

CREATE FUNCTION inventory.restock(sku text, qty bigint, order_id text,
								  batch_id integer DEFAULT 1)
	RETURNS inventory.result
	AS 'MODULE_PATHNAME', 'inventory_restock' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.restock(text, bigint, text, integer) IS
	'add qty units to sku, creating the SKU on first use';

CREATE FUNCTION inventory.adjust(sku text, on_hand bigint, order_id text,
								 batch_id integer DEFAULT 1,
								 expected_version bigint DEFAULT NULL)
	RETURNS inventory.result
	AS 'MODULE_PATHNAME', 'inventory_adjust' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.adjust(text, bigint, text, integer, bigint) IS
	'stocktake: set the on_hand of sku to a counted value';

CREATE FUNCTION inventory.available(sku text) RETURNS bigint
	AS 'MODULE_PATHNAME', 'inventory_available' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.available(text) IS
	'units of sku available now, from shared memory (not bound to the caller''s snapshot)';

CREATE FUNCTION inventory.expire(max_rows integer DEFAULT NULL) RETURNS bigint
	AS 'MODULE_PATHNAME', 'inventory_expire' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.expire(integer) IS
	'expire overdue PENDING reservations now, oldest first; returns how many';

CREATE FUNCTION inventory.fold(max_rows integer DEFAULT NULL) RETURNS bigint
	AS 'MODULE_PATHNAME', 'inventory_fold' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.fold(integer) IS
	'move the effect of settled movements into inventory.sku now (the worker does it too); returns how many';

CREATE FUNCTION inventory.verify()
	RETURNS TABLE (sku text, what text, cached bigint, truth bigint)
	AS 'MODULE_PATHNAME', 'inventory_verify' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.verify() IS
	'one row for every counter where the cache differs from the tables; empty means consistent';

------------------------------------------------------------------------------
-- Statistics
------------------------------------------------------------------------------

CREATE FUNCTION inventory.sku_stats(
	OUT sku text, OUT on_hand bigint, OUT reserved bigint, OUT holds bigint,
	OUT available bigint, OUT version bigint, OUT in_flight integer,
	OUT unfolded bigint, OUT reserves bigint, OUT rejects bigint, OUT conflicts bigint,
	OUT confirms bigint, OUT cancels bigint, OUT expiries bigint,
	OUT restocks bigint, OUT adjusts bigint,
	OUT loaded_at timestamptz, OUT last_used timestamptz)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_sku_stats' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.sku_stats() IS
	'the cached SKUs of this database, with their live counters and statistics';

CREATE VIEW inventory.sku_stats AS SELECT * FROM inventory.sku_stats();
COMMENT ON VIEW inventory.sku_stats IS
	'the cached SKUs of this database, with their live counters and statistics';

CREATE FUNCTION inventory.stats_reset() RETURNS void
	AS 'MODULE_PATHNAME', 'inventory_stats_reset' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.stats_reset() IS
	'zero the statistics of this database''s cached SKUs';

CREATE FUNCTION inventory.cache_info(
	OUT capacity bigint, OUT entries bigint, OUT bytes_per_entry bigint,
	OUT loads bigint, OUT evictions bigint)
	RETURNS record
	AS 'MODULE_PATHNAME', 'inventory_cache_info' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.cache_info() IS
	'size and activity of the shared-memory cache, for all databases';

CREATE FUNCTION inventory.worker_status(
	OUT datid oid, OUT datname text, OUT pid integer, OUT state text,
	OUT started_at timestamptz, OUT last_run timestamptz, OUT rounds bigint,
	OUT expired bigint, OUT folded bigint, OUT lag interval,
	OUT last_wake timestamptz)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_worker_status' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.worker_status() IS
	'the background worker of each served database';

CREATE VIEW inventory.worker_status AS SELECT * FROM inventory.worker_status();
COMMENT ON VIEW inventory.worker_status IS
	'the background worker of each served database: last run, rows expired and folded, lag';

------------------------------------------------------------------------------
-- Privileges
--
-- Two roles, shared by every database of the server, each granted what it
-- needs in every database where the extension is created:
--   inventory_app    reserve, confirm, cancel, extend; read available and
--                    inventory.stock
--   inventory_admin  all of inventory_app, and restock, adjust, verify,
--                    expire, fold, the statistics, and direct DML on the
--                    tables (which the trigger still checks)
-- PUBLIC gets the schema's names, the state type and its functions, and
-- nothing else.  The functions that touch the tables are SECURITY DEFINER:
-- the roles need no privilege on the tables themselves.  Every statement
-- they run is schema-qualified and runs with search_path pinned (src/tables/stmt.c).
------------------------------------------------------------------------------

DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'inventory_app') THEN
		CREATE ROLE inventory_app NOLOGIN;
	END IF;
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'inventory_admin') THEN
		CREATE ROLE inventory_admin NOLOGIN;
	END IF;
	IF NOT pg_catalog.pg_has_role('inventory_admin', 'inventory_app', 'MEMBER') THEN
		GRANT inventory_app TO inventory_admin;
	END IF;
END
$$;

REVOKE ALL ON TABLE inventory.sku, inventory.ledger FROM PUBLIC;
REVOKE ALL ON inventory.stock, inventory.sku_stats, inventory.worker_status FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION
	inventory.reserve(text, bigint, text, integer, interval, bigint),
	inventory.confirm(text, integer),
	inventory.cancel(text, integer),
	inventory.extend(text, integer, interval),
	inventory.restock(text, bigint, text, integer),
	inventory.adjust(text, bigint, text, integer, bigint),
	inventory.available(text),
	inventory.expire(integer),
	inventory.fold(integer),
	inventory.verify(),
	inventory.worker_status(),
	inventory.sku_stats(),
	inventory.stats_reset(),
	inventory.cache_info(),
	inventory.enforce()
FROM PUBLIC;

GRANT USAGE ON SCHEMA inventory TO PUBLIC;

GRANT EXECUTE ON FUNCTION
	inventory.reserve(text, bigint, text, integer, interval, bigint),
	inventory.confirm(text, integer),
	inventory.cancel(text, integer),
	inventory.extend(text, integer, interval),
	inventory.available(text)
TO inventory_app;
GRANT SELECT ON inventory.stock TO inventory_app;

GRANT EXECUTE ON FUNCTION
	inventory.restock(text, bigint, text, integer),
	inventory.adjust(text, bigint, text, integer, bigint),
	inventory.expire(integer),
	inventory.fold(integer),
	inventory.verify(),
	inventory.worker_status(),
	inventory.sku_stats(),
	inventory.stats_reset(),
	inventory.cache_info()
TO inventory_admin;
GRANT SELECT ON inventory.sku_stats, inventory.worker_status TO inventory_admin;
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE inventory.sku, inventory.ledger
	TO inventory_admin;

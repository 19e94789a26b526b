/* inventory--0.2--0.3.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION inventory UPDATE TO '0.3'" to load this file. \quit

------------------------------------------------------------------------------
-- A movement's answer counts its own units
--
-- The available units a call answers are those that will be available once
-- the caller's transaction commits: a restock of 10 units of a new SKU
-- answers 10 (it answered 0, the live count at the call, in which the
-- restock's own units are not on sale until it commits).
------------------------------------------------------------------------------

COMMENT ON COLUMN inventory.result.available IS
	'units available once the caller''s transaction commits, if nothing else commits meanwhile: the live count from shared memory (holds in flight taken out) plus what the transaction itself adds; NULL when the SKU does not exist';

------------------------------------------------------------------------------
-- The express lane: one reservation per call, committed together with
-- other callers' by the database's express writer
------------------------------------------------------------------------------

CREATE FUNCTION inventory.reserve_now(sku text, qty bigint, order_id text,
									  batch_id integer DEFAULT 1,
									  ttl interval DEFAULT NULL,
									  buyer_id text DEFAULT NULL)
	RETURNS text
	AS 'MODULE_PATHNAME', 'inventory_reserve_now' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.reserve_now(text, bigint, text, integer, interval, text) IS
	'reserve() in a commit of its own, shared with other callers and durable when it answers; outside a transaction block only; answers the status';

REVOKE EXECUTE ON FUNCTION inventory.reserve_now(text, bigint, text, integer, interval, text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.reserve_now(text, bigint, text, integer, interval, text)
TO inventory_app;

CREATE FUNCTION inventory.express_status(
	OUT datid oid, OUT datname text, OUT writer_pid integer,
	OUT started_at timestamptz, OUT queued integer, OUT batches bigint,
	OUT rows bigint, OUT rows_per_batch double precision, OUT max_batch bigint,
	OUT sent_back bigint, OUT failed bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_express_status' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.express_status() IS
	'every database with an express writer: its queue, its batches and the calls it sent back to wait';

CREATE VIEW inventory.express_status AS SELECT * FROM inventory.express_status();
COMMENT ON VIEW inventory.express_status IS
	'every database with an express writer: its queue, its batches and the calls it sent back to wait';
COMMENT ON COLUMN inventory.express_status.datid IS 'the database';
COMMENT ON COLUMN inventory.express_status.datname IS 'its name';
COMMENT ON COLUMN inventory.express_status.writer_pid IS 'its express writer; NULL while it starts';
COMMENT ON COLUMN inventory.express_status.started_at IS 'when the writer started';
COMMENT ON COLUMN inventory.express_status.queued IS 'reserve_now() calls queued for its next batch';
COMMENT ON COLUMN inventory.express_status.batches IS 'batches the writer committed since it started';
COMMENT ON COLUMN inventory.express_status.rows IS 'reservations written in them';
COMMENT ON COLUMN inventory.express_status.rows_per_batch IS 'rows / batches';
COMMENT ON COLUMN inventory.express_status.max_batch IS 'the most reservations in one batch';
COMMENT ON COLUMN inventory.express_status.sent_back IS
	'calls sent back to wait in their own session for a key, a buyer or the ledger that another transaction held';
COMMENT ON COLUMN inventory.express_status.failed IS 'calls that failed with an error in the writer';

CREATE FUNCTION inventory.express_fallbacks() RETURNS bigint
	AS 'MODULE_PATHNAME', 'inventory_express_fallbacks' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.express_fallbacks() IS
	'reserve_now() calls of this server, since it started, that reserved in their own transaction because no express writer could be had';

REVOKE ALL ON inventory.express_status FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION inventory.express_status(), inventory.express_fallbacks() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.express_status(), inventory.express_fallbacks() TO inventory_admin;
GRANT SELECT ON inventory.express_status TO inventory_admin;

------------------------------------------------------------------------------
-- inventory_monitor: reads every figure and writes nothing, for monitoring
-- (a Prometheus exporter's role), in the style of pg_monitor
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
	inventory.cache_info(),
	inventory.worker_status(),
	inventory.key_filter_info(),
	inventory.express_status(),
	inventory.express_fallbacks(),
	inventory.verify()
TO inventory_monitor;
GRANT SELECT ON inventory.stock, inventory.sku_stats, inventory.worker_status,
	inventory.key_filter, inventory.express_status
TO inventory_monitor;

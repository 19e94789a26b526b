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
	AS 'MODULE_PATHNAME', 'inventory_reserve_now' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.reserve_now(text, bigint, text, integer, interval, text) IS
	'reserve() in a commit of its own, shared with other callers and durable when it answers; outside a transaction block only; answers the status';

REVOKE EXECUTE ON FUNCTION inventory.reserve_now(text, bigint, text, integer, interval, text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.reserve_now(text, bigint, text, integer, interval, text)
TO inventory_app;

CREATE FUNCTION inventory.reserve_now_result(sku text, qty bigint, order_id text,
											 batch_id integer DEFAULT 1,
											 ttl interval DEFAULT NULL,
											 buyer_id text DEFAULT NULL)
	RETURNS inventory.result
	AS 'MODULE_PATHNAME', 'inventory_reserve_now_result' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.reserve_now_result(text, bigint, text, integer, interval, text) IS
	'reserve_now() answering the whole inventory.result (expires_at for a checkout''s countdown); outside a transaction block only';

REVOKE EXECUTE ON FUNCTION inventory.reserve_now_result(text, bigint, text, integer, interval, text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.reserve_now_result(text, bigint, text, integer, interval, text)
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

------------------------------------------------------------------------------
-- Figures of every database, for a monitoring tool connected to one
------------------------------------------------------------------------------

CREATE FUNCTION inventory.call_stats(
	OUT datname name, OUT call text, OUT status text, OUT calls bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_call_stats' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.call_stats() IS
	'what callers were told since the server started: the answers of every call by status, in every database';

CREATE VIEW inventory.call_stats AS SELECT * FROM inventory.call_stats();
COMMENT ON VIEW inventory.call_stats IS
	'what callers were told since the server started: the answers of every call by status, in every database';
COMMENT ON COLUMN inventory.call_stats.datname IS 'the database';
COMMENT ON COLUMN inventory.call_stats.call IS 'the function called: reserve, reserve_now, reserve_many, reserve_cart, confirm, cancel, extend, confirm_order, cancel_order, restock, adjust or withdraw';
COMMENT ON COLUMN inventory.call_stats.status IS 'the status it answered; a call answering a set counts each row';
COMMENT ON COLUMN inventory.call_stats.calls IS 'how many times, since the server started, whether or not the caller''s transaction then committed';

CREATE FUNCTION inventory.movement_stats(
	OUT datname name, OUT movement text, OUT committed bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_movement_stats' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.movement_stats() IS
	'the movements committed since the server started, by kind, in every database';

CREATE VIEW inventory.movement_stats AS SELECT * FROM inventory.movement_stats();
COMMENT ON VIEW inventory.movement_stats IS
	'the movements committed since the server started, by kind, in every database';
COMMENT ON COLUMN inventory.movement_stats.datname IS 'the database';
COMMENT ON COLUMN inventory.movement_stats.movement IS 'reserve, confirm, cancel, expire, extend, restock, stocktake or withdraw';
COMMENT ON COLUMN inventory.movement_stats.committed IS 'how many committed since the server started, by any call, worker or statement';

CREATE FUNCTION inventory.cache_by_database(
	OUT datname name, OUT entries bigint, OUT holds bigint, OUT pins bigint,
	OUT unfolded bigint, OUT restoring_since timestamptz)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_cache_by_database' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.cache_by_database() IS
	'every database''s SKUs in the cache, summed: holds of transactions in flight, and a restore under way';

CREATE VIEW inventory.cache_by_database AS SELECT * FROM inventory.cache_by_database();
COMMENT ON VIEW inventory.cache_by_database IS
	'every database''s SKUs in the cache, summed: holds of transactions in flight, and a restore under way';
COMMENT ON COLUMN inventory.cache_by_database.datname IS 'the database';
COMMENT ON COLUMN inventory.cache_by_database.entries IS 'its SKUs in the cache';
COMMENT ON COLUMN inventory.cache_by_database.holds IS 'units held by transactions in flight, not committed yet';
COMMENT ON COLUMN inventory.cache_by_database.pins IS 'transactions with a change in flight, counted once per SKU they change';
COMMENT ON COLUMN inventory.cache_by_database.unfolded IS 'settled movements the worker has not folded yet';
COMMENT ON COLUMN inventory.cache_by_database.restoring_since IS 'when a restore of its tables began, while it runs: sales there are refused until it ends';

CREATE FUNCTION inventory.hot_skus(
	OUT datname name, OUT sku text, OUT rank integer, OUT on_hand bigint,
	OUT reserved bigint, OUT holds bigint, OUT available bigint,
	OUT reserves bigint, OUT rejects bigint, OUT confirms bigint,
	OUT held bigint, OUT sold bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_hot_skus' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.hot_skus() IS
	'each database''s hottest SKUs in the cache, at most inventory.hot_skus of them: those with the most reserves committed and refused since they were loaded';

CREATE VIEW inventory.hot_skus AS SELECT * FROM inventory.hot_skus();
COMMENT ON VIEW inventory.hot_skus IS
	'each database''s hottest SKUs in the cache, at most inventory.hot_skus of them: those with the most reserves committed and refused since they were loaded';
COMMENT ON COLUMN inventory.hot_skus.datname IS 'the database';
COMMENT ON COLUMN inventory.hot_skus.sku IS 'the SKU';
COMMENT ON COLUMN inventory.hot_skus.rank IS '1 for the hottest of its database';
COMMENT ON COLUMN inventory.hot_skus.on_hand IS 'units in stock, committed';
COMMENT ON COLUMN inventory.hot_skus.reserved IS 'units reserved, committed';
COMMENT ON COLUMN inventory.hot_skus.holds IS 'units held by transactions in flight';
COMMENT ON COLUMN inventory.hot_skus.available IS 'on_hand - reserved - holds';
COMMENT ON COLUMN inventory.hot_skus.reserves IS 'reservations committed since the SKU was loaded into the cache';
COMMENT ON COLUMN inventory.hot_skus.rejects IS 'reserves refused as insufficient since it was loaded';
COMMENT ON COLUMN inventory.hot_skus.confirms IS 'confirms committed since it was loaded';
COMMENT ON COLUMN inventory.hot_skus.held IS 'units of the reservations committed since it was loaded (reserves counts them as calls)';
COMMENT ON COLUMN inventory.hot_skus.sold IS 'units confirmed since it was loaded (confirms counts them as calls)';

REVOKE ALL ON inventory.call_stats, inventory.movement_stats,
	inventory.cache_by_database, inventory.hot_skus FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION inventory.call_stats(), inventory.movement_stats(),
	inventory.cache_by_database(), inventory.hot_skus() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.call_stats(), inventory.movement_stats(),
	inventory.cache_by_database(), inventory.hot_skus()
TO inventory_admin, inventory_monitor;
GRANT SELECT ON inventory.call_stats, inventory.movement_stats,
	inventory.cache_by_database, inventory.hot_skus
TO inventory_admin, inventory_monitor;

CREATE FUNCTION inventory.verify_status(
	OUT datname name, OUT verified_at timestamptz, OUT checked bigint,
	OUT drift bigint, OUT skipped bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_verify_status' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.verify_status() IS
	'the last background verify of every database the workers serve (inventory.verify_interval): when, and what it found';

CREATE VIEW inventory.verify_status AS SELECT * FROM inventory.verify_status();
COMMENT ON VIEW inventory.verify_status IS
	'the last background verify of every database the workers serve (inventory.verify_interval): when, and what it found';
COMMENT ON COLUMN inventory.verify_status.datname IS 'the database';
COMMENT ON COLUMN inventory.verify_status.verified_at IS 'when a worker last compared its cache with its tables; NULL: not since the server started';
COMMENT ON COLUMN inventory.verify_status.checked IS 'SKUs of the cache compared';
COMMENT ON COLUMN inventory.verify_status.drift IS 'differences found: the rows inventory.verify() would have returned; 0 is the only right answer';
COMMENT ON COLUMN inventory.verify_status.skipped IS 'SKUs not compared because transactions kept changing them';

REVOKE ALL ON inventory.verify_status FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION inventory.verify_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.verify_status() TO inventory_admin, inventory_monitor;
GRANT SELECT ON inventory.verify_status TO inventory_admin, inventory_monitor;

------------------------------------------------------------------------------
-- A restore that stops half-way
------------------------------------------------------------------------------

CREATE TABLE inventory.restore_state (
	started_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
	sku_restored boolean NOT NULL DEFAULT false,
	ledger_restored boolean NOT NULL DEFAULT false,
	one_row boolean PRIMARY KEY DEFAULT true CHECK (one_row)
);
COMMENT ON TABLE inventory.restore_state IS
	'a row while a restore of this database is incomplete: one of inventory.sku and inventory.ledger restored, the other not since; nothing is sold meanwhile (not dumped)';
COMMENT ON COLUMN inventory.restore_state.started_at IS 'when the first restoring COPY began';
COMMENT ON COLUMN inventory.restore_state.sku_restored IS 'whether inventory.sku has been restored since';
COMMENT ON COLUMN inventory.restore_state.ledger_restored IS 'whether inventory.ledger has been restored since';
COMMENT ON COLUMN inventory.restore_state.one_row IS 'there is at most one row';
REVOKE ALL ON inventory.restore_state FROM PUBLIC;
GRANT SELECT ON inventory.restore_state TO inventory_admin, inventory_monitor;

CREATE FUNCTION inventory.restore_finish() RETURNS void
	AS 'MODULE_PATHNAME', 'inventory_restore_finish' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.restore_finish() IS
	'ends a restore of this database that stands incomplete, once both tables are there: checks every SKU, then sells again';

CREATE FUNCTION inventory.restore_abandon() RETURNS void
	AS 'MODULE_PATHNAME', 'inventory_restore_abandon' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.restore_abandon() IS
	'ends a restore of this database that stands incomplete without its missing table: the SKUs sell from what is there, unchecked';

REVOKE EXECUTE ON FUNCTION inventory.restore_finish(), inventory.restore_abandon() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.restore_finish(), inventory.restore_abandon() TO inventory_admin;

------------------------------------------------------------------------------
-- Asking before expiring: the reconciler
------------------------------------------------------------------------------

CREATE FUNCTION inventory.set_reconciler(fn regprocedure,
										  timeout interval DEFAULT NULL,
										  retry interval DEFAULT NULL,
										  max_asks integer DEFAULT NULL,
										  max_wait interval DEFAULT NULL)
	RETURNS void
	AS 'MODULE_PATHNAME', 'inventory_set_reconciler' LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.set_reconciler(regprocedure, interval, interval, integer, interval) IS
	'names the function (order_id text, batch_id integer) RETURNS text that the expiry asks, as its owner, about each overdue order: confirm, cancel, expire or wait; with its timing (NULL: the server''s setting, also its cap); NULL removes it';
REVOKE EXECUTE ON FUNCTION inventory.set_reconciler(regprocedure, interval, interval, integer, interval)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.set_reconciler(regprocedure, interval, interval, integer, interval)
TO inventory_admin;

CREATE FUNCTION inventory.stop_worker() RETURNS boolean
	AS 'MODULE_PATHNAME', 'inventory_stop_worker' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.stop_worker() IS
	'ends the background worker serving this database now, if one does (true): a reconciler that does not return ends with it, its ask counted as failed';
REVOKE EXECUTE ON FUNCTION inventory.stop_worker() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.stop_worker() TO inventory_admin;

CREATE TABLE inventory.reconcile_wait (
	order_id text COLLATE "C" PRIMARY KEY,
	asks integer NOT NULL,
	first_asked timestamptz NOT NULL,
	next_ask timestamptz NOT NULL,
	last_answer text
);
COMMENT ON TABLE inventory.reconcile_wait IS
	'the overdue orders whose reconciler answered wait, or could not be asked: when to ask again (not dumped)';
COMMENT ON COLUMN inventory.reconcile_wait.order_id IS 'the order, whose overdue PENDING lines wait';
COMMENT ON COLUMN inventory.reconcile_wait.asks IS 'asks so far; at the reconciler''s max_asks the order is expired';
COMMENT ON COLUMN inventory.reconcile_wait.first_asked IS 'when it was first asked about';
COMMENT ON COLUMN inventory.reconcile_wait.next_ask IS 'when it is asked again';
COMMENT ON COLUMN inventory.reconcile_wait.last_answer IS 'wait, or why the last ask failed';
REVOKE ALL ON inventory.reconcile_wait FROM PUBLIC;
GRANT SELECT ON inventory.reconcile_wait TO inventory_admin;

CREATE VIEW inventory.reconcile_waiting AS
SELECT w.order_id, pg_catalog.count(*) AS lines, pg_catalog.sum(l.qty)::bigint AS units,
	   pg_catalog.min(l.expires_at) AS expires_at, w.asks, w.next_ask, w.last_answer
  FROM inventory.reconcile_wait w
  JOIN inventory.ledger l ON l.order_id OPERATOR(pg_catalog.=) w.order_id
 WHERE l.state OPERATOR(pg_catalog.=) 'PENDING'
 GROUP BY w.order_id, w.asks, w.next_ask, w.last_answer;
COMMENT ON VIEW inventory.reconcile_waiting IS
	'the overdue orders of this database that wait for their reconciler''s next ask, with the units they hold';
COMMENT ON COLUMN inventory.reconcile_waiting.order_id IS 'the order';
COMMENT ON COLUMN inventory.reconcile_waiting.lines IS 'its PENDING reservations';
COMMENT ON COLUMN inventory.reconcile_waiting.units IS 'the units they hold';
COMMENT ON COLUMN inventory.reconcile_waiting.expires_at IS 'when the first of them fell due';
COMMENT ON COLUMN inventory.reconcile_waiting.asks IS 'asks so far; at the reconciler''s max_asks the order is expired';
COMMENT ON COLUMN inventory.reconcile_waiting.next_ask IS 'when it is asked again';
COMMENT ON COLUMN inventory.reconcile_waiting.last_answer IS 'wait, or why the last ask failed';
REVOKE ALL ON inventory.reconcile_waiting FROM PUBLIC;
GRANT SELECT ON inventory.reconcile_waiting TO inventory_admin;

CREATE FUNCTION inventory.reconcile_stats(
	OUT datname name, OUT confirmed bigint, OUT cancelled bigint, OUT expired bigint,
	OUT waited bigint, OUT failed bigint, OUT refused bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_reconcile_stats' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.reconcile_stats() IS
	'what the reconcilers'' answers did to overdue reservations in every database the workers serve, since the server started';
CREATE VIEW inventory.reconcile_stats AS SELECT * FROM inventory.reconcile_stats();
COMMENT ON VIEW inventory.reconcile_stats IS
	'what the reconcilers'' answers did to overdue reservations in every database the workers serve, since the server started';
COMMENT ON COLUMN inventory.reconcile_stats.datname IS 'the database';
COMMENT ON COLUMN inventory.reconcile_stats.confirmed IS 'overdue reservations confirmed: the application vouched for their payment';
COMMENT ON COLUMN inventory.reconcile_stats.cancelled IS 'overdue reservations cancelled as it answered';
COMMENT ON COLUMN inventory.reconcile_stats.expired IS 'overdue reservations expired: as it answered, or once asked enough';
COMMENT ON COLUMN inventory.reconcile_stats.waited IS 'overdue reservations it answered wait for (once per ask)';
COMMENT ON COLUMN inventory.reconcile_stats.failed IS 'overdue reservations it could not be asked about: an error, a timeout, no usable answer, an ask ended by force (once per ask)';
COMMENT ON COLUMN inventory.reconcile_stats.refused IS 'overdue reservations it was not asked about because its function breaks a rule of the reconciler (once per ask; counted in failed too)';
REVOKE ALL ON inventory.reconcile_stats FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION inventory.reconcile_stats() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.reconcile_stats() TO inventory_admin, inventory_monitor;
GRANT SELECT ON inventory.reconcile_stats TO inventory_admin, inventory_monitor;

------------------------------------------------------------------------------
-- LISTEN inventory_stock: a send that fails is counted
------------------------------------------------------------------------------

DROP VIEW inventory.worker_status;
DROP FUNCTION inventory.worker_status();

CREATE FUNCTION inventory.worker_status(
	OUT datid oid, OUT datname text, OUT state text, OUT pid integer,
	OUT started_at timestamptz, OUT next_due timestamptz, OUT lag interval,
	OUT last_visit timestamptz, OUT visits bigint, OUT expired bigint,
	OUT folded bigint, OUT notify_failures bigint, OUT change_feed_lag interval)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_worker_status_0_3' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.worker_status() IS
	'every database the background workers serve: when its work is due, how late it is, what was done';

CREATE VIEW inventory.worker_status AS SELECT * FROM inventory.worker_status();
COMMENT ON VIEW inventory.worker_status IS
	'every database the background workers serve: when its work is due, how late it is, what was done';
COMMENT ON COLUMN inventory.worker_status.datid IS 'the database';
COMMENT ON COLUMN inventory.worker_status.datname IS 'its name';
COMMENT ON COLUMN inventory.worker_status.state IS
	'idle (nothing due), waiting (due, no worker yet), running (a worker is in it), paused (a statement needs it alone) or disabled (inventory.worker_enabled is off)';
COMMENT ON COLUMN inventory.worker_status.pid IS 'the worker in it, if any';
COMMENT ON COLUMN inventory.worker_status.started_at IS 'when the worker in it started';
COMMENT ON COLUMN inventory.worker_status.next_due IS
	'when work is next due: the first PENDING reservation''s expires_at, or settled movements to fold; NULL when nothing is due or a worker is in it';
COMMENT ON COLUMN inventory.worker_status.lag IS
	'how long its oldest work due has waited: for a worker, or after a round that could not expire it (a buyer held the row)';
COMMENT ON COLUMN inventory.worker_status.last_visit IS 'when the last visit of a worker ended';
COMMENT ON COLUMN inventory.worker_status.visits IS 'visits of a worker since the server started';
COMMENT ON COLUMN inventory.worker_status.expired IS 'reservations expired by the workers since the server started';
COMMENT ON COLUMN inventory.worker_status.folded IS 'movements folded by the workers since the server started';
COMMENT ON COLUMN inventory.worker_status.notify_failures IS
	'sends of LISTEN inventory_stock notifications that failed since the server started (a full NOTIFY queue, say): each is a WARNING in the server log, and the notifications are sent again later';
COMMENT ON COLUMN inventory.worker_status.change_feed_lag IS
	'how long the oldest committed row of the change feed has been held back by an older transaction still running, when a worker last looked (every second while rows are held back); 0 when none is';

REVOKE ALL ON inventory.worker_status FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION inventory.worker_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.worker_status() TO inventory_admin, inventory_monitor;
GRANT SELECT ON inventory.worker_status TO inventory_admin, inventory_monitor;

------------------------------------------------------------------------------
-- verify() that waits for busy SKUs instead of passing over them
------------------------------------------------------------------------------

CREATE FUNCTION inventory.verify(wait interval)
	RETURNS TABLE (sku text, what text, cached bigint, truth bigint)
	AS 'MODULE_PATHNAME', 'inventory_verify_wait' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.verify(interval) IS
	'verify(), waiting up to wait for SKUs with changes in flight; an error (55000) names those still busy when the wait ends, so an empty answer means every cached SKU was compared';
REVOKE EXECUTE ON FUNCTION inventory.verify(interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.verify(interval) TO inventory_admin, inventory_monitor;

------------------------------------------------------------------------------
-- What became of an order: its reservations, for the application that made
-- them, and what settled each
------------------------------------------------------------------------------

-- NULL in the rows of a 0.2 dump: a COPY without it restores as before
ALTER TABLE inventory.ledger ADD COLUMN settled_by text COLLATE "C";
COMMENT ON COLUMN inventory.ledger.settled_by IS
	'reserve: what settled it, stamped by the trigger: call (confirm or cancel), expiry, reconciler (its answer applied) or statement (an UPDATE by hand); NULL while PENDING, and for reservations settled before 0.3';

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
	'a reservation as inventory.reservation() answers it';
COMMENT ON COLUMN inventory.reservation_line.order_id IS 'the order''s key, as reserve() was given it';
COMMENT ON COLUMN inventory.reservation_line.batch_id IS 'the line of the order';
COMMENT ON COLUMN inventory.reservation_line.sku IS 'the SKU reserved';
COMMENT ON COLUMN inventory.reservation_line.qty IS 'units reserved';
COMMENT ON COLUMN inventory.reservation_line.state IS 'PENDING, CONFIRMED, CANCELLED or EXPIRED';
COMMENT ON COLUMN inventory.reservation_line.created_at IS 'when the reservation was made';
COMMENT ON COLUMN inventory.reservation_line.expires_at IS 'when it expires unless confirmed or cancelled (or extended)';
COMMENT ON COLUMN inventory.reservation_line.settled_at IS 'when it left PENDING; NULL while PENDING';
COMMENT ON COLUMN inventory.reservation_line.settled_by IS 'what settled it: call (confirm or cancel), expiry, reconciler (its answer applied) or statement (an UPDATE by hand); NULL while PENDING and for reservations settled before 0.3';

CREATE FUNCTION inventory.reservation(order_id text, batch_id integer DEFAULT NULL)
	RETURNS SETOF inventory.reservation_line
	AS 'MODULE_PATHNAME', 'inventory_reservation' LANGUAGE C STABLE PARALLEL UNSAFE
	SECURITY DEFINER ROWS 5;
COMMENT ON FUNCTION inventory.reservation(text, integer) IS
	'the reservations of an order (batch_id NULL: every line), with their state and what settled them; one lookup by key; durable when it answers';

REVOKE EXECUTE ON FUNCTION inventory.reservation(text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.reservation(text, integer) TO inventory_app;

------------------------------------------------------------------------------
-- The sale's state where the storefront looks: on_sale in inventory.stock
-- and in LISTEN inventory_stock, which also hears a window open and close
------------------------------------------------------------------------------

CREATE OR REPLACE VIEW inventory.stock AS
SELECT s.sku,
	   s.on_hand + COALESCE(m.on_hand, 0) AS on_hand,
	   COALESCE(m.reserved, 0) AS reserved,
	   s.on_hand + COALESCE(m.on_hand, 0) - COALESCE(m.reserved, 0) AS available,
	   s.version + COALESCE(m.version, 0) AS version,
	   s.max_per_buyer,
	   s.sale_starts,
	   s.sale_ends,
	   (s.sale_starts IS NULL OR s.sale_starts OPERATOR(pg_catalog.<=) pg_catalog.statement_timestamp())
	   AND (s.sale_ends IS NULL OR pg_catalog.statement_timestamp() OPERATOR(pg_catalog.<) s.sale_ends) AS on_sale
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
COMMENT ON COLUMN inventory.stock.on_sale IS
	'whether the SKU is within its sale window at the statement''s time, as the API''s calls judge it (whatever its units)';

-- the worker finds the windows that opened or closed, and the next edge
CREATE INDEX sku_sale_starts_idx ON inventory.sku (sale_starts) WHERE sale_starts IS NOT NULL;
CREATE INDEX sku_sale_ends_idx ON inventory.sku (sale_ends) WHERE sale_ends IS NOT NULL;

------------------------------------------------------------------------------
-- The change feed: what the engine decided, for an application to follow
-- without logical decoding (inventory.change_feed on for the database)
------------------------------------------------------------------------------

-- not dumped: a restore starts the feed afresh, under a new feed_id
CREATE TABLE inventory.change (
	xid			xid8 NOT NULL,
	seq			integer NOT NULL,
	order_id	text COLLATE "C" NOT NULL,
	batch_id	integer NOT NULL,
	state		inventory.state NOT NULL,
	at			timestamptz NOT NULL,
	PRIMARY KEY (xid, seq)
);
COMMENT ON TABLE inventory.change IS
	'the change feed: one row per reservation made and per reservation settled, in the order inventory.changes() returns them, which reads the rest from the ledger (not dumped)';
COMMENT ON COLUMN inventory.change.xid IS 'the top-level transaction that wrote the ledger row';
COMMENT ON COLUMN inventory.change.seq IS 'the row''s place in its transaction';
COMMENT ON COLUMN inventory.change.state IS 'the reservation''s state as written: PENDING when made, its final state when settled';
COMMENT ON COLUMN inventory.change.at IS 'when it was made or settled: the retention counts from it';

CREATE TABLE inventory.feed (
	one			boolean PRIMARY KEY DEFAULT true CHECK (one),
	feed_id		text COLLATE "C" NOT NULL,
	pruned_xid	xid8 NOT NULL DEFAULT '0',
	pruned_seq	integer NOT NULL DEFAULT 0
);
COMMENT ON TABLE inventory.feed IS
	'the change feed''s identity, which every cursor carries: made anew by CREATE EXTENSION and by a restore of the ledger; and how far the worker pruned it (not dumped)';
COMMENT ON COLUMN inventory.feed.pruned_xid IS
	'rows up to (pruned_xid, pruned_seq) are pruned (inventory.change_retention): a cursor before it is refused';
INSERT INTO inventory.feed (feed_id)
VALUES (pg_catalog.left(pg_catalog.md5(pg_catalog.random()::text OPERATOR(pg_catalog.||) pg_catalog.clock_timestamp()::text), 16));

REVOKE ALL ON inventory.change, inventory.feed FROM PUBLIC;
GRANT SELECT ON inventory.change, inventory.feed TO inventory_admin;

CREATE FUNCTION inventory.changes(after text DEFAULT NULL, max_rows integer DEFAULT 1000,
	OUT cursor text, OUT order_id text, OUT batch_id integer, OUT sku text, OUT qty bigint,
	OUT state inventory.state, OUT created_at timestamptz, OUT expires_at timestamptz,
	OUT settled_at timestamptz, OUT settled_by text)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_changes' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER ROWS 1000;
COMMENT ON FUNCTION inventory.changes(text, integer) IS
	'the change feed after a cursor (NULL: from its start), at most max_rows rows, each with its cursor; a row is returned once every transaction before it has ended';

REVOKE EXECUTE ON FUNCTION inventory.changes(text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.changes(text, integer) TO inventory_app;

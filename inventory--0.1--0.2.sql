/* inventory--0.1--0.2.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION inventory UPDATE TO '0.2'" to load this file. \quit

------------------------------------------------------------------------------
-- pg_dump writes inventory.sku before inventory.ledger
--
-- pg_dump orders the data of an extension's tables by their foreign keys,
-- so that each row finds what it refers to when it is restored.  The key
-- declares what the trigger already enforces -- a movement's SKU exists, a
-- SKU with movements is neither renamed nor deleted -- but PostgreSQL's own
-- checks of it stay disabled: they would lock the SKU's row for every
-- reservation, making it the hot row that the design avoids.  The library
-- disables them as the key is added, here or by pg_upgrade, which runs no
-- script (src/enforce/utility.c).
------------------------------------------------------------------------------

ALTER TABLE inventory.ledger ADD CONSTRAINT ledger_sku_fkey
	FOREIGN KEY (sku) REFERENCES inventory.sku (sku);
COMMENT ON CONSTRAINT ledger_sku_fkey ON inventory.ledger IS
	'orders pg_dump''s output (inventory.sku first); checked by inventory.enforce(), without a row lock on the SKU';

------------------------------------------------------------------------------
-- Every column explains itself in \d+
------------------------------------------------------------------------------

COMMENT ON COLUMN inventory.result.ok IS
	'whether the caller''s intent now holds, made now or by an earlier call with the same key';
COMMENT ON COLUMN inventory.result.status IS
	'what happened: ok, duplicate, insufficient, unknown_sku, version_conflict, not_on_sale, buyer_required, limit_exceeded, cart_refused, not_found, expired, cancelled or confirmed';
COMMENT ON COLUMN inventory.result.sku IS 'the SKU of the movement; NULL for not_found';
COMMENT ON COLUMN inventory.result.qty IS 'units of the movement; for adjust, the on_hand counted';
COMMENT ON COLUMN inventory.result.state IS 'the reservation''s state after the call; NULL where there is none';
COMMENT ON COLUMN inventory.result.available IS
	'units available at the call, from shared memory (holds in flight counted); NULL when the SKU does not exist';
COMMENT ON COLUMN inventory.result.version IS 'the SKU''s last committed version at the call';
COMMENT ON COLUMN inventory.result.expires_at IS 'the reservation''s expiry; NULL where there is none';

COMMENT ON COLUMN inventory.stock.sku IS 'the SKU';
COMMENT ON COLUMN inventory.stock.on_hand IS 'physical units: the base in inventory.sku plus unfolded movements';
COMMENT ON COLUMN inventory.stock.reserved IS 'units held by PENDING reservations';
COMMENT ON COLUMN inventory.stock.available IS 'on_hand - reserved';
COMMENT ON COLUMN inventory.stock.version IS 'grows by one with every committed change to the SKU';

COMMENT ON COLUMN inventory.sku_stats.sku IS 'a SKU of this database held in the shared-memory cache';
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
COMMENT ON COLUMN inventory.sku_stats.loaded_at IS 'when the SKU was loaded into the cache; its statistics count from then';
COMMENT ON COLUMN inventory.sku_stats.last_used IS 'the start of the last statement that used it';

------------------------------------------------------------------------------
-- The background workers: a bounded pool that visits each database when
-- its work falls due, instead of one worker per database
------------------------------------------------------------------------------

DROP VIEW inventory.worker_status;
DROP FUNCTION inventory.worker_status();

CREATE FUNCTION inventory.worker_status(
	OUT datid oid, OUT datname text, OUT state text, OUT pid integer,
	OUT started_at timestamptz, OUT next_due timestamptz, OUT lag interval,
	OUT last_visit timestamptz, OUT visits bigint, OUT expired bigint,
	OUT folded bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'inventory_worker_status_0_2' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
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

REVOKE ALL ON inventory.worker_status FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION inventory.worker_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.worker_status() TO inventory_admin;
GRANT SELECT ON inventory.worker_status TO inventory_admin;

------------------------------------------------------------------------------
-- One word per idea: a state is final, in SQL and in C
------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION inventory.is_final(inventory.state) RETURNS boolean
	AS 'MODULE_PATHNAME', 'state_is_final' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

------------------------------------------------------------------------------
-- Commerce rules: at most max_per_buyer units per buyer across orders, a
-- sale window [sale_starts, sale_ends), and carts reserved whole
------------------------------------------------------------------------------

ALTER TABLE inventory.sku
	ADD COLUMN max_per_buyer bigint,
	ADD COLUMN sale_starts timestamptz,
	ADD COLUMN sale_ends timestamptz,
	ADD CONSTRAINT sku_max_per_buyer_check CHECK (max_per_buyer > 0),
	ADD CONSTRAINT sku_sale_window_check CHECK (sale_ends > sale_starts);
COMMENT ON COLUMN inventory.sku.max_per_buyer IS
	'at most this many units per buyer, PENDING and CONFIRMED reservations across all orders; NULL: no limit';
COMMENT ON COLUMN inventory.sku.sale_starts IS 'reservations are taken from this moment on; NULL: since ever';
COMMENT ON COLUMN inventory.sku.sale_ends IS 'reservations are taken until just before this moment; NULL: for ever';

ALTER TABLE inventory.ledger ADD COLUMN buyer_id text COLLATE "C";
COMMENT ON COLUMN inventory.ledger.buyer_id IS
	'reserve: the buyer, whose PENDING and CONFIRMED units count towards the SKU''s max_per_buyer';
-- a buyer's units of a SKU, counted under the buyer's lock
CREATE INDEX ledger_buyer_idx ON inventory.ledger (buyer_id, sku)
	WHERE buyer_id IS NOT NULL;

CREATE OR REPLACE VIEW inventory.stock AS
SELECT s.sku,
	   s.on_hand + COALESCE(m.on_hand, 0) AS on_hand,
	   COALESCE(m.reserved, 0) AS reserved,
	   s.on_hand + COALESCE(m.on_hand, 0) - COALESCE(m.reserved, 0) AS available,
	   s.version + COALESCE(m.version, 0) AS version,
	   s.max_per_buyer,
	   s.sale_starts,
	   s.sale_ends
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
COMMENT ON COLUMN inventory.stock.max_per_buyer IS 'units one buyer may hold (PENDING + CONFIRMED); NULL: no limit';
COMMENT ON COLUMN inventory.stock.sale_starts IS 'start of the sale window; NULL: since ever';
COMMENT ON COLUMN inventory.stock.sale_ends IS 'end of the sale window (excluded); NULL: for ever';

CREATE FUNCTION inventory.set_rules(sku text, max_per_buyer bigint DEFAULT NULL,
									sale_starts timestamptz DEFAULT NULL,
									sale_ends timestamptz DEFAULT NULL)
	RETURNS void
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER
	SET search_path = pg_catalog, pg_temp
	AS $$
BEGIN
	IF set_rules.sku IS NULL THEN
		RAISE EXCEPTION 'sku must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF set_rules.max_per_buyer <= 0 THEN
		RAISE EXCEPTION 'max_per_buyer must be positive'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('max_per_buyer is %s.', set_rules.max_per_buyer),
				  HINT = 'Pass NULL for no limit.';
	END IF;
	IF set_rules.sale_ends <= set_rules.sale_starts THEN
		RAISE EXCEPTION 'sale_ends must be later than sale_starts'
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = format('The window would be [%s, %s).',
								  set_rules.sale_starts, set_rules.sale_ends);
	END IF;
	UPDATE inventory.sku s
	   SET max_per_buyer = set_rules.max_per_buyer,
		   sale_starts = set_rules.sale_starts,
		   sale_ends = set_rules.sale_ends
	 WHERE s.sku OPERATOR(pg_catalog.=) set_rules.sku;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'sku "%" does not exist', set_rules.sku
			USING ERRCODE = 'undefined_object',
				  HINT = 'Create it with inventory.restock().';
	END IF;
END
$$;
COMMENT ON FUNCTION inventory.set_rules(text, bigint, timestamptz, timestamptz) IS
	'set the rules of sku (NULL: no such rule), replacing those it had; they apply to calls that start after the commit';

DROP FUNCTION inventory.reserve(text, bigint, text, integer, interval, bigint);
CREATE FUNCTION inventory.reserve(sku text, qty bigint, order_id text,
								  batch_id integer DEFAULT 1,
								  ttl interval DEFAULT NULL,
								  expected_version bigint DEFAULT NULL,
								  buyer_id text DEFAULT NULL)
	RETURNS inventory.result
	AS 'MODULE_PATHNAME', 'inventory_reserve' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.reserve(text, bigint, text, integer, interval, bigint, text) IS
	'hold qty units of sku for (order_id, batch_id) until confirm, cancel or expiry; for buyer_id, within the SKU''s max_per_buyer';

CREATE FUNCTION inventory.reserve_cart(order_id text, skus text[], qtys bigint[],
									   ttl interval DEFAULT NULL,
									   buyer_id text DEFAULT NULL,
									   batch_ids integer[] DEFAULT NULL)
	RETURNS SETOF inventory.result
	AS 'MODULE_PATHNAME', 'inventory_reserve_cart' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER ROWS 5;
COMMENT ON FUNCTION inventory.reserve_cart(text, text[], bigint[], interval, text, integer[]) IS
	'reserve every line of a cart, or none: line i is (order_id, i), or (order_id, batch_ids[i]); one result row per line';

CREATE FUNCTION inventory.confirm_order(order_id text)
	RETURNS SETOF inventory.result
	AS 'MODULE_PATHNAME', 'inventory_confirm_order' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER ROWS 5;
COMMENT ON FUNCTION inventory.confirm_order(text) IS
	'confirm every reservation of order_id, as confirm() would; one result row each';

CREATE FUNCTION inventory.cancel_order(order_id text)
	RETURNS SETOF inventory.result
	AS 'MODULE_PATHNAME', 'inventory_cancel_order' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER ROWS 5;
COMMENT ON FUNCTION inventory.cancel_order(text) IS
	'cancel every reservation of order_id, as cancel() would; one result row each';

REVOKE EXECUTE ON FUNCTION
	inventory.set_rules(text, bigint, timestamptz, timestamptz),
	inventory.reserve(text, bigint, text, integer, interval, bigint, text),
	inventory.reserve_cart(text, text[], bigint[], interval, text, integer[]),
	inventory.confirm_order(text),
	inventory.cancel_order(text)
FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
	inventory.reserve(text, bigint, text, integer, interval, bigint, text),
	inventory.reserve_cart(text, text[], bigint[], interval, text, integer[]),
	inventory.confirm_order(text),
	inventory.cancel_order(text)
TO inventory_app;
GRANT EXECUTE ON FUNCTION inventory.set_rules(text, bigint, timestamptz, timestamptz)
	TO inventory_admin;

------------------------------------------------------------------------------
-- The key filter: which keys are certainly absent from the ledger, so that
-- a refused reserve reads no index
------------------------------------------------------------------------------

CREATE FUNCTION inventory.key_filter_info(
	OUT bytes bigint, OUT hashes integer, OUT fill double precision,
	OUT false_positive_rate double precision, OUT keys_added bigint,
	OUT said_absent bigint, OUT said_maybe bigint, OUT false_positives bigint,
	OUT ready boolean)
	RETURNS record
	AS 'MODULE_PATHNAME', 'inventory_key_filter_info' LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION inventory.key_filter_info() IS
	'size, fill and false-positive rate of the filter of keys absent from the ledgers, for all databases';

CREATE VIEW inventory.key_filter AS SELECT * FROM inventory.key_filter_info();
COMMENT ON VIEW inventory.key_filter IS
	'size, fill and false-positive rate of the filter of keys absent from the ledgers, for all databases';
COMMENT ON COLUMN inventory.key_filter.bytes IS 'shared memory of the filter (inventory.key_filter_size); 0: off';
COMMENT ON COLUMN inventory.key_filter.hashes IS 'bits each key sets';
COMMENT ON COLUMN inventory.key_filter.fill IS 'share of the bits set';
COMMENT ON COLUMN inventory.key_filter.false_positive_rate IS
	'expected share of absent keys said maybe present (fill ^ hashes), each costing one lookup';
COMMENT ON COLUMN inventory.key_filter.keys_added IS 'keys added since the server started, rows rolled back and rebuilds included';
COMMENT ON COLUMN inventory.key_filter.said_absent IS 'lookups answered from the filter: the key is certainly absent';
COMMENT ON COLUMN inventory.key_filter.said_maybe IS 'keys said maybe present, then looked up in the index';
COMMENT ON COLUMN inventory.key_filter.false_positives IS 'of those, keys the index did not have';
COMMENT ON COLUMN inventory.key_filter.ready IS
	'whether the filter knows every key of this database''s ledger (after a start, once a worker or key_filter_rebuild() has read them); until then every key is looked up';

CREATE FUNCTION inventory.key_filter_rebuild() RETURNS bigint
	AS 'MODULE_PATHNAME', 'inventory_key_filter_rebuild' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.key_filter_rebuild() IS
	'read this database''s keys into the key filter now (a worker does it after a start); returns how many';

REVOKE ALL ON inventory.key_filter FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION inventory.key_filter_info(), inventory.key_filter_rebuild() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.key_filter_info(), inventory.key_filter_rebuild() TO inventory_admin;
GRANT SELECT ON inventory.key_filter TO inventory_admin;

------------------------------------------------------------------------------
-- Batched admission: independent reservations in one call and one commit
------------------------------------------------------------------------------

CREATE FUNCTION inventory.reserve_many(skus text[], qtys bigint[], order_ids text[],
									   ttl interval DEFAULT NULL,
									   buyer_ids text[] DEFAULT NULL)
	RETURNS SETOF inventory.result
	AS 'MODULE_PATHNAME', 'inventory_reserve_many' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER ROWS 50;
COMMENT ON FUNCTION inventory.reserve_many(text[], bigint[], text[], interval, text[]) IS
	'independent reservations in one call: element i holds qtys[i] units of skus[i] for (order_ids[i], 1), as reserve() would; one result row each';
REVOKE EXECUTE ON FUNCTION inventory.reserve_many(text[], bigint[], text[], interval, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.reserve_many(text[], bigint[], text[], interval, text[]) TO inventory_app;

------------------------------------------------------------------------------
-- Every reservation is settled in place
------------------------------------------------------------------------------
-- A reservation leaves PENDING once (confirm, cancel or expiry), and no index
-- covers the columns that change, so its new version is a HOT update if it
-- fits on the row's page.  At fillfactor 85 a page had room for one settle in
-- six; the rest wrote a new entry in every index, unless earlier versions
-- could be pruned first -- never within one expiry batch, so a backlog of
-- overdue reservations cost three index entries per row.  At 45, every row a
-- page takes can be settled there once.  Pages are filled the same in the
-- end (by the settled versions), so the table does not grow.  Only pages
-- written from now on are affected.
ALTER TABLE inventory.ledger SET (fillfactor = 45);

------------------------------------------------------------------------------
-- Withdrawals: available units taken out for good (damaged goods, a transfer
-- to another server), refused rather than taking reserved units
------------------------------------------------------------------------------

CREATE FUNCTION inventory.withdraw(sku text, qty bigint, order_id text,
								   batch_id integer DEFAULT 1)
	RETURNS inventory.result
	AS 'MODULE_PATHNAME', 'inventory_withdraw' LANGUAGE C VOLATILE PARALLEL UNSAFE
	SECURITY DEFINER;
COMMENT ON FUNCTION inventory.withdraw(text, bigint, text, integer) IS
	'take qty available units of sku out of on_hand for good; insufficient when fewer are available';
REVOKE EXECUTE ON FUNCTION inventory.withdraw(text, bigint, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION inventory.withdraw(text, bigint, text, integer) TO inventory_admin;

COMMENT ON TABLE inventory.ledger IS
	'one row per movement (reserve, restock, adjust, withdraw), unique by (order_id, batch_id)';
COMMENT ON COLUMN inventory.ledger.kind IS 'reserve, restock, adjust or withdraw';
COMMENT ON COLUMN inventory.ledger.qty IS
	'reserve: units held; restock: units added; adjust: change of on_hand; withdraw: units taken out';
COMMENT ON COLUMN inventory.sku_stats.adjusts IS 'stocktakes and withdrawals committed';
COMMENT ON TYPE inventory.result IS
	'outcome of reserve, confirm, cancel, extend, restock, withdraw and adjust';

-- The set-up every pgTAP file shares.  A file sets the psql variable name
-- to its own name and includes this:
--     \set name outcomes
--     \ir lib/setup.sql
-- It creates the extensions, a prefix unique to this run for every SKU and
-- key the file makes (inventory_test.prefix: files pass on a fresh database
-- and again on the same one), and helpers in pg_temp.

CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS inventory;

SELECT set_config('inventory_test.prefix',
                  :'name' || '-' || substr(md5(random()::text || clock_timestamp()::text), 1, 8) || '-',
                  false) AS prefix \gset

-- the name of a SKU or key of this run
CREATE FUNCTION pg_temp.n(name text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT current_setting('inventory_test.prefix') || name $$;

-- a SKU's row of inventory.stock, as the caller's transaction sees it
CREATE FUNCTION pg_temp.stock(name text) RETURNS text LANGUAGE plpgsql
AS $$
DECLARE
	s record;
BEGIN
	SELECT * INTO s FROM inventory.stock WHERE sku = pg_temp.n(name);
	IF NOT FOUND THEN
		RETURN 'no sku';
	END IF;
	RETURN format('on_hand=%s reserved=%s available=%s version=%s',
				  s.on_hand, s.reserved, s.available, s.version);
END $$;

-- the same, and inventory.available()
CREATE FUNCTION pg_temp.counters(name text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.stock(name) || ' live=' ||
			 coalesce(inventory.available(pg_temp.n(name))::text, 'NULL') $$;

-- the state of a reservation of this run (batch 1)
CREATE FUNCTION pg_temp.state_of(o text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT coalesce((SELECT state::text FROM inventory.ledger
						WHERE order_id = pg_temp.n(o) AND batch_id = 1), 'no row') $$;

-- what identifies an outcome: ok, status, sku (prefix taken off), qty, state
CREATE FUNCTION pg_temp.res_id(r inventory.result) RETURNS text LANGUAGE plpgsql
AS $$
BEGIN
	RETURN format('ok=%s status=%s sku=%s qty=%s state=%s',
				  coalesce(r.ok::text, 'NULL'), coalesce(r.status, 'NULL'),
				  coalesce(replace(r.sku, current_setting('inventory_test.prefix'), ''), 'NULL'),
				  coalesce(r.qty::text, 'NULL'), coalesce(r.state::text, 'NULL'));
END $$;

-- the same, and the counters of the result (without expires_at)
CREATE FUNCTION pg_temp.res(r inventory.result) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.res_id(r) || format(' available=%s version=%s',
			 coalesce(r.available::text, 'NULL'), coalesce(r.version::text, 'NULL')) $$;

-- SQLSTATE and DETAIL of the error a statement raises
CREATE FUNCTION pg_temp.error_detail(sql text) RETURNS text LANGUAGE plpgsql
AS $$
DECLARE
	st text;
	dt text;
BEGIN
	EXECUTE sql;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, dt = PG_EXCEPTION_DETAIL;
	RETURN st || ': ' || dt;
END $$;

-- an overdue PENDING reservation, made by hand (legal: new rows are PENDING)
CREATE FUNCTION pg_temp.overdue(o text, s text, q bigint) RETURNS void
LANGUAGE sql AS $$
	INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
	VALUES (pg_temp.n(o), 1, 'reserve', pg_temp.n(s), q, now() - interval '1 minute')
$$;

-- waits for, and then holds off, a fold of the SKU's committed settled
-- movements by the background worker (a change in flight that pins the
-- SKU), until the end of the calling transaction
CREATE FUNCTION pg_temp.quiesce(s text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM 1 FROM inventory.ledger
	  WHERE sku = pg_temp.n(s) AND NOT folded AND state IS DISTINCT FROM 'PENDING'
	  FOR UPDATE;
END $$;

-- What this run owns, for before/after comparisons: the counters, the
-- ledger (but for folded: the worker folds settled movements at any moment,
-- which changes no counter and is not a change of the movement),
-- available() and the holds in shared memory; pg_temp.snapshot() copies
-- them into snap_stock, snap_ledger and snap_live.
CREATE VIEW pg_temp.my_stock AS
	SELECT * FROM inventory.stock WHERE starts_with(sku, current_setting('inventory_test.prefix'));
CREATE VIEW pg_temp.my_ledger AS
	SELECT order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at
	  FROM inventory.ledger WHERE starts_with(order_id, current_setting('inventory_test.prefix'));
CREATE VIEW pg_temp.my_live AS
	SELECT s.sku, inventory.available(s.sku) AS available, t.holds
	  FROM inventory.sku s LEFT JOIN inventory.sku_stats t ON t.sku = s.sku
	 WHERE starts_with(s.sku, current_setting('inventory_test.prefix'));
CREATE TEMP TABLE snap_stock AS SELECT * FROM pg_temp.my_stock WHERE false;
CREATE TEMP TABLE snap_ledger AS SELECT * FROM pg_temp.my_ledger WHERE false;
CREATE TEMP TABLE snap_live AS SELECT * FROM pg_temp.my_live WHERE false;
CREATE FUNCTION pg_temp.snapshot() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM snap_stock;
	DELETE FROM snap_ledger;
	DELETE FROM snap_live;
	INSERT INTO snap_stock SELECT * FROM pg_temp.my_stock;
	INSERT INTO snap_ledger SELECT * FROM pg_temp.my_ledger;
	INSERT INTO snap_live SELECT * FROM pg_temp.my_live;
END $$;

-- runs sql, a SELECT that leaves its answer in inventory_test.answer, under
-- EXPLAIN ANALYZE, which counts the WAL records this backend writes for it
-- (pg_current_wal_insert_lsn() also moves with other backends' writes, the
-- worker's folds for one); the answer, and whether the calling transaction
-- took an xid or the call wrote WAL.  Call it in a statement of its own.
CREATE FUNCTION pg_temp.probe(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT JSON) ' || sql INTO plan;
	RETURN current_setting('inventory_test.answer')
		|| CASE WHEN txid_current_if_assigned() IS NULL THEN ' xid=none' ELSE ' xid=taken' END
		|| CASE WHEN (plan->0->'Plan'->>'WAL Records')::bigint = 0 THEN ' wal=none' ELSE ' wal=written' END;
END $$;

-- The set-up every pgTAP file shares.  A file sets the psql variable name
-- to its own name, and role to the login role whose calls make up the
-- file, and includes this:
--     \set name outcomes
--     \set role shop_app
--     \ir lib/setup.sql
--
-- The superuser's part comes first: the extensions (pgtap, inventory and
-- dblink), the login roles of test/roles.sql -- shop_app (inventory_app),
-- shop_admin (inventory_admin) and shop_monitor (inventory_monitor) -- and a
-- prefix unique to this run for every SKU and key the file makes
-- (inventory_test.prefix: files pass on a fresh database and again on the
-- same one).  Then the pgTAP session connects as :role (\c: a connection,
-- not SET ROLE, so that the role's settings apply) and makes the helpers
-- in pg_temp as that role.  A file that sets no role keeps the superuser's
-- session (reconcile.sql, which connects as roles of its own).
--
-- Calls of another role go through a connection of that role, opened with
-- dblink at its first use and kept for the file: pg_temp.as_app(sql),
-- as_admin(sql), as_monitor(sql) answer the rows of sql's one column as
-- text (a command answers its status); pg_temp.app_says(sql) and the like
-- the one value, raising unless there is exactly one row;
-- pg_temp.by_app(sql) and the like the statement that runs sql so, for
-- throws_ok().  An error of the call is raised here with its SQLSTATE and
-- message.  as_super(sql) is the superuser's, for what the manual gives a
-- superuser and for scaffolding that has no user-facing equivalent
-- (VACUUM of the extension's tables, which only their owner may run); each
-- use says why.  A connection of another role sees what is committed:
-- what the pgTAP session has in flight is its own until it commits.
--
-- The shared helpers that read the tables (state_of, my_ledger, my_live,
-- snapshot, read) and write them by hand (overdue, quiesce, write) do it in
-- this session when its role may (an administrator's file: inside its
-- transaction), and through the administrator's connection when it may not
-- (an application's or a monitor's file); pg_temp.drift(wait) is
-- inventory.verify(wait), by this session's role when it may, else the
-- administrator.  test/roles.sql is included relative to this file (\ir),
-- whatever directory pg_prove runs psql in.  The psql variables prefix,
-- superuser, dbname, pghost and pgport stay set for the file (a file that
-- runs psql itself connects with them).

-- the superuser's part
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS inventory;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;
\ir ../../roles.sql
-- scaffolding: the login roles open their connections to one another with
-- dblink_connect_u, the variant that a server with trust authentication
-- lets a role that is not a superuser use (dblink_connect wants a password)
GRANT EXECUTE ON FUNCTION dblink_connect_u(text, text) TO shop_app, shop_admin, shop_monitor;

SELECT :'name' || '-' || substr(md5(random()::text || clock_timestamp()::text), 1, 8) || '-' AS prefix,
	   current_user AS superuser,
	   current_database() AS dbname,
	   coalesce(nullif(trim(split_part(current_setting('unix_socket_directories'), ',', 1)), ''), '127.0.0.1') AS pghost,
	   current_setting('port') AS pgport \gset

\if :{?role}
\c - :role
\endif

SELECT set_config('inventory_test.prefix', :'prefix', false),
	   set_config('inventory_test.superuser', :'superuser', false),
	   set_config('inventory_test.conninfo', format('host=%s port=%s', :'pghost', :'pgport'), false) \g /dev/null

-- the name of a SKU or key of this run
CREATE FUNCTION pg_temp.n(name text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT current_setting('inventory_test.prefix') || name $$;

------------------------------------------------------------------------------
-- the other roles' connections
------------------------------------------------------------------------------

-- what sql answers (its one column, as text; a command's status), run by
-- the login role login over the connection conn (opened at its first use,
-- to this database or to db, with this run's prefix in
-- inventory_test.prefix and pg_temp.n() there too, and kept)
CREATE FUNCTION pg_temp.as_role(login text, sql text, conn text DEFAULT NULL, db text DEFAULT NULL) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	c text := coalesce(conn, login);
BEGIN
	IF c <> ALL (coalesce(dblink_get_connections(), '{}')) THEN
		PERFORM dblink_connect_u(c, format('%s dbname=%s user=%s application_name=''pgtap %s''',
										   current_setting('inventory_test.conninfo'),
										   coalesce(db, current_database()), login, c));
		PERFORM dblink_exec(c, format('SET inventory_test.prefix = %L', current_setting('inventory_test.prefix')));
		PERFORM dblink_exec(c, $f$CREATE FUNCTION pg_temp.n(name text) RETURNS text LANGUAGE sql STABLE
								   AS 'SELECT current_setting(''inventory_test.prefix'') || name'$f$);
	END IF;
	RETURN QUERY SELECT t FROM dblink(c, sql) AS x(t text);
END $$;

CREATE FUNCTION pg_temp.as_app(sql text) RETURNS SETOF text LANGUAGE sql
AS $$ SELECT pg_temp.as_role('shop_app', sql) $$;
CREATE FUNCTION pg_temp.as_admin(sql text) RETURNS SETOF text LANGUAGE sql
AS $$ SELECT pg_temp.as_role('shop_admin', sql) $$;
CREATE FUNCTION pg_temp.as_monitor(sql text) RETURNS SETOF text LANGUAGE sql
AS $$ SELECT pg_temp.as_role('shop_monitor', sql) $$;
CREATE FUNCTION pg_temp.as_super(sql text) RETURNS SETOF text LANGUAGE sql
AS $$ SELECT pg_temp.as_role(current_setting('inventory_test.superuser'), sql) $$;

-- the one value sql answers, run by login; raises unless there is one row
CREATE FUNCTION pg_temp.says(login text, sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	a text[] := ARRAY(SELECT pg_temp.as_role(login, sql));
BEGIN
	IF cardinality(a) <> 1 THEN
		RAISE EXCEPTION '% answered % rows, not one, to: %', login, cardinality(a), sql;
	END IF;
	RETURN a[1];
END $$;
CREATE FUNCTION pg_temp.app_says(sql text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.says('shop_app', sql) $$;
CREATE FUNCTION pg_temp.admin_says(sql text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.says('shop_admin', sql) $$;
CREATE FUNCTION pg_temp.monitor_says(sql text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.says('shop_monitor', sql) $$;

-- the statement that runs sql as the role, for throws_ok() and lives_ok()
CREATE FUNCTION pg_temp.by_app(sql text) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT format('SELECT pg_temp.as_app(%L)', sql) $$;
CREATE FUNCTION pg_temp.by_admin(sql text) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT format('SELECT pg_temp.as_admin(%L)', sql) $$;
CREATE FUNCTION pg_temp.by_monitor(sql text) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT format('SELECT pg_temp.as_monitor(%L)', sql) $$;

-- a call that answers an inventory.result (an expression: 'inventory.restock(...)'),
-- made by the role
CREATE FUNCTION pg_temp.app_r(call text) RETURNS inventory.result LANGUAGE sql
AS $$ SELECT pg_temp.app_says('SELECT (' || call || ')::text')::inventory.result $$;
CREATE FUNCTION pg_temp.admin_r(call text) RETURNS inventory.result LANGUAGE sql
AS $$ SELECT pg_temp.admin_says('SELECT (' || call || ')::text')::inventory.result $$;

-- for a step of the set-up that must succeed: raises unless r's status is want
CREATE FUNCTION pg_temp.expect(r inventory.result, want text DEFAULT 'ok') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF r.status IS DISTINCT FROM want THEN
		RAISE EXCEPTION 'a step of the set-up answered %, not %: %', r.status, want, pg_temp.res_id(r);
	END IF;
END $$;

-- the administrator's movements of this run's SKUs and keys, by its
-- connection; raise unless the call answers ok
CREATE FUNCTION pg_temp.restock(s text, q bigint, o text) RETURNS void LANGUAGE sql
AS $$ SELECT pg_temp.expect(pg_temp.admin_r(format('inventory.restock(%L, %s, %L)', pg_temp.n(s), q, pg_temp.n(o)))) $$;
CREATE FUNCTION pg_temp.set_rules(s text, max_per_buyer bigint DEFAULT NULL,
								  sale_starts timestamptz DEFAULT NULL, sale_ends timestamptz DEFAULT NULL)
RETURNS void LANGUAGE plpgsql
AS $$ BEGIN PERFORM pg_temp.admin_says(format('SELECT inventory.set_rules(%L, %L, %L, %L)', pg_temp.n(s),
											  max_per_buyer, sale_starts, sale_ends)); END $$;

------------------------------------------------------------------------------
-- reading and writing the tables, as this session's role may, else as the
-- administrator
------------------------------------------------------------------------------

-- whether this session may read and write inventory.ledger itself
CREATE FUNCTION pg_temp.reads_tables() RETURNS boolean LANGUAGE sql STABLE
AS $$ SELECT has_table_privilege('inventory.ledger', 'SELECT, INSERT') AND has_table_privilege('inventory.sku_stats', 'SELECT') $$;

-- what a query of one column answers, as text: read here, or by the
-- administrator
CREATE FUNCTION pg_temp.read(sql text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	IF pg_temp.reads_tables() THEN
		RETURN QUERY EXECUTE format('SELECT q.t::text FROM (%s) AS q (t)', sql);
	ELSE
		RETURN QUERY SELECT pg_temp.as_admin(sql);
	END IF;
END $$;

-- the one value a query answers, read so
CREATE FUNCTION pg_temp.read1(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	a text[] := ARRAY(SELECT pg_temp.read(sql));
BEGIN
	IF cardinality(a) <> 1 THEN
		RAISE EXCEPTION 'read % rows, not one, with: %', cardinality(a), sql;
	END IF;
	RETURN a[1];
END $$;

-- runs a statement that writes the tables by hand: here, or by the
-- administrator
CREATE FUNCTION pg_temp.write(sql text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF pg_temp.reads_tables() THEN
		EXECUTE sql;
	ELSE
		PERFORM pg_temp.as_admin(sql);
	END IF;
END $$;

-- a SKU's row of inventory.stock, as the caller's transaction sees it
-- (every role reads inventory.stock)
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
CREATE FUNCTION pg_temp.state_of(o text) RETURNS text LANGUAGE sql
AS $$ SELECT coalesce(pg_temp.read1(format('SELECT (SELECT state::text FROM inventory.ledger
												   WHERE order_id = %L AND batch_id = 1)', pg_temp.n(o))),
					  'no row') $$;

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

-- SQLSTATE and DETAIL of the error a statement raises ('no error' when it
-- raises none, which no assertion expects)
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

-- an overdue PENDING reservation, made by hand by the administrator
-- (legal: new rows are PENDING)
CREATE FUNCTION pg_temp.overdue(o text, s text, q bigint) RETURNS void LANGUAGE sql AS $$
	SELECT pg_temp.write(format($f$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
								   VALUES (%L, 1, 'reserve', %L, %s, now() - interval '1 minute')$f$,
								pg_temp.n(o), pg_temp.n(s), q))
$$;

-- waits for, and then holds off, a fold of the SKU's committed settled
-- movements by the background worker (a change in flight that pins the
-- SKU): until the end of the calling transaction in an administrator's
-- session, else until pg_temp.quiesce_end(), in a transaction of the
-- administrator's on a connection of its own
CREATE FUNCTION pg_temp.quiesce(s text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	lock_sql text := format($f$SELECT count(*) FROM (SELECT 1 FROM inventory.ledger
							  WHERE sku = %L AND NOT folded AND state IS DISTINCT FROM 'PENDING'
							  FOR UPDATE) x$f$, pg_temp.n(s));
BEGIN
	IF pg_temp.reads_tables() THEN
		EXECUTE lock_sql;
	ELSE
		PERFORM pg_temp.as_role('shop_admin', 'BEGIN', 'shop_admin quiesce');
		PERFORM pg_temp.as_role('shop_admin', lock_sql, 'shop_admin quiesce');
	END IF;
END $$;
CREATE FUNCTION pg_temp.quiesce_end() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF NOT pg_temp.reads_tables() THEN
		PERFORM pg_temp.as_role('shop_admin', 'COMMIT', 'shop_admin quiesce');
	END IF;
END $$;

-- inventory.verify(wait) as rows of text, run here when this session's
-- role may, else by the administrator: empty means every cached SKU was
-- compared and agrees (a SKU still busy when the wait ends is error 55000)
CREATE FUNCTION pg_temp.drift(wait interval DEFAULT '30 s') RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	q text := format($f$SELECT format('%%s %%s: cached %%s, truth %%s', v.sku, v.what, v.cached, v.truth)
						 FROM inventory.verify(%L::interval) v$f$, wait);
BEGIN
	IF has_function_privilege('inventory.verify(interval)', 'EXECUTE') THEN
		RETURN QUERY EXECUTE q;
	ELSE
		RETURN QUERY SELECT pg_temp.as_admin(q);
	END IF;
END $$;

-- What this run owns, for before/after comparisons: the counters, the
-- ledger (but for folded: the worker folds settled movements at any moment,
-- which changes no counter and is not a change of the movement),
-- available() and the holds in shared memory; pg_temp.snapshot() copies
-- them into snap_stock, snap_ledger and snap_live.  The ledger and the
-- holds are read by the administrator in a session whose role may not.
CREATE VIEW pg_temp.my_stock AS
	SELECT * FROM inventory.stock WHERE starts_with(sku, current_setting('inventory_test.prefix'));
CREATE TEMP TABLE snap_stock AS SELECT * FROM pg_temp.my_stock WHERE false;
CREATE TEMP TABLE snap_ledger (order_id text, batch_id integer, kind text, sku text, qty bigint, counted bigint,
							   state inventory.state, created_at timestamptz, expires_at timestamptz,
							   settled_at timestamptz);
CREATE TEMP TABLE snap_live (sku text, available bigint, holds bigint);
CREATE FUNCTION pg_temp.ledger_rows() RETURNS SETOF snap_ledger LANGUAGE sql AS $$
	SELECT (t::snap_ledger).* FROM pg_temp.read(format(
		$f$SELECT (order_id, batch_id, kind, sku, qty, counted, state, created_at, expires_at, settled_at)::text
			 FROM inventory.ledger WHERE starts_with(order_id, %L)$f$, current_setting('inventory_test.prefix'))) t
$$;
CREATE FUNCTION pg_temp.live_rows() RETURNS SETOF snap_live LANGUAGE sql AS $$
	SELECT (t::snap_live).* FROM pg_temp.read(format(
		$f$SELECT (s.sku, inventory.available(s.sku), t.holds)::text
			 FROM inventory.sku s LEFT JOIN inventory.sku_stats t ON t.sku = s.sku
			WHERE starts_with(s.sku, %L)$f$, current_setting('inventory_test.prefix'))) t
$$;
CREATE VIEW pg_temp.my_ledger AS SELECT * FROM pg_temp.ledger_rows();
CREATE VIEW pg_temp.my_live AS SELECT * FROM pg_temp.live_rows();
CREATE FUNCTION pg_temp.snapshot() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM snap_stock;
	DELETE FROM snap_ledger;
	DELETE FROM snap_live;
	INSERT INTO snap_stock SELECT * FROM pg_temp.my_stock;
	INSERT INTO snap_ledger SELECT * FROM pg_temp.my_ledger;
	INSERT INTO snap_live SELECT * FROM pg_temp.my_live;
END $$;

-- VACUUM of the ledger, so that no page is left for a read to prune (which
-- writes WAL) before pg_temp.probe: scaffolding by the superuser, since
-- only the tables' owner may VACUUM them
CREATE FUNCTION pg_temp.vacuum_ledger() RETURNS void LANGUAGE sql
AS $$ SELECT pg_temp.as_super('VACUUM inventory.ledger') $$;

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

-- privileges.sql: who may do what, where test/t/040_privileges.pl does not
-- look.  040 checks every right of test/privileges.manifest with
-- has_function_privilege and has_table_privilege, a real call of every
-- function each role may execute, and a real call (42501) of every right
-- refused -- a SELECT of each table and view a role may not read, a DELETE
-- of each table it may not write.  Here, with real connections of the
-- login roles (shop_app, shop_admin, shop_monitor; this session is the
-- application's):
--   - every table and view a role may read, it reads, as its own login (a
--     view's functions run with the reader's EXECUTE);
--   - what no role but the tables' owner may do (docs/security.md, "The
--     tables"): TRUNCATE them, ALTER them (disable their triggers), call
--     the trigger function -- refused with 42501 to the application, the
--     administrator and the monitoring role;
--   - no hostile object on the caller's search_path is ever used by the
--     functions, which run as their owner: the application (a hostile
--     tenant, with a schema of its own) and the administrator call them
--     with its look-alikes first on their search_path.
-- The look-alikes' schema is dropped at the end; the reservations are
-- settled.

\set name priv
\set role shop_app
\ir lib/setup.sql

SELECT plan(17);

------------------------------------------------------------------------------
-- every table and view a role may read, read by its login
------------------------------------------------------------------------------

CREATE FUNCTION pg_temp.reads() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r record;
	n int := 0;
	failed text := '';
BEGIN
	FOR r IN SELECT l.login, c.oid::regclass::text AS rel
			   FROM (VALUES ('inventory_app', 'shop_app'), ('inventory_admin', 'shop_admin'),
							('inventory_monitor', 'shop_monitor')) AS l (grp, login),
					pg_depend d JOIN pg_class c ON c.oid = d.objid
			  WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
				AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'inventory')
				AND d.classid = 'pg_class'::regclass AND c.relkind IN ('r', 'v')
				AND has_table_privilege(l.grp, c.oid, 'SELECT')
			  ORDER BY 1, 2
	LOOP
		BEGIN
			PERFORM pg_temp.as_role(r.login, format('SELECT count(*) FROM (SELECT FROM %s LIMIT 1) x', r.rel));
			n := n + 1;
		EXCEPTION WHEN OTHERS THEN
			failed := failed || format(E'%s: %s: %s %s\n', r.login, r.rel, SQLSTATE, SQLERRM);
		END;
	END LOOP;
	RETURN format('%s reads; failed: %s', n, coalesce(nullif(failed, ''), 'none'));
END $$;
SELECT matches(pg_temp.reads(), '^[1-9][0-9]* reads; failed: none$',
			   'every table and view each role may read, its login reads');

------------------------------------------------------------------------------
-- what only the tables' owner may do
------------------------------------------------------------------------------

SELECT throws_ok('TRUNCATE inventory.ledger', '42501', NULL, 'the application may not TRUNCATE inventory.ledger');
SELECT throws_ok('SELECT inventory.enforce()', '42501', NULL, 'the application may not call the trigger function');
SELECT throws_ok(pg_temp.by_admin('TRUNCATE inventory.ledger'), '42501', NULL,
				 'the administrator, who writes the tables, may not TRUNCATE inventory.ledger: it does not own it');
SELECT throws_ok(pg_temp.by_admin('TRUNCATE inventory.sku'), '42501', NULL,
				 '... nor inventory.sku');
SELECT throws_ok(pg_temp.by_admin('ALTER TABLE inventory.ledger DISABLE TRIGGER USER'), '42501', NULL,
				 '... nor disable the triggers of inventory.ledger');
SELECT throws_ok(pg_temp.by_admin('ALTER TABLE inventory.sku ADD COLUMN x integer'), '42501', NULL,
				 '... nor alter inventory.sku');
SELECT throws_ok(pg_temp.by_admin('SELECT inventory.enforce()'), '42501', NULL,
				 '... nor call the trigger function');
SELECT throws_ok(pg_temp.by_monitor('SELECT inventory.enforce()'), '42501', NULL,
				 'the monitoring role may not call the trigger function');

------------------------------------------------------------------------------
-- hostile objects on the caller's search_path change nothing
------------------------------------------------------------------------------

-- scaffolding: a schema of the application's (a tenant that may create
-- objects somewhere), made by the superuser; an earlier run's dropped
SET client_min_messages = warning;
SELECT pg_temp.as_super('DROP SCHEMA IF EXISTS inv_test_evil CASCADE') \g /dev/null
RESET client_min_messages;
SELECT pg_temp.as_super('CREATE SCHEMA inv_test_evil AUTHORIZATION shop_app') \g /dev/null
-- the application's look-alikes of everything the functions' SQL names,
-- which record their use
CREATE TABLE inv_test_evil.called (what text);
GRANT USAGE ON SCHEMA inv_test_evil TO PUBLIC;
GRANT INSERT, SELECT ON inv_test_evil.called TO PUBLIC;
CREATE TABLE inv_test_evil.ledger (order_id text, batch_id integer, kind text, sku text, qty bigint, counted bigint,
								   state inventory.state, created_at timestamptz, expires_at timestamptz,
								   settled_at timestamptz, folded boolean, buyer_id text);
CREATE TABLE inv_test_evil.sku (sku text, on_hand bigint, version bigint, created_at timestamptz,
								max_per_buyer bigint, sale_starts timestamptz, sale_ends timestamptz);
CREATE VIEW inv_test_evil.stock AS SELECT * FROM inventory.stock;
GRANT SELECT, INSERT ON inv_test_evil.ledger, inv_test_evil.sku TO PUBLIC;
GRANT SELECT ON inv_test_evil.stock TO PUBLIC;
CREATE FUNCTION inv_test_evil.trap(inventory.state, inventory.state) RETURNS boolean
	LANGUAGE plpgsql AS $$ BEGIN INSERT INTO inv_test_evil.called VALUES ('state ='); RETURN true; END $$;
CREATE OPERATOR inv_test_evil.= (LEFTARG = inventory.state, RIGHTARG = inventory.state, FUNCTION = inv_test_evil.trap);
CREATE OPERATOR inv_test_evil.<> (LEFTARG = inventory.state, RIGHTARG = inventory.state, FUNCTION = inv_test_evil.trap);
CREATE FUNCTION inv_test_evil.trap_text(text, text) RETURNS boolean
	LANGUAGE plpgsql AS $$ BEGIN INSERT INTO inv_test_evil.called VALUES ('text ='); RETURN $1 OPERATOR(pg_catalog.=) $2; END $$;
CREATE OPERATOR inv_test_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = inv_test_evil.trap_text);
CREATE FUNCTION inv_test_evil.count(anyelement) RETURNS bigint
	LANGUAGE plpgsql AS $$ BEGIN INSERT INTO inv_test_evil.called VALUES ('count'); RETURN 0; END $$;
CREATE FUNCTION inv_test_evil.now() RETURNS timestamptz
	LANGUAGE plpgsql AS $$ BEGIN INSERT INTO inv_test_evil.called VALUES ('now'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION inv_test_evil.statement_timestamp() RETURNS timestamptz
	LANGUAGE plpgsql AS $$ BEGIN INSERT INTO inv_test_evil.called VALUES ('statement_timestamp'); RETURN pg_catalog.now(); END $$;

-- SKU E, made by hand by the administrator, with 5 units, and two of its
-- reservations overdue (E has never been in a call: loading it into the
-- cache runs SQL too)
SELECT pg_temp.as_admin(format('INSERT INTO inventory.sku (sku, on_hand) VALUES (%L, 5)', pg_temp.n('E'))) \g /dev/null
SELECT pg_temp.overdue('late', 'E', 1), pg_temp.overdue('late2', 'E', 1) \g /dev/null

-- the calls run with the hostile search_path and keep their results in psql
-- variables; pgTAP's own functions would use the look-alike operators
SET search_path = inv_test_evil, pg_catalog, inventory, public;
SELECT (inventory.reserve(pg_temp.n('E'), 1, pg_temp.n('e1'))).status AS e_reserve \gset
SELECT (inventory.reserve(pg_temp.n('E'), 1, pg_temp.n('e1'))).status AS e_replay \gset
SELECT (inventory.confirm(pg_temp.n('e1'))).status AS e_confirm \gset
SELECT (inventory.reserve(pg_temp.n('E'), 1, pg_temp.n('e2'))).status AS e_reserve2 \gset
SELECT (inventory.extend(pg_temp.n('e2'), 1, '1 hour')).status AS e_extend \gset
SELECT (inventory.cancel(pg_temp.n('e2'))).status AS e_cancel \gset
SELECT (inventory.confirm(pg_temp.n('late'))).status AS e_late \gset
SELECT inventory.available(pg_temp.n('E')) AS e_available \gset
RESET search_path;
-- the administrator's calls, with the same search_path on its connection
SELECT pg_temp.as_admin('SET search_path = inv_test_evil, pg_catalog, inventory, public') \g /dev/null
SELECT pg_temp.admin_says(format('SELECT (inventory.restock(%L, 1, %L)).status', pg_temp.n('E'), pg_temp.n('e3'))) AS e_restock,
	   pg_temp.admin_says('SELECT inventory.expire()') AS e_expired \gset
SELECT pg_temp.admin_says(format($$SELECT pg_catalog.string_agg(order_id OPERATOR(pg_catalog.||) ':' OPERATOR(pg_catalog.||) state::text, ' ')
									FROM inventory.ledger WHERE order_id OPERATOR(pg_catalog.=) %L$$, pg_temp.n('late2'))) AS e_late2 \gset
SELECT pg_temp.admin_says('SELECT inventory.fold()') AS e_folded \gset
SELECT pg_temp.admin_says(format($$SELECT pg_catalog.count(*) FROM inventory.ledger
									WHERE pg_catalog.starts_with(order_id, %L) AND NOT folded
									  AND state IS DISTINCT FROM 'PENDING'$$, :'prefix')) AS e_unfolded \gset
SELECT pg_temp.admin_says('SELECT pg_catalog.count(*) FROM inventory.verify(''30 s'')') AS e_verify \gset
SELECT pg_temp.as_admin('RESET search_path') \g /dev/null

SELECT is(:'e_reserve'::text || ' ' || :'e_replay' || ' ' || :'e_confirm', 'ok duplicate ok',
		  'hostile path: reserve, its replay recognised, confirm');
SELECT is(:'e_reserve2'::text || ' ' || :'e_extend' || ' ' || :'e_cancel', 'ok ok ok',
		  'hostile path: another reserve, extend, cancel');
SELECT is(:'e_late'::text, 'expired', 'hostile path: an overdue reservation is expired by confirm');
-- 5 on hand, 1 sold; late2 still holds its unit
SELECT is(:'e_available'::text, '3', 'hostile path: available');
SELECT is(:'e_restock'::text || ' ' || :'e_late2', 'ok ' || :'prefix' || 'late2:EXPIRED',
		  'hostile path: restock works, and expire() expires this file''s overdue reservation');
SELECT is(:'e_unfolded'::text || ' ' || :'e_verify', '0 0',
		  'hostile path: fold() folds this file''s settled movements, and verify(''30 s'') finds nothing');
SELECT is_empty($$SELECT * FROM inv_test_evil.called$$, 'no hostile object was ever used');
SELECT is_empty($$SELECT order_id FROM inv_test_evil.ledger UNION ALL SELECT sku FROM inv_test_evil.sku$$,
				'nothing was written to the look-alike tables');

SELECT * FROM finish();

-- what this run leaves: no schema, nothing PENDING
SET client_min_messages = warning;
DROP SCHEMA inv_test_evil CASCADE;
RESET client_min_messages;

-- privileges.sql: the application role may reserve (reserve_now included),
-- confirm, cancel, extend and read availability and stock, and nothing
-- else; the administrator role may also restock, adjust, verify, expire,
-- fold, read and reset the statistics, read the express lane's status and
-- write the tables; the monitoring role reads every figure and view and
-- writes nothing; PUBLIC gets nothing but the state type.  reserve_now()
-- is refused inside this file's transaction (25001), after the check of
-- privileges: that error says the role may call it.  No hostile object on the caller's search_path is ever
-- used by the functions, which run as their owner.  Everything happens in
-- one transaction that is rolled back, roles included.

\set name priv
\ir lib/setup.sql
-- pg_temp.n() is called by the roles of the test too
GRANT EXECUTE ON FUNCTION pg_temp.n(text) TO PUBLIC;

-- the SKUs and keys of this run, committed before the test: units restocked
-- in the test's own transaction would not be on sale until it commits
\set p :prefix
SELECT inventory.restock(:'p' || 'A', 10, :'p' || 'r1') IS NOT NULL AS set_up \gset
INSERT INTO inventory.sku (sku, on_hand) VALUES (:'p' || 'E', 5);
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
VALUES (:'p' || 'late', 1, 'reserve', :'p' || 'E', 1, now() - interval '1 minute');

BEGIN;
SELECT plan(108);

CREATE ROLE inv_test_app IN ROLE inventory_app;
CREATE ROLE inv_test_admin IN ROLE inventory_admin;
CREATE ROLE inv_test_monitor IN ROLE inventory_monitor;
CREATE ROLE inv_test_public;

------------------------------------------------------------------------------
-- the application role
------------------------------------------------------------------------------
SET ROLE inv_test_app;

SELECT is((inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('o1'))).status, 'ok', 'app: reserve');
SELECT is((inventory.confirm(pg_temp.n('o1'))).status, 'ok', 'app: confirm');
SELECT throws_ok($$SELECT inventory.reserve_now(pg_temp.n('A'), 1, pg_temp.n('n1'))$$, '25001', NULL,
				 'app: reserve_now (refused here for the transaction block only)');
SELECT is((inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('o2'))).status, 'ok', 'app: reserve again');
SELECT is((inventory.extend(pg_temp.n('o2'), 1, '1 hour')).status, 'ok', 'app: extend');
SELECT is((inventory.cancel(pg_temp.n('o2'))).status, 'ok', 'app: cancel');
-- confirmed and held in this transaction: 10 - 2 - 1
SELECT is(inventory.available(pg_temp.n('A')), 7::bigint, 'app: available');
SELECT is((SELECT on_hand FROM inventory.stock WHERE sku = pg_temp.n('A')), 8::bigint, 'app: reads inventory.stock');
SELECT is('PENDING'::inventory.state < 'EXPIRED', true, 'app: uses the state type');

SELECT throws_ok($$SELECT inventory.restock(pg_temp.n('A'), 5, pg_temp.n('r2'))$$, '42501', NULL, 'app: no restock');
SELECT throws_ok($$SELECT inventory.adjust(pg_temp.n('A'), 50, pg_temp.n('c1'))$$, '42501', NULL, 'app: no adjust');
SELECT throws_ok($$SELECT inventory.withdraw(pg_temp.n('A'), 1, pg_temp.n('w1'))$$, '42501', NULL, 'app: no withdraw');
SELECT throws_ok($$SELECT inventory.expire()$$, '42501', NULL, 'app: no expire');
SELECT throws_ok($$SELECT inventory.fold()$$, '42501', NULL, 'app: no fold');
SELECT throws_ok($$SELECT * FROM inventory.verify()$$, '42501', NULL, 'app: no verify');
SELECT throws_ok($$SELECT inventory.stats_reset()$$, '42501', NULL, 'app: no stats_reset');
SELECT throws_ok($$SELECT * FROM inventory.sku_stats$$, '42501', NULL, 'app: no sku_stats');
SELECT throws_ok($$SELECT * FROM inventory.cache_info()$$, '42501', NULL, 'app: no cache_info');
SELECT throws_ok($$SELECT * FROM inventory.worker_status$$, '42501', NULL, 'app: no worker_status');
SELECT throws_ok($$SELECT * FROM inventory.express_status$$, '42501', NULL, 'app: no express_status');
SELECT throws_ok($$SELECT * FROM inventory.express_status()$$, '42501', NULL, 'app: no express_status()');
SELECT throws_ok($$SELECT inventory.express_fallbacks()$$, '42501', NULL, 'app: no express_fallbacks');
SELECT throws_ok($$SELECT * FROM inventory.call_stats$$, '42501', NULL, 'app: no call_stats');
SELECT throws_ok($$SELECT * FROM inventory.movement_stats()$$, '42501', NULL, 'app: no movement_stats()');
SELECT throws_ok($$SELECT * FROM inventory.hot_skus$$, '42501', NULL, 'app: no hot_skus');
SELECT throws_ok($$SELECT * FROM inventory.verify_status$$, '42501', NULL, 'app: no verify_status');
SELECT throws_ok($$SELECT inventory.restore_abandon()$$, '42501', NULL, 'app: no restore_abandon');
SELECT throws_ok($$SELECT * FROM inventory.ledger$$, '42501', NULL, 'app: cannot read the ledger');
SELECT throws_ok($$SELECT * FROM inventory.sku$$, '42501', NULL, 'app: cannot read inventory.sku');
SELECT throws_ok($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty) VALUES (pg_temp.n('x'), 1, 'restock', pg_temp.n('A'), 5)$$,
				 '42501', NULL, 'app: cannot insert into the ledger');
SELECT throws_ok($$UPDATE inventory.ledger SET state = 'CONFIRMED' WHERE order_id = pg_temp.n('o2')$$,
				 '42501', NULL, 'app: cannot update the ledger');
SELECT throws_ok($$DELETE FROM inventory.ledger$$, '42501', NULL, 'app: cannot delete from the ledger');
SELECT throws_ok($$INSERT INTO inventory.sku (sku, on_hand) VALUES (pg_temp.n('B'), 100)$$,
				 '42501', NULL, 'app: cannot create a SKU directly');
SELECT throws_ok($$UPDATE inventory.sku SET on_hand = 100$$, '42501', NULL, 'app: cannot update inventory.sku');
SELECT throws_ok($$TRUNCATE inventory.ledger$$, '42501', NULL, 'app: cannot truncate');
SELECT throws_ok($$SELECT inventory.enforce()$$, '42501', NULL, 'app: cannot call the trigger function');

RESET ROLE;

------------------------------------------------------------------------------
-- the monitoring role
------------------------------------------------------------------------------
SET ROLE inv_test_monitor;

SELECT is((SELECT on_hand FROM inventory.stock WHERE sku = pg_temp.n('A')), 8::bigint, 'monitor: reads inventory.stock');
SELECT is(inventory.available(pg_temp.n('A')), 7::bigint, 'monitor: available');
SELECT is((SELECT count(*) FROM inventory.sku_stats WHERE sku = pg_temp.n('A')), 1::bigint, 'monitor: sku_stats');
SELECT lives_ok($$SELECT * FROM inventory.cache_info()$$, 'monitor: cache_info');
SELECT lives_ok($$SELECT * FROM inventory.worker_status$$, 'monitor: worker_status');
SELECT lives_ok($$SELECT * FROM inventory.key_filter$$, 'monitor: key_filter');
SELECT lives_ok($$SELECT * FROM inventory.express_status$$, 'monitor: express_status');
SELECT lives_ok($$SELECT inventory.express_fallbacks()$$, 'monitor: express_fallbacks');
SELECT lives_ok($$SELECT * FROM inventory.verify()$$, 'monitor: verify');
SELECT lives_ok($$SELECT * FROM inventory.call_stats$$, 'monitor: call_stats');
SELECT lives_ok($$SELECT * FROM inventory.movement_stats$$, 'monitor: movement_stats');
SELECT lives_ok($$SELECT * FROM inventory.cache_by_database$$, 'monitor: cache_by_database');
SELECT lives_ok($$SELECT * FROM inventory.hot_skus$$, 'monitor: hot_skus');
SELECT lives_ok($$SELECT * FROM inventory.verify_status$$, 'monitor: verify_status');
SELECT throws_ok($$SET inventory.hot_skus = 50$$, '42501', NULL, 'monitor: cannot raise inventory.hot_skus');
SELECT lives_ok($$SELECT * FROM inventory.restore_state$$, 'monitor: reads restore_state');
SELECT throws_ok($$SELECT inventory.restore_finish()$$, '42501', NULL, 'monitor: no restore_finish');

SELECT throws_ok($$SELECT inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('m1'))$$, '42501', NULL, 'monitor: no reserve');
SELECT throws_ok($$SELECT inventory.reserve_now(pg_temp.n('A'), 1, pg_temp.n('m2'))$$, '42501', NULL, 'monitor: no reserve_now');
SELECT throws_ok($$SELECT inventory.confirm(pg_temp.n('o1'))$$, '42501', NULL, 'monitor: no confirm');
SELECT throws_ok($$SELECT inventory.restock(pg_temp.n('A'), 5, pg_temp.n('m3'))$$, '42501', NULL, 'monitor: no restock');
SELECT throws_ok($$SELECT inventory.expire()$$, '42501', NULL, 'monitor: no expire');
SELECT throws_ok($$SELECT inventory.fold()$$, '42501', NULL, 'monitor: no fold');
SELECT throws_ok($$SELECT inventory.stats_reset()$$, '42501', NULL, 'monitor: no stats_reset');
SELECT throws_ok($$SELECT inventory.key_filter_rebuild()$$, '42501', NULL, 'monitor: no key_filter_rebuild');
SELECT throws_ok($$SELECT inventory.set_rules(pg_temp.n('A'), 1)$$, '42501', NULL, 'monitor: no set_rules');
SELECT throws_ok($$SELECT * FROM inventory.ledger$$, '42501', NULL, 'monitor: cannot read the ledger');
SELECT throws_ok($$SELECT * FROM inventory.sku$$, '42501', NULL, 'monitor: cannot read inventory.sku');
SELECT throws_ok($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty) VALUES (pg_temp.n('m4'), 1, 'restock', pg_temp.n('A'), 5)$$,
				 '42501', NULL, 'monitor: cannot insert into the ledger');
SELECT throws_ok($$UPDATE inventory.sku SET on_hand = 100$$, '42501', NULL, 'monitor: cannot update inventory.sku');

RESET ROLE;

------------------------------------------------------------------------------
-- PUBLIC
------------------------------------------------------------------------------
SET ROLE inv_test_public;

SELECT is('confirmed'::inventory.state::text, 'CONFIRMED', 'public: uses the state type');
SELECT is(inventory.can_transition('PENDING', 'EXPIRED'), true, 'public: can_transition');
SELECT throws_ok($$SELECT inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('p1'))$$, '42501', NULL, 'public: no reserve');
SELECT throws_ok($$SELECT inventory.reserve_now(pg_temp.n('A'), 1, pg_temp.n('p2'))$$, '42501', NULL, 'public: no reserve_now');
SELECT throws_ok($$SELECT * FROM inventory.express_status$$, '42501', NULL, 'public: no express_status');
SELECT throws_ok($$SELECT inventory.confirm(pg_temp.n('o1'))$$, '42501', NULL, 'public: no confirm');
SELECT throws_ok($$SELECT inventory.available(pg_temp.n('A'))$$, '42501', NULL, 'public: no available');
SELECT throws_ok($$SELECT * FROM inventory.stock$$, '42501', NULL, 'public: no inventory.stock');
SELECT throws_ok($$SELECT * FROM inventory.ledger$$, '42501', NULL, 'public: no ledger');

RESET ROLE;

------------------------------------------------------------------------------
-- the administrator role
------------------------------------------------------------------------------
SET ROLE inv_test_admin;

SELECT is((inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('a1'))).status, 'ok', 'admin: reserve (as an application)');
SELECT throws_ok($$SELECT inventory.reserve_now(pg_temp.n('A'), 1, pg_temp.n('a3'))$$, '25001', NULL,
				 'admin: reserve_now (as an application; refused here for the transaction block only)');
SELECT is((inventory.restock(pg_temp.n('A'), 5, pg_temp.n('r3'))).status, 'ok', 'admin: restock');
SELECT is((inventory.withdraw(pg_temp.n('A'), 1, pg_temp.n('w2'))).status, 'ok', 'admin: withdraw');
SELECT is((inventory.adjust(pg_temp.n('A'), 20, pg_temp.n('c2'))).status, 'ok', 'admin: adjust');
SELECT lives_ok($$SELECT inventory.expire()$$, 'admin: expire');
SELECT lives_ok($$SELECT inventory.fold()$$, 'admin: fold');
SELECT is_empty($$SELECT * FROM inventory.verify()$$, 'admin: verify');
SELECT lives_ok($$SELECT inventory.stats_reset()$$, 'admin: stats_reset');
SELECT is((SELECT count(*) FROM inventory.sku_stats WHERE sku = pg_temp.n('A')), 1::bigint, 'admin: sku_stats');
SELECT lives_ok($$SELECT * FROM inventory.cache_info()$$, 'admin: cache_info');
SELECT lives_ok($$SELECT * FROM inventory.worker_status$$, 'admin: worker_status');
SELECT lives_ok($$SELECT * FROM inventory.express_status$$, 'admin: express_status');
SELECT lives_ok($$SELECT * FROM inventory.express_status()$$, 'admin: express_status()');
SELECT lives_ok($$SELECT inventory.express_fallbacks()$$, 'admin: express_fallbacks');
SELECT lives_ok($$SELECT inventory.restore_finish()$$, 'admin: restore_finish (here with no restore to end)');
SELECT lives_ok($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty) VALUES (pg_temp.n('a2'), 1, 'restock', pg_temp.n('A'), 5)$$,
				'admin: direct INSERT into the ledger');
SELECT throws_ok($$UPDATE inventory.ledger SET state = 'PENDING' WHERE order_id = pg_temp.n('o1')$$,
				 '23514', NULL, 'admin: the trigger still enforces the rules');
SELECT is((SELECT on_hand FROM inventory.stock WHERE sku = pg_temp.n('A')), 25::bigint, 'admin: the counters add up');

RESET ROLE;

------------------------------------------------------------------------------
-- hostile objects on the caller's search_path change nothing
------------------------------------------------------------------------------
CREATE SCHEMA inv_test_evil;
CREATE TABLE inv_test_evil.called (what text);
GRANT USAGE ON SCHEMA inv_test_evil TO PUBLIC;
GRANT INSERT, SELECT ON inv_test_evil.called TO PUBLIC;
-- look-alikes of everything the functions' SQL names
CREATE TABLE inv_test_evil.ledger (LIKE inventory.ledger);
CREATE TABLE inv_test_evil.sku (LIKE inventory.sku);
CREATE VIEW inv_test_evil.stock AS SELECT * FROM inventory.stock;
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

-- (SKU E, made at set-up, has never been in this session's calls: loading
-- it into the cache runs SQL too)
-- the calls run with the hostile search_path and keep their results in psql
-- variables; pgTAP's own functions would use the look-alike operators
SET ROLE inv_test_app;
SET search_path = inv_test_evil, pg_catalog, inventory, public;
SELECT (inventory.reserve(pg_temp.n('E'), 1, pg_temp.n('e1'))).status AS e_reserve \gset
SELECT (inventory.reserve(pg_temp.n('E'), 1, pg_temp.n('e1'))).status AS e_replay \gset
SELECT (inventory.confirm(pg_temp.n('e1'))).status AS e_confirm \gset
SELECT (inventory.reserve(pg_temp.n('E'), 1, pg_temp.n('e2'))).status AS e_reserve2 \gset
SELECT (inventory.extend(pg_temp.n('e2'), 1, '1 hour')).status AS e_extend \gset
SELECT (inventory.cancel(pg_temp.n('e2'))).status AS e_cancel \gset
SELECT (inventory.confirm(pg_temp.n('late'))).status AS e_late \gset
SELECT inventory.available(pg_temp.n('E')) AS e_available \gset
RESET ROLE;
SET ROLE inv_test_admin;
SELECT (inventory.restock(pg_temp.n('E'), 1, pg_temp.n('e3'))).status AS e_restock \gset
SELECT inventory.expire() >= 0 AS e_expire \gset
SELECT inventory.fold() >= 0 AS e_fold \gset
SELECT count(*) AS e_verify FROM inventory.verify() \gset
RESET ROLE;
RESET search_path;

SELECT is(:'e_reserve'::text, 'ok'::text, 'hostile path: reserve works');
SELECT is(:'e_replay'::text, 'duplicate'::text, 'hostile path: replay recognised');
SELECT is(:'e_confirm'::text, 'ok'::text, 'hostile path: confirm works');
SELECT is(:'e_reserve2'::text, 'ok'::text, 'hostile path: another reserve');
SELECT is(:'e_extend'::text, 'ok'::text, 'hostile path: extend works');
SELECT is(:'e_cancel'::text, 'ok'::text, 'hostile path: cancel works');
SELECT is(:'e_late'::text, 'expired'::text, 'hostile path: an overdue reservation is expired');
-- 5 on hand, 1 reserved (late, until this transaction commits), 2 held here
SELECT is(:'e_available'::text, '2'::text, 'hostile path: available');
SELECT is(:'e_restock'::text, 'ok'::text, 'hostile path: restock works');
SELECT is(:'e_expire'::text, 't'::text, 'hostile path: expire works');
SELECT is(:'e_fold'::text, 't'::text, 'hostile path: fold works');
SELECT is(:'e_verify'::text, '0'::text, 'hostile path: verify finds nothing');
SELECT is_empty($$SELECT * FROM inv_test_evil.called$$, 'no hostile object was ever used');
SELECT is_empty($$SELECT * FROM inv_test_evil.ledger$$, 'nothing was written to the look-alike ledger');

SELECT * FROM finish();
ROLLBACK;

-- express.sql: reserve_now(), the express lane, as declared and as its
-- caller sees it.  The function is SECURITY DEFINER, as every API function
-- (a cache load after a restart reads the extension's tables as their
-- owner, whatever the caller's rights), VOLATILE, PARALLEL UNSAFE and not
-- STRICT; inventory_app may call it (and inventory_admin, a member), and
-- inventory_admin and inventory_monitor read express_status and
-- express_fallbacks() (who may use what is test/t/040_privileges.pl's).
-- A call answered from shared
-- memory or from a committed row -- insufficient, unknown_sku,
-- not_on_sale, buyer_required, duplicate -- and one the writer refuses
-- (limit_exceeded) writes nothing: no transaction id and no WAL record in
-- the caller, no ledger row, no units kept.  An 'ok' is written by the
-- writer: the caller takes no transaction id and writes no WAL either.
-- The writer of this database, as the monitoring role reads it: in
-- express_status (its figures in range, nothing failed; express_status()
-- agrees with the view), a background worker of its own, and no call fell
-- back to its own transaction (express_fallbacks()).  What psql shows of
-- reserve_now() -- its errors' messages, details and hints, the rows it
-- writes, the refusals of a call that cannot commit on its own -- is
-- sql/express.sql's.
-- This session is the application's (shop_app), which cannot write the
-- ledger itself: it reserves through the writer.  The administrator
-- restocks, sets the rules and reads the ledger, and the monitoring role
-- reads the writer's figures, through their connections.
--
-- reserve_now() commits on its own and is refused inside a transaction
-- block and in a subtransaction, so every call here runs in autocommit,
-- and "writes nothing" is measured by pg_temp.probe in the call's own
-- statement, before pgTAP writes its bookkeeping.  A call that reads rows
-- (a replay's, an unknown SKU's) may prune their heap page, which writes
-- WAL as any read may: VACUUM goes first.  SKUs and keys carry a prefix
-- unique to this run; the reservations left behind are settled at the end.

\set name express
\set role shop_app
\ir lib/setup.sql

-- reserve_now() with this run's names, for an hour, under pg_temp.probe:
-- its status, and whether the call took a transaction id or wrote WAL
CREATE FUNCTION pg_temp.now_try(s text, q bigint, o text, buyer text DEFAULT NULL)
RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.probe(format('SELECT set_config(%L, inventory.reserve_now(%L, %s, %L, 1, %L, %L), false)',
								   'inventory_test.answer', pg_temp.n(s), q, pg_temp.n(o), '1 hour', buyer)) $$;

-- ledger rows under a key of this run
CREATE FUNCTION pg_temp.rows(o text) RETURNS bigint LANGUAGE sql
AS $$ SELECT pg_temp.read1(format('SELECT count(*) FROM inventory.ledger WHERE order_id = %L', pg_temp.n(o)))::bigint $$;

-- a ledger row as text: every column but folded, which the background
-- worker may set at any moment without changing the movement
CREATE FUNCTION pg_temp.row_of(o text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.read1(format($f$SELECT coalesce((SELECT (l.order_id, l.batch_id, l.kind, l.sku, l.qty, l.counted, l.state,
									l.buyer_id, l.created_at, l.expires_at, l.settled_at)::text
						 FROM inventory.ledger l WHERE order_id = %L AND batch_id = 1), 'no row')$f$, pg_temp.n(o))) $$;

-- the writer's fallbacks, as the monitoring role reads them
CREATE FUNCTION pg_temp.fallbacks() RETURNS bigint LANGUAGE sql
AS $$ SELECT pg_temp.monitor_says('SELECT inventory.express_fallbacks()')::bigint $$;

\set sig 'inventory.reserve_now(text, bigint, text, integer, interval, text)'
\set args '{text,bigint,text,integer,interval,text}'

SELECT plan(55);

------------------------------------------------------------------------------
-- as declared
------------------------------------------------------------------------------

SELECT has_function('inventory', 'reserve_now', :'args'::name[], 'reserve_now() exists');
SELECT function_returns('inventory', 'reserve_now', :'args'::name[], 'text', 'reserve_now() answers a status, as text');
SELECT is_definer('inventory', 'reserve_now', :'args'::name[], 'reserve_now() is SECURITY DEFINER, as every API function');
SELECT volatility_is('inventory', 'reserve_now', :'args'::name[], 'volatile', 'reserve_now() is VOLATILE');
SELECT is((SELECT proparallel FROM pg_proc WHERE oid = :'sig'::regprocedure), 'u'::"char",
		  'reserve_now() is PARALLEL UNSAFE');
SELECT isnt_strict('inventory', 'reserve_now', :'args'::name[],
				   'reserve_now() is not STRICT: a NULL argument is an error, not a NULL answer');
SELECT is(pg_get_function_arguments(:'sig'::regprocedure),
		  'sku text, qty bigint, order_id text, batch_id integer DEFAULT 1, ttl interval DEFAULT NULL::interval, buyer_id text DEFAULT NULL::text',
		  'reserve_now() takes reserve()''s arguments, but expected_version, with its defaults');
SELECT function_privs_are('inventory', 'reserve_now', :'args'::name[], 'inventory_app', ARRAY['EXECUTE'],
						  'inventory_app may call reserve_now()');
SELECT function_privs_are('inventory', 'reserve_now', :'args'::name[], 'public', ARRAY[]::text[],
						  'PUBLIC may not call reserve_now()');

SELECT function_returns('inventory', 'express_status', ARRAY[]::name[], 'setof record',
						'express_status() returns a row per database');
SELECT has_view('inventory', 'express_status', 'the view inventory.express_status exists');
SELECT columns_are('inventory', 'express_status',
				   ARRAY['datid', 'datname', 'writer_pid', 'started_at', 'queued', 'batches', 'rows',
						 'rows_per_batch', 'max_batch', 'sent_back', 'failed'],
				   'express_status has its columns');
SELECT is((SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
			 FROM pg_attribute a WHERE a.attrelid = 'inventory.express_status'::regclass AND a.attnum > 0),
		  'datid oid, datname text, writer_pid integer, started_at timestamp with time zone, queued integer, batches bigint, rows bigint, rows_per_batch double precision, max_batch bigint, sent_back bigint, failed bigint',
		  'express_status''s columns have their types');
SELECT function_privs_are('inventory', 'express_status', ARRAY[]::name[], 'inventory_admin', ARRAY['EXECUTE'],
						  'inventory_admin may call express_status()');
SELECT function_privs_are('inventory', 'express_status', ARRAY[]::name[], 'inventory_app', ARRAY[]::text[],
						  'inventory_app may not call express_status()');
SELECT table_privs_are('inventory', 'express_status', 'inventory_admin', ARRAY['SELECT'],
					   'inventory_admin may read the view express_status');
SELECT table_privs_are('inventory', 'express_status', 'inventory_app', ARRAY[]::text[],
					   'inventory_app may not read the view express_status');
SELECT function_returns('inventory', 'express_fallbacks', ARRAY[]::name[], 'bigint',
						'express_fallbacks() is a bigint');
SELECT function_privs_are('inventory', 'express_fallbacks', ARRAY[]::name[], 'inventory_admin', ARRAY['EXECUTE'],
						  'inventory_admin may call express_fallbacks()');
SELECT function_privs_are('inventory', 'express_fallbacks', ARRAY[]::name[], 'inventory_app', ARRAY[]::text[],
						  'inventory_app may not call express_fallbacks()');

------------------------------------------------------------------------------
-- set-up (committed): A has 6 units, B 1, L a limit of 2 per buyer, W a
-- sale window that has not begun, P 1 unit for the probe's own check
------------------------------------------------------------------------------

SELECT pg_temp.restock('A', 5, 'rA'), pg_temp.restock('A', 1, 'rA2'), pg_temp.restock('B', 1, 'rB'),
	   pg_temp.restock('L', 10, 'rL'), pg_temp.restock('W', 10, 'rW'), pg_temp.restock('P', 1, 'rP') \g /dev/null
SELECT pg_temp.set_rules('L', max_per_buyer => 2), pg_temp.set_rules('W', sale_starts => now() + interval '1 day') \g /dev/null
SELECT pg_temp.fallbacks() AS fallbacks_before \gset
-- no page left for a read to prune: the other files have updated rows
-- (scaffolding: VACUUM is the tables' owner's)
SELECT pg_temp.as_super('VACUUM inventory.ledger, inventory.sku') \g /dev/null

------------------------------------------------------------------------------
-- the probe sees what a call writes: a reserve() takes a transaction id and
-- writes WAL in the caller
------------------------------------------------------------------------------

SELECT is(pg_temp.probe(format('SELECT set_config(%L, (inventory.reserve(%L, 1, %L)).status, false)',
							   'inventory_test.answer', pg_temp.n('P'), pg_temp.n('probe'))),
		  'ok xid=taken wal=written', 'the probe sees a reserve''s transaction id and WAL');

------------------------------------------------------------------------------
-- refusals decided in shared memory: no transaction id, no WAL, no row,
-- nothing held
------------------------------------------------------------------------------

SELECT is(pg_temp.now_try('A', 7, 'ins'), 'insufficient xid=none wal=none', 'insufficient: nothing written');
SELECT is(pg_temp.rows('ins'), 0::bigint, 'insufficient: no ledger row');
SELECT is(inventory.available(pg_temp.n('A')), 6::bigint, 'insufficient: no units kept');

SELECT is(pg_temp.now_try('NOPE', 1, 'unk'), 'unknown_sku xid=none wal=none', 'unknown_sku: nothing written');
SELECT is(pg_temp.rows('unk'), 0::bigint, 'unknown_sku: no ledger row');
SELECT is(pg_temp.read1(format('SELECT count(*) FROM inventory.sku WHERE sku = %L', pg_temp.n('NOPE'))), '0',
		  'unknown_sku: no SKU row');

SELECT is(pg_temp.now_try('W', 1, 'early'), 'not_on_sale xid=none wal=none', 'not_on_sale: nothing written');
SELECT is(pg_temp.rows('early'), 0::bigint, 'not_on_sale: no ledger row');
SELECT is(inventory.available(pg_temp.n('W')), 10::bigint, 'not_on_sale: no units kept');

SELECT is(pg_temp.now_try('L', 1, 'anon'), 'buyer_required xid=none wal=none', 'buyer_required: nothing written');
SELECT is(pg_temp.rows('anon'), 0::bigint, 'buyer_required: no ledger row');
SELECT is(inventory.available(pg_temp.n('L')), 10::bigint, 'buyer_required: no units kept');

------------------------------------------------------------------------------
-- ok: written by the express writer, not in the caller's transaction
------------------------------------------------------------------------------

SELECT is(pg_temp.now_try('A', 2, 'ok1'), 'ok xid=none wal=none',
		  'ok: the caller takes no transaction id and writes no WAL');
SELECT is(pg_temp.rows('ok1'), 1::bigint, 'ok: the row is in the ledger at once');
SELECT is(inventory.available(pg_temp.n('A')), 4::bigint, 'ok: its units are taken');
SELECT is(pg_temp.now_try('B', 1, 'bsold'), 'ok xid=none wal=none', 'ok: the last unit of B');
SELECT is(pg_temp.fallbacks() - :fallbacks_before, 0::bigint,
		  'the calls had a writer: none reserved in its own transaction');

------------------------------------------------------------------------------
-- replays and the writer's refusals write nothing either
------------------------------------------------------------------------------

SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT pg_temp.row_of('ok1') AS ok1_row, pg_temp.row_of('bsold') AS bsold_row \gset
SELECT is(pg_temp.now_try('A', 2, 'ok1'), 'duplicate xid=none wal=none', 'duplicate (stock available): nothing written');
SELECT is(pg_temp.row_of('ok1'), :'ok1_row', 'duplicate (stock available): the row is untouched');
SELECT is(inventory.available(pg_temp.n('A')), 4::bigint, 'duplicate (stock available): no units kept');
SELECT is(pg_temp.now_try('B', 1, 'bsold'), 'duplicate xid=none wal=none', 'duplicate (sold out): nothing written');
SELECT is(pg_temp.row_of('bsold'), :'bsold_row', 'duplicate (sold out): the row is untouched');

SELECT is(pg_temp.now_try('L', 2, 'ann1', 'ann'), 'ok xid=none wal=none', 'ann reserves her 2 units');
SELECT is(pg_temp.now_try('L', 1, 'ann2', 'ann'), 'limit_exceeded xid=none wal=none',
		  'limit_exceeded, decided by the writer: nothing written in the caller');
SELECT is(pg_temp.rows('ann2'), 0::bigint, 'limit_exceeded: no ledger row');
SELECT is(inventory.available(pg_temp.n('L')), 8::bigint, 'limit_exceeded: no units kept');

------------------------------------------------------------------------------
-- refused inside a transaction block, before anything is held
------------------------------------------------------------------------------

BEGIN;
-- throws_ok() runs the call in a subtransaction of its own, which is refused first
SELECT throws_ok(format('SELECT inventory.reserve_now(%L, 1, %L)', pg_temp.n('A'), pg_temp.n('blk')),
				 '25001', 'inventory.reserve_now() cannot run inside a subtransaction',
				 'inside a transaction block: 25001');
SELECT is(inventory.available(pg_temp.n('A')), 4::bigint, 'inside a transaction block: no units held');
COMMIT;
SELECT is(pg_temp.rows('blk'), 0::bigint, 'inside a transaction block: no ledger row');

------------------------------------------------------------------------------
-- the writer of this database
------------------------------------------------------------------------------

SELECT pg_temp.monitor_says('SELECT writer_pid FROM inventory.express_status WHERE datname = current_database()') AS writer_pid \gset
SELECT ok(pg_temp.monitor_says('SELECT datname = current_database() AND writer_pid IS NOT NULL
										 AND writer_pid <> pg_backend_pid() AND started_at <= now() AND queued = 0
										 AND batches >= 1 AND rows >= 3 AND rows >= batches
										 AND max_batch BETWEEN 1 AND rows AND sent_back >= 0 AND failed = 0
								  FROM inventory.express_status
								 WHERE datid = (SELECT oid FROM pg_database WHERE datname = current_database())')::boolean,
		  'express_status shows this database''s writer, another process, started, nothing queued, its batches and rows (3 ok calls), nothing failed, to the monitoring role');
SELECT is(pg_temp.monitor_says('SELECT count(*) FROM inventory.express_status() f
									JOIN inventory.express_status v USING (datid, writer_pid)
								 WHERE f.datname = current_database()'), '1',
		  'the function express_status() and the view agree on the writer');
-- (the writer runs as the bootstrap superuser: its row of pg_stat_activity
-- is read by the superuser, scaffolding)
SELECT is(pg_temp.as_super(format('SELECT backend_type FROM pg_stat_activity WHERE pid = %s', :'writer_pid')),
		  'inventory express writer', 'its writer is a background worker of its own');

\ir lib/settle.sql

SELECT * FROM finish();

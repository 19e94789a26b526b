-- rules.sql: a SKU's commerce rules (invariant I9) -- at most max_per_buyer
-- units per buyer (PENDING + CONFIRMED), reservations only within
-- [sale_starts, sale_ends) -- through reserve() and through direct INSERTs.
-- Every status and error with its SQLSTATE, their order, the available a
-- refusal answers, that refusals write nothing, that cancelled and expired
-- units stop counting and confirmed ones keep counting after a fold, the
-- window's exact bounds, and that rules change at commit, never from a
-- rolled-back change.  The messages, details and hints of the errors that
-- sql/rules.sql shows are checked there, not here (here, their SQLSTATEs).
--
-- "Writes nothing" is measured for the call itself, before pgTAP writes its
-- own bookkeeping: no transaction id, no WAL record (pg_temp.probe).  A
-- refusal that reads ledger rows (a replay's, a buyer's) may prune their
-- heap page, as any read may, which writes WAL: VACUUM goes first there.
-- This session is the application's (shop_app), which reserves; the
-- administrator sets the rules (set_rules, UPDATE of inventory.sku),
-- restocks, inserts reservations by hand, folds and reads the ledger,
-- through its connection, in transactions of its own.  SKUs are RL-*,
-- under a prefix unique to this run; every reservation left behind is
-- settled.

\set name rules
\set role shop_app
\ir lib/setup.sql

-- runs a statement as the administrator
CREATE FUNCTION pg_temp.admin_do(sql text) RETURNS void LANGUAGE sql
AS $$ SELECT pg_temp.as_admin(sql) $$;

-- reserve with this run's names, for an hour
CREATE FUNCTION pg_temp.r(s text, q bigint, o text, buyer text DEFAULT NULL,
						  ev bigint DEFAULT NULL)
RETURNS inventory.result LANGUAGE sql
AS $$ SELECT * FROM inventory.reserve(pg_temp.n(s), q, pg_temp.n(o), 1, '1 hour', ev, buyer) $$;

-- an outcome as pg_temp.res_id gives it, and the available it answers
CREATE FUNCTION pg_temp.res_av(r inventory.result) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.res_id(r) || ' available=' || coalesce(r.available::text, 'NULL') $$;

-- a reserve's outcome (with avail, its available too), and what it wrote
CREATE FUNCTION pg_temp.try(s text, q bigint, o text, buyer text DEFAULT NULL,
							ev bigint DEFAULT NULL, avail boolean DEFAULT false)
RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.probe(format('SELECT set_config(%L, pg_temp.%s(pg_temp.r(%L, %s, %L, %L, %L)), false)',
								   'inventory_test.answer', CASE WHEN avail THEN 'res_av' ELSE 'res_id' END,
								   s, q, o, buyer, ev)) $$;

-- ledger rows under a key of this run
CREATE FUNCTION pg_temp.rows(o text) RETURNS bigint LANGUAGE sql
AS $$ SELECT pg_temp.read1(format('SELECT count(*) FROM inventory.ledger WHERE order_id = %L', pg_temp.n(o)))::bigint $$;

-- the rules of a SKU as inventory.stock shows them (UTC)
CREATE FUNCTION pg_temp.rules_of(s text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT format('max_per_buyer=%s window=[%s, %s)', coalesce(max_per_buyer::text, 'NULL'),
					coalesce((sale_starts AT TIME ZONE 'UTC')::text, 'NULL'),
					coalesce((sale_ends AT TIME ZONE 'UTC')::text, 'NULL'))
		FROM inventory.stock WHERE sku = pg_temp.n(s) $$;

-- the administrator inserts a reservation by hand: 'inserted', or the
-- SQLSTATE of the error, which every use asserts (their messages:
-- sql/rules.sql)
CREATE FUNCTION pg_temp.ins(vals text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_temp.as_admin('INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at, buyer_id) VALUES '
							 || vals);
	RETURN 'inserted';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END $$;

-- The window at its bounds: the administrator sets the rules of s
-- relative to S, the start of the CALL statement (and commits), then the
-- application commits too and, in a new transaction (whose now() is
-- later), reserves in the same statement, whose "now" is still S; rolls
-- that back.  later: now() of the second transaction is past S + 1
-- microsecond.
CREATE PROCEDURE pg_temp.at_bound(s text, starts interval, ends interval,
								  INOUT answer text DEFAULT NULL, INOUT later boolean DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
	t timestamptz := statement_timestamp();
BEGIN
	PERFORM pg_temp.as_admin(format('SELECT inventory.set_rules(%L, NULL, %L, %L)', pg_temp.n(s), t + starts, t + ends));
	COMMIT;
	later := now() > t + interval '1 microsecond';
	answer := (pg_temp.r(s, 1, 'bound')).status;
	ROLLBACK;
END $$;
-- The same for an INSERT by hand, all in one CALL of the administrator's:
-- its procedure, in its session
SELECT pg_temp.as_admin($p$
CREATE PROCEDURE pg_temp.at_bound_insert(s text, o text, starts interval, ends interval, INOUT answer text DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
	t timestamptz := statement_timestamp();
BEGIN
	PERFORM inventory.set_rules(s, NULL, t + starts, t + ends);
	COMMIT;
	BEGIN
		INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
		VALUES (o, 1, 'reserve', s, 1, t + interval '1 hour');
		answer := 'inserted';
	EXCEPTION WHEN OTHERS THEN
		answer := SQLSTATE || ': ' || replace(SQLERRM, current_setting('inventory_test.prefix'), '');
	END;
	ROLLBACK;
END $$$p$) \g /dev/null
CREATE FUNCTION pg_temp.at_bound_insert(s text, starts interval, ends interval) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.admin_says(format('CALL pg_temp.at_bound_insert(%L, %L, %L, %L)',
									   pg_temp.n(s), pg_temp.n('bound'), starts, ends)) $$;

SELECT plan(96);

------------------------------------------------------------------------------
-- set-up
------------------------------------------------------------------------------

-- ten SKUs of 10 units
SELECT pg_temp.restock(s, 10, 'd-' || s)
  FROM unnest('{RL-B,RL-D,RL-E,RL-L,RL-N,RL-P,RL-R,RL-T,RL-W,RL-X}'::text[]) s \g /dev/null

------------------------------------------------------------------------------
-- set_rules() and its errors; direct UPDATE of the rules
------------------------------------------------------------------------------

SELECT is(pg_temp.rules_of('RL-L'), 'max_per_buyer=NULL window=[NULL, NULL)', 'a new SKU has no rules');
-- set_rules: a limit of 3
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, 3)', pg_temp.n('RL-L')));
SELECT is(pg_temp.rules_of('RL-L'), 'max_per_buyer=3 window=[NULL, NULL)', 'set_rules: inventory.stock shows the limit');

SELECT throws_ok(pg_temp.by_admin('SELECT inventory.set_rules(NULL, 1)'), '22004', NULL, 'set_rules: NULL sku');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.set_rules(%L, 0)', pg_temp.n('RL-L'))),
				 '22023', NULL, 'set_rules: max_per_buyer 0');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.set_rules(%L, -1)', pg_temp.n('RL-L'))),
				 '22023', 'max_per_buyer must be positive', 'set_rules: negative max_per_buyer');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.set_rules(%L, 5, %L, %L)', pg_temp.n('RL-L'), '2030-01-01 00:00+00', '2030-01-01 00:00+00')),
				 '22023', 'sale_ends must be later than sale_starts', 'set_rules: sale_ends = sale_starts');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.set_rules(%L, 5, %L, %L)', pg_temp.n('RL-L'), '2030-01-02 00:00+00', '2030-01-01 00:00+00')),
				 '22023', NULL, 'set_rules: sale_ends before sale_starts');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.set_rules(%L, 1)', pg_temp.n('RL-NOPE'))),
				 '42704', NULL, 'set_rules: unknown sku');
SELECT is(pg_temp.rules_of('RL-L'), 'max_per_buyer=3 window=[NULL, NULL)', 'a failed set_rules changes nothing');

SELECT throws_ok(pg_temp.by_admin(format('UPDATE inventory.sku SET max_per_buyer = 0 WHERE sku = %L', pg_temp.n('RL-L'))),
				 '23514', 'new row for relation "sku" violates check constraint "sku_max_per_buyer_check"',
				 'UPDATE: max_per_buyer 0 violates the CHECK');
SELECT throws_ok(pg_temp.by_admin(format('UPDATE inventory.sku SET max_per_buyer = -3 WHERE sku = %L', pg_temp.n('RL-L'))),
				 '23514', NULL, 'UPDATE: negative max_per_buyer violates the CHECK');
SELECT throws_ok(pg_temp.by_admin(format('UPDATE inventory.sku SET sale_starts = %L, sale_ends = %L WHERE sku = %L',
						'2030-01-01 00:00+00', '2030-01-01 00:00+00', pg_temp.n('RL-L'))),
				 '23514', 'new row for relation "sku" violates check constraint "sku_sale_window_check"',
				 'UPDATE: an empty window violates the CHECK');

-- set_rules: every rule
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, 5, %L, %L)', pg_temp.n('RL-X'), '2030-01-01 00:00+00', '2030-02-01 00:00+00'));
SELECT is(pg_temp.rules_of('RL-X'), 'max_per_buyer=5 window=[2030-01-01 00:00:00, 2030-02-01 00:00:00)',
		  'set_rules: inventory.stock shows every rule');
-- set_rules: the limit alone
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, 2)', pg_temp.n('RL-X')));
SELECT is(pg_temp.rules_of('RL-X'), 'max_per_buyer=2 window=[NULL, NULL)', 'set_rules replaces every rule: NULL is no rule');
-- UPDATE of inventory.sku sets a rule too
SELECT pg_temp.admin_do(format('UPDATE inventory.sku SET max_per_buyer = 4 WHERE sku = %L', pg_temp.n('RL-X')));
SELECT is(pg_temp.rules_of('RL-X'), 'max_per_buyer=4 window=[NULL, NULL)', 'inventory.stock shows the UPDATE');
SELECT is(pg_temp.try('RL-X', 1, 'rl-x1'), 'ok=false status=buyer_required sku=RL-X qty=1 state=NULL xid=none wal=none',
		  'the UPDATE is in force once committed');

------------------------------------------------------------------------------
-- the per-buyer limit (RL-L: 3 per buyer)
------------------------------------------------------------------------------

SELECT is(inventory.available(pg_temp.n('RL-L')), 10::bigint, 'RL-L: 10 available');
SELECT is(pg_temp.try('RL-L', 1, 'rl-nob', avail => true),
		  'ok=false status=buyer_required sku=RL-L qty=1 state=NULL available=10 xid=none wal=none',
		  'buyer_required: no buyer for a SKU with a limit, told the 10 a reserve can take now; no xid, no WAL');
SELECT is(pg_temp.rows('rl-nob'), 0::bigint, 'buyer_required: no ledger row');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L, buyer_id => %L)', pg_temp.n('RL-L'), pg_temp.n('rl-empty'), ''),
				 '22023', 'buyer_id must not be empty', 'an empty buyer_id is an error');

SELECT is(pg_temp.res_id(pg_temp.r('RL-L', 2, 'rl-a1', 'alice')), 'ok=true status=ok sku=RL-L qty=2 state=PENDING',
		  'alice reserves 2');
SELECT is(pg_temp.res_id(pg_temp.r('RL-L', 1, 'rl-a2', 'alice')), 'ok=true status=ok sku=RL-L qty=1 state=PENDING',
		  'alice reserves 1 more: exactly her limit');
SELECT is(pg_temp.read1(format('SELECT buyer_id FROM inventory.ledger WHERE order_id = %L', pg_temp.n('rl-a2'))), 'alice',
		  'the ledger row records the buyer');
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try('RL-L', 1, 'rl-a3', 'alice', avail => true),
		  'ok=false status=limit_exceeded sku=RL-L qty=1 state=NULL available=7 xid=none wal=none',
		  'limit_exceeded: one more for alice, told the 7 a reserve can take now; no xid, no WAL');
SELECT is(pg_temp.rows('rl-a3'), 0::bigint, 'limit_exceeded: no ledger row');
SELECT is(inventory.available(pg_temp.n('RL-L')), 7::bigint, 'limit_exceeded: no hold kept');
SELECT is(pg_temp.res_id(pg_temp.r('RL-L', 3, 'rl-b1', 'bob')), 'ok=true status=ok sku=RL-L qty=3 state=PENDING',
		  'bob has a limit of his own');
SELECT is(pg_temp.try('RL-L', 4, 'rl-c1', 'carol'), 'ok=false status=limit_exceeded sku=RL-L qty=4 state=NULL xid=none wal=none',
		  'limit_exceeded: a single call above the limit');
SELECT is(pg_temp.res_id(pg_temp.r('RL-N', 5, 'rl-n1', 'alice')), 'ok=true status=ok sku=RL-N qty=5 state=PENDING',
		  'a buyer_id on a SKU without a limit is fine, and the limit of another SKU does not count');
SELECT is(pg_temp.try('RL-N', 1, 'rl-n2'), 'ok=true status=ok sku=RL-N qty=1 state=PENDING xid=taken wal=written',
		  '(the probe sees a reservation that is made take an xid and write WAL)');

------------------------------------------------------------------------------
-- the order of statuses (RL-B: 2 per buyer; alice holds 2)
------------------------------------------------------------------------------

-- RL-B: a limit of 2
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, 2)', pg_temp.n('RL-B')));
SELECT is(pg_temp.res_id(pg_temp.r('RL-B', 2, 'rl-ba', 'alice')), 'ok=true status=ok sku=RL-B qty=2 state=PENDING',
		  'alice reserves her 2 units of RL-B');
SELECT is(pg_temp.try('RL-NOPE', 1, 'rl-o0', 'alice'), 'ok=false status=unknown_sku sku=RL-NOPE qty=1 state=NULL xid=none wal=none',
		  'unknown_sku comes first');
SELECT is(pg_temp.try('RL-B', 11, 'rl-o1', NULL, 0), 'ok=false status=buyer_required sku=RL-B qty=11 state=NULL xid=none wal=none',
		  'buyer_required before version_conflict and insufficient');
SELECT is(pg_temp.try('RL-B', 1, 'rl-o2', 'alice', 0), 'ok=false status=version_conflict sku=RL-B qty=1 state=NULL xid=none wal=none',
		  'version_conflict before limit_exceeded');
SELECT is(pg_temp.try('RL-B', 11, 'rl-o3', 'alice'), 'ok=false status=insufficient sku=RL-B qty=11 state=NULL xid=none wal=none',
		  'insufficient before limit_exceeded');
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try('RL-B', 2, 'rl-ba', 'alice'), 'ok=true status=duplicate sku=RL-B qty=2 state=PENDING xid=none wal=none',
		  'a replay at the limit is a duplicate, not limit_exceeded; no xid, no WAL');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 2, %L, buyer_id => %L)', pg_temp.n('RL-B'), pg_temp.n('rl-ba'), 'bob'),
				 '23505', NULL, 'the key replayed for another buyer is an error');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 2, %L)', pg_temp.n('RL-B'), pg_temp.n('rl-ba')),
				 '23505', NULL, 'the key replayed without its buyer is an error');
SELECT is(pg_temp.read1(format('SELECT count(*) FROM inventory.ledger WHERE order_id LIKE %L', pg_temp.n('rl-o%')))::bigint, 0::bigint,
		  'the refusals wrote no ledger row');

-- a reservation made before its SKU had rules stays a duplicate
SELECT is(pg_temp.res_id(pg_temp.r('RL-R', 1, 'rl-r1')), 'ok=true status=ok sku=RL-R qty=1 state=PENDING',
		  'RL-R: a reservation without a buyer');
-- RL-R gets a limit
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, 2)', pg_temp.n('RL-R')));
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try('RL-R', 1, 'rl-r1'), 'ok=true status=duplicate sku=RL-R qty=1 state=PENDING xid=none wal=none',
		  'its replay without a buyer is a duplicate');
-- RL-R goes off sale
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, 2, NULL, now() - interval %L)', pg_temp.n('RL-R'), '1 hour'));
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try('RL-R', 1, 'rl-r1'), 'ok=true status=duplicate sku=RL-R qty=1 state=PENDING xid=none wal=none',
		  'its replay off sale is a duplicate');
SELECT is(pg_temp.try('RL-R', 1, 'rl-r2'), 'ok=false status=not_on_sale sku=RL-R qty=1 state=NULL xid=none wal=none',
		  'a new key off sale is not_on_sale, before buyer_required');

------------------------------------------------------------------------------
-- the sale window (RL-W)
------------------------------------------------------------------------------

-- RL-W: on sale in an hour
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, NULL, now() + interval %L)', pg_temp.n('RL-W'), '1 hour'));
SELECT is(pg_temp.try('RL-W', 1, 'rl-w1', avail => true),
		  'ok=false status=not_on_sale sku=RL-W qty=1 state=NULL available=10 xid=none wal=none',
		  'not_on_sale before the window, told the 10 a reserve can take now; no xid, no WAL');
SELECT is(pg_temp.try('RL-W', 100, 'rl-w1'), 'ok=false status=not_on_sale sku=RL-W qty=100 state=NULL xid=none wal=none',
		  'not_on_sale before insufficient');
SELECT is(pg_temp.rows('rl-w1'), 0::bigint, 'not_on_sale: no ledger row');
SELECT is(inventory.available(pg_temp.n('RL-W')), 10::bigint, 'not_on_sale: no hold kept');
-- RL-W: off sale since a second
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, NULL, NULL, now() - interval %L)', pg_temp.n('RL-W'), '1 second'));
SELECT is(pg_temp.try('RL-W', 1, 'rl-w1'), 'ok=false status=not_on_sale sku=RL-W qty=1 state=NULL xid=none wal=none',
		  'not_on_sale after the window');
-- RL-W: a limit, on sale in an hour
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, 2, now() + interval %L)', pg_temp.n('RL-W'), '1 hour'));
SELECT is(pg_temp.try('RL-W', 1, 'rl-w1'), 'ok=false status=not_on_sale sku=RL-W qty=1 state=NULL xid=none wal=none',
		  'not_on_sale before buyer_required');
-- RL-W: on sale since a second, for an hour
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, NULL, now() - interval %L, now() + interval %L)', pg_temp.n('RL-W'), '1 second', '1 hour'));
SELECT is(pg_temp.res_id(pg_temp.r('RL-W', 1, 'rl-w1')), 'ok=true status=ok sku=RL-W qty=1 state=PENDING',
		  'within the window: ok');
-- RL-W: on sale since a second, no end
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, NULL, now() - interval %L)', pg_temp.n('RL-W'), '1 second'));
SELECT is(pg_temp.res_id(pg_temp.r('RL-W', 1, 'rl-w2')), 'ok=true status=ok sku=RL-W qty=1 state=PENDING',
		  'a window with no end: ok');
-- RL-W: on sale for an hour, no start
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, NULL, NULL, now() + interval %L)', pg_temp.n('RL-W'), '1 hour'));
SELECT is(pg_temp.res_id(pg_temp.r('RL-W', 1, 'rl-w3')), 'ok=true status=ok sku=RL-W qty=1 state=PENDING',
		  'a window with no start: ok');

-- the bounds, exactly: "now" is the start of the reserving statement
CALL pg_temp.at_bound('RL-P', '0', NULL) \gset starts_at_
CALL pg_temp.at_bound('RL-P', '1 microsecond', NULL) \gset starts_after_
CALL pg_temp.at_bound('RL-P', NULL, '0') \gset ends_at_
CALL pg_temp.at_bound('RL-P', '-1 hour', '1 microsecond') \gset ends_after_
SELECT pg_temp.at_bound_insert('RL-P', '0', NULL) AS ins_starts_at_answer,
	   pg_temp.at_bound_insert('RL-P', '-1 hour', '0') AS ins_ends_at_answer \gset
SELECT is(:'starts_at_answer'::text, 'ok', 'sale_starts = the statement start: on sale (the start is included)');
SELECT is(:'starts_after_answer'::text, 'not_on_sale', 'sale_starts a microsecond after the statement start: not on sale');
SELECT is(:'ends_at_answer'::text, 'not_on_sale', 'sale_ends = the statement start: not on sale (the end is excluded)');
SELECT is(:'ends_after_answer'::text, 'ok', 'sale_ends a microsecond after the statement start: on sale');
SELECT ok(:'ends_after_later'::boolean, '... though now() of that transaction is past sale_ends: the statement start counts');
SELECT is(:'ins_starts_at_answer'::text, 'inserted', 'INSERT at sale_starts: allowed');
SELECT is(:'ins_ends_at_answer'::text, '23514: sku "RL-P" is not on sale', 'INSERT at sale_ends: 23514');
SELECT is(pg_temp.rows('bound'), 0::bigint, 'the bound checks left no row');

------------------------------------------------------------------------------
-- direct INSERT of a reservation (RL-D: 2 per buyer)
------------------------------------------------------------------------------

-- RL-D: a limit of 2
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, 2)', pg_temp.n('RL-D')));
SELECT is(pg_temp.ins(format('(%L, 1, %L, %L, 1, now() + interval %L, NULL)', pg_temp.n('rl-d1'), 'reserve', pg_temp.n('RL-D'), '1 hour')),
		  '23502', 'INSERT without a buyer on a SKU with a limit: 23502');
SELECT is(pg_temp.ins(format('(%L, 1, %L, %L, 3, now() + interval %L, %L)', pg_temp.n('rl-d1'), 'reserve', pg_temp.n('RL-D'), '1 hour', 'alice')),
		  '23514', 'INSERT above the limit: 23514');
SELECT is(pg_temp.ins(format('(%L, 1, %L, %L, 1, now() + interval %L, %L), (%L, 1, %L, %L, 2, now() + interval %L, %L)',
								pg_temp.n('rl-d1'), 'reserve', pg_temp.n('RL-D'), '1 hour', 'alice',
								pg_temp.n('rl-d2'), 'reserve', pg_temp.n('RL-D'), '1 hour', 'alice')),
		  '23514', 'INSERT of two rows, each within the limit, together above it: 23514');
SELECT is(pg_temp.rows('rl-d1') + pg_temp.rows('rl-d2'), 0::bigint, 'the failed INSERTs left no row');
SELECT is(pg_temp.ins(format('(%L, 1, %L, %L, 1, now() + interval %L, %L), (%L, 1, %L, %L, 1, now() + interval %L, %L)',
								pg_temp.n('rl-d1'), 'reserve', pg_temp.n('RL-D'), '1 hour', 'alice',
								pg_temp.n('rl-d2'), 'reserve', pg_temp.n('RL-D'), '1 hour', 'alice')),
		  'inserted', 'INSERT of two rows exactly at the limit');
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try('RL-D', 1, 'rl-d3', 'alice'), 'ok=false status=limit_exceeded sku=RL-D qty=1 state=NULL xid=none wal=none',
		  'reservations inserted by hand count for reserve()');
SELECT throws_ok(pg_temp.by_admin(format('UPDATE inventory.ledger SET buyer_id = %L WHERE order_id = %L', 'bob', pg_temp.n('rl-d1'))),
				 '23514', NULL, 'a reservation''s buyer never changes');
-- RL-D: no limit, on sale in an hour
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, NULL, now() + interval %L)', pg_temp.n('RL-D'), '1 hour'));
SELECT is(pg_temp.ins(format('(%L, 1, %L, %L, 1, now() + interval %L, NULL)', pg_temp.n('rl-d4'), 'reserve', pg_temp.n('RL-D'), '1 hour')),
		  '23514', 'INSERT outside the window: 23514');

------------------------------------------------------------------------------
-- what counts: cancelled and expired units do not, confirmed units do,
-- folded or not (RL-E: 2 per buyer)
------------------------------------------------------------------------------

-- RL-E: a limit of 2
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, 2)', pg_temp.n('RL-E')));
SELECT is(pg_temp.res_id(pg_temp.r('RL-E', 2, 'rl-e1', 'alice')), 'ok=true status=ok sku=RL-E qty=2 state=PENDING',
		  'alice reserves 2');
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try('RL-E', 1, 'rl-e2', 'alice'), 'ok=false status=limit_exceeded sku=RL-E qty=1 state=NULL xid=none wal=none',
		  'PENDING units count');
-- alice cancels them
SELECT pg_temp.expect(inventory.cancel(pg_temp.n('rl-e1'))) \g /dev/null
SELECT is(pg_temp.res_id(pg_temp.r('RL-E', 1, 'rl-e2', 'alice')), 'ok=true status=ok sku=RL-E qty=1 state=PENDING',
		  'cancelled units do not count');
SELECT is(pg_temp.ins(format('(%L, 1, %L, %L, 1, now() - interval %L, %L)', pg_temp.n('rl-e3'), 'reserve', pg_temp.n('RL-E'), '1 minute', 'alice')),
		  'inserted', 'an overdue reservation of alice, by hand');
SELECT is((pg_temp.r('RL-E', 1, 'rl-e4', 'alice')).status, 'limit_exceeded', 'an overdue PENDING reservation still counts');
SELECT is((inventory.confirm(pg_temp.n('rl-e3'))).status, 'expired', 'the overdue reservation is EXPIRED');
SELECT is(pg_temp.res_id(pg_temp.r('RL-E', 1, 'rl-e4', 'alice')), 'ok=true status=ok sku=RL-E qty=1 state=PENDING',
		  'expired units do not count');
SELECT is((SELECT string_agg((inventory.confirm(pg_temp.n(o))).status, ',' ORDER BY o) FROM unnest(ARRAY['rl-e2', 'rl-e4']) o),
		  'ok,ok', 'alice pays for her 2 units');
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try('RL-E', 1, 'rl-e5', 'alice'), 'ok=false status=limit_exceeded sku=RL-E qty=1 state=NULL xid=none wal=none',
		  'CONFIRMED units count');
SELECT is(pg_temp.res_id(pg_temp.r('RL-E', 2, 'rl-eb1', 'bob')), 'ok=true status=ok sku=RL-E qty=2 state=PENDING',
		  'bob reserves 2');
-- bob cancels them
SELECT pg_temp.expect(inventory.cancel(pg_temp.n('rl-eb1'))) \g /dev/null
-- the administrator folds, in a transaction that first waits for any fold
-- of the worker's (the lock of pg_temp.quiesce)
SELECT pg_temp.as_admin(q) FROM unnest(ARRAY['BEGIN',
		format($$SELECT count(*) FROM (SELECT 1 FROM inventory.ledger
										WHERE sku = %L AND NOT folded AND state IS DISTINCT FROM 'PENDING'
										FOR UPDATE) x$$, pg_temp.n('RL-E')),
		'SELECT inventory.fold()', 'COMMIT']) q \g /dev/null
SELECT is(pg_temp.read1(format($$SELECT count(*) FROM inventory.ledger WHERE sku = %L AND kind = 'reserve' AND NOT folded$$,
							   pg_temp.n('RL-E')))::bigint, 0::bigint,
		  'every settled reservation of RL-E is folded');
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try('RL-E', 1, 'rl-e5', 'alice'), 'ok=false status=limit_exceeded sku=RL-E qty=1 state=NULL xid=none wal=none',
		  'folded CONFIRMED units still count');
SELECT is(pg_temp.res_id(pg_temp.r('RL-E', 2, 'rl-eb2', 'bob')), 'ok=true status=ok sku=RL-E qty=2 state=PENDING',
		  'folded CANCELLED units still do not count');
SELECT throws_ok(pg_temp.by_admin(format('DELETE FROM inventory.ledger WHERE order_id = %L', pg_temp.n('rl-e2'))),
				 '23001', NULL, 'a folded CONFIRMED reservation that counts cannot be deleted');
-- RL-E: the limit raised to 3
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, 3)', pg_temp.n('RL-E')));
SELECT is(pg_temp.res_id(pg_temp.r('RL-E', 1, 'rl-e5', 'alice')), 'ok=true status=ok sku=RL-E qty=1 state=PENDING',
		  'the new limit is in force once committed');

------------------------------------------------------------------------------
-- rules change at commit; a rolled-back change never takes effect (RL-T)
------------------------------------------------------------------------------

-- the administrator's transactions, by its connection
SELECT pg_temp.admin_do('BEGIN');
-- in a transaction: RL-T on sale in an hour
SELECT pg_temp.admin_do(format('SELECT inventory.set_rules(%L, NULL, now() + interval %L)', pg_temp.n('RL-T'), '1 hour'));
BEGIN;
SELECT is((pg_temp.r('RL-T', 1, 'rl-t0')).status, 'ok', 'a window set in a transaction is not in force before its commit');
ROLLBACK;
SELECT pg_temp.admin_do('ROLLBACK');
SELECT is(pg_temp.res_id(pg_temp.r('RL-T', 1, 'rl-t0')), 'ok=true status=ok sku=RL-T qty=1 state=PENDING',
		  '... nor after its rollback');

-- a limit set, then rolled back
SELECT pg_temp.admin_do(q) FROM unnest(ARRAY['BEGIN', format('SELECT inventory.set_rules(%L, 1)', pg_temp.n('RL-T')),
											  'ROLLBACK']) q \g /dev/null
SELECT is(pg_temp.rules_of('RL-T'), 'max_per_buyer=NULL window=[NULL, NULL)', 'a limit set, then rolled back, leaves no rule');
SELECT is(pg_temp.res_id(pg_temp.r('RL-T', 1, 'rl-t1')), 'ok=true status=ok sku=RL-T qty=1 state=PENDING',
		  '... and is not in force');

-- a window set in a savepoint rolled back
SELECT pg_temp.admin_do(q) FROM unnest(ARRAY['BEGIN', 'SAVEPOINT s',
		format('SELECT inventory.set_rules(%L, NULL, now() + interval %L)', pg_temp.n('RL-T'), '1 hour'),
		'ROLLBACK TO SAVEPOINT s', 'COMMIT']) q \g /dev/null
SELECT is(pg_temp.res_id(pg_temp.r('RL-T', 1, 'rl-t2')), 'ok=true status=ok sku=RL-T qty=1 state=PENDING',
		  'a window set in a savepoint rolled back is not in force after the commit');

-- a limit of 2 set, then 5 in a savepoint rolled back
SELECT pg_temp.admin_do(q) FROM unnest(ARRAY['BEGIN', format('SELECT inventory.set_rules(%L, 2)', pg_temp.n('RL-T')),
		'SAVEPOINT s', format('UPDATE inventory.sku SET max_per_buyer = 5 WHERE sku = %L', pg_temp.n('RL-T')),
		'ROLLBACK TO SAVEPOINT s', 'COMMIT']) q \g /dev/null
SELECT is(pg_temp.rules_of('RL-T'), 'max_per_buyer=2 window=[NULL, NULL)',
		  'a limit of 2 set, then 5 in a savepoint rolled back, leaves 2');
SELECT is(pg_temp.res_id(pg_temp.r('RL-T', 2, 'rl-t3', 'alice')), 'ok=true status=ok sku=RL-T qty=2 state=PENDING',
		  'alice reserves 2');
SELECT pg_temp.vacuum_ledger() \g /dev/null
SELECT is(pg_temp.try('RL-T', 1, 'rl-t4', 'alice'), 'ok=false status=limit_exceeded sku=RL-T qty=1 state=NULL xid=none wal=none',
		  '... and the limit in force is 2, not 5');

-- a limit of 3 in a savepoint released
SELECT pg_temp.admin_do(q) FROM unnest(ARRAY['BEGIN', 'SAVEPOINT s',
		format('UPDATE inventory.sku SET max_per_buyer = 3 WHERE sku = %L', pg_temp.n('RL-T')),
		'RELEASE SAVEPOINT s', 'COMMIT']) q \g /dev/null
SELECT is(pg_temp.res_id(pg_temp.r('RL-T', 1, 'rl-t4', 'alice')), 'ok=true status=ok sku=RL-T qty=1 state=PENDING',
		  'a limit of 3 set in a savepoint released is in force after the commit');

SELECT pg_temp.admin_do(format($f$DO $$
BEGIN
	BEGIN
		PERFORM inventory.set_rules(%L, 3, now() + interval '1 hour');
		RAISE EXCEPTION 'undo';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
END
$$$f$, pg_temp.n('RL-T')));
SELECT is(pg_temp.rules_of('RL-T'), 'max_per_buyer=3 window=[NULL, NULL)', 'a window set in a PL/pgSQL block that failed ...');
SELECT is(pg_temp.res_id(pg_temp.r('RL-T', 1, 'rl-t5', 'bob')), 'ok=true status=ok sku=RL-T qty=1 state=PENDING',
		  '... is not in force');

-- settle what is left, and check the cache against the tables
\ir lib/settle.sql

SELECT * FROM finish();

-- outcomes.sql: every row of the outcome table of docs/api.md -- the call, the
-- key's movement before the call -> status, ok, state, and the effect on
-- inventory.stock and inventory.available().
--
-- The calls run in autocommit, one transaction per statement, so every
-- effect asserted is the committed one (a cancel puts units back on sale
-- only once it commits).  This session is the application's (shop_app):
-- it reserves, confirms, cancels and extends; the administrator restocks,
-- takes stock, withdraws, sets the rules, writes overdue reservations by
-- hand and reads the ledger, through its connection.  The background
-- worker (off in the test cluster) would expire overdue reservations and
-- fold settled movements at any moment: a version-checked call that must
-- succeed runs while the administrator holds the SKU's foldable rows
-- (pg_temp.quiesce), so that no fold -- a change in flight that pins the
-- SKU -- is running at that moment.  All names carry a prefix unique to
-- this run: the file passes on a fresh database and again on the same
-- one.  Every reservation it leaves behind is settled.

\set name outcomes
\set role shop_app
\ir lib/setup.sql

-- a result as pg_temp.res gives it, with expires_at relative to the start of the calling statement
-- (the "now" of the functions)
CREATE FUNCTION pg_temp.res_exp(r inventory.result) RETURNS text LANGUAGE plpgsql
AS $$
BEGIN
	RETURN pg_temp.res(r) || ' expires_in=' ||
		coalesce((r.expires_at - statement_timestamp())::text, 'NULL');
END $$;

-- the ledger row of a key (batch 1)
CREATE FUNCTION pg_temp.movement(o text) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.read1(format($f$SELECT coalesce((SELECT format('%%s sku=%%s qty=%%s counted=%%s state=%%s', kind,
																	   replace(sku, %L, ''), qty, coalesce(counted::text, 'NULL'),
																	   coalesce(state::text, 'NULL'))
														 FROM inventory.ledger WHERE order_id = %L AND batch_id = 1), 'none')$f$,
								  current_setting('inventory_test.prefix'), pg_temp.n(o))) $$;

-- the administrator's movements of this run's SKUs and keys: the result
CREATE FUNCTION pg_temp.restock_r(s text, q bigint, o text) RETURNS inventory.result LANGUAGE sql
AS $$ SELECT pg_temp.admin_r(format('inventory.restock(%L, %s, %L)', pg_temp.n(s), q, pg_temp.n(o))) $$;
CREATE FUNCTION pg_temp.adjust_r(s text, q bigint, o text, ev bigint DEFAULT NULL) RETURNS inventory.result LANGUAGE sql
AS $$ SELECT pg_temp.admin_r(format('inventory.adjust(%L, %s, %L, expected_version => %L)', pg_temp.n(s), q, pg_temp.n(o), ev)) $$;
CREATE FUNCTION pg_temp.withdraw_r(s text, q bigint, o text) RETURNS inventory.result LANGUAGE sql
AS $$ SELECT pg_temp.admin_r(format('inventory.withdraw(%L, %s, %L)', pg_temp.n(s), q, pg_temp.n(o))) $$;

-- keeps a result for later assertions
CREATE TEMP TABLE kept (label text PRIMARY KEY, r inventory.result);
CREATE FUNCTION pg_temp.keep(label text, r inventory.result) RETURNS inventory.result
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO kept VALUES (label, r);
	RETURN r;
END $$;

-- the administrator inserts a PENDING reservation that expires at "now" +
-- offs, then the application calls op on it, all in one statement of the
-- application's: so that "now" of the call is exactly the start of that
-- statement, which the row's expires_at was computed from
CREATE FUNCTION pg_temp.due_then(op text, o text, s text, q bigint, offs interval)
RETURNS inventory.result LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_temp.as_admin(format($f$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
									   VALUES (%L, 1, 'reserve', %L, %s, %L)$f$,
									pg_temp.n(o), pg_temp.n(s), q, statement_timestamp() + offs));
	IF op = 'confirm' THEN
		RETURN inventory.confirm(pg_temp.n(o));
	ELSIF op = 'extend' THEN
		RETURN inventory.extend(pg_temp.n(o), 1, '1 hour');
	END IF;
	RETURN inventory.cancel(pg_temp.n(o));
END $$;

SELECT plan(181);

------------------------------------------------------------------------------
-- restock
------------------------------------------------------------------------------

-- restock | none | ok | t | on_hand + qty; the SKU is created on first use
SELECT is(pg_temp.res_id(pg_temp.restock_r('A', 10, 'r1')),
		  'ok=true status=ok sku=A qty=10 state=NULL',
		  'restock of a new SKU: ok');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=0 available=10 version=1 live=10',
		  'restock of a new SKU: the SKU exists with on_hand = qty, version 1');
SELECT is(pg_temp.movement('r1'), 'restock sku=A qty=10 counted=NULL state=NULL',
		  'restock of a new SKU: its ledger row');

-- restock | a restock of the same SKU and qty | duplicate | t | none
SELECT is(pg_temp.res(pg_temp.restock_r('A', 10, 'r1')),
		  'ok=true status=duplicate sku=A qty=10 state=NULL available=10 version=1',
		  'restock replayed: duplicate, ok');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=0 available=10 version=1 live=10',
		  'restock replayed: nothing changes');

-- restock | none (SKU exists) | ok
SELECT is(pg_temp.res(pg_temp.restock_r('A', 5, 'r2')),
		  'ok=true status=ok sku=A qty=5 state=NULL available=15 version=1',
		  'restock of an existing SKU: ok, available with its units');
SELECT is(pg_temp.counters('A'), 'on_hand=15 reserved=0 available=15 version=2 live=15',
		  'restock of an existing SKU: on_hand + qty, version + 1');

SELECT is(pg_temp.res_id(pg_temp.restock_r('B', 5, 'rB')),
		  'ok=true status=ok sku=B qty=5 state=NULL',
		  'restock of a second new SKU: ok');
SELECT is(pg_temp.counters('B'), 'on_hand=5 reserved=0 available=5 version=1 live=5',
		  'second SKU: on_hand = qty');

------------------------------------------------------------------------------
-- reserve: refusals
------------------------------------------------------------------------------

-- reserve | none; SKU does not exist | unknown_sku | f | none
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('NOPE'), 1, pg_temp.n('o-unk'))),
		  'ok=false status=unknown_sku sku=NOPE qty=1 state=NULL available=NULL version=NULL',
		  'reserve of an unknown SKU: unknown_sku, not ok');
SELECT is(pg_temp.counters('NOPE'), 'no sku live=NULL',
		  'reserve of an unknown SKU: the SKU is not created');
SELECT is(pg_temp.movement('o-unk'), 'none',
		  'reserve of an unknown SKU: no ledger row');

-- reserve | none; expected_version given and stale | version_conflict | f | none
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('o-vc'), expected_version => 1)),
		  'ok=false status=version_conflict sku=A qty=1 state=NULL available=15 version=2',
		  'reserve with a stale expected_version: version_conflict, not ok');
SELECT is(pg_temp.counters('A'), 'on_hand=15 reserved=0 available=15 version=2 live=15',
		  'reserve with a stale expected_version: nothing changes');
SELECT is(pg_temp.movement('o-vc'), 'none',
		  'reserve with a stale expected_version: no ledger row');

-- reserve | none; available < qty | insufficient | f | none
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 16, pg_temp.n('o-ins'))),
		  'ok=false status=insufficient sku=A qty=16 state=NULL available=15 version=2',
		  'reserve of more than available: insufficient, not ok');
SELECT is(pg_temp.counters('A'), 'on_hand=15 reserved=0 available=15 version=2 live=15',
		  'reserve of more than available: nothing changes');
SELECT is(pg_temp.movement('o-ins'), 'none',
		  'reserve of more than available: no ledger row');

------------------------------------------------------------------------------
-- reserve: ok
------------------------------------------------------------------------------

-- reserve | none; available >= qty | ok | t | PENDING reservation; available - qty
SELECT pg_temp.quiesce('A') \g /dev/null
SELECT is(pg_temp.res_exp(inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('o1'),
											ttl => '1 hour', expected_version => 2)),
		  'ok=true status=ok sku=A qty=3 state=PENDING available=12 version=2 expires_in=01:00:00',
		  'reserve with enough stock and the current version: ok, PENDING, expires now + ttl');
SELECT pg_temp.quiesce_end() \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=15 reserved=3 available=12 version=3 live=12',
		  'reserve ok: reserved + qty, available - qty, version + 1');
SELECT is(pg_temp.movement('o1'), 'reserve sku=A qty=3 counted=NULL state=PENDING',
		  'reserve ok: a PENDING ledger row');
SELECT is(pg_temp.read1(format('SELECT expires_at - created_at FROM inventory.ledger WHERE order_id = %L', pg_temp.n('o1')))::interval,
		  interval '1 hour', 'reserve ok: the row expires ttl after it was made');

-- available = qty exactly is enough
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('B'), 5, pg_temp.n('ob'))),
		  'ok=true status=ok sku=B qty=5 state=PENDING available=0 version=1',
		  'reserve of exactly the available units: ok');
SELECT is(pg_temp.counters('B'), 'on_hand=5 reserved=5 available=0 version=2 live=0',
		  'reserve of exactly the available units: available 0');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('B'), 1, pg_temp.n('ob2'))),
		  'ok=false status=insufficient sku=B qty=1 state=NULL available=0 version=2',
		  'reserve from a sold-out SKU: insufficient');
SELECT is(pg_temp.counters('B'), 'on_hand=5 reserved=5 available=0 version=2 live=0',
		  'reserve from a sold-out SKU: nothing changes');

-- ttl NULL means inventory.default_ttl
SET inventory.default_ttl = '20min';
SELECT is(pg_temp.res_exp(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('o-ttl'))),
		  'ok=true status=ok sku=A qty=1 state=PENDING available=11 version=3 expires_in=00:20:00',
		  'reserve without ttl: expires after inventory.default_ttl');
RESET inventory.default_ttl;
SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('o-ttl'))),
		  'ok=true status=ok sku=A qty=1 state=CANCELLED available=12 version=4',
		  'cancel of that reservation: ok');
SELECT is(pg_temp.counters('A'), 'on_hand=15 reserved=3 available=12 version=5 live=12',
		  'after reserve and cancel: version + 2, units back');

------------------------------------------------------------------------------
-- reserve: replay and key reuse
------------------------------------------------------------------------------

-- reserve | a reservation of the same SKU and qty, any state | duplicate | t
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('o1'))),
		  'ok=true status=duplicate sku=A qty=3 state=PENDING available=12 version=5',
		  'reserve replayed on a PENDING reservation: duplicate, ok, state PENDING');
SELECT is(pg_temp.counters('A'), 'on_hand=15 reserved=3 available=12 version=5 live=12',
		  'reserve replayed: nothing changes');

-- any | a movement of another kind, SKU or quantity | ERROR 23505 | none
SELECT throws_ok(format('SELECT inventory.reserve(%L, 4, %L)', pg_temp.n('A'), pg_temp.n('o1')),
				 '23505', NULL, 'reserve with a reused key and another qty: 23505');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 3, %L)', pg_temp.n('B'), pg_temp.n('o1')),
				 '23505', NULL, 'reserve with a reused key and another SKU: 23505');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 3, %L)', pg_temp.n('NOPE'), pg_temp.n('o1')),
				 '23505', NULL, 'reserve with a reused key and an unknown SKU: 23505');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 10, %L)', pg_temp.n('A'), pg_temp.n('r1')),
				 '23505', NULL, 'reserve with the key of a restock (same SKU and qty): 23505');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L)', pg_temp.n('B'), pg_temp.n('o1')),
				 '23505', NULL, 'reserve with a reused key, another SKU, sold out: 23505');
SELECT ok(pg_temp.error_detail(format('SELECT inventory.reserve(%L, 4, %L)', pg_temp.n('A'), pg_temp.n('o1')))
		  LIKE '23505: %' || pg_temp.n('A') || '%',
		  'the 23505 detail names the original movement''s SKU');
SELECT ok(pg_temp.error_detail(format('SELECT inventory.reserve(%L, 4, %L)', pg_temp.n('A'), pg_temp.n('o1')))
		  ~ '\m3\M', 'the 23505 detail names the original movement''s quantity');
SELECT is(pg_temp.counters('A'), 'on_hand=15 reserved=3 available=12 version=5 live=12',
		  'after the 23505 errors: nothing changed on the SKU');
SELECT is(pg_temp.counters('B'), 'on_hand=5 reserved=5 available=0 version=2 live=0',
		  'after the 23505 errors: nothing changed on the other SKU');
SELECT is(pg_temp.counters('NOPE'), 'no sku live=NULL',
		  'after the 23505 errors: no SKU was created');
SELECT is(pg_temp.movement('o1'), 'reserve sku=A qty=3 counted=NULL state=PENDING',
		  'after the 23505 errors: the original movement is unchanged');

------------------------------------------------------------------------------
-- confirm
------------------------------------------------------------------------------

-- confirm | none | not_found | f | none
SELECT is(pg_temp.res(inventory.confirm(pg_temp.n('o-none'))),
		  'ok=false status=not_found sku=NULL qty=NULL state=NULL available=NULL version=NULL',
		  'confirm of an unknown key: not_found, not ok');
SELECT is(pg_temp.movement('o-none'), 'none', 'confirm of an unknown key: no ledger row');

-- confirm | PENDING, before expires_at | ok | t | CONFIRMED; on_hand - qty, reserved - qty
SELECT is(pg_temp.res(inventory.confirm(pg_temp.n('o1'))),
		  'ok=true status=ok sku=A qty=3 state=CONFIRMED available=12 version=5',
		  'confirm of a PENDING reservation: ok, CONFIRMED');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=6 live=12',
		  'confirm ok: on_hand - qty, reserved - qty, available unchanged, version + 1');
SELECT is(pg_temp.movement('o1'), 'reserve sku=A qty=3 counted=NULL state=CONFIRMED',
		  'confirm ok: the row is CONFIRMED');

-- confirm | CONFIRMED | duplicate | t | none
SELECT is(pg_temp.res(inventory.confirm(pg_temp.n('o1'))),
		  'ok=true status=duplicate sku=A qty=3 state=CONFIRMED available=12 version=6',
		  'confirm of a CONFIRMED reservation: duplicate, ok');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=6 live=12',
		  'confirm replayed: nothing changes');

-- cancel | CONFIRMED | confirmed | f | none: a sale is not undone
SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('o1'))),
		  'ok=false status=confirmed sku=A qty=3 state=CONFIRMED available=12 version=6',
		  'cancel of a CONFIRMED reservation: confirmed, not ok');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=6 live=12',
		  'cancel of a CONFIRMED reservation: nothing changes');

-- extend | CONFIRMED | confirmed | f | none
SELECT is(pg_temp.res(inventory.extend(pg_temp.n('o1'), 1, '5 hours')),
		  'ok=false status=confirmed sku=A qty=3 state=CONFIRMED available=12 version=6',
		  'extend of a CONFIRMED reservation: confirmed, not ok');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=6 live=12',
		  'extend of a CONFIRMED reservation: nothing changes');
SELECT is(pg_temp.read1(format('SELECT expires_at - created_at FROM inventory.ledger WHERE order_id = %L', pg_temp.n('o1')))::interval,
		  interval '1 hour', 'extend of a CONFIRMED reservation: expires_at unchanged');

-- reserve | ... any state | duplicate: CONFIRMED
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('o1'))),
		  'ok=true status=duplicate sku=A qty=3 state=CONFIRMED available=12 version=6',
		  'reserve replayed on a CONFIRMED reservation: duplicate, ok, state CONFIRMED');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=6 live=12',
		  'reserve replayed on a CONFIRMED reservation: nothing changes');

------------------------------------------------------------------------------
-- cancel
------------------------------------------------------------------------------

SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('o2'))),
		  'ok=true status=ok sku=A qty=2 state=PENDING available=10 version=6',
		  'reserve o2: ok');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=2 available=10 version=7 live=10',
		  'reserve o2: available - 2');

-- cancel | none | not_found | f | none
SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('o-none'))),
		  'ok=false status=not_found sku=NULL qty=NULL state=NULL available=NULL version=NULL',
		  'cancel of an unknown key: not_found, not ok');
SELECT is(pg_temp.movement('o-none'), 'none', 'cancel of an unknown key: no ledger row');

-- cancel | PENDING | ok | t | CANCELLED; units back on sale
SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('o2'))),
		  'ok=true status=ok sku=A qty=2 state=CANCELLED available=12 version=7',
		  'cancel of a PENDING reservation: ok, CANCELLED');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=8 live=12',
		  'cancel ok: the units are back on sale, version + 1');
SELECT is(pg_temp.movement('o2'), 'reserve sku=A qty=2 counted=NULL state=CANCELLED',
		  'cancel ok: the row is CANCELLED');

-- cancel | CANCELLED | duplicate | t | none
SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('o2'))),
		  'ok=true status=duplicate sku=A qty=2 state=CANCELLED available=12 version=8',
		  'cancel of a CANCELLED reservation: duplicate, ok');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=8 live=12',
		  'cancel replayed: nothing changes');

-- confirm | CANCELLED | cancelled | f | none
SELECT is(pg_temp.res(inventory.confirm(pg_temp.n('o2'))),
		  'ok=false status=cancelled sku=A qty=2 state=CANCELLED available=12 version=8',
		  'confirm of a CANCELLED reservation: cancelled, not ok');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=8 live=12',
		  'confirm of a CANCELLED reservation: nothing changes');

-- extend | CANCELLED | cancelled | f | none
SELECT is(pg_temp.res(inventory.extend(pg_temp.n('o2'), 1, '1 hour')),
		  'ok=false status=cancelled sku=A qty=2 state=CANCELLED available=12 version=8',
		  'extend of a CANCELLED reservation: cancelled, not ok');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=8 live=12',
		  'extend of a CANCELLED reservation: nothing changes');

-- reserve | ... any state | duplicate: CANCELLED
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('o2'))),
		  'ok=true status=duplicate sku=A qty=2 state=CANCELLED available=12 version=8',
		  'reserve replayed on a CANCELLED reservation: duplicate, ok, state CANCELLED');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=8 live=12',
		  'reserve replayed on a CANCELLED reservation: nothing changes');

------------------------------------------------------------------------------
-- past expires_at
------------------------------------------------------------------------------

-- an overdue PENDING reservation o3, by the administrator (committed: the
-- calls on it answer the version its insert made)
SELECT pg_temp.overdue('o3', 'A', 2) \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=2 available=10 version=9 live=10',
		  'overdue o3 holds its units until it is settled');

-- confirm | PENDING, at or past expires_at | expired | f | EXPIRED now; units back on sale
SELECT is(pg_temp.res(inventory.confirm(pg_temp.n('o3'))),
		  'ok=false status=expired sku=A qty=2 state=EXPIRED available=12 version=9',
		  'confirm of an overdue PENDING reservation: expired, not ok, state EXPIRED');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=10 live=12',
		  'confirm of an overdue reservation: it is EXPIRED, its units back on sale');
SELECT is(pg_temp.movement('o3'), 'reserve sku=A qty=2 counted=NULL state=EXPIRED',
		  'confirm of an overdue reservation: the row is EXPIRED');

-- confirm | EXPIRED | expired | f | none
SELECT is(pg_temp.res(inventory.confirm(pg_temp.n('o3'))),
		  'ok=false status=expired sku=A qty=2 state=EXPIRED available=12 version=10',
		  'confirm of an EXPIRED reservation: expired, not ok');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=10 live=12',
		  'confirm of an EXPIRED reservation: nothing changes');

-- cancel | EXPIRED | expired | t | none: the units are already back on sale
SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('o3'))),
		  'ok=true status=expired sku=A qty=2 state=EXPIRED available=12 version=10',
		  'cancel of an EXPIRED reservation: expired, ok');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=10 live=12',
		  'cancel of an EXPIRED reservation: nothing changes');

-- extend | EXPIRED | expired | f | none
SELECT is(pg_temp.res(inventory.extend(pg_temp.n('o3'), 1, '1 hour')),
		  'ok=false status=expired sku=A qty=2 state=EXPIRED available=12 version=10',
		  'extend of an EXPIRED reservation: expired, not ok');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=10 live=12',
		  'extend of an EXPIRED reservation: nothing changes');
SELECT is(pg_temp.movement('o3'), 'reserve sku=A qty=2 counted=NULL state=EXPIRED',
		  'the EXPIRED row stays EXPIRED');

-- reserve | ... any state | duplicate: EXPIRED
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('o3'))),
		  'ok=true status=duplicate sku=A qty=2 state=EXPIRED available=12 version=10',
		  'reserve replayed on an EXPIRED reservation: duplicate, ok, state EXPIRED');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=10 live=12',
		  'reserve replayed on an EXPIRED reservation: nothing changes');

-- extend | PENDING, at or past expires_at | expired | f | EXPIRED now
SELECT pg_temp.overdue('o4', 'A', 2) \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=2 available=10 version=11 live=10',
		  'overdue o4 holds its units');
SELECT is(pg_temp.res(inventory.extend(pg_temp.n('o4'), 1, '1 hour')),
		  'ok=false status=expired sku=A qty=2 state=EXPIRED available=12 version=11',
		  'extend of an overdue PENDING reservation: expired, not ok, state EXPIRED');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=12 live=12',
		  'extend of an overdue reservation: it is EXPIRED, its units back on sale');
SELECT is(pg_temp.movement('o4'), 'reserve sku=A qty=2 counted=NULL state=EXPIRED',
		  'extend of an overdue reservation: the row is EXPIRED');

-- cancel | PENDING (even past expires_at) | ok | t | CANCELLED
SELECT pg_temp.overdue('o5', 'A', 2) \g /dev/null
SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('o5'))),
		  'ok=true status=ok sku=A qty=2 state=CANCELLED available=12 version=13',
		  'cancel of an overdue PENDING reservation: ok, CANCELLED');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=14 live=12',
		  'cancel of an overdue reservation: units back on sale');
SELECT is(pg_temp.movement('o5'), 'reserve sku=A qty=2 counted=NULL state=CANCELLED',
		  'cancel of an overdue reservation: the row is CANCELLED');

-- "at or past": a reservation that expires exactly at the call's "now"
SELECT is(pg_temp.res(pg_temp.due_then('confirm', 'o6', 'A', 2, '0')),
		  'ok=false status=expired sku=A qty=2 state=EXPIRED available=12 version=15',
		  'confirm exactly at expires_at: expired, not ok');
SELECT is(pg_temp.movement('o6'), 'reserve sku=A qty=2 counted=NULL state=EXPIRED',
		  'confirm exactly at expires_at: the row is EXPIRED');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=16 live=12',
		  'confirm exactly at expires_at: units back on sale');
SELECT is(pg_temp.res(pg_temp.due_then('extend', 'o7', 'A', 2, '0')),
		  'ok=false status=expired sku=A qty=2 state=EXPIRED available=12 version=17',
		  'extend exactly at expires_at: expired, not ok');
SELECT is(pg_temp.movement('o7'), 'reserve sku=A qty=2 counted=NULL state=EXPIRED',
		  'extend exactly at expires_at: the row is EXPIRED');
SELECT is(pg_temp.counters('A'), 'on_hand=12 reserved=0 available=12 version=18 live=12',
		  'extend exactly at expires_at: units back on sale');
-- and just before it
SELECT is(pg_temp.res(pg_temp.due_then('confirm', 'o8', 'A', 2, '1 millisecond')),
		  'ok=true status=ok sku=A qty=2 state=CONFIRMED available=10 version=19',
		  'confirm one millisecond before expires_at: ok, CONFIRMED');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=0 available=10 version=20 live=10',
		  'confirm before expires_at: the units left on_hand');

------------------------------------------------------------------------------
-- extend
------------------------------------------------------------------------------

SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('o9'), ttl => '1 hour')),
		  'ok=true status=ok sku=A qty=1 state=PENDING available=9 version=20',
		  'reserve o9: ok');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=1 available=9 version=21 live=9',
		  'reserve o9: available - 1');

-- extend | none | not_found | f | none
SELECT is(pg_temp.res(inventory.extend(pg_temp.n('o-none'), 1, '1 hour')),
		  'ok=false status=not_found sku=NULL qty=NULL state=NULL available=NULL version=NULL',
		  'extend of an unknown key: not_found, not ok');

-- extend | PENDING, before expires_at | ok | t | expires_at = now + ttl
SELECT is(pg_temp.res_exp(pg_temp.keep('extend o9', inventory.extend(pg_temp.n('o9'), 1, '2 hours'))),
		  'ok=true status=ok sku=A qty=1 state=PENDING available=9 version=21 expires_in=02:00:00',
		  'extend of a PENDING reservation: ok, PENDING, expires_at = now + ttl');
SELECT is(pg_temp.read1(format('SELECT expires_at FROM inventory.ledger WHERE order_id = %L', pg_temp.n('o9')))::timestamptz,
		  (SELECT (r).expires_at FROM kept WHERE label = 'extend o9'),
		  'extend ok: the row''s expires_at is the one returned');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=1 available=9 version=21 live=9',
		  'extend ok: no counter changes (extending is not a movement)');
SELECT is(pg_temp.movement('o9'), 'reserve sku=A qty=1 counted=NULL state=PENDING',
		  'extend ok: the row stays PENDING');
SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('o9'))),
		  'ok=true status=ok sku=A qty=1 state=CANCELLED available=10 version=21',
		  'cancel o9: ok');

------------------------------------------------------------------------------
-- adjust
------------------------------------------------------------------------------

-- adjust | none; SKU does not exist | unknown_sku | f | none
SELECT is(pg_temp.res(pg_temp.adjust_r('NOPE', 5, 'a-unk')),
		  'ok=false status=unknown_sku sku=NOPE qty=5 state=NULL available=NULL version=NULL',
		  'adjust of an unknown SKU: unknown_sku, not ok');
SELECT is(pg_temp.counters('NOPE'), 'no sku live=NULL', 'adjust of an unknown SKU: the SKU is not created');
SELECT is(pg_temp.movement('a-unk'), 'none', 'adjust of an unknown SKU: no ledger row');

-- adjust | none; expected_version given and stale | version_conflict | f | none
SELECT is(pg_temp.res(pg_temp.adjust_r('A', 12, 'a-vc', 0)),
		  'ok=false status=version_conflict sku=A qty=12 state=NULL available=10 version=22',
		  'adjust with a stale expected_version: version_conflict, not ok');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=0 available=10 version=22 live=10',
		  'adjust with a stale expected_version: nothing changes');
SELECT is(pg_temp.movement('a-vc'), 'none', 'adjust with a stale expected_version: no ledger row');

SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 5, pg_temp.n('o10'))),
		  'ok=true status=ok sku=A qty=5 state=PENDING available=5 version=22',
		  'reserve o10: ok');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=5 available=5 version=23 live=5',
		  'reserve o10: 5 units reserved');

-- adjust | none; the count is below what is reserved and held | insufficient | f | none
SELECT is(pg_temp.res(pg_temp.adjust_r('A', 4, 'a-ins')),
		  'ok=false status=insufficient sku=A qty=4 state=NULL available=5 version=23',
		  'adjust to a count below the reserved units: insufficient, not ok');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=5 available=5 version=23 live=5',
		  'adjust to a count below the reserved units: nothing changes');
SELECT is(pg_temp.movement('a-ins'), 'none', 'adjust refused: no ledger row');

-- adjust | none | ok | t | on_hand = the count (down to exactly the reserved units)
SELECT pg_temp.quiesce('A') \g /dev/null
SELECT is(pg_temp.res(pg_temp.adjust_r('A', 5, 'a1', 23)),
		  'ok=true status=ok sku=A qty=5 state=NULL available=0 version=23',
		  'adjust down to the reserved units, current version: ok');
SELECT pg_temp.quiesce_end() \g /dev/null
SELECT is(pg_temp.counters('A'), 'on_hand=5 reserved=5 available=0 version=24 live=0',
		  'adjust ok: on_hand = the count, version + 1');
SELECT is(pg_temp.movement('a1'), 'adjust sku=A qty=-5 counted=5 state=NULL',
		  'adjust ok: the ledger records the change and the count');

-- adjust | a stocktake of the same SKU to the same count | duplicate | t | none
SELECT is(pg_temp.res(pg_temp.adjust_r('A', 5, 'a1')),
		  'ok=true status=duplicate sku=A qty=5 state=NULL available=0 version=24',
		  'adjust replayed: duplicate, ok');
SELECT is(pg_temp.counters('A'), 'on_hand=5 reserved=5 available=0 version=24 live=0',
		  'adjust replayed: nothing changes');

-- adjust up
SELECT is(pg_temp.res(pg_temp.adjust_r('A', 9, 'a2')),
		  'ok=true status=ok sku=A qty=9 state=NULL available=4 version=24',
		  'adjust up: ok');
SELECT is(pg_temp.counters('A'), 'on_hand=9 reserved=5 available=4 version=25 live=4',
		  'adjust up: on_hand = the count');
SELECT is(pg_temp.movement('a2'), 'adjust sku=A qty=4 counted=9 state=NULL',
		  'adjust up: the ledger records +4');

------------------------------------------------------------------------------
-- key reuse across kinds: ERROR 23505, nothing changes
------------------------------------------------------------------------------

SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 6, %L)', pg_temp.n('A'), pg_temp.n('a1'))),
				 '23505', NULL, 'adjust with a reused key and another count: 23505');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 5, %L)', pg_temp.n('B'), pg_temp.n('a1'))),
				 '23505', NULL, 'adjust with a reused key and another SKU: 23505');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 3, %L)', pg_temp.n('A'), pg_temp.n('o1'))),
				 '23505', NULL, 'adjust with the key of a reservation: 23505');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 10, %L)', pg_temp.n('A'), pg_temp.n('r1'))),
				 '23505', NULL, 'adjust with the key of a restock: 23505');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 5, %L)', pg_temp.n('A'), pg_temp.n('a1')),
				 '23505', NULL, 'reserve with the key of a stocktake: 23505');
SELECT throws_ok(format('SELECT inventory.confirm(%L)', pg_temp.n('a1')),
				 '23505', NULL, 'confirm of the key of a stocktake: 23505');
SELECT throws_ok(format('SELECT inventory.cancel(%L)', pg_temp.n('a1')),
				 '23505', NULL, 'cancel of the key of a stocktake: 23505');
SELECT throws_ok(format('SELECT inventory.extend(%L, 1, ''1 hour'')', pg_temp.n('a1')),
				 '23505', NULL, 'extend of the key of a stocktake: 23505');
SELECT throws_ok(format('SELECT inventory.confirm(%L)', pg_temp.n('r1')),
				 '23505', NULL, 'confirm of the key of a restock: 23505');
SELECT throws_ok(format('SELECT inventory.cancel(%L)', pg_temp.n('r1')),
				 '23505', NULL, 'cancel of the key of a restock: 23505');
SELECT throws_ok(format('SELECT inventory.extend(%L, 1, ''1 hour'')', pg_temp.n('r1')),
				 '23505', NULL, 'extend of the key of a restock: 23505');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 6, %L)', pg_temp.n('A'), pg_temp.n('r2'))),
				 '23505', NULL, 'restock with a reused key and another qty: 23505');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 5, %L)', pg_temp.n('B'), pg_temp.n('r2'))),
				 '23505', NULL, 'restock with a reused key and another SKU: 23505');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 5, %L)', pg_temp.n('NEW'), pg_temp.n('r2'))),
				 '23505', NULL, 'restock with a reused key and a new SKU: 23505');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 3, %L)', pg_temp.n('A'), pg_temp.n('o1'))),
				 '23505', NULL, 'restock with the key of a reservation: 23505');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 5, %L)', pg_temp.n('A'), pg_temp.n('a1'))),
				 '23505', NULL, 'restock with the key of a stocktake: 23505');
SELECT ok(pg_temp.error_detail(pg_temp.by_admin(format('SELECT inventory.restock(%L, 6, %L)', pg_temp.n('A'), pg_temp.n('r2'))))
		  LIKE '23505: %' || pg_temp.n('A') || '%',
		  'the 23505 detail of a restock names the original SKU');
SELECT ok(pg_temp.error_detail(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 6, %L)', pg_temp.n('A'), pg_temp.n('a1'))))
		  LIKE '23505: %' || pg_temp.n('A') || '%'
		  AND pg_temp.error_detail(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 6, %L)', pg_temp.n('A'), pg_temp.n('a1'))))
		  ~ '\m5\M',
		  'the 23505 detail of a stocktake names the original SKU and count');
SELECT is(pg_temp.counters('A'), 'on_hand=9 reserved=5 available=4 version=25 live=4',
		  'after the 23505 errors: nothing changed on the SKU');
SELECT is(pg_temp.counters('B'), 'on_hand=5 reserved=5 available=0 version=2 live=0',
		  'after the 23505 errors: nothing changed on the other SKU');
SELECT is(pg_temp.counters('NEW'), 'no sku live=NULL',
		  'after the 23505 errors: the restock with a reused key created no SKU');
SELECT is(pg_temp.movement('a1'), 'adjust sku=A qty=-5 counted=5 state=NULL',
		  'after the 23505 errors: the stocktake is unchanged');
SELECT is(pg_temp.movement('r2'), 'restock sku=A qty=5 counted=NULL state=NULL',
		  'after the 23505 errors: the restock is unchanged');

------------------------------------------------------------------------------
-- withdraw, on a SKU of its own: 6 units, 2 of them reserved
------------------------------------------------------------------------------

SELECT pg_temp.restock('W', 6, 'rW') \g /dev/null
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('W'), 2, pg_temp.n('oW'))) \g /dev/null

-- withdraw | none; SKU does not exist | unknown_sku | f | none
SELECT is(pg_temp.res(pg_temp.withdraw_r('NOPE', 1, 'w-unk')),
		  'ok=false status=unknown_sku sku=NOPE qty=1 state=NULL available=NULL version=NULL',
		  'withdraw from an unknown SKU: unknown_sku, not ok');
SELECT is(pg_temp.movement('w-unk'), 'none', 'withdraw from an unknown SKU: no ledger row');

-- withdraw | none; fewer than qty units available | insufficient | f | none
SELECT is(pg_temp.res(pg_temp.withdraw_r('W', 5, 'w-ins')),
		  'ok=false status=insufficient sku=W qty=5 state=NULL available=4 version=2',
		  'withdraw of more than is available: insufficient, not ok');
SELECT is(pg_temp.counters('W'), 'on_hand=6 reserved=2 available=4 version=2 live=4',
		  'withdraw refused: nothing changes');
SELECT is(pg_temp.movement('w-ins'), 'none', 'withdraw refused: no ledger row');

-- withdraw | none | ok | t | on_hand - qty (all that is available)
SELECT is(pg_temp.res(pg_temp.withdraw_r('W', 4, 'w1')),
		  'ok=true status=ok sku=W qty=4 state=NULL available=0 version=2',
		  'withdraw of what is available: ok');
SELECT is(pg_temp.counters('W'), 'on_hand=2 reserved=2 available=0 version=3 live=0',
		  'withdraw ok: on_hand - qty, version + 1, the reservation untouched');
SELECT is(pg_temp.movement('w1'), 'withdraw sku=W qty=4 counted=NULL state=NULL',
		  'withdraw ok: its ledger row');

-- withdraw | a withdrawal of the same SKU and qty | duplicate | t | none
SELECT is(pg_temp.res(pg_temp.withdraw_r('W', 4, 'w1')),
		  'ok=true status=duplicate sku=W qty=4 state=NULL available=0 version=3',
		  'withdraw replayed: duplicate, ok');
SELECT is(pg_temp.counters('W'), 'on_hand=2 reserved=2 available=0 version=3 live=0',
		  'withdraw replayed: nothing changes');

-- any | a movement of another kind, SKU or quantity | ERROR 23505
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.withdraw(%L, 3, %L)', pg_temp.n('W'), pg_temp.n('w1'))),
				 '23505', NULL, 'withdraw with a reused key and another qty: 23505');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.withdraw(%L, 4, %L)', pg_temp.n('W'), pg_temp.n('rW'))),
				 '23505', NULL, 'withdraw with the key of a restock: 23505');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 4, %L)', pg_temp.n('W'), pg_temp.n('w1'))),
				 '23505', NULL, 'restock with the key of a withdrawal: 23505');
SELECT ok(pg_temp.error_detail(format('SELECT inventory.reserve(%L, 4, %L)', pg_temp.n('W'), pg_temp.n('w1')))
		  LIKE '23505: The key belongs to a withdrawal of 4 units of sku "' || pg_temp.n('W') || '".',
		  'the 23505 detail names the withdrawal');

------------------------------------------------------------------------------
-- withdraw | "no sale window or buyer limit applies" (docs/api.md): WW not
-- on sale, then off sale; WL with a limit of 2 per buyer, and a buyer at
-- it.  Stock still applies.
------------------------------------------------------------------------------

SELECT pg_temp.restock('WW', 4, 'rWW'), pg_temp.restock('WL', 6, 'rWL') \g /dev/null
SELECT pg_temp.set_rules('WW', NULL, now() + interval '1 day'), pg_temp.set_rules('WL', 2) \g /dev/null
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('WW'), 1, pg_temp.n('oWW'))),
		  'ok=false status=not_on_sale sku=WW qty=1 state=NULL', 'WW is not on sale: a reserve is refused');
SELECT is(pg_temp.res(pg_temp.withdraw_r('WW', 2, 'w-early')),
		  'ok=true status=ok sku=WW qty=2 state=NULL available=2 version=1',
		  'withdraw before the sale window: ok, no window applies');
SELECT is(pg_temp.res(pg_temp.withdraw_r('WW', 3, 'w-early2')),
		  'ok=false status=insufficient sku=WW qty=3 state=NULL available=2 version=2',
		  'withdraw of more than is available outside the window: insufficient, not not_on_sale');
SELECT pg_temp.set_rules('WW', NULL, NULL, now() - interval '1 second') \g /dev/null
SELECT is(pg_temp.res(pg_temp.withdraw_r('WW', 1, 'w-late')),
		  'ok=true status=ok sku=WW qty=1 state=NULL available=1 version=2',
		  'withdraw after the sale window: ok');
SELECT is(pg_temp.counters('WW'), 'on_hand=1 reserved=0 available=1 version=3 live=1',
		  'WW: the withdrawals left on_hand');
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('WL'), 2, pg_temp.n('oWL'), buyer_id => 'ann')) \g /dev/null
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('WL'), 1, pg_temp.n('oWL2'), buyer_id => 'ann')),
		  'ok=false status=limit_exceeded sku=WL qty=1 state=NULL', 'WL: ann is at her limit of 2');
SELECT is(pg_temp.res(pg_temp.withdraw_r('WL', 3, 'w-limit')),
		  'ok=true status=ok sku=WL qty=3 state=NULL available=1 version=2',
		  'withdraw of more than the limit per buyer, with a buyer at it: ok, no limit applies');
SELECT is(pg_temp.counters('WL'), 'on_hand=3 reserved=2 available=1 version=3 live=1',
		  'WL: the withdrawal left on_hand, ann''s reservation untouched');
SELECT is(pg_temp.movement('w-limit'), 'withdraw sku=WL qty=3 counted=NULL state=NULL',
		  'the withdrawal is a movement of its own, of no buyer');
SELECT is(pg_temp.read1(format('SELECT coalesce(buyer_id, ''NULL'') FROM inventory.ledger WHERE order_id = %L', pg_temp.n('w-limit'))),
		  'NULL', '... with no buyer_id');

SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('oW'))),
		  'ok=true status=ok sku=W qty=2 state=CANCELLED available=2 version=3',
		  'cancel oW: ok');
SELECT is(pg_temp.counters('W'), 'on_hand=2 reserved=0 available=2 version=4 live=2',
		  'final counters of W');

------------------------------------------------------------------------------
-- settle what is left, and check the cache against the tables
------------------------------------------------------------------------------

SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('o10'))),
		  'ok=true status=ok sku=A qty=5 state=CANCELLED available=9 version=25',
		  'cancel o10: ok');
SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('ob'))),
		  'ok=true status=ok sku=B qty=5 state=CANCELLED available=5 version=2',
		  'cancel ob: ok');
SELECT is(pg_temp.counters('A'), 'on_hand=9 reserved=0 available=9 version=26 live=9',
		  'final counters of A');
SELECT is(pg_temp.counters('B'), 'on_hand=5 reserved=0 available=5 version=3 live=5',
		  'final counters of B');
-- and oWL, and check the cache against the tables
\ir lib/settle.sql

SELECT * FROM finish();

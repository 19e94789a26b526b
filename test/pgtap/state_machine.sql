-- state_machine.sql: invariant I4 -- a reservation leaves PENDING once, for
-- a final state, and nothing leaves a final state: not through the
-- functions, not through direct DML (UPDATE, INSERT, DELETE, TRUNCATE, COPY
-- of some columns), not under session_replication_role = replica.  Rule
-- breaks fail with 23514, refused DELETE/TRUNCATE with 23001 (TRUNCATE of
-- inventory.sku with 0A000, from the ledger's foreign key), an unknown SKU
-- with 23503;  (A COPY of whole rows by the owner is a restore: restore.sql.)
-- every legal write works and counts.  Also inventory.can_transition for
-- all 16 pairs, inventory.is_final, and the state type itself.
--
-- This session is the administrator's (shop_admin), which writes the
-- tables by hand.  The application (shop_app) makes the reservations and
-- calls the functions, through its connection; what only a superuser can
-- do -- TRUNCATE, which the administrator may not (it does not own the
-- tables: privileges.sql), and writes under session_replication_role =
-- replica, a superuser's setting -- is the superuser's, through its
-- connection.
--
-- The SKUs and the application's reservations are committed; the
-- administrator's direct DML runs in one transaction that is rolled back;
-- the superuser's writes under the replica role come after it, on
-- committed rows.  The background worker (off in the test cluster) would
-- fold the committed restocks at any moment: the TRUNCATEs run first,
-- before any transaction holds a lock the worker could wait for, the
-- transaction takes no lasting lock on a row of inventory.sku, and the
-- DELETEs of movements aim at rows the worker cannot see yet.  What the
-- run leaves PENDING is cancelled at the end.

\set name state_machine
\set role shop_admin
\ir lib/setup.sql

-- the application calls confirm, cancel or extend on a key; returns the
-- status and the state of the row afterwards, and says whether expires_at
-- moved
CREATE FUNCTION pg_temp.try(op text, o text) RETURNS text LANGUAGE plpgsql
AS $$
DECLARE
	r inventory.result;
	before timestamptz;
	after timestamptz;
BEGIN
	SELECT expires_at INTO before FROM inventory.ledger WHERE order_id = pg_temp.n(o);
	IF op = 'confirm' THEN
		r := pg_temp.app_r(format('inventory.confirm(%L)', pg_temp.n(o)));
	ELSIF op = 'cancel' THEN
		r := pg_temp.app_r(format('inventory.cancel(%L)', pg_temp.n(o)));
	ELSE
		r := pg_temp.app_r(format('inventory.extend(%L, 1, ''1 hour'')', pg_temp.n(o)));
	END IF;
	SELECT expires_at INTO after FROM inventory.ledger WHERE order_id = pg_temp.n(o);
	RETURN format('%s -> %s, row %s%s', op, r.status, pg_temp.state_of(o),
				  CASE WHEN after IS DISTINCT FROM before THEN ', expires_at moved' ELSE '' END);
END $$;

-- an UPDATE of one ledger row, as SQL
CREATE FUNCTION pg_temp.upd(o text, set_clause text) RETURNS text LANGUAGE sql STABLE
AS $$ SELECT format('UPDATE inventory.ledger SET %s WHERE order_id = %L AND batch_id = 1', set_clause, pg_temp.n(o)) $$;

-- the statement that runs sql as the superuser, for throws_ok()
CREATE FUNCTION pg_temp.by_super(sql text) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT format('SELECT pg_temp.as_super(%L)', sql) $$;

-- committed SKUs: A with 100 units, B with 10, D with 5
DO $$
BEGIN
	PERFORM pg_temp.expect(inventory.restock(pg_temp.n('A'), 100, pg_temp.n('rA')));
	PERFORM pg_temp.expect(inventory.restock(pg_temp.n('B'), 10, pg_temp.n('rB')));
	PERFORM pg_temp.expect(inventory.restock(pg_temp.n('D'), 5, pg_temp.n('rD')));
END $$;

SELECT plan(156);

------------------------------------------------------------------------------
-- TRUNCATE, by the superuser (the tables' owner), is refused (first: see
-- above)
------------------------------------------------------------------------------

-- a TRUNCATE queues for an exclusive lock: fail rather than hang if a
-- session the suite does not control keeps a transaction open
SELECT pg_temp.as_super('SET lock_timeout = ''30s''') \g /dev/null
SELECT throws_ok(pg_temp.by_super('TRUNCATE inventory.ledger'), '23001', NULL, 'TRUNCATE inventory.ledger: 23001');
-- the ledger's foreign key refuses a TRUNCATE of inventory.sku before the
-- trigger sees it; with CASCADE, the ledger's trigger refuses
SELECT throws_ok(pg_temp.by_super('TRUNCATE inventory.sku'), '0A000', NULL, 'TRUNCATE inventory.sku: 0A000 (the foreign key)');
SELECT throws_ok(pg_temp.by_super('TRUNCATE inventory.sku CASCADE'), '23001', NULL, 'TRUNCATE inventory.sku CASCADE: 23001');
SELECT pg_temp.as_super('SET session_replication_role = replica') \g /dev/null
SELECT throws_ok(pg_temp.by_super('TRUNCATE inventory.ledger'), '23001', NULL, 'replica role: TRUNCATE inventory.ledger: 23001');
SELECT throws_ok(pg_temp.by_super('TRUNCATE inventory.sku'), '0A000', NULL, 'replica role: TRUNCATE inventory.sku: 0A000');
SELECT throws_ok(pg_temp.by_super('TRUNCATE inventory.sku CASCADE'), '23001', NULL, 'replica role: TRUNCATE inventory.sku CASCADE: 23001');
SELECT pg_temp.as_super('RESET session_replication_role') \g /dev/null
SELECT pg_temp.as_super('RESET lock_timeout') \g /dev/null
SELECT is((SELECT count(*) FROM inventory.ledger WHERE order_id IN (pg_temp.n('rA'), pg_temp.n('rB'), pg_temp.n('rD'))),
		  3::bigint, 'the refused TRUNCATEs left the ledger in place');

------------------------------------------------------------------------------
-- inventory.can_transition: all 16 pairs; inventory.is_final
------------------------------------------------------------------------------

SELECT is(inventory.can_transition('PENDING', 'PENDING'), false, 'can_transition(PENDING, PENDING) is false');
SELECT is(inventory.can_transition('PENDING', 'CONFIRMED'), true, 'can_transition(PENDING, CONFIRMED) is true');
SELECT is(inventory.can_transition('PENDING', 'CANCELLED'), true, 'can_transition(PENDING, CANCELLED) is true');
SELECT is(inventory.can_transition('PENDING', 'EXPIRED'), true, 'can_transition(PENDING, EXPIRED) is true');
SELECT is(inventory.can_transition('CONFIRMED', 'PENDING'), false, 'can_transition(CONFIRMED, PENDING) is false');
SELECT is(inventory.can_transition('CONFIRMED', 'CONFIRMED'), false, 'can_transition(CONFIRMED, CONFIRMED) is false');
SELECT is(inventory.can_transition('CONFIRMED', 'CANCELLED'), false, 'can_transition(CONFIRMED, CANCELLED) is false');
SELECT is(inventory.can_transition('CONFIRMED', 'EXPIRED'), false, 'can_transition(CONFIRMED, EXPIRED) is false');
SELECT is(inventory.can_transition('CANCELLED', 'PENDING'), false, 'can_transition(CANCELLED, PENDING) is false');
SELECT is(inventory.can_transition('CANCELLED', 'CONFIRMED'), false, 'can_transition(CANCELLED, CONFIRMED) is false');
SELECT is(inventory.can_transition('CANCELLED', 'CANCELLED'), false, 'can_transition(CANCELLED, CANCELLED) is false');
SELECT is(inventory.can_transition('CANCELLED', 'EXPIRED'), false, 'can_transition(CANCELLED, EXPIRED) is false');
SELECT is(inventory.can_transition('EXPIRED', 'PENDING'), false, 'can_transition(EXPIRED, PENDING) is false');
SELECT is(inventory.can_transition('EXPIRED', 'CONFIRMED'), false, 'can_transition(EXPIRED, CONFIRMED) is false');
SELECT is(inventory.can_transition('EXPIRED', 'CANCELLED'), false, 'can_transition(EXPIRED, CANCELLED) is false');
SELECT is(inventory.can_transition('EXPIRED', 'EXPIRED'), false, 'can_transition(EXPIRED, EXPIRED) is false');
SELECT is(inventory.can_transition(NULL, 'CONFIRMED'), NULL, 'can_transition(NULL, ...) is NULL');
SELECT is(inventory.can_transition('PENDING', NULL), NULL, 'can_transition(..., NULL) is NULL');

SELECT is(inventory.is_final('PENDING'), false, 'PENDING is not final');
SELECT is(inventory.is_final('CONFIRMED'), true, 'CONFIRMED is final');
SELECT is(inventory.is_final('CANCELLED'), true, 'CANCELLED is final');
SELECT is(inventory.is_final('EXPIRED'), true, 'EXPIRED is final');
SELECT is(inventory.is_final(NULL), NULL, 'is_final(NULL) is NULL');

------------------------------------------------------------------------------
-- the state type
------------------------------------------------------------------------------

SELECT is(' expired '::inventory.state::text, 'EXPIRED', 'input ignores surrounding white space and case; output is upper case');
SELECT is(E'\tPending\n'::inventory.state::text, 'PENDING', 'input ignores tabs and newlines around the name');
SELECT is('cAnCeLlEd'::inventory.state::text, 'CANCELLED', 'input is case-insensitive');
SELECT is((SELECT array_agg(s::text ORDER BY s)
			 FROM unnest('{expired,cancelled,pending,confirmed}'::inventory.state[]) s),
		  '{PENDING,CONFIRMED,CANCELLED,EXPIRED}'::text[], 'states sort in lifecycle order');
SELECT is((SELECT count(DISTINCT s)
			 FROM unnest('{pending,PENDING, Pending ,expired}'::inventory.state[]) s),
		  2::bigint, 'states group by value');
SELECT is(inventory.state_send('confirmed'), convert_to('CONFIRMED', 'UTF8'),
		  'the binary format is the name');

------------------------------------------------------------------------------
-- reservations in every state, made through the functions by the
-- application (committed), and overdue ones by hand
------------------------------------------------------------------------------

SELECT pg_temp.expect(pg_temp.app_r(format('inventory.reserve(%L, 1, %L, ttl => ''1 hour'')', pg_temp.n('A'), pg_temp.n(o))))
  FROM unnest('{p1,p2,p3,p4,c1,x1}'::text[]) o \g /dev/null
SELECT pg_temp.expect(pg_temp.app_r(format('inventory.reserve(%L, 1, %L, ttl => ''1 hour'')', pg_temp.n('B'), pg_temp.n('rr')))) \g /dev/null
SELECT pg_temp.expect(pg_temp.app_r(format('inventory.confirm(%L)', pg_temp.n('c1')))),
	   pg_temp.expect(pg_temp.app_r(format('inventory.cancel(%L)', pg_temp.n('x1')))) \g /dev/null
SELECT pg_temp.overdue('e1', 'A', 1) \g /dev/null
SELECT is((pg_temp.app_r(format('inventory.confirm(%L)', pg_temp.n('e1')))).status, 'expired', 'confirm of overdue e1 expires it');
SELECT pg_temp.overdue('o1', 'A', 1), pg_temp.overdue('o2', 'A', 1) \g /dev/null
SELECT is(pg_temp.state_of('p1') || ' ' || pg_temp.state_of('c1') || ' ' || pg_temp.state_of('x1') || ' ' ||
		  pg_temp.state_of('e1') || ' ' || pg_temp.state_of('o1'),
		  'PENDING CONFIRMED CANCELLED EXPIRED PENDING', 'one reservation in each state');
SELECT is(pg_temp.stock('A'), 'on_hand=99 reserved=6 available=93 version=13',
		  'counters with 6 PENDING units, 1 CONFIRMED');

------------------------------------------------------------------------------
-- through the functions, nothing leaves a final state
------------------------------------------------------------------------------

SELECT is(pg_temp.try('confirm', 'c1'), 'confirm -> duplicate, row CONFIRMED', 'confirm of CONFIRMED: stays CONFIRMED');
SELECT is(pg_temp.try('cancel', 'c1'), 'cancel -> confirmed, row CONFIRMED', 'cancel of CONFIRMED: stays CONFIRMED');
SELECT is(pg_temp.try('extend', 'c1'), 'extend -> confirmed, row CONFIRMED', 'extend of CONFIRMED: stays CONFIRMED, expiry kept');
SELECT is(pg_temp.try('confirm', 'x1'), 'confirm -> cancelled, row CANCELLED', 'confirm of CANCELLED: stays CANCELLED');
SELECT is(pg_temp.try('cancel', 'x1'), 'cancel -> duplicate, row CANCELLED', 'cancel of CANCELLED: stays CANCELLED');
SELECT is(pg_temp.try('extend', 'x1'), 'extend -> cancelled, row CANCELLED', 'extend of CANCELLED: stays CANCELLED, expiry kept');
SELECT is(pg_temp.try('confirm', 'e1'), 'confirm -> expired, row EXPIRED', 'confirm of EXPIRED: stays EXPIRED');
SELECT is(pg_temp.try('cancel', 'e1'), 'cancel -> expired, row EXPIRED', 'cancel of EXPIRED: stays EXPIRED');
SELECT is(pg_temp.try('extend', 'e1'), 'extend -> expired, row EXPIRED', 'extend of EXPIRED: stays EXPIRED, expiry kept');
SELECT is(pg_temp.stock('A'), 'on_hand=99 reserved=6 available=93 version=13',
		  'calls on final reservations change no counter');

-- the administrator's direct DML, in a transaction rolled back at the end
BEGIN;

------------------------------------------------------------------------------
-- direct UPDATE: every illegal transition fails with 23514
------------------------------------------------------------------------------

SELECT throws_ok(pg_temp.upd('c1', $$state = 'PENDING'$$), '23514', NULL, 'UPDATE CONFIRMED -> PENDING: 23514');
SELECT throws_ok(pg_temp.upd('c1', $$state = 'CANCELLED'$$), '23514', NULL, 'UPDATE CONFIRMED -> CANCELLED: 23514');
SELECT throws_ok(pg_temp.upd('c1', $$state = 'EXPIRED'$$), '23514', NULL, 'UPDATE CONFIRMED -> EXPIRED: 23514');
SELECT throws_ok(pg_temp.upd('x1', $$state = 'PENDING'$$), '23514', NULL, 'UPDATE CANCELLED -> PENDING: 23514');
SELECT throws_ok(pg_temp.upd('x1', $$state = 'CONFIRMED'$$), '23514', NULL, 'UPDATE CANCELLED -> CONFIRMED: 23514');
SELECT throws_ok(pg_temp.upd('x1', $$state = 'EXPIRED'$$), '23514', NULL, 'UPDATE CANCELLED -> EXPIRED: 23514');
SELECT throws_ok(pg_temp.upd('e1', $$state = 'PENDING'$$), '23514', NULL, 'UPDATE EXPIRED -> PENDING: 23514');
SELECT throws_ok(pg_temp.upd('e1', $$state = 'CONFIRMED'$$), '23514', NULL, 'UPDATE EXPIRED -> CONFIRMED: 23514');
SELECT throws_ok(pg_temp.upd('e1', $$state = 'CANCELLED'$$), '23514', NULL, 'UPDATE EXPIRED -> CANCELLED: 23514');
-- PENDING -> CONFIRMED only before expires_at, -> EXPIRED only after it
SELECT throws_ok(pg_temp.upd('o2', $$state = 'CONFIRMED'$$), '23514', NULL, 'UPDATE overdue PENDING -> CONFIRMED: 23514');
SELECT throws_ok(pg_temp.upd('p4', $$state = 'EXPIRED'$$), '23514', NULL, 'UPDATE PENDING -> EXPIRED before expires_at: 23514');
-- expires_at changes only while PENDING
SELECT throws_ok(pg_temp.upd('c1', $$expires_at = expires_at + interval '1 day'$$), '23514', NULL, 'UPDATE expires_at of CONFIRMED: 23514');
SELECT throws_ok(pg_temp.upd('x1', $$expires_at = expires_at + interval '1 day'$$), '23514', NULL, 'UPDATE expires_at of CANCELLED: 23514');
SELECT throws_ok(pg_temp.upd('e1', $$expires_at = expires_at + interval '1 day'$$), '23514', NULL, 'UPDATE expires_at of EXPIRED: 23514');
-- the columns that never change
SELECT throws_ok(pg_temp.upd('p4', format('order_id = %L', pg_temp.n('p4-renamed'))), '23514', NULL, 'UPDATE order_id: 23514');
SELECT throws_ok(pg_temp.upd('p4', 'batch_id = 2'), '23514', NULL, 'UPDATE batch_id: 23514');
SELECT throws_ok(pg_temp.upd('p4', $$kind = 'restock'$$), '23514', NULL, 'UPDATE kind: 23514');
SELECT throws_ok(pg_temp.upd('p4', format('sku = %L', pg_temp.n('B'))), '23514', NULL, 'UPDATE sku: 23514');
SELECT throws_ok(pg_temp.upd('p4', 'qty = 2'), '23514', NULL, 'UPDATE qty of a reservation: 23514');
SELECT throws_ok(pg_temp.upd('p4', $$created_at = created_at - interval '1 day'$$), '23514', NULL, 'UPDATE created_at: 23514');
SELECT throws_ok(pg_temp.upd('c1', $$settled_at = settled_at - interval '1 day'$$), '23514', NULL, 'UPDATE settled_at by hand: 23514');
SELECT throws_ok(pg_temp.upd('rA', 'qty = 1000'), '23514', NULL, 'UPDATE qty of a restock: 23514');
SELECT throws_ok(pg_temp.upd('rA', $$state = 'PENDING'$$), '23514', NULL, 'UPDATE state of a restock: 23514');
-- a stocktake aB, inserted by hand
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, counted) VALUES (pg_temp.n('aB'), 1, 'adjust', pg_temp.n('B'), 1, 11);
SELECT throws_ok(pg_temp.upd('aB', 'counted = 9'), '23514', NULL, 'UPDATE counted of a stocktake: 23514');
SELECT throws_ok(pg_temp.upd('aB', 'qty = 2'), '23514', NULL, 'UPDATE qty of a stocktake: 23514');
SELECT is(pg_temp.state_of('c1') || ' ' || pg_temp.state_of('x1') || ' ' || pg_temp.state_of('e1') || ' ' ||
		  pg_temp.state_of('o2') || ' ' || pg_temp.state_of('p4'),
		  'CONFIRMED CANCELLED EXPIRED PENDING PENDING', 'after the refused updates every row keeps its state');
SELECT is(pg_temp.stock('A'), 'on_hand=99 reserved=6 available=93 version=13',
		  'after the refused updates no counter changed');

------------------------------------------------------------------------------
-- direct UPDATE: every legal transition works and counts
------------------------------------------------------------------------------

SELECT lives_ok(pg_temp.upd('p1', $$state = 'CONFIRMED'$$), 'UPDATE PENDING -> CONFIRMED before expires_at works');
SELECT is(pg_temp.state_of('p1'), 'CONFIRMED', 'p1 is CONFIRMED');
SELECT is(pg_temp.stock('A'), 'on_hand=98 reserved=5 available=93 version=14',
		  'the direct confirm took the unit off on_hand and reserved');
SELECT lives_ok(pg_temp.upd('p2', $$state = 'cancelled'$$), 'UPDATE PENDING -> CANCELLED works');
SELECT is(pg_temp.state_of('p2'), 'CANCELLED', 'p2 is CANCELLED');
SELECT is(pg_temp.stock('A'), 'on_hand=98 reserved=4 available=94 version=15',
		  'the direct cancel put the unit back');
SELECT lives_ok(pg_temp.upd('o1', $$state = 'EXPIRED'$$), 'UPDATE overdue PENDING -> EXPIRED works');
SELECT is(pg_temp.state_of('o1'), 'EXPIRED', 'o1 is EXPIRED');
SELECT is(pg_temp.stock('A'), 'on_hand=98 reserved=3 available=95 version=16',
		  'the direct expiry put the unit back');
-- settled_at is stamped by the trigger, whatever the UPDATE says
WITH u AS (
	UPDATE inventory.ledger SET state = 'CANCELLED', settled_at = '2000-01-01'
	 WHERE order_id = pg_temp.n('p3') AND batch_id = 1
	RETURNING settled_at
)
SELECT is(settled_at, statement_timestamp(), 'settled_at is stamped with the statement''s now') FROM u;
SELECT is((SELECT settled_at FROM inventory.ledger WHERE order_id = pg_temp.n('p4')), NULL,
		  'a PENDING reservation has no settled_at');
-- expires_at of a PENDING reservation may move, even into the past
SELECT lives_ok(pg_temp.upd('p4', $$expires_at = now() + interval '3 hours'$$), 'UPDATE expires_at of PENDING works');
SELECT is((SELECT expires_at - now() FROM inventory.ledger WHERE order_id = pg_temp.n('p4')),
		  interval '3 hours', 'p4 expires_at moved');
SELECT lives_ok(pg_temp.upd('p4', $$expires_at = now() - interval '1 second'$$), 'UPDATE expires_at of PENDING into the past works');
SELECT lives_ok(pg_temp.upd('p4', $$state = 'EXPIRED'$$), 'and then PENDING -> EXPIRED works');
SELECT is(pg_temp.stock('A'), 'on_hand=98 reserved=1 available=97 version=18',
		  'counters after the legal updates');
-- a no-op update of a final row is not a transition
SELECT lives_ok(pg_temp.upd('c1', 'state = state'), 'UPDATE of a CONFIRMED row to the same state changes nothing and works');
SELECT is(pg_temp.stock('A'), 'on_hand=98 reserved=1 available=97 version=18', 'and counts nothing');

------------------------------------------------------------------------------
-- direct INSERT
------------------------------------------------------------------------------

SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, state, expires_at)
						  VALUES (%L, 1, 'reserve', %L, 1, 'CONFIRMED', now() + interval '1 hour')$$,
						pg_temp.n('i1'), pg_temp.n('A')),
				 '23514', NULL, 'INSERT of a CONFIRMED reservation: 23514');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, state)
						  VALUES (%L, 1, 'reserve', %L, 1, 'CANCELLED')$$, pg_temp.n('i1'), pg_temp.n('A')),
				 '23514', NULL, 'INSERT of a CANCELLED reservation: 23514');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, state, expires_at)
						  VALUES (%L, 1, 'reserve', %L, 1, 'EXPIRED', now() - interval '1 hour')$$,
						pg_temp.n('i1'), pg_temp.n('A')),
				 '23514', NULL, 'INSERT of an EXPIRED reservation (even overdue): 23514');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						  VALUES (%L, 1, 'reserve', %L, 0)$$, pg_temp.n('i1'), pg_temp.n('A')),
				 '23514', NULL, 'INSERT of a reservation of 0 units: 23514');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						  VALUES (%L, 1, 'restock', %L, 0)$$, pg_temp.n('i1'), pg_temp.n('A')),
				 '23514', NULL, 'INSERT of a restock of 0 units: 23514');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						  VALUES (%L, 1, 'restock', %L, -3)$$, pg_temp.n('i1'), pg_temp.n('A')),
				 '23514', NULL, 'INSERT of a negative restock: 23514');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						  VALUES (%L, 1, 'theft', %L, 1)$$, pg_temp.n('i1'), pg_temp.n('A')),
				 '23514', NULL, 'INSERT of an unknown kind of movement: 23514');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						  VALUES (%L, 1, 'reserve', %L, 98)$$, pg_temp.n('i1'), pg_temp.n('A')),
				 '23514', NULL, 'INSERT of a reservation of more than available (oversell): 23514');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, counted)
						  VALUES (%L, 1, 'adjust', %L, -98, 0)$$, pg_temp.n('i1'), pg_temp.n('A')),
				 '23514', NULL, 'INSERT of a stocktake below the reserved units (oversell): 23514');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						  VALUES (%L, 1, 'reserve', %L, 49), (%L, 1, 'reserve', %L, 49)$$,
						pg_temp.n('i1'), pg_temp.n('A'), pg_temp.n('i2'), pg_temp.n('A')),
				 '23514', NULL, 'INSERT of two reservations that together oversell: 23514');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						  VALUES (%L, 1, 'reserve', %L, 1)$$, pg_temp.n('i1'), pg_temp.n('NOPE')),
				 '23503', NULL, 'INSERT of a reservation of an unknown SKU: 23503');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						  VALUES (%L, 1, 'restock', %L, 1)$$, pg_temp.n('i1'), pg_temp.n('NOPE')),
				 '23503', NULL, 'INSERT of a restock of an unknown SKU: 23503');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, counted)
						  VALUES (%L, 1, 'adjust', %L, 1, 1)$$, pg_temp.n('i1'), pg_temp.n('NOPE')),
				 '23503', NULL, 'INSERT of a stocktake of an unknown SKU: 23503');
SELECT is(pg_temp.state_of('i1') || ' ' || pg_temp.state_of('i2'), 'no row no row', 'no refused INSERT left a row');
SELECT is(pg_temp.stock('A'), 'on_hand=98 reserved=1 available=97 version=18', 'no refused INSERT changed a counter');
SELECT is(pg_temp.stock('NOPE'), 'no sku', 'no refused INSERT created a SKU');

SELECT lives_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, state, expires_at)
						 VALUES (%L, 1, 'reserve', %L, 2, 'pending', now() + interval '1 hour')$$,
					   pg_temp.n('i3'), pg_temp.n('A')),
				'INSERT of a PENDING reservation works');
SET LOCAL inventory.default_ttl = '25min';
WITH i AS (
	INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
	VALUES (pg_temp.n('i4'), 1, 'reserve', pg_temp.n('A'), 3)
	RETURNING state::text || ' ' || (expires_at - statement_timestamp())::text AS d
)
SELECT is(d, 'PENDING 00:25:00', 'INSERT of a reservation without state or expires_at: PENDING, expires now + default_ttl') FROM i;
SELECT is(pg_temp.stock('A'), 'on_hand=98 reserved=6 available=92 version=20', 'the inserted reservations hold their units');
SELECT lives_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						 VALUES (%L, 1, 'restock', %L, 5)$$, pg_temp.n('i5'), pg_temp.n('A')),
				'INSERT of a restock works');
SELECT lives_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, counted)
						 VALUES (%L, 1, 'adjust', %L, -3, 100)$$, pg_temp.n('i6'), pg_temp.n('A')),
				'INSERT of a stocktake works');
SELECT is(pg_temp.stock('A'), 'on_hand=100 reserved=6 available=94 version=22', 'the inserted restock and stocktake count');
-- exactly the available units is not an oversell; one more is
SELECT lives_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						 VALUES (%L, 1, 'reserve', %L, 5)$$, pg_temp.n('i7'), pg_temp.n('D')),
				'INSERT of a reservation of exactly the available units works');
SELECT throws_ok(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						  VALUES (%L, 1, 'reserve', %L, 1)$$, pg_temp.n('i8'), pg_temp.n('D')),
				 '23514', NULL, 'then one more unit is an oversell: 23514');
SELECT is(pg_temp.stock('D'), 'on_hand=5 reserved=5 available=0 version=2', 'D is sold out');

------------------------------------------------------------------------------
-- COPY of some columns, by the administrator, passes the same rules: its
-- psql, in a connection of its own (committed), the rows given on its
-- standard input; what it prints, its errors with their SQLSTATE
------------------------------------------------------------------------------

SELECT format('%s,1,reserve,%s,1,CONFIRMED', pg_temp.n('cp1'), pg_temp.n('A')) AS copy_row \gset
\setenv INV_TEST_COPY_ROW :copy_row
\set copy_out `printf '%s\n' "$INV_TEST_COPY_ROW" | psql -X -q -h :'pghost' -p :'pgport' -d :'dbname' -U shop_admin -v VERBOSITY=verbose -c 'COPY inventory.ledger (order_id, batch_id, kind, sku, qty, state) FROM STDIN WITH (FORMAT csv)' 2>&1`
SELECT matches(:'copy_out'::text, '^ERROR:  23514: ', 'COPY of a CONFIRMED reservation: 23514');
SELECT format('%s,1,reserve,%s,1', pg_temp.n('cp1'), pg_temp.n('NOPE')) AS copy_row \gset
\setenv INV_TEST_COPY_ROW :copy_row
\set copy_out `printf '%s\n' "$INV_TEST_COPY_ROW" | psql -X -q -h :'pghost' -p :'pgport' -d :'dbname' -U shop_admin -v VERBOSITY=verbose -c 'COPY inventory.ledger (order_id, batch_id, kind, sku, qty) FROM STDIN WITH (FORMAT csv)' 2>&1`
SELECT matches(:'copy_out'::text, '^ERROR:  23503: ', 'COPY of a reservation of an unknown SKU: 23503');
SELECT format('%s,1,reserve,%s,4', pg_temp.n('cp2'), pg_temp.n('A')) AS copy_row \gset
\setenv INV_TEST_COPY_ROW :copy_row
\set copy_out `printf '%s\n' "$INV_TEST_COPY_ROW" | psql -X -q -h :'pghost' -p :'pgport' -d :'dbname' -U shop_admin -v VERBOSITY=verbose -c 'COPY inventory.ledger (order_id, batch_id, kind, sku, qty) FROM STDIN WITH (FORMAT csv)' 2>&1`
\setenv INV_TEST_COPY_ROW
SELECT is(:'copy_out'::text, '', 'COPY of a PENDING reservation works');
SELECT is(pg_temp.state_of('cp1') || ' ' || pg_temp.state_of('cp2'), 'no row PENDING', 'COPY rows: only the legal one landed');
SELECT is(pg_temp.stock('A'), 'on_hand=100 reserved=10 available=90 version=23', 'the copied reservation holds its units');

------------------------------------------------------------------------------
-- DELETE
------------------------------------------------------------------------------

SELECT throws_ok(format('DELETE FROM inventory.ledger WHERE order_id = %L', pg_temp.n('p4')),
				 '23001', NULL, 'DELETE of a settled, unfolded reservation: 23001');
SELECT throws_ok(format('DELETE FROM inventory.ledger WHERE order_id = %L', pg_temp.n('cp2')),
				 '23001', NULL, 'DELETE of a PENDING reservation: 23001');
SELECT throws_ok(format('DELETE FROM inventory.ledger WHERE order_id = %L', pg_temp.n('c1')),
				 '23001', NULL, 'DELETE of a CONFIRMED reservation: 23001');
SELECT throws_ok(format('DELETE FROM inventory.ledger WHERE order_id = %L', pg_temp.n('i5')),
				 '23001', NULL, 'DELETE of a restock: 23001');
SELECT throws_ok(format('DELETE FROM inventory.ledger WHERE order_id = %L', pg_temp.n('aB')),
				 '23001', NULL, 'DELETE of a stocktake: 23001');
-- a SKU E, and a restock of it
INSERT INTO inventory.sku (sku) VALUES (pg_temp.n('E'));
INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty) VALUES (pg_temp.n('rE'), 1, 'restock', pg_temp.n('E'), 3);
SELECT throws_ok(format('DELETE FROM inventory.sku WHERE sku = %L', pg_temp.n('E')),
				 '23001', NULL, 'DELETE of a SKU with movements: 23001');
SELECT is(pg_temp.stock('E'), 'on_hand=3 reserved=0 available=3 version=1', 'E is still there');
-- a SKU with committed movements, once no fold of them is in flight (a
-- fold pins the SKU, and deleting a SKU another transaction pins is
-- refused for that reason first)
SELECT pg_temp.quiesce('A') \g /dev/null
SELECT throws_ok(format('DELETE FROM inventory.sku WHERE sku = %L', pg_temp.n('A')),
				 '23001', NULL, 'DELETE of a SKU with committed movements: 23001');
SELECT is(pg_temp.state_of('p4') || ' ' || pg_temp.state_of('cp2') || ' ' || pg_temp.state_of('c1'),
		  'EXPIRED PENDING CONFIRMED', 'the refused deletes left the reservations in place');
SELECT is((SELECT count(*) FROM inventory.ledger WHERE order_id IN (pg_temp.n('i5'), pg_temp.n('aB'))),
		  2::bigint, 'the restock and the stocktake are still there');
SELECT is(pg_temp.stock('A'), 'on_hand=100 reserved=10 available=90 version=23', 'the refused deletes changed no counter');
SELECT lives_ok(format('INSERT INTO inventory.sku (sku) VALUES (%L)', pg_temp.n('C')), 'INSERT of a SKU works');
SELECT is(pg_temp.stock('C'), 'on_hand=0 reserved=0 available=0 version=0', 'the new SKU starts at zero');
SELECT lives_ok(format('DELETE FROM inventory.sku WHERE sku = %L', pg_temp.n('C')), 'DELETE of a SKU without movements works');
SELECT is(pg_temp.stock('C'), 'no sku', 'the SKU is gone');

------------------------------------------------------------------------------
-- inventory.sku: on_hand and version change only through the ledger; no rename
------------------------------------------------------------------------------

SELECT throws_ok(format('UPDATE inventory.sku SET on_hand = on_hand + 1 WHERE sku = %L', pg_temp.n('A')),
				 '23514', NULL, 'UPDATE inventory.sku.on_hand: 23514');
SELECT throws_ok(format('UPDATE inventory.sku SET version = version + 1 WHERE sku = %L', pg_temp.n('A')),
				 '23514', NULL, 'UPDATE inventory.sku.version: 23514');
SELECT throws_ok(format('UPDATE inventory.sku SET sku = %L WHERE sku = %L', pg_temp.n('A2'), pg_temp.n('A')),
				 '23514', NULL, 'renaming a SKU: 23514');
SELECT is(pg_temp.stock('A'), 'on_hand=100 reserved=10 available=90 version=23', 'inventory.sku is unchanged');

------------------------------------------------------------------------------
-- the cache agrees with the tables, the transaction's own changes included
------------------------------------------------------------------------------

SELECT is_empty('SELECT * FROM pg_temp.drift()', 'inventory.verify(''30 s'') is empty inside the transaction');
ROLLBACK;

------------------------------------------------------------------------------
-- the triggers fire under session_replication_role = replica too: the
-- superuser's setting, and writes, each in a statement of its own, on
-- committed rows (c1, CONFIRMED; rr, PENDING, of B)
------------------------------------------------------------------------------

SELECT pg_temp.stock('B') AS b_before \gset
SELECT pg_temp.as_super('SET session_replication_role = replica') \g /dev/null
SELECT throws_ok(pg_temp.by_super(pg_temp.upd('c1', $$state = 'PENDING'$$)), '23514', NULL,
				 'replica role: UPDATE CONFIRMED -> PENDING: 23514');
SELECT throws_ok(pg_temp.by_super(pg_temp.upd('rr', 'qty = 2')), '23514', NULL, 'replica role: UPDATE qty: 23514');
SELECT throws_ok(pg_temp.by_super(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, state)
										   VALUES (%L, 1, 'reserve', %L, 1, 'CONFIRMED')$$, pg_temp.n('r1'), pg_temp.n('B'))),
				 '23514', NULL, 'replica role: INSERT of a CONFIRMED reservation: 23514');
SELECT throws_ok(pg_temp.by_super(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
										   VALUES (%L, 1, 'reserve', %L, 1)$$, pg_temp.n('r1'), pg_temp.n('NOPE'))),
				 '23503', NULL, 'replica role: INSERT for an unknown SKU: 23503');
SELECT throws_ok(pg_temp.by_super(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
										   VALUES (%L, 1, 'reserve', %L, 10)$$, pg_temp.n('r1'), pg_temp.n('B'))),
				 '23514', NULL, 'replica role: oversell (10 of B, 9 available): 23514');
SELECT throws_ok(pg_temp.by_super(format('DELETE FROM inventory.ledger WHERE order_id = %L', pg_temp.n('rr'))),
				 '23001', NULL, 'replica role: DELETE of a movement: 23001');
SELECT throws_ok(pg_temp.by_super(format('UPDATE inventory.sku SET on_hand = on_hand + 5 WHERE sku = %L', pg_temp.n('B'))),
				 '23514', NULL, 'replica role: UPDATE inventory.sku.on_hand: 23514');
SELECT lives_ok(pg_temp.by_super(pg_temp.upd('rr', $$state = 'CANCELLED'$$)), 'replica role: a legal transition works');
SELECT pg_temp.as_super('RESET session_replication_role') \g /dev/null
SELECT is(pg_temp.state_of('c1') || ' ' || pg_temp.state_of('rr'), 'CONFIRMED CANCELLED', 'replica role: states as expected');
SELECT is(pg_temp.stock('B'), replace(replace(:'b_before', 'reserved=1 available=9', 'reserved=0 available=10'),
									   'version=2', 'version=3'),
		  'replica role: only the legal change counted (B: its unit back, version + 1)');

-- settle what is left (the application's reservations the rolled-back
-- transaction settled), and check the cache against the tables
\ir lib/settle.sql

SELECT * FROM finish();

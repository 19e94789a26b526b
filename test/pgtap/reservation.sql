-- reservation.sql: inventory.reservation(order_id, batch_id) -- what became
-- of an order's reservations, as the application reads them: every line of
-- the order or one, its state, when it expires, and when and by what it
-- was settled (settled_by: call, expiry, reconciler or statement), which
-- the trigger stamps whatever an UPDATE says.  Movements that are not
-- reservations are not lines of an order; the monitor may not read them.
--
-- The application (shop_app) makes and settles the reservations; the
-- administrator restocks, writes and updates reservations by hand, runs
-- the expiry and sets a reconciler; the superuser makes the reconciler's
-- role and schema (scaffolding: roles are a superuser's to create).

\set name reservation
\set role shop_app
\ir lib/setup.sql

-- an order's lines as the application reads them: batch:state:settled_by
CREATE FUNCTION pg_temp.lines(o text, batch integer DEFAULT NULL) RETURNS text LANGUAGE sql
AS $$ SELECT coalesce(string_agg(format('%s:%s:%s', batch_id, state, coalesce(settled_by, '-')), ' '
								 ORDER BY batch_id), 'none')
		FROM inventory.reservation(pg_temp.n(o), batch) $$;

SELECT plan(21);

SELECT pg_temp.restock('A', 20, 'in-A') \g /dev/null
SELECT pg_temp.restock('B', 20, 'in-B') \g /dev/null

------------------------------------------------------------------------------
-- the lines of an order, PENDING as made
------------------------------------------------------------------------------

SELECT is(pg_temp.lines('nobody'), 'none', 'an order never made has no lines');

SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('o1'), 1, '1 hour')) \g /dev/null
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('B'), 3, pg_temp.n('o1'), 2, '1 hour')) \g /dev/null

SELECT is(pg_temp.lines('o1'), '1:PENDING:- 2:PENDING:-',
		  'both lines of an order, PENDING, in the order of batch_id');
SELECT is(pg_temp.lines('o1', 2), '2:PENDING:-', 'one line of the order, by its batch_id');
SELECT is(pg_temp.lines('o1', 3), 'none', 'a batch_id the order does not have: no line');
SELECT is((SELECT format('%s %s %s', sku = pg_temp.n('B'), qty, settled_at IS NULL)
			 FROM inventory.reservation(pg_temp.n('o1'), 2)),
		  't 3 t', 'a line answers its SKU and quantity, and no settled_at while PENDING');
SELECT is((SELECT expires_at FROM inventory.reservation(pg_temp.n('o1'), 1)),
		  (SELECT expires_at FROM inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('o1'), 1, '1 hour')),
		  'expires_at is the one reserve() answered (its replay answers it again)');

-- in the transaction that reserves, before it commits
BEGIN;
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('own'), 1, '1 hour')) \g /dev/null
SELECT is(pg_temp.lines('own'), '1:PENDING:-', 'a reservation of the caller''s own transaction is read before it commits');
ROLLBACK;
SELECT is(pg_temp.lines('own'), 'none', 'and is gone once it rolls back');

------------------------------------------------------------------------------
-- what settled each line
------------------------------------------------------------------------------

SELECT pg_temp.expect(inventory.confirm(pg_temp.n('o1'), 1)) \g /dev/null
SELECT pg_temp.expect(inventory.cancel(pg_temp.n('o1'), 2)) \g /dev/null
SELECT is(pg_temp.lines('o1'), '1:CONFIRMED:call 2:CANCELLED:call',
		  'confirm() and cancel(): settled by a call');
SELECT ok((SELECT bool_and(settled_at IS NOT NULL AND settled_at >= created_at)
			 FROM inventory.reservation(pg_temp.n('o1'))),
		  'a settled line has settled_at, no earlier than it was made');

-- the expiry: inventory.expire() by the administrator, or the worker
-- before it, on a reservation overdue and written by hand
SELECT pg_temp.overdue('late', 'A', 1) \g /dev/null
SELECT pg_temp.as_admin('SELECT inventory.expire()') \g /dev/null
SELECT is(pg_temp.lines('late'), '1:EXPIRED:expiry', 'an overdue reservation expired: settled by the expiry');

-- a confirm too late expires the reservation, as the worker would
SELECT pg_temp.overdue('later', 'A', 1) \g /dev/null
SELECT is((inventory.confirm(pg_temp.n('later'))).status, 'expired', 'a confirm past expires_at answers expired');
SELECT is(pg_temp.lines('later'), '1:EXPIRED:expiry', 'and the reservation is settled by the expiry');

-- an UPDATE by hand, which the manual gives the administrator, is stamped
-- a statement, whatever it says; settled_by then never changes
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('byhand'), 1, '1 hour')) \g /dev/null
SELECT pg_temp.as_admin(format($$UPDATE inventory.ledger SET state = 'CANCELLED', settled_by = 'reconciler'
								 WHERE order_id = %L$$, pg_temp.n('byhand'))) \g /dev/null
SELECT is(pg_temp.lines('byhand'), '1:CANCELLED:statement', 'an UPDATE by hand: settled by a statement, not what it claims');
SELECT throws_ok(format($$SELECT pg_temp.as_admin(%L)$$,
						format($$UPDATE inventory.ledger SET settled_by = 'call' WHERE order_id = %L$$, pg_temp.n('byhand'))),
				 '23514', 'column "settled_by" of a ledger movement cannot change',
				 'settled_by of a settled reservation cannot change');
SELECT throws_ok(format($$SELECT pg_temp.as_admin(%L)$$,
						format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, settled_by)
								  VALUES (%L, 1, 'reserve', %L, 1, 'call')$$, pg_temp.n('made-settled'), pg_temp.n('A'))),
				 '23514', 'a new reservation cannot have settled_at or settled_by',
				 'a new reservation cannot come with settled_by');

-- a reconciler's answer: a shop's function that confirms every order
SELECT pg_temp.as_super($q$DO $d$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'reservation_payments') THEN
		CREATE ROLE reservation_payments NOLOGIN;
	END IF;
END $d$$q$) \g /dev/null
SELECT pg_temp.as_super($$GRANT reservation_payments TO shop_admin$$) \g /dev/null
SELECT pg_temp.as_super($$CREATE SCHEMA IF NOT EXISTS reservation_payments AUTHORIZATION reservation_payments$$) \g /dev/null
SELECT pg_temp.as_super($$SET ROLE reservation_payments;
	CREATE OR REPLACE FUNCTION reservation_payments.paid(order_id text, batch_id integer) RETURNS text
		LANGUAGE sql SET search_path = pg_catalog, pg_temp RETURN 'confirm';
	RESET ROLE$$) \g /dev/null
SELECT pg_temp.as_admin($$SELECT inventory.set_reconciler('reservation_payments.paid(text, integer)')$$) \g /dev/null
SELECT pg_temp.overdue('paid', 'A', 1) \g /dev/null
SELECT pg_temp.as_admin('SELECT inventory.expire()') \g /dev/null
SELECT is(pg_temp.lines('paid'), '1:CONFIRMED:reconciler', 'an overdue reservation the reconciler confirmed: settled by the reconciler');
SELECT pg_temp.as_admin('SELECT inventory.set_reconciler(NULL)') \g /dev/null

------------------------------------------------------------------------------
-- what it does not answer, and to whom
------------------------------------------------------------------------------

SELECT is(pg_temp.lines('in-A'), 'none', 'a restock is not a line of an order');
SELECT throws_ok($$SELECT * FROM inventory.reservation(NULL)$$, '22004', 'order_id must not be null',
				 'order_id NULL is an error');
SELECT throws_ok(pg_temp.by_monitor(format('SELECT count(*) FROM inventory.reservation(%L)', pg_temp.n('o1'))),
				 '42501', NULL, 'the monitor may not read reservations');
SELECT is(pg_temp.admin_says(format('SELECT count(*) FROM inventory.reservation(%L)', pg_temp.n('o1'))), '2',
		  'the administrator reads them');

SELECT * FROM finish();

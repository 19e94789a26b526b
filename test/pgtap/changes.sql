-- changes.sql: the change feed, inventory.changes(after, max_rows), as the
-- application follows it.  With the database's inventory.change_feed on,
-- each reservation made and each settlement is a row -- its state, when
-- and by what it was settled -- and nothing else is: not a restock, an
-- extend, a fold, a refusal or a rollback.  Rows come in order, each with
-- a cursor; resuming after any cursor gives exactly the rows after it;
-- max_rows bounds a read.  A transaction still open with an id holds back
-- the rows of every later one, which then come in the order of their
-- transactions.  A cursor that is not this feed's -- garbage, another
-- database's, another timeline's -- is an error (22P02, IV001).  Only the
-- database's setting turns it on; the monitor may not read it, nor the
-- application the table itself.
--
-- The superuser turns the feed on for this database before the file
-- connects (ALTER DATABASE, which only a superuser may), and off at the
-- end.  The application (shop_app) reserves, settles and reads the feed;
-- the administrator restocks, expires and folds, and holds a transaction
-- open, through its connection.

\set name changes
\set role shop_app
ALTER DATABASE :"DBNAME" SET inventory.change_feed = on;
\ir lib/setup.sql

-- the feed after a cursor (NULL: its start), as "order:state:settled_by"
-- for this run's keys, and the last cursor read kept in inventory_test.cursor
CREATE FUNCTION pg_temp.feed(after text DEFAULT NULL, max_rows integer DEFAULT 1000) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	out text[] := '{}';
BEGIN
	FOR r IN SELECT * FROM inventory.changes(after, max_rows) LOOP
		PERFORM set_config('inventory_test.cursor', r.cursor, false);
		IF starts_with(r.order_id, current_setting('inventory_test.prefix')) THEN
			out := out || format('%s:%s:%s', substr(r.order_id, length(current_setting('inventory_test.prefix')) + 1),
								 r.state, coalesce(r.settled_by, '-'));
		END IF;
	END LOOP;
	RETURN coalesce(array_to_string(out, ' '), '');
END $$;
-- the feed after the last cursor kept
CREATE FUNCTION pg_temp.next(max_rows integer DEFAULT 1000) RETURNS text LANGUAGE sql
AS $$ SELECT pg_temp.feed(nullif(current_setting('inventory_test.cursor', true), ''), max_rows) $$;

SELECT plan(23);

SELECT is(current_setting('inventory.change_feed'), 'on', 'the feed is on for the database');
SELECT pg_temp.restock('A', 20, 'in-A') \g /dev/null
-- from the start of the feed to now: the rows of earlier files and runs
SELECT pg_temp.feed() \g /dev/null

------------------------------------------------------------------------------
-- what is a row
------------------------------------------------------------------------------

SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('o1'), 1, '1 hour')) \g /dev/null
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('o2'), 1, '1 hour')) \g /dev/null
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('o3'), 1, '1 hour')) \g /dev/null
SELECT is(pg_temp.next(), 'o1:PENDING:- o2:PENDING:- o3:PENDING:-', 'each reservation made is a row, PENDING, in order');
SELECT is(pg_temp.next(), '', 'read again from the last cursor: nothing more');

SELECT pg_temp.expect(inventory.confirm(pg_temp.n('o1'))) \g /dev/null
SELECT pg_temp.expect(inventory.cancel(pg_temp.n('o2'))) \g /dev/null
SELECT pg_temp.expect(inventory.extend(pg_temp.n('o3'), 1, '2 hours')) \g /dev/null
SELECT is(pg_temp.next(), 'o1:CONFIRMED:call o2:CANCELLED:call',
		  'a confirm and a cancel are rows, settled by a call; an extend is none');

SELECT pg_temp.overdue('late', 'A', 1) \g /dev/null
SELECT pg_temp.as_admin('SELECT inventory.expire()') \g /dev/null
SELECT is(pg_temp.next(), 'late:PENDING:- late:EXPIRED:expiry',
		  'a reservation made by hand is a row, and so is its expiry');

SELECT pg_temp.restock('A', 5, 'in-A-2') \g /dev/null
SELECT is((inventory.reserve(pg_temp.n('A'), 1000, pg_temp.n('too-many'))).status, 'insufficient', 'a refusal ...');
SELECT pg_temp.as_admin('SELECT inventory.fold()') \g /dev/null
BEGIN;
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('undone'), 1, '1 hour')) \g /dev/null
ROLLBACK;
SELECT is(pg_temp.next(), '', '... a restock, a fold and a rollback are no rows');

SELECT is((SELECT format('%s %s %s', sku = pg_temp.n('A'), qty, expires_at > created_at)
			 FROM inventory.changes() WHERE order_id = pg_temp.n('o3')),
		  't 1 t', 'a row has the SKU, the quantity, created_at and expires_at');
SELECT ok((SELECT settled_at IS NOT NULL FROM inventory.changes() WHERE order_id = pg_temp.n('o1') AND state = 'CONFIRMED'),
		  'and, settled, settled_at');

------------------------------------------------------------------------------
-- cursors
------------------------------------------------------------------------------

SELECT set_config('inventory_test.mark', current_setting('inventory_test.cursor'), false) \g /dev/null
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('c' || g), 1, '1 hour'))
  FROM generate_series(1, 5) g \g /dev/null
SELECT is(pg_temp.feed(current_setting('inventory_test.mark'), 2), 'c1:PENDING:- c2:PENDING:-',
		  'max_rows bounds a read');
SELECT is(pg_temp.next(2), 'c3:PENDING:- c4:PENDING:-', 'the next read resumes after its last cursor');
SELECT is(pg_temp.next(), 'c5:PENDING:-', 'and the one after');
SELECT is((SELECT count(*) FROM (SELECT cursor FROM inventory.changes(current_setting('inventory_test.mark'))) c), 5::bigint,
		  'from the mark again: the same five rows, each with its own cursor');
SELECT is((SELECT count(DISTINCT cursor) FROM inventory.changes()), (SELECT count(*) FROM inventory.changes()),
		  'no two rows share a cursor');

------------------------------------------------------------------------------
-- a transaction still open holds back the later ones
------------------------------------------------------------------------------

SELECT pg_temp.as_admin('BEGIN') \g /dev/null
SELECT pg_temp.as_admin(format('SELECT (inventory.reserve(%L, 1, %L, 1, %L)).status',
							   pg_temp.n('A'), pg_temp.n('held'), '1 hour')) \g /dev/null
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('after-held'), 1, '1 hour')) \g /dev/null
SELECT is(pg_temp.next(), '', 'a row committed after a transaction that is still open is held back');
SELECT pg_temp.as_admin('COMMIT') \g /dev/null
SELECT is(pg_temp.next(), 'held:PENDING:- after-held:PENDING:-',
		  'once it commits, its row comes first, then the later one');

------------------------------------------------------------------------------
-- cursors that are not this feed's, settings, rights
------------------------------------------------------------------------------

SELECT throws_ok($$SELECT * FROM inventory.changes('not a cursor')$$, '22P02',
				 'invalid cursor of the change feed: "not a cursor"', 'a cursor that is not one: 22P02');
SELECT throws_ok(format('SELECT * FROM inventory.changes(%L)',
						regexp_replace(current_setting('inventory_test.cursor'), '^[0-9a-f]{16}', 'ffffffffffffffff')),
				 'IV001', NULL, 'a cursor of another feed (another database, or before a restore): IV001');
SELECT throws_ok(format('SELECT * FROM inventory.changes(%L)',
						regexp_replace(current_setting('inventory_test.cursor'), '^([0-9a-f]{16}-[0-9]+)-[0-9]+-', '\1-99-')),
				 'IV001', NULL, 'a cursor of another timeline (before a failover): IV001');
SELECT throws_ok($$SELECT * FROM inventory.changes(NULL, 0)$$, '22023', 'max_rows must be positive', 'max_rows 0: 22023');
SELECT throws_ok($$SET inventory.change_feed = off$$, '42501', NULL, 'a session may not turn it off');
SELECT throws_ok(pg_temp.by_monitor('SELECT count(*) FROM inventory.changes()'), '42501', NULL,
				 'the monitor may not read the feed');
SELECT throws_ok('SELECT count(*) FROM inventory.change', '42501', NULL,
				 'the application reads the feed through changes() only');

-- the reservations left behind, and the feed off again
SELECT pg_temp.app_r(format('inventory.cancel(%L)', pg_temp.n(o)))
  FROM unnest(ARRAY['o3', 'c1', 'c2', 'c3', 'c4', 'c5', 'held', 'after-held']) o \g /dev/null
SELECT pg_temp.as_super(format('ALTER DATABASE %I RESET inventory.change_feed', current_database())) \g /dev/null

SELECT * FROM finish();

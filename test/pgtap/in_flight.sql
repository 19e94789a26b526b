-- in_flight.sql: the outcome-table rows that need a second transaction
-- with a change to the SKU in flight:
--   reserve | none; another transaction has a change to the SKU in flight
--           (expected_version given) | version_conflict | f | none
--   adjust  | same | version_conflict | f | none
-- and "available counts the holds of transactions in flight; other changes
-- count once they commit".  The second transaction is a dblink connection
-- to this same database; without dblink (or if it cannot connect) the file
-- fails.  All names carry a prefix unique to this run.

\set name in_flight
\ir lib/setup.sql

SELECT count(*) > 0 AS has_dblink FROM pg_available_extensions WHERE name = 'dblink' \gset
\if :has_dblink
CREATE EXTENSION IF NOT EXISTS dblink;
-- connect through this server's own socket (or loopback) and port
CREATE FUNCTION pg_temp.connect_peer() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	dir text := split_part(current_setting('unix_socket_directories'), ',', 1);
BEGIN
	PERFORM dblink_connect('inventory_peer',
		format('dbname=%s host=%s port=%s user=%s application_name=in_flight_peer',
			   quote_literal(current_database()),
			   quote_literal(CASE WHEN trim(dir) = '' THEN '127.0.0.1' ELSE trim(dir) END),
			   current_setting('port'), quote_literal(current_user)));
	RETURN true;
EXCEPTION WHEN OTHERS THEN
	RAISE NOTICE 'in_flight.sql: cannot connect to this database through dblink: %', SQLERRM;
	RETURN false;
END $$;
SELECT pg_temp.connect_peer() AS peer_ok \gset
\else
\set peer_ok false
\endif

\if :peer_ok

-- runs a statement in the peer session
CREATE FUNCTION pg_temp.peer(sql text) RETURNS text LANGUAGE sql
AS $$ SELECT dblink_exec('inventory_peer', sql) $$;

-- a call in the peer session, its status
CREATE FUNCTION pg_temp.peer_status(sql text) RETURNS text LANGUAGE sql
AS $$ SELECT status FROM dblink('inventory_peer', sql) AS t(status text) $$;

SELECT plan(41);

SELECT is((inventory.restock(pg_temp.n('A'), 10, pg_temp.n('rA'))).status, 'ok', 'setup: restock A 10');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=0 available=10 version=1 live=10', 'setup: counters of A');

------------------------------------------------------------------------------
-- a reservation in flight in another transaction
------------------------------------------------------------------------------

SELECT is(pg_temp.peer('BEGIN'), 'BEGIN', 'peer: BEGIN');
SELECT is(pg_temp.peer_status(format('SELECT status FROM inventory.reserve(%L, 3, %L)', pg_temp.n('A'), pg_temp.n('p1'))),
		  'ok', 'peer: reserve 3 units, not committed');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=0 available=10 version=1 live=7',
		  'available() counts the hold in flight; the tables do not show it yet');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('v1'), expected_version => 1)),
		  'ok=false status=version_conflict sku=A qty=1 state=NULL available=7 version=1',
		  'reserve with the current version while another transaction has a change in flight: version_conflict');
SELECT is((SELECT count(*) FROM inventory.ledger WHERE order_id = pg_temp.n('v1')), 0::bigint,
		  'version_conflict: no ledger row');
SELECT is(pg_temp.res(inventory.adjust(pg_temp.n('A'), 12, pg_temp.n('v2'), expected_version => 1)),
		  'ok=false status=version_conflict sku=A qty=12 state=NULL available=7 version=1',
		  'adjust with the current version while another transaction has a change in flight: version_conflict');
SELECT is((SELECT count(*) FROM inventory.ledger WHERE order_id = pg_temp.n('v2')), 0::bigint,
		  'version_conflict of adjust: no ledger row');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 8, pg_temp.n('i1'))),
		  'ok=false status=insufficient sku=A qty=8 state=NULL available=7 version=1',
		  'the hold in flight counts for admission: 8 of 7 is insufficient');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 7, pg_temp.n('l1'))),
		  'ok=true status=ok sku=A qty=7 state=PENDING available=0 version=1',
		  'without expected_version a reservation does not wait for the other transaction');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=7 available=3 version=2 live=0',
		  'our reservation committed; the peer''s hold is still in flight');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('i2'))),
		  'ok=false status=insufficient sku=A qty=1 state=NULL available=0 version=2',
		  'nothing is left for anyone while the peer holds its units');
SELECT is_empty('SELECT * FROM inventory.verify()', 'verify() reports nothing while the peer has changes in flight');
SELECT is(pg_temp.peer('ROLLBACK'), 'ROLLBACK', 'peer: ROLLBACK');
SELECT is(pg_temp.counters('A'), 'on_hand=10 reserved=7 available=3 version=2 live=3',
		  'after the peer rolled back its hold is returned');
BEGIN;
SELECT pg_temp.quiesce('A') \g /dev/null
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('v3'), expected_version => 2)),
		  'ok=true status=ok sku=A qty=1 state=PENDING available=2 version=2',
		  'with nothing in flight the current version is accepted');
COMMIT;

------------------------------------------------------------------------------
-- a confirmation in flight
------------------------------------------------------------------------------

SELECT is(pg_temp.peer('BEGIN'), 'BEGIN', 'peer: BEGIN');
SELECT is(pg_temp.peer_status(format('SELECT status FROM inventory.confirm(%L)', pg_temp.n('l1'))),
		  'ok', 'peer: confirm our reservation, not committed');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('v4'), expected_version => 3)),
		  'ok=false status=version_conflict sku=A qty=1 state=NULL available=2 version=3',
		  'reserve with the current version while a confirm is in flight: version_conflict');
SELECT is(pg_temp.peer('COMMIT'), 'COMMIT', 'peer: COMMIT');
SELECT is(pg_temp.counters('A'), 'on_hand=3 reserved=1 available=2 version=4 live=2',
		  'after the peer committed: the sale left on_hand, available unchanged');

------------------------------------------------------------------------------
-- a restock in flight: version checks conflict, its units count at commit
------------------------------------------------------------------------------

SELECT is(pg_temp.peer('BEGIN'), 'BEGIN', 'peer: BEGIN');
SELECT is(pg_temp.peer_status(format('SELECT status FROM inventory.restock(%L, 5, %L)', pg_temp.n('A'), pg_temp.n('pr'))),
		  'ok', 'peer: restock 5, not committed');
SELECT is(inventory.available(pg_temp.n('A')), 2::bigint, 'units of a restock in flight are not available yet');
SELECT is(pg_temp.res(inventory.adjust(pg_temp.n('A'), 3, pg_temp.n('v5'), expected_version => 4)),
		  'ok=false status=version_conflict sku=A qty=3 state=NULL available=2 version=4',
		  'adjust with the current version while a restock is in flight: version_conflict');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 3, pg_temp.n('i3'))),
		  'ok=false status=insufficient sku=A qty=3 state=NULL available=2 version=4',
		  'the restock in flight does not make a reservation possible');
SELECT is(pg_temp.peer('COMMIT'), 'COMMIT', 'peer: COMMIT');
SELECT is(pg_temp.counters('A'), 'on_hand=8 reserved=1 available=7 version=5 live=7',
		  'after the peer committed its units are available');
BEGIN;
SELECT pg_temp.quiesce('A') \g /dev/null
SELECT is(pg_temp.res(inventory.adjust(pg_temp.n('A'), 9, pg_temp.n('a1'), expected_version => 5)),
		  'ok=true status=ok sku=A qty=9 state=NULL available=8 version=5',
		  'with nothing in flight the stocktake with the current version works');
COMMIT;

------------------------------------------------------------------------------
-- what a movement answers: available once the caller's transaction commits
------------------------------------------------------------------------------

BEGIN;
SELECT is(pg_temp.res(inventory.restock(pg_temp.n('A'), 4, pg_temp.n('r4'))),
		  'ok=true status=ok sku=A qty=4 state=NULL available=12 version=6',
		  'a restock answers the units available once its transaction commits');
SELECT is(pg_temp.peer_status(format('SELECT available FROM inventory.reserve(%L, 9, %L)', pg_temp.n('A'), pg_temp.n('p9'))),
		  '8', 'another transaction still sees the live count: its reserve of 9 is refused with 8 available');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('A'), 9, pg_temp.n('o9'))),
		  'ok=false status=insufficient sku=A qty=9 state=NULL available=12 version=6',
		  'nor can the restocking transaction reserve them before it commits; it is told 12 after its commit');
SELECT is(pg_temp.res(inventory.cancel(pg_temp.n('v3'))),
		  'ok=true status=ok sku=A qty=1 state=CANCELLED available=13 version=6',
		  'a cancel in the same transaction answers with its unit back as well');
ROLLBACK;
SELECT is(pg_temp.counters('A'), 'on_hand=9 reserved=1 available=8 version=6 live=8',
		  'rolled back: the answers were what a commit would have made, nothing more');
BEGIN;
SELECT is(pg_temp.res(inventory.restock(pg_temp.n('NEW'), 4, pg_temp.n('rn'))),
		  'ok=true status=ok sku=NEW qty=4 state=NULL available=4 version=0',
		  'a restock that creates its SKU answers its units');
SELECT is(pg_temp.res(inventory.reserve(pg_temp.n('NEW'), 1, pg_temp.n('on'))),
		  'ok=false status=insufficient sku=NEW qty=1 state=NULL available=4 version=0',
		  'a reserve of that SKU in the same transaction: insufficient, told the 4 its commit brings');
ROLLBACK;

------------------------------------------------------------------------------
-- settle
------------------------------------------------------------------------------

SELECT is((inventory.cancel(pg_temp.n('v3'))).status, 'ok', 'cancel v3');
SELECT is(pg_temp.counters('A'), 'on_hand=9 reserved=0 available=9 version=7 live=9', 'final counters');
SELECT is((SELECT count(*) FROM inventory.ledger
			WHERE starts_with(order_id, current_setting('inventory_test.prefix')) AND state::text = 'PENDING'),
		  0::bigint, 'no reservation of this file is left PENDING');
SELECT is_empty('SELECT * FROM inventory.verify()', 'inventory.verify() is empty');
SELECT dblink_disconnect('inventory_peer') AS disconnected \gset

\else

-- dblink comes with the server's contrib modules, which scripts/test.sh
-- installs: without it this file cannot prove anything, so it fails
SELECT plan(1);
SELECT fail('dblink is not available or cannot connect: no second transaction to test with');

\endif

SELECT * FROM finish();

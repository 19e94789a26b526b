-- hostile_input.sql: table-driven hostile inputs to every function and to
-- the state type.  Each gets its documented SQLSTATE or status; the
-- accepted hostile keys are stored verbatim, as ordinary keys; nothing
-- else changes a counter or leaves a row behind; afterwards the cache
-- still agrees with the tables.  The application (shop_app) makes the calls
-- of this session; the administrator's calls (restock, adjust, expire,
-- fold) go through its connection.  Work is committed: every key, hostile
-- ones included, carries the run's prefix, and the reservations are
-- cancelled at the end.

\set name hostile
\set role shop_app
\ir lib/setup.sql
\set p :prefix
SELECT pg_temp.restock('A', 10, 'r1') \g /dev/null
SELECT pg_temp.expect(inventory.reserve(:'p' || 'A', 2, :'p' || 'o1', ttl => '1 hour')) \g /dev/null

CREATE TEMP TABLE before AS
	SELECT on_hand, reserved, version, inventory.available(sku) AS live
	  FROM inventory.stock WHERE sku = :'p' || 'A';
SELECT pg_temp.read1(format('SELECT count(*) FROM inventory.ledger WHERE starts_with(order_id, %L)', :'p'))
	AS ledger_before \gset

-- calls that must fail: the SQL (with %1$s for the SKU, %2$s for a fresh
-- key, %3$s for the key of a reservation), the SQLSTATE, and who calls:
-- the application, or the administrator (by its connection)
CREATE TEMP TABLE errors (what text, sql text, sqlstate text, who text DEFAULT 'app');
INSERT INTO errors (what, sql, sqlstate) VALUES
	-- NULLs and signs
	('reserve: NULL sku', $$SELECT inventory.reserve(NULL, 1, %2$L)$$, '22004'),
	('reserve: qty 0', $$SELECT inventory.reserve(%1$L, 0, %2$L)$$, '22023'),
	('reserve: qty -1', $$SELECT inventory.reserve(%1$L, -1, %2$L)$$, '22023'),
	('reserve: smallest bigint', $$SELECT inventory.reserve(%1$L, -9223372036854775808, %2$L)$$, '22023'),
	('restock: smallest bigint', $$SELECT inventory.restock(%1$L, -9223372036854775808, %2$L)$$, '22023'),
	('adjust: negative count', $$SELECT inventory.adjust(%1$L, -5, %2$L)$$, '22023'),
	('restock: sum beyond bigint', $$SELECT inventory.restock(%1$L, 9223372036854775800, %2$L)$$, '22003'),
	('qty beyond bigint', $$SELECT inventory.reserve(%1$L, '9223372036854775808'::bigint, %2$L)$$, '22003'),
	-- keys
	('empty sku', $$SELECT inventory.reserve('', 1, %2$L)$$, '22023'),
	('empty order_id', $$SELECT inventory.reserve(%1$L, 1, '')$$, '22023'),
	('sku of 64 bytes', $$SELECT inventory.reserve(repeat('s', 64), 1, %2$L)$$, '22001'),
	('sku of 22 four-byte characters (88 bytes)', $$SELECT inventory.reserve(repeat(U&'\+01F600', 22), 1, %2$L)$$, '22001'),
	('order_id of 256 bytes', $$SELECT inventory.reserve(%1$L, 1, repeat('o', 256))$$, '22001'),
	('order_id of 1 MB', $$SELECT inventory.reserve(%1$L, 1, repeat('o', 1048576))$$, '22001'),
	('confirm: order_id of 1 MB', $$SELECT inventory.confirm(repeat('o', 1048576))$$, '22001'),
	('invalid UTF-8 bytes in sku', $$SELECT inventory.reserve(convert_from('\xc328', 'UTF8'), 1, %2$L)$$, '22021'),
	-- ttl
	('ttl 0', $$SELECT inventory.reserve(%1$L, 1, %2$L, ttl => '0')$$, '22023'),
	('ttl -1 microsecond', $$SELECT inventory.reserve(%1$L, 1, %2$L, ttl => '-1 microsecond')$$, '22023'),
	('ttl -178000000 years', $$SELECT inventory.reserve(%1$L, 1, %2$L, ttl => '-178000000 years')$$, '22008'),
	('ttl 178000000 years', $$SELECT inventory.reserve(%1$L, 1, %2$L, ttl => '178000000 years')$$, '22008'),
	('extend: ttl 178000000 years', $$SELECT inventory.extend(%2$L, 1, '178000000 years')$$, '22008'),
	-- counts of rows
	('expire: max_rows -1', $$SELECT inventory.expire(-1)$$, '22023'),
	('fold: max_rows -2147483648', $$SELECT inventory.fold(-2147483648)$$, '22023'),
	-- a key reused for another movement
	('reserve: key of another quantity', $$SELECT inventory.reserve(%1$L, 3, %3$L)$$, '23505'),
	('restock: key of a reservation', $$SELECT inventory.restock(%1$L, 2, %3$L)$$, '23505'),
	-- state names
	('state: empty', $$SELECT ''::inventory.state$$, '22P02'),
	('state: PENDINGX', $$SELECT 'PENDINGX'::inventory.state$$, '22P02'),
	('state: inner space', $$SELECT 'PEND ING'::inventory.state$$, '22P02'),
	('state: Cyrillic E', $$SELECT U&'P\0415NDING'::inventory.state$$, '22P02'),
	('state: SQL', $$SELECT 'PENDING''; DROP TABLE inventory.ledger; --'::inventory.state$$, '22P02'),
	('state: NULL spelled', $$SELECT 'NULL'::inventory.state$$, '22P02'),
	('state: 1 MB', $$SELECT repeat('X', 1048576)::inventory.state$$, '22P02'),
	('can_transition: unknown name', $$SELECT inventory.can_transition('PENDING', 'PAID')$$, '22P02');
UPDATE errors SET who = 'admin' WHERE what ~ '^(restock|adjust|expire|fold):';

SELECT plan((SELECT count(*)::int FROM errors) + 17 + 9);

SELECT throws_ok(CASE who WHEN 'admin' THEN pg_temp.by_admin(format(sql, :'p' || 'A', :'p' || 'fresh', :'p' || 'o1'))
						  ELSE format(sql, :'p' || 'A', :'p' || 'fresh', :'p' || 'o1') END,
				 sqlstate, NULL, what)
  FROM errors ORDER BY what;

-- calls that are business outcomes: the SQL (%4$L: the run's prefix, which
-- the hostile keys carry too), the status, who calls
CREATE TEMP TABLE outcomes (what text, sql text, status text, who text DEFAULT 'app');
INSERT INTO outcomes (what, sql, status) VALUES
	('reserve: SQL-looking key', $$SELECT (inventory.reserve(%1$L, 1, %4$L || 'x''); DROP TABLE inventory.ledger; --')).status$$, 'ok'),
	('reserve: format-string key', $$SELECT (inventory.reserve(%1$L, 1, %4$L || '%%s%%n%%x%%d')).status$$, 'ok'),
	('reserve: key with newline and tab', $$SELECT (inventory.reserve(%1$L, 1, %4$L || E'line\n\tbreak')).status$$, 'ok'),
	('reserve: emoji key', $$SELECT (inventory.reserve(%1$L, 1, %4$L || U&'\+01F6D2 cart')).status$$, 'ok'),
	('reserve: batch_id -2147483648', $$SELECT (inventory.reserve(%1$L, 1, %2$L, -2147483648)).status$$, 'ok'),
	('reserve: largest bigint', $$SELECT (inventory.reserve(%1$L, 9223372036854775807, %2$L, 7)).status$$, 'insufficient'),
	('reserve: SQL-looking sku', $$SELECT (inventory.reserve('A''; DELETE FROM inventory.sku; --', 1, %2$L, 8)).status$$, 'unknown_sku'),
	('reserve: sku padded with spaces', $$SELECT (inventory.reserve(' ' || %1$L || ' ', 1, %2$L, 9)).status$$, 'unknown_sku'),
	('reserve: sku in other case', $$SELECT (inventory.reserve(upper(%1$L), 1, %2$L, 10)).status$$, 'unknown_sku'),
	('reserve: negative expected_version', $$SELECT (inventory.reserve(%1$L, 1, %2$L, 11, expected_version => -1)).status$$, 'version_conflict'),
	('reserve: largest expected_version', $$SELECT (inventory.reserve(%1$L, 1, %2$L, 12, expected_version => 9223372036854775807)).status$$, 'version_conflict'),
	('confirm: SQL-looking key', $$SELECT (inventory.confirm(%4$L || 'x''); DROP TABLE inventory.ledger; --', 2)).status$$, 'not_found'),
	('cancel: LIKE pattern key', $$SELECT (inventory.cancel('%%', 1)).status$$, 'not_found'),
	('extend: unknown key', $$SELECT (inventory.extend('nothing here', 1, '1 hour')).status$$, 'not_found'),
	('adjust: unknown sku', $$SELECT (inventory.adjust(%1$L || '-none', 5, %2$L, 13)).status$$, 'unknown_sku'),
	('expire: max_rows 0', $$SELECT inventory.expire(0)::text$$, '0'),
	('state: mixed case and white space', $$SELECT (E' \t ConFirmed \n'::inventory.state)::text$$, 'CONFIRMED');
UPDATE outcomes SET who = 'admin' WHERE what ~ '^(adjust|expire):';

CREATE FUNCTION pg_temp.run(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
	EXECUTE sql INTO r;
	RETURN r;
END $$;

SELECT is(CASE who WHEN 'admin' THEN pg_temp.admin_says(format(sql, :'p' || 'A', :'p' || 'fresh', NULL, :'p'))
				   ELSE pg_temp.run(format(sql, :'p' || 'A', :'p' || 'fresh', NULL, :'p')) END,
		  status, what)
  FROM outcomes ORDER BY what;

-- the hostile keys that were accepted are ordinary keys: replays are
-- duplicates, each is stored verbatim, once
SELECT is((inventory.reserve(:'p' || 'A', 1, :'p' || 'x''); DROP TABLE inventory.ledger; --')).status,
		  'duplicate', 'the SQL-looking key replays as a duplicate');
SELECT is(pg_temp.read1(format('SELECT count(*) FROM inventory.ledger WHERE order_id = %L',
							   :'p' || 'x''); DROP TABLE inventory.ledger; --')),
		  '1', 'and is stored once, verbatim');
SELECT is(pg_temp.read1(format($$SELECT count(*) FROM inventory.ledger
								  WHERE order_id IN (%L, %L, %L, %L)
									AND kind = 'reserve' AND sku = %L AND qty = 1 AND state = 'PENDING'$$,
							   :'p' || 'x''); DROP TABLE inventory.ledger; --', :'p' || '%s%n%x%d',
							   :'p' || E'line\n\tbreak', :'p' || U&'\+01F6D2 cart', :'p' || 'A')),
		  '4', 'every hostile key accepted is stored verbatim, as the reservation of one unit of A it was');
SELECT is(pg_temp.read1(format('SELECT count(*) FROM inventory.sku WHERE sku IN (%L, %L, %L)',
							   'A''; DELETE FROM inventory.sku; --', ' ' || :'p' || 'A' || ' ', upper(:'p' || 'A'))),
		  '0', 'the hostile SKU names were unknown, and created no SKU');

-- nothing else moved: five reservations of one unit were made above
SELECT is((SELECT on_hand FROM inventory.stock WHERE sku = :'p' || 'A'),
		  (SELECT on_hand FROM before), 'on_hand did not change');
SELECT is(inventory.available(:'p' || 'A'), (SELECT live FROM before) - 5,
		  'available changed only by the five accepted reservations');
SELECT is(pg_temp.read1(format('SELECT count(*) FROM inventory.ledger WHERE starts_with(order_id, %L)', :'p'))::bigint,
		  :'ledger_before'::bigint + 5, 'the ledger gained only their five rows');

-- cancel the reservations, and check the cache against the tables
\ir lib/settle.sql

SELECT * FROM finish();

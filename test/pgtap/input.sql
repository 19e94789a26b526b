-- input.sql: input validation, bad and hostile.  The "Limits and bad
-- input" table of docs/api.md -- each misuse raises its ERROR with its
-- SQLSTATE (and the documented message), a writing call in a read-only
-- transaction too, the limits themselves are accepted -- and table-driven
-- hostile inputs to every function and to the state type, each with its
-- documented SQLSTATE; afterwards no counter, no ledger row and no hold
-- has changed.  Then hostile inputs that are business outcomes, each with
-- its documented status: the hostile keys accepted are stored verbatim, as
-- ordinary keys, and nothing but them changes a counter or leaves a row.
-- The messages and details that sql/input.sql shows (qty 0, a sku too
-- long, ttl 0) are checked there, not here.
--
-- Runs in autocommit, so that "nothing changed" is checked on committed
-- state and on the shared cache.  The application (shop_app) makes the
-- calls of this session; the administrator's (restock, adjust, expire,
-- fold, direct DML) go through its connection (pg_temp.by_admin).  All
-- names, hostile keys included, carry a prefix unique to this run; the
-- reservations it makes are cancelled at the end, and the cache is
-- checked against the tables.

\set name input
\set role shop_app
\ir lib/setup.sql
\set p :prefix

-- names at and beyond the limits (in bytes: sku 63, order_id 255)
CREATE FUNCTION pg_temp.sku63() RETURNS text LANGUAGE sql STABLE
AS $$ SELECT rpad(pg_temp.n('L'), 63, 'x') $$;
CREATE FUNCTION pg_temp.sku64() RETURNS text LANGUAGE sql STABLE
AS $$ SELECT rpad(pg_temp.n('L'), 64, 'x') $$;
-- 63 bytes in fewer characters: fits
CREATE FUNCTION pg_temp.sku63mb() RETURNS text LANGUAGE sql STABLE
AS $$ SELECT rpad(pg_temp.n('M'), 63 - 3 * ((63 - octet_length(pg_temp.n('M'))) / 3), 'x') ||
			 repeat('€', (63 - octet_length(pg_temp.n('M'))) / 3) $$;
-- 64 or more bytes in fewer than 63 characters: too long
CREATE FUNCTION pg_temp.sku_mb_long() RETURNS text LANGUAGE sql STABLE
AS $$ SELECT pg_temp.n('M') || repeat('€', 16) $$;
CREATE FUNCTION pg_temp.key255() RETURNS text LANGUAGE sql STABLE
AS $$ SELECT rpad(pg_temp.n('k'), 255, 'x') $$;
CREATE FUNCTION pg_temp.key256() RETURNS text LANGUAGE sql STABLE
AS $$ SELECT rpad(pg_temp.n('k'), 256, 'x') $$;
-- buyer_ids at and beyond the limit (255 bytes), in one-byte and in
-- two-byte characters
CREATE FUNCTION pg_temp.buyer255() RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT repeat('b', 255) $$;
CREATE FUNCTION pg_temp.buyer256() RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT repeat('b', 256) $$;
CREATE FUNCTION pg_temp.buyer256mb() RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT repeat('é', 128) $$;

SELECT plan(136);

------------------------------------------------------------------------------
-- set-up: A has 10 units, 2 of them held by o1; and the limits themselves
------------------------------------------------------------------------------

SELECT pg_temp.restock('A', 10, 'r1') \g /dev/null
SELECT pg_temp.expect(inventory.reserve(pg_temp.n('A'), 2, pg_temp.n('o1'), ttl => '1 hour')) \g /dev/null

SELECT is(octet_length(pg_temp.sku63()), 63, 'sku63 is 63 bytes');
SELECT is((pg_temp.admin_r(format('inventory.restock(%L, 3, %L)', pg_temp.sku63(), pg_temp.key255()))).status, 'ok',
		  'a 63-byte sku and a 255-byte order_id are accepted');
SELECT is(inventory.available(pg_temp.sku63()), 3::bigint, 'the 63-byte SKU has its units');
SELECT is((inventory.reserve(pg_temp.sku63(), 1, pg_temp.n('o63'), ttl => '1 hour')).status, 'ok',
		  'a reservation of the 63-byte SKU');
SELECT is((inventory.confirm(pg_temp.n('o63'))).status, 'ok', 'and its confirmation');
SELECT is(octet_length(pg_temp.sku63mb()), 63, 'sku63mb is 63 bytes');
SELECT cmp_ok(length(pg_temp.sku63mb()), '<', 63, 'sku63mb has fewer than 63 characters');
SELECT is((inventory.reserve(pg_temp.sku63mb(), 1, rpad(pg_temp.n('omb'), 255, 'x'))).status, 'unknown_sku',
		  'a 63-byte multibyte sku and a 255-byte order_id are accepted by reserve (unknown_sku, not an error)');
SELECT is((inventory.cancel(rpad(pg_temp.n('z'), 255, 'x'))).status, 'not_found',
		  'a 255-byte order_id is accepted by cancel');
SELECT is(octet_length(pg_temp.buyer256mb()) || ' bytes in ' || length(pg_temp.buyer256mb()) || ' characters',
		  '256 bytes in 128 characters', 'buyer256mb is 256 bytes in fewer characters');
SELECT is(pg_temp.res_id(inventory.reserve(pg_temp.n('A'), 1, pg_temp.n('o-b255'), ttl => '1 hour',
										   buyer_id => pg_temp.buyer255())),
		  'ok=true status=ok sku=A qty=1 state=PENDING', 'a 255-byte buyer_id is accepted');
SELECT is(pg_temp.read1(format('SELECT octet_length(buyer_id) FROM inventory.ledger WHERE order_id = %L',
							   pg_temp.n('o-b255'))),
		  '255', '... and recorded whole');
SELECT is(pg_temp.admin_says('SELECT inventory.expire(0)'), '0', 'expire(0) expires nothing');

-- the state of everything this run owns, before the bad calls
SELECT pg_temp.snapshot() AS set_up \gset

------------------------------------------------------------------------------
-- reserve
------------------------------------------------------------------------------

SELECT throws_ok(format('SELECT inventory.reserve(NULL, 1, %L)', pg_temp.n('b1')),
				 '22004', 'sku must not be null', 'reserve: NULL sku');
SELECT throws_ok(format('SELECT inventory.reserve(%L, NULL, %L)', pg_temp.n('A'), pg_temp.n('b1')),
				 '22004', 'qty must not be null', 'reserve: NULL qty');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, NULL)', pg_temp.n('A')),
				 '22004', 'order_id must not be null', 'reserve: NULL order_id');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L, NULL)', pg_temp.n('A'), pg_temp.n('b1')),
				 '22004', 'batch_id must not be null', 'reserve: NULL batch_id');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 0, %L)', pg_temp.n('A'), pg_temp.n('b1')),
				 '22023', NULL, 'reserve: qty 0');
SELECT throws_ok(format('SELECT inventory.reserve(%L, -1, %L)', pg_temp.n('A'), pg_temp.n('b1')),
				 '22023', 'qty must be positive', 'reserve: negative qty');
SELECT throws_ok(format('SELECT inventory.reserve(%L, -9223372036854775808, %L)', pg_temp.n('A'), pg_temp.n('b1')),
				 '22023', 'qty must be positive', 'reserve: the smallest bigint as qty');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L)', '', pg_temp.n('b1')),
				 '22023', 'sku must not be empty', 'reserve: empty sku');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L)', pg_temp.n('A'), ''),
				 '22023', 'order_id must not be empty', 'reserve: empty order_id');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L)', pg_temp.sku64(), pg_temp.n('b1')),
				 '22001', NULL, 'reserve: 64-byte sku');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L)', pg_temp.sku_mb_long(), pg_temp.n('b1')),
				 '22001', 'sku is too long', 'reserve: sku over 63 bytes in fewer characters');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L)', pg_temp.n('A'), pg_temp.key256()),
				 '22001', 'order_id is too long', 'reserve: 256-byte order_id');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L, ttl => %L)', pg_temp.n('A'), pg_temp.n('b1'), '0'),
				 '22023', NULL, 'reserve: ttl 0');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L, ttl => %L)', pg_temp.n('A'), pg_temp.n('b1'), '-1 second'),
				 '22023', 'ttl must be positive', 'reserve: negative ttl');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L, ttl => %L)', pg_temp.n('A'), pg_temp.n('b1'), '1 day -25 hours'),
				 '22023', 'ttl must be positive', 'reserve: ttl negative in total');
-- bad input is refused even for a key that exists, and for a SKU that does not
SELECT throws_ok(format('SELECT inventory.reserve(%L, 0, %L)', pg_temp.n('A'), pg_temp.n('o1')),
				 '22023', 'qty must be positive', 'reserve: qty 0 with an existing key');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L, ttl => %L)', pg_temp.n('NOPE'), pg_temp.n('b1'), '0'),
				 '22023', 'ttl must be positive', 'reserve: ttl 0 for an unknown SKU');
-- buyer_id longer than 255 bytes: 22001 (docs/api.md, Limits and bad input)
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L, buyer_id => %L)', pg_temp.n('A'), pg_temp.n('b1'), pg_temp.buyer256()),
				 '22001', 'buyer_id is too long', 'reserve: 256-byte buyer_id');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L, buyer_id => %L)', pg_temp.n('A'), pg_temp.n('b1'), pg_temp.buyer256mb()),
				 '22001', 'buyer_id is too long', 'reserve: buyer_id over 255 bytes in fewer characters');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_cart(%L, ARRAY[%L], ARRAY[1], buyer_id => %L)',
						pg_temp.n('b1'), pg_temp.n('A'), pg_temp.buyer256()),
				 '22001', 'buyer_id is too long', 'reserve_cart: 256-byte buyer_id');
SELECT throws_ok(format('SELECT * FROM inventory.reserve_many(ARRAY[%L], ARRAY[1], ARRAY[%L], buyer_ids => ARRAY[%L])',
						pg_temp.n('A'), pg_temp.n('b1'), pg_temp.buyer256()),
				 '22001', 'buyer_id is too long', 'reserve_many: a 256-byte buyer_id');
-- reserve_now() runs only in autocommit: the application's own connection
SELECT throws_ok(pg_temp.by_app(format('SELECT inventory.reserve_now(%L, 1, %L, buyer_id => %L)',
									   pg_temp.n('A'), pg_temp.n('b1'), pg_temp.buyer256())),
				 '22001', 'buyer_id is too long', 'reserve_now: 256-byte buyer_id');

------------------------------------------------------------------------------
-- confirm, cancel, extend
------------------------------------------------------------------------------

SELECT throws_ok('SELECT inventory.confirm(NULL)', '22004', 'order_id must not be null', 'confirm: NULL order_id');
SELECT throws_ok(format('SELECT inventory.confirm(%L, NULL)', pg_temp.n('o1')),
				 '22004', 'batch_id must not be null', 'confirm: NULL batch_id');
SELECT throws_ok($$SELECT inventory.confirm('')$$, '22023', 'order_id must not be empty', 'confirm: empty order_id');
SELECT throws_ok(format('SELECT inventory.confirm(%L)', pg_temp.key256()),
				 '22001', 'order_id is too long', 'confirm: 256-byte order_id');

SELECT throws_ok('SELECT inventory.cancel(NULL)', '22004', 'order_id must not be null', 'cancel: NULL order_id');
SELECT throws_ok(format('SELECT inventory.cancel(%L, NULL)', pg_temp.n('o1')),
				 '22004', 'batch_id must not be null', 'cancel: NULL batch_id');
SELECT throws_ok($$SELECT inventory.cancel('')$$, '22023', 'order_id must not be empty', 'cancel: empty order_id');
SELECT throws_ok(format('SELECT inventory.cancel(%L)', pg_temp.key256()),
				 '22001', 'order_id is too long', 'cancel: 256-byte order_id');

SELECT throws_ok($$SELECT inventory.extend(NULL, 1, '1 hour')$$, '22004', 'order_id must not be null', 'extend: NULL order_id');
SELECT throws_ok(format($$SELECT inventory.extend(%L, NULL, '1 hour')$$, pg_temp.n('o1')),
				 '22004', 'batch_id must not be null', 'extend: NULL batch_id');
SELECT throws_ok(format('SELECT inventory.extend(%L, 1, NULL)', pg_temp.n('o1')),
				 '22004', 'ttl must not be null', 'extend: NULL ttl');
SELECT throws_ok(format($$SELECT inventory.extend(%L, 1, '0')$$, pg_temp.n('o1')),
				 '22023', 'ttl must be positive', 'extend: ttl 0');
SELECT throws_ok(format($$SELECT inventory.extend(%L, 1, '-5 minutes')$$, pg_temp.n('o1')),
				 '22023', 'ttl must be positive', 'extend: negative ttl');
SELECT throws_ok($$SELECT inventory.extend('', 1, '1 hour')$$, '22023', 'order_id must not be empty', 'extend: empty order_id');
SELECT throws_ok(format($$SELECT inventory.extend(%L, 1, '1 hour')$$, pg_temp.key256()),
				 '22001', 'order_id is too long', 'extend: 256-byte order_id');

------------------------------------------------------------------------------
-- restock, adjust
------------------------------------------------------------------------------

SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(NULL, 1, %L)', pg_temp.n('b2'))),
				 '22004', 'sku must not be null', 'restock: NULL sku');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, NULL, %L)', pg_temp.n('A'), pg_temp.n('b2'))),
				 '22004', 'qty must not be null', 'restock: NULL qty');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 1, NULL)', pg_temp.n('A'))),
				 '22004', 'order_id must not be null', 'restock: NULL order_id');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 1, %L, NULL)', pg_temp.n('A'), pg_temp.n('b2'))),
				 '22004', 'batch_id must not be null', 'restock: NULL batch_id');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 0, %L)', pg_temp.n('A'), pg_temp.n('b2'))),
				 '22023', 'qty must be positive', 'restock: qty 0');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, -5, %L)', pg_temp.n('A'), pg_temp.n('b2'))),
				 '22023', 'qty must be positive', 'restock: negative qty');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 1, %L)', '', pg_temp.n('b2'))),
				 '22023', 'sku must not be empty', 'restock: empty sku');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 1, %L)', pg_temp.n('A'), '')),
				 '22023', 'order_id must not be empty', 'restock: empty order_id');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 1, %L)', pg_temp.sku64(), pg_temp.n('b2'))),
				 '22001', 'sku is too long', 'restock: 64-byte sku');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 1, %L)', pg_temp.n('A'), pg_temp.key256())),
				 '22001', 'order_id is too long', 'restock: 256-byte order_id');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.restock(%L, 9223372036854775807, %L)', pg_temp.n('A'), pg_temp.n('b2'))),
				 '22003', NULL, 'restock: on_hand beyond bigint');
SELECT throws_ok(pg_temp.by_admin(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
						  VALUES (%L, 1, 'restock', %L, 9223372036854775807)$$, pg_temp.n('b2'), pg_temp.n('A'))),
				 '22003', NULL, 'a direct restock beyond bigint');

SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(NULL, 1, %L)', pg_temp.n('b3'))),
				 '22004', 'sku must not be null', 'adjust: NULL sku');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, NULL, %L)', pg_temp.n('A'), pg_temp.n('b3'))),
				 '22004', 'on_hand must not be null', 'adjust: NULL on_hand');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 1, NULL)', pg_temp.n('A'))),
				 '22004', 'order_id must not be null', 'adjust: NULL order_id');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 1, %L, NULL)', pg_temp.n('A'), pg_temp.n('b3'))),
				 '22004', 'batch_id must not be null', 'adjust: NULL batch_id');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, -1, %L)', pg_temp.n('A'), pg_temp.n('b3'))),
				 '22023', 'on_hand must not be negative', 'adjust: negative on_hand');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 1, %L)', '', pg_temp.n('b3'))),
				 '22023', 'sku must not be empty', 'adjust: empty sku');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 1, %L)', pg_temp.n('A'), '')),
				 '22023', 'order_id must not be empty', 'adjust: empty order_id');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 1, %L)', pg_temp.sku64(), pg_temp.n('b3'))),
				 '22001', 'sku is too long', 'adjust: 64-byte sku');
SELECT throws_ok(pg_temp.by_admin(format('SELECT inventory.adjust(%L, 1, %L)', pg_temp.n('A'), pg_temp.key256())),
				 '22001', 'order_id is too long', 'adjust: 256-byte order_id');

------------------------------------------------------------------------------
-- available, expire
------------------------------------------------------------------------------

SELECT throws_ok('SELECT inventory.available(NULL)', '22004', 'sku must not be null', 'available: NULL sku');
SELECT throws_ok($$SELECT inventory.available('')$$, '22023', 'sku must not be empty', 'available: empty sku');
SELECT throws_ok(format('SELECT inventory.available(%L)', pg_temp.sku64()),
				 '22001', 'sku is too long', 'available: 64-byte sku');
SELECT throws_ok(pg_temp.by_admin('SELECT inventory.expire(-1)'), '22023', NULL, 'expire: negative max_rows');
SELECT throws_ok(pg_temp.by_admin('SELECT inventory.expire(-2147483648)'), '22023', NULL, 'expire: the smallest int as max_rows');

------------------------------------------------------------------------------
-- unknown state names
------------------------------------------------------------------------------

SELECT throws_ok($$SELECT 'bogus'::inventory.state$$, '22P02', NULL, 'state: unknown name');
SELECT throws_ok($$SELECT ''::inventory.state$$, '22P02', NULL, 'state: empty name');
SELECT throws_ok($$SELECT 'PENDINGX'::inventory.state$$, '22P02', NULL, 'state: a valid name with a suffix');
SELECT throws_ok($$SELECT 'PEND ING'::inventory.state$$, '22P02', NULL, 'state: white space inside the name');
SELECT throws_ok($$SELECT inventory.can_transition('PENDING', 'SHIPPED')$$, '22P02', NULL, 'can_transition: unknown name');
SELECT throws_ok($$SELECT inventory.is_final('DONE')$$, '22P02', NULL, 'is_final: unknown name');
SELECT throws_ok(pg_temp.by_admin(format($$UPDATE inventory.ledger SET state = 'LOST' WHERE order_id = %L$$, pg_temp.n('o1'))),
				 '22P02', NULL, 'UPDATE of the ledger to an unknown state');
SELECT throws_ok(pg_temp.by_admin(format($$INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, state)
										   VALUES (%L, 1, 'reserve', %L, 1, 'NEW')$$, pg_temp.n('b4'), pg_temp.n('A'))),
				 '22P02', NULL, 'INSERT into the ledger with an unknown state');
SELECT ok(pg_temp.error_detail($$SELECT 'bogus'::inventory.state$$) ~ '^22P02: ' AND
		  pg_temp.error_detail($$SELECT 'bogus'::inventory.state$$) ~ 'PENDING' AND
		  pg_temp.error_detail($$SELECT 'bogus'::inventory.state$$) ~ 'CONFIRMED' AND
		  pg_temp.error_detail($$SELECT 'bogus'::inventory.state$$) ~ 'CANCELLED' AND
		  pg_temp.error_detail($$SELECT 'bogus'::inventory.state$$) ~ 'EXPIRED',
		  'the 22P02 error lists the valid names');

------------------------------------------------------------------------------
-- hostile input that must fail, table-driven
------------------------------------------------------------------------------

-- the SQL (with %1$s for the SKU, %2$s for a fresh key, %3$s for the key
-- of a reservation), the SQLSTATE, and who calls: the application, or the
-- administrator (by its connection)
CREATE TEMP TABLE errors (what text, sql text, sqlstate text, who text DEFAULT 'app');
INSERT INTO errors (what, sql, sqlstate) VALUES
	-- signs and sizes of numbers
	('restock: smallest bigint', $$SELECT inventory.restock(%1$L, -9223372036854775808, %2$L)$$, '22023'),
	('qty beyond bigint', $$SELECT inventory.reserve(%1$L, '9223372036854775808'::bigint, %2$L)$$, '22003'),
	-- keys
	('order_id of 1 MB', $$SELECT inventory.reserve(%1$L, 1, repeat('o', 1048576))$$, '22001'),
	('confirm: order_id of 1 MB', $$SELECT inventory.confirm(repeat('o', 1048576))$$, '22001'),
	('invalid UTF-8 bytes in sku', $$SELECT inventory.reserve(convert_from('\xc328', 'UTF8'), 1, %2$L)$$, '22021'),
	-- ttl
	('ttl -178000000 years', $$SELECT inventory.reserve(%1$L, 1, %2$L, ttl => '-178000000 years')$$, '22008'),
	('ttl 178000000 years', $$SELECT inventory.reserve(%1$L, 1, %2$L, ttl => '178000000 years')$$, '22008'),
	('extend: ttl 178000000 years', $$SELECT inventory.extend(%2$L, 1, '178000000 years')$$, '22008'),
	-- counts of rows
	('fold: max_rows -2147483648', $$SELECT inventory.fold(-2147483648)$$, '22023'),
	-- a key reused for another movement
	('reserve: key of another quantity', $$SELECT inventory.reserve(%1$L, 3, %3$L)$$, '23505'),
	('restock: key of a reservation', $$SELECT inventory.restock(%1$L, 2, %3$L)$$, '23505'),
	-- state names
	('state: Cyrillic E', $$SELECT U&'P\0415NDING'::inventory.state$$, '22P02'),
	('state: SQL', $$SELECT 'PENDING''; DROP TABLE inventory.ledger; --'::inventory.state$$, '22P02'),
	('state: NULL spelled', $$SELECT 'NULL'::inventory.state$$, '22P02'),
	('state: 1 MB', $$SELECT repeat('X', 1048576)::inventory.state$$, '22P02');
UPDATE errors SET who = 'admin' WHERE what ~ '^(restock|adjust|expire|fold):';

SELECT throws_ok(CASE who WHEN 'admin' THEN pg_temp.by_admin(format(sql, :'p' || 'A', :'p' || 'fresh', :'p' || 'o1'))
						  ELSE format(sql, :'p' || 'A', :'p' || 'fresh', :'p' || 'o1') END,
				 sqlstate, NULL, what)
  FROM errors ORDER BY what;

------------------------------------------------------------------------------
-- a read-only transaction reads, and a writing call in it is ERROR 25006
------------------------------------------------------------------------------

-- (committed, not rolled back: pgTAP records its tests in temporary
-- tables, which a read-only transaction may write)
BEGIN READ ONLY;
SELECT is(inventory.available(pg_temp.n('A')), 7::bigint, 'a read-only transaction reads available()');
SELECT throws_ok(format('SELECT inventory.reserve(%L, 1, %L)', pg_temp.n('A'), pg_temp.n('ro')),
				 '25006', NULL, 'reserve in a read-only transaction: 25006');
SELECT throws_ok(format('SELECT inventory.confirm(%L)', pg_temp.n('o1')),
				 '25006', NULL, 'confirm in a read-only transaction: 25006');
COMMIT;

------------------------------------------------------------------------------
-- PREPARE TRANSACTION after changing inventory: ERROR 0A000
------------------------------------------------------------------------------

-- PREPARE TRANSACTION cannot run inside a function, so psql runs it and
-- its SQLSTATE is asserted afterwards.  The transaction touches no
-- temporary object (that would be refused with 0A000 too).
SELECT set_config('inventory_test.gid', current_setting('inventory_test.prefix') || 'gid', false) AS gid \gset
\set ON_ERROR_STOP 0
BEGIN;
SELECT inventory.reserve(:'prefix' || 'A', 1, :'prefix' || 'prep', ttl => '1 hour') \g /dev/null
PREPARE TRANSACTION :'gid';
\set prep_sqlstate :SQLSTATE
\set ON_ERROR_STOP 1
SELECT count(*) > 0 AS prep_leaked FROM pg_prepared_xacts WHERE gid = :'gid' \gset
\if :prep_leaked
ROLLBACK PREPARED :'gid';
\endif
SELECT is(:'prep_sqlstate'::text, '0A000', 'PREPARE TRANSACTION after a reserve: 0A000');
SELECT is(:'prep_leaked'::text, 'f', 'no transaction was prepared');
SELECT is(pg_temp.read1(format('SELECT count(*) FROM inventory.ledger WHERE order_id = %L', pg_temp.n('prep'))), '0',
		  'the refused PREPARE rolled the reservation back');

------------------------------------------------------------------------------
-- nothing changed
------------------------------------------------------------------------------

SELECT results_eq('SELECT * FROM pg_temp.my_stock ORDER BY sku', 'SELECT * FROM snap_stock ORDER BY sku',
				  'after the bad calls: inventory.stock unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_ledger ORDER BY order_id, batch_id',
				  'SELECT * FROM snap_ledger ORDER BY order_id, batch_id',
				  'after the bad calls: inventory.ledger unchanged');
SELECT results_eq('SELECT * FROM pg_temp.my_live ORDER BY sku', 'SELECT * FROM snap_live ORDER BY sku',
				  'after the bad calls: available() and holds unchanged');
SELECT is((SELECT string_agg(holds::text, ',') FROM pg_temp.my_live),
		  '0,0', 'no hold is left behind');
SELECT is(pg_temp.read1(format('SELECT count(*) FROM inventory.sku WHERE starts_with(sku, %L)',
							   current_setting('inventory_test.prefix'))),
		  '2', 'no SKU was created by a bad call');

------------------------------------------------------------------------------
-- hostile input that is a business outcome, table-driven
------------------------------------------------------------------------------

CREATE TEMP TABLE before AS
	SELECT on_hand, reserved, version, inventory.available(sku) AS live
	  FROM inventory.stock WHERE sku = :'p' || 'A';
SELECT pg_temp.read1(format('SELECT count(*) FROM inventory.ledger WHERE starts_with(order_id, %L)', :'p'))
	AS ledger_before \gset

-- the SQL (%4$L: the run's prefix, which the hostile keys carry too), the
-- status, who calls
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
	('state: mixed case and white space', $$SELECT (E' \t ConFirmed \n'::inventory.state)::text$$, 'CONFIRMED');
UPDATE outcomes SET who = 'admin' WHERE what ~ '^(adjust|expire):';

-- what a query answers, in this session
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

-- settle what is left (o1, o-b255, the hostile keys' reservations), and
-- check the cache against the tables
\ir lib/settle.sql

SELECT * FROM finish();

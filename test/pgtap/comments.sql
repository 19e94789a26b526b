-- comments.sql: \df+ and \d+ explain everything a user sees: every table,
-- view, type and function of the extension, every column of its views and
-- of inventory.result, and the ledger's foreign key, have a comment.  The
-- catalogs are everyone's to read: the monitoring role reads them here.

\set name comments
\set role shop_monitor
\ir lib/setup.sql

BEGIN;
SELECT plan(6);

SELECT is_empty($$
SELECT p.oid::regprocedure FROM pg_proc p
 WHERE p.pronamespace = 'inventory'::regnamespace
   AND p.proname NOT LIKE 'state\_%'
   AND obj_description(p.oid, 'pg_proc') IS NULL$$,
	'every function (but the state type''s support functions) has a comment');

SELECT is_empty($$
SELECT c.oid::regclass FROM pg_class c
 WHERE c.relnamespace = 'inventory'::regnamespace AND c.relkind IN ('r', 'v')
   AND obj_description(c.oid, 'pg_class') IS NULL$$,
	'every table and view has a comment');

SELECT is_empty($$
SELECT c.oid::regclass || '.' || a.attname FROM pg_class c
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE c.relnamespace = 'inventory'::regnamespace AND c.relkind = 'v'
   AND col_description(c.oid, a.attnum) IS NULL$$,
	'every column of every view has a comment');

SELECT is_empty($$
SELECT a.attname FROM pg_attribute a
 WHERE a.attrelid = 'inventory.result'::regclass AND a.attnum > 0
   AND col_description(a.attrelid, a.attnum) IS NULL$$,
	'every column of inventory.result has a comment');

SELECT is_empty($$
SELECT t.oid::regtype FROM pg_type t
 WHERE t.typnamespace = 'inventory'::regnamespace AND t.typtype IN ('b', 'c') AND t.typcategory <> 'A'
   AND (t.typrelid = 0 OR (SELECT relkind FROM pg_class WHERE oid = t.typrelid) = 'c')
   AND obj_description(t.oid, 'pg_type') IS NULL$$,
	'every type has a comment');

SELECT isnt(obj_description(c.oid, 'pg_constraint'), NULL,
	'the ledger''s foreign key says why its checks are disabled')
  FROM pg_constraint c WHERE c.conname = 'ledger_sku_fkey';

SELECT * FROM finish();
ROLLBACK;

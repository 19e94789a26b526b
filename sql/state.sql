-- inventory.state: a one-byte base type for the reservation lifecycle;
-- PUBLIC may use it, so the application does
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS inventory;
RESET client_min_messages;
\ir test/roles.sql
\c - shop_app
SET search_path = public, inventory;

-- input is case-insensitive and ignores surrounding white space
SELECT 'PENDING'::state AS a, 'confirmed'::state AS b,
       ' Cancelled '::state AS c, E'\texpired\n'::state AS d;

-- unknown names are refused, listing the valid ones
SELECT 'PAID'::state;
SELECT ''::state;
SELECT 'PENDING X'::state;

-- one byte on disk, passed by value
SELECT pg_column_size('EXPIRED'::state) AS bytes,
       typlen, typbyval FROM pg_type WHERE oid = 'inventory.state'::regtype;

-- the binary form is the name (a COPY through a server file: the
-- superuser's, test scaffolding)
SELECT state_send('CONFIRMED');
\c - postgres
SET search_path = public, inventory;
CREATE TEMP TABLE states_bin (s state);
INSERT INTO states_bin VALUES ('PENDING'), ('CONFIRMED'), ('CANCELLED'), ('EXPIRED');
COPY states_bin TO '/tmp/inventory_regress_states.bin' (FORMAT binary);
TRUNCATE states_bin;
COPY states_bin FROM '/tmp/inventory_regress_states.bin' (FORMAT binary);
SELECT s FROM states_bin ORDER BY s;
\c - shop_app
SET search_path = public, inventory;

-- the states sort in lifecycle order
SELECT s FROM unnest('{EXPIRED,PENDING,CANCELLED,CONFIRMED}'::state[]) s ORDER BY s;
SELECT 'PENDING'::state < 'CONFIRMED' AS lt, 'EXPIRED'::state >= 'CANCELLED' AS ge,
       'PENDING'::state = 'pending' AS eq, 'PENDING'::state <> 'EXPIRED' AS ne,
       'CANCELLED'::state <= 'CONFIRMED' AS le, 'CONFIRMED'::state > 'EXPIRED' AS gt;

-- btree and hash indexes, sorting and grouping
CREATE TEMP TABLE many (s state);
INSERT INTO many
SELECT ('{PENDING,CONFIRMED,CANCELLED,EXPIRED}'::state[])[1 + i % 4]
  FROM generate_series(0, 999) i;
CREATE INDEX many_btree ON many (s);
CREATE INDEX many_hash ON many USING hash (s);
ANALYZE many;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM many WHERE s = 'EXPIRED';
SELECT count(*) FROM many WHERE s = 'EXPIRED';
SELECT count(*) FROM many WHERE s > 'CONFIRMED';
DROP INDEX many_btree;
EXPLAIN (COSTS OFF) SELECT count(*) FROM many WHERE s = 'EXPIRED';
SELECT count(*) FROM many WHERE s = 'EXPIRED';
RESET enable_seqscan;
RESET enable_bitmapscan;
SET enable_hashagg = on;
SELECT s, count(*) FROM many GROUP BY s ORDER BY s;
SET enable_hashagg = off;
SELECT s, count(*) FROM many GROUP BY s ORDER BY s;
RESET enable_hashagg;
SELECT DISTINCT s FROM many ORDER BY s DESC;

-- the state machine: PENDING to any final state, nothing else
SELECT f AS "from", t AS "to", can_transition(f, t)
  FROM unnest('{PENDING,CONFIRMED,CANCELLED,EXPIRED}'::state[]) f,
       unnest('{PENDING,CONFIRMED,CANCELLED,EXPIRED}'::state[]) t
 ORDER BY f, t;
SELECT s, is_final(s)
  FROM unnest('{PENDING,CONFIRMED,CANCELLED,EXPIRED}'::state[]) s ORDER BY s;
SELECT can_transition(NULL, 'EXPIRED') IS NULL AS strict;

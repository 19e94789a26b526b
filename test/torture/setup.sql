-- test/torture/setup.sql: the world of the torture test (test/t/011_torture.pl).
--
-- SKUs: 4 hot ones that every client fights over, 500 cold ones with a few
-- units each, and NEW-0 .. NEW-9, which do not exist until a restock
-- creates them during the run.
--
-- Keys: a key always means the same movement, so calling it again is a
-- true replay.  Key number n is "born" at n / 100 seconds since the epoch
-- (torture.key_now()) and names reservation 'k<n>', restock 'r<n>' and
-- stocktake 'a<n>', of the SKU and quantity torture.reservation(n),
-- torture.restock(n) and torture.stocktake(n) derive from n.  A script
-- picks a key born up to 10 s ago (a live one: some clients reserve it,
-- others confirm, cancel, extend or expire it, others replay it) or, now
-- and then, one born up to the length of the whole run ago (an old replay;
-- the test passes that length, in keys, to pgbench as :oldest).
--
-- torture.judge() holds every result of the API against the outcome table
-- of docs/api.md and raises an ERROR on any departure: the pgbench client
-- aborts and the test fails with the message; torture.judge_now() does the
-- same for the status reserve_now() answers.  The views at the end are
-- what the checkpoints of the test assert empty.
--
-- Who: the superuser has made the extension, the login roles and the
-- schema torture, owned by the administrator, shop_admin, who runs this
-- file: its restocks and writes are the administrator's, and so are the
-- tables, views and functions here, which read inventory.sku and
-- inventory.ledger with the administrator's rights.  The load's scripts
-- run as the role whose calls they make (shop_app, shop_admin,
-- shop_monitor); the functions that check a call of the application's
-- against the tables in its own transaction (torture.judge_now(),
-- torture.has_row() and the others below, torture.within() and
-- torture.on_sale() in the test) are SECURITY DEFINER: the checks read
-- as the administrator, the calls run with the caller's rights alone.

------------------------------------------------------------------------------
-- SKUs
------------------------------------------------------------------------------

SELECT count(inventory.restock('HOT-' || g, 200, 'init-hot-' || g)) FROM generate_series(0, 3) g;
SELECT count(inventory.restock('COLD-' || g, 10, 'init-cold-' || g)) FROM generate_series(0, 249) g;
-- half the cold SKUs arrive the administrator's way: a base row of their own
INSERT INTO inventory.sku (sku, on_hand) SELECT 'COLD-' || g, 10 FROM generate_series(250, 499) g;

-- What a movement adds to its SKU's counters, written here again from the
-- docs/api.md rather than taken from the extension's effect_* functions: on_hand
-- grows by restocks and stocktakes and shrinks by confirmed reservations;
-- reserved is what PENDING reservations hold; a version counts every
-- committed change (a reservation once when made, once when settled).
CREATE FUNCTION torture.on_hand_effect(kind text, state inventory.state, qty bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE
AS $$ SELECT CASE WHEN kind IN ('restock', 'adjust') THEN qty
				  WHEN state = 'CONFIRMED' THEN -qty ELSE 0 END $$;
CREATE FUNCTION torture.reserved_effect(kind text, state inventory.state, qty bigint)
RETURNS bigint LANGUAGE sql IMMUTABLE
AS $$ SELECT CASE WHEN kind = 'reserve' AND state = 'PENDING' THEN qty ELSE 0 END $$;
CREATE FUNCTION torture.version_effect(kind text, state inventory.state)
RETURNS bigint LANGUAGE sql IMMUTABLE
AS $$ SELECT CASE WHEN kind = 'reserve' AND state <> 'PENDING' THEN 2 ELSE 1 END $$;

-- The base counters each SKU had before any movement: its base row now,
-- minus what the worker may already have folded into it.  A SKU created
-- later by a restock starts from 0.
CREATE TABLE torture.initial AS
SELECT s.sku,
	   s.on_hand - coalesce(sum(torture.on_hand_effect(l.kind, l.state, l.qty)) FILTER (WHERE l.folded), 0) AS on_hand,
	   s.version - coalesce(sum(torture.version_effect(l.kind, l.state)) FILTER (WHERE l.folded), 0) AS version
  FROM inventory.sku s LEFT JOIN inventory.ledger l USING (sku)
 GROUP BY s.sku, s.on_hand, s.version;

-- Folded movements deleted by the administrator (admin.sql), kept here so
-- that the counters can still be computed from every movement ever made.
CREATE TABLE torture.deleted (LIKE inventory.ledger);

------------------------------------------------------------------------------
-- Keys
------------------------------------------------------------------------------

-- The number of the key born last: 100 keys a second.
CREATE FUNCTION torture.key_now() RETURNS bigint LANGUAGE sql VOLATILE
AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 100)::bigint $$;

-- The key born back/100 seconds ago.
CREATE FUNCTION torture.key(back int) RETURNS bigint LANGUAGE sql VOLATILE
AS $$ SELECT torture.key_now() - back $$;

-- a well-mixed non-negative number from n and a salt
CREATE FUNCTION torture.mix(n bigint, salt int) RETURNS bigint LANGUAGE sql IMMUTABLE
AS $$ SELECT abs(hashint8(n * 7 + salt)::bigint) $$;

-- The movements of key number n, whatever the time.  Reservation 'k<n>':
-- 1-3 units, 60% of them of a hot SKU.  (The lines of a cart under a fresh
-- order id take a reservation() of a random number of their own.)
CREATE FUNCTION torture.reservation(n bigint, OUT sku text, OUT qty bigint)
LANGUAGE sql IMMUTABLE
AS $$
	SELECT CASE WHEN h % 10 < 6 THEN 'HOT-' || (h / 10 % 4) ELSE 'COLD-' || (h / 10 % 500) END,
		   1 + h / 10000 % 3
	  FROM torture.mix(n, 1) h
$$;

-- Restock 'r<n>': 5-24 units of a hot SKU (40%), 1-5 of a cold one (55%),
-- or 5 of NEW-0 .. NEW-9, created by the first of them (5%).
CREATE FUNCTION torture.restock(n bigint, OUT sku text, OUT qty bigint)
LANGUAGE sql IMMUTABLE
AS $$
	SELECT CASE WHEN h % 20 < 8 THEN 'HOT-' || (h / 20 % 4)
				WHEN h % 20 < 19 THEN 'COLD-' || (h / 20 % 500)
				ELSE 'NEW-' || (h / 20 % 10) END,
		   CASE WHEN h % 20 < 8 THEN 5 + h / 1000 % 20
				WHEN h % 20 < 19 THEN 1 + h / 1000 % 5
				ELSE 5 END
	  FROM torture.mix(n, 2) h
$$;

-- Stocktake 'a<n>': a hot SKU counted at 50-249 units, a cold one at 0-14.
CREATE FUNCTION torture.stocktake(n bigint, OUT sku text, OUT counted bigint)
LANGUAGE sql IMMUTABLE
AS $$
	SELECT CASE WHEN h % 2 = 0 THEN 'HOT-' || (h / 2 % 4) ELSE 'COLD-' || (h / 2 % 500) END,
		   CASE WHEN h % 2 = 0 THEN 50 + h / 1000 % 200 ELSE h / 1000 % 15 END
	  FROM torture.mix(n, 3) h
$$;

------------------------------------------------------------------------------
-- Checking every result
------------------------------------------------------------------------------

-- The outcome table of docs/api.md: for each call, the legal combinations of
-- status, ok and state.
CREATE TABLE torture.outcome (op text, status text, ok boolean, state inventory.state);
INSERT INTO torture.outcome VALUES
	('reserve', 'ok', true, 'PENDING'),
	('reserve', 'duplicate', true, 'PENDING'),
	('reserve', 'duplicate', true, 'CONFIRMED'),
	('reserve', 'duplicate', true, 'CANCELLED'),
	('reserve', 'duplicate', true, 'EXPIRED'),
	('reserve', 'insufficient', false, NULL),
	('reserve', 'version_conflict', false, NULL),
	('reserve', 'unknown_sku', false, NULL),
	('confirm', 'ok', true, 'CONFIRMED'),
	('confirm', 'duplicate', true, 'CONFIRMED'),
	('confirm', 'cancelled', false, 'CANCELLED'),
	('confirm', 'expired', false, 'EXPIRED'),
	('confirm', 'not_found', false, NULL),
	('cancel', 'ok', true, 'CANCELLED'),
	('cancel', 'confirmed', false, 'CONFIRMED'),
	('cancel', 'duplicate', true, 'CANCELLED'),
	('cancel', 'expired', true, 'EXPIRED'),
	('cancel', 'not_found', false, NULL),
	('extend', 'ok', true, 'PENDING'),
	('extend', 'confirmed', false, 'CONFIRMED'),
	('extend', 'cancelled', false, 'CANCELLED'),
	('extend', 'expired', false, 'EXPIRED'),
	('extend', 'not_found', false, NULL),
	('restock', 'ok', true, NULL),
	('restock', 'duplicate', true, NULL),
	('adjust', 'ok', true, NULL),
	('adjust', 'duplicate', true, NULL),
	('adjust', 'insufficient', false, NULL),
	('adjust', 'version_conflict', false, NULL),
	('adjust', 'unknown_sku', false, NULL);

-- One counter per outcome, for the report at the end.  Unlogged sequences:
-- counting neither writes WAL nor takes a transaction id.
DO $$
DECLARE
	o record;
BEGIN
	FOR o IN SELECT DISTINCT op, status FROM torture.outcome LOOP
		EXECUTE format('CREATE UNLOGGED SEQUENCE torture.%I', o.op || '_' || o.status);
	END LOOP;
END
$$;

CREATE VIEW torture.outcome_counts AS
SELECT op, status,
	   coalesce(pg_sequence_last_value(format('torture.%I', op || '_' || status)::regclass), 0) AS calls
  FROM (SELECT DISTINCT op, status FROM torture.outcome) o;

-- Raises the ERROR that stops the client and fails the test.
CREATE FUNCTION torture.fail(op text, r inventory.result, why text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'TORTURE: % returned % : %', op, r, why;
END
$$;

-- Checks the result r of a call, and returns its status.
--   op         reserve, confirm, cancel, extend, restock or adjust
--   sku, qty   the movement of the key (for adjust, qty is the count)
--   ttl        the ttl of a reserve or extend, to check expires_at
--   wrote      whether the call's statement took a transaction id, for a
--              statement alone in its transaction; NULL when unknown
--   versioned  whether the call passed an expected_version
--   allowed    the statuses the script's situation allows, when it knows
CREATE FUNCTION torture.judge(op text, r inventory.result, sku text, qty bigint,
							  ttl interval DEFAULT NULL, wrote boolean DEFAULT NULL,
							  versioned boolean DEFAULT false, allowed text[] DEFAULT NULL)
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	IF NOT r.status = ANY (coalesce(allowed, ARRAY[r.status])) THEN
		PERFORM torture.fail(op, r, format('expected one of %s here', allowed));
	END IF;
	IF NOT EXISTS (SELECT FROM torture.outcome o
					WHERE o.op = judge.op AND o.status = r.status AND o.ok = r.ok
					  AND o.state IS NOT DISTINCT FROM r.state) THEN
		PERFORM torture.fail(op, r, 'not in the outcome table');
	END IF;
	IF r.status = 'version_conflict' AND NOT versioned THEN
		PERFORM torture.fail(op, r, 'version_conflict without expected_version');
	END IF;
	-- SKUs other than NEW-x exist from the start and are never deleted
	IF r.status = 'unknown_sku' AND judge.sku NOT LIKE 'NEW-%' THEN
		PERFORM torture.fail(op, r, 'an existing SKU reported unknown');
	END IF;
	IF r.status = 'not_found' THEN
		IF NOT (r.sku, r.qty, r.available, r.version, r.expires_at) IS NULL THEN
			PERFORM torture.fail(op, r, 'not_found with a movement');
		END IF;
	ELSE
		-- the movement of the key: the same SKU and quantity, always
		IF r.sku IS DISTINCT FROM judge.sku OR r.qty IS DISTINCT FROM judge.qty THEN
			PERFORM torture.fail(op, r, format('the key belongs to %s x %s', judge.sku, judge.qty));
		END IF;
		-- live counters never show an oversold SKU
		IF r.status <> 'unknown_sku' AND NOT (r.available >= 0 AND r.version >= 0) THEN
			PERFORM torture.fail(op, r, 'negative available or version');
		END IF;
		IF (r.state IS NOT NULL) <> (r.expires_at IS NOT NULL) THEN
			PERFORM torture.fail(op, r, 'expires_at without a reservation');
		END IF;
	END IF;
	-- (available counts the units the caller's own transaction adds, which it
	-- cannot reserve before it commits: the torture's transactions never
	-- restock or cancel a SKU and then reserve it, so here it must hold)
	IF op = 'reserve' AND r.status = 'insufficient' AND r.available >= r.qty THEN
		PERFORM torture.fail(op, r, 'insufficient with enough available');
	END IF;
	-- "now" is the start of the calling statement, which is ours
	IF op IN ('reserve', 'extend') AND r.status = 'ok' AND ttl IS NOT NULL
	   AND r.expires_at <> statement_timestamp() + ttl THEN
		PERFORM torture.fail(op, r, format('expires_at is not now + %s', ttl));
	END IF;
	-- a refused or replayed call writes nothing: not even a transaction id
	IF wrote IS NOT NULL AND op IN ('reserve', 'restock')
	   AND wrote <> (r.status = 'ok') THEN
		PERFORM torture.fail(op, r, CASE WHEN wrote THEN 'wrote without effect' ELSE 'took effect without writing' END);
	END IF;
	IF wrote AND op = 'adjust' AND r.status = 'duplicate' THEN
		PERFORM torture.fail(op, r, 'a replay wrote');
	END IF;
	PERFORM nextval(format('torture.%I', op || '_' || r.status));
	RETURN r.status;
END
$$;

-- An assertion inside a script.
CREATE FUNCTION torture.must(cond boolean, what text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	IF cond IS NOT TRUE THEN
		RAISE EXCEPTION 'TORTURE: %', what;
	END IF;
END
$$;

-- reserve_now() answers a status alone, and commits on its own: its
-- answers are judged here and logged in torture.now_log, which the
-- checkpoints hold against the ledger.
CREATE TABLE torture.now_log (order_id text, shared boolean, sku text, qty bigint, buyer_id text,
							  ttl interval, status text, made_at timestamptz,
							  returned_at timestamptz, lane boolean);

-- Checks the status that a reserve_now() call of the calling statement
-- answered (the call is an argument of this one: it has returned), and logs
-- it, in the statement's transaction.
--   order_id, sku, qty, ttl, buyer   the call's arguments
--   shared    the key is a live key of reserve.sql's, which others reserve,
--             settle and replay; otherwise the key is the call's own (new)
--   existed   the key had a committed row when the statement began (read
--             with the statement's snapshot): the answer is a duplicate
--   allowed   the statuses the script's situation allows
CREATE FUNCTION torture.judge_now(status text, order_id text, sku text, qty bigint, ttl interval,
								  buyer text, shared boolean, existed boolean, allowed text[])
RETURNS text LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
	returned timestamptz := clock_timestamp();
	-- a reservation through the express lane is the writer's transaction;
	-- without a writer the call reserves in its own, as reserve() does
	wrote boolean := pg_current_xact_id_if_assigned() IS NOT NULL;
	l inventory.ledger;
	what text := format('reserve_now(%s, %s, %s, buyer %s) at %s answered %s',
						sku, qty, order_id, buyer, statement_timestamp(), status);
BEGIN
	PERFORM torture.must(status = ANY (allowed), format('%s, expected one of %s', what, allowed));
	PERFORM torture.must(NOT existed OR status = 'duplicate', what || ', but the key was reserved before the call');
	-- a refusal or a replay writes nothing, not even a transaction id
	PERFORM torture.must(status = 'ok' OR NOT wrote, what || ', and took a transaction id');
	-- the key's row as it is now: each statement of a VOLATILE function sees
	-- what has committed since the call's statement began
	SELECT * INTO l FROM inventory.ledger g WHERE g.order_id = judge_now.order_id AND g.batch_id = 1;
	IF status IN ('ok', 'duplicate') THEN
		PERFORM torture.must(l.order_id IS NOT NULL, what || ', but the key has no row');
		PERFORM torture.must(l.kind = 'reserve' AND l.sku = judge_now.sku AND l.qty = judge_now.qty
							 AND l.buyer_id IS NOT DISTINCT FROM buyer,
							 format('%s, but the key''s row is %s', what, l));
	ELSIF NOT shared THEN
		PERFORM torture.must(l.order_id IS NULL, format('%s, but its key has a row: %s', what, l));
	END IF;
	-- an ok made the row: at the statement's start, expiring ttl later (a
	-- live key may have been extended since), pending or expired since
	IF status = 'ok' THEN
		PERFORM torture.must(l.created_at = statement_timestamp()
							 AND (shared OR (l.expires_at = statement_timestamp() + ttl
											 AND l.state IN ('PENDING', 'EXPIRED'))),
							 format('%s, but the key''s row is %s', what, l));
	END IF;
	INSERT INTO torture.now_log
	VALUES (order_id, shared, sku, qty, buyer, ttl, status, statement_timestamp(), returned, NOT wrote);
	RETURN status;
END
$$;

-- The ledger, as the application's scripts look at it in their own
-- transactions (with the calling statement's snapshot: STABLE).
-- has_row: whether key (order_id, batch_id) has a movement.
CREATE FUNCTION torture.has_row(order_id text, batch_id integer) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
AS $$ SELECT EXISTS (SELECT FROM inventory.ledger l WHERE l.order_id = $1 AND l.batch_id = $2) $$;
-- rows_of: the movements of batch 1 of the order ids
CREATE FUNCTION torture.rows_of(order_ids text[], OUT order_id text, OUT sku text, OUT qty bigint)
RETURNS SETOF record LANGUAGE sql STABLE SECURITY DEFINER
AS $$ SELECT l.order_id, l.sku, l.qty FROM inventory.ledger l WHERE l.order_id = ANY ($1) AND l.batch_id = 1 $$;
-- rows_like: how many movements have an order id LIKE pattern
CREATE FUNCTION torture.rows_like(pattern text) RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER
AS $$ SELECT count(*) FROM inventory.ledger l WHERE l.order_id LIKE $1 $$;

------------------------------------------------------------------------------
-- What the checkpoints assert empty (the load paused, the worker idle)
------------------------------------------------------------------------------

-- Every movement ever made: the ledger and the folded rows deleted since.
CREATE VIEW torture.movement AS
SELECT sku, kind, state, qty, folded FROM inventory.ledger
UNION ALL
SELECT sku, kind, state, qty, true FROM torture.deleted;

-- Each SKU's counters computed from its initial base and its movements
-- alone; base_* is the part folded (or deleted after folding).
CREATE VIEW torture.truth AS
SELECT s.sku,
	   coalesce(i.on_hand, 0) + coalesce(m.on_hand, 0) AS on_hand,
	   coalesce(m.reserved, 0) AS reserved,
	   coalesce(i.version, 0) + coalesce(m.version, 0) AS version,
	   coalesce(i.on_hand, 0) + coalesce(m.folded_on_hand, 0) AS base_on_hand,
	   coalesce(i.version, 0) + coalesce(m.folded_version, 0) AS base_version,
	   coalesce(m.reserves, 0) AS reserves, coalesce(m.confirms, 0) AS confirms,
	   coalesce(m.cancels, 0) AS cancels, coalesce(m.expiries, 0) AS expiries,
	   coalesce(m.restocks, 0) AS restocks, coalesce(m.adjusts, 0) AS adjusts
  FROM inventory.sku s
  LEFT JOIN torture.initial i USING (sku)
  LEFT JOIN (
	SELECT sku,
		   sum(torture.on_hand_effect(kind, state, qty)) AS on_hand,
		   sum(torture.reserved_effect(kind, state, qty)) AS reserved,
		   sum(torture.version_effect(kind, state)) AS version,
		   sum(torture.on_hand_effect(kind, state, qty)) FILTER (WHERE folded) AS folded_on_hand,
		   sum(torture.version_effect(kind, state)) FILTER (WHERE folded) AS folded_version,
		   count(*) FILTER (WHERE kind = 'reserve') AS reserves,
		   count(*) FILTER (WHERE state = 'CONFIRMED') AS confirms,
		   count(*) FILTER (WHERE state = 'CANCELLED') AS cancels,
		   count(*) FILTER (WHERE state = 'EXPIRED') AS expiries,
		   count(*) FILTER (WHERE kind = 'restock') AS restocks,
		   count(*) FILTER (WHERE kind = 'adjust') AS adjusts
	  FROM torture.movement
	 GROUP BY sku
  ) m USING (sku);

-- A SKU oversold or with negative counters.
CREATE VIEW torture.oversold AS
SELECT * FROM inventory.stock WHERE NOT (0 <= reserved AND reserved <= on_hand);

-- A ledger row in a state the rules do not allow.
CREATE VIEW torture.illegal_row AS
SELECT *, CASE
	WHEN kind NOT IN ('reserve', 'restock', 'adjust') THEN 'unknown kind'
	WHEN kind = 'reserve' AND (state IS NULL OR expires_at IS NULL) THEN 'reservation without state or expires_at'
	WHEN kind = 'reserve' AND counted IS NOT NULL THEN 'reservation with a count'
	WHEN kind = 'reserve' AND qty <= 0 THEN 'reservation of no units'
	WHEN kind = 'reserve' AND (settled_at IS NULL) <> (state = 'PENDING') THEN 'settled_at set iff not PENDING broken'
	WHEN kind = 'reserve' AND settled_at < created_at THEN 'settled before created'
	WHEN state = 'CONFIRMED' AND settled_at >= expires_at THEN 'confirmed at or past expires_at'
	WHEN state = 'EXPIRED' AND settled_at < expires_at THEN 'expired before expires_at'
	WHEN state = 'PENDING' AND folded THEN 'PENDING reservation folded'
	WHEN kind <> 'reserve' AND (state, expires_at, settled_at) IS DISTINCT FROM (NULL, NULL, NULL) THEN 'movement with a lifecycle'
	WHEN kind = 'restock' AND (qty <= 0 OR counted IS NOT NULL) THEN 'bad restock'
	WHEN kind = 'adjust' AND (counted IS NULL OR counted < 0) THEN 'stocktake without a count'
	END AS why
  FROM inventory.ledger;

-- A SKU whose counters in the tables (inventory.stock, and the base row of
-- inventory.sku) differ from its movements.
CREATE VIEW torture.stock_mismatch AS
SELECT t.sku, st.on_hand, st.reserved, st.version, b.on_hand AS base_on_hand, b.version AS base_version,
	   t.on_hand AS t_on_hand, t.reserved AS t_reserved, t.version AS t_version,
	   t.base_on_hand AS t_base_on_hand, t.base_version AS t_base_version
  FROM torture.truth t
  FULL JOIN inventory.stock st USING (sku)
  LEFT JOIN inventory.sku b USING (sku)
 WHERE (st.on_hand, st.reserved, st.version, b.on_hand, b.version)
	   IS DISTINCT FROM (t.on_hand, t.reserved, t.version, t.base_on_hand, t.base_version);

-- A SKU whose live counters in shared memory differ from its movements, or
-- that still has holds or changes in flight with nobody running.
CREATE VIEW torture.live_mismatch AS
SELECT t.sku, inventory.available(t.sku) AS live_available, c.on_hand, c.reserved, c.version,
	   c.holds, c.in_flight, t.on_hand AS t_on_hand, t.reserved AS t_reserved, t.version AS t_version
  FROM torture.truth t
  LEFT JOIN inventory.sku_stats c USING (sku)
 WHERE (inventory.available(t.sku), c.on_hand, c.reserved, c.version, c.holds, c.in_flight)
	   IS DISTINCT FROM (t.on_hand - t.reserved, t.on_hand, t.reserved, t.version, 0::bigint, 0);

-- sku_stats counts from the moment a SKU is loaded into the cache, so the
-- offset of each of its counters from the movements stays fixed as long as
-- the SKU is never evicted (the cache holds 10000 SKUs; the test has 514).
-- Load every SKU now and record the offsets: a SKU created later is loaded
-- before its first movement, with offsets 0.
SELECT count(inventory.available(sku)) AS loaded FROM inventory.sku;

CREATE VIEW torture.stats_offset AS
SELECT c.sku, c.loaded_at,
	   c.reserves - t.reserves AS reserves, c.confirms - t.confirms AS confirms,
	   c.cancels - t.cancels AS cancels, c.expiries - t.expiries AS expiries,
	   c.restocks - t.restocks AS restocks, c.adjusts - t.adjusts AS adjusts
  FROM inventory.sku_stats c JOIN torture.truth t USING (sku);

CREATE TABLE torture.stats_base AS SELECT * FROM torture.stats_offset;

-- A SKU whose statistics moved away from its movements, or that was loaded
-- again (evicted meanwhile), or that is not in the cache at all.
CREATE VIEW torture.stats_mismatch AS
SELECT t.sku, o AS offsets, b AS offsets_at_start
  FROM torture.truth t
  LEFT JOIN torture.stats_offset o USING (sku)
  LEFT JOIN torture.stats_base b USING (sku)
 WHERE o.sku IS NULL
	OR (o.loaded_at, o.reserves, o.confirms, o.cancels, o.expiries, o.restocks, o.adjusts)
	   IS DISTINCT FROM
	   (coalesce(b.loaded_at, o.loaded_at), coalesce(b.reserves, 0), coalesce(b.confirms, 0),
		coalesce(b.cancels, 0), coalesce(b.expiries, 0), coalesce(b.restocks, 0), coalesce(b.adjusts, 0));

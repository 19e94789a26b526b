# The torture test: 32 clients doing every operation at once, at random,
# for INVENTORY_TORTURE_SECONDS (default 60) seconds, while the worker
# expires and folds every 100 ms.
#
# The mix (test/torture/load/, weights below): carts reserved then paid,
# abandoned or left to expire; reservations, confirms, cancels and extends of
# live keys shared by all clients, with ttls of 20 ms to 4 s, so that
# confirms race the worker and inventory.expire(); replays of those keys,
# recent and old; version-checked reserves; savepoints and exception blocks
# rolled back; transactions rolled back; restocks and stocktakes, some
# version-checked; an administrator writing the tables by hand (cancel,
# confirm, expire, extend, a reservation refused with 23514 and caught, a
# delivery booked and deleted once folded, fold()).  Every API result is
# checked against the outcome table of docs/api.md as it comes (torture.judge()
# in test/torture/setup.sql): a departure raises an ERROR, which aborts the
# client and fails the test with the message.
#
# Commerce rules (I9) run in the same storm (the SQL and the scripts are
# below, in this file): buyers reserve SKUs with a per-buyer limit (LIM-0,
# LIM-1, and FLICK), in savepoints and transactions rolled back too; carts
# of 1-4 lines of every kind of SKU are reserved whole or not at all, then
# paid, abandoned, replayed or rolled back; sale windows open and close
# while the load runs: NEVER's window is moved again and again but always
# lies ahead, CLOSING's closes and OPENING's opens part-way through, and
# FLICK's is set anew (open, about to open, over) many times a second.
# Every answer is judged as it comes (a SKU with a fixed window answers
# not_on_sale exactly outside it; a cart's lines are all ok or none), and
# while a buyer's transaction holds the buyer's turn, the units it can see
# are within the limit.
#
# Batches (reserve_many, below) run in the same storm: 5-50 elements of
# every kind of SKU above, for the buyers of the moment or none, some under
# the live keys of reserve.sql, some repeating an element before them; each
# element is judged as a reserve() at its place in the array (a repeated
# key is a duplicate exactly when it was reserved before it in the batch),
# a batch takes a transaction id exactly when an element is ok, and its
# outcomes are logged in its own transaction; some batches are rolled back,
# whole or to a savepoint.
#
# reserve_now() runs in the same storm, alone in its statement (pgbench
# sends each statement of a script on its own, outside any transaction
# block): under the live keys of reserve.sql (new, replays, or in flight in
# another session) and under keys of its own then paid, cancelled or left
# to expire (test/torture/load/now.sql); and for the buyers of the moment
# on the SKUs with rules (now_rules.sql, below).  Each status is judged as
# it comes and logged with the call (torture.judge_now() in setup.sql): a
# key reserved before the call is a duplicate, an ok has its row, made at
# the statement's start, a refusal or a replay takes no transaction id.
# The checkpoints find every ok and duplicate in the ledger and no row for
# a refused key of its own; the rest of what they check (nothing oversold,
# counters, limits, windows) counts reserve_now's rows with everyone's.
#
# The run is cut in three slices; between two, with the load stopped and
# the worker paused, a checkpoint asserts that the cache agrees with the
# tables, that nothing is oversold, that every row is in a legal state,
# that each SKU's counters -- in inventory.stock, in its base row, live in
# shared memory, and its statistics -- equal what its movements add up to,
# computed independently, and that nothing rolled back left a trace; and
# for the rules, that no buyer holds more than a SKU's limit, that nothing
# was reserved outside the window in force (none of NEVER, none of CLOSING
# from its end on, none of OPENING before its start, and each of FLICK's
# within a window that was in force between its statement's start and its
# return), and that every cart has all its lines or none; for the batches,
# that every element of a committed batch answered ok has its movement, made
# by the batch, that every element answered duplicate has one of its SKU,
# quantity and buyer, and that a batch's own key has a movement exactly when
# one of its elements was answered ok.  At the end the
# worker must clear every overdue reservation and fold everything.
#
# Every call is made by the login role the manual gives it, each role's
# scripts in a pgbench of its own, all three at once: the application's
# (shop_app: reservations, carts, batches, reserve_now, settlements), the
# administrator's (shop_admin: restocks, stocktakes, writes by hand,
# fold(), expire(), the windows set anew) and the monitor's (shop_monitor:
# the readers).  The test's world (test/torture/setup.sql, and the SQL
# below) is the administrator's: its schema is owned by shop_admin, who
# makes it, and its checks read the tables with the administrator's rights
# -- those run inside the application's transactions are SECURITY DEFINER
# functions, so the application's calls keep its own rights alone.  The
# checkpoints read as shop_admin and verify as shop_monitor.  The superuser
# makes the extension, the roles and the schema, sets the server's
# settings, checks the indexes with amcheck, and sees other roles' rows of
# pg_stat_activity.
use strict;
use warnings;
use File::Basename qw(dirname);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node inventory_roles as_admin as_monitor poll_as);

my $seconds = $ENV{INVENTORY_TORTURE_SECONDS} // 60;
die "INVENTORY_TORTURE_SECONDS must be a whole number of seconds, at least 3\n"
  unless $seconds =~ /^[0-9]+$/ && $seconds >= 3;
my $clients = 32;
my $dir = dirname(__FILE__) . '/../torture';

# script => weight
my %mix = (
	'buy.sql' => 20,          # carts: reserve, then confirm / cancel / nothing
	'reserve.sql' => 15,      # reserve a live or old key (new or a replay)
	'settle.sql' => 20,       # confirm / cancel / extend a live or old key
	'version.sql' => 5,       # version-checked reserve
	'savepoint.sql' => 5,     # savepoint and exception block rolled back
	'abort.sql' => 3,         # transaction rolled back; key reuse caught
	'abort_admin.sql' => 1,   # a restock rolled back
	'restock.sql' => 4,       # restock (a few create SKUs)
	'stocktake.sql' => 2,     # adjust, a third version-checked
	'admin.sql' => 3,         # direct DML, fold()
	'expire.sql' => 1,        # expire()
	'watch.sql' => 2,         # readers: nothing oversold at any instant
	'now.sql' => 12);         # reserve_now of a live key or of its own

# Who runs each script (of the mixes here and below): the application
# unless listed.  The weights count within each role's pgbench.  Of the 32
# clients, two administrators (so that their writes race each other too)
# and one monitor: their transactions are short, so they make a larger
# share of the transactions than their scripts' weights did in one
# pgbench of all (about 9% and 2%).
my %role_of = (
	map({ $_ => 'shop_admin' } qw(abort_admin.sql restock.sql stocktake.sql admin.sql expire.sql rules.sql)),
	'watch.sql' => 'shop_monitor');
my %clients_of = (shop_app => $clients - 3, shop_admin => 2, shop_monitor => 1);

my $node = inventory_node('torture', qq{
max_connections = 64
inventory.expire_interval = '100ms'
log_lock_waits = on
});
# the superuser: the extensions, the login roles, and the test's schema,
# given to the administrator, who builds the test's world in it
$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node, 'postgres');
$node->safe_psql('postgres', q{
CREATE SCHEMA torture AUTHORIZATION shop_admin;
CREATE EXTENSION amcheck;
});
as_admin($node, 'postgres', slurp_file("$dir/setup.sql"));

# The rules' world, added to setup.sql's.  CLOSING closes and OPENING opens
# part-way through the run (relative to now, before the load starts).
my $closes = int($seconds * 0.4) + 1;
my $opens  = int($seconds * 0.25) + 1;
as_admin($node, 'postgres', <<"SQL" . <<'SQL');
\\set closes $closes
\\set opens $opens
SQL
-- SKUs with rules, stock enough that only the rules refuse them
SELECT count(inventory.restock(s, 1000000, 'init-' || s))
  FROM unnest(ARRAY['LIM-0', 'LIM-1', 'NEVER', 'CLOSING', 'OPENING', 'FLICK']) s;
SELECT inventory.set_rules('LIM-0', 2), inventory.set_rules('LIM-1', 3),
	   inventory.set_rules('NEVER', NULL, now() + interval '1 day'),
	   inventory.set_rules('CLOSING', NULL, NULL, now() + :closes * interval '1 s'),
	   inventory.set_rules('OPENING', NULL, now() + :opens * interval '1 s');
-- their statistics count from now (see torture.stats_base)
INSERT INTO torture.stats_base
SELECT * FROM torture.stats_offset WHERE sku IN ('LIM-0', 'LIM-1', 'NEVER', 'CLOSING', 'OPENING', 'FLICK');

-- the new statuses of reserve (reserve_cart's lines are judged as reserves)
INSERT INTO torture.outcome VALUES
	('reserve', 'not_on_sale', false, NULL),
	('reserve', 'buyer_required', false, NULL),
	('reserve', 'limit_exceeded', false, NULL),
	('reserve', 'cart_refused', false, NULL);
CREATE UNLOGGED SEQUENCE torture.reserve_not_on_sale;
CREATE UNLOGGED SEQUENCE torture.reserve_buyer_required;
CREATE UNLOGGED SEQUENCE torture.reserve_limit_exceeded;
CREATE UNLOGGED SEQUENCE torture.reserve_cart_refused;

-- Buyer b of the moment: a new set of buyers every 3 s, so that buyers
-- reach their limits and new ones come.
CREATE FUNCTION torture.buyer(b int) RETURNS text LANGUAGE sql VOLATILE
AS $$ SELECT 'b' || (extract(epoch FROM clock_timestamp()) / 3)::bigint || '-' || b $$;

-- The units of a buyer that the caller sees (committed, and its own) must
-- be within the SKU's limit: called while the caller's transaction holds
-- the buyer's turn, they are all the buyer's units.  Not in REPEATABLE
-- READ: its snapshot may still count units cancelled or expired since.
-- (SECURITY DEFINER: it reads the tables as the administrator, in the
-- application's transaction.)
CREATE FUNCTION torture.within(s text, b text) RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
	lim bigint := (SELECT max_per_buyer FROM inventory.sku WHERE sku = s);
	held bigint := (SELECT coalesce(sum(qty), 0) FROM inventory.ledger
					 WHERE sku = s AND buyer_id = b AND state IN ('PENDING', 'CONFIRMED'));
BEGIN
	IF current_setting('transaction_isolation') <> 'read committed' THEN
		RETURN;
	END IF;
	PERFORM torture.must(lim IS NULL OR held <= lim,
						 format('buyer %s holds %s units of %s, over the limit of %s', b, held, s, lim));
END
$$;

-- Whether a SKU whose window never moves during the run (NEVER's always
-- lies ahead) is on sale at t.  A SKU the caller's snapshot does not see
-- (NEW-x, created since) has no window.
CREATE FUNCTION torture.on_sale(s text, t timestamptz) RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
AS $$ SELECT coalesce((SELECT coalesce(t >= sale_starts, true) AND coalesce(t < sale_ends, true)
						 FROM inventory.sku WHERE sku = s), true) $$;

-- FLICK's windows in the order they came into force: set_rules() locks
-- FLICK's row until its transaction ends, so n, taken after it, follows the
-- commits; set_at is before the commit.  Window n is in force, at most,
-- from its set_at until the set_at of window n + 2.
CREATE TABLE torture.window_log (n bigserial, sku text, sale_starts timestamptz,
								 sale_ends timestamptz, set_at timestamptz);
-- when a reservation of window.sql had returned, in its transaction
CREATE TABLE torture.seen (order_id text, at timestamptz);

-- A new window for FLICK (what 1: open now, closing within half a second;
-- 2: opening within half a second, for 0.3 s; 3: over), or a new one ahead
-- for NEVER (4).
CREATE FUNCTION torture.flick(what int) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	s timestamptz;
	e timestamptz;
BEGIN
	IF what = 4 THEN
		PERFORM inventory.set_rules('NEVER', NULL, now() + interval '1 day' + random() * interval '1 day');
		RETURN;
	END IF;
	s := CASE what WHEN 1 THEN now() - interval '1 s'
				   WHEN 2 THEN now() + random() * interval '0.5 s'
				   ELSE now() - interval '2 s' END;
	e := CASE what WHEN 1 THEN now() + interval '10 ms' + random() * interval '0.5 s'
				   WHEN 2 THEN s + interval '0.3 s'
				   ELSE now() - interval '1 s' END;
	PERFORM inventory.set_rules('FLICK', 4, s, e);
	INSERT INTO torture.window_log (sku, sale_starts, sale_ends, set_at)
	VALUES ('FLICK', s, e, clock_timestamp());
END
$$;
SELECT torture.flick(1);

-- The lines of cart number seed: HOT (40%), COLD (15%), LIM (25%), NEVER,
-- CLOSING, OPENING (5% each), or a NEW SKU that may not exist yet (5%);
-- two lines may be of one SKU.
CREATE FUNCTION torture.cart(seed bigint, lines int, OUT skus text[], OUT qtys bigint[])
LANGUAGE sql IMMUTABLE AS $$
	SELECT array_agg(CASE WHEN h % 20 < 8 THEN 'HOT-' || (h / 20 % 4)
						  WHEN h % 20 < 11 THEN 'COLD-' || (h / 20 % 500)
						  WHEN h % 20 < 16 THEN 'LIM-' || (h / 20 % 2)
						  WHEN h % 20 = 16 THEN 'NEVER'
						  WHEN h % 20 = 17 THEN 'CLOSING'
						  WHEN h % 20 = 18 THEN 'OPENING'
						  ELSE 'NEW-' || (h / 20 % 10) END ORDER BY j),
		   array_agg(1 + h / 1000 % 2 ORDER BY j)
	  FROM generate_series(1, lines) j, torture.mix(seed * 10 + j, 4) h
$$;

-- Reserves a cart and judges every line; returns whether it was reserved.
-- replay: the same cart was reserved already in this transaction.  alone:
-- nothing before it in its transaction wrote, so a refusal must have taken
-- no transaction id.
CREATE FUNCTION torture.reserve_cart(order_id text, skus text[], qtys bigint[], ttl interval,
									 buyer text, replay boolean, alone boolean)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	rs inventory.result[];
	r inventory.result;
	n int := cardinality(skus);
	wrote boolean;
	oks int := 0;
	why int := 0;
BEGIN
	SELECT array_agg(ROW(t.ok, t.status, t.sku, t.qty, t.state, t.available, t.version, t.expires_at)::inventory.result
					 ORDER BY t.i)
	  INTO rs
	  FROM inventory.reserve_cart(order_id, skus, qtys, ttl, buyer)
		   WITH ORDINALITY AS t(ok, status, sku, qty, state, available, version, expires_at, i);
	wrote := pg_current_xact_id_if_assigned() IS NOT NULL;
	PERFORM torture.must(cardinality(rs) = n, format('cart %s: %s rows for %s lines', order_id, cardinality(rs), n));
	FOR i IN 1 .. n LOOP
		r := rs[i];
		IF r.status = 'insufficient' THEN
			-- judge() holds a refusal of a reserve against the available it
			-- reports, read when it decided; a cart asks for the sum of its
			-- lines of a SKU, and its refused lines report the available of
			-- a later moment (cart.c reads them after giving back its
			-- holds), which need not be below the demand: only its sign is
			-- checked here
			PERFORM torture.must(r.available >= 0, format('cart %s line %s: %s', order_id, i, r));
			r.available := NULL;
		END IF;
		PERFORM torture.judge('reserve', r, skus[i], qtys[i], ttl,
							  CASE WHEN alone THEN wrote END,
							  allowed => CASE WHEN replay THEN '{duplicate}'
										 ELSE '{ok,insufficient,unknown_sku,not_on_sale,buyer_required,limit_exceeded,cart_refused}' END::text[]);
		oks := oks + (r.status IN ('ok', 'duplicate'))::int;
		why := why + (r.status <> 'cart_refused')::int;
		-- the rules, exactly: the windows of these SKUs do not move (NEVER's
		-- is always ahead), LIM has a limit and no window
		IF NOT replay AND r.status <> 'unknown_sku' THEN
			PERFORM torture.must((r.status = 'not_on_sale') = NOT torture.on_sale(skus[i], statement_timestamp()),
								 format('cart %s line %s: %s, but on sale is %s', order_id, i, r,
										torture.on_sale(skus[i], statement_timestamp())));
			IF torture.on_sale(skus[i], statement_timestamp()) THEN
				PERFORM torture.must((r.status = 'buyer_required') = (skus[i] LIKE 'LIM-%' AND buyer IS NULL),
									 format('cart %s line %s: %s for buyer %s', order_id, i, r, buyer));
			END IF;
			PERFORM torture.must(r.status <> 'limit_exceeded' OR skus[i] LIKE 'LIM-%',
								 format('cart %s line %s: %s, for a SKU without a limit', order_id, i, r));
		END IF;
	END LOOP;
	PERFORM torture.must(oks IN (0, n), format('cart %s: %s of %s lines reserved: %s', order_id, oks, n, rs));
	PERFORM torture.must(oks = n OR why > 0, format('cart %s refused, no line says why: %s', order_id, rs));
	IF oks = n AND buyer IS NOT NULL THEN
		PERFORM torture.within(s, buyer) FROM unnest(skus) s WHERE s LIKE 'LIM-%';
	END IF;
	RETURN oks = n;
END
$$;

-- Confirms or cancels a whole cart in the transaction that reserved it,
-- and judges every line: a cart reserved has its lines settled in order
-- (paid, or found expired when its ttl was short), a cart refused is not
-- found.
CREATE FUNCTION torture.settle_cart(op text, order_id text, whole boolean, skus text[], qtys bigint[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	rs inventory.result[];
	n int := cardinality(skus);
BEGIN
	IF op = 'confirm' THEN
		SELECT array_agg(ROW(t.ok, t.status, t.sku, t.qty, t.state, t.available, t.version, t.expires_at)::inventory.result
						 ORDER BY t.i)
		  INTO rs
		  FROM inventory.confirm_order(order_id)
			   WITH ORDINALITY AS t(ok, status, sku, qty, state, available, version, expires_at, i);
	ELSE
		SELECT array_agg(ROW(t.ok, t.status, t.sku, t.qty, t.state, t.available, t.version, t.expires_at)::inventory.result
						 ORDER BY t.i)
		  INTO rs
		  FROM inventory.cancel_order(order_id)
			   WITH ORDINALITY AS t(ok, status, sku, qty, state, available, version, expires_at, i);
	END IF;
	IF NOT whole THEN
		PERFORM torture.must(cardinality(rs) = 1, format('%s_order of refused cart %s: %s', op, order_id, rs));
		PERFORM torture.judge(op, rs[1], NULL, NULL, allowed => '{not_found}');
		RETURN;
	END IF;
	PERFORM torture.must(cardinality(rs) = n, format('%s_order of cart %s of %s lines: %s', op, order_id, n, rs));
	FOR i IN 1 .. n LOOP
		PERFORM torture.judge(op, rs[i], skus[i], qtys[i],
							  allowed => CASE op WHEN 'confirm' THEN '{ok,expired}' ELSE '{ok}' END::text[]);
	END LOOP;
END
$$;
SQL

# The rules' scripts, in the mix with setup.sql's (script => [text, weight]).
my %rules_mix = (
	'limit.sql' => [ 8, <<'SCRIPT' ],
-- A buyer of a limited SKU (LIM-0: 2 units, LIM-1: 3), one of the six
-- buyers of the moment, reserves 1-3 units for 50 ms to 3 s; while the
-- transaction holds the buyer's turn, the buyer's units are within the
-- limit.  Then pays (60%), cancels (20%) or lets them expire (10%), or the
-- whole transaction is rolled back (10%).  Some first reserve in a
-- savepoint rolled back (10%), or without a buyer, refused (10%).  A
-- quarter run in REPEATABLE READ: the limit counts the buyer's units as
-- they are when the call is made, not as the snapshot saw them.
\set order random(1, 9000000000000000000)
\set b random(1, 6)
\set lim random(0, 1)
\set qty random(1, 3)
\set ttl random(50, 3000)
\set end random(1, 10)
SELECT torture.buyer(:b) AS buyer \gset
\if random(1, 4) = 1
BEGIN ISOLATION LEVEL REPEATABLE READ;
\else
BEGIN;
\endif
\if :end = 1
SAVEPOINT s;
SELECT torture.judge('reserve', r, 'LIM-' || :lim, :qty, ttl => :ttl * interval '1 ms',
					 allowed => '{ok,limit_exceeded}')
  FROM inventory.reserve('LIM-' || :lim, :qty, 'abort-lim-' || :order, 1, :ttl * interval '1 ms', NULL, ':buyer') r;
SELECT torture.within('LIM-' || :lim, ':buyer');
ROLLBACK TO SAVEPOINT s;
\elif :end = 2
SELECT torture.judge('reserve', r, 'LIM-' || :lim, :qty, allowed => '{buyer_required}',
					 wrote => pg_current_xact_id_if_assigned() IS NOT NULL)
  FROM inventory.reserve('LIM-' || :lim, :qty, 'lim-' || :order, 2, :ttl * interval '1 ms') r;
\endif
\if :end = 10
SELECT torture.judge('reserve', r, 'LIM-' || :lim, :qty, ttl => :ttl * interval '1 ms',
					 allowed => '{ok,limit_exceeded}', wrote => pg_current_xact_id_if_assigned() IS NOT NULL)
  FROM inventory.reserve('LIM-' || :lim, :qty, 'abort-lim-' || :order, 2, :ttl * interval '1 ms', NULL, ':buyer') r;
SELECT torture.within('LIM-' || :lim, ':buyer');
ROLLBACK;
\else
-- after a savepoint that reserved, the transaction has an id: wrote is unknown
SELECT torture.judge('reserve', r, 'LIM-' || :lim, :qty, ttl => :ttl * interval '1 ms',
					 allowed => '{ok,limit_exceeded}',
					 wrote => CASE WHEN :end = 1 THEN NULL ELSE pg_current_xact_id_if_assigned() IS NOT NULL END)
	   = 'ok' AS got
  FROM inventory.reserve('LIM-' || :lim, :qty, 'lim-' || :order, 1, :ttl * interval '1 ms', NULL, ':buyer') r \gset
SELECT torture.within('LIM-' || :lim, ':buyer');
\if :got AND :end <= 6
SELECT torture.judge('confirm', r, 'LIM-' || :lim, :qty, allowed => '{ok,expired}')
  FROM inventory.confirm('lim-' || :order) r;
\elif :got AND :end <= 8
SELECT torture.judge('cancel', r, 'LIM-' || :lim, :qty, allowed => '{ok}')
  FROM inventory.cancel('lim-' || :order) r;
\endif
COMMIT;
\endif
SCRIPT
	'cart.sql' => [ 8, <<'SCRIPT' ],
-- A cart of 1-4 lines (torture.cart) for one of the buyers of the moment
-- (or, one in ten, for no buyer: refused when a line is limited), held for
-- 50 ms to 3 s; then paid whole (40%), cancelled whole (20%), replayed (10%:
-- every line a duplicate when it was reserved), rolled back (10%), or left
-- to expire.  Its order id carries its number of lines: the checkpoints
-- find every cart with all of them or none.  A quarter run in REPEATABLE
-- READ.
\set order random(1, 9000000000000000000)
\set seed random(1, 1000000000)
\set lines random(1, 4)
\set b random(1, 6)
\set anon random(1, 10)
\set ttl random(50, 3000)
\set then random(1, 10)
SELECT torture.buyer(:b) AS buyer \gset
\if random(1, 4) = 1
BEGIN ISOLATION LEVEL REPEATABLE READ;
\else
BEGIN;
\endif
\if :then = 10
SELECT torture.reserve_cart('abort-cart-' || :order, c.skus, c.qtys, :ttl * interval '1 ms',
							CASE WHEN :anon = 1 THEN NULL ELSE ':buyer' END, false, true)
  FROM torture.cart(:seed, :lines) c;
ROLLBACK;
\else
SELECT torture.reserve_cart('cart-' || :lines || '-' || :order, c.skus, c.qtys, :ttl * interval '1 ms',
							CASE WHEN :anon = 1 THEN NULL ELSE ':buyer' END, false, true) AS whole
  FROM torture.cart(:seed, :lines) c \gset
\if :then <= 4
SELECT torture.settle_cart('confirm', 'cart-' || :lines || '-' || :order, ':whole'::boolean, c.skus, c.qtys)
  FROM torture.cart(:seed, :lines) c;
\elif :then <= 6
SELECT torture.settle_cart('cancel', 'cart-' || :lines || '-' || :order, ':whole'::boolean, c.skus, c.qtys)
  FROM torture.cart(:seed, :lines) c;
\elif :then = 7 AND :whole
SELECT torture.reserve_cart('cart-' || :lines || '-' || :order, c.skus, c.qtys, :ttl * interval '1 ms',
							CASE WHEN :anon = 1 THEN NULL ELSE ':buyer' END, true, false)
  FROM torture.cart(:seed, :lines) c;
\endif
COMMIT;
\endif
SCRIPT
	'window.sql' => [ 6, <<'SCRIPT' ],
-- A reservation of a SKU with a sale window, for one of the buyers of the
-- moment: NEVER, CLOSING or OPENING, whose windows do not move (NEVER's is
-- always ahead), answer not_on_sale exactly outside them; FLICK's window is
-- set anew all the time, and it has a limit.  The moment the call had
-- returned is noted in torture.seen, in the same transaction.
\set order random(1, 9000000000000000000)
\set which random(1, 4)
\set b random(1, 6)
\set qty random(1, 2)
\set ttl random(50, 3000)
SELECT torture.buyer(:b) AS buyer, (ARRAY['NEVER', 'CLOSING', 'OPENING', 'FLICK'])[:which] AS sku \gset
BEGIN;
SELECT torture.judge('reserve', r, ':sku', :qty, ttl => :ttl * interval '1 ms',
					 wrote => pg_current_xact_id_if_assigned() IS NOT NULL,
					 allowed => CASE WHEN ':sku' = 'FLICK' THEN '{ok,not_on_sale,limit_exceeded}'
									 WHEN torture.on_sale(':sku', statement_timestamp()) THEN '{ok}'
									 ELSE '{not_on_sale}' END::text[])
  FROM inventory.reserve(':sku', :qty, 'win-' || :order, 1, :ttl * interval '1 ms', NULL, ':buyer') r;
INSERT INTO torture.seen
SELECT 'win-' || :order, clock_timestamp() WHERE torture.has_row('win-' || :order, 1);
SELECT torture.within(':sku', ':buyer');
COMMIT;
SCRIPT
	'rules.sql' => [ 1, <<'SCRIPT' ],
-- The windows change under the buyers: FLICK's is set anew (open now,
-- opening soon, over), NEVER's is moved (always ahead).
\set what random(1, 4)
SELECT torture.flick(:what);
SCRIPT
	'now_rules.sql' => [ 4, <<'SCRIPT' ]);
-- reserve_now() of a SKU with rules under a key of its own, for one of the
-- buyers of the moment (one in ten for none): LIM-0 and LIM-1 have a limit
-- (the express writer counts the buyer's units under the buyer's turn,
-- which limit.sql, cart.sql and batches hold in their transactions), NEVER,
-- CLOSING and OPENING answer not_on_sale exactly outside their windows,
-- FLICK's window and limit change all the time.  The moment it returned is
-- in torture.now_log, for the check of FLICK's windows.
\set order random(1, 9000000000000000000)
\set which random(1, 6)
\set b random(1, 6)
\set anon random(1, 10)
\set qty random(1, 2)
\set ttl random(50, 3000)
SELECT torture.buyer(:b) AS buyer, (ARRAY['LIM-0', 'LIM-1', 'NEVER', 'CLOSING', 'OPENING', 'FLICK'])[:which] AS sku \gset
SELECT torture.judge_now(inventory.reserve_now(':sku', :qty, 'nowr-' || :order, 1, :ttl * interval '1 ms', u.buyer),
						 'nowr-' || :order, ':sku', :qty, :ttl * interval '1 ms', u.buyer, false, false,
						 CASE WHEN ':sku' = 'FLICK' AND u.buyer IS NULL THEN '{not_on_sale,buyer_required}'
							  WHEN ':sku' = 'FLICK' THEN '{ok,not_on_sale,limit_exceeded}'
							  WHEN NOT torture.on_sale(':sku', statement_timestamp()) THEN '{not_on_sale}'
							  WHEN ':sku' LIKE 'LIM-%' AND u.buyer IS NULL THEN '{buyer_required}'
							  WHEN ':sku' LIKE 'LIM-%' THEN '{ok,limit_exceeded}'
							  ELSE '{ok}' END::text[])
  FROM (SELECT CASE WHEN :anon = 1 THEN NULL ELSE ':buyer' END AS buyer) u;
SCRIPT

# Batches (reserve_many): 5-50 independent reservations in one call, of
# every kind of SKU -- hot and cold ones, the limited ones, those with a
# window, NEW ones that may not exist -- for the buyers of the moment (one
# in ten for no buyer), some under live keys shared with reserve.sql and
# settle.sql (new or a replay), some repeating an element before them.
# Each element is judged as a reserve() at its place in the array, and its
# outcome logged in torture.batch_log in the batch's own transaction, so
# the log holds exactly the batches that committed.
as_admin($node, 'postgres', <<'SQL');
CREATE TABLE torture.batch_log (prefix text, pos int, order_id text, shared boolean, sku text,
								qty bigint, buyer_id text, status text, made_at timestamptz,
								expires_at timestamptz);
-- batches thrown away (rolled back, or to a savepoint), which log nothing
CREATE UNLOGGED SEQUENCE torture.batches_rolled_back;

-- The elements of batch number seed, of n elements, under order ids
-- prefix-<i>: HOT (30%), COLD (10%), LIM (20%), NEVER, CLOSING, OPENING,
-- FLICK, NEW (5% each), a live key 'k<n>' of reserve.sql's (10%: its SKU
-- and quantity, no buyer), or a copy of an element before it (5%).
CREATE FUNCTION torture.batch(prefix text, seed bigint, n int,
							  OUT skus text[], OUT qtys bigint[], OUT order_ids text[],
							  OUT buyers text[], OUT shared boolean[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
	h bigint;
	c int;
	src int;
	k bigint;
	m record;
BEGIN
	skus := '{}'; qtys := '{}'; order_ids := '{}'; buyers := '{}'; shared := '{}';
	FOR j IN 1 .. n LOOP
		h := torture.mix(seed * 100 + j, 5);
		c := h % 20;
		IF c = 19 AND j > 1 THEN
			src := 1 + h / 20 % (j - 1);
			skus := skus || skus[src];
			qtys := qtys || qtys[src];
			order_ids := order_ids || order_ids[src];
			buyers := array_append(buyers, buyers[src]);
			shared := shared || shared[src];
		ELSIF c IN (17, 18) THEN
			k := torture.key((h / 20 % 1000)::int);
			SELECT * INTO m FROM torture.reservation(k);
			skus := skus || m.sku;
			qtys := qtys || m.qty;
			order_ids := order_ids || ('k' || k);
			buyers := array_append(buyers, NULL::text);
			shared := shared || true;
		ELSE
			skus := skus || CASE WHEN c < 6 OR c = 19 THEN 'HOT-' || (h / 20 % 4)
								 WHEN c < 8 THEN 'COLD-' || (h / 20 % 500)
								 WHEN c < 12 THEN 'LIM-' || (h / 20 % 2)
								 WHEN c = 12 THEN 'NEVER'
								 WHEN c = 13 THEN 'CLOSING'
								 WHEN c = 14 THEN 'OPENING'
								 WHEN c = 15 THEN 'FLICK'
								 ELSE 'NEW-' || (h / 20 % 10) END;
			qtys := qtys || (1 + h / 1000 % 2);
			order_ids := order_ids || (prefix || '-' || j);
			h := torture.mix(seed * 100 + j, 6);
			buyers := array_append(buyers, CASE WHEN h % 10 = 0 THEN NULL
												ELSE torture.buyer((1 + h / 10 % 6)::int) END);
			shared := shared || false;
		END IF;
	END LOOP;
END
$$;

-- Reserves batch number seed and judges every element as a reserve() at
-- its place: an element whose key an element before it reserved (or found
-- reserved) is a duplicate, and only then (the batch's own keys are new,
-- so none of them is a duplicate of anything else); the rules answer as
-- for a cart's lines.  alone: nothing before it in its transaction wrote,
-- so the batch took a transaction id exactly when an element was ok.
-- Logs the outcomes, notes when a reservation of FLICK had returned, and
-- returns the batch's own keys answered ok.
CREATE FUNCTION torture.reserve_batch(prefix text, seed bigint, n int, ttl interval, alone boolean)
RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	b record;
	rs inventory.result[];
	r inventory.result;
	wrote boolean;
	held jsonb := '{}';
	oks text[] := '{}';
	limited boolean;
BEGIN
	SELECT * INTO b FROM torture.batch(prefix, seed, n);
	SELECT array_agg(ROW(t.ok, t.status, t.sku, t.qty, t.state, t.available, t.version, t.expires_at)::inventory.result
					 ORDER BY t.i)
	  INTO rs
	  FROM inventory.reserve_many(b.skus, b.qtys, b.order_ids, ttl, b.buyers)
		   WITH ORDINALITY AS t(ok, status, sku, qty, state, available, version, expires_at, i);
	wrote := pg_current_xact_id_if_assigned() IS NOT NULL;
	PERFORM torture.must(cardinality(rs) = n, format('batch %s: %s rows for %s elements', prefix, cardinality(rs), n));
	FOR i IN 1 .. n LOOP
		r := rs[i];
		limited := b.skus[i] LIKE 'LIM-%' OR b.skus[i] = 'FLICK';
		PERFORM torture.judge('reserve', r, b.skus[i], b.qtys[i], ttl,
							  allowed => CASE WHEN held ? b.order_ids[i] THEN '{duplicate}'
											  WHEN b.shared[i] THEN '{ok,duplicate,insufficient}'
											  ELSE '{ok,insufficient,unknown_sku,not_on_sale,buyer_required,limit_exceeded}' END::text[]);
		-- a key of the batch's own is the batch's reservation, in flight
		PERFORM torture.must(r.status <> 'duplicate' OR b.shared[i] OR r.state = 'PENDING',
							 format('batch %s element %s: %s', prefix, i, r));
		IF r.status NOT IN ('duplicate', 'unknown_sku') THEN
			IF b.skus[i] <> 'FLICK' THEN
				PERFORM torture.must((r.status = 'not_on_sale') = NOT torture.on_sale(b.skus[i], statement_timestamp()),
									 format('batch %s element %s: %s, but on sale is %s', prefix, i, r,
											torture.on_sale(b.skus[i], statement_timestamp())));
			END IF;
			IF r.status <> 'not_on_sale' THEN
				PERFORM torture.must((r.status = 'buyer_required') = (limited AND b.buyers[i] IS NULL),
									 format('batch %s element %s: %s for buyer %s', prefix, i, r, b.buyers[i]));
			END IF;
			PERFORM torture.must(r.status <> 'limit_exceeded' OR (limited AND b.buyers[i] IS NOT NULL),
								 format('batch %s element %s: %s for buyer %s', prefix, i, r, b.buyers[i]));
		END IF;
		IF r.status IN ('ok', 'duplicate') THEN
			held := held || jsonb_build_object(b.order_ids[i], true);
		END IF;
		IF r.status = 'ok' AND NOT b.shared[i] THEN
			oks := oks || b.order_ids[i];
		END IF;
	END LOOP;
	IF alone THEN
		PERFORM torture.must(wrote = EXISTS (SELECT FROM unnest(rs) x WHERE x.status = 'ok'),
							 format('batch %s: wrote is %s, its outcomes %s', prefix, wrote, rs));
	END IF;
	-- the batch holds the turn of every buyer of a limited SKU in it
	PERFORM torture.within(s, u)
	   FROM (SELECT DISTINCT s, u FROM unnest(b.skus, b.buyers) x(s, u)
			  WHERE (s LIKE 'LIM-%' OR s = 'FLICK') AND u IS NOT NULL) x;
	INSERT INTO torture.seen
	SELECT b.order_ids[i], clock_timestamp() FROM generate_series(1, n) i
	 WHERE b.skus[i] = 'FLICK' AND rs[i].status = 'ok';
	INSERT INTO torture.batch_log
	SELECT prefix, i, b.order_ids[i], b.shared[i], b.skus[i], b.qtys[i], b.buyers[i], rs[i].status,
		   statement_timestamp(), rs[i].expires_at
	  FROM generate_series(1, n) i;
	RETURN oks;
END
$$;
SQL

# The batches' script.
my %batch_mix = (
	'batch.sql' => [ 2, <<'SCRIPT' ]);
-- A batch of 5-50 elements (torture.reserve_batch), held for 50 ms to 3 s;
-- then its own keys reserved are confirmed (30%), cancelled (20%) or left
-- to expire (30%); or the transaction is rolled back (10%); or the batch
-- is rolled back to a savepoint (10%) -- leaving no row -- and made again
-- under other keys.  The elements reserved are found in the ledger in the
-- same transaction.  A quarter run in REPEATABLE READ.
\set order random(1, 9000000000000000000)
\set seed random(1, 1000000000)
\set n random(5, 50)
\set ttl random(50, 3000)
\set then random(1, 10)
\if random(1, 4) = 1
BEGIN ISOLATION LEVEL REPEATABLE READ;
\else
BEGIN;
\endif
\if :then = 9
SELECT torture.reserve_batch('abort-bat-' || :order, :seed, :n, :ttl * interval '1 ms', true);
SELECT nextval('torture.batches_rolled_back');
ROLLBACK;
\elif :then = 10
SAVEPOINT s;
SELECT torture.reserve_batch('abort-bat-' || :order, :seed, :n, :ttl * interval '1 ms', true);
ROLLBACK TO SAVEPOINT s;
SELECT nextval('torture.batches_rolled_back');
SELECT torture.must(torture.rows_like('abort-bat-' || :order || '-%') = 0,
					'batch abort-bat-' || :order || ' left rows behind its savepoint');
SELECT torture.reserve_batch('bat-' || :order, :seed, :n, :ttl * interval '1 ms', false) AS oks \gset
SELECT torture.must(count(*) = cardinality(':oks'::text[]), 'batch bat-' || :order || ': ok, but no row for ' || ':oks')
  FROM torture.rows_of(':oks'::text[]);
COMMIT;
\else
SELECT torture.reserve_batch('bat-' || :order, :seed, :n, :ttl * interval '1 ms', true) AS oks \gset
SELECT torture.must(count(*) = cardinality(':oks'::text[]), 'batch bat-' || :order || ': ok, but no row for ' || ':oks')
  FROM torture.rows_of(':oks'::text[]);
\if :then <= 3
SELECT torture.judge('confirm', r, l.sku, l.qty, allowed => '{ok,expired}')
  FROM torture.rows_of(':oks'::text[]) l, inventory.confirm(l.order_id) r;
\elif :then <= 5
SELECT torture.judge('cancel', r, l.sku, l.qty, allowed => '{ok}')
  FROM torture.rows_of(':oks'::text[]) l, inventory.cancel(l.order_id) r;
\endif
COMMIT;
\endif
SCRIPT

# What the application's sessions may use of the test's world (the
# administrator's): its schema, the outcome table judge() reads, the
# counters it bumps, the logs it writes.
as_admin($node, 'postgres', q{
GRANT USAGE ON SCHEMA torture TO shop_app, shop_monitor;
GRANT SELECT ON torture.outcome TO shop_app;
GRANT USAGE ON ALL SEQUENCES IN SCHEMA torture TO shop_app;
GRANT INSERT ON torture.seen, torture.batch_log TO shop_app;
});

my $rules_dir = PostgreSQL::Test::Utils::tempdir;
for my $script (keys %rules_mix)
{
	PostgreSQL::Test::Utils::append_to_file("$rules_dir/$script", $rules_mix{$script}[1]);
}
for my $script (keys %batch_mix)
{
	PostgreSQL::Test::Utils::append_to_file("$rules_dir/$script", $batch_mix{$script}[1]);
}

# the workers must be expiring and folding from the first second of the load
poll_as($node, 'shop_monitor', 'postgres',
	"SELECT visits >= 1 FROM inventory.worker_status WHERE datname = 'postgres'")
  or die 'no worker visited the database';
my $log_start = -s $node->logfile;

# ALTER SYSTEM and a reload (the superuser's), then wait until the workers
# act on it: 'disabled' means that no worker is in the database, so none
# is in flight
sub worker
{
	my ($enabled) = @_;
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET inventory.worker_enabled = $enabled; SELECT pg_reload_conf()");
	my $cond = $enabled eq 'on' ? "state <> 'disabled'" : "state = 'disabled'";
	poll_as($node, 'shop_monitor', 'postgres',
		"SELECT $cond FROM inventory.worker_status WHERE datname = 'postgres'")
	  or die "the workers did not see worker_enabled = $enabled";
}

# The rows of a query, read by the administrator; '' when there are none.
sub rows
{
	return as_admin($node, 'postgres', shift);
}

# One slice of the load: a pgbench for each role, at once, each with its
# own scripts and clients; returns the number of transactions processed.
sub load
{
	my ($name, $secs) = @_;
	my @scripts = (
		(map { [ "$dir/load/$_", $mix{$_}, $_ ] } sort keys %mix),
		(map { [ "$rules_dir/$_", $rules_mix{$_}[0], $_ ] } sort keys %rules_mix),
		(map { [ "$rules_dir/$_", $batch_mix{$_}[0], $_ ] } sort keys %batch_mix));
	my @bench;
	for my $role (sort keys %clients_of)
	{
		my @cmd = (
			'pgbench', '--no-vacuum', "--client=$clients_of{$role}",
			'--jobs=' . ($clients_of{$role} > 1 ? 2 : 1), "--time=$secs",
			(map { ('-f', "$_->[0]\@$_->[1]") } grep { ($role_of{ $_->[2] } // 'shop_app') eq $role } @scripts),
			# old replays reach back to keys born as long ago as the run lasts
			'-D', 'oldest=' . $seconds * 100,
			'-h', $node->host, '-p', $node->port, '-U', $role, 'postgres');
		my %b = (role => $role, out => '', err => '');
		# a pgbench that outlives its run by far fails the test, loudly
		$b{h} = IPC::Run::start(\@cmd, '<', '/dev/null', '>', \$b{out}, '2>', \$b{err},
			IPC::Run::timeout($secs + $PostgreSQL::Test::Utils::timeout_default));
		push @bench, \%b;
	}
	my $done = 0;
	for my $b (@bench)
	{
		$b->{h}->finish;
		$b->{status} = $b->{h}->result(0);
		note "$b->{role}:\n$b->{out}";
		my ($n) = $b->{out} =~ /^number of transactions actually processed: ([0-9]+)/m;
		$done += $n // 0;
	}
	is(join(' ', map { "$_->{role} $_->{status}" } @bench),
		join(' ', map { "$_->{role} 0" } @bench), "$name: each pgbench exits with 0");
	# an aborted client (an ERROR, e.g. from torture.judge()) and any message
	# from the server land on stderr
	is(join('', map { $_->{err} eq '' ? '' : "$_->{role}: $_->{err}" } @bench), '',
		"$name: no client aborted, no message from the server");
	is(join(' ', map { $_->{role} } grep { $_->{out} !~ /^number of failed transactions: 0 \(/m } @bench), '',
		"$name: no failed transaction (serialization failure or deadlock)");
	return $done;
}

# The checks, with the load stopped and the worker paused: nothing changes
# while they run.
sub checkpoint
{
	my ($name) = @_;
	# pgbench has ended every transaction; wait until its backends are gone
	# (the superuser sees the other roles' rows of pg_stat_activity)
	$node->poll_query_until('postgres',
		"SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'pgbench')")
	  or die 'pgbench backends linger';
	my ($out, $err) = ('', '');
	$node->psql('postgres', "SELECT * FROM inventory.verify('30 s')",
		stdout => \$out, stderr => \$err, extra_params => [ '-U', 'shop_monitor' ]);
	is($out, '', "$name: verify('30 s') is empty");
	# a SKU with changes in flight after the wait would fail it with 55000
	# (and plain verify() would skip it with a NOTICE)
	is($err, '', "$name: verify('30 s') compared every SKU, no error, no notice");
	is(rows('SELECT * FROM torture.oversold'), '',
		"$name: no SKU oversold: 0 <= reserved <= on_hand");
	is(rows('SELECT * FROM torture.illegal_row WHERE why IS NOT NULL'), '',
		"$name: every ledger row is in a legal state");
	is(rows('SELECT * FROM torture.stock_mismatch'), '',
		"$name: inventory.stock and the base rows equal the sums of the movements");
	is(rows('SELECT * FROM torture.live_mismatch'), '',
		"$name: available() and sku_stats equal them too, with nothing held or in flight");
	is(rows('SELECT * FROM torture.stats_mismatch'), '',
		"$name: sku_stats counted every committed movement, exactly once");
	# the unique index is what the executor's single-row insert relies on:
	# count keys on the heap itself, and check the indexes against it
	# (amcheck: the superuser's, scaffolding)
	is( rows(q{
SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = off;
SELECT order_id, batch_id, count(*) FROM inventory.ledger
 GROUP BY order_id, batch_id HAVING count(*) > 1}), '',
		"$name: no key has two movements");
	is( $node->safe_psql('postgres', q{
SELECT count(bt_index_check(i.indexrelid, true)) FROM pg_index i
 WHERE i.indrelid IN ('inventory.ledger'::regclass, 'inventory.sku'::regclass)}), '7',
		"$name: the seven indexes of ledger and sku (ledger_buyer_idx since 0.2, the sale windows' since 0.3) match their heaps (amcheck)");
	is( rows(q{
SELECT order_id, batch_id FROM inventory.ledger
 WHERE order_id LIKE 'abort-%' OR (order_id LIKE 'sp-%' AND batch_id <> 1)}), '',
		"$name: work rolled back (transactions, savepoints, exception blocks) left no row");

	# I9, the rules
	is( rows(q{
SELECT l.sku, l.buyer_id, sum(l.qty), s.max_per_buyer
  FROM inventory.ledger l JOIN inventory.sku s USING (sku)
 WHERE l.kind = 'reserve' AND l.state IN ('PENDING', 'CONFIRMED') AND s.max_per_buyer IS NOT NULL
 GROUP BY l.sku, l.buyer_id, s.max_per_buyer
HAVING sum(l.qty) > s.max_per_buyer OR l.buyer_id IS NULL}), '',
		"$name: no buyer holds more than a SKU's limit (PENDING + CONFIRMED), none holds one without a buyer");
	is( rows(q{
SELECT order_id, batch_id, created_at FROM inventory.ledger WHERE sku = 'NEVER' AND kind = 'reserve'}), '',
		"$name: NEVER, whose window always lay ahead, has no reservation");
	is( rows(q{
SELECT l.order_id, l.batch_id, l.created_at, s.sale_ends
  FROM inventory.ledger l JOIN inventory.sku s USING (sku)
 WHERE l.sku = 'CLOSING' AND l.kind = 'reserve' AND NOT l.created_at < s.sale_ends}), '',
		"$name: no reservation of CLOSING was made from the end of its window on");
	is( rows(q{
SELECT l.order_id, l.batch_id, l.created_at, s.sale_starts
  FROM inventory.ledger l JOIN inventory.sku s USING (sku)
 WHERE l.sku = 'OPENING' AND l.kind = 'reserve' AND NOT l.created_at >= s.sale_starts}), '',
		"$name: no reservation of OPENING was made before its window opened");
	# a reservation made at created_at (its statement's start) was admitted
	# at a moment between created_at and seen.at, under the window then in
	# the cache: one whose set_at is before that moment and that the window
	# two later had not replaced before created_at
	is( rows(q{
WITH w AS (
	SELECT sale_starts, sale_ends, set_at, lead(set_at, 2) OVER (ORDER BY n) AS gone_by
	  FROM torture.window_log WHERE sku = 'FLICK')
SELECT l.order_id, l.batch_id, l.created_at, s.at
  FROM inventory.ledger l
  LEFT JOIN (SELECT order_id, at FROM torture.seen
			 UNION ALL
			 SELECT order_id, returned_at FROM torture.now_log WHERE status = 'ok') s USING (order_id)
 WHERE l.sku = 'FLICK' AND l.kind = 'reserve'
   AND NOT EXISTS (SELECT FROM w
					WHERE coalesce(l.created_at >= w.sale_starts, true)
					  AND coalesce(l.created_at < w.sale_ends, true)
					  AND w.set_at <= s.at
					  AND coalesce(w.gone_by >= l.created_at, true))}), '',
		"$name: every reservation of FLICK was made within a window of it in force at the time");
	is( rows(q{
SELECT order_id, count(*), min(batch_id), max(batch_id) FROM inventory.ledger
 WHERE order_id LIKE 'cart-%'
 GROUP BY order_id
HAVING count(*) <> split_part(order_id, '-', 2)::int OR min(batch_id) <> 1
	OR max(batch_id) <> split_part(order_id, '-', 2)::int
	OR count(DISTINCT created_at) <> 1 OR count(DISTINCT coalesce(buyer_id, '')) <> 1}), '',
		"$name: every cart has all its lines, made at once for one buyer, or none");

	# reserve_now: the log holds every answer
	is( rows(q{
SELECT n.order_id, n.status, n.made_at, l
  FROM torture.now_log n LEFT JOIN inventory.ledger l ON l.order_id = n.order_id AND l.batch_id = 1
 WHERE CASE WHEN n.status IN ('ok', 'duplicate')
			THEN l.order_id IS NULL OR l.kind <> 'reserve'
				 OR (l.sku, l.qty, l.buyer_id) IS DISTINCT FROM (n.sku, n.qty, n.buyer_id)
				 OR (n.status = 'ok' AND l.created_at <> n.made_at)
				 OR (n.status = 'ok' AND NOT n.shared AND l.expires_at <> n.made_at + n.ttl)
			ELSE NOT n.shared AND l.order_id IS NOT NULL END}), '',
		"$name: every reserve_now answered ok or duplicate has its movement (ok: made by the call), "
		  . "a key of its own refused has none");
	is( rows(q{
SELECT order_id, count(*) FROM torture.now_log WHERE status = 'ok' GROUP BY order_id HAVING count(*) > 1}), '',
		"$name: reserve_now answered ok once per key at most");

	# batches (reserve_many): the log holds the committed ones
	is( rows(q{
SELECT b.prefix, b.pos, b.order_id, b.status, l.order_id AS row
  FROM torture.batch_log b LEFT JOIN inventory.ledger l ON l.order_id = b.order_id AND l.batch_id = 1
 WHERE b.status IN ('ok', 'duplicate')
   AND (l.order_id IS NULL OR l.kind <> 'reserve'
		OR (l.sku, l.qty, l.buyer_id) IS DISTINCT FROM (b.sku, b.qty, b.buyer_id)
		OR (b.status = 'ok' AND l.created_at <> b.made_at)
		OR (b.status = 'ok' AND NOT b.shared AND l.expires_at <> b.expires_at))}), '',
		"$name: every batch element answered ok or duplicate has its movement (ok: made by the batch)");
	is( rows(q{
WITH k AS (
	SELECT order_id, count(*) FILTER (WHERE status = 'ok') AS oks
	  FROM torture.batch_log WHERE NOT shared GROUP BY order_id)
SELECT k.order_id, k.oks, l.order_id AS row
  FROM k FULL JOIN (SELECT order_id FROM inventory.ledger WHERE order_id LIKE 'bat-%') l USING (order_id)
 WHERE k.oks IS DISTINCT FROM (l.order_id IS NOT NULL)::int}), '',
		"$name: a batch's own key has a movement exactly when one of its elements answered ok, none otherwise");
}

my @slices = (int($seconds / 3), int($seconds / 3));
push @slices, $seconds - $slices[0] - $slices[1];
my $transactions = 0;
for my $i (1 .. @slices)
{
	$transactions += load("slice $i ($slices[$i - 1] s)", $slices[$i - 1]);
	if ($i < @slices)
	{
		worker('off');
		checkpoint("checkpoint $i");
		worker('on');
	}
}

# The storm is over: the worker expires every reservation left (the longest
# ttl in the mix is 10 s) and folds every movement.
ok( poll_as($node, 'shop_admin', 'postgres',
		'SELECT NOT EXISTS (SELECT FROM inventory.ledger WHERE NOT folded)'),
	'the worker expires and folds everything left');
ok( poll_as($node, 'shop_monitor', 'postgres',
		"SELECT lag = '0' AND state <> 'waiting' FROM inventory.worker_status WHERE datname = 'postgres'"),
	'the end: the workers have caught up, no work waits for them');
worker('off');
checkpoint('the end');
is(rows('SELECT sum(reserved) FROM inventory.stock'), '0', 'the end: nothing is reserved');
my @log = grep { /\b(?:ERROR|FATAL|PANIC|WARNING):/ }
  split /\n/, slurp_file($node->logfile, $log_start);
is(join("\n", @log), '', 'the server logged no ERROR, WARNING, FATAL or PANIC');

# the rules were in the storm: every refusal of theirs happened, carts of
# several lines were reserved, the windows opened and closed
my %calls = map { split /\|/ } split /\n/,
  rows(q{SELECT op || ' ' || status, calls FROM torture.outcome_counts});
for my $status (qw(not_on_sale buyer_required limit_exceeded cart_refused))
{
	my $n = $calls{"reserve $status"} // 0;
	ok($n > 0, "the rules: reserve answered $status ($n times)");
}
my ($carts, $closing, $opening, $flick, $windows) = split /\|/, rows(q{
SELECT (SELECT count(DISTINCT order_id) FROM inventory.ledger WHERE order_id LIKE 'cart-%' AND batch_id > 1),
	   (SELECT count(*) FROM inventory.ledger WHERE sku = 'CLOSING' AND kind = 'reserve'),
	   (SELECT count(*) FROM inventory.ledger WHERE sku = 'OPENING' AND kind = 'reserve'),
	   (SELECT count(*) FROM inventory.ledger WHERE sku = 'FLICK' AND kind = 'reserve'),
	   (SELECT count(*) FROM torture.window_log)});
ok($carts > 0, "the rules: carts of several lines were reserved ($carts)");
ok($closing > 0 && $opening > 0,
	"the rules: CLOSING sold before its window closed ($closing), OPENING after its opened ($opening)");
ok($flick > 0 && $windows > 10,
	"the rules: FLICK sold ($flick) under $windows windows set during the run");

# batches were in the storm: committed and rolled back, their elements
# answered every way the rules and repeated keys make them answer
my %batch = map { split /\|/ } split /\n/,
  rows(q{SELECT status, count(*) FROM torture.batch_log GROUP BY status});
for my $status (qw(ok duplicate limit_exceeded buyer_required not_on_sale))
{
	my $n = $batch{$status} // 0;
	ok($n > 0, "batches: elements answered $status ($n)");
}
my ($batches, $elements, $rolled_back) = split /\|/, rows(q{
SELECT count(DISTINCT prefix), count(*),
	   coalesce(pg_sequence_last_value('torture.batches_rolled_back'), 0)
  FROM torture.batch_log});
ok($batches > 0 && $rolled_back > 0,
	"batches: $batches committed ($elements elements), $rolled_back rolled back");

# reserve_now was in the storm: through the express lane, answering every
# way its keys and the rules make it answer
my %now = map { split /\|/ } split /\n/,
  rows(q{SELECT status, count(*) FROM torture.now_log GROUP BY status});
for my $status (qw(ok duplicate not_on_sale buyer_required limit_exceeded))
{
	my $n = $now{$status} // 0;
	ok($n > 0, "reserve_now: answered $status ($n times)");
}
my ($lane, $own) = split /\|/, rows(q{
SELECT count(*) FILTER (WHERE lane), count(*) FILTER (WHERE NOT lane)
  FROM torture.now_log WHERE status = 'ok'});
ok($lane > 0, "reserve_now: the express writer wrote $lane of the reservations answered ok ($own without it)");

my $outcomes = rows(q{
SELECT string_agg(op || ': ' || calls, '; ' ORDER BY op)
  FROM (SELECT op, string_agg(status || ' ' || calls, ', ' ORDER BY calls DESC) AS calls
		  FROM torture.outcome_counts WHERE calls > 0 GROUP BY op) o});
my $ledger = rows(q{
SELECT string_agg(count || ' ' || what, ', ' ORDER BY count DESC)
  FROM (SELECT coalesce(state::text, kind) AS what, count(*) FROM torture.movement
		 GROUP BY 1) m});
diag sprintf('%d s, %d clients: %d pgbench transactions (%.0f/s)',
	$seconds, $clients, $transactions, $transactions / $seconds);
diag "API calls: $outcomes";
diag "movements: $ledger";
diag 'batches: ' . join(', ', map { "$_ $batch{$_}" } sort { $batch{$b} <=> $batch{$a} } keys %batch);
diag 'reserve_now: ' . join(', ', map { "$_ $now{$_}" } sort { $now{$b} <=> $now{$a} } keys %now)
  . '; express lane: '
  . as_monitor($node, 'postgres', q{SELECT coalesce(string_agg(format('%s batches of at most %s rows, %s calls sent back to wait',
										   batches, max_batch, sent_back), ', '), 'no writer now')
			|| ', ' || inventory.express_fallbacks() || ' calls without a writer'
		   FROM inventory.express_status});

$node->stop;
done_testing();

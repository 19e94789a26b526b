# I9 under concurrency: a per-buyer limit is exact whatever the interleaving.
#
# (1) One buyer, 32 sessions, one SKU with a limit of 2 and stock enough for
#     everyone: transactions reserve 1 or 2 units under fresh keys, in every
#     way a transaction can go -- committed, rolled back, reserved in a
#     savepoint or an exception block that is rolled back, reserved and paid
#     at once, paying an earlier reservation, cancelling one and taking its
#     units again in a savepoint rolled back, a cart, a reservation written by
#     hand.  No cancel ever commits, so the buyer's units only grow: the buyer
#     ends with exactly 2, and no more is taken afterwards.
# (2) 32 buyers racing on two limited SKUs, one with stock for all of them
#     and one with less: every buyer ends with exactly the limit of the
#     first; the second is shared within the limit and, topped up one unit
#     at a time, sells out exactly.
# (3) A crash: kill -9 of a backend that holds a buyer's lock in the middle
#     of a race of many buyers.  After the restart no buyer is over the
#     limit, and the limit is counted from the tables: a buyer at the limit
#     is refused, one below it gets exactly the rest.
#
# Inside every transaction, after its calls, the buyer's units that it can
# see (committed, and its own) are checked against the limit: a transient
# excess that a later cancel would hide aborts the client and fails the test.
# About a third of the transactions run in REPEATABLE READ: the limit
# counts the units committed when the call is made, whatever the caller's
# snapshot.
#
# The buyers are the application's login, shop_app; the reservations
# written by hand in (1) are an administrator's, shop_admin's, in a pgbench
# of its own that races the buyers'.  The test's own checks that read the
# tables inside a buyer's transaction (within(), and the pick of one of
# her reservations) are functions owned by shop_admin, the role that may
# read the tables, and SECURITY DEFINER: the buyer's session calls the API
# with its own rights only.  The superuser creates the extension, the
# roles and that scaffolding, and finds and kills a backend in (3).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(wait_until inventory_node inventory_roles as_app as_admin as_monitor poll_as);

my $CLIENTS = 32;

my $node = inventory_node('buyer_limits', qq{
max_connections = 100
restart_after_crash = on
});
my @conn = ('-h', $node->host, '-p', $node->port, 'postgres');

# rows(SQL): what SQL prints, read by shop_admin (the tables, the test's
# views of them); app(SQL): the same, called by shop_app
sub rows
{
	return as_admin($node, 'postgres', shift);
}
sub app
{
	return as_app($node, 'postgres', shift);
}

$node->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($node, 'postgres');
as_admin($node, 'postgres', q{
SELECT inventory.restock(s, 1000000, 'stock-' || s) FROM unnest(ARRAY['ONE', 'FREE', 'MANY', 'CRASH']) s;
SELECT inventory.restock('SCARCE', 60, 'stock-SCARCE');
SELECT inventory.set_rules('ONE', 2);
SELECT inventory.set_rules(s, 3) FROM unnest(ARRAY['MANY', 'SCARCE', 'CRASH']) s;
});

# the test's scaffolding, made by the superuser
$node->safe_psql('postgres', q{
-- answers of limit_exceeded (and refusals of a reservation written by
-- hand); a sequence, so that rolled-back transactions count too
CREATE UNLOGGED SEQUENCE refused;

-- the status of a call, which must be one of allowed
CREATE FUNCTION judge(r inventory.result, allowed text[]) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	IF NOT r.status = ANY (allowed) THEN
		RAISE EXCEPTION 'UNEXPECTED: % where % were expected', r, allowed;
	END IF;
	IF r.ok <> (r.status IN ('ok', 'duplicate')) THEN
		RAISE EXCEPTION 'UNEXPECTED: ok is % for status %', r.ok, r.status;
	END IF;
	IF r.status = 'limit_exceeded' THEN
		PERFORM nextval('refused');
	END IF;
	RETURN r.status;
END
$$;

-- the statuses of a cart's lines: all ok, or none, and then at least one
-- line says why
CREATE FUNCTION whole(statuses text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	IF NOT ('ok' = ALL (statuses) OR NOT 'ok' = ANY (statuses)) THEN
		RAISE EXCEPTION 'CART NOT WHOLE: %', statuses;
	END IF;
	IF NOT 'ok' = ANY (statuses) AND 'cart_refused' = ALL (statuses) THEN
		RAISE EXCEPTION 'CART REFUSED WITHOUT A REASON: %', statuses;
	END IF;
END
$$;

-- the units of buyer b that this transaction sees (committed, and its
-- own) must be within the limit of the SKU
CREATE FUNCTION within(s text, b text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
	lim bigint := (SELECT max_per_buyer FROM inventory.sku WHERE sku = s);
	held bigint := (SELECT coalesce(sum(qty), 0) FROM inventory.ledger
					 WHERE sku = s AND buyer_id = b AND state IN ('PENDING', 'CONFIRMED'));
BEGIN
	IF held > lim THEN
		RAISE EXCEPTION 'LIMIT BROKEN: buyer % holds % units of %, the limit is %', b, held, s, lim;
	END IF;
END
$$;

-- one of buyer b's PENDING reservations of SKU s, at random (which the
-- application would know by its own order ids)
CREATE FUNCTION pick_pending(s text, b text, OUT order_id text, OUT batch_id integer)
RETURNS SETOF record LANGUAGE sql VOLATILE SECURITY DEFINER AS $$
	SELECT order_id, batch_id FROM inventory.ledger
	 WHERE sku = s AND buyer_id = b AND state = 'PENDING'
	 ORDER BY random() LIMIT 1
$$;

-- buyers over the limit of a SKU, and what they hold
CREATE VIEW over_limit AS
SELECT l.sku, l.buyer_id, sum(l.qty) AS held, s.max_per_buyer
  FROM inventory.ledger l JOIN inventory.sku s USING (sku)
 WHERE l.state IN ('PENDING', 'CONFIRMED') AND s.max_per_buyer IS NOT NULL
 GROUP BY l.sku, l.buyer_id, s.max_per_buyer
HAVING sum(l.qty) > s.max_per_buyer OR bool_or(l.buyer_id IS NULL);

-- the administrator's: the functions and views that read the tables
ALTER FUNCTION within(text, text) OWNER TO shop_admin;
ALTER FUNCTION pick_pending(text, text) OWNER TO shop_admin;
GRANT USAGE, SELECT ON SEQUENCE refused TO shop_app, shop_admin;

-- what each buyer holds of a SKU
CREATE VIEW holding AS
SELECT sku, buyer_id, sum(qty)::bigint AS held
  FROM inventory.ledger
 WHERE kind = 'reserve' AND state IN ('PENDING', 'CONFIRMED')
 GROUP BY sku, buyer_id;
ALTER VIEW over_limit OWNER TO shop_admin;
ALTER VIEW holding OWNER TO shop_admin;
});

# race(NAME, TXNS, [ROLE, CLIENTS, SCRIPT]...): runs the pgbench scripts
# at once, each with its clients connected as its role, each client
# running TXNS transactions; every transaction must end without an error
# (an unexpected status or a broken limit raises one).
sub race
{
	my ($name, $txns, @runs) = @_;
	my @bench;
	for my $run (@runs)
	{
		my ($role, $clients, $script) = @$run;
		my $file = "${\$node->basedir}/016_${name}_$role.sql";
		PostgreSQL::Test::Utils::append_to_file($file, $script);
		my %b = (role => $role, total => $clients * $txns, out => '', err => '');
		$b{h} = IPC::Run::start(
			[ 'pgbench', '--no-vacuum', "--client=$clients", '--jobs=' . ($clients > 1 ? 2 : 1),
			  "--transactions=$txns", '-f', $file, '-U', $role, @conn ],
			'<', '/dev/null', '>', \$b{out}, '2>', \$b{err},
			IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
		push @bench, \%b;
	}
	for my $b (@bench)
	{
		$b->{h}->finish;
		ok($b->{h}->result(0) == 0 && $b->{out} =~ m{processed: $b->{total}/$b->{total}} && $b->{err} eq '',
			"$name: pgbench as $b->{role} runs $b->{total} transactions, none fails")
		  or diag "$b->{out}$b->{err}";
	}
}

###########################################################################
# (1) one buyer, 32 sessions, a limit of 2
###########################################################################

# :fate 1 rolls the transaction back; keys carry the fate, so that rows of
# rolled-back transactions are easy to look for.  Cancels never commit:
# kind 5 cancels in a savepoint it rolls back, kind 9 in a transaction it
# rolls back.  Row locks (confirm, cancel) are taken before the buyer's lock,
# and a transaction takes no row lock after it, so the clients never
# deadlock.
# The buyer's transactions run as shop_app in 28 sessions; the
# reservations written by hand (kind 8, a ninth of the transactions) as
# shop_admin in 4 more, at the same time.
my $one_buyer = q{
\set order random(1, 9000000000000000000)
\set qty random(1, 2)
\set kind random(1, 9)
\set fate random(1, 4)
\set iso random(1, 3)
\if :iso = 1 AND :kind <> 5 AND :kind <> 6 AND :kind <> 9
-- a third of those that settle no one else's reservation: repeatable read,
-- where the buyer's units still count as they are now, not as the
-- transaction's snapshot saw them
BEGIN ISOLATION LEVEL REPEATABLE READ;
\else
BEGIN;
\endif
\if :kind = 1
-- a reservation
SELECT judge(r, '{ok,limit_exceeded}')
  FROM inventory.reserve('ONE', :qty, 'r' || :fate || '-' || :order, 1, '1 hour', NULL, 'alice') r;
\elif :kind = 2
-- reserved and paid at once: confirmed units count as much as pending ones
SELECT judge(r, '{ok,limit_exceeded}') AS st
  FROM inventory.reserve('ONE', :qty, 'r' || :fate || '-' || :order, 1, '1 hour', NULL, 'alice') r \gset
SELECT judge(c, CASE WHEN ':st' = 'ok' THEN '{ok}' ELSE '{not_found}' END::text[])
  FROM inventory.confirm('r' || :fate || '-' || :order) c;
\elif :kind = 3
-- a reservation in a savepoint rolled back gives its units back (and the
-- lock it took); then one that stays
SAVEPOINT s;
SELECT judge(r, '{ok,limit_exceeded}')
  FROM inventory.reserve('ONE', :qty, 'sp-' || :order, 1, '1 hour', NULL, 'alice') r;
ROLLBACK TO SAVEPOINT s;
SELECT judge(r, '{ok,limit_exceeded}')
  FROM inventory.reserve('ONE', :qty, 'r' || :fate || '-' || :order, 1, '1 hour', NULL, 'alice') r;
\elif :kind = 4
-- the same with an exception block
DO $$
BEGIN
	PERFORM inventory.reserve('ONE', :qty, 'ex-' || :order, 1, '1 hour', NULL, 'alice');
	RAISE EXCEPTION 'changed my mind';
EXCEPTION WHEN raise_exception THEN
	NULL;
END
$$;
SELECT judge(r, '{ok,limit_exceeded}')
  FROM inventory.reserve('ONE', :qty, 'r' || :fate || '-' || :order, 1, '1 hour', NULL, 'alice') r;
\elif :kind = 5
-- cancels one of her reservations and takes its units again, in a
-- savepoint rolled back: her units are what they were
SAVEPOINT s;
SELECT judge(c, '{ok,confirmed}')
  FROM pick_pending('ONE', 'alice') p, inventory.cancel(p.order_id, p.batch_id) c;
SELECT judge(r, '{ok,limit_exceeded}')
  FROM inventory.reserve('ONE', :qty, 'sp-' || :order, 1, '1 hour', NULL, 'alice') r;
SELECT within('ONE', 'alice');
ROLLBACK TO SAVEPOINT s;
\elif :kind = 6
-- pays one of her reservations, then asks for more
SELECT judge(c, '{ok,duplicate}')
  FROM pick_pending('ONE', 'alice') p, inventory.confirm(p.order_id, p.batch_id) c;
SELECT judge(r, '{ok,limit_exceeded}')
  FROM inventory.reserve('ONE', :qty, 'r' || :fate || '-' || :order, 1, '1 hour', NULL, 'alice') r;
\elif :kind = 7
-- a cart: a line of an unlimited SKU and one of ONE, both or neither
SELECT whole(array_agg(judge(r, '{ok,limit_exceeded,cart_refused}')))
  FROM inventory.reserve_cart('cart' || :fate || '-' || :order, ARRAY['FREE', 'ONE'],
							  ARRAY[1, :qty]::bigint[], '1 hour', 'alice') r;
\elif :kind = 8
-- (a reservation written by hand: the administrator's script, below)
\else
-- cancels one and takes its units again, in a transaction rolled back below
SELECT judge(c, '{ok,confirmed}')
  FROM pick_pending('ONE', 'alice') p, inventory.cancel(p.order_id, p.batch_id) c;
SELECT judge(r, '{ok,limit_exceeded}')
  FROM inventory.reserve('ONE', :qty, 'x-' || :order, 1, '1 hour', NULL, 'alice') r;
\endif
SELECT within('ONE', 'alice');
\if :fate = 1 OR :kind = 9
ROLLBACK;
\else
COMMIT;
\endif
};
# kind 8: a reservation written by hand by the administrator: over the
# limit, the trigger refuses it
my $one_buyer_by_hand = q{
\set order random(1, 9000000000000000000)
\set qty random(1, 2)
\set fate random(1, 4)
\if random(1, 3) = 1
BEGIN ISOLATION LEVEL REPEATABLE READ;
\else
BEGIN;
\endif
DO $$
BEGIN
	INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at, buyer_id)
	VALUES ('dml' || :fate || '-' || :order, 1, 'reserve', 'ONE', :qty, now() + interval '1 hour', 'alice');
EXCEPTION WHEN check_violation THEN
	PERFORM nextval('refused');
END
$$;
SELECT within('ONE', 'alice');
\if :fate = 1
ROLLBACK;
\else
COMMIT;
\endif
};
race('one_buyer', 40, [ 'shop_app', $CLIENTS - 4, $one_buyer ], [ 'shop_admin', 4, $one_buyer_by_hand ]);

is(rows(q{
SELECT coalesce(sum(qty), 0) FROM inventory.ledger
 WHERE sku = 'ONE' AND buyer_id = 'alice' AND state IN ('PENDING', 'CONFIRMED')}),
	'2', 'one buyer: she holds exactly 2 units, her limit');
is(rows(q{
SELECT count(*) FROM inventory.ledger WHERE sku = 'ONE' AND state NOT IN ('PENDING', 'CONFIRMED')}),
	'0', 'one buyer: no cancel committed, so her units only grew (exactly 2 is provable)');
is(rows(q{
SELECT string_agg(order_id, ' ') FROM inventory.ledger
 WHERE order_id ~ '^(r1|cart1|dml1|sp|ex|x)-'}),
	'', 'one buyer: rolled-back transactions, savepoints and exception blocks left no row');
is(rows(q{
SELECT string_agg(order_id || ':' || n, ' ') FROM (
	SELECT order_id, count(*) AS n FROM inventory.ledger WHERE order_id LIKE 'cart%'
	 GROUP BY order_id HAVING count(*) <> 2 OR min(batch_id) <> 1 OR max(batch_id) <> 2) c}),
	'', 'one buyer: every cart has both its lines or is not there');
ok(rows('SELECT last_value FROM refused') > 0,
	'one buyer: the race hit the limit: ' . rows('SELECT last_value FROM refused') . ' refusals');
is(app(q{
SELECT (inventory.reserve('ONE', 1, 'after-alice', 1, '1 hour', NULL, 'alice')).status}),
	'limit_exceeded', 'one buyer: afterwards she gets no more');
is(app(q{
SELECT string_agg(status, ' ') FROM inventory.reserve_cart('after-alice-cart', ARRAY['FREE', 'ONE'],
															ARRAY[1, 1]::bigint[], '1 hour', 'alice')}),
	'cart_refused limit_exceeded', 'one buyer: nor in a cart, whose other line is refused with it');
is(app(q{
SELECT (inventory.reserve('ONE', 2, 'after-bob', 1, '1 hour', NULL, 'bob')).status
	   || ' ' || (inventory.reserve('ONE', 1, 'after-anon', 1, '1 hour')).status}),
	'ok buyer_required', 'one buyer: the limit is per buyer: another buyer gets 2; a reserve without a buyer is refused');
is(rows(q{
SELECT s.reserved = l.pending FROM inventory.stock s,
	   (SELECT sum(qty) AS pending FROM inventory.ledger WHERE sku = 'ONE' AND state = 'PENDING') l
 WHERE s.sku = 'ONE'}),
	't', 'one buyer: the stock reserves exactly her pending units and the other buyer\'s');
is(as_monitor($node, 'postgres', "SELECT * FROM inventory.verify('30 s')"), '', "one buyer: verify('30 s') is empty");

###########################################################################
# (2) 32 buyers, two limited SKUs
###########################################################################

# MANY has stock for everyone, SCARCE 60 units for 32 buyers with a limit of
# 3.  A transaction reserves both for one buyer, in that order (also the
# byte order a cart takes its locks in), or asks for both in a cart.
race('many_buyers', 80, [ 'shop_app', $CLIENTS, q{
\set b random(1, 32)
\set q1 random(1, 3)
\set q2 random(1, 3)
\set order random(1, 9000000000000000000)
\set kind random(1, 4)
\set fate random(1, 5)
\if random(1, 3) = 1
BEGIN ISOLATION LEVEL REPEATABLE READ;
\else
BEGIN;
\endif
\if :kind = 1
SELECT whole(array_agg(judge(r, '{ok,limit_exceeded,insufficient,cart_refused}')))
  FROM inventory.reserve_cart('cart' || :fate || '-' || :order, ARRAY['MANY', 'SCARCE'],
							  ARRAY[:q1, :q2]::bigint[], '1 hour', 'b' || :b) r;
\else
\if :kind = 2
-- first a reservation of MANY rolled back in a savepoint
SAVEPOINT s;
SELECT judge(r, '{ok,limit_exceeded}')
  FROM inventory.reserve('MANY', :q1, 'sp-' || :order, 1, '1 hour', NULL, 'b' || :b) r;
ROLLBACK TO SAVEPOINT s;
\endif
SELECT judge(r, '{ok,limit_exceeded}')
  FROM inventory.reserve('MANY', :q1, 'm' || :fate || '-' || :order, 1, '1 hour', NULL, 'b' || :b) r;
SELECT judge(r, '{ok,limit_exceeded,insufficient}')
  FROM inventory.reserve('SCARCE', :q2, 's' || :fate || '-' || :order, 1, '1 hour', NULL, 'b' || :b) r;
\endif
SELECT within('MANY', 'b' || :b), within('SCARCE', 'b' || :b);
\if :fate = 1
ROLLBACK;
\else
COMMIT;
\endif
} ]);

is(rows('SELECT * FROM over_limit'), '', 'many buyers: no buyer is over a limit');
is(rows(q{
SELECT count(*) FILTER (WHERE held = 3) || ' of ' || count(*) FROM holding WHERE sku = 'MANY'}),
	'32 of 32', 'many buyers: each of the 32 buyers holds exactly 3 of MANY, the limit');
is(app(q{
SELECT string_agg(DISTINCT (inventory.reserve('MANY', 1, 'after-b' || b, 1, '1 hour', NULL, 'b' || b)).status, ' ')
  FROM generate_series(1, 32) b}),
	'limit_exceeded', 'many buyers: and none of them gets one more');
is(rows(q{
SELECT string_agg(order_id, ' ') FROM inventory.ledger WHERE order_id ~ '^(m1|s1|cart1|sp)-'}),
	'', 'many buyers: rolled-back transactions and savepoints left no row');
is(rows(q{
SELECT string_agg(order_id, ' ') FROM (
	SELECT order_id FROM inventory.ledger WHERE order_id LIKE 'cart%' AND sku IN ('MANY', 'SCARCE')
	 GROUP BY order_id HAVING count(*) <> 2 OR count(DISTINCT sku) <> 2) c}),
	'', 'many buyers: every cart has both its lines or is not there');
is(rows(q{
SELECT sum(held) <= 60, max(held) <= 3 FROM holding WHERE sku = 'SCARCE'}),
	't|t', 'many buyers: SCARCE: at most its 60 units sold, at most 3 to anyone');
is(as_monitor($node, 'postgres', q{
SELECT string_agg(sku || ' holds ' || holds || ', in flight ' || in_flight, '; ')
  FROM inventory.sku_stats WHERE holds <> 0 OR in_flight <> 0}),
	'', 'many buyers: every refusal gave its hold back: nothing held or in flight');
is(as_monitor($node, 'postgres', "SELECT * FROM inventory.verify('30 s')"), '', "many buyers: verify('30 s') is empty");

# one unit at a time for every buyer until refused: SCARCE sells out
# exactly, each buyer within the limit
my $topup = app(q{
SELECT string_agg(DISTINCT st, ' ') FROM (
	SELECT judge(r, '{ok,limit_exceeded,insufficient}') AS st
	  FROM generate_series(1, 32) b, generate_series(1, 3) i,
		   inventory.reserve('SCARCE', 1, 'topup-' || b || '-' || i, 1, '1 hour', NULL, 'b' || b) r) t});
note "top-up of SCARCE: $topup";
is(rows(q{SELECT sum(held) || ' ' || max(held) FROM holding WHERE sku = 'SCARCE'})
	. ' ' . app(q{SELECT inventory.available('SCARCE')}),
	'60 3 0', 'many buyers: topped up, SCARCE sells all of its 60 units, at most 3 to a buyer');
is(rows('SELECT * FROM over_limit'), '', 'many buyers: still no buyer over a limit');

###########################################################################
# (3) a crash in the middle of a race of many buyers
###########################################################################

my $crash_script = "${\$node->basedir}/016_crash.sql";
PostgreSQL::Test::Utils::append_to_file($crash_script, q{
\set b random(1, 2000)
\set q random(1, 3)
\set order random(1, 9000000000000000000)
\set fate random(1, 4)
\if random(1, 3) = 1
BEGIN ISOLATION LEVEL REPEATABLE READ;
\else
BEGIN;
\endif
SELECT judge(r, '{ok,limit_exceeded}')
  FROM inventory.reserve('CRASH', :q, 'c' || :fate || '-' || :order, 1, '1 hour', NULL, 'b' || :b) r;
SELECT within('CRASH', 'b' || :b);
\if :fate = 1
ROLLBACK;
\else
COMMIT;
\endif
});
my ($out, $err) = ('', '');
my $bench = IPC::Run::start(
	[ 'pgbench', '--no-vacuum', "--client=$CLIENTS", '--jobs=2', '--time=120',
	  '-f', $crash_script, '-U', 'shop_app', @conn ],
	'<', '/dev/null', '>', \$out, '2>', \$err,
	IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));

# mid-race: reservations are committing, and a backend holds a buyer's lock
# (an object lock on inventory.ledger with objsubid 1) -- the lock of a
# transaction with a reservation in flight.  The superuser finds it: other
# roles' rows of pg_stat_activity, and the kill, are a superuser's
my $victim;
ok( wait_until(60, sub {
		return 0 if rows("SELECT count(*) FROM inventory.ledger WHERE sku = 'CRASH'") < 300;
		$victim = $node->safe_psql('postgres', q{
SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a USING (pid)
 WHERE l.locktype = 'object' AND l.classid = 'inventory.ledger'::regclass
   AND l.objsubid = 1 AND l.granted AND a.backend_type = 'client backend'
 LIMIT 1});
		return $victim ne '';
	}),
	'crash: the race is on, and a backend holds a buyer\'s lock');
my $offset = -s $node->logfile;
kill 'KILL', $victim;
note "crash: killed backend $victim";
$bench->finish;
isnt($bench->result(0), 0, 'crash: pgbench lost its connections');
note 'crash: ' . (() = $err =~ /client \d+ aborted/g) . ' pgbench clients aborted';
$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
like(slurp_file($node->logfile, $offset),
	qr/server process \(PID $victim\) was terminated by signal 9/,
	'crash: the killed backend made the server restart');
ok(poll_as($node, 'shop_app', 'postgres', 'SELECT 1', '1'), 'crash: the server accepts connections again');
# after the restart the cache is empty: the first calls below are the
# roles' own, as after any restart

is(rows('SELECT * FROM over_limit'), '', 'crash: no buyer is over the limit');
is(rows(q{SELECT string_agg(order_id, ' ') FROM inventory.ledger WHERE order_id LIKE 'c1-%'}),
	'', 'crash: rolled-back transactions left no row');
my ($at, $below) = split /\|/, rows(q{
SELECT count(*) FILTER (WHERE held = 3), count(*) FILTER (WHERE held < 3) FROM holding WHERE sku = 'CRASH'});
note "crash: $at buyers at the limit, $below below it";
ok($at > 0 && $below > 0, 'crash: the race was cut with buyers at the limit and buyers below it');
is(app(q{
SELECT (inventory.reserve('CRASH', 1, 'crash-anon')).status || ' ' || max_per_buyer FROM inventory.stock WHERE sku = 'CRASH'}),
	'buyer_required 3', 'crash: the rules came back from the table: a reserve without a buyer is refused');
# every buyer who holds some: at the limit refused, below it exactly the
# rest granted and then refused -- the units counted are those of the tables.
# The buyers and what they hold, as the administrator reads them, in a
# VALUES list for the application's calls
sub buyers
{
	my ($where) = @_;
	my $list = rows(qq{
SELECT coalesce(string_agg(format('(%L, %s)', buyer_id, held), ', '), '(NULL, 0)')
  FROM holding WHERE sku = 'CRASH' AND $where});
	return "(VALUES $list) h(buyer_id, held) WHERE h.buyer_id IS NOT NULL";
}
is(app(qq{
SELECT string_agg(DISTINCT (inventory.reserve('CRASH', 1, 'crash-at-' || buyer_id, 1, '1 hour', NULL, buyer_id)).status, ' ')
  FROM ${\buyers('held = 3')}}),
	'limit_exceeded', 'crash: a buyer at the limit is refused after the restart');
is(app(qq{
SELECT string_agg(DISTINCT (inventory.reserve('CRASH', 3 - held, 'crash-rest-' || buyer_id, 1, '1 hour', NULL, buyer_id)).status, ' ')
  FROM ${\buyers('held < 3')}}),
	'ok', 'crash: a buyer below the limit gets exactly what is left of it');
is(rows(q{
SELECT count(*) FILTER (WHERE held = 3) || ' ' || count(*) FROM holding WHERE sku = 'CRASH'}),
	($at + $below) . ' ' . ($at + $below), 'crash: now every one of them is at the limit');
is(app(qq{
SELECT string_agg(DISTINCT (inventory.reserve('CRASH', 1, 'crash-more-' || buyer_id, 1, '1 hour', NULL, buyer_id)).status, ' ')
  FROM ${\buyers('true')}}),
	'limit_exceeded', 'crash: and none gets one more');
is(rows('SELECT * FROM over_limit'), '', 'crash: still no buyer over the limit');
is(app(q{SELECT count(*) FROM inventory.stock WHERE NOT (0 <= reserved AND reserved <= on_hand)}),
	'0', 'crash: nothing oversold');
is(as_monitor($node, 'postgres', "SELECT * FROM inventory.verify('30 s')"), '', "crash: verify('30 s') is empty");

$node->stop;
done_testing();

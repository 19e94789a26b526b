# The monitoring kit against the real tools: prometheus-postgres-exporter
# with monitoring/postgres_exporter/inventory.yaml, promtool on the alert
# rules, check_dashboard.py on the dashboard.
#
#   * a login granted inventory_monitor and pg_monitor, in one database
#     (shop) and without auto-discovery, exports every database's figures:
#     what callers were told (per call and status) and what committed
#     (per movement) equal, at the first scrape, the calls of the sale and
#     what the ledger holds, in shop and in shop2;
#   * between two scrapes, the told counters move by exactly the calls
#     made, per call and status, and the committed counters by what the
#     ledger says changed (rows counted by kind and state); reserves
#     rolled back (a transaction, a savepoint) move told and not committed;
#   * the cache, the key filter, the workers, the express lane, the hot
#     SKUs, the last verify, a restore under way (in shop3) and the
#     replication slots are exported as the functions show them; every
#     metric of the file is in the scrape;
#   * a query with cache_seconds answers from the exporter's cache until
#     that has passed, then reads again;
#   * no query of the file fails (pg_exporter_last_scrape_error, the log),
#     also with --auto-discover-databases, where `master: true` keeps them
#     to the DSN's database;
#   * promtool checks the rules and passes their unit tests, the dashboard's
#     expressions parse, and check_dashboard.py finds every metric they use
#     in the scrape (and names one that is missing).
#
# Who calls: the exporter logs in as exporter, a login granted
# inventory_monitor and pg_monitor, as docs/monitoring.md says; the sale's
# calls are shop_app's (inventory_app) and shop_admin's (inventory_admin:
# restock, withdraw, adjust, the ledger), each over a connection of its
# own; shop_monitor (inventory_monitor) reads the figures the scrapes are
# compared with and verifies.  The superuser creates the databases, the
# extension and the roles, the replication slots, and holds a restore of
# shop3 open (a COPY into inventory.sku, the tables' owner's).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use HTTP::Tiny;
use IPC::Run;
use File::Spec;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(wait_until inventory_node inventory_roles as_role as_app as_admin as_monitor poll_as);

my $DEADLINE = 30;    # seconds, for every wait of this test
my $top      = File::Spec->rel2abs("$FindBin::Bin/../..");
my $queries  = "$top/monitoring/postgres_exporter/inventory.yaml";
my $rules    = "$top/monitoring/prometheus/inventory.rules.yml";
my $rules_t  = "$top/monitoring/prometheus/inventory.rules.test.yml";
my $checker  = "$top/monitoring/check_dashboard.py";
my $exporter_bin = '/usr/bin/prometheus-postgres-exporter';

-x $exporter_bin
  or BAIL_OUT('prometheus-postgres-exporter is not installed (Debian: prometheus-postgres-exporter)');

# Workers on (they expire, fold, verify every second and read the key
# filter); the express writer stays between the scrapes; a slot may keep
# 1 GB, so that safe_wal_size has a value. The auto-discovering exporter
# keeps a connection to every database beside the other exporter's and
# the test's own: the test cluster's default of 10 slots is too few.
my $node = inventory_node('prometheus', q{
max_connections = 40
inventory.verify_interval = '1s'
inventory.express_idle_timeout = '10min'
max_slot_wal_keep_size = '1GB'
log_statement = none
}, allows_streaming => 'logical');

$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('postgres', "CREATE DATABASE $_") for qw(shop2 shop3);
$node->safe_psql($_, 'CREATE EXTENSION inventory') for qw(shop shop2 shop3);
inventory_roles($node, 'shop');
# as docs/monitoring.md says
$node->safe_psql('shop', 'CREATE ROLE exporter LOGIN; GRANT inventory_monitor, pg_monitor TO exporter;');
$node->safe_psql('shop', q{
SELECT pg_create_physical_replication_slot('standby_slot', true);
SELECT pg_create_logical_replication_slot('cdc_slot', 'test_decoding');
});

# --- calls with known answers ------------------------------------------------------

# run(DB, CALLS, TALLY): runs each [call, SQL, answers] of CALLS in DB (SQL
# answers the statuses, space-separated, in a statement of its own), as
# the role the manual gives the call (shop_admin for restock, withdraw and
# adjust, shop_app for the others), checks the answers, and counts each
# status in TALLY ("db call status" => n)
sub run_calls
{
	my ($db, $calls, $tally) = @_;
	my @wrong;
	for my $c (@$calls)
	{
		my ($call, $sql, $want) = @$c;
		my $role = $call =~ /^(?:restock|withdraw|adjust)$/ ? 'shop_admin' : 'shop_app';
		my $got = as_role($node, $role, $db, $sql);
		$got =~ s/\s+/ /g;
		$got =~ s/^ | $//g;
		push @wrong, "$sql: got '$got', expected '$want'" if $got ne $want;
		$tally->{"$db $call $_"}++ for split / /, $got;
	}
	is(join("\n", @wrong), '', 'every call of ' . scalar(@$calls) . " in $db answered as planned");
}

sub st { return "SELECT (inventory.$_[0]).status" }
sub set_st { return "SELECT string_agg(status, ' ') FROM inventory.$_[0]" }

# the sale, before the exporter starts
my %told1;
run_calls('shop', [
	[ restock => st(q{restock('A', 100, 'in-A')}), 'ok' ],
	[ restock => st(q{restock('B', 5, 'in-B')}), 'ok' ],
	[ restock => st(q{restock('C', 1000, 'in-C')}), 'ok' ],
	[ restock => st(q{restock('A', 100, 'in-A')}), 'duplicate' ],
	[ reserve => st(q{reserve('A', 2, 'p1-r1', ttl => '1 hour')}), 'ok' ],
	[ reserve => st(q{reserve('A', 2, 'p1-r1', ttl => '1 hour')}), 'duplicate' ],
	[ reserve => st(q{reserve('A', 1000, 'p1-big', ttl => '1 hour')}), 'insufficient' ],
	[ reserve => 'BEGIN; ' . st(q{reserve('A', 1, 'p1-rolled', ttl => '1 hour')}) . '; ROLLBACK;', 'ok' ],
	[ confirm => st(q{confirm('p1-r1')}), 'ok' ],
	[ reserve => st(q{reserve('B', 1, 'p1-b', ttl => '1 hour')}), 'ok' ],
	[ cancel => st(q{cancel('p1-b')}), 'ok' ],
	[ reserve => st(q{reserve('C', 1, 'p1-c', ttl => '1 hour')}), 'ok' ],
	[ extend => st(q{extend('p1-c', 1, '2 hours')}), 'ok' ],
	[ reserve_cart => set_st(q{reserve_cart('p1-cart', '{A,B}', '{1,1}', '1 hour')}), 'ok ok' ],
	[ confirm_order => set_st(q{confirm_order('p1-cart')}), 'ok ok' ],
	[ reserve_now => q{SELECT inventory.reserve_now('C', 1, 'p1-now', 1, '1 hour')}, 'ok' ],
	[ withdraw => st(q{withdraw('C', 2, 'p1-w')}), 'ok' ],
	[ adjust => st(q{adjust('C', 990, 'p1-adj')}), 'ok' ],
], \%told1);
run_calls('shop2', [
	[ restock => st(q{restock('A', 10, 's2-in')}), 'ok' ],
	[ reserve => st(q{reserve('A', 1, 's2-r', ttl => '1 hour')}), 'ok' ],
	[ reserve => st(q{reserve('A', 100, 's2-big', ttl => '1 hour')}), 'insufficient' ],
], \%told1);

# --- the ledger's own count of movements ------------------------------------------

my @MOVEMENTS = qw(reserve confirm cancel expire extend restock stocktake withdraw);

# "db movement" => rows of the ledger that record it (extend is no row)
sub ledger_counts
{
	my %n;
	for my $db (qw(shop shop2))
	{
		my @v = split /\|/, as_admin($node, $db, q{
SELECT count(*) FILTER (WHERE kind = 'reserve'), count(*) FILTER (WHERE state = 'CONFIRMED'),
       count(*) FILTER (WHERE state = 'CANCELLED'), count(*) FILTER (WHERE state = 'EXPIRED'),
       count(*) FILTER (WHERE kind = 'restock'), count(*) FILTER (WHERE kind = 'adjust'),
       count(*) FILTER (WHERE kind = 'withdraw')
  FROM inventory.ledger});
		@n{ map { "$db $_" } qw(reserve confirm cancel expire restock stocktake withdraw) } = @v;
	}
	return \%n;
}

# --- the exporter ------------------------------------------------------------------

my @exporters;
END
{
	local $?;
	for my $e (@exporters) { $e->{h}->kill_kill if $e->{h}->pumpable; }
}

# start_exporter(NAME, FLAGS...): the real exporter on a free port of
# 127.0.0.1, connected to shop as exporter, with the queries file
sub start_exporter
{
	my ($name, @flags) = @_;
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $log  = "$PostgreSQL::Test::Utils::log_path/028_$name.log";
	local $ENV{DATA_SOURCE_NAME} = sprintf('host=%s port=%d dbname=shop user=exporter sslmode=disable',
		$node->host, $node->port);
	my $h = IPC::Run::start(
		[ $exporter_bin, "--extend.query-path=$queries", "--web.listen-address=127.0.0.1:$port", @flags ],
		'<', '/dev/null', '>', "$log.out", '2>', $log);
	my $e = { h => $h, port => $port, log => $log, name => $name };
	push @exporters, $e;
	return $e;
}

my $http = HTTP::Tiny->new(timeout => 10);

# scrape(E): the /metrics text, or undef when it does not answer yet
sub scrape
{
	my ($e) = @_;
	my $r = $http->get("http://127.0.0.1:$e->{port}/metrics");
	return $r->{success} ? $r->{content} : undef;
}

# first_scrape(E): polls /metrics until it answers with the database up;
# dies with the exporter's log if it does not
sub first_scrape
{
	my ($e) = @_;
	my $text;
	wait_until($DEADLINE, sub { $text = scrape($e); defined $text && $text =~ /^pg_up 1$/m })
	  or die "$e->{name}: /metrics does not answer with PostgreSQL up:\n" . slurp_file($e->{log});
	return $text;
}

# parse(TEXT): name => [[{labels}, value], ...] of the samples
sub parse
{
	my ($text) = @_;
	my %m;
	for my $line (split /\n/, $text)
	{
		next if $line =~ /^#/ || $line !~ /\S/;
		my ($name, $labels, $value) = $line =~ /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/
		  or next;
		my %l;
		while (($labels // '') =~ /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g)
		{
			$l{$1} = $2;
		}
		push @{ $m{$name} }, [ \%l, $value ];
	}
	return \%m;
}

# value(M, NAME, LABEL => VALUE...): the value of the one sample of NAME with
# those labels; undef when there is none, 'several' when there are more
sub value
{
	my ($m, $name, %want) = @_;
	my @hits = grep {
		my $l = $_->[0];
		!grep { ($l->{$_} // '') ne $want{$_} } keys %want
	} @{ $m->{$name} // [] };
	return @hits == 1 ? $hits[0][1] : @hits ? 'several' : undef;
}

# "db call status" => value of inventory_calls_total; "db movement" => value
# of inventory_movements_total
sub told
{
	my ($m) = @_;
	return { map { ("$_->[0]{datname} $_->[0]{call} $_->[0]{status}" => $_->[1]) }
		  @{ $m->{inventory_calls_total} // [] } };
}

sub committed
{
	my ($m) = @_;
	return { map { ("$_->[0]{datname} $_->[0]{movement}" => $_->[1]) }
		  @{ $m->{inventory_movements_total} // [] } };
}

# the differences between two hashes of counts: "key: got N, expected M"
sub differences
{
	my ($got, $want) = @_;
	my %keys = map { $_ => 1 } keys %$got, keys %$want;
	return join "\n", map { "$_: got " . ($got->{$_} // 'none') . ', expected ' . ($want->{$_} // 0) }
	  grep { !defined $got->{$_} || $got->{$_} != ($want->{$_} // 0) } sort keys %keys;
}

# the workers have visited shop: the key filter knows its keys, and a
# verify ran there (waits: the scrape's figures of both are checked below)
poll_as($node, 'shop_monitor', 'shop', 'SELECT ready FROM inventory.key_filter')
  or die 'the key filter does not know the keys of shop';
poll_as($node, 'shop_monitor', 'shop',
	q{SELECT verified_at IS NOT NULL FROM inventory.verify_status WHERE datname = 'shop'})
  or die 'no background verify of shop has run';
# nothing is due but the reservations of an hour: no expiry runs from here
as_admin($node, 'shop', q{
SELECT count(*) FROM inventory.ledger WHERE state = 'PENDING' AND expires_at < now() + interval '50 minutes'}) eq '0'
  or die 'a reservation falls due while the test runs';

my $ledger1 = ledger_counts();
my $hot1    = as_monitor($node, 'shop', q{
SELECT on_hand || ' ' || reserved || ' ' || holds || ' ' || available || ' ' || sold || ' ' || held || ' ' || confirms FROM inventory.hot_skus
 WHERE datname = 'shop' AND sku = 'A'});
my $cache1 = as_monitor($node, 'shop', 'SELECT capacity || \' \' || entries FROM inventory.cache_info()');
my %slot_before = split /[|\n]/, as_monitor($node, 'shop', q{
SELECT slot_name, pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) FROM pg_replication_slots});

# a restore of shop3 under way: a COPY of inventory.sku by its owner (the
# superuser), in a transaction left open
my $restore = $node->background_psql('shop3');
$restore->query_safe('BEGIN');
$restore->query_safe(q{COPY inventory.sku FROM PROGRAM $$echo R-1,7,0,2026-01-01 00:00:00+00,,,$$ (FORMAT csv)});
my $restoring_sql = q{
SELECT extract(epoch FROM clock_timestamp() - restoring_since) FROM inventory.cache_by_database
 WHERE datname = 'shop3'};
my $restoring_before = as_monitor($node, 'shop', $restoring_sql);

my $exp = start_exporter('exporter');
my $text1 = first_scrape($exp);
my $m1    = parse($text1);
my $restoring_after = as_monitor($node, 'shop', $restoring_sql);

# --- the first scrape: the sale as the functions and the ledger tell it ----------

is(differences(told($m1), \%told1), '',
	'told: every call and status of shop and shop2 equals the calls of the sale');
my %want1 = %$ledger1;
$want1{"$_ extend"} = 0 for qw(shop shop2);
$want1{'shop extend'} = 1;
is(differences(committed($m1), \%want1), '',
	'committed: every movement of shop and shop2 equals what their ledgers hold (and the one extend)');

my ($capacity, $entries) = split / /, $cache1;
is(value($m1, 'inventory_cache_capacity') . ' ' . value($m1, 'inventory_cache_entries'),
	"$capacity $entries", 'the cache: capacity and entries as cache_info() says');
is(join(' ', map { value($m1, "inventory_hot_sku_$_", datname => 'shop', sku => 'A') }
		qw(on_hand reserved holds available sold_total held_total confirms_total)),
	$hot1, 'the hot SKU A of shop: on hand, reserved, holds, available, units sold and held, and confirms as hot_skus says');
is(value($m1, 'inventory_hot_sku_rank', datname => 'shop2', sku => 'A'), 1,
	"shop2's SKU is the first of its own database");
is(value($m1, 'inventory_key_filter_ready', datname => 'shop'), 1, 'the key filter is ready for shop');
cmp_ok(value($m1, 'inventory_key_filter_keys_added_total'), '>=', 1, 'it has keys');
is(value($m1, 'inventory_database_cache_entries', datname => 'shop'), 3, 'shop has its 3 SKUs in the cache');
is(value($m1, 'inventory_database_cache_entries', datname => 'shop2'), 1, 'shop2 has its one');
is(value($m1, 'inventory_database_restoring_seconds', datname => 'shop'), 0, 'no restore runs in shop');
my $restoring = value($m1, 'inventory_database_restoring_seconds', datname => 'shop3');
ok(defined $restoring && $restoring > 0 && $restoring >= $restoring_before && $restoring <= $restoring_after,
	'the restore of shop3: how long it has run, between what SQL said before and after the scrape')
  or diag("exported " . ($restoring // 'none') . ", before $restoring_before, after $restoring_after");
$restore->query_safe('ROLLBACK');
$restore->quit;
is(value($m1, 'inventory_database_holds', datname => 'shop'), 0, 'no holds in flight');
is(value($m1, 'inventory_verify_drift', datname => 'shop'), 0, 'the last verify of shop found no drift');
my $verified = value($m1, 'inventory_verify_last_run_timestamp_seconds', datname => 'shop');
my $started  = as_monitor($node, 'shop', 'SELECT extract(epoch FROM pg_postmaster_start_time())');
ok($verified >= $started && $verified <= time + 1, 'and ran since the server started');
is(value($m1, 'inventory_verify_interval_seconds'), 1, 'the verify interval is exported in seconds');
cmp_ok(value($m1, 'inventory_worker_visits_total', datname => 'shop'), '>=', 1,
	'the workers have visited shop');
is(value($m1, 'inventory_express_fallbacks_total'), 0, 'no reserve_now() fell back');
is(value($m1, 'inventory_express_rows_total', datname => 'shop'), 1,
	"shop's express writer wrote the sale's one reserve_now()");
my %slot_after = split /[|\n]/, as_monitor($node, 'shop', q{
SELECT slot_name, pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn) FROM pg_replication_slots});
for my $slot (['standby_slot', 'physical', ''], ['cdc_slot', 'logical', 'shop'])
{
	my ($name, $type, $db) = @$slot;
	my $bytes = value($m1, 'inventory_replication_slot_retained_bytes',
		slot_name => $name, slot_type => $type, database => $db, wal_status => 'reserved');
	ok(defined $bytes && $bytes > 0 && $bytes >= $slot_before{$name} && $bytes <= $slot_after{$name},
		"slot $name ($type): the WAL it retains, between what SQL said before and after the scrape")
	  or diag("exported " . ($bytes // 'none') . ", before $slot_before{$name}, after $slot_after{$name}");
	is(value($m1, 'inventory_replication_slot_active', slot_name => $name), 0, "slot $name is not active");
	cmp_ok(value($m1, 'inventory_replication_slot_safe_wal_size_bytes', slot_name => $name) // 0, '>', 0,
		"slot $name has a safe_wal_size under max_slot_wal_keep_size");
}
is(value($m1, 'pg_exporter_last_scrape_error'), 0, 'no query failed in the first scrape');

# every metric of the queries file is exported: "<key>_<column>" of each
# column that is not a label (the next due time too: reservations are
# pending)
my (@file_metrics, $key);
for my $line (split /\n/, slurp_file($queries))
{
	$key = $1 if $line =~ /^([a-z_]+):\s*$/;
	push @file_metrics, "${key}_$1" if $line =~ /^    - ([a-z_]+):\s*$/;
	pop @file_metrics if $line =~ /usage: "LABEL"/;
}
cmp_ok(scalar(@file_metrics), '>=', 40, scalar(@file_metrics) . ' metrics in the queries file');
is(join(' ', grep { !$m1->{$_} } @file_metrics), '', 'every one of them is in the scrape');

# --- calls between the scrapes ------------------------------------------------------

my %told2;
run_calls('shop', [
	[ reserve => st(q{reserve('A', 1, 'p2-a', ttl => '1 hour')}), 'ok' ],
	[ reserve => st(q{reserve('A', 1, 'p2-a', ttl => '1 hour')}), 'duplicate' ],
	[ reserve => st(q{reserve('A', 100000, 'p2-big', ttl => '1 hour')}), 'insufficient' ],
	[ reserve => st(q{reserve('NOPE', 1, 'p2-nope', ttl => '1 hour')}), 'unknown_sku' ],
	[ reserve => 'BEGIN; ' . st(q{reserve('A', 1, 'p2-rolled', ttl => '1 hour')}) . '; ROLLBACK;', 'ok' ],
	[ reserve => 'BEGIN; SAVEPOINT s; ' . st(q{reserve('A', 1, 'p2-sp', ttl => '1 hour')})
		  . '; ROLLBACK TO SAVEPOINT s; COMMIT;', 'ok' ],
	[ confirm => st(q{confirm('p2-a')}), 'ok' ],
	[ confirm => st(q{confirm('p2-a')}), 'duplicate' ],
	[ confirm => st(q{confirm('p2-none')}), 'not_found' ],
	[ reserve => st(q{reserve('B', 1, 'p2-b', ttl => '1 hour')}), 'ok' ],
	[ cancel => st(q{cancel('p2-b')}), 'ok' ],
	[ cancel => st(q{cancel('p2-a')}), 'confirmed' ],
	[ reserve => st(q{reserve('C', 1, 'p2-c', ttl => '1 hour')}), 'ok' ],
	[ extend => st(q{extend('p2-c', 1, '2 hours')}), 'ok' ],
	[ extend => st(q{extend('p2-none', 1, '2 hours')}), 'not_found' ],
	# past its expiry, a confirm expires it (or finds a worker did)
	[ reserve => st(q{reserve('C', 1, 'p2-exp', ttl => '10 milliseconds')}), 'ok' ],
	[ confirm => 'SELECT pg_sleep(0.05); ' . st(q{confirm('p2-exp')}), 'expired' ],
	[ reserve_many => set_st(q{reserve_many('{A,A,B}', '{1,100000,1}', '{p2-m1,p2-m2,p2-m3}', '1 hour')}),
		'ok insufficient ok' ],
	[ reserve_cart => set_st(q{reserve_cart('p2-cart', '{A,C}', '{1,1}', '1 hour')}), 'ok ok' ],
	[ reserve_cart => set_st(q{reserve_cart('p2-cart-no', '{B,C}', '{100000,1}', '1 hour')}),
		'insufficient cart_refused' ],
	[ confirm_order => set_st(q{confirm_order('p2-cart')}), 'ok ok' ],
	[ cancel_order => set_st(q{cancel_order('p2-none-order')}), 'not_found' ],
	[ reserve_now => q{SELECT inventory.reserve_now('C', 1, 'p2-now1', 1, '1 hour')}, 'ok' ],
	[ reserve_now => q{SELECT inventory.reserve_now('C', 1, 'p2-now2', 1, '1 hour')}, 'ok' ],
	[ reserve_now => q{SELECT inventory.reserve_now('C', 1, 'p2-now1', 1, '1 hour')}, 'duplicate' ],
	[ reserve_now => q{SELECT inventory.reserve_now('C', 1000000, 'p2-now3', 1, '1 hour')}, 'insufficient' ],
	[ restock => st(q{restock('A', 10, 'p2-in')}), 'ok' ],
	[ restock => st(q{restock('A', 10, 'p2-in')}), 'duplicate' ],
	[ withdraw => st(q{withdraw('C', 1, 'p2-w')}), 'ok' ],
	[ withdraw => st(q{withdraw('C', 100000000, 'p2-w2')}), 'insufficient' ],
	[ adjust => st(q{adjust('B', 50, 'p2-adj')}), 'ok' ],
], \%told2);
is(as_admin($node, 'shop', q{
SELECT count(*) FROM inventory.ledger WHERE order_id IN ('p2-rolled', 'p2-sp')}),
	'0', 'the rolled-back reserves left no row');
is(as_admin($node, 'shop', q{
SELECT expires_at - created_at > interval '1 hour 30 minutes' FROM inventory.ledger WHERE order_id = 'p2-c'}),
	't', 'the extend moved the expiry of p2-c');
my $ledger2 = ledger_counts();
my $express2 = as_monitor($node, 'shop', q{
SELECT batches || ' ' || rows FROM inventory.express_status WHERE datname = 'shop'});

my $text2 = scrape($exp);
defined $text2 or die 'the second scrape does not answer';
my $m2 = parse($text2);

# --- the second scrape: told moved by the calls, committed by the ledger ----------

my ($told_a, $told_b) = (told($m1), told($m2));
my %told_delta = map { $_ => $told_b->{$_} - ($told_a->{$_} // 0) } keys %$told_b;
is(differences(\%told_delta, \%told2), '',
	'told: every call and status moved by exactly the calls made (shop2 not at all)');
my ($com_a, $com_b) = (committed($m1), committed($m2));
my %com_delta = map { $_ => $com_b->{$_} - ($com_a->{$_} // 0) } keys %$com_b;
my %ledger_delta = map { $_ => $ledger2->{$_} - $ledger1->{$_} } keys %$ledger2;
$ledger_delta{"$_ extend"} = 0 for qw(shop shop2);
$ledger_delta{'shop extend'} = 1;    # the one extend answered ok, in a committed transaction
is(differences(\%com_delta, \%ledger_delta), '',
	'committed: every movement moved by what the ledger says changed');
is(join(' ', map { $ledger_delta{"shop $_"} } @MOVEMENTS), '10 3 1 1 1 1 1 1',
	'which is the calls that committed: 10 reserves, 3 confirms, a cancel, an expiry, an extend, a restock, a stocktake, a withdrawal');
my $told_ok = 0;
$told_ok += $told_delta{"shop $_ ok"} for qw(reserve reserve_now reserve_many reserve_cart);
is($told_ok - $com_delta{'shop reserve'}, 2,
	'the two rolled-back reserves (a transaction, a savepoint) moved told and not committed');

is(join(' ', map { value($m2, "inventory_express_${_}_total", datname => 'shop') } qw(batches rows)),
	$express2, "the express writer's batches and rows, as express_status says");
is(value($m2, 'inventory_express_rows_total', datname => 'shop')
	  - value($m1, 'inventory_express_rows_total', datname => 'shop'),
	2, 'it wrote the two reserve_now() answered ok');
is(value($m2, 'inventory_express_fallbacks_total'), 0, 'none fell back');
is(value($m2, 'pg_exporter_last_scrape_error'), 0, 'no query failed in the second scrape');

# --- cache_seconds -----------------------------------------------------------------

# The exporter runs a query with cache_seconds again only at a scrape that
# starts more than cache_seconds after the scrape that last ran it (its
# start); the scrapes between answer from its cache.  To know when the hot
# SKUs' query last ran, A's available units change (a reservation), and
# the test scrapes until a scrape shows the new value: that one ran the
# query, and it started after the test sent it ($ran).  Then A changes
# again and the test scrapes at once, back to back: this scrape starts
# less than cache_seconds after $ran (a reservation and one scrape take
# well under a second; the diag says how long if not), so it answers
# from the cache -- nothing here depends on how long the earlier steps
# took.  The scrape that shows the second change started more than
# cache_seconds after the one that ran the query, so the test receives it
# more than cache_seconds after $ran.
my ($hot_cache) = slurp_file($queries) =~ /^inventory_hot_sku:.*?cache_seconds: (\d+)/ms;
ok($hot_cache, "the hot SKUs' query keeps its answer for $hot_cache s");
my $hot_a = sub {
	return as_monitor($node, 'shop', q{SELECT available FROM inventory.hot_skus WHERE datname = 'shop' AND sku = 'A'});
};
my $exported_a = sub {
	return value(parse($_[0] // ''), 'inventory_hot_sku_available', datname => 'shop', sku => 'A');
};
# scrape_until(VALUE): scrapes every half second until A is exported as
# VALUE (within cache_seconds and the deadline); returns the scrape's text
# and when its request was sent and when it was answered
sub scrape_until
{
	my ($want) = @_;
	my $end = time + $hot_cache + $DEADLINE;
	while (time < $end)
	{
		my $sent = time;
		my $text = scrape($exp);
		my $got  = $exported_a->($text);
		return ($text, $sent, time) if defined $got && $got == $want;
		usleep(500_000);
	}
	return;
}

as_app($node, 'shop', "SELECT inventory.reserve('A', 1, 'p3-c0', ttl => '1 hour')");
my $v0 = $hot_a->();
my (undef, $ran) = scrape_until($v0) or die "A is never exported with $v0 units";
as_app($node, 'shop', "SELECT inventory.reserve('A', 1, 'p3-c1', ttl => '1 hour')");
my $v1 = $hot_a->();
my $cached = $exported_a->(scrape($exp));
my $t_cached = time - $ran;
is($cached, $v0, sprintf('the next scrape, %.1f s after the one that ran the query, answers from the cache (%s units, not %s)',
		$t_cached, $v0, $v1))
  or diag(sprintf('the scrape was answered %.1f s after the one that ran the query was sent: cache_seconds is %d s',
		$t_cached, $hot_cache));
my ($text3, undef, $fresh) = scrape_until($v1);
$text3 //= scrape($exp) // '';    # for the checks of the dashboard below
is($exported_a->($text3), $v1, sprintf('once %d s have passed, the query runs again (after %.1f s)',
		$hot_cache, ($fresh // time) - $ran));
cmp_ok(($fresh // 0) - $ran, '>', $hot_cache, "and not before: the cache kept its answer for $hot_cache s");

# --- the dashboard and the rules against the scrape ----------------------------------

my $scrape_file = "$PostgreSQL::Test::Utils::log_path/028_scrape.txt";
open my $f, '>', $scrape_file or die "$scrape_file: $!";
print $f $text3;
close $f;
my ($out, $err);
IPC::Run::run([ 'python3', $checker, $scrape_file ], '>', \$out, '2>', \$err);
is($? >> 8, 0, 'check_dashboard.py: every metric of the dashboard and the rules is in the scrape')
  or diag("$out$err");
IPC::Run::run([ 'python3', $checker, '--list' ], '>', \$out, '2>', \$err);
my @used = split /\n/, $out;
cmp_ok(scalar(@used), '>=', 20, scalar(@used) . ' metric names used by the dashboard and the rules');
ok((grep { $_ eq 'inventory_calls_total' } @used) && (grep { $_ eq 'inventory_verify_drift' } @used)
	  && !(grep { /^(sum|rate|datname|by)$/ } @used),
	'they are metric names (functions and labels are left out)');
open $f, '>', "$scrape_file.partial" or die $!;
print $f join("\n", grep { !/^inventory_verify_drift\b/ } split /\n/, $text3), "\n";
close $f;
IPC::Run::run([ 'python3', $checker, "$scrape_file.partial" ], '>', \$out, '2>', \$err);
is($? >> 8, 1, 'check_dashboard.py fails on a scrape without inventory_verify_drift');
like($out, qr/^\s+inventory_verify_drift\s/m, 'and names it');

# a healthy server without a replication slot, nothing cached and no
# writer: those series are absent, and optional unless --require-all
open $f, '>', "$scrape_file.quiet" or die $!;
print $f join("\n", grep { !/^inventory_(replication_slot|hot_sku|express)_/ || /^inventory_express_fallbacks_total\b/ } split /\n/, $text3), "\n";
close $f;
IPC::Run::run([ 'python3', $checker, "$scrape_file.quiet" ], '>', \$out, '2>', \$err);
is($? >> 8, 0, 'check_dashboard.py passes a scrape without slots, hot SKUs and writers')
  or diag("$out$err");
like($out, qr/^\s+inventory_replication_slot_retained_bytes\s+\(no replication slot\)/m,
	'and lists what is absent and optional');
IPC::Run::run([ 'python3', $checker, '--require-all', "$scrape_file.quiet" ], '>', \$out, '2>', \$err);
is($? >> 8, 1, 'with --require-all it fails on that scrape');
like($out, qr/^\s+inventory_hot_sku_sold_total\s/m, 'and names the absent series');
IPC::Run::run([ 'python3', $checker, '--optional', 'inventory_verify_', "$scrape_file.partial" ], '>', \$out, '2>', \$err);
is($? >> 8, 0, '--optional inventory_verify_ lets inventory_verify_drift be absent');

SKIP:
{
	my ($promtool) = grep { -x "$_/promtool" } split /:/, $ENV{PATH};
	skip 'promtool is not installed (Debian: prometheus)', 3 unless $promtool;
	$promtool .= '/promtool';
	IPC::Run::run([ $promtool, 'check', 'rules', $rules ], '>', \$out, '2>', \$err);
	is($? >> 8, 0, 'promtool check rules: the alert rules are valid') or diag("$out$err");
	IPC::Run::run([ $promtool, 'test', 'rules', $rules_t ], '>', \$out, '2>', \$err);
	is($? >> 8, 0, 'promtool test rules: every alert fires and stays quiet as its tests say')
	  or diag("$out$err");

	# the dashboard's expressions, as recording rules, parse
	my $dash = slurp_file("$top/monitoring/grafana/inventory.json");
	my @exprs = $dash =~ /"expr":\s*"((?:[^"\\]|\\.)*)"/g;
	my $dash_rules = "$PostgreSQL::Test::Utils::log_path/028_dashboard_rules.yml";
	open $f, '>', $dash_rules or die $!;
	print $f "groups:\n  - name: dashboard\n    rules:\n";
	for my $i (0 .. $#exprs)
	{
		(my $e = $exprs[$i]) =~ s/\$__(?:rate_interval|range)\b/5m/g;
		print $f "      - record: dashboard:expr_$i\n        expr: \"$e\"\n";
	}
	close $f;
	IPC::Run::run([ $promtool, 'check', 'rules', $dash_rules ], '>', \$out, '2>', \$err);
	ok($? >> 8 == 0 && @exprs >= 15, scalar(@exprs) . " expressions of the dashboard parse")
	  or diag("$out$err");
}

# --- auto-discovery: master: true keeps the queries to the DSN's database -----------

my $auto = start_exporter('exporter_auto', '--auto-discover-databases');
my $m_auto = parse(first_scrape($auto) // '');
is(value($m_auto, 'pg_exporter_last_scrape_error'), 0,
	'with --auto-discover-databases, no query fails in postgres, which lacks the extension');
is(scalar(@{ $m_auto->{inventory_cache_capacity} // [] }), 1, 'and each figure comes once');

# --- the exporters stop; their logs show no failed query ------------------------------

for my $e ($exp, $auto)
{
	$e->{h}->signal('TERM');
	eval { $e->{h}->finish; 1 } || !$e->{h}->pumpable or die "$e->{name} does not stop";
	my $log = slurp_file($e->{log});
	is(join("\n", grep { /Error running query|level=error/ } split /\n/, $log), '',
		"$e->{name}: no query of the file failed (its log)");
}
is(as_monitor($node, $_, "SELECT count(*) FROM inventory.verify('30 s')"), '0', "verify('30 s') is empty in $_")
  for qw(shop shop2 shop3);

$node->stop;
done_testing();

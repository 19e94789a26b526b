# I8, failover.  A hot standby follows a primary that keeps selling, while
# readers on the standby call every read-only entry point for every SKU.
# The primary then dies (an immediate stop) and the standby is promoted with
# its readers still running.  On the new primary: every acknowledged
# reservation, confirm and cancel is there, verify() is empty, buyers get
# exactly the units the tables had (no more, no less), nothing is oversold,
# and the PENDING reservations made before the promotion expire.
#
# Replication is synchronous, so a commit the primary acknowledged is on the
# standby.  A load client is a psql process running a generated script that
# prints "ACK <transaction> <status>" after each COMMIT, as in
# 010_crash_load.pl.
#
# Every call is made by the login role the manual gives it: the load and
# the buyers are shop_app, the readers on the standby shop_app (what an
# application reads), shop_monitor (the figures) and shop_admin (the
# tables too), restocks and reads of the tables shop_admin, verify()
# shop_monitor.  The superuser creates the extension and the roles, and
# runs the servers (settings, stop, promotion).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(wait_until inventory_node inventory_roles as_app as_admin as_monitor poll_as);

my $CLIENTS  = 6;
my $TXNS     = 3000;    # per client: far more than run before the failover
my $MIN_ACKS = 300;
my $DEADLINE = 60;
my @SKUS = map { sprintf 'F-%02d', $_ } 1 .. 12;
my $SKU_LIST = "ARRAY['" . join("','", @SKUS) . "']";

# connections enough for the buyers, who are no superuser: the
# superuser's reserved slots are not theirs (the standby copies the setting)
my $primary = inventory_node('primary', qq{
inventory.expire_interval = '100ms'
log_statement = none
max_connections = 30
}, allows_streaming => 1);
$primary->safe_psql('postgres', 'CREATE EXTENSION inventory');
inventory_roles($primary, 'postgres');
as_admin($primary, 'postgres', qq{
SELECT inventory.restock(sku, 60, 'stock-' || sku) FROM unnest($SKU_LIST) sku;
});
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
# the new primary's worker stays off until the last part of the test, so
# that no expiry returns units while the sales are counted
$standby->append_conf('postgresql.conf', qq{
inventory.worker_enabled = off
inventory.expire_interval = '100ms'
log_statement = none
});
$standby->start;
$primary->append_conf('postgresql.conf', "synchronous_standby_names = '*'");
$primary->reload;
$primary->wait_for_catchup($standby);

sub stock
{
	my ($node) = @_;
	my %s;
	for (split /\n/, as_monitor($node, 'postgres',
		'SELECT sku, on_hand, reserved, available FROM inventory.stock ORDER BY sku'))
	{
		my ($sku, @n) = split /\|/;
		$s{$sku} = \@n;
	}
	return \%s;
}

# --- the standby follows replay -------------------------------------------

# read every SKU on the standby, then sell on the primary: the standby's
# answers move with replay
is(as_app($standby, 'postgres',
	"SELECT string_agg(inventory.available(sku)::text, ' ') FROM unnest($SKU_LIST) sku"),
	join(' ', (60) x @SKUS), 'the standby reads every SKU');
as_app($primary, 'postgres', qq{
SELECT inventory.reserve(sku, 10, 'early-' || sku, 1, '1 hour') FROM unnest($SKU_LIST) sku;
SELECT inventory.confirm('early-F-01');
});
$primary->wait_for_catchup($standby, 'replay');
is(as_app($standby, 'postgres',
	"SELECT string_agg(inventory.available(sku)::text, ' ') FROM unnest($SKU_LIST) sku"),
	join(' ', (50) x @SKUS), 'after replay, available() on the standby follows');
is(as_app($standby, 'postgres', q{
SELECT string_agg(order_id || ':' || state || ':' || coalesce(settled_by, '-'), ' ' ORDER BY order_id)
  FROM inventory.reservation('early-F-01') UNION ALL
SELECT string_agg(order_id || ':' || state || ':' || coalesce(settled_by, '-'), ' ' ORDER BY order_id)
  FROM inventory.reservation('early-F-02')}),
	"early-F-01:CONFIRMED:call\nearly-F-02:PENDING:-", 'reservation() on the standby reads what replay brought');
is(as_monitor($standby, 'postgres', q{
SELECT count(*) FROM inventory.stock s
 WHERE s.available IS DISTINCT FROM inventory.available(s.sku)}),
	'0', 'available() on the standby equals inventory.stock');
is(as_monitor($standby, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"),
	'0', "verify('30 s') on the standby is empty");
is(as_monitor($standby, 'postgres', 'SELECT entries FROM inventory.cache_info()'),
	'0', 'nothing is cached on the standby');

# --- readers on the standby, load on the primary -----------------------------

# Readers call every read-only entry point in a loop, and go on through the
# promotion, each as a role, reading what that role may read: the
# application (available, inventory.stock, the state type's functions),
# the monitor (the figures and verify() too) and the administrator (the
# tables too).  A row of verify() is printed as DRIFT (verify('30 s')
# compares every SKU: one still busy after the wait is an error); an
# error stops the reader (ON_ERROR_STOP), which the test notices.
my $app_round = qq{
SELECT inventory.available(sku) FROM unnest($SKU_LIST) sku;
SELECT count(*) FROM inventory.stock;
SELECT inventory.can_transition('PENDING', 'CONFIRMED'), inventory.is_final('EXPIRED');
SELECT inventory.effect_on_hand('reserve', 'CONFIRMED', 2),
       inventory.effect_reserved('reserve', 'PENDING', 2),
       inventory.effect_version('restock', NULL, 2);
SELECT 'RECOVERY', pg_is_in_recovery();
};
my $monitor_round = qq{
SELECT 'DRIFT', * FROM inventory.verify('30 s');
SELECT count(*) FROM inventory.sku_stats;
SELECT * FROM inventory.cache_info();
SELECT count(*) FROM inventory.worker_status;
} . $app_round;
my $admin_round = qq{
SELECT count(*) FROM inventory.ledger WHERE state = 'PENDING';
} . $monitor_round;
# an order's reservations: the application's and the administrator's
my $order_round = qq{
SELECT count(*) FROM inventory.reservation('early-F-01');
};
$app_round .= $order_round;
$admin_round .= $order_round;
my $dir = PostgreSQL::Test::Utils::tempdir;
my @readers;
for my $r ([ 'shop_app', $app_round ], [ 'shop_monitor', $monitor_round ], [ 'shop_admin', $admin_round ])
{
	my ($role, $round) = @$r;
	my $script = "$dir/reader_$role.sql";
	open my $fh, '>', $script or die "$script: $!";
	print $fh $round x 3000;
	close $fh;
	my $out = "$PostgreSQL::Test::Utils::log_path/012_failover_reader_$role";
	push @readers, {
		out => "$out.out", err => "$out.err",
		h => IPC::Run::start(
			[ 'psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-f', $script,
			  '-d', $standby->connstr('postgres') . " user=$role" ],
			'<', '/dev/null', '>', "$out.out", '2>', "$out.err") };
}

# A client's plan: reserve 1 to 3 units of a random SKU (a third of them
# with a 2-second ttl, which the old primary may or may not expire), or
# confirm or cancel one of its earlier reservations.
sub make_plan
{
	my ($client) = @_;
	srand(7000 + $client);
	my (@plan, @open);
	for my $i (1 .. $TXNS)
	{
		my $dice = rand(100);
		if ($dice < 30 && @open)
		{
			my $key = splice(@open, int(rand(@open)), 1);
			push @plan, { op => $dice < 20 ? 'confirm' : 'cancel', key => $key };
		}
		else
		{
			my $key = "c$client-$i";
			push @plan, { op => 'reserve', key => $key, sku => $SKUS[ rand @SKUS ],
						  qty => 1 + int(rand(3)),
						  ttl => rand(3) < 1 ? '2 seconds' : '1 hour' };
			push @open, $key;
		}
	}
	return \@plan;
}

sub plan_to_sql
{
	my ($plan) = @_;
	my $sql = '';
	for my $i (1 .. @$plan)
	{
		my $c = $plan->[ $i - 1 ];
		my $call = $c->{op} eq 'reserve'
		  ? "reserve('$c->{sku}', $c->{qty}, '$c->{key}', 1, '$c->{ttl}')"
		  : "$c->{op}('$c->{key}')";
		$sql .= "BEGIN;\nSELECT status AS s FROM inventory.$call \\gset\nCOMMIT;\n\\warn ACK $i :s\n";
	}
	return $sql;
}

sub read_acks
{
	my ($file) = @_;
	my %acks;
	for my $line (slurp_file($file) =~ /^(ACK [^\n]*)\n/mg)
	{
		my (undef, $i, $status) = split ' ', $line;
		$acks{$i} = $status;
	}
	return \%acks;
}

my @clients;
for my $c (1 .. $CLIENTS)
{
	my $plan   = make_plan($c);
	my $script = "$dir/client$c.sql";
	open my $fh, '>', $script or die "$script: $!";
	print $fh plan_to_sql($plan);
	close $fh;
	my $log = "$PostgreSQL::Test::Utils::log_path/012_failover_c$c";
	push @clients, {
		plan => $plan, err => "$log.err",
		h => IPC::Run::start(
			[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $script,
			  '-d', $primary->connstr('postgres') . ' user=shop_app' ],
			'<', '/dev/null', '>', "$log.out", '2>', "$log.err") };
}

my $total = 0;
ok(wait_until($DEADLINE, sub {
	my @n = map { scalar keys %{ read_acks($_->{err}) } } @clients;
	$total = 0;
	$total += $_ for @n;
	return !grep({ $_ == 0 } @n) && $total >= $MIN_ACKS;
}), "the primary is selling: $total transactions acknowledged");

# --- failover ------------------------------------------------------------------

$primary->stop('immediate');
for my $cl (@clients)
{
	$cl->{h}->finish;
}
is(join('', map { slurp_file($_->{err}) =~ /^(.*\bERROR:.*)$/m ? "$1\n" : '' } @clients),
	'', 'no client saw an error before the primary died');

$standby->promote;
ok(wait_until($DEADLINE, sub {
	grep({ slurp_file($_->{out}) =~ /^RECOVERY\|f$/m } @readers) == @readers;
}), 'the readers on the standby went on through the promotion');
for my $rd (@readers)
{
	$rd->{h}->kill_kill;
	$rd->{h}->finish;
}
is(join('', map { slurp_file($_->{err}) } @readers), '', 'no reader saw an error');
is(join('', map { join("\n", slurp_file($_->{out}) =~ /^(DRIFT.*)$/mg) } @readers), '',
	'verify() on the standby never reported drift, before or after the promotion');

my $new = $standby;

# --- every acknowledged movement survived ---------------------------------------

my %row;
for (split /\n/, as_admin($new, 'postgres',
	"SELECT order_id, sku, qty, state FROM inventory.ledger WHERE order_id LIKE 'c%'"))
{
	my ($key, @rest) = split /\|/, $_, -1;
	$row{$key} = \@rest;
}
my (@lost, %acked);
for my $c (1 .. $CLIENTS)
{
	my $acks = read_acks($clients[ $c - 1 ]{err});
	for my $i (sort { $a <=> $b } keys %$acks)
	{
		my $call = $clients[ $c - 1 ]{plan}[ $i - 1 ];
		next unless $acks->{$i} eq 'ok';
		$acked{ $call->{op} }++;
		my $r = $row{ $call->{key} };
		if ($call->{op} eq 'reserve')
		{
			push @lost, "c$c tx $i: reserve $call->{key} is " . ($r ? "(@$r)" : 'missing')
			  unless $r && $r->[0] eq $call->{sku} && $r->[1] == $call->{qty};
		}
		else
		{
			my $want = $call->{op} eq 'confirm' ? 'CONFIRMED' : 'CANCELLED';
			push @lost, "c$c tx $i: $call->{op} $call->{key} is " . ($r ? $r->[2] : 'missing')
			  unless $r && $r->[2] eq $want;
		}
	}
}
ok($acked{reserve} && $acked{confirm} && $acked{cancel},
	"the load made every kind of movement ($acked{reserve} reserves, $acked{confirm} confirms, $acked{cancel} cancels acknowledged)");
is(join("\n", @lost), '', 'every acknowledged reserve, confirm and cancel is on the new primary');
is(as_monitor($new, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"verify('30 s') is empty after the promotion");

# --- the new primary sells exactly what the tables have --------------------------

my $before = stock($new);
is(join(' ', map { "$_:" . as_app($new, 'postgres', "SELECT inventory.available('$_')") } @SKUS),
	join(' ', map { "$_:$before->{$_}[2]" } @SKUS),
	'available() on the new primary equals inventory.stock for every SKU');
my @over;
for my $sku (@SKUS)
{
	my $a = $before->{$sku}[2];
	my $status = as_app($new, 'postgres',
		"SELECT status FROM inventory.reserve('$sku', $a + 1, 'over-$sku')");
	push @over, "$sku: reserve of $a + 1 is $status" unless $status eq 'insufficient';
}
is(join('; ', @over), '', 'no SKU admits one unit more than the tables have');

# eight buyers race for what is left, one unit at a time, then a sweep
# takes whatever they left
my $bench = "$dir/buy.sql";
open my $bfh, '>', $bench or die "$bench: $!";
print $bfh "\\set n random(1, " . scalar(@SKUS) . ")\n",
  "SELECT status FROM inventory.reserve(pg_catalog.format('F-%s', pg_catalog.lpad(:n::text, 2, '0')), 1,",
  " 'post-' || :client_id || '-' || pg_catalog.md5(pg_catalog.random()::text));\n";
close $bfh;
$new->command_ok([ 'pgbench', '-n', '-c', '8', '-j', '2', '-t', '300', '-f', $bench,
				   '-U', 'shop_app', '-d', $new->connstr('postgres') ], 'eight buyers race on the new primary');
as_app($new, 'postgres', qq{
SELECT inventory.reserve(sku, inventory.available(sku), 'sweep-' || sku)
  FROM unnest($SKU_LIST) sku WHERE inventory.available(sku) > 0;
});
is(as_app($new, 'postgres',
	"SELECT count(*) FROM unnest($SKU_LIST) sku WHERE inventory.available(sku) <> 0"),
	'0', 'every SKU is sold out');

my %sold;
for (split /\n/, as_admin($new, 'postgres', q{
SELECT sku, sum(qty) FROM inventory.ledger
 WHERE order_id LIKE 'post-%' OR order_id LIKE 'sweep-%' GROUP BY sku}))
{
	my ($sku, $n) = split /\|/;
	$sold{$sku} = $n;
}
is(join(' ', map { "$_:" . ($sold{$_} // 0) } @SKUS),
	join(' ', map { "$_:$before->{$_}[2]" } @SKUS),
	'the units sold after the promotion are exactly the units the tables had');
my $after = stock($new);
is(join(' ', grep { $after->{$_}[1] > $after->{$_}[0] || $after->{$_}[2] != 0 } @SKUS), '',
	'nothing is oversold: on_hand >= reserved and available = 0 for every SKU');
is(as_monitor($new, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"verify('30 s') is empty after the sale");

# --- the reservations made before the promotion expire ---------------------------

# those with a 2-second ttl: wait until all of them are overdue
my $short = q{order_id LIKE 'c%' AND state = 'PENDING' AND expires_at < now() + interval '1 minute'};
ok(poll_as($new, 'shop_admin', 'postgres',
	"SELECT coalesce(max(expires_at) < now(), true) FROM inventory.ledger WHERE $short"),
	'the short reservations from before the promotion fall due');
my ($due, $units) = split /\|/, as_admin($new, 'postgres',
	"SELECT count(*), sum(qty) FROM inventory.ledger WHERE $short");
cmp_ok($due, '>', 0, "$due of them, $units units, are PENDING and overdue");
# a server setting: the superuser's
$new->append_conf('postgresql.conf', 'inventory.worker_enabled = on');
$new->reload;
ok(poll_as($new, 'shop_admin', 'postgres', "SELECT count(*) = 0 FROM inventory.ledger WHERE $short"),
	'the worker of the new primary expires them');
is(as_app($new, 'postgres', "SELECT sum(inventory.available(sku)) FROM unnest($SKU_LIST) sku"),
	$units, 'their units are on sale again');
is(as_monitor($new, 'postgres', "SELECT count(*) FROM inventory.verify('30 s')"), '0',
	"verify('30 s') is empty at the end");

$new->stop;
done_testing();

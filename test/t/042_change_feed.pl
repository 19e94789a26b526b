# The change feed with the workers on: a consumer that follows it under
# load and stops and resumes, its retention, its bell, and a restore.
#
#   * under pgbench (64 clients reserving, confirming and cancelling) and
#     the worker's expiry, a consumer reads inventory.changes() in small
#     batches, each from a new connection with the cursor it saved: at the
#     end it has seen each decision exactly once -- every reservation made
#     and every settlement in the ledger, none twice, none that the ledger
#     lacks -- and each reservation's settlement after its making;
#   * LISTEN inventory_changes is rung by the worker, without a payload;
#   * the worker prunes the rows past inventory.change_retention: a cursor
#     before them is refused (IV001), one after them goes on;
#   * pg_dump leaves the feed's rows out; in the restored database the feed
#     starts empty and a cursor of the source is refused (IV001).
#
# Who calls: the buyers, the consumer and the listener are shop_app's
# (inventory_app); shop_admin restocks and reads the ledger; the
# superuser creates the databases and the roles, turns the feed on (ALTER
# DATABASE), sets the retention and dumps and restores.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node wait_until listen_session notifications inventory_roles as_app as_admin);

my $node = inventory_node('feed', q{
inventory.expire_interval = '200ms'
inventory.change_retention = 0
});
$node->safe_psql('postgres', q{
CREATE DATABASE shop;
ALTER DATABASE shop SET inventory.change_feed = on});
$node->safe_psql('shop', 'CREATE EXTENSION inventory');
inventory_roles($node, 'shop');

# the consumer: reads after $cursor in batches of 50, each batch from a
# connection of its own, until a batch comes back short; returns the rows
# as [cursor, order, batch, state, settled_by]
my $cursor;
sub consume
{
	my @rows;
	while (1)
	{
		my $after = defined $cursor ? "'$cursor'" : 'NULL';
		my $out = as_app($node, 'shop',
			"SELECT cursor || '|' || order_id || '|' || batch_id || '|' || state || '|' || coalesce(settled_by, '-')"
			  . " FROM inventory.changes($after, 50)");
		my @batch = map { [ split /\|/ ] } grep { length } split /\n/, $out;
		push @rows, @batch;
		$cursor = $batch[-1][0] if @batch;
		return \@rows if @batch < 50;
	}
}

# --- a consumer under load --------------------------------------------------------

as_admin($node, 'shop', "SELECT inventory.restock('HOT', 100000, 'in-hot')");
my $script = PostgreSQL::Test::Utils::tempdir() . '/buy.sql';
PostgreSQL::Test::Utils::append_to_file($script, <<'EOS');
\set k random(1, 1000000000)
\set fate random(1, 10)
SELECT (inventory.reserve('HOT', 1, 'b-' || :client_id || '-' || :k, 1, '1 second')).status;
SELECT CASE WHEN :fate <= 5 THEN (inventory.confirm('b-' || :client_id || '-' || :k)).status
            WHEN :fate <= 8 THEN (inventory.cancel('b-' || :client_id || '-' || :k)).status END;
EOS
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start([ 'pgbench', '-n', '-c', '64', '-j', '2', '-T', '6', '-f', $script,
		$node->connstr('shop') . ' user=shop_app' ], '>', \$bench_out, '2>', \$bench_err);
my @seen;
my $batches = 0;
while ($bench->pumpable)
{
	push @seen, @{ consume() };
	$batches++;
	$bench->pump_nb;
}
$bench->finish or die "pgbench: $bench_err";
# the unsettled ones (a fifth) expire by their one-second ttl
ok(wait_until(60, sub {
	as_admin($node, 'shop', q{SELECT count(*) FROM inventory.ledger WHERE kind = 'reserve' AND state = 'PENDING'}) eq '0' }),
	'the reservations left unsettled expired');
push @seen, @{ consume() };
note(sprintf('%d rows read in %d rounds of reading while pgbench ran', scalar @seen, $batches));

my %count;
$count{"$_->[1]|$_->[2]|$_->[3]|$_->[4]"}++ for @seen;
my $ledger = as_admin($node, 'shop', q{
SELECT order_id || '|' || batch_id || '|PENDING|-' FROM inventory.ledger WHERE kind = 'reserve'
UNION ALL
SELECT order_id || '|' || batch_id || '|' || state || '|' || settled_by FROM inventory.ledger
 WHERE kind = 'reserve' AND state <> 'PENDING'});
my %want = map { $_ => 1 } split /\n/, $ledger;
cmp_ok(scalar(keys %want), '>', 1000, 'the load made and settled more than a thousand reservations');
is(join(' ', grep { $count{$_} > 1 } sort keys %count), '', 'the consumer saw no decision twice');
is(join(' ', grep { !$want{$_} } sort keys %count), '', 'nor one the ledger does not have');
is(join(' ', grep { !$count{$_} } sort keys %want), '', 'and every decision of the ledger, made and settled');
my %made;
my @out_of_order;
for my $r (@seen)
{
	my $key = "$r->[1]|$r->[2]";
	if ($r->[3] eq 'PENDING') { $made{$key} = 1 }
	elsif (!$made{$key}) { push @out_of_order, $key }
}
is(join(' ', @out_of_order), '', 'each settlement came after its reservation was made');
my %by = map { $_->[4] => 1 } grep { $_->[3] ne 'PENDING' } @seen;
is(join(' ', sort keys %by), 'call expiry', 'settled by calls and by the expiry');

# --- the bell -----------------------------------------------------------------------

my $listener = listen_session($node, 'shop', 'shop_app', 'inventory_changes');
my $buyer_pid = as_app($node, 'shop', q{
SELECT pg_backend_pid() FROM (SELECT inventory.reserve('HOT', 1, 'bell-1')) r});
my $rung;
ok(wait_until(30, sub { ($rung) = @{ notifications($listener, 'inventory_changes') }; $rung }),
	'LISTEN inventory_changes is rung after a reservation commits');
isnt($rung->[1], $buyer_pid, 'by a worker, not the committing session');
is($rung->[0], '', 'with no payload');
$listener->{in} .= "\\q\n";
$listener->{run}->finish;

# --- retention ----------------------------------------------------------------------

my $old_cursor = as_app($node, 'shop', 'SELECT cursor FROM inventory.changes(NULL, 1)');
consume();
$node->append_conf('postgresql.conf', "inventory.change_retention = 1");
$node->reload;
sleep 1;
# a reservation, and a cancel the worker comes to fold (and to prune)
as_app($node, 'shop', "SELECT inventory.reserve('HOT', 1, 'after-retention')");
as_app($node, 'shop', "SELECT inventory.cancel('bell-1')");
ok(wait_until(30, sub { as_admin($node, 'shop', 'SELECT count(*) FROM inventory.change') <= 2 }),
	'the worker prunes the rows older than inventory.change_retention');
my ($ret, $stdout, $stderr) = $node->psql('shop', "\\set VERBOSITY verbose\nSELECT * FROM inventory.changes('$old_cursor')",
	extra_params => [ '-U', 'shop_app' ]);
like($stderr, qr/ERROR:  IV001: cursor ".*" is older than what the change feed keeps/,
	'a cursor before the pruned rows is refused with IV001');
is(as_app($node, 'shop', "SELECT count(*) FROM inventory.changes('$cursor') WHERE order_id = 'after-retention'"), '1',
	'the consumer\'s cursor, after them, goes on');

# --- a restore --------------------------------------------------------------------

my $dump = $node->basedir . '/shop.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('shop') ], 'pg_dump of the shop');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', $node->connstr('restored'), $dump ], 'pg_restore');
is(as_admin($node, 'restored', 'SELECT count(*) FROM inventory.change'), '0', 'the feed\'s rows are not dumped');
($ret, $stdout, $stderr) = $node->psql('restored', "\\set VERBOSITY verbose\nSELECT * FROM inventory.changes('$cursor')",
	extra_params => [ '-U', 'shop_app' ]);
like($stderr, qr/ERROR:  IV001: cursor ".*" is not of this database's change feed/,
	'in the restored database, a cursor of the source is refused with IV001');

$node->stop;
done_testing();

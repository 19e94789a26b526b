# The ledger as an outbox: downstream services read inventory.ledger's
# changes through logical decoding -- a pgoutput publication, as Debezium
# reads it, and wal2json through the real pg_recvlogical -- while the
# workers expire and fold.  A consumer (test/t/lib/Outbox.pm) rebuilds
# every movement by its key from the stream alone, and with it every
# SKU's sold units and stock, and they equal the ledger's and
# inventory.stock's; folds and restores are told from movements by the
# extension's markers.  The stream is consumed across a server restart
# (pg_recvlogical reconnects), a consumer stopped and one killed (its
# successor gets again what it had not confirmed: at least once, the
# repeats recognised by key); nothing is lost.  A pg_restore into another
# database streams its markers around its rows.
#
# Who calls: the sale's calls are shop_app's (inventory_app: reserve,
# confirm, cancel, extend, carts, reserve_now) and shop_admin's
# (inventory_admin: restock, adjust, withdraw, fold, the ledger), each over
# connections of its own, the first ones after the restart too; shop_admin
# reads the ledger the stream is compared with, and verifies.  The
# superuser creates the databases, the extension and the roles, the
# publication and the slots, streams and reads them (replication),
# restarts the server, runs pg_dump and pg_restore, and writes the test's
# own logical messages (scaffolding: no user-facing equivalent).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use JSON::PP;
use FindBin;
use lib "$FindBin::Bin/lib";
use InventoryTest qw(inventory_node wait_until inventory_roles as_app as_admin as_each_caller poll_as);
use Outbox;

my $timeout = $PostgreSQL::Test::Utils::timeout_default;

# the workers expire and fold; folds come in small batches; a consumer is
# asked for its position only when it says so (see the killed consumer)
my $node = inventory_node('stream', <<'EOC', allows_streaming => 'logical');
inventory.expire_interval = '200ms'
inventory.fold_batch = 5
wal_sender_timeout = '10min'
max_slot_wal_keep_size = '1GB'
EOC

# a build of PostgreSQL that lists the output plugins it allows
if ($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_settings WHERE name = 'output_plugin_libraries'") eq '1')
{
	$node->append_conf('postgresql.conf',
		"output_plugin_libraries = 'pgoutput, test_decoding, wal2json'\n");
	$node->reload;
}

$node->safe_psql('postgres', 'CREATE DATABASE shop');
$node->safe_psql('shop', q{
CREATE EXTENSION inventory;
CREATE PUBLICATION outbox FOR TABLE inventory.ledger;
SELECT pg_create_logical_replication_slot('cdc', 'pgoutput')});
inventory_roles($node, 'shop');

# run_or_die(CMD...): runs a command of the test's scaffolding (a client
# tool); dies with what it said when it fails
sub run_or_die
{
	my ($out, $err) = ('', '');
	IPC::Run::run([@_], '<', '/dev/null', '>', \$out, '2>', \$err) or die "@_ failed:\n$out$err";
	return $out;
}

# wal2json's slot, made and read by pg_recvlogical
my $file = "$PostgreSQL::Test::Utils::log_path/029_stream_wal2json.jsonl";
unlink $file;
my @recv = ('pg_recvlogical', '-d', $node->connstr('shop'), '-S', 'w2j');
run_or_die(@recv, '--create-slot', '-P', 'wal2json');

my $n_consumer = 0;
# consumer(FSYNC, STATUS): pg_recvlogical streaming the slot into $file,
# fsyncing and telling the server its position every FSYNC and STATUS
# seconds; it reconnects when the connection is lost
sub consumer
{
	my ($fsync, $status) = @_;
	my $log = "$PostgreSQL::Test::Utils::log_path/029_stream_recvlogical_" . ++$n_consumer;
	return IPC::Run::start(
		[ @recv, '--start', '-f', $file, '-F', $fsync, '-s', $status, '-v',
		  '-o', 'format-version=2', '-o', 'include-xids=1', '-o', 'include-timestamp=1',
		  '-o', 'include-lsn=1' ],
		'<', '/dev/null', '>', "$log.out", '2>', "$log.err");
}

# a transactional message of the test's own prefix, which the consumer
# leaves alone: once it is in the file, so is everything before it
sub sentinel
{
	my ($name) = @_;
	$node->safe_psql('shop', "SELECT pg_logical_emit_message(true, 'test', '$name')");
}

sub in_file
{
	my ($name) = @_;
	my @hits = (-e $file ? slurp_file($file) : '') =~ /"prefix":"test","content":"$name"/g;
	return scalar @hits;
}

# wait_in_file(NAME): waits until the sentinel NAME is in the file (dies
# if it does not come)
sub wait_in_file
{
	my ($name) = @_;
	wait_until($timeout, sub { in_file($name) >= 1 })
	  or die "the sentinel $name never reached pg_recvlogical's file";
}

# the ledger read by the administrator
sub wait_folded
{
	return poll_as($node, 'shop_admin', 'shop', q{
SELECT count(*) = 0 FROM inventory.ledger
 WHERE NOT folded AND (state IS NULL OR state <> 'PENDING')});
}

# --- a sale, the workers on, the first consumer streaming ---------------
my $first = consumer(1, 1);
as_each_caller($node, 'shop', q{
SELECT inventory.restock('TEE', 100, 'in-tee'), inventory.restock('MUG', 50, 'in-mug'),
       inventory.restock('CAP', 20, 'in-cap');
SELECT inventory.confirm('o-1') FROM inventory.reserve('TEE', 2, 'o-1', ttl => '1 hour');
SELECT inventory.cancel('o-2') FROM inventory.reserve('TEE', 1, 'o-2', ttl => '1 hour');
SELECT inventory.reserve('MUG', 3, 'o-3', ttl => '1 hour');
SELECT inventory.extend('o-3', 1, '2 hours');
SELECT inventory.reserve('CAP', 1, 'late-1', ttl => '1 second'),
       inventory.reserve('MUG', 2, 'late-2', ttl => '1 second');
SELECT * FROM inventory.reserve_cart('cart-1', '{TEE,MUG,CAP}', '{1,1,1}', '1 hour', 'ann');
SELECT * FROM inventory.confirm_order('cart-1');
SELECT * FROM inventory.reserve_cart('cart-2', '{TEE,MUG}', '{2,1}', '1 hour', 'bob');
SELECT * FROM inventory.cancel_order('cart-2');
SELECT inventory.adjust('MUG', 45, 'count-1');
SELECT inventory.withdraw('CAP', 3, 'out-1');
BEGIN;
SELECT inventory.reserve('TEE', 1, 'o-4', 1, '1 hour'), inventory.reserve('MUG', 1, 'o-4', 2, '1 hour');
SELECT inventory.confirm('o-4', 1);
COMMIT;
BEGIN;
SELECT inventory.reserve('TEE', 5, 'ghost', ttl => '1 hour');
ROLLBACK;
});
for my $call ([ 'TEE', 1, 'now-1' ], [ 'CAP', 2, 'now-2' ])
{
	is(as_app($node, 'shop', "SELECT inventory.reserve_now('$call->[0]', $call->[1], '$call->[2]')"),
		'ok', "reserve_now() of $call->[2]");
}
as_app($node, 'shop', "SELECT inventory.confirm('now-1')");
ok(poll_as($node, 'shop_admin', 'shop', q{
SELECT count(*) = 2 FROM inventory.ledger WHERE order_id LIKE 'late-%' AND state = 'EXPIRED'}),
	'the worker expires the unpaid reservations');
ok(wait_folded(), 'and folds every settled movement');
sentinel('phase-1');
wait_in_file('phase-1');    # pg_recvlogical has written the sale to its file

# --- the server restarts under the consumer, which reconnects -----------
# (the first calls after it are the roles')
$node->restart;
as_each_caller($node, 'shop', q{
SELECT inventory.confirm('o-5') FROM inventory.reserve('TEE', 1, 'o-5', ttl => '1 hour');
SELECT inventory.reserve('MUG', 1, 'late-3', ttl => '1 second');
SELECT inventory.restock('CAP', 5, 'in-cap-2');
});
is(as_app($node, 'shop', "SELECT inventory.reserve_now('MUG', 1, 'now-3')"), 'ok',
	'reserve_now() after the restart');
as_app($node, 'shop', "SELECT inventory.cancel('now-3')");
ok(poll_as($node, 'shop_admin', 'shop', "SELECT state = 'EXPIRED' FROM inventory.ledger WHERE order_id = 'late-3'"),
	'the worker expires after the restart');
ok(wait_folded(), 'and folds');
sentinel('phase-2');
# pg_recvlogical reconnected by itself and streams on (it is a client
# tool of PostgreSQL's: the stream's content is the test)
wait_in_file('phase-2');
$first->signal('INT');
$first->finish;

# --- a consumer killed before it confirmed what it received -------------
# (it fsyncs and reports its position once an hour: never, here)
my $second = consumer(3600, 3600);
as_each_caller($node, 'shop', q{
SELECT inventory.confirm('o-6') FROM inventory.reserve('TEE', 1, 'o-6', ttl => '1 hour');
SELECT inventory.reserve('CAP', 1, 'o-7', ttl => '1 hour');
SELECT inventory.withdraw('TEE', 1, 'out-2');
});
sentinel('phase-3');
wait_in_file('phase-3');    # a second pg_recvlogical receives more
$second->signal('KILL');
eval { $second->finish };

# --- its successor on the same slot ---------------------------------------
my $third = consumer(1, 1);
as_each_caller($node, 'shop', q{
SELECT inventory.cancel('o-8') FROM inventory.reserve('MUG', 1, 'o-8', ttl => '1 hour');
SELECT inventory.adjust('TEE', 80, 'count-2');
SELECT inventory.fold();
});
ok(wait_folded(), 'everything settled is folded');
sentinel('end');
wait_in_file('end');    # a third pg_recvlogical on the same slot streams to the end
$third->signal('INT');
$third->finish;
cmp_ok(in_file('phase-3'), '>=', 2,
	'what the killed consumer had received and not confirmed came again to its successor: at least once');

# --- the consumer rebuilds from the stream alone ----------------------------
my $cut = 0;
my @txns = Outbox::wal2json_transactions(slurp_file($file), \$cut);
my $w2j = Outbox->new;
$w2j->apply($_) for @txns;
is_deeply($w2j->{anomalies}, [], 'the consumer makes sense of every change and marker');
cmp_ok($w2j->{repeated_txns}, '>=', 1, "transactions that came again are recognised by key ($w2j->{repeated_txns})");
my %other = map { $_ => 1 } @{ $w2j->{other} };
is_deeply([ sort keys %other ], [ sort qw(phase-1 phase-2 phase-3 end) ],
	'messages of other prefixes are passed by');

sub rows_sql
{
	my ($db) = @_;
	my %rows;
	for (split /\n/, as_admin($node, $db, q{
SELECT order_id, batch_id, kind, sku, qty, coalesce(state::text, ''), folded, xmin
  FROM inventory.ledger}))
	{
		my ($order_id, $batch_id, $kind, $sku, $qty, $state, $folded, $xmin) = split /\|/;
		$rows{"$order_id\0$batch_id"} = { kind => $kind, sku => $sku, qty => $qty, state => $state,
			folded => $folded eq 't' ? 1 : 0, xmin => $xmin };
	}
	return \%rows;
}

sub rows_stream
{
	my ($c) = @_;
	my %rows;
	while (my ($k, $r) = each %{ $c->{rows} })
	{
		$rows{$k} = { kind => $r->{kind}, sku => $r->{sku}, qty => $r->{qty},
			state => $r->{state} // '', folded => $r->{folded} ? 1 : 0,
			xmin => $c->{row_xid}{$k} };
	}
	return \%rows;
}

my $ledger = rows_sql('shop');
is_deeply(rows_stream($w2j), $ledger,
	'every movement, by (order_id, batch_id): kind, SKU, quantity, state, folded, and the transaction that wrote it last, as in the ledger: nothing lost');
ok(!exists $w2j->{rows}{"ghost\x{0}1"}, 'a rolled back reservation never came');
my %states = map { $ledger->{$_}{state} => 1 } keys %$ledger;
is(join(' ', sort grep { $_ ne '' } keys %states), 'CANCELLED CONFIRMED EXPIRED PENDING',
	'the ledger holds reservations in every state');

my %stock;
for (split /\n/, as_admin($node, 'shop', q{
SELECT s.sku, s.on_hand, s.reserved,
       coalesce((SELECT sum(qty) FROM inventory.ledger l
                  WHERE l.sku = s.sku AND state = 'CONFIRMED'), 0)
  FROM inventory.stock s}))
{
	my ($sku, $on_hand, $reserved, $sold) = split /\|/;
	$stock{$sku} = { on_hand => $on_hand, reserved => $reserved, sold => $sold };
}
is_deeply($w2j->stock, \%stock, "every SKU's sold units, on_hand and reserved, rebuilt from the stream, as inventory.stock and the ledger say");

# housekeeping: folds
my @folds = @{ $w2j->{folds} };
cmp_ok(scalar @folds, '>=', 3, scalar(@folds) . ' folds in the stream, each bracketed by its markers');
is_deeply([ grep { $_->{rows} != $_->{seen_rows} || $_->{skus} != $_->{seen_skus} } @folds ], [],
	'each fold\'s end marker counts the ledger rows and SKUs it changed');
my $folded = grep { $_->{folded} } values %$ledger;
my $fold_rows = 0;
$fold_rows += $_->{rows} for @folds;
is($fold_rows, $folded, "the folds' rows add up to the ledger's folded movements ($folded)");
my %business;
$business{ $_->[0] }++ for @{ $w2j->{movements} };
is($business{I}, scalar(keys %$ledger), 'every movement came once as an insert, apart from the folds');

# --- the same story through pgoutput, as a CDC tool reads it ----------------
my @hex = split /\n/, $node->safe_psql('shop', q{
SELECT encode(data, 'hex') FROM pg_logical_slot_get_binary_changes('cdc', NULL, NULL,
  'proto_version', '1', 'publication_names', 'outbox', 'messages', 'true')});
my $cdc = Outbox->new;
$cdc->apply($_) for Outbox::pgoutput_transactions(@hex);
is_deeply($cdc->{anomalies}, [], 'the consumer makes sense of pgoutput\'s stream');
is($cdc->{repeats}, 0, 'read once, nothing came twice');
is_deeply(rows_stream($cdc), $ledger, 'every movement, as in the ledger, from pgoutput');
is_deeply([ map { [ $_->{rows}, $_->{seen_rows} ] } @{ $cdc->{folds} } ],
	[ map { [ $_->{rows}, $_->{rows} ] } @folds ],
	'the same folds, markers and rows, as wal2json\'s');
is_deeply($cdc->{movements}, $w2j->{movements}, 'and the same movements in the same order');

# --- a restore into another database streams its markers --------------------
my $tmp = PostgreSQL::Test::Utils::tempdir;
run_or_die('pg_dump', '-Fc', '-f', "$tmp/shop.dump", '-d', $node->connstr('shop'));
$node->safe_psql('postgres', 'CREATE DATABASE copy');
$node->safe_psql('copy', "SELECT pg_create_logical_replication_slot('restored', 'wal2json')");
run_or_die('pg_restore', '-d', $node->connstr('copy'), "$tmp/shop.dump");
my $restored = join "\n", split /\n/, $node->safe_psql('copy', q{
SELECT data FROM pg_logical_slot_get_changes('restored', NULL, NULL,
  'format-version', '2', 'include-xids', '1', 'include-lsn', '1')});
append_to_file("$PostgreSQL::Test::Utils::log_path/029_stream_restore.jsonl", "$restored\n");
my $copy = Outbox->new;
$copy->apply($_) for Outbox::wal2json_transactions($restored);
is_deeply($copy->{anomalies}, [], 'the consumer makes sense of the restore');
my %counts = map { my ($t, $n) = split /\|/; ("inventory.$t" => $n) } split /\n/, as_admin($node, 'copy', q{
SELECT 'sku', count(*) FROM inventory.sku UNION ALL SELECT 'ledger', count(*) FROM inventory.ledger});
is_deeply([ sort { $a->{table} cmp $b->{table} } @{ $copy->{restores} } ],
	[ map { { table => $_, rows => $counts{$_}, seen => $counts{$_} } } sort keys %counts ],
	'each table\'s restore is bracketed by its markers, which count its rows');
is(scalar @{ $copy->{movements} }, 0, 'no restored row passes for a movement');
is(scalar(keys %{ $copy->{history} }), $counts{'inventory.ledger'}, 'every ledger row came as history');
my $copied = rows_sql('copy');
delete $_->{xmin} for values %$copied;
my $rebuilt = rows_stream($copy);
delete $_->{xmin} for values %$rebuilt;
is_deeply($rebuilt, $copied, 'the history rebuilds the restored ledger');
like($restored, qr/"content":"\{\\"event\\":\\"restore\\",\\"phase\\":\\"begin\\",\\"table\\":\\"inventory.ledger\\"\}"\}\n\{"action":"I"[^\n]*"table":"ledger"/,
	'the restore marker comes before the rows it marks');

is($node->safe_psql('copy', q{
SELECT count(*) FILTER (WHERE pubname = 'outbox') || ' '
       || (SELECT count(*) FROM pg_publication_tables WHERE pubname = 'outbox')
  FROM pg_publication}), '1 0',
	'pg_restore brings the publication but not the ledger in it: the extension\'s tables are left out');
is($node->safe_psql('shop', q{
SELECT string_agg(slot_name || ' ' || wal_status, ', ' ORDER BY slot_name) FROM pg_replication_slots
 WHERE database = 'shop'}), 'cdc reserved, w2j reserved', 'the slots keep their WAL within max_slot_wal_keep_size');
is(as_admin($node, 'shop', "SELECT count(*) FROM inventory.verify('30 s')"), '0', "the cache verifies: verify('30 s') is empty");
$node->safe_psql('copy', "SELECT pg_drop_replication_slot('restored')");
$node->safe_psql('shop', "SELECT pg_drop_replication_slot('cdc')");
run_or_die(@recv, '--drop-slot');

$node->stop;
done_testing();

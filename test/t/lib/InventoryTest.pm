# Helpers the TAP tests share.
package InventoryTest;

use strict;
use warnings;
use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Time::HiRes qw(usleep time);

our @EXPORT_OK = qw(inventory_node wait_until history_sql);

# inventory_node(NAME, [CONF, [INIT_ARGS...]]): a new server, initialised
# with INIT_ARGS (allows_streaming => 1, ...), that preloads inventory and
# has CONF added to its postgresql.conf; started.
sub inventory_node
{
	my ($name, $conf, %init) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%init);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'inventory'\n" . ($conf // ''));
	$node->start;
	return $node;
}

# wait_until(SECONDS, CODE): polls CODE every 50 ms until it returns true or
# SECONDS have passed; returns its last answer.
sub wait_until
{
	my ($seconds, $cond) = @_;
	my $end = time + $seconds;
	while (time < $end)
	{
		return 1 if $cond->();
		usleep(50_000);
	}
	return $cond->();
}

# history_sql(): the statements of a history with movements in every state,
# folded and not -- the first block is folded, the second is not -- with
# keys and SKUs that COPY must escape.  Run it with the workers off.
#   TEE 100 in; paid 5 CONFIRMED, gone 2 CANCELLED (folded);
#       open/1 4 and open/2 1 PENDING, paid-2 1 CONFIRMED
#   MUG 40 in; late 3 EXPIRED (folded); gone-2 2 CANCELLED, late-2 1 EXPIRED,
#       count-1 stocktake to 30
#   CAP 10 in; all 10 PENDING; in-5 3 in
#   ÉTÉ<tab>ß 9 in (key with quote, backslash, double quotes; batch -7);
#       a reservation of 2 under a key with a newline
#   NEW: a SKU without movements
sub history_sql
{
	return <<'SQL';
SELECT inventory.restock('TEE', 100, 'in-1'), inventory.restock('MUG', 40, 'in-2'),
       inventory.restock('CAP', 10, 'in-3'), inventory.restock(E'ÉTÉ\tß', 9, E'in-4 it''s\\a "key"', -7);
SELECT inventory.confirm('paid') FROM inventory.reserve('TEE', 5, 'paid', ttl => '1 hour');
SELECT inventory.cancel('gone') FROM inventory.reserve('TEE', 2, 'gone');
SELECT inventory.reserve('MUG', 3, 'late', ttl => '10 milliseconds');
SELECT pg_sleep(0.05);
SELECT inventory.expire();
SELECT inventory.fold();
SELECT inventory.reserve('TEE', 4, 'open', 1, '1 hour'), inventory.reserve('TEE', 1, 'open', 2, '1 hour');
SELECT inventory.reserve('CAP', 10, 'all', ttl => '1 hour');
SELECT inventory.reserve(E'ÉTÉ\tß', 2, E'ordre\n"été"', ttl => '1 hour');
SELECT inventory.confirm('paid-2') FROM inventory.reserve('TEE', 1, 'paid-2', ttl => '1 hour');
SELECT inventory.cancel('gone-2') FROM inventory.reserve('MUG', 2, 'gone-2');
SELECT inventory.reserve('MUG', 1, 'late-2', ttl => '10 milliseconds');
SELECT pg_sleep(0.05);
SELECT inventory.expire();
SELECT inventory.restock('CAP', 3, 'in-5');
SELECT inventory.adjust('MUG', 30, 'count-1');
INSERT INTO inventory.sku (sku) VALUES ('NEW');
SQL
}

1;

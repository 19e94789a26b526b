#!/usr/bin/env bash
# scripts/demo.sh [BUYERS] [UNITS] [CLIENTS] -- a flash sale.
#
# Starts a scratch cluster with the extension preloaded, stocks one SKU with
# UNITS units, and lets BUYERS buyers race for it over CLIENTS connections
# (pgbench).  Each buyer reserves one unit and, if it got one, pays (nine in
# ten) or changes their mind (one in ten: the unit goes back on sale).
# Prints progress every second, then a summary.  Removes the cluster at the
# end.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BUYERS=${1:-5000}
UNITS=${2:-1000}
CLIENTS=${3:-64}
[ "$BUYERS" -ge "$CLIENTS" ] || inv_die "need at least as many buyers as clients"

inv_setup

DIR=$(mktemp -d /tmp/inventory-demo.XXXXXX)
trap 'inv_cluster_stop "$DIR"; rm -rf "$DIR"' EXIT
inv_log "starting a scratch cluster in $DIR"
inv_cluster_start "$DIR"

psql_q() { inv_as_pg psql -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }
psql_q -c 'CREATE EXTENSION inventory' \
	-c "SELECT inventory.restock('FLASH-1', $UNITS, 'delivery-1')" >/dev/null

cp "$INV_TOP/bench/sql/buyer.sql" "$DIR/buyer.sql"
chmod a+r "$DIR/buyer.sql"

PER_CLIENT=$(( (BUYERS + CLIENTS - 1) / CLIENTS ))
inv_log "flash sale: $((PER_CLIENT * CLIENTS)) buyers, $UNITS units, $CLIENTS connections"
inv_as_pg pgbench -n -M prepared -c "$CLIENTS" -j 2 -t "$PER_CLIENT" -P 1 \
	-D sku=FLASH-1 -D pay=9 -f "$DIR/buyer.sql" postgres 2>&1 | tee "$DIR/pgbench.out" |
	grep -E '^progress' | sed 's/^/  /'
TPS=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$DIR/pgbench.out" | head -1)

echo
echo "Summary"
psql_q -At -F $'\t' <<SQL | while IFS=$'\t' read -r what value; do printf '  %-28s %s\n' "$what" "$value"; done
SELECT 'units stocked', $UNITS;
SELECT 'buyers', $((PER_CLIENT * CLIENTS));
SELECT 'units sold (confirmed)', count(*) FROM inventory.ledger WHERE state = 'CONFIRMED';
SELECT 'reservations cancelled', count(*) FROM inventory.ledger WHERE state = 'CANCELLED';
SELECT 'buyers turned away', rejects FROM inventory.sku_stats WHERE sku = 'FLASH-1';
SELECT 'on hand / reserved left', on_hand || ' / ' || reserved FROM inventory.stock;
SELECT 'oversold',
       CASE WHEN bool_or(on_hand < 0 OR reserved > on_hand) THEN 'YES' ELSE 'no' END
  FROM inventory.stock;
SELECT 'units sold = units stocked',
       CASE WHEN (SELECT count(*) FROM inventory.ledger WHERE state = 'CONFIRMED') = $UNITS
            THEN 'yes' ELSE 'no' END;
SELECT 'cache = tables (verify())',
       CASE WHEN count(*) = 0 THEN 'yes' ELSE 'NO: ' || count(*) || ' differences' END
  FROM inventory.verify();
SELECT 'throughput (buyers/s)', round(${TPS:-0});
SQL

#!/usr/bin/env bash
# scripts/demo.sh [--smoke] [--nodes N] [BUYERS] [UNITS] [CLIENTS] -- one
# flash sale, sold four ways, or through a router over N nodes.
#
# Starts a scratch cluster with the extension preloaded and runs the same
# flash sale on it four times, one after the other, each in a database of
# its own: one SKU with UNITS units, BUYERS buyers racing for them over
# CLIENTS connections (pgbench -M prepared).  Every buyer, in one
# transaction, takes one unit and, if they got one, pays (nine in ten) or
# changes their mind (one in ten: the unit goes back on sale).  The ways:
#
#   read-check-write    plain SQL as a naive application writes it: read the
#                       count, check it, write back the count minus one,
#                       insert the order (bench/sql/demo_read_check_write.sql).
#                       Buyers who read the same count all get a unit: it
#                       oversells.
#   conditional UPDATE  UPDATE stock SET qty = qty - 1 WHERE sku = $1 AND
#                       qty >= 1, and the order when a row was updated
#                       (bench/sql/demo_update.sql).  Correct, but every buyer
#                       waits for the lock of the one hot row.
#   inventory           inventory.reserve, then confirm or cancel, in one
#                       transaction (bench/sql/buyer.sql).  Correct and fast.
#   reserve_now         inventory.reserve_now, the express lane: the
#                       reservation committed with the other buyers' of the
#                       moment, then confirm or cancel in a transaction of
#                       its own (bench/sql/buyer_now.sql).
#
# Prints each round's progress every second, then one table with the four
# side by side: units stocked, sold, oversold (sold beyond stock), buyers
# served per second (pgbench's TPS) and the p99 latency (from pgbench's
# per-transaction logs); then the checks.  Removes the cluster at the end.
#
#   defaults  3000 buyers, 1000 units, 64 clients: about 30 s on 2 cores,
#             half of it read-check-write, which never sells out and so
#             queues every buyer on the hot row (its time grows with BUYERS).
#   --smoke   400 buyers, 100 units, 8 clients, a few seconds (run by
#             scripts/test.sh); numbers given after it still count.
#   --nodes N the inventory way only, through a router database
#             (inventory_router over PL/Proxy) to N partition databases
#             (2, 4, 8 or 16) on the same cluster, the SKU split over N
#             buckets (inventory.split), each buyer confirming or
#             cancelling with the SKU (bench/sql/buyer_router.sql); prints
#             what each node held, moved, sold and has left, and the total.
#             The router's sessions ask every bucket again at every
#             refusal (inventory_router.short_recheck = 0), so that a unit
#             cancelled late in any bucket still finds its buyer.
#
# Exits non-zero if a round failed, if the conditional UPDATE or inventory
# oversold, if inventory.verify() found a difference, or if inventory sold
# fewer units than it stocked although there were enough buyers (at least
# 2 x UNITS + CLIENTS: a cancelled unit needs a later buyer); with --nodes,
# also if a node sold more than it had or units were left in transit.  The
# read-check-write oversell is a race: it is shown, never checked.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,3p;28,42p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

SMOKE=0
NODES=0
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) SMOKE=1 ;;
	--nodes) NODES=${2:-}; shift
		[[ $NODES =~ ^(2|4|8|16)$ ]] || inv_die "--nodes takes 2, 4, 8 or 16 (PL/Proxy wants a power of two)" ;;
	-h | --help) usage ;;
	-*) usage ;;
	*) break ;;
	esac
	shift
done
if [ "$SMOKE" -eq 1 ]; then DEFAULTS=(400 100 8); else DEFAULTS=(3000 1000 64); fi
BUYERS=${1:-${DEFAULTS[0]}}
UNITS=${2:-${DEFAULTS[1]}}
CLIENTS=${3:-${DEFAULTS[2]}}
for n in "$BUYERS" "$UNITS" "$CLIENTS"; do [[ $n =~ ^[1-9][0-9]*$ ]] || usage; done
[ "$BUYERS" -ge "$CLIENTS" ] || inv_die "need at least as many buyers as clients"

# the four ways, each a database and a buyer's script; every array below
# is indexed like these
WAYS=(read_check_write conditional_update inventory inventory_now)
SCRIPTS=(demo_read_check_write.sql demo_update.sql buyer.sql buyer_now.sql)

inv_setup

DIR=$(mktemp -d /tmp/inventory-demo.XXXXXX)
trap 'inv_cluster_stop "$DIR"; rm -rf "$DIR"' EXIT
inv_log "starting a scratch cluster in $DIR"
# with --nodes, a router session holds a connection to each partition
CONNS=$((100 + CLIENTS * (NODES + 1)))
inv_cluster_start "$DIR" "max_connections = $((CONNS > 200 ? CONNS : 200))"

psql_in() { local db=$1; shift; inv_as_pg psql -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }
# a copy the PostgreSQL user can read wherever the checkout lives
for f in "${SCRIPTS[@]}"; do
	cp "$INV_TOP/bench/sql/$f" "$DIR/$f"
	chmod a+r "$DIR/$f"
done

PER_CLIENT=$(( (BUYERS + CLIENTS - 1) / CLIENTS ))
TOTAL=$((PER_CLIENT * CLIENTS))

# p99_ms PREFIX: the 99th percentile (nearest rank) of the latencies in
# pgbench's per-transaction logs PREFIX.* (one file per thread), whose third
# field is in µs; fails unless they hold every buyer
p99_ms() {
	cat "$1".* | awk '{ print $3 }' | sort -n | awk -v total="$TOTAL" '
		{ us[NR] = $1 }
		END { if (NR != total) exit 1; printf "%.1f", us[int((NR * 99 + 99) / 100)] / 1000 }'
}

# ---------------------------------------------------------------- --nodes
if [ "$NODES" -gt 0 ]; then
	cp "$INV_TOP/bench/sql/buyer_router.sql" "$DIR/" && chmod a+r "$DIR/buyer_router.sql"
	inv_log "$NODES partition databases and a router"
	inv_router_create "$NODES"
	psql_in shop <<SQL >/dev/null || inv_die "setting up the router failed"
ALTER DATABASE shop SET inventory_router.short_recheck = 0;
SELECT inventory.restock('FLASH-1', $UNITS, 'delivery-1');
SELECT count(*) FROM inventory.split('FLASH-1', $NODES);
SQL
	# node_figures P: units moved in and out by transfers, sold (CONFIRMED),
	# held (PENDING) and left for sale of FLASH-1 on partition P, and
	# whether it holds more than it has on hand now
	node_figures() {
		psql_in "inv_p$1" -At <<SQL
SELECT coalesce(sum(qty) FILTER (WHERE kind = 'restock' AND order_id LIKE 'inventory:transfer:%'), 0),
       coalesce(sum(qty) FILTER (WHERE kind = 'withdraw' AND order_id LIKE 'inventory:transfer:%'), 0),
       coalesce(sum(qty) FILTER (WHERE kind = 'reserve' AND state = 'CONFIRMED'), 0),
       coalesce(sum(qty) FILTER (WHERE kind = 'reserve' AND state = 'PENDING'), 0),
       (SELECT coalesce(sum(available), 0) FROM inventory.stock WHERE sku = 'FLASH-1'),
       (SELECT coalesce(bool_or(reserved > on_hand OR on_hand < 0), false) FROM inventory.stock)
  FROM inventory.ledger WHERE sku = 'FLASH-1'
SQL
	}
	# bucket and units of each partition, from a rebalance as docs/scaling-out.md
	# advises before a sale (it forgets the unsplit layout), and the
	# transfers so far (the split's)
	declare -A BUCKET START IN0 OUT0
	while IFS='|' read -r b p a; do BUCKET[$p]=$b; START[$p]=$a; done < <(psql_in shop -At \
		-c "SELECT bucket, part, available FROM inventory.rebalance('FLASH-1')")
	for p in $(seq 0 $((NODES - 1))); do
		IFS='|' read -r "IN0[$p]" "OUT0[$p]" _ <<<"$(node_figures "$p")"
	done
	inv_log "through the router: $TOTAL buyers, $UNITS units of FLASH-1 in $NODES buckets, $CLIENTS connections"
	inv_as_pg pgbench -n -M prepared -c "$CLIENTS" -j 2 -t "$PER_CLIENT" -P 1 \
		-l --log-prefix="$DIR/latency-shop" -D sku=FLASH-1 -D pay=9 -f "$DIR/buyer_router.sql" shop 2>&1 |
		tee "$DIR/shop.out" | grep -E '^progress' | sed 's/^/  router  /'
	status=${PIPESTATUS[0]}
	if [ "$status" -ne 0 ]; then
		tail -20 "$DIR/shop.out" >&2
		inv_die "pgbench failed through the router (exit status $status)"
	fi
	RTPS=$(printf '%.0f' "$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$DIR/shop.out" | head -1)")
	RP99=$(p99_ms "$DIR/latency-shop") || inv_die "the latency logs do not hold the $TOTAL buyers"

	echo
	echo "Summary: $TOTAL buyers, $UNITS units of FLASH-1 split over $NODES buckets, $CLIENTS connections to the router"
	nrow() { printf '  %-10s %7s %15s %9s %10s %7s %10s %7s\n' "$@"; }
	nrow partition bucket 'units at start' 'moved in' 'moved out' sold 'held now' left
	FAILED=0
	T_START=0 T_IN=0 T_OUT=0 T_SOLD=0 T_HELD=0 T_LEFT=0
	for p in $(seq 0 $((NODES - 1))); do
		IFS='|' read -r in out sold held left bad <<<"$(node_figures "$p")"
		in=$((in - IN0[$p])) out=$((out - OUT0[$p]))
		nrow "inv_p$p" "${BUCKET[$p]:--}" "${START[$p]:-0}" "$in" "$out" "$sold" "$held" "$left"
		[ "$bad" = f ] || { echo "  inv_p$p: reserved more than on hand"; FAILED=1; }
		T_START=$((T_START + ${START[$p]:-0})) T_IN=$((T_IN + in)) T_OUT=$((T_OUT + out))
		T_SOLD=$((T_SOLD + sold)) T_HELD=$((T_HELD + held)) T_LEFT=$((T_LEFT + left))
	done
	nrow total '' "$T_START" "$T_IN" "$T_OUT" "$T_SOLD" "$T_HELD" "$T_LEFT"
	echo "  buyers served per second (through the router): $RTPS; p99 latency: $RP99 ms"
	IFS='|' read -r transit diffs < <(psql_in shop -At -c \
		"SELECT (SELECT coalesce(sum(in_transit), 0) FROM inventory.nodes), (SELECT count(*) FROM inventory.verify())")
	echo
	echo "Checks"
	check() {   # check WHAT TEST...: prints one check, remembers a failure
		local what=$1
		shift
		if "$@"; then printf '  %-52s yes\n' "$what"
		else printf '  %-52s NO\n' "$what"; FAILED=1; fi
	}
	check 'sold at most what was stocked, in total' [ "$T_SOLD" -le "$UNITS" ]
	check 'nothing lost: sold + held + left = stocked' [ $((T_SOLD + T_HELD + T_LEFT)) -eq "$UNITS" ]
	check 'every unit moved in was moved out of another node' [ "$T_IN" -eq "$T_OUT" ]
	check 'nothing in transit (inventory.nodes)' [ "$transit" = 0 ]
	check 'cache = tables on every node (verify())' [ "$diffs" = 0 ]
	if [ "$TOTAL" -ge $((2 * UNITS + CLIENTS)) ]; then
		check 'every unit sold' [ "$T_SOLD" -eq "$UNITS" ]
	else
		printf '  %-52s %s\n' 'every unit sold' "not checked: fewer than 2 x $UNITS + $CLIENTS buyers"
	fi
	[ "$FAILED" -eq 0 ] || inv_die "a check failed"
	exit 0
fi

# one database per way, each with UNITS units of FLASH-1
for db in "${WAYS[@]}"; do
	inv_as_pg createdb "$db" || inv_die "createdb $db failed"
done
for db in "${WAYS[@]:0:2}"; do
	psql_in "$db" <<SQL || inv_die "setting up $db failed"
CREATE TABLE stock (sku text PRIMARY KEY, qty integer NOT NULL);
CREATE TABLE orders (order_id text PRIMARY KEY, sku text NOT NULL,
                     status text NOT NULL DEFAULT 'reserved');
INSERT INTO stock VALUES ('FLASH-1', $UNITS);
SQL
done
for db in "${WAYS[@]:2:2}"; do
	psql_in "$db" -c 'CREATE EXTENSION inventory' \
		-c "ALTER DATABASE $db SET inventory.change_feed = on" \
		-c "SELECT inventory.restock('FLASH-1', $UNITS, 'delivery-1')" >/dev/null ||
		inv_die "setting up $db failed"
done

TPS=() P99=() SOLD=() LEFT=() AWAY=() OVER=()

# sale I: the flash sale of way I, in its database
sale() {
	local db=${WAYS[$1]} status
	inv_log "$db: $TOTAL buyers, $UNITS units, $CLIENTS connections"
	inv_as_pg pgbench -n -M prepared -c "$CLIENTS" -j 2 -t "$PER_CLIENT" -P 1 \
		-l --log-prefix="$DIR/latency-$db" -D sku=FLASH-1 -D pay=9 -f "$DIR/${SCRIPTS[$1]}" "$db" 2>&1 |
		tee "$DIR/$db.out" | grep -E '^progress' | sed "s/^/  $db  /"
	status=${PIPESTATUS[0]}
	if [ "$status" -ne 0 ]; then
		tail -20 "$DIR/$db.out" >&2
		inv_die "pgbench failed in $db (exit status $status)"
	fi
	TPS[$1]=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$DIR/$db.out" | head -1)
	TPS[$1]=$(printf '%.0f' "${TPS[$1]:-0}")
	P99[$1]=$(p99_ms "$DIR/latency-$db") || inv_die "the latency logs of $db do not hold its $TOTAL buyers"
}

for i in 0 1 2 3; do sale "$i"; done

# what each way sold, and what its own count says is left for sale
for i in 0 1; do
	IFS='|' read -r "SOLD[$i]" "LEFT[$i]" "AWAY[$i]" < <(psql_in "${WAYS[$i]}" -At <<SQL
SELECT (SELECT count(*) FROM orders WHERE status = 'paid'),
       (SELECT qty FROM stock WHERE sku = 'FLASH-1'),
       $TOTAL - (SELECT count(*) FROM orders);
SQL
	)
done
NEGATIVE=() DIFFS=() FED=() FED_OTHER=()
FED[0]=— FED[1]=— FED_OTHER[0]=— FED_OTHER[1]=—
for i in 2 3; do
	IFS='|' read -r "SOLD[$i]" "LEFT[$i]" "AWAY[$i]" "NEGATIVE[$i]" "DIFFS[$i]" "FED[$i]" "FED_OTHER[$i]" \
		< <(psql_in "${WAYS[$i]}" -At <<SQL
SELECT (SELECT count(*) FROM inventory.ledger WHERE kind = 'reserve' AND state = 'CONFIRMED'),
       (SELECT available FROM inventory.stock WHERE sku = 'FLASH-1'),
       $TOTAL - (SELECT count(*) FROM inventory.ledger WHERE kind = 'reserve'),
       (SELECT bool_or(on_hand < 0 OR reserved > on_hand) FROM inventory.stock),
       (SELECT count(*) FROM inventory.verify()),
       -- what an order service following the change feed was told
       (SELECT count(*) FROM inventory.changes(NULL, 1000000000) WHERE state = 'CONFIRMED'),
       (SELECT count(*) FROM inventory.changes(NULL, 1000000000) WHERE state IN ('CANCELLED', 'EXPIRED'));
SQL
	)
done
for i in 0 1 2 3; do
	[[ ${SOLD[$i]:-} =~ ^[0-9]+$ ]] || inv_die "could not count the sales of ${WAYS[$i]}"
	OVER[i]=$(( SOLD[i] > UNITS ? SOLD[i] - UNITS : 0 ))
done

echo
echo "Summary: $TOTAL buyers, $UNITS units, $CLIENTS connections"
row() { printf '  %-26s %18s %20s %11s %13s\n' "$@"; }
row '' read-check-write 'conditional UPDATE' inventory reserve_now
row 'units stocked' "$UNITS" "$UNITS" "$UNITS" "$UNITS"
row 'units sold' "${SOLD[@]}"
row 'oversold' "${OVER[@]}"
row 'left for sale (own count)' "${LEFT[@]}"
row 'buyers turned away' "${AWAY[@]}"
row 'paid, by the change feed' "${FED[@]}"
row 'unpaid, by the change feed' "${FED_OTHER[@]}"
row 'buyers served per second' "${TPS[@]}"
row 'p99 latency (ms)' "${P99[@]}"

echo
echo "Checks"
FAILED=0
check() {   # check WHAT TEST...: prints one check, remembers a failure
	local what=$1
	shift
	if "$@"; then printf '  %-44s yes\n' "$what"
	else printf '  %-44s NO\n' "$what"; FAILED=1; fi
}
check 'conditional UPDATE sold at most what it had' [ "${OVER[1]}" -eq 0 ]
for i in 2 3; do
	way=${WAYS[$i]/inventory_now/reserve_now}
	check "$way sold at most what it had" [ "${OVER[$i]}" -eq 0 ]
	check "$way stock never below zero" [ "${NEGATIVE[$i]}" = f ]
	check "$way cache = tables (verify())" [ "${DIFFS[$i]}" = 0 ]
	check "$way: the feed told every sale" [ "${FED[$i]}" = "${SOLD[$i]}" ]
	if [ "$TOTAL" -ge $((2 * UNITS + CLIENTS)) ]; then
		check "$way sold every unit" [ "${SOLD[$i]}" -eq "$UNITS" ]
	else
		printf '  %-44s %s\n' "$way sold every unit" \
			"not checked: fewer than 2 x $UNITS + $CLIENTS buyers"
	fi
done
# read-check-write loses updates: its own count may promise units it does not have
PHANTOM=$(( SOLD[0] + LEFT[0] - UNITS ))
if [ "${OVER[0]}" -gt 0 ]; then
	printf '  read-check-write oversold %s units: buyers who read the same count all sold it\n' \
		"${OVER[0]}"
elif [ "$PHANTOM" -gt 0 ]; then
	printf '  read-check-write lost %s units in its count: sold %s and still offers %s of %s\n' \
		"$PHANTOM" "${SOLD[0]}" "${LEFT[0]}" "$UNITS"
elif [ "$CLIENTS" -eq 1 ]; then
	printf '  read-check-write did not oversell: with one client nobody races\n'
else
	printf '  read-check-write did not oversell this time: it got lucky; the race is still there\n'
fi
[ "$FAILED" -eq 0 ] || inv_die "a check failed"

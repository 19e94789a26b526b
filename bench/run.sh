#!/usr/bin/env bash
# bench/run.sh -- the benchmark of inventory against what users would pick
# instead (plain SQL on a hot row, Redis), in one run on one scratch cluster.
#
# Usage:
#   bench/run.sh [--smoke] [--duration SECONDS] [--clients "1 8 32 64"]
#                [--cases "1 4 4b"] [--rounds N]
#
#   (default)   every case at 1, 8, 32 and 64 clients, 15 s per run after a
#               3 s warm-up, then 3 rounds; takes about 38 minutes on 2 cores.
#   --smoke     every case for ~1 s at 1 and 8 clients, small data; checks
#               that each case produces a number (targets not enforced).
#   --duration  seconds per measured run.
#   --clients   the client counts, in quotes.
#   --cases     only these cases, in quotes (default: all); a target is
#               reported when all its cases ran, a ratio shows as — when its
#               baseline did not.
#   --rounds    after the cases, run the cases of the throughput targets (1,
#               5, 2b, 2d, 4) and of their bounds (1k, 2e) again N times in
#               turn at the targets' client count, and judge those targets on
#               the median of the rounds' ratios (default 3; 1 with --smoke;
#               0: none).
#
# Run as root: installs what is missing (lib.sh, plus redis-server,
# redis-tools and python3-matplotlib), builds and installs the extension, and
# runs PostgreSQL and pgbench as the postgres user.  Prints a markdown report
# and writes it to bench/results/latest.md (bench/results/smoke.md for
# --smoke, so a smoke run does not overwrite the full report); bench/plot.py
# then draws its results beside it (latest-tps.svg, latest-ratios.svg), and
# the report links them.  Exits non-zero when a case produced no number, a
# correctness check failed or the pictures could not be drawn; PASS/MISS of
# the targets is reported, not enforced.
#
# Cases (pgbench -M prepared -j 2, synchronous_commit = on, fsync = on):
#   1   SELECT 1: the floor, one round trip
#   1b  SELECT * FROM inventory.cache_info(): the floor of any call of the
#       form SELECT * FROM f(), a C function returning one row
#   1k  SELECT of a random order key: the floor of any call that carries one,
#       as every reserve does
#   1c  SELECT of a key absent from inventory.ledger, by its primary key: the
#       floor of a refusal that must still recognise a replayed key (run
#       after case 5, on the same ledger)
#   2a  plain SQL: UPDATE stock SET qty = qty - 1 WHERE sku = $1 AND qty >= 1
#   2b  plain SQL: 2a + a ledger INSERT with UNIQUE (order_id, batch_id)
#   2c  plain SQL: SELECT ... FOR UPDATE, then UPDATE
#   2d  plain SQL: the ledger INSERT alone (one durable write per call)
#   2e  plain SQL: the same INSERT into a copy of inventory.ledger, with its
#       three indexes (key, SKU, expiry): the cost of the data model alone
#   2f  plain SQL: 2e with ON CONFLICT DO NOTHING, which probes the key
#       first, as a reserve must to answer a replay without an error
#   3   Redis: check-and-DECRBY Lua script by EVALSHA (redis-benchmark), in
#       memory only
#   3d  3 on a durable Redis: appendonly yes, appendfsync always (an
#       acknowledged call survives a crash), a redis-server of its own
#   4   inventory.reserve on one hot SKU, always succeeds (cases 4-7 call
#       the API in the select list asking for the status only, SELECT
#       (inventory.reserve(...)).status, the cheapest call form)
#   4b  4 on another hot SKU with max_per_buyer = 2, for a buyer drawn from
#       9e18 (almost every call a buyer's first): the cost of the limit
#   5   inventory.reserve on one sold-out SKU, always refused
#   6   inventory.reserve on a random SKU among 100,000
#   7   reserve, then confirm (70%), cancel (20%) or let expire (10%)
#   8   the worker clears 100,000 overdue reservations under case 4 load
#   9   cache load after restart: SKU with 1,000,000 settled movements vs none
#   10  inventory.reserve_many of BATCH (50) reservations of 1 unit, each
#       under a key of its own, on another hot SKU: reported as reservations
#       per second (calls per second x BATCH), against case 3d
#   11  case 4 through a router (inventory_router over PL/Proxy) to four
#       partition databases on the same server: the router's cost per call
#   11b 11 on a hot SKU split over 2 buckets (inventory.split)
#   11c 11 on a hot SKU split over 4 buckets
#   12  case 5 through the router: a sold-out refusal
#   12c 12 on a SKU split over 4 buckets, sold out
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

usage() { sed -n '4,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

ARGS=("$@")
SMOKE=0
DURATION=
CLIENTS=
ROUNDS=
ALL_CASES="1 1b 1k 1c 2a 2b 2c 2d 2e 2f 3 3d 4 4b 5 6 7 8 9 10 11 11b 11c 12 12c"
CASES=$ALL_CASES
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) SMOKE=1 ;;
	--duration) DURATION=${2:-}; shift ;;
	--clients) CLIENTS=${2:-}; shift ;;
	--cases) CASES=${2:-}; shift ;;
	--rounds) ROUNDS=${2:-}; shift ;;
	-h | --help) usage ;;
	*) usage ;;
	esac
	shift
done

if [ "$SMOKE" -eq 1 ]; then
	: "${DURATION:=1}" "${CLIENTS:=1 8}" "${ROUNDS:=1}"
	WARMUP=0 NSKUS=1000 BACKLOG=2000 SETTLED=10000 FSYNC_SECS=1 LOAD_ROUNDS=1
	OUT=$INV_TOP/bench/results/smoke.md
else
	: "${DURATION:=15}" "${CLIENTS:=1 8 32 64}" "${ROUNDS:=3}"
	WARMUP=3 NSKUS=100000 BACKLOG=100000 SETTLED=1000000 FSYNC_SECS=2 LOAD_ROUNDS=3
	OUT=$INV_TOP/bench/results/latest.md
fi
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || inv_die "--duration takes a whole number of seconds"
[[ $ROUNDS =~ ^[0-9]+$ ]] || inv_die "--rounds takes a whole number"
for c in $CLIENTS; do [[ $c =~ ^[1-9][0-9]*$ ]] || inv_die "--clients takes numbers"; done
[ -n "${CASES// /}" ] || inv_die "--cases takes case ids: $ALL_CASES"
for id in $CASES; do
	[[ " $ALL_CASES " == *" $id "* ]] || inv_die "no case $id; the cases are: $ALL_CASES"
done
want() { [[ " $CASES " == *" $1 "* ]]; }   # want ID: is case ID selected?
ran() { local id; for id; do want "$id" || return 1; done; }   # ran ID...: all of them?
# The targets are stated at 64 clients; without 64, use the largest count.
TC=$(printf '%s\n' $CLIENTS | sort -n | tail -1)
echo " $CLIENTS " | grep -q ' 64 ' && TC=64
# case 4b: the limit per buyer, and the range its buyers are drawn from
LIMIT=2 BUYERS=9000000000000000000
# case 10: the reservations in one call of inventory.reserve_many
BATCH=50
# the case 8 load must outlast the clearing of the backlog
if [ "$SMOKE" -eq 1 ]; then EXPIRY_LOAD=5; else EXPIRY_LOAD=$((DURATION > 20 ? DURATION : 20)); fi
# the command line, quoted so that it can be pasted
CMDLINE=bench/run.sh
for a in "${ARGS[@]}"; do
	case $a in *' '*) CMDLINE+=" \"$a\"" ;; *) CMDLINE+=" $a" ;; esac
done

inv_setup
# Redis is only a reference: if it cannot be installed, its case is skipped.
REDIS_OK=1
{ want 3 || want 3d; } && { (inv_packages redis-server redis-tools) || REDIS_OK=0; }
# The pictures too: without matplotlib the report has none.
PLOT_OK=1
(inv_packages python3-matplotlib) || PLOT_OK=0

DIR=$(mktemp -d /tmp/inventory-bench.XXXXXX)
REDIS_PID=
cleanup() {
	[ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null
	inv_cluster_stop "$DIR"
	rm -rf "$DIR"
}
trap cleanup EXIT
inv_log "starting a scratch cluster in $DIR"
# max_skus: case 6's SKUs all fit in the cache.  Everything else stays at the
# defaults: synchronous_commit = on, fsync = on.
# max_connections: a router session of cases 11-12 holds a connection to
# each partition it called, up to four.
inv_cluster_start "$DIR" "inventory.max_skus = 200000" "max_connections = 400"
mkdir "$DIR/sql"

FAILED=0
CHECKS=()   # lines of the "Checks" section
check() {   # check WHAT OK?: records a correctness check
	if [ "$2" = t ]; then CHECKS+=("| $1 | ok |"); else
		CHECKS+=("| $1 | **FAILED** |"); FAILED=1; inv_log "CHECK FAILED: $1"; fi
}

psql_b() { inv_as_pg psql -X -q -At -v ON_ERROR_STOP=1 -d bench "$@"; }
sql() { psql_b -c "$1"; }   # sql QUERY: prints the result, unaligned

# ---------------------------------------------------------------- machine
inv_log "measuring the fsync rate (pg_test_fsync -s $FSYNC_SECS)"
FSYNC=$(inv_as_pg "$INV_PGBIN/pg_test_fsync" -s "$FSYNC_SECS" -f "$DIR/data/pg_test_fsync.tmp" 2>&1 |
	awk '$1 == "fdatasync" && $3 == "ops/sec" { print $2; exit }')
PGVERSION=$("$INV_PGBIN/postgres" --version)

# ---------------------------------------------------------------- set-up
inv_log "creating the bench database"
inv_as_pg createdb bench
psql_b >/dev/null <<SQL
CREATE EXTENSION inventory;
-- Case 4 makes millions of PENDING holds; a long default ttl keeps them from
-- expiring (and keeping the worker busy) in the middle of later cases.
ALTER DATABASE bench SET inventory.default_ttl = '1d';

-- case 2: the plain-SQL alternative, on ordinary tables
CREATE TABLE stock (sku text PRIMARY KEY, qty bigint NOT NULL);
INSERT INTO stock VALUES ('HOT', 1000000000000);   -- never runs out
CREATE TABLE ledger (
	order_id   text NOT NULL,
	batch_id   int NOT NULL,
	sku        text NOT NULL,
	qty        bigint NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	UNIQUE (order_id, batch_id)
);

-- cases 2e and 2f: inventory's own ledger table, without the extension
-- around it; one each, so that both start empty as case 4 does
CREATE TABLE ledger3 (LIKE inventory.ledger INCLUDING DEFAULTS INCLUDING INDEXES)
	WITH (fillfactor = 45);
CREATE TABLE ledger3c (LIKE ledger3 INCLUDING DEFAULTS INCLUDING INDEXES)
	WITH (fillfactor = 45);

-- cases 4-7: SKUs of the extension
SELECT inventory.restock('HOT-1', 1000000000000, 'stock-hot');
-- case 4b: the same stock as HOT-1, with a limit per buyer
SELECT inventory.restock('HOT-LIM', 1000000000000, 'stock-hot-lim');
SELECT inventory.set_rules('HOT-LIM', max_per_buyer => $LIMIT);
INSERT INTO inventory.sku (sku, on_hand) VALUES ('SOLD-1', 0);
INSERT INTO inventory.sku (sku, on_hand)
	SELECT 'U-' || g, 1000000000 FROM generate_series(1, $NSKUS) g;
SELECT inventory.restock('LIFE-1', 1000000000000, 'stock-life');
-- case 10: the same stock as HOT-1, for the batches
SELECT inventory.restock('HOT-MANY', 1000000000000, 'stock-hot-many');

-- case 8: waits until s has n units available, polling every 10 ms; returns
-- the seconds since t0, NULL after timeout seconds.  Asks the cache: a query
-- of the ledger for overdue rows would read a large ledger for seconds,
-- taking CPU from the worker it times and ending the clock late.
CREATE FUNCTION bench_wait_available(s text, n bigint, t0 timestamptz, timeout float8)
RETURNS float8 LANGUAGE plpgsql AS \$\$
BEGIN
	WHILE inventory.available(s) < n LOOP
		IF extract(epoch FROM clock_timestamp() - t0) > timeout THEN RETURN NULL; END IF;
		PERFORM pg_sleep(0.01);
	END LOOP;
	RETURN extract(epoch FROM clock_timestamp() - t0);
END \$\$;

-- case 9: times one call of inventory.available() on the server
CREATE FUNCTION bench_time_available(s text, OUT avail bigint, OUT ms float8)
LANGUAGE plpgsql AS \$\$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
	avail := inventory.available(s);
	ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END \$\$;
SQL
[ $? -eq 0 ] || inv_die "set-up of the bench database failed"

# ---------------------------------------------------------------- pgbench scripts
# bench/sql/*.sql, copied where the postgres user can read them
cp "$INV_TOP"/bench/sql/*.sql "$DIR/sql/"
chmod -R a+rX "$DIR/sql"

# ---------------------------------------------------------------- runners
declare -A TPS LAT   # keyed "CASE/CLIENTS"
PROCESSED=0          # transactions of the last run_case, warm-ups included

# pgbench_once CLIENTS SECONDS LOG SCRIPT [PGBENCH ARGS...]: one run as the
# postgres user; fails on an aborted client or a failed transaction.
pgbench_once() {
	local c=$1 t=$2 log=$3 script=$4
	shift 4
	inv_as_pg pgbench -n -M prepared -j 2 -c "$c" -T "$t" -f "$DIR/sql/$script" "$@" "${PGB_DB:-bench}" >"$log" 2>&1 &&
		grep -q '^tps = ' "$log" && ! grep -qE '^number of failed transactions: [1-9]' "$log"
}

# run_case ID SCRIPT [PGBENCH ARGS...]: warm-up + measured run per client count
run_case() {
	local id=$1 script=$2 c log
	shift 2
	PROCESSED=0
	for c in $CLIENTS; do
		inv_log "case $id, $c clients"
		log=$DIR/pgbench-$id-$c.log
		if [ "$WARMUP" -gt 0 ] && ! pgbench_once "$c" "$WARMUP" "$log.warm" "$script" "$@"; then
			TPS[$id/$c]=FAILED; FAILED=1; sed 's/^/    /' "$log.warm" | tail -20 >&2; continue
		fi
		[ "$WARMUP" -gt 0 ] && PROCESSED=$((PROCESSED + $(processed "$log.warm")))
		if ! pgbench_once "$c" "$DURATION" "$log" "$script" "$@"; then
			TPS[$id/$c]=FAILED; FAILED=1; sed 's/^/    /' "$log" | tail -20 >&2; continue
		fi
		PROCESSED=$((PROCESSED + $(processed "$log")))
		TPS[$id/$c]=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$log")
		LAT[$id/$c]=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$log")
	done
}
processed() { sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$1"; }

num() { [[ ${1:-} =~ ^[0-9.]+$ ]]; }
ledger_rows() { sql "SELECT count(*) FROM inventory.ledger WHERE $1"; }

# ---------------------------------------------------------------- case 1, 2
want 1 && run_case 1 floor.sql
want 1b && run_case 1b floor_fn.sql
want 1k && run_case 1k floor_param.sql -D prefix=o1k-
want 2a && run_case 2a sql_update.sql -D sku=HOT
want 2b && run_case 2b sql_update_ledger.sql -D sku=HOT
want 2c && run_case 2c sql_for_update.sql -D sku=HOT
want 2d && run_case 2d sql_ledger.sql -D sku=HOT
want 2e && run_case 2e sql_ledger3.sql -D sku=HOT
want 2f && run_case 2f sql_ledger3_oc.sql -D sku=HOT

# ---------------------------------------------------------------- case 3, 3d: Redis
REDIS_NOTE=
REDIS_STOCK=1000000000000
REDIS_PORT=
REDIS_CALLS=0   # calls that the last redis_bench made, warm-ups included
# redis_start ID [REDIS-SERVER ARGS...]: the redis-server of case ID, with its
# own files in $DIR/redis-ID, on a free port; sets REDIS_PORT and REDIS_PID
redis_start() {
	local dir=$DIR/redis-$1
	shift
	mkdir -p "$dir"
	REDIS_PORT=$(inv_free_port)
	redis-server --port "$REDIS_PORT" --bind 127.0.0.1 "$@" \
		--daemonize yes --pidfile "$dir/redis.pid" --dir "$dir" \
		--logfile "$dir/redis.log" >/dev/null 2>&1 || return 1
	# PONG once it listens and has loaded its AOF, if it has one
	for _ in $(seq 100); do
		redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG && break
		sleep 0.1
	done
	REDIS_PID=$(cat "$dir/redis.pid" 2>/dev/null) || return 1
}
# redis_stop [SIGNAL]: ends the running redis-server, and waits until it has
redis_stop() {
	[ -n "$REDIS_PID" ] || return 0
	kill "-${1:-TERM}" "$REDIS_PID" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$REDIS_PID" 2>/dev/null || break; sleep 0.1; done
	REDIS_PID=
}
# redis_bench ID: case ID on the running redis-server, stock:HOT set to
# REDIS_STOCK, the check-and-DECRBY script by EVALSHA at each client count
redis_bench() {
	local id=$1 sha c n rps csv
	REDIS_CALLS=0
	redis-cli -p "$REDIS_PORT" set stock:HOT "$REDIS_STOCK" >/dev/null || return 1
	sha=$(redis-cli -p "$REDIS_PORT" script load "
		local n = tonumber(ARGV[1])
		if tonumber(redis.call('GET', KEYS[1]) or '0') >= n then
			return redis.call('DECRBY', KEYS[1], n)
		end
		return -1") || return 1
	[[ $sha =~ ^[0-9a-f]{40}$ ]] || return 1
	for c in $CLIENTS; do
		inv_log "case $id, $c clients"
		# redis-benchmark takes a request count, not a duration: a short
		# run (also the warm-up) sizes the measured one.
		n=$((c * 500 + 5000))
		csv=$(redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c "$c" --threads 2 -n "$n" \
			--csv EVALSHA "$sha" 1 stock:HOT 1 2>/dev/null | tail -1)
		REDIS_CALLS=$((REDIS_CALLS + n))
		rps=$(echo "$csv" | awk -F'","' '{ print $2 + 0 }')
		[ "${rps%.*}" -gt 0 ] 2>/dev/null || return 1
		n=$(awk -v r="$rps" -v d="$DURATION" 'BEGIN { printf "%d", r * d }')
		csv=$(redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c "$c" --threads 2 -n "$n" \
			--csv EVALSHA "$sha" 1 stock:HOT 1 2>/dev/null | tail -1)
		REDIS_CALLS=$((REDIS_CALLS + n))
		TPS[$id/$c]=$(echo "$csv" | awk -F'","' '{ print $2 + 0 }')
		LAT[$id/$c]=$(echo "$csv" | awk -F'","' '{ print $3 + 0 }')
		[ "${TPS[$id/$c]%.*}" -gt 0 ] 2>/dev/null || return 1
	done
	# the script refuses to go below zero, and every call took one unit
	[ "$(redis-cli -p "$REDIS_PORT" get stock:HOT)" -gt 0 ] || return 1
}
redis_skip() {   # redis_skip ID: case ID has no number
	local c
	for c in $CLIENTS; do TPS[$1/$c]=skipped; done
	REDIS_NOTE+="${REDIS_NOTE:+ }Redis could not be installed or run here: case $1 skipped."
	inv_log "redis skipped (case $1)"
	redis_stop KILL
}

# case 3: in memory only (no AOF, no snapshots): a reference point, not durable
REDIS_MEM=(--save '' --appendonly no)
if ! want 3; then :; elif [ "$REDIS_OK" -eq 1 ] && redis_start 3 "${REDIS_MEM[@]}" && redis_bench 3; then
	redis_stop
else
	redis_skip 3
fi

# case 3d: durable, as a seller must run it not to lose acknowledged sales in
# a crash: every write appended to the AOF and fsynced before its reply (no
# snapshots, so what comes back after a restart comes from the AOF alone)
REDIS_AOF=(--save '' --appendonly yes --appendfsync always)
# redis_aof: the running server's AOF settings, as it reports them
redis_aof() {
	printf 'appendonly %s, appendfsync %s, aof_enabled:%s' \
		"$(redis-cli -p "$REDIS_PORT" config get appendonly | sed -n 2p)" \
		"$(redis-cli -p "$REDIS_PORT" config get appendfsync | sed -n 2p)" \
		"$(redis-cli -p "$REDIS_PORT" info persistence | tr -d '\r' | sed -n 's/^aof_enabled://p')"
}
if ! want 3d; then :; elif [ "$REDIS_OK" -eq 1 ] && redis_start 3d "${REDIS_AOF[@]}"; then
	aof=$(redis_aof)
	check "case 3d: the AOF is on, fsynced at every write ($aof)" \
		"$([ "$aof" = "appendonly yes, appendfsync always, aof_enabled:1" ] && echo t)"
	if redis_bench 3d; then
		# a crash right after the last reply, then a restart from the AOF:
		# every acknowledged call is still there
		left=$(redis-cli -p "$REDIS_PORT" get stock:HOT)
		redis_stop KILL
		back=
		redis_start 3d "${REDIS_AOF[@]}" && back=$(redis-cli -p "$REDIS_PORT" get stock:HOT)
		check "case 3d: after kill -9 and a restart, the AOF gives back every acknowledged call ($REDIS_CALLS calls; stock:HOT ${left:-?} before, ${back:-?} after)" \
			"$([ -n "$back" ] && [ "$back" = "$left" ] && [ "$back" -eq $((REDIS_STOCK - REDIS_CALLS)) ] 2>/dev/null && echo t)"
		redis_stop
	else
		redis_skip 3d
	fi
else
	redis_skip 3d
fi

# ---------------------------------------------------------------- case 4-7
if want 4; then
	before=$(ledger_rows "sku = 'HOT-1'")
	run_case 4 reserve.sql -D sku=HOT-1 -D prefix=o4-
	after=$(ledger_rows "sku = 'HOT-1'")
	check "case 4: one ledger row per reserve ($PROCESSED calls, $((after - before)) rows)" \
		"$([ $((after - before)) -eq "$PROCESSED" ] && echo t)"
fi

# right after case 4, on a ledger that case 4 made larger (its rows are not
# in ledger_buyer_idx, which holds only rows with a buyer)
if want 4b; then
	before=$(ledger_rows "sku = 'HOT-LIM' AND buyer_id IS NOT NULL")
	run_case 4b reserve_buyer.sql -D sku=HOT-LIM -D prefix=o4b- -D buyers=$BUYERS
	after=$(ledger_rows "sku = 'HOT-LIM' AND buyer_id IS NOT NULL")
	check "case 4b: one ledger row, with its buyer, per reserve ($PROCESSED calls, $((after - before)) rows)" \
		"$([ $((after - before)) -eq "$PROCESSED" ] && echo t)"
	# the limit was in force: a buyer's units past it are refused
	got=$(psql_b <<SQL | paste -sd ' ' -
SELECT status FROM inventory.reserve('HOT-LIM', $LIMIT, 'o4b-check-1', buyer_id => 'b-check');
SELECT status FROM inventory.reserve('HOT-LIM', 1, 'o4b-check-2', buyer_id => 'b-check');
SQL
)
	check "case 4b: the limit is in force ($LIMIT units for one buyer, then 1 more: $got)" \
		"$([ "$got" = "ok limit_exceeded" ] && echo t)"
	check "case 4b: no buyer holds more than $LIMIT units of HOT-LIM" \
		"$(sql "SELECT count(*) = 0 FROM (SELECT buyer_id FROM inventory.ledger
		         WHERE sku = 'HOT-LIM' AND kind = 'reserve' AND state IN ('PENDING', 'CONFIRMED')
		         GROUP BY buyer_id HAVING sum(qty) > $LIMIT) o")"
fi

if want 5; then
	rejects() { sql "SELECT coalesce(sum(rejects), 0) FROM inventory.sku_stats WHERE sku = 'SOLD-1'"; }
	# answered by the filter, and looked up because it said maybe but the
	# key was not there: together every refusal (none of case 5's keys exists)
	absent() { sql "SELECT said_absent || ' ' || false_positives FROM inventory.key_filter"; }
	before=$(rejects)
	absent_before=$(absent)
	run_case 5 reserve.sql -D sku=SOLD-1 -D prefix=o5-
	after=$(rejects)
	absent_after=$(absent)
	check "case 5: every reserve refused ($PROCESSED calls, $((after - before)) rejects)" \
		"$([ $((after - before)) -eq "$PROCESSED" ] && echo t)"
	# the warm-up's refusals count too
	read -r said0 fp0 <<<"$absent_before"
	read -r said1 fp1 <<<"$absent_after"
	ready=$(sql "SELECT ready FROM inventory.key_filter")
	check "case 5: the key filter answered every refusal but its false positives (under 1%), which were looked up (ready: $ready, $((said1 - said0)) answered, $((fp1 - fp0)) false positives at a fill of $(sql "SELECT round(fill::numeric, 3) FROM inventory.key_filter"))" \
		"$([ "$ready" = t ] && [ $((said1 - said0 + fp1 - fp0)) -ge "$PROCESSED" ] && [ $(((fp1 - fp0) * 100)) -lt "$PROCESSED" ] && echo t)"
	check "case 5: refused reserves wrote no ledger row" \
		"$([ "$(ledger_rows "sku = 'SOLD-1'")" -eq 0 ] && echo t)"
	check "case 5: available('SOLD-1') is 0" "$(sql "SELECT inventory.available('SOLD-1') = 0")"
fi
want 1c && run_case 1c floor_key.sql

if want 6; then
	before=$(ledger_rows "sku LIKE 'U-%'")
	run_case 6 reserve_skus.sql -D nskus=$NSKUS
	after=$(ledger_rows "sku LIKE 'U-%'")
	check "case 6: one ledger row per reserve ($PROCESSED calls, $((after - before)) rows)" \
		"$([ $((after - before)) -eq "$PROCESSED" ] && echo t)"
	check "case 6: all $NSKUS SKUs fit in the cache (no eviction)" \
		"$(sql "SELECT evictions = 0 FROM inventory.cache_info()")"
fi

if want 7; then
	before=$(ledger_rows "sku = 'LIFE-1'")
	run_case 7 lifecycle.sql -D sku=LIFE-1
	after=$(ledger_rows "sku = 'LIFE-1'")
	check "case 7: one ledger row per buyer ($PROCESSED buyers, $((after - before)) rows)" \
		"$([ $((after - before)) -eq "$PROCESSED" ] && echo t)"
	# a long-ttl reservation still PENDING would be a confirm or cancel that failed
	check "case 7: every confirm and cancel settled its reservation" \
		"$([ "$(ledger_rows "sku = 'LIFE-1' AND state = 'PENDING' AND expires_at > created_at + interval '1 minute'")" -eq 0 ] && echo t)"
fi

# ---------------------------------------------------------------- case 11, 12: the router
# Four partition databases inv_p0..inv_p3 with the extension, and a router
# database shop with inventory_router, on this same server: what a call
# through the router costs, not what more servers would give (two cores).
router_sql() { inv_as_pg psql -X -q -At -v ON_ERROR_STOP=1 -d shop -c "$1"; }
# router_rows WHERE: ledger rows matching WHERE on all four partitions
router_rows() { local p n=0; for p in 0 1 2 3; do
	n=$((n + $(inv_as_pg psql -X -q -At -d "inv_p$p" -c "SELECT count(*) FROM inventory.ledger WHERE $1"))); done; echo "$n"; }
if want 11 || want 11b || want 11c || want 12 || want 12c; then
	inv_log "creating the partition databases and the router"
	# the partitions keep case 11's holds for a day, as the bench database does
	inv_router_create 4 "DO \$\$ BEGIN EXECUTE format('ALTER DATABASE %I SET inventory.default_ttl = ''1d''', current_database()); END \$\$"
	inv_as_pg psql -X -q -v ON_ERROR_STOP=1 -d shop >/dev/null <<SQL || inv_die "set-up of the router's SKUs failed"
SELECT inventory.restock(s, 1000000000000, 'stock-' || s) FROM unnest(ARRAY['R-HOT', 'R-HOT2', 'R-HOT4']) s;
SELECT count(*) FROM inventory.split('R-HOT2', 2);
SELECT count(*) FROM inventory.split('R-HOT4', 4);
-- once more: forgets the unsplit layouts, under which no key was made
SELECT count(*) FROM inventory.rebalance('R-HOT2');
SELECT count(*) FROM inventory.rebalance('R-HOT4');
SELECT inventory.restock('R-SOLD', 1, 'stock-r-sold'), inventory.withdraw('R-SOLD', 1, 'gone-r-sold');
-- case 12c: 4 units over 4 buckets, all taken by one order
SELECT inventory.restock('R-SOLD4', 4, 'stock-r-sold4');
SELECT count(*) FROM inventory.split('R-SOLD4', 4);
SELECT count(*) FROM inventory.rebalance('R-SOLD4');
SELECT inventory.reserve('R-SOLD4', 4, 'all-r-sold4');
SQL
	layouts=$(router_sql "SELECT string_agg(sku || ':' || buckets || '/' || former_layouts, ' ' ORDER BY sku) FROM inventory.buckets")
	check "cases 11b, 11c, 12c: R-HOT2 split over 2 buckets, R-HOT4 and R-SOLD4 over 4, no former layout kept ($layouts)" \
		"$([ "$layouts" = "R-HOT2:2/0 R-HOT4:4/0 R-SOLD4:4/0" ] && echo t)"
	for id in 11 11b 11c; do
		want "$id" || continue
		sku=$(case $id in 11) echo R-HOT ;; 11b) echo R-HOT2 ;; 11c) echo R-HOT4 ;; esac)
		before=$(router_rows "sku = '$sku'")
		PGB_DB=shop run_case "$id" reserve.sql -D sku="$sku" -D prefix="o$id-"
		after=$(router_rows "sku = '$sku'")
		check "case $id: one ledger row per reserve, on the partitions of $sku ($PROCESSED calls, $((after - before)) rows)" \
			"$([ $((after - before)) -eq "$PROCESSED" ] && echo t)"
	done
	if want 12; then
		PGB_DB=shop run_case 12 reserve.sql -D sku=R-SOLD -D prefix=o12-
		check "case 12: refused reserves wrote no ledger row" \
			"$([ "$(router_rows "sku = 'R-SOLD' AND kind = 'reserve'")" -eq 0 ] && echo t)"
	fi
	if want 12c; then
		PGB_DB=shop run_case 12c reserve.sql -D sku=R-SOLD4 -D prefix=o12c-
		check "case 12c: refused reserves wrote no ledger row (the one order that took the 4 units only)" \
			"$([ "$(router_rows "sku = 'R-SOLD4' AND kind = 'reserve'")" -eq 1 ] && echo t)"
	fi
	check "cache = tables on every partition after cases 11-12 (inventory.verify() through the router is empty)" \
		"$(router_sql "SELECT count(*) = 0 FROM inventory.verify()")"
fi

# ---------------------------------------------------------------- case 10: batches
# after cases 4-7, so that its ledger rows (BATCH per call) do not grow the
# ledger under them; its TPS become reservations per second (x BATCH), its
# calls per second are kept in CALLS
declare -A CALLS
if want 10; then
	avail() { sql "SELECT inventory.available('HOT-MANY')"; }
	before=$(ledger_rows "sku = 'HOT-MANY'")
	avail_before=$(avail)
	run_case 10 reserve_batch.sql -D sku=HOT-MANY -D prefix=o10- -D batch=$BATCH
	after=$(ledger_rows "sku = 'HOT-MANY'")
	avail_after=$(avail)
	check "case 10: $BATCH ledger rows per call ($PROCESSED calls, $((after - before)) rows)" \
		"$([ $((after - before)) -eq $((BATCH * PROCESSED)) ] && echo t)"
	check "case 10: one unit held per reservation (available('HOT-MANY') went down by $((avail_before - avail_after)))" \
		"$([ $((avail_before - avail_after)) -eq $((BATCH * PROCESSED)) ] && echo t)"
	for c in $CLIENTS; do
		num "${TPS[10/$c]:-}" || continue
		CALLS[10/$c]=${TPS[10/$c]}
		TPS[10/$c]=$(awk -v t="${TPS[10/$c]}" -v b="$BATCH" 'BEGIN { printf "%.6f", t * b }')
	done
fi

# ---------------------------------------------------------------- rounds
# The cases of the throughput targets again, ROUNDS times in turn at TC
# clients.  The load of a shared machine drifts over the minutes between a
# case and its baseline in the run above; in turn, each round's ratio
# compares runs a minute apart, and the median of the rounds is judged.
declare -A RTPS     # keyed "CASE/ROUND"
# With them, the bounds of two targets: the round trip that carries a key
# (1k), which a refusal must make, and the bare INSERT of the ledger's own
# row (2e), which a reservation must make.
declare -A RARGS=(
	[1]="floor.sql"
	[1k]="floor_param.sql -D prefix=o1kr-"
	[5]="reserve.sql -D sku=SOLD-1 -D prefix=o5r-"
	[2b]="sql_update_ledger.sql -D sku=HOT"
	[2d]="sql_ledger.sql -D sku=HOT"
	[2e]="sql_ledger3.sql -D sku=HOT"
	[4]="reserve.sql -D sku=HOT-1 -D prefix=o4r-")
RCASES=()
for id in 1 1k 5 2b 2d 2e 4; do want "$id" && RCASES+=("$id"); done
for r in $(seq "$ROUNDS"); do
	for id in "${RCASES[@]}"; do
		inv_log "round $r: case $id, $TC clients"
		log=$DIR/pgbench-round-$r-$id.log
		# shellcheck disable=SC2086
		if pgbench_once "$TC" "$DURATION" "$log" ${RARGS[$id]}; then
			RTPS[$id/$r]=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$log")
		else
			RTPS[$id/$r]=FAILED; FAILED=1; sed 's/^/    /' "$log" | tail -20 >&2
		fi
	done
done

# ---------------------------------------------------------------- case 8: expiry
# cpu_sampler OUT STOP: until STOP exists, every 0.1 s, appends a line
# "round" and then "kind pid ticks" (user + system CPU since the process
# started) to OUT for the bench database's inventory worker and every
# autovacuum worker.
cpu_sampler() {
	local out=$1 stop=$2 pid kind args
	: >"$out"
	while [ ! -e "$stop" ]; do
		echo round >>"$out"
		while read -r pid args; do
			case "$args" in
			*"inventory worker for database bench"*) kind=worker ;;
			*"autovacuum worker"*) kind=autovacuum ;;
			*) continue ;;
			esac
			awk -v k="$kind" -v p="$pid" '{ sub(/^.*\) /, ""); print k, p, $12 + $13 }' \
				"/proc/$pid/stat" 2>/dev/null >>"$out"
		done < <(ps -eo pid=,args=)
		sleep 0.1
	done
}
# cpu_used OUT: "worker-seconds autovacuum-seconds autovacuum-processes"; a
# process of the first round counts from there, one that came later from
# its start
cpu_used() {
	awk -v hz="$(getconf CLK_TCK)" '
		$1 == "round" { round++; next }
		!($2 in lo) { lo[$2] = round == 1 ? $3 : 0; kind[$2] = $1 }
		{ hi[$2] = $3 }
		END {
			for (p in hi) { cpu[kind[p]] += (hi[p] - lo[p]) / hz; if (kind[p] == "autovacuum") n++ }
			printf "%.2f %.2f %d\n", cpu["worker"], cpu["autovacuum"], n
		}' "$1"
}

if want 8; then
	inv_log "case 8: a backlog of $BACKLOG overdue reservations"
	sql "ALTER SYSTEM SET inventory.worker_enabled = off" >/dev/null
	sql "ALTER SYSTEM SET inventory.expire_batch = 10000" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
	# wait until the worker has seen the setting, so it cannot start on the backlog
	for _ in $(seq 100); do
		[ "$(sql "SELECT count(*) FROM inventory.worker_status WHERE datname = 'bench' AND state <> 'disabled'")" = 0 ] && break
		sleep 0.1
	done
	# clear what case 7 left overdue (its 1 s holds included), so the backlog is
	# all there is to do
	sql "SELECT pg_sleep(1.2)" >/dev/null
	sql "SELECT inventory.expire()" >/dev/null
	# and what the cases before left to vacuum: an autovacuum of their tables
	# would take its share of the two cores from the worker while it clears
	inv_log "case 8: VACUUM and CHECKPOINT first"
	sql "VACUUM" >/dev/null
	sql "CHECKPOINT" >/dev/null
	sql "SELECT inventory.restock('EXP-1', $BACKLOG, 'stock-exp')" >/dev/null
	chunk=$(((BACKLOG + 3) / 4))
	for lo in $(seq 1 "$chunk" "$BACKLOG"); do
		hi=$((lo + chunk - 1 < BACKLOG ? lo + chunk - 1 : BACKLOG))
		sql "INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
		     SELECT 'o8-' || g, 1, 'reserve', 'EXP-1', 1, now() - interval '1 hour'
		       FROM generate_series($lo, $hi) g" || FAILED=1
	done
	overdue=$(ledger_rows "state = 'PENDING' AND expires_at <= now()")
	check "case 8: the backlog is $BACKLOG overdue reservations (found $overdue)" \
		"$([ "$overdue" -eq "$BACKLOG" ] && echo t)"

	inv_log "case 8: the worker clears it under case 4 load at 32 clients"
	pgbench_once 32 "$EXPIRY_LOAD" "$DIR/pgbench-8-load.log" reserve.sql -D sku=HOT-1 -D prefix=o8l- &
	LOAD_PID=$!
	sleep 1   # let the load ramp up
	cpu_sampler "$DIR/case8-cpu" "$DIR/case8-stop" &
	SAMPLER_PID=$!
	EXPIRY_SECS=$(psql_b -v backlog="$BACKLOG" <<'SQL'
SELECT clock_timestamp() AS t0 \gset
ALTER SYSTEM SET inventory.worker_enabled = on;
SELECT pg_reload_conf() \gset
SELECT bench_wait_available('EXP-1', :backlog, :'t0', 600);
SQL
	)
	touch "$DIR/case8-stop"
	wait "$SAMPLER_PID"
	wait "$LOAD_PID" || FAILED=1
	# CPU seconds of the worker and of autovacuum while the backlog was cleared
	read -r WORKER_CPU AUTOVAC_CPU AUTOVAC_N < <(cpu_used "$DIR/case8-cpu")
	LOAD_TPS=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$DIR/pgbench-8-load.log")
	# did the load run for the whole clearing?
	LOAD_NOTE=
	[ -n "$EXPIRY_SECS" ] && awk -v s="$EXPIRY_SECS" -v d="$EXPIRY_LOAD" 'BEGIN { exit !(s + 1 > d) }' &&
		LOAD_NOTE=" (the load ended before the backlog was cleared)"
	if [ -n "$EXPIRY_SECS" ]; then
		EXPIRY_RATE=$(awk -v n="$BACKLOG" -v s="$EXPIRY_SECS" 'BEGIN { printf "%.0f", n / s }')
	else
		EXPIRY_RATE=FAILED; FAILED=1
	fi
	check "case 8: all $BACKLOG reservations EXPIRED" \
		"$([ "$(ledger_rows "sku = 'EXP-1' AND state = 'EXPIRED'")" -eq "$BACKLOG" ] && echo t)"
	check "case 8: their units are back on sale" \
		"$(sql "SELECT inventory.available('EXP-1') = $BACKLOG")"
	sql "ALTER SYSTEM RESET inventory.expire_batch" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
fi
inv_log "comparing the cache with the tables (inventory.verify())"
check "cache = tables after cases 4-8 and 10 (inventory.verify() is empty)" \
	"$(sql "SELECT count(*) = 0 FROM inventory.verify()")"

# ---------------------------------------------------------------- case 9: cache load
if want 9; then
	inv_log "case 9: $SETTLED settled movements"
	sql "INSERT INTO inventory.sku (sku) VALUES ('LOAD-FULL'), ('LOAD-EMPTY'), ('LOAD-WARM')" >/dev/null
	chunk=$(((SETTLED + 3) / 4))
	for lo in $(seq 1 "$chunk" "$SETTLED"); do
		hi=$((lo + chunk - 1 < SETTLED ? lo + chunk - 1 : SETTLED))
		sql "INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
		     SELECT 'o9-' || g, 1, 'restock', 'LOAD-FULL', 1 FROM generate_series($lo, $hi) g" || FAILED=1
	done
	for _ in $(seq 1000); do
		[ "$(sql "SELECT inventory.fold()")" = 0 ] && break
	done
	check "case 9: LOAD-FULL has $SETTLED movements, all folded" \
		"$(sql "SELECT count(*) = $SETTLED AND bool_and(folded) FROM inventory.ledger WHERE sku = 'LOAD-FULL'")"

	# time_load SKU: "AVAILABLE MS" of the first available() in a new session
	time_load() { psql_b -F ' ' -c "SELECT avail, round(ms::numeric, 3) FROM bench_time_available('$1')"; }
	median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "") }'; }
	autovacuums() { sql "SELECT autovacuum_count FROM pg_stat_user_tables WHERE relid = 'inventory.ledger'::regclass"; }

	# measure_loads PHASE: LOAD_ROUNDS restarts, each timing the first call for
	# both SKUs; sets FULL_MED[PHASE] and EMPTY_MED[PHASE] to the medians.
	declare -A FULL_MED EMPTY_MED
	LOAD_AVAIL=
	measure_loads() {
		local phase=$1 round s avail ms full=() empty=()
		sql "CHECKPOINT" >/dev/null   # so the restart does not replay the load
		for round in $(seq "$LOAD_ROUNDS"); do
			inv_log "case 9 ($phase): restart $round of $LOAD_ROUNDS"
			inv_as_pg pg_ctl -D "$DIR/data" -l "$DIR/server.log" -m fast -w restart >/dev/null ||
				inv_die "the server did not restart"
			time_load LOAD-WARM >/dev/null   # pays the first session's catalog loading
			# alternate the order, so neither SKU always goes first
			for s in $([ $((round % 2)) -eq 1 ] && echo "LOAD-EMPTY LOAD-FULL" || echo "LOAD-FULL LOAD-EMPTY"); do
				read -r avail ms <<<"$(time_load "$s")"
				if [ "$s" = LOAD-FULL ]; then
					full+=("$ms")
					LOAD_AVAIL+=" $avail"
				else
					empty+=("$ms")
				fi
			done
		done
		FULL_MED[$phase]=$(median "${full[@]}")
		EMPTY_MED[$phase]=$(median "${empty[@]}")
	}
	# As specified: right after the fold.  The fold updated every row, so until
	# VACUUM the (sku, folded) index still holds an entry per old row version.
	AV_BEFORE=$(autovacuums)
	measure_loads fold
	AV_NOTE=
	[ "$(autovacuums)" = "$AV_BEFORE" ] || AV_NOTE=" (autovacuum processed inventory.ledger meanwhile)"
	# and once VACUUM has removed the dead versions, as autovacuum eventually does
	inv_log "case 9: VACUUM inventory.ledger"
	sql "VACUUM inventory.ledger" >/dev/null
	measure_loads vacuum
	check "case 9: available('LOAD-FULL') = $SETTLED after every restart (got$LOAD_AVAIL)" \
		"$(echo "$LOAD_AVAIL" | awk -v n="$SETTLED" '{ for (i = 1; i <= NF; i++) if ($i != n) exit 1; if (NF) print "t" }')"
	BYTES=$(sql "SELECT bytes_per_entry FROM inventory.cache_info()")
	for v in "${FULL_MED[@]}" "${EMPTY_MED[@]}" "$BYTES"; do num "$v" || FAILED=1; done
fi

# ---------------------------------------------------------------- the report
# fmt NUMBER [DECIMALS]: rounded, with thousands separators; anything else as is
fmt() { if num "${1:-}"; then awk -v v="$1" -v d="${2:-0}" 'BEGIN {
	s = sprintf("%.*f", d, v); i = index(s, "."); f = i ? substr(s, i) : ""; s = i ? substr(s, 1, i - 1) : s
	while (length(s) > 3) { f = "," substr(s, length(s) - 2) f; s = substr(s, 1, length(s) - 3) }
	print s f }'; else echo "${1:-—}"; fi; }
ratio() { if num "${1:-}" && num "${2:-}" && awk -v b="$2" 'BEGIN { exit !(b > 0) }'; then
	awk -v a="$1" -v b="$2" 'BEGIN { r = a / b; printf (r < 0.1 ? "%.3f" : "%.2f"), r }'; else echo "—"; fi; }
verdict() { awk -v m="$1" -v op="$2" -v t="$3" 'BEGIN {
	if (m !~ /^[0-9.]+$/) { print "—"; exit }
	ok = (op == ">=") ? m + 0 >= t + 0 : m + 0 <= t + 0; print ok ? "PASS" : "MISS" }'; }

CASE_IDS=()   # the pgbench cases that ran, in the report's order
for id in 1 1b 1k 1c 2a 2b 2c 2d 2e 2f 3 3d 4 4b 5 6 7 10 11 11b 11c 12 12c; do want "$id" && CASE_IDS+=("$id"); done
declare -A NAME BASE
NAME[1]="1 floor: SELECT 1"
NAME[1b]="1b floor: SELECT * FROM a C function returning a row"
NAME[1k]="1k floor: SELECT of a random order key"
NAME[1c]="1c floor: SELECT of an absent key by the ledger's primary key"
NAME[2a]="2a SQL: conditional UPDATE, one hot row"
NAME[2b]="2b SQL: UPDATE + ledger INSERT, one transaction"
NAME[2c]="2c SQL: SELECT FOR UPDATE + UPDATE"
NAME[2d]="2d SQL: ledger INSERT alone"
NAME[2e]="2e SQL: INSERT into a copy of inventory.ledger (its 3 indexes)"
NAME[2f]="2f SQL: the same INSERT ... ON CONFLICT DO NOTHING"
NAME[3]="3 Redis: EVALSHA check-and-DECRBY (in memory)"
NAME[3d]="3d Redis: 3 with appendonly yes, appendfsync always (durable)"
NAME[4]="4 inventory: reserve, hot SKU, succeeds"
NAME[4b]="4b inventory: 4 with max_per_buyer $LIMIT, a new buyer per call"
NAME[5]="5 inventory: reserve, hot SKU, sold out"
NAME[6]="6 inventory: reserve, $(fmt "$NSKUS") SKUs uniform"
NAME[7]="7 inventory: reserve + confirm/cancel/expire"
NAME[10]="10 inventory: reserve_many of $BATCH, hot SKU (reservations/s)"
NAME[11]="11 router: case 4 through inventory_router"
NAME[11b]="11b router: 11 on a SKU split over 2 buckets"
NAME[11c]="11c router: 11 on a SKU split over 4 buckets"
NAME[12]="12 router: case 5 through inventory_router"
NAME[12c]="12c router: 12 on a SKU split over 4 buckets, sold out"
BASE=([1b]=1 [1k]=1 [1c]=1 [2a]=1 [2b]=1 [2c]=1 [2d]=1 [2e]=2d [2f]=2d [3]=1 [3d]=3 [4]=2b [4b]=4 [5]=1 [6]=2b [7]=2b [10]=3d [11]=4 [11b]=11 [11c]=11 [12]=5 [12c]=12)

# median NUMBER...: the median, or — when one of them is not a number
median() {
	local x
	[ $# -gt 0 ] || { echo "—"; return; }
	for x; do num "$x" || { echo "—"; return; }; done
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# round_target CASE BASE TARGET TEXT: a row of the table of rounds
round_target() {
	local a=$1 b=$2 t=$3 r m
	local ratios=()
	ran "$a" "$b" || return 0
	for r in $(seq "$ROUNDS"); do ratios+=("$(ratio "${RTPS[$a/$r]:-}" "${RTPS[$b/$r]:-}")"); done
	m=$(median "${ratios[@]}")
	printf '| %s |' "$4"; for r in "${ratios[@]}"; do printf ' %s× |' "$r"; done
	# no target: a bound, shown beside the targets
	printf ' %s× | %s |\n' "$m" "$([ -n "$t" ] && verdict "$m" '>=' "$t" || echo —)"
}

# picture TEXT KIND: the link to bench/plot.py's picture of the report, which
# it draws beside it once the report is written
picture() {
	[ "$PLOT_OK" -eq 1 ] || return 0
	echo
	echo "![$1]($(basename "${OUT%.md}")-$2.svg)"
}

report() {
	local id c b
	echo "# inventory benchmark"
	echo
	echo "Command: \`$CMDLINE\` (run as root from the checkout; $(date -u '+%Y-%m-%d %H:%M UTC'))"
	echo
	echo "Machine: $(nproc) cores; $PGVERSION; fdatasync $(fmt "${FSYNC:-}") ops/s" \
		"(\`pg_test_fsync -s $FSYNC_SECS\` on the cluster's file system)."
	echo
	echo "Each run: pgbench -M prepared -j 2, $DURATION s$([ "$WARMUP" -gt 0 ] && echo " after a $WARMUP s warm-up" || echo ", no warm-up"), on one scratch" \
		"cluster with the server defaults (synchronous_commit = on, fsync = on), plus" \
		"inventory.max_skus = 200000. TPS are transactions (pgbench script runs) per second; a" \
		"ratio is TPS divided by the TPS of the named baseline at the same client count."
	want 3 || want 3d && echo "Cases 3 and 3d: redis-benchmark -c CLIENTS --threads 2 over TCP on 127.0.0.1," \
		"a request count sized to last $DURATION s; TPS are calls per second."
	want 10 && echo "Case 10: TPS are reservations per second, $BATCH per call (calls per second × $BATCH);" \
		"its latency is that of a call of $BATCH."
	[ "$CASES" != "$ALL_CASES" ] && { echo; echo "Only cases $CASES (\`--cases\`)."; }
	[ -n "$REDIS_NOTE" ] && { echo; echo "$REDIS_NOTE"; }
	[ "$PLOT_OK" -eq 1 ] || { echo; echo "python3-matplotlib could not be installed here: no pictures."; }
	echo
	echo "## Throughput (TPS)"
	echo
	printf '| case |'; for c in $CLIENTS; do printf ' %s client%s |' "$c" "$([ "$c" -gt 1 ] && echo s)"; done; echo
	printf '|---|'; for c in $CLIENTS; do printf -- '---:|'; done; echo
	for id in "${CASE_IDS[@]}"; do
		printf '| %s |' "${NAME[$id]}"
		for c in $CLIENTS; do printf ' %s |' "$(fmt "${TPS[$id/$c]:-}")"; done; echo
	done
	picture "TPS per case against clients" tps
	echo
	echo "## Each case and client count"
	echo
	echo "| case | clients | TPS | mean latency (ms) | ratio | baseline |"
	echo "|---|---:|---:|---:|---:|---|"
	for id in "${CASE_IDS[@]}"; do
		b=${BASE[$id]:-}
		for c in $CLIENTS; do
			printf '| %s | %s | %s | %s | %s | %s |\n' "${NAME[$id]}" "$c" \
				"$(fmt "${TPS[$id/$c]:-}")" "$(fmt "${LAT[$id/$c]:-}" 3)" \
				"$([ -n "$b" ] && ratio "${TPS[$id/$c]:-}" "${TPS[$b/$c]:-}" || echo —)" \
				"$([ -n "$b" ] && echo "case $b" || echo —)"
		done
	done
	if want 8; then
		echo
		echo "## 8: expiry backlog"
		echo
		echo "$(fmt "$BACKLOG") overdue PENDING reservations (inserted with the worker off) cleared by the" \
			"worker (inventory.expire_batch = 10000) while case 4 runs at 32 clients; timed from" \
			"switching inventory.worker_enabled on until all the backlog's units are back on sale" \
			"(\`inventory.available()\` polled every 10 ms)."
		echo
		echo "| backlog | seconds | rows/s | case 4 TPS at 32 clients meanwhile |"
		echo "|---:|---:|---:|---:|"
		echo "| $(fmt "$BACKLOG") | $(fmt "${EXPIRY_SECS:-FAILED}" 2) | $(fmt "$EXPIRY_RATE") | $(fmt "${LOAD_TPS:-}")$LOAD_NOTE |"
		echo
		echo "The database was vacuumed and checkpointed first, so that nothing the earlier cases left" \
			"competes with the worker. Meanwhile (sampled from /proc every 0.1 s):"
		echo
		echo "| worker CPU, s | worker's share of the clearing | rows per worker CPU-second | autovacuum workers | their CPU, s |"
		echo "|---:|---:|---:|---:|---:|"
		if num "${EXPIRY_SECS:-}" && num "${WORKER_CPU:-}" && awk -v w="$WORKER_CPU" 'BEGIN { exit !(w > 0) }'; then
			echo "| $(fmt "$WORKER_CPU" 2) | $(awk -v w="$WORKER_CPU" -v s="$EXPIRY_SECS" 'BEGIN { printf "%.0f%%", 100 * w / s }') |" \
				"$(fmt "$(awk -v n="$BACKLOG" -v w="$WORKER_CPU" 'BEGIN { printf "%.0f", n / w }')") | ${AUTOVAC_N:-0} | $(fmt "${AUTOVAC_CPU:-0}" 2) |"
		else
			echo "| — | — | — | ${AUTOVAC_N:-—} | ${AUTOVAC_CPU:-—} |"
		fi
	fi
	if want 9; then
		echo
		echo "## 9: cache load after restart"
		echo
		echo "First \`inventory.available(sku)\` in a fresh session after a server restart, timed on the" \
			"server; median of $LOAD_ROUNDS restart(s). LOAD-FULL has $(fmt "$SETTLED") restock movements of 1 unit," \
			"all settled and folded (\`inventory.fold()\` until 0); LOAD-EMPTY has none. Measured right after" \
			"the fold$AV_NOTE, then again after \`VACUUM inventory.ledger\`."
		echo
		echo "| when | LOAD-EMPTY (ms) | LOAD-FULL (ms) | ratio |"
		echo "|---|---:|---:|---:|"
		echo "| right after the fold | $(fmt "${EMPTY_MED[fold]}" 3) | $(fmt "${FULL_MED[fold]}" 3) | $(ratio "${FULL_MED[fold]}" "${EMPTY_MED[fold]}") |"
		echo "| after VACUUM | $(fmt "${EMPTY_MED[vacuum]}" 3) | $(fmt "${FULL_MED[vacuum]}" 3) | $(ratio "${FULL_MED[vacuum]}" "${EMPTY_MED[vacuum]}") |"
		echo
		echo "Shared memory per cached SKU (\`inventory.cache_info()\`): $BYTES bytes."
	fi
	if want 10; then
		echo
		echo "## 10: batched admission against durable Redis"
		echo
		echo "One pgbench transaction is one call of \`inventory.reserve_many\` with $BATCH reservations of 1 unit" \
			"of HOT-MANY, each under a key of its own, committed together; against case 3d's calls of the" \
			"check-and-DECRBY script on a Redis that fsyncs its AOF at every write."
		echo
		echo "| clients | calls/s | reservations/s | mean latency of a call (ms) | case 3d calls/s | ratio |"
		echo "|---:|---:|---:|---:|---:|---:|"
		for c in $CLIENTS; do
			printf '| %s | %s | %s | %s | %s | %s |\n' "$c" "$(fmt "${CALLS[10/$c]:-}")" \
				"$(fmt "${TPS[10/$c]:-}")" "$(fmt "${LAT[10/$c]:-}" 3)" "$(fmt "${TPS[3d/$c]:-}")" \
				"$(ratio "${TPS[10/$c]:-}" "${TPS[3d/$c]:-}")"
		done
	fi
	if want 11 || want 11b || want 11c || want 12 || want 12c; then
		local lo
		lo=$(printf '%s\n' $CLIENTS | sort -n | head -1)
		echo
		echo "## 11-12c: the router"
		echo
		echo "The same reserve through \`inventory_router\` (PL/Proxy) to four partition databases on this" \
			"server, against the call made directly (case 4, 5), and on hot SKUs split over 2 and 4 buckets" \
			"(12c: sold out, each router session asking the other buckets again once a second)." \
			"Router, partitions and pgbench share the machine's $(nproc) cores: these are the costs of a" \
			"routed call, not the capacity of more servers. Extra latency per call at $lo client(s): the" \
			"routed call's mean latency minus the direct one's."
		echo
		echo "| call | clients | TPS | direct TPS | ratio | extra latency per call at $lo client(s) (ms) |"
		echo "|---|---:|---:|---:|---:|---:|"
		for id in 11 11b 11c 12 12c; do
			want "$id" || continue
			b=$(case $id in 12*) echo 5 ;; *) echo 4 ;; esac)
			printf '| %s | %s | %s | %s | %s | %s |\n' "${NAME[$id]}" "$TC" "$(fmt "${TPS[$id/$TC]:-}")" \
				"$(fmt "${TPS[$b/$TC]:-}")" "$(ratio "${TPS[$id/$TC]:-}" "${TPS[$b/$TC]:-}")" \
				"$(num "${LAT[$id/$lo]:-}" && num "${LAT[$b/$lo]:-}" && awk -v a="${LAT[$id/$lo]}" -v b="${LAT[$b/$lo]}" 'BEGIN { printf "%.3f", a - b }' || echo —)"
		done
	fi
	echo
	echo "## Targets (at $TC clients)"
	echo
	echo "| target | measured | result |"
	echo "|---|---:|---|"
	local r
	ran 4 2b && { r=$(ratio "${TPS[4/$TC]:-}" "${TPS[2b/$TC]:-}"); echo "| case 4 ≥ 10× case 2b | ${r}× | $(verdict "$r" '>=' 10) |"; }
	ran 4 2d && { r=$(ratio "${TPS[4/$TC]:-}" "${TPS[2d/$TC]:-}"); echo "| case 4 ≥ 0.8× case 2d | ${r}× | $(verdict "$r" '>=' 0.8) |"; }
	ran 4 2e && { r=$(ratio "${TPS[4/$TC]:-}" "${TPS[2e/$TC]:-}"); echo "| (case 4 / case 2e: a reserve against the bare insert of its own row) | ${r}× | — |"; }
	ran 4 2f && { r=$(ratio "${TPS[4/$TC]:-}" "${TPS[2f/$TC]:-}"); echo "| (case 4 / case 2f: a reserve against the insert of its own row that answers a replay) | ${r}× | — |"; }
	ran 4b 4 && { r=$(ratio "${TPS[4b/$TC]:-}" "${TPS[4/$TC]:-}"); echo "| case 4b ≥ 0.8× case 4 (a limit per buyer, a new buyer per call) | ${r}× | $(verdict "$r" '>=' 0.8) |"; }
	ran 5 1 && { r=$(ratio "${TPS[5/$TC]:-}" "${TPS[1/$TC]:-}"); echo "| case 5 ≥ 0.9× case 1 | ${r}× | $(verdict "$r" '>=' 0.9) |"; }
	ran 5 1k && { r=$(ratio "${TPS[5/$TC]:-}" "${TPS[1k/$TC]:-}"); echo "| (case 5 / case 1k: a refusal against a round trip that carries its key) | ${r}× | — |"; }
	ran 1k 1 && { r=$(ratio "${TPS[1k/$TC]:-}" "${TPS[1/$TC]:-}"); echo "| (case 1k / case 1: the round trip with a key against the bare one) | ${r}× | — |"; }
	ran 1c 1 && { r=$(ratio "${TPS[1c/$TC]:-}" "${TPS[1/$TC]:-}"); echo "| (case 1c / case 1: the key's index probe alone, in SQL) | ${r}× | — |"; }
	ran 5 1c && { r=$(ratio "${TPS[5/$TC]:-}" "${TPS[1c/$TC]:-}"); echo "| (case 5 / case 1c: a refusal against the probe of its key) | ${r}× | — |"; }
	ran 6 2b && { r=$(ratio "${TPS[6/$TC]:-}" "${TPS[2b/$TC]:-}"); echo "| case 6 ≥ 1.0× case 2b | ${r}× | $(verdict "$r" '>=' 1.0) |"; }
	ran 10 3d && { r=$(ratio "${TPS[10/$TC]:-}" "${TPS[3d/$TC]:-}"); echo "| case 10 reservations/s ≥ 1.0× case 3d calls/s (reserve_many of $BATCH against durable Redis) | ${r}× | $(verdict "$r" '>=' 1.0) |"; }
	ran 10 4 && { r=$(ratio "${TPS[10/$TC]:-}" "${TPS[4/$TC]:-}"); echo "| (case 10 / case 4: reservations/s in batches of $BATCH against one reserve per call) | ${r}× | — |"; }
	ran 3d 3 && { r=$(ratio "${TPS[3d/$TC]:-}" "${TPS[3/$TC]:-}"); echo "| (case 3d / case 3: Redis durable against in memory) | ${r}× | — |"; }
	want 8 && { echo "| case 8 ≥ 20,000 rows/s | $(fmt "$EXPIRY_RATE") | $(verdict "$EXPIRY_RATE" '>=' 20000) |"; }
	want 9 && { r=$(ratio "${FULL_MED[fold]}" "${EMPTY_MED[fold]}"); echo "| case 9 load ratio about 1 (≤ 2), right after the fold | ${r}× | $(verdict "$r" '<=' 2) |"; }
	want 9 && { r=$(ratio "${FULL_MED[vacuum]}" "${EMPTY_MED[vacuum]}"); echo "| case 9 load ratio about 1 (≤ 2), after VACUUM | ${r}× | $(verdict "$r" '<=' 2) |"; }
	want 9 && { echo "| case 9 bytes per SKU (with its rules) ≤ 288 | $BYTES | $(verdict "$BYTES" '<=' 288) |"; }
	if [ "$ROUNDS" -gt 0 ] && [ "${#RCASES[@]}" -gt 0 ]; then
		echo
		echo "## Targets in rounds (at $TC clients)"
		echo
		echo "Cases ${RCASES[*]} again, $ROUNDS time(s) in turn, $DURATION s each, after the cases above:" \
			"each round's ratio compares runs about a minute apart, and the target is judged on the median."
		echo
		printf '| target |'; for r in $(seq "$ROUNDS"); do printf ' round %s |' "$r"; done; echo ' median | result |'
		printf '|---|'; for r in $(seq "$ROUNDS"); do printf -- '---:|'; done; echo '---:|---|'
		round_target 5 1 0.9 "case 5 ≥ 0.9× case 1"
		round_target 1k 1 "" "(case 1k / case 1: the round trip with a key against the bare one, the most case 5 can reach)"
		round_target 5 1k "" "(case 5 / case 1k: a refusal against a round trip that carries its key)"
		round_target 4 2b 10 "case 4 ≥ 10× case 2b"
		round_target 4 2d 0.8 "case 4 ≥ 0.8× case 2d"
		round_target 2e 2d "" "(case 2e / case 2d: the INSERT of the ledger's own row against the one-index INSERT, the most case 4 can reach)"
		round_target 4 2e "" "(case 4 / case 2e: a reserve against the bare insert of its own row)"
	fi
	picture "Each target: measured against its target" ratios
	echo
	echo "## Checks"
	echo
	echo "| check | result |"
	echo "|---|---|"
	printf '%s\n' "${CHECKS[@]}"
}

# every case must have produced a number
for id in "${CASE_IDS[@]}"; do
	for c in $CLIENTS; do
		v=${TPS[$id/$c]:-}
		num "$v" || [ "$v" = skipped ] || { FAILED=1; inv_log "case $id at $c clients produced no number"; }
	done
done

mkdir -p "$(dirname "$OUT")"
# none of an earlier run's pictures beside this report, should drawing fail
rm -f "${OUT%.md}-tps.svg" "${OUT%.md}-ratios.svg"
report | tee "$OUT"
inv_log "report written to $OUT"
if [ "$PLOT_OK" -eq 1 ]; then
	# Debian's python3, which has the matplotlib of python3-matplotlib
	if /usr/bin/python3 "$INV_TOP/bench/plot.py" "$OUT" >/dev/null; then
		inv_log "pictures drawn: ${OUT%.md}-tps.svg, ${OUT%.md}-ratios.svg"
	else
		FAILED=1; inv_log "the pictures of $OUT could not be drawn"
	fi
fi
[ "$FAILED" -eq 0 ]

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
#   --smoke     every case for 150 transactions per client at 8 clients
#               (or --duration seconds), small data, no fsync measurement;
#               checks that each case produces a number and its counts
#               (targets not enforced).  About a minute.
#   --duration  seconds per measured run.
#   --clients   the client counts, in quotes.
#   --cases     only these cases, in quotes (default: all); a target is
#               reported when all its cases ran, a ratio shows as — when its
#               baseline did not.
#   --rounds    after the cases, run the cases of the throughput targets (1,
#               5, 2b, 2d, 4, 4n, 13, 13s) and of their bounds (1k, 2e) again
#               N times in turn at the targets' client count, and judge those
#               targets on the median of the rounds' ratios (default 3; 1
#               with --smoke; 0: none).
#
# Run as root: installs what is missing (lib.sh, plus python3, redis-server,
# redis-tools and python3-matplotlib), builds and installs the extension, and
# runs PostgreSQL and pgbench as the postgres user.
#
# Outputs, in bench/results/ (smoke.* for --smoke, so that a smoke run does
# not overwrite the last real one):
#   latest.json       the data of the run: the commit measured, the machine,
#                     the settings, every measured run, the rounds, cases 8,
#                     8r and 9, the checks and the notes (bench/report.py
#                     documents its schema)
#   latest.md         the report, which bench/report.py makes from that data
#                     and this script prints: tables, ratios, the targets
#                     judged PASS/MISS, the rounds' medians, the checks
#   latest-tps.svg, latest-ratios.svg   its pictures (none without matplotlib)
# `bench/report.py latest.json` makes the report and the pictures again from
# the data alone; to keep a run, copy latest.json, latest.md and the two
# pictures under a dated name.  Exits non-zero when a case produced no
# number, a correctness check failed or the report or its pictures could not
# be made; PASS/MISS of the targets is reported, not enforced.
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
#   4n  4 in a database of its own (bench_n), set up as bench is for case 4,
#       with inventory.stock_notifications on (ALTER DATABASE): what LISTEN
#       inventory_stock costs a sale
#   5   inventory.reserve on one sold-out SKU, always refused
#   6   inventory.reserve on a random SKU among 100,000
#   7   reserve, then confirm (70%), cancel (20%) or let expire (10%)
#   8   the worker clears 100,000 overdue reservations under case 4 load
#   8r  8 with a reconciler set (inventory.set_reconciler) that looks each
#       order up in a payments table, one indexed lookup, and answers
#       expire: the cost of asking
#   9   cache load after restart: SKU with 1,000,000 settled movements vs none
#   10  inventory.reserve_many of BATCH (50) reservations of 1 unit, each
#       under a key of its own, on another hot SKU: reported as reservations
#       per second (calls per second x BATCH), against case 3d
#   14  LISTEN inventory_stock: a SKU of one unit taken and given back,
#       alone, 40 times each (5 with --smoke), in case 4n's database; how long
#       from a call's answer until a listener hears the state it left
#       (bench/notify_latency.py, psycopg)
#   14b 14 while the worker clears an expiry backlog, in a database of its
#       own with notifications on: 1,000,000 overdue reservations (600,000
#       with --smoke) inserted with the worker off, as in case 8, cleared in
#       batches of at most the default inventory.expire_batch (shorter while
#       a batch takes over 50 ms, as in any database with notifications on);
#       the flips run while the backlog lasts, and a note waits for at most
#       one of the worker's transactions
#   11  case 4 through a router (inventory_router over PL/Proxy) to four
#       partition databases on the same server: the router's cost per call
#   11b 11 on a hot SKU split over 2 buckets (inventory.split)
#   11c 11 on a hot SKU split over 4 buckets
#   12  case 5 through the router: a sold-out refusal
#   12c 12 on a SKU split over 4 buckets, sold out
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

# the Usage paragraph of the comment above
usage() { sed -n '/^# Usage:/,/^# Run as root/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

ARGS=("$@")
SMOKE=0
DURATION=
CLIENTS=
ROUNDS=
ALL_CASES="1 1b 1k 1c 2a 2b 2c 2d 2e 2f 3 3d 4 4b 4n 5 6 7 8 8r 9 10 13 13s 13u 14 14b 11 11b 11c 12 12c"
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

# a smoke run counts transactions rather than seconds: SMOKE_TX per client
# and run, unless --duration says otherwise
SMOKE_TX=0
if [ "$SMOKE" -eq 1 ]; then
	[ -z "$DURATION" ] && SMOKE_TX=150
	: "${DURATION:=1}" "${CLIENTS:=8}" "${ROUNDS:=1}"
	WARMUP=0 NSKUS=1000 BACKLOG=2000 SETTLED=10000 FSYNC_SECS=0 LOAD_ROUNDS=1 NOTIFY_FLIPS=5
	NOTIFY_BACKLOG=300000
	OUT=$INV_TOP/bench/results/smoke.md
else
	: "${DURATION:=15}" "${CLIENTS:=1 8 32 64}" "${ROUNDS:=3}"
	WARMUP=3 NSKUS=100000 BACKLOG=100000 SETTLED=1000000 FSYNC_SECS=2 LOAD_ROUNDS=3 NOTIFY_FLIPS=40
	NOTIFY_BACKLOG=1000000
	OUT=$INV_TOP/bench/results/latest.md
fi
DATA=${OUT%.md}.json
[[ $DURATION =~ ^[1-9][0-9]*$ ]] || inv_die "--duration takes a whole number of seconds"
# what a measured run lasts: DURATION seconds, or SMOKE_TX transactions
MEASURE=$DURATION
[ "$SMOKE_TX" -gt 0 ] && MEASURE=t$SMOKE_TX
[[ $ROUNDS =~ ^[0-9]+$ ]] || inv_die "--rounds takes a whole number"
for c in $CLIENTS; do [[ $c =~ ^[1-9][0-9]*$ ]] || inv_die "--clients takes numbers"; done
[ -n "${CASES// /}" ] || inv_die "--cases takes case ids: $ALL_CASES"
for id in $CASES; do
	[[ " $ALL_CASES " == *" $id "* ]] || inv_die "no case $id; the cases are: $ALL_CASES"
done
want() { [[ " $CASES " == *" $1 "* ]]; }   # want ID: is case ID selected?
# The targets are stated at 64 clients; without 64, use the largest count.
TC=$(printf '%s\n' $CLIENTS | sort -n | tail -1)
echo " $CLIENTS " | grep -q ' 64 ' && TC=64
# case 4b: the limit per buyer, and the range its buyers are drawn from
LIMIT=2 BUYERS=9000000000000000000
# case 10: the reservations in one call of inventory.reserve_many
BATCH=50
# cases 8 and 8r: the worker's batch, the clients of the load it clears
# under, and the length of each of the load's runs (as many follow each
# other as the clearing takes)
EXPIRE_BATCH=10000 EXPIRY_CLIENTS=32
if [ "$SMOKE" -eq 1 ]; then EXPIRY_LOAD=2; else EXPIRY_LOAD=$((DURATION > 20 ? DURATION : 20)); fi
# the command line, quoted so that it can be pasted
CMDLINE=bench/run.sh
for a in "${ARGS[@]}"; do
	case $a in *' '*) CMDLINE+=" \"$a\"" ;; *) CMDLINE+=" $a" ;; esac
done
# the tree measured: its commit, and whether it had uncommitted changes
STARTED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
COMMIT=$(git -C "$INV_TOP" rev-parse HEAD 2>/dev/null) || COMMIT=
BRANCH=$(git -C "$INV_TOP" rev-parse --abbrev-ref HEAD 2>/dev/null) || BRANCH=
DIRTY=
CHANGES=$(git -C "$INV_TOP" status --porcelain 2>/dev/null) && DIRTY=$([ -n "$CHANGES" ] && echo true || echo false)

# python3 makes the report: without it there is none
inv_setup python3
# Redis is only a reference: if it cannot be installed, its case is skipped.
REDIS_OK=1
{ want 3 || want 3d; } && { (inv_packages redis-server redis-tools) || REDIS_OK=0; }
# the listener of cases 14 and 14b
{ want 14 || want 14b; } &&
	{ (inv_packages python3-psycopg) || inv_die "python3-psycopg could not be installed (cases 14, 14b)"; }
# The pictures too: without matplotlib the report has none.
(inv_packages python3-matplotlib) || inv_log "python3-matplotlib could not be installed: no pictures"

DIR=$(mktemp -d /tmp/inventory-bench.XXXXXX)
REDIS_PID=
cleanup() {
	[ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null
	inv_cluster_stop "$DIR"
	rm -rf "$DIR"
}
trap cleanup EXIT

# ---------------------------------------------------------------- the data
# Everything measured is appended to RECORDS as it comes, one JSON object a
# line; bench/report.py gathers them into DATA and makes the report from it.
RECORDS=$DIR/records.jsonl
# json_str TEXT: TEXT as a JSON string (null when empty)
json_str() {
	local s=$1
	[ -n "$s" ] || { printf null; return; }
	s=${s//\\/\\\\}; s=${s//\"/\\\"}
	s=${s//$'\t'/\\t}; s=${s//$'\n'/\\n}; s=${s//$'\r'/\\r}
	s=${s//[$'\001'-$'\037']/}
	printf '"%s"' "$s"
}
# json_val VALUE: VALUE if it is a JSON number, true or false; else null
json_val() {
	if [[ $1 =~ ^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$ || $1 == true || $1 == false ]]; then
		printf '%s' "$1"
	else
		printf null
	fi
}
# record TYPE FIELD...: appends {"type": TYPE, FIELD...} to RECORDS, each
# FIELD one of
#   name=TEXT      a string (null when empty)
#   name:=VALUE    a number, true or false (null when VALUE is none of them:
#                  empty, FAILED, ...)
#   name[]=WORDS   an array of strings;  name[]:=WORDS  an array of numbers
record() {
	local line f k v w sep words
	line="{\"type\": $(json_str "$1")"
	shift
	for f; do
		k=${f%%=*} v=${f#*=}
		case $k in
		*'[]:' | *'[]')
			line+=", $(json_str "${k%%[*}"): ["
			sep=
			read -ra words <<<"$v"
			for w in "${words[@]}"; do
				if [[ $k == *: ]]; then line+="$sep$(json_val "$w")"; else line+="$sep$(json_str "$w")"; fi
				sep=", "
			done
			line+="]" ;;
		*:) line+=", $(json_str "${k%:}"): $(json_val "$v")" ;;
		*) line+=", $(json_str "$k"): $(json_str "$v")" ;;
		esac
	done
	printf '%s}\n' "$line" >>"$RECORDS"
}
# check WHAT OK: a correctness check, passed when OK is t
check() {
	record check name="$1" ok:="$([ "$2" = t ] && echo true || echo false)"
	[ "$2" = t ] || inv_log "CHECK FAILED: $1"
}
# error WHAT: something that went wrong outside a check; the run fails
error() { record error text="$1"; inv_log "ERROR: $1"; }

record run commit="$COMMIT" dirty:="$DIRTY" branch="$BRANCH" started_utc="$STARTED" \
	command="$CMDLINE"

inv_log "starting a scratch cluster in $DIR"
# max_skus: case 6's SKUs all fit in the cache.  Everything else stays at the
# defaults: synchronous_commit = on, fsync = on.
# max_connections: a router session of cases 11-12 holds a connection to
# each partition it called, up to four.
inv_cluster_start "$DIR" "inventory.max_skus = 200000" "max_connections = 400"
mkdir "$DIR/sql"

psql_b() { inv_as_pg psql -X -q -At -v ON_ERROR_STOP=1 -d bench "$@"; }
sql() { psql_b -c "$1"; }   # sql QUERY: prints the result, unaligned

# ---------------------------------------------------------------- machine
# (not in a smoke run: pg_test_fsync takes 16 s whatever its -s)
FSYNC=
if [ "$FSYNC_SECS" -gt 0 ]; then
	inv_log "measuring the fsync rate (pg_test_fsync -s $FSYNC_SECS)"
	FSYNC=$(inv_as_pg "$INV_PGBIN/pg_test_fsync" -s "$FSYNC_SECS" -f "$DIR/data/pg_test_fsync.tmp" 2>&1 |
		awk '$1 == "fdatasync" && $3 == "ops/sec" { print $2; exit }')
fi
record machine cores:="$(nproc)" \
	memory_kib:="$(awk '$1 == "MemTotal:" { print $2 }' /proc/meminfo)" \
	cpu_model="$(sed -n 's/^model name[[:space:]]*: *//p' /proc/cpuinfo | head -1)" \
	kernel="$(uname -srm)" \
	os="$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-}")" \
	postgres="$("$INV_PGBIN/postgres" --version)" \
	redis="$([ "$REDIS_OK" -eq 1 ] && { want 3 || want 3d; } && redis-server --version 2>/dev/null)" \
	fdatasync_per_s:="$FSYNC" fsync_test_s:="$FSYNC_SECS"

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
-- cases 13 and 13s: the same as HOT-1 and SOLD-1, for the express lane
SELECT inventory.restock('HOT-NOW', 1000000000000, 'stock-hot-now');
INSERT INTO inventory.sku (sku, on_hand) VALUES ('SOLD-NOW', 0);

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

# Cases 4n and 14: a database of their own with inventory.stock_notifications
# on, as an application turns it on (a session cannot), set up as bench is
# for case 4.
# notify_db DB SQL: creates DB with the extension and the notifications on,
# then runs SQL there; its case 14 SKU, NOTE-1, is one unit taken and given back
notify_db() {
	inv_log "creating the $1 database, with inventory.stock_notifications on"
	inv_as_pg createdb "$1" &&
		inv_as_pg psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" >/dev/null <<SQL
CREATE EXTENSION inventory;
ALTER DATABASE $1 SET inventory.default_ttl = '1d';
ALTER DATABASE $1 SET inventory.stock_notifications = on;
SELECT inventory.restock('NOTE-1', 1, 'stock-note');
$2
SQL
}
NOTIFY_DB=bench_n
psql_n() { inv_as_pg psql -X -q -At -v ON_ERROR_STOP=1 -d "$NOTIFY_DB" "$@"; }
if want 4n || want 14; then
	# case 4n: the same stock as HOT-1
	notify_db "$NOTIFY_DB" "SELECT inventory.restock('HOT-N', 1000000000000, 'stock-hot-n');" ||
		inv_die "set-up of the $NOTIFY_DB database failed"
fi

# The cases of the throughput targets, run again in rounds (see "rounds")
RCASES=()
for id in 1 1k 5 2b 2d 2e 4 4n 13 13s; do want "$id" && RCASES+=("$id"); done
record settings smoke:="$([ "$SMOKE" -eq 1 ] && echo true || echo false)" \
	duration_s:="$DURATION" transactions_per_client:="$([ "$SMOKE_TX" -gt 0 ] && echo "$SMOKE_TX")" warmup_s:="$WARMUP" clients[]:="$CLIENTS" cases[]="$CASES" \
	all_cases[]="$ALL_CASES" rounds:="$ROUNDS" round_cases[]="${RCASES[*]}" \
	target_clients:="$TC" pgbench="-M prepared -j 2" \
	synchronous_commit="$(sql "SHOW synchronous_commit")" fsync="$(sql "SHOW fsync")" \
	max_skus:="$(sql "SHOW inventory.max_skus")" nskus:="$NSKUS" backlog:="$BACKLOG" \
	settled:="$SETTLED" batch:="$BATCH" limit_per_buyer:="$LIMIT" buyers:="$BUYERS" \
	load_restarts:="$LOAD_ROUNDS" expire_batch:="$EXPIRE_BATCH" \
	expiry_clients:="$EXPIRY_CLIENTS" expiry_load_s:="$EXPIRY_LOAD" notify_backlog:="$NOTIFY_BACKLOG"

# ---------------------------------------------------------------- pgbench scripts
# bench/sql/*.sql, copied where the postgres user can read them
cp "$INV_TOP"/bench/sql/*.sql "$DIR/sql/"
chmod -R a+rX "$DIR/sql"

# ---------------------------------------------------------------- runners
PROCESSED=0          # transactions of the last run_case, warm-ups included

# pgbench_once CLIENTS SECONDS LOG SCRIPT [PGBENCH ARGS...]: one run as the
# postgres user (SECONDS tN: N transactions per client instead); fails on
# an aborted client or a failed transaction.
# With PGB_LAT=1, pgbench also logs every transaction's latency, next to
# LOG, for percentiles().
pgbench_once() {
	local c=$1 t=$2 log=$3 script=$4 lat=() len
	shift 4
	len=(-T "$t")
	[[ $t == t* ]] && len=(-t "${t#t}")
	if [ "${PGB_LAT:-0}" -eq 1 ]; then
		rm -f "$log".lat.*
		lat=(-l --log-prefix="$log.lat")
	fi
	(cd "$DIR" && inv_as_pg pgbench -n -M prepared -j 2 -c "$c" "${len[@]}" "${lat[@]}" \
		-f "$DIR/sql/$script" "$@" "${PGB_DB:-bench}") >"$log" 2>&1 &&
		grep -q '^tps = ' "$log" && ! grep -qE '^number of failed transactions: [1-9]' "$log"
}
# percentiles LOG: "P50 P99" in ms of the transactions pgbench_once logged
percentiles() {
	cat "$1".lat.* 2>/dev/null | awk '{ print $3 }' | sort -n |
		awk '{ v[NR] = $1 } END { if (NR == 0) exit;
			i50 = int(NR * 0.50); if (i50 < 1) i50 = 1;
			i99 = int(NR * 0.99); if (i99 < 1) i99 = 1;
			printf "%.3f %.3f\n", v[i50] / 1000, v[i99] / 1000 }'
}
# the figures of a pgbench log
tps() { sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$1"; }
latency() { sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$1"; }
processed() { sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$1"; }
# failed LOG: shows the end of a failed run's log; prints its first error
failed() {
	sed 's/^/    /' "$1" | tail -20 >&2
	grep -m1 -iE 'error|fatal|abort|failed' "$1" || tail -1 "$1"
}

# run_case ID SCRIPT [PGBENCH ARGS...]: warm-up + measured run per client
# count, each recorded as a measurement
run_case() {
	local id=$1 script=$2 c log warm
	shift 2
	PROCESSED=0
	for c in $CLIENTS; do
		inv_log "case $id, $c clients"
		log=$DIR/pgbench-$id-$c.log
		warm=0
		if [ "$WARMUP" -gt 0 ]; then
			if ! pgbench_once "$c" "$WARMUP" "$log.warm" "$script" "$@"; then
				record measurement case="$id" clients:="$c" status=failed \
					detail="warm-up: $(failed "$log.warm")"
				continue
			fi
			warm=$(processed "$log.warm")
			PROCESSED=$((PROCESSED + warm))
		fi
		if ! pgbench_once "$c" "$MEASURE" "$log" "$script" "$@"; then
			record measurement case="$id" clients:="$c" status=failed detail="$(failed "$log")"
			continue
		fi
		PROCESSED=$((PROCESSED + $(processed "$log")))
		local pct=() p50 p99
		if [ "${PGB_LAT:-0}" -eq 1 ] && read -r p50 p99 < <(percentiles "$log"); then
			pct=(p50_ms:="$p50" p99_ms:="$p99")
			rm -f "$log".lat.*
		fi
		record measurement case="$id" clients:="$c" status=ok tps:="$(tps "$log")" \
			latency_ms:="$(latency "$log")" transactions:="$(processed "$log")" \
			warmup_transactions:="$warm" "${pct[@]}"
	done
}

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
# REDIS_STOCK, the check-and-DECRBY script by EVALSHA at each client count;
# records its measurements once every count has one
redis_bench() {
	local id=$1 sha c n warm rps csv lat run
	local runs=()
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
		warm=$((c * 500 + 5000))
		csv=$(redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c "$c" --threads 2 -n "$warm" \
			--csv EVALSHA "$sha" 1 stock:HOT 1 2>/dev/null | tail -1)
		REDIS_CALLS=$((REDIS_CALLS + warm))
		rps=$(echo "$csv" | awk -F'","' '{ printf "%.3f", $2 + 0 }')
		[ "${rps%.*}" -gt 0 ] 2>/dev/null || return 1
		n=$(awk -v r="$rps" -v d="$DURATION" 'BEGIN { printf "%d", r * d }')
		csv=$(redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -c "$c" --threads 2 -n "$n" \
			--csv EVALSHA "$sha" 1 stock:HOT 1 2>/dev/null | tail -1)
		REDIS_CALLS=$((REDIS_CALLS + n))
		rps=$(echo "$csv" | awk -F'","' '{ printf "%.3f", $2 + 0 }')
		lat=$(echo "$csv" | awk -F'","' '{ printf "%.3f", $3 + 0 }')
		[ "${rps%.*}" -gt 0 ] 2>/dev/null || return 1
		runs+=("$c $rps $lat $n $warm")
	done
	# the script refuses to go below zero, and every call took one unit
	[ "$(redis-cli -p "$REDIS_PORT" get stock:HOT)" -gt 0 ] || return 1
	for run in "${runs[@]}"; do
		read -r c rps lat n warm <<<"$run"
		record measurement case="$id" clients:="$c" status=ok tps:="$rps" latency_ms:="$lat" \
			transactions:="$n" warmup_transactions:="$warm"
	done
}
redis_skip() {   # redis_skip ID: case ID has no number
	local c
	for c in $CLIENTS; do record measurement case="$1" clients:="$c" status=skipped; done
	record note text="Redis could not be installed or run here: case $1 skipped."
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
	PGB_LAT=1 run_case 4 reserve.sql -D sku=HOT-1 -D prefix=o4-
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

# case 4n: in the database with inventory.stock_notifications on
if want 4n; then
	ledger_rows_n() { psql_n -c "SELECT count(*) FROM inventory.ledger WHERE $1"; }
	before=$(ledger_rows_n "sku = 'HOT-N'")
	PGB_DB=$NOTIFY_DB run_case 4n reserve.sql -D sku=HOT-N -D prefix=o4n-
	after=$(ledger_rows_n "sku = 'HOT-N'")
	check "case 4n: one ledger row per reserve ($PROCESSED calls, $((after - before)) rows)" \
		"$([ $((after - before)) -eq "$PROCESSED" ] && echo t)"
	check "case 4n: its sessions have inventory.stock_notifications on, from their database" \
		"$([ "$(psql_n -c 'SHOW inventory.stock_notifications')" = on ] && echo t)"
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
# ledger under them; its measurements are calls per second, which the report
# shows as reservations per second (x BATCH)
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
fi

# ---------------------------------------------------------------- case 13: the express lane
# reserve_now(), one reservation per call: on a hot SKU (13), sold out
# (13s), and over NSKUS SKUs (13u), against reserve() in cases 4, 5 and 6.
if want 13; then
	before=$(ledger_rows "sku = 'HOT-NOW'")
	PGB_LAT=1 run_case 13 reserve_now.sql -D sku=HOT-NOW -D prefix=o13-
	after=$(ledger_rows "sku = 'HOT-NOW'")
	check "case 13: one ledger row per call ($PROCESSED calls, $((after - before)) rows)" \
		"$([ $((after - before)) -eq "$PROCESSED" ] && echo t)"
	check "case 13: the calls were written by the express writer in batches ($(sql "SELECT coalesce(sum(rows), 0) || ' rows in ' || coalesce(sum(batches), 0) || ' batches, ' || inventory.express_fallbacks() || ' in their own transaction' FROM inventory.express_status"))" \
		"$(sql "SELECT coalesce(sum(rows), 0) >= $((after - before)) AND inventory.express_fallbacks() = 0 FROM inventory.express_status")"
	inv_log "express lane: $(sql "SELECT rows_per_batch::numeric(10,1) || ' rows per batch, ' || sent_back || ' sent back' FROM inventory.express_status WHERE datname = 'bench'")"
fi
if want 13s; then
	run_case 13s reserve_now.sql -D sku=SOLD-NOW -D prefix=o13s-
	check "case 13s: refused calls wrote no ledger row" \
		"$([ "$(ledger_rows "sku = 'SOLD-NOW'")" -eq 0 ] && echo t)"
fi
if want 13u; then
	before=$(ledger_rows "sku LIKE 'U-%'")
	run_case 13u reserve_now_skus.sql -D nskus=$NSKUS
	after=$(ledger_rows "sku LIKE 'U-%'")
	check "case 13u: one ledger row per call ($PROCESSED calls, $((after - before)) rows)" \
		"$([ $((after - before)) -eq "$PROCESSED" ] && echo t)"
fi

# ---------------------------------------------------------------- case 14: LISTEN
if want 14; then
	inv_log "case 14: LISTEN inventory_stock, $NOTIFY_FLIPS flips"
	if read -r n14 p50 p99 max14 missed _ < <(inv_as_pg python3 "$INV_TOP/bench/notify_latency.py" \
		"host=$PGHOST port=$PGPORT dbname=$NOTIFY_DB" NOTE-1 "$NOTIFY_FLIPS" 150 2>"$DIR/case14.err"); then
		record case14 flips:="$NOTIFY_FLIPS" samples:="$n14" p50_ms:="$p50" p99_ms:="$p99" \
			max_ms:="$max14" missed:="$missed" gap_ms:=150
		check "case 14: every one of $((2 * NOTIFY_FLIPS)) crossings of zero was heard (missed: $missed)" \
			"$([ "$missed" = 0 ] && [ "$n14" = $((2 * NOTIFY_FLIPS)) ] && echo t)"
	else
		error "case 14: bench/notify_latency.py failed: $(head -c 300 "$DIR/case14.err")"
	fi
fi

# ---------------------------------------------------------------- rounds
# The cases of the throughput targets again, ROUNDS times in turn at TC
# clients.  The load of a shared machine drifts over the minutes between a
# case and its baseline in the run above; in turn, each round's ratio
# compares runs a minute apart, and the median of the rounds is judged.
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
	[4]="reserve.sql -D sku=HOT-1 -D prefix=o4r-"
	[4n]="reserve.sql -D sku=HOT-N -D prefix=o4nr-"
	[13]="reserve_now.sql -D sku=HOT-NOW -D prefix=o13r-"
	[13s]="reserve_now.sql -D sku=SOLD-NOW -D prefix=o13sr-")
for r in $(seq "$ROUNDS"); do
	for id in "${RCASES[@]}"; do
		inv_log "round $r: case $id, $TC clients"
		log=$DIR/pgbench-round-$r-$id.log
		db=bench
		[ "$id" = 4n ] && db=$NOTIFY_DB
		# shellcheck disable=SC2086
		if PGB_DB=$db pgbench_once "$TC" "$MEASURE" "$log" ${RARGS[$id]}; then
			record round round:="$r" case="$id" clients:="$TC" status=ok tps:="$(tps "$log")" \
				latency_ms:="$(latency "$log")" transactions:="$(processed "$log")"
		else
			record round round:="$r" case="$id" clients:="$TC" status=failed detail="$(failed "$log")"
		fi
	done
done

# ---------------------------------------------------------------- cases 8, 8r: expiry
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

# expiry_load LOG STOP PREFIX: case 4's reserve of HOT-1 at EXPIRY_CLIENTS
# clients, under keys PREFIX..., in runs of EXPIRY_LOAD s one after the other
# until STOP exists (one run at least), logged to LOG.1, LOG.2, ...: the load
# lasts as long as the clearing, however long that is.  Fails when a run does.
expiry_load() {
	local log=$1 stop=$2 prefix=$3 n=0
	while [ "$n" -eq 0 ] || [ ! -e "$stop" ]; do
		n=$((n + 1))
		pgbench_once "$EXPIRY_CLIENTS" "$EXPIRY_LOAD" "$log.$n" reserve.sql \
			-D sku=HOT-1 -D prefix="$prefix" || return 1
	done
}
# reconcile_counts: "expired other" of inventory.reconcile_stats for the bench
# database: the overdue reservations its reconciler's answers expired, and
# those they confirmed, cancelled, made wait or whose ask failed
reconcile_counts() {
	sql "SELECT coalesce(sum(expired), 0) || ' ' || coalesce(sum(confirmed + cancelled + waited + failed), 0)
	       FROM inventory.reconcile_stats WHERE datname = 'bench'"
}

# expiry_case ID: case 8 (ID 8) or 8r (ID 8r).  BACKLOG overdue reservations
# of a SKU of their own, inserted with the worker off, then cleared by the
# worker while case 4 runs at EXPIRY_CLIENTS clients, timed from switching
# the worker on until their units are back on sale; records caseID.  In 8r
# a reconciler is set first: bench_shop.reconcile(), owned by the shop's
# role bench_shop as the rules of a reconciler ask, looks each order up in
# bench_shop.payments (one indexed lookup), where every order of the backlog
# is unpaid, and answers expire.  Both end with every reservation EXPIRED: they
# differ by the cost of asking alone.  Each cleans up after itself, so
# either runs whether or not the other ran before it.
expiry_case() {
	local id=$1 sku=EXP-1 reconciler='' overdue chunk lo hi secs load_pid sampler_pid load_ok runs n
	local worker_cpu autovac_cpu autovac_n load_tps ask=() e0 o0 e1 o1
	local stop=$DIR/case$id-stop load_log=$DIR/pgbench-$id-load.log
	[ "$id" = 8r ] && sku=EXP-R reconciler='bench_shop.reconcile(text,integer)'
	inv_log "case $id: a backlog of $BACKLOG overdue reservations${reconciler:+, with a reconciler}"
	sql "ALTER SYSTEM SET inventory.worker_enabled = off" >/dev/null
	sql "ALTER SYSTEM SET inventory.expire_batch = $EXPIRE_BATCH" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
	# wait until the worker has seen the setting, so it cannot start on the backlog
	for _ in $(seq 100); do
		[ "$(sql "SELECT count(*) FROM inventory.worker_status WHERE datname = 'bench' AND state <> 'disabled'")" = 0 ] && break
		sleep 0.1
	done
	# clear what case 7 left overdue (its 1 s holds included), and fold what
	# is settled (the other expiry case's backlog, when it ran before), so
	# that the backlog is all the worker finds to do
	sql "SELECT pg_sleep(1.2)" >/dev/null
	sql "SELECT inventory.expire()" >/dev/null
	for _ in $(seq 1000); do
		[ "$(sql "SELECT inventory.fold()")" = 0 ] && break
	done
	if [ -n "$reconciler" ]; then
		# the application's payments, as it records them: a row for every
		# order of the backlog, none of them paid
		psql_b >/dev/null <<SQL || error "case 8r: creating the payments and the reconciler failed"
DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bench_shop') THEN
		CREATE ROLE bench_shop;
	END IF;
END \$\$;
CREATE SCHEMA bench_shop AUTHORIZATION bench_shop;
CREATE TABLE bench_shop.payments (order_id text PRIMARY KEY, state text NOT NULL);
INSERT INTO bench_shop.payments SELECT 'o8r-' || g, 'unpaid' FROM generate_series(1, $BACKLOG) g;
ALTER TABLE bench_shop.payments OWNER TO bench_shop;
CREATE FUNCTION bench_shop.reconcile(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql STABLE SET search_path = pg_catalog, bench_shop, pg_temp AS \$\$
	SELECT CASE (SELECT p.state FROM payments p WHERE p.order_id = reconcile.order_id)
	       WHEN 'paid' THEN 'confirm' ELSE 'expire' END
\$\$;
ALTER FUNCTION bench_shop.reconcile(text, integer) OWNER TO bench_shop;
ANALYZE bench_shop.payments;
SQL
	fi
	# and what the cases before left to vacuum: an autovacuum of their tables
	# would take its share of the two cores from the worker while it clears
	inv_log "case $id: VACUUM and CHECKPOINT first"
	sql "VACUUM" >/dev/null
	sql "CHECKPOINT" >/dev/null
	sql "SELECT inventory.restock('$sku', $BACKLOG, 'stock-$sku')" >/dev/null
	# overdue by a minute: less than inventory.reconcile_max_wait (1 hour),
	# past which the expiry no longer asks about an order
	chunk=$(((BACKLOG + 3) / 4))
	for lo in $(seq 1 "$chunk" "$BACKLOG"); do
		hi=$((lo + chunk - 1 < BACKLOG ? lo + chunk - 1 : BACKLOG))
		sql "INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
		     SELECT 'o$id-' || g, 1, 'reserve', '$sku', 1, now() - interval '1 minute'
		       FROM generate_series($lo, $hi) g" || error "case $id: inserting the backlog failed"
	done
	overdue=$(ledger_rows "state = 'PENDING' AND expires_at <= now()")
	check "case $id: the backlog is $BACKLOG overdue reservations (found $overdue)" \
		"$([ "$overdue" -eq "$BACKLOG" ] && echo t)"
	if [ -n "$reconciler" ]; then
		sql "SELECT inventory.set_reconciler('$reconciler')" >/dev/null ||
			error "case 8r: inventory.set_reconciler('$reconciler') failed"
		check "case 8r: the reconciler is set, and every order of the backlog is overdue for less than inventory.reconcile_max_wait ($(sql "SHOW inventory.reconcile_max_wait")), so it is asked about" \
			"$(sql "SELECT EXISTS (SELECT FROM pg_proc WHERE proname = 'reconciler' AND pronamespace = 'inventory'::regnamespace)
			          AND min(expires_at) > now() - current_setting('inventory.reconcile_max_wait')::interval
			        FROM inventory.ledger WHERE sku = '$sku'")"
		read -r e0 o0 < <(reconcile_counts)
	fi

	inv_log "case $id: the worker clears it under case 4 load at $EXPIRY_CLIENTS clients"
	rm -f "$stop"
	expiry_load "$load_log" "$stop" "o${id}l-" &
	load_pid=$!
	sleep 1   # let the load ramp up
	cpu_sampler "$DIR/case$id-cpu" "$stop" &
	sampler_pid=$!
	secs=$(psql_b -v backlog="$BACKLOG" -v sku="$sku" <<'SQL'
SELECT clock_timestamp() AS t0 \gset
ALTER SYSTEM SET inventory.worker_enabled = on;
SELECT pg_reload_conf() \gset
SELECT bench_wait_available(:'sku', :backlog, :'t0', 600);
SQL
	)
	touch "$stop"
	wait "$sampler_pid"
	load_ok=1
	wait "$load_pid" || load_ok=0
	# the load's runs, each EXPIRY_LOAD s: its TPS is their mean
	runs=0
	while [ -e "$load_log.$((runs + 1))" ]; do runs=$((runs + 1)); done
	[ "$load_ok" -eq 1 ] ||
		error "case $id: the load (case 4 at $EXPIRY_CLIENTS clients) failed: $(failed "$load_log.$runs")"
	load_tps=$(for n in $(seq "$runs"); do tps "$load_log.$n"; done |
		awk '{ s += $1; n++ } END { if (n) printf "%.3f", s / n }')
	# CPU seconds of the worker and of autovacuum while the backlog was cleared
	read -r worker_cpu autovac_cpu autovac_n < <(cpu_used "$DIR/case$id-cpu")
	if [ -n "$reconciler" ]; then
		read -r e1 o1 < <(reconcile_counts)
		ask=(reconciler="$reconciler" reconcile_budget="$(sql "SHOW inventory.reconcile_budget")"
			reconcile_expired:="$((e1 - e0))" reconcile_other:="$((o1 - o0))")
	fi
	# seconds: none when the backlog was not cleared within 600 s; the load
	# started 1 s before the clock
	record "case$id" backlog:="$BACKLOG" seconds:="$secs" \
		load_tps:="$load_tps" load_runs:="$runs" load_started_s_before:=1 \
		worker_cpu_s:="$worker_cpu" autovacuum_cpu_s:="$autovac_cpu" \
		autovacuum_workers:="$autovac_n" cpu_sample_s:=0.1 "${ask[@]}"
	check "case $id: all $BACKLOG reservations EXPIRED" \
		"$([ "$(ledger_rows "sku = '$sku' AND state = 'EXPIRED'")" -eq "$BACKLOG" ] && echo t)"
	check "case $id: their units are back on sale" \
		"$(sql "SELECT inventory.available('$sku') = $BACKLOG")"
	if [ -n "$reconciler" ]; then
		check "case 8r: the reconciler's answers expired them all, and nothing else (inventory.reconcile_stats: $((e1 - e0)) expired, $((o1 - o0)) confirmed, cancelled, waited or failed)" \
			"$([ $((e1 - e0)) -eq "$BACKLOG" ] && [ $((o1 - o0)) -eq 0 ] && echo t)"
		sql "SELECT inventory.set_reconciler(NULL)" >/dev/null
		check "case 8r: set_reconciler(NULL) removed the reconciler" \
			"$(sql "SELECT NOT EXISTS (SELECT FROM pg_proc WHERE proname = 'reconciler' AND pronamespace = 'inventory'::regnamespace)")"
		sql "DROP SCHEMA bench_shop CASCADE" >/dev/null
	fi
	sql "ALTER SYSTEM RESET inventory.expire_batch" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
}
want 8 && expiry_case 8
want 8r && expiry_case 8r
inv_log "comparing the cache with the tables (inventory.verify())"
check "cache = tables after cases 4-8 and 10 (inventory.verify() is empty)" \
	"$(sql "SELECT count(*) = 0 FROM inventory.verify()")"
if want 4n || want 14; then
	check "cache = tables in $NOTIFY_DB after cases 4n and 14 (inventory.verify() is empty)" \
		"$(psql_n -c "SELECT count(*) = 0 FROM inventory.verify()")"
fi

# ---------------------------------------------------------------- case 14b: LISTEN during a backlog
# Case 14 while the worker clears NOTIFY_BACKLOG overdue reservations, in a
# database of its own with notifications on (dropped after, so that its
# settled movements leave nothing to fold for the cases after): the backlog
# is inserted with the workers off, as in case 8, and cleared at the default
# inventory.expire_batch.  The flips run while the backlog's units are not
# all back (notify_latency.py's WHILE_SQL); the backlog is sized to outlast
# them, and a check says when it did not.
if want 14b; then
	db14b=bench_nb
	psql_nb() { inv_as_pg psql -X -q -At -v ON_ERROR_STOP=1 -d "$db14b" "$@"; }
	inv_log "case 14b: LISTEN inventory_stock, $NOTIFY_FLIPS flips, while the worker clears $NOTIFY_BACKLOG overdue reservations"
	notify_db "$db14b" "SELECT inventory.restock('EXP-N', $NOTIFY_BACKLOG, 'stock-exp-n');" ||
		error "case 14b: set-up of the $db14b database failed"
	sql "ALTER SYSTEM SET inventory.worker_enabled = off" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
	for _ in $(seq 100); do
		[ "$(sql "SELECT count(*) FROM inventory.worker_status WHERE datname = '$db14b' AND state <> 'disabled'")" = 0 ] && break
		sleep 0.1
	done
	chunk=$(((NOTIFY_BACKLOG + 9) / 10))
	for lo in $(seq 1 "$chunk" "$NOTIFY_BACKLOG"); do
		hi=$((lo + chunk - 1 < NOTIFY_BACKLOG ? lo + chunk - 1 : NOTIFY_BACKLOG))
		psql_nb -c "INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
		            SELECT 'o14b-' || g, 1, 'reserve', 'EXP-N', 1, now() - interval '1 minute'
		              FROM generate_series($lo, $hi) g" >/dev/null || error "case 14b: inserting the backlog failed"
	done
	avail14b() { psql_nb -c "SELECT inventory.available('EXP-N')"; }
	check "case 14b: the backlog is $NOTIFY_BACKLOG overdue reservations (found $(avail14b) units of EXP-N available)" \
		"$([ "$(avail14b)" = 0 ] && echo t)"
	sql "ALTER SYSTEM RESET inventory.worker_enabled" >/dev/null
	sql "SELECT pg_reload_conf()" >/dev/null
	# the clearing has begun: the first expiry committed
	for _ in $(seq 300); do
		[ "$(avail14b)" -gt 0 ] 2>/dev/null && break
		sleep 0.1
	done
	if read -r n14b p50 p99 max14b missed flips14b < <(inv_as_pg python3 "$INV_TOP/bench/notify_latency.py" \
		"host=$PGHOST port=$PGPORT dbname=$db14b" NOTE-1 "$NOTIFY_FLIPS" 150 \
		"SELECT inventory.available('EXP-N') < $NOTIFY_BACKLOG" 2>"$DIR/case14b.err"); then
		left=$((NOTIFY_BACKLOG - $(avail14b)))
		record case14b flips:="$NOTIFY_FLIPS" flips_made:="$flips14b" samples:="$n14b" p50_ms:="$p50" \
			p99_ms:="$p99" max_ms:="$max14b" missed:="$missed" gap_ms:=150 backlog:="$NOTIFY_BACKLOG" \
			left_after:="$left"
		check "case 14b: every one of $((2 * NOTIFY_FLIPS)) crossings of zero was heard while the worker cleared the backlog ($flips14b flips made before it was cleared, $left overdue reservations left after the last; missed: $missed)" \
			"$([ "$missed" = 0 ] && [ "$n14b" = $((2 * NOTIFY_FLIPS)) ] && [ "$left" -gt 0 ] && echo t)"
	else
		error "case 14b: bench/notify_latency.py failed: $(head -c 300 "$DIR/case14b.err")"
	fi
	for _ in $(seq 600); do
		[ "$(avail14b)" = "$NOTIFY_BACKLOG" ] && break
		sleep 0.5
	done
	check "case 14b: the worker cleared the backlog (EXP-N has $(avail14b) of $NOTIFY_BACKLOG units back on sale)" \
		"$([ "$(avail14b)" = "$NOTIFY_BACKLOG" ] && echo t)"
	check "cache = tables in $db14b after case 14b (inventory.verify() is empty)" \
		"$(psql_nb -c "SELECT count(*) = 0 FROM inventory.verify()")"
	inv_as_pg dropdb --force "$db14b" || error "case 14b: dropping $db14b failed"
fi

# ---------------------------------------------------------------- case 9: cache load
if want 9; then
	inv_log "case 9: $SETTLED settled movements"
	sql "INSERT INTO inventory.sku (sku) VALUES ('LOAD-FULL'), ('LOAD-EMPTY'), ('LOAD-WARM')" >/dev/null
	chunk=$(((SETTLED + 3) / 4))
	for lo in $(seq 1 "$chunk" "$SETTLED"); do
		hi=$((lo + chunk - 1 < SETTLED ? lo + chunk - 1 : SETTLED))
		sql "INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
		     SELECT 'o9-' || g, 1, 'restock', 'LOAD-FULL', 1 FROM generate_series($lo, $hi) g" ||
			error "case 9: inserting the movements failed"
	done
	for _ in $(seq 1000); do
		[ "$(sql "SELECT inventory.fold()")" = 0 ] && break
	done
	check "case 9: LOAD-FULL has $SETTLED movements, all folded" \
		"$(sql "SELECT count(*) = $SETTLED AND bool_and(folded) FROM inventory.ledger WHERE sku = 'LOAD-FULL'")"

	# time_load SKU: "AVAILABLE MS" of the first available() in a new session
	time_load() { psql_b -F ' ' -c "SELECT avail, round(ms::numeric, 3) FROM bench_time_available('$1')"; }
	autovacuums() { sql "SELECT autovacuum_count FROM pg_stat_user_tables WHERE relid = 'inventory.ledger'::regclass"; }

	# measure_loads PHASE: LOAD_ROUNDS restarts, each timing the first call for
	# both SKUs, recorded as a load each
	LOAD_AVAIL=
	measure_loads() {
		local phase=$1 round s avail ms
		sql "CHECKPOINT" >/dev/null   # so the restart does not replay the load
		for round in $(seq "$LOAD_ROUNDS"); do
			inv_log "case 9 ($phase): restart $round of $LOAD_ROUNDS"
			inv_as_pg pg_ctl -D "$DIR/data" -l "$DIR/server.log" -m fast -w restart >/dev/null ||
				inv_die "the server did not restart"
			time_load LOAD-WARM >/dev/null   # pays the first session's catalog loading
			# alternate the order, so neither SKU always goes first
			for s in $([ $((round % 2)) -eq 1 ] && echo "LOAD-EMPTY LOAD-FULL" || echo "LOAD-FULL LOAD-EMPTY"); do
				read -r avail ms <<<"$(time_load "$s")"
				record load phase="$phase" restart:="$round" sku="$s" ms:="$ms" available:="$avail"
				[ "$s" = LOAD-FULL ] && LOAD_AVAIL+=" $avail"
			done
		done
	}
	# As specified: right after the fold.  The fold updated every row, so until
	# VACUUM the (sku, folded) index still holds an entry per old row version.
	av_before=$(autovacuums)
	measure_loads fold
	av_after=$(autovacuums)
	# and once VACUUM has removed the dead versions, as autovacuum eventually does
	inv_log "case 9: VACUUM inventory.ledger"
	sql "VACUUM inventory.ledger" >/dev/null
	measure_loads vacuum
	check "case 9: available('LOAD-FULL') = $SETTLED after every restart (got$LOAD_AVAIL)" \
		"$(echo "$LOAD_AVAIL" | awk -v n="$SETTLED" '{ for (i = 1; i <= NF; i++) if ($i != n) exit 1; if (NF) print "t" }')"
	record case9 settled:="$SETTLED" restarts:="$LOAD_ROUNDS" \
		autovacuum_during_fold:="$([ "$av_after" = "$av_before" ] && echo false || echo true)" \
		bytes_per_sku:="$(sql "SELECT bytes_per_entry FROM inventory.cache_info()")"
fi

# ---------------------------------------------------------------- the report
record run finished_utc="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
mkdir -p "$(dirname "$OUT")"
# nothing of an earlier run beside this one's, should a step fail
rm -f "$OUT" "$DATA" "${OUT%.md}-tps.svg" "${OUT%.md}-ratios.svg"
# Debian's python3, which has the matplotlib of python3-matplotlib.  It
# gathers the records into DATA, writes the report and its pictures, and
# fails when the data shows a failure or the report could not be made.
/usr/bin/python3 "$INV_TOP/bench/report.py" --records "$RECORDS" "$DATA" --out "$OUT"
status=$?
[ -f "$OUT" ] && cat "$OUT"
[ -f "$DATA" ] && inv_log "data written to $DATA"
[ "$status" -eq 0 ] || inv_log "the run failed (bench/report.py exited $status)"
exit "$status"

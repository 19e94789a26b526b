#!/usr/bin/env bash
# scripts/test.sh -- runs every test suite of the extension and ends with one
# line "N passed, N failed".
#
#   layout of src/     scripts/check_layers.py       (calls go down the layers, no include cycle)
#   exports            scripts/check_exports.py      (inventory.so exports only what PostgreSQL looks up)
#   regression tests   sql/*.sql + expected/*.out   (pg_regress)
#   isolation specs    specs/*.spec + expected/*.out (pg_isolation_regress)
#   pgTAP suite        test/pgtap/*.sql              (pg_prove)
#                      -- these three are `make installcheck`, the quick tier
#   TAP tests          test/t/*.pl                   (prove; crash, restart, failover, dump, router...)
#   drivers            test/drivers/                 (psycopg 3 and node-postgres, as applications call)
#   benchmark smoke    bench/run.py --smoke          (every case runs and checks its counts)
#   demo smoke         scripts/demo.sh --smoke       (the four ways run; the three safe ones never oversell)
#                      scripts/demo.sh --smoke --nodes 4  (through a router, the SKU split over 4 nodes)
#
# Installs what is missing (as root), builds and installs the extension, and
# runs everything as the PostgreSQL user in a scratch copy of the tree, each
# suite on its own temporary cluster.  Prints each suite's count and time,
# then the total.  Exits non-zero if anything failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tally.sh"

# a build for the tests, with its faults injected on purpose (src/fault.h);
# the benchmark's and the demo's smoke runs below use it too
export INV_MAKE_FLAGS=INVENTORY_FAULTS=1
# the drivers' suites: psycopg 3 and node-postgres (npm, below)
inv_setup python3-psycopg nodejs

WORK=$(mktemp -d /tmp/inventory-test.XXXXXX)
# on failure the logs stay, for a look at what went wrong
trap 'inv_cluster_stop "$WORK/drivers"; [ "$FAILED" -eq 0 ] && rm -rf "$WORK"' EXIT
inv_scratch_tree "$WORK"

suite "layout of src/"
/usr/bin/python3 "$INV_TOP/scripts/check_layers.py" "$INV_TOP/src" >"$WORK/layers.log" 2>&1
run_tap_log "$WORK/layers.log" $? plain

suite "exports of inventory.so"
/usr/bin/python3 "$INV_TOP/scripts/check_exports.py" "$INV_TOP" >"$WORK/exports.log" 2>&1
run_tap_log "$WORK/exports.log" $? plain

run_pg_regress() {
	local name=$1 log=$WORK/$1.log diffs=$2 status
	shift 2
	suite "$name"
	inv_as_pg make -C "$WORK/tree" "$@" >"$log" 2>&1
	status=$?
	run_regress_log "$log" $status
	[ $status -eq 0 ] || { [ -f "$diffs" ] && cat "$diffs"; }
}

run_pg_regress regression "$WORK/tree/regression.diffs" installcheck-regress
run_pg_regress isolation "$WORK/tree/output_iso/regression.diffs" installcheck-isolation

suite "pgTAP"
inv_as_pg make -C "$WORK/tree" installcheck-pgtap >"$WORK/pgtap.log" 2>&1
run_tap_log "$WORK/pgtap.log" $? pg_prove

# three files at a time: most of a TAP file's time is spent waiting (a
# server starting, a crash, a timeout), and each has its own servers on
# ports of their own; prove prints each file's output whole when the file
# ends, since its output is not a terminal
suite "TAP"
inv_as_pg make -C "$WORK/tree" installcheck-tap PROVE_FLAGS="--verbose --jobs ${INVENTORY_TAP_JOBS:-3}" >"$WORK/tap.log" 2>&1
run_tap_log "$WORK/tap.log" $?

suite "drivers: psycopg"
inv_cluster_start "$WORK/drivers" "inventory.worker_enabled = off" >/dev/null
export PGDATABASE=postgres
/usr/bin/python3 "$WORK/tree/test/drivers/psycopg_test.py" >"$WORK/psycopg.log" 2>&1
run_tap_log "$WORK/psycopg.log" $? plain
suite "drivers: node-postgres"
if inv_node_modules "$WORK/tree/test/drivers/node" >"$WORK/npm.log" 2>&1; then
	node "$WORK/tree/test/drivers/node/test.js" >"$WORK/node.log" 2>&1
	run_tap_log "$WORK/node.log" $? plain
else
	suite_failed "$WORK/npm.log"
fi
inv_cluster_stop "$WORK/drivers"
unset PGHOST PGPORT PGUSER PGDATABASE

# the benchmark's smoke mode, so that the suite cannot rot
suite "bench smoke"
"$INV_TOP/bench/run.py" --smoke >"$WORK/bench.log" 2>&1
tally_one "$WORK/bench.log" $?

# the demo's smoke mode, for the same reason
suite "demo smoke"
"$INV_TOP/scripts/demo.sh" --smoke >"$WORK/demo.log" 2>&1
tally_one "$WORK/demo.log" $?
suite "demo smoke through a router over 4 nodes"
"$INV_TOP/scripts/demo.sh" --smoke --nodes 4 >"$WORK/demo-nodes.log" 2>&1
tally_one "$WORK/demo-nodes.log" $?

[ "$FAILED" -eq 0 ] || echo "logs kept in $WORK"
tally_end

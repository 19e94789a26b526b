#!/usr/bin/env bash
# scripts/test.sh -- runs every test suite of the extension and ends with one
# line "N passed, N failed".
#
#   regression tests   sql/*.sql + expected/*.out   (pg_regress)
#   isolation specs    specs/*.spec + expected/*.out (pg_isolation_regress)
#   pgTAP suite        test/pgtap/*.sql              (pg_prove)
#   TAP tests          test/t/*.pl                   (prove; crash, restart, concurrency, worker)
#   benchmark smoke    bench/run.sh --smoke          (every case runs and checks its counts)
#
# Installs what is missing (as root), builds and installs the extension, and
# runs everything as the PostgreSQL user in a scratch copy of the tree, each
# suite on its own temporary cluster.  Exits non-zero if anything failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

inv_setup

WORK=$(mktemp -d /tmp/inventory-test.XXXXXX)
trap 'inv_cluster_stop "$WORK/pgtap"; rm -rf "$WORK"' EXIT
mkdir "$WORK/tree"
tar -C "$INV_TOP" --exclude=.git --exclude='tmp_check*' --exclude=results \
	--exclude=output_iso -cf - . | tar -C "$WORK/tree" -xf -
[ "$(id -u)" -eq 0 ] && chown -R "$(inv_pg_user)" "$WORK"

PASSED=0
FAILED=0

# count LOG PASS_RE FAIL_RE: adds the matching lines of LOG to the totals
count() {
	local p f
	p=$(grep -cE "$2" "$1")
	f=$(grep -cE "$3" "$1")
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	echo "$p passed, $f failed"
	[ "$f" -eq 0 ]
}

# a suite that failed without reporting any test counts as one failure
suite_failed() {
	FAILED=$((FAILED + 1))
	echo "the suite did not run to the end; its log follows"
	tail -40 "$1"
}

run_pg_regress() {
	local name=$1 log=$WORK/$1.log diffs=$2
	shift 2
	inv_log "$name"
	if inv_as_pg make -C "$WORK/tree" installcheck "$@" >"$log" 2>&1; then
		count "$log" '\.\.\. ok' '\.\.\. (FAILED|failed)'
	else
		count "$log" '\.\.\. ok' '\.\.\. (FAILED|failed)' ||
			{ [ -f "$diffs" ] && cat "$diffs"; }
		grep -qE '\.\.\. (FAILED|failed)' "$log" || suite_failed "$log"
	fi
}

run_tap_log() {
	local log=$1 status=$2
	if ! count "$log" '^\s*ok [0-9]+' '^\s*not ok [0-9]+'; then
		grep -E '^\s*not ok|^#' "$log" | head -60
	elif [ "$status" -ne 0 ]; then
		suite_failed "$log"
	fi
}

run_pg_regress regression "$WORK/tree/regression.diffs" ISOLATION= TAP_TESTS=
run_pg_regress isolation "$WORK/tree/output_iso/regression.diffs" REGRESS= TAP_TESTS=

inv_log "pgTAP"
# the pgTAP files call expire() and fold() themselves
inv_cluster_start "$WORK/pgtap" "inventory.worker_enabled = off" >/dev/null
inv_as_pg createdb inventory_pgtap
inv_as_pg pg_prove --verbose -d inventory_pgtap "$WORK"/tree/test/pgtap/*.sql >"$WORK/pgtap.log" 2>&1
run_tap_log "$WORK/pgtap.log" $?
inv_cluster_stop "$WORK/pgtap"
unset PGHOST PGPORT PGUSER

inv_log "TAP"
inv_as_pg make -C "$WORK/tree" installcheck REGRESS= ISOLATION= PROVE_FLAGS=--verbose >"$WORK/tap.log" 2>&1
run_tap_log "$WORK/tap.log" $?

# the benchmark's smoke mode, so that the suite cannot rot
inv_log "bench smoke"
if "$INV_TOP/bench/run.sh" --smoke >"$WORK/bench.log" 2>&1; then
	PASSED=$((PASSED + 1))
	echo "1 passed, 0 failed"
else
	FAILED=$((FAILED + 1))
	echo "0 passed, 1 failed"
	tail -40 "$WORK/bench.log"
fi

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]

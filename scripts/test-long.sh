#!/usr/bin/env bash
# scripts/test-long.sh [TORTURE_SECONDS] [FUZZ_SECONDS] -- the long suite.
#
#   torture    test/t/011_torture.pl for TORTURE_SECONDS (default 600):
#              32 clients doing everything at once, checked at checkpoints
#   crashes    test/t/010_crash_load.pl: kill -9 and immediate shutdowns
#              under load
#   fuzzer     fuzz/run.sh FUZZ_SECONDS (default 300): libFuzzer on the
#              state type's input parsing
#   valgrind   scripts/valgrind.sh: the regression suite with every backend
#              under valgrind memcheck
#
# Installs what is missing (as root), like scripts/test.sh, and ends with
# one line "N passed, N failed".  Takes about TORTURE_SECONDS +
# FUZZ_SECONDS + 15 minutes.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/tally.sh"

TORTURE=${1:-600}
FUZZ=${2:-300}
[[ $TORTURE =~ ^[1-9][0-9]*$ && $FUZZ =~ ^[1-9][0-9]*$ ]] ||
	inv_die "usage: scripts/test-long.sh [TORTURE_SECONDS] [FUZZ_SECONDS]"

inv_setup

WORK=$(mktemp -d /tmp/inventory-long.XXXXXX)
# on failure the logs stay, for a look at what went wrong
trap '[ "$FAILED" -eq 0 ] && rm -rf "$WORK"' EXIT
inv_scratch_tree "$WORK"

suite "torture for $TORTURE s, and crashes under load"
inv_as_pg env INVENTORY_TORTURE_SECONDS="$TORTURE" make -C "$WORK/tree" installcheck-tap \
	PROVE_TESTS='test/t/010_crash_load.pl test/t/011_torture.pl' \
	PROVE_FLAGS=--verbose >"$WORK/tap.log" 2>&1
run_tap_log "$WORK/tap.log" $?
grep -E '^# ([0-9]+ s, [0-9]+ clients|round [0-9]|API calls|movements)' "$WORK/tap.log" | head -20

suite "fuzzer for $FUZZ s"
"$INV_TOP/fuzz/run.sh" "$FUZZ" >"$WORK/fuzz.log" 2>&1
tally_summary "$WORK/fuzz.log" $?
grep -iE 'inputs|executed' "$WORK/fuzz.log" | tail -2

suite "regression suite under valgrind"
"$INV_TOP/scripts/valgrind.sh" >"$WORK/valgrind.log" 2>&1
tally_summary "$WORK/valgrind.log" $?
grep -E '^(valgrind:|ok:|FAILED:)' "$WORK/valgrind.log"

[ "$FAILED" -eq 0 ] || echo "logs kept in $WORK"
tally_end

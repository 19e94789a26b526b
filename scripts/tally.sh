# scripts/tally.sh -- counting the results of test suites, for
# scripts/test.sh and scripts/test-long.sh.  Source it.  The counting is
# scripts/tally.py's, which checks each suite's count against what its
# runner says it ran and lists the skips (see its top for the rules).
#
# suite NAME                  a suite begins: its name now, its count and
#                             time when the next one begins
# run_tap_log LOG STATUS [RUNNER]   TAP output of prove (the default),
#                             pg_prove or one plain TAP stream (plain)
# run_regress_log LOG STATUS  pg_regress output
# tally_summary LOG STATUS    adds the final "N passed, N failed" of LOG
# tally_one LOG STATUS        one test: passed when STATUS is 0
# suite_failed LOG            the suite could not run: one failure
# tally_end                   prints each suite's count, skips and time,
#                             the skips and why, then the total; fails if
#                             anything failed (INVENTORY_STRICT=1: also on
#                             an unlisted skip or a suite below its floor)

TALLY_PY="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/tally.py"
TALLY_STATE=$(mktemp /tmp/inventory-tally.XXXXXX)
export TALLY_STATE
SUITE_START=
FAILED=0

suite() {
	# the first suite starts the count (python3 is installed by then)
	[ -s "$TALLY_STATE" ] || /usr/bin/python3 "$TALLY_PY" init
	suite_time
	SUITE_START=$SECONDS
	printf '== %s\n' "$1"
	/usr/bin/python3 "$TALLY_PY" begin "$1"
}

suite_time() {
	[ -n "$SUITE_START" ] && printf '   (%d s)\n' $((SECONDS - SUITE_START))
	SUITE_START=
}

# FAILED says whether anything has failed so far (for keeping logs)
tally_note() {
	grep -qE '[1-9][0-9]* failed|does not add up' <<<"$1" && FAILED=1
	printf '%s\n' "$1"
}

run_tap_log() {
	tally_note "$(/usr/bin/python3 "$TALLY_PY" tap "$1" "$2" "${3:-prove}")"
}

run_regress_log() {
	tally_note "$(/usr/bin/python3 "$TALLY_PY" regress "$1" "$2")"
}

tally_summary() {
	tally_note "$(/usr/bin/python3 "$TALLY_PY" summary "$1" "$2")"
}

tally_one() {
	tally_note "$(/usr/bin/python3 "$TALLY_PY" one "$1" "$2")"
}

suite_failed() {
	tally_note "$(/usr/bin/python3 "$TALLY_PY" one "$1" 1)"
}

tally_end() {
	local status
	suite_time
	/usr/bin/python3 "$TALLY_PY" end
	status=$?
	rm -f "$TALLY_STATE"
	return $status
}

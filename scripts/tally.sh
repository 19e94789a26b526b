# scripts/tally.sh -- counting the results of test suites, for
# scripts/test.sh and scripts/test-long.sh.  Source it.
#
# count LOG PASS_RE FAIL_RE   adds LOG's lines matching each pattern
# run_tap_log LOG STATUS      counts the ok / not ok lines of TAP output
# tally_summary LOG STATUS    adds the final "N passed, N failed" of LOG
# tally_one LOG STATUS        one test: passed when STATUS is 0
# suite NAME                  a suite begins: its name now, its count and
#                             time when the next one begins
# tally_end                   prints each suite's count and time, then the
#                             total; fails if anything failed

PASSED=0
FAILED=0
SUITE_NAME=
SUITES=()

suite() {
	suite_done
	SUITE_NAME=$1 SUITE_START=$SECONDS SUITE_PASSED=$PASSED SUITE_FAILED=$FAILED
	printf '== %s\n' "$1"
}

suite_done() {
	[ -n "$SUITE_NAME" ] || return 0
	local t=$((SECONDS - SUITE_START))
	printf '   (%d s)\n' "$t"
	SUITES+=("$(printf '%-44s %5d passed, %3d failed, %5d s' "$SUITE_NAME" \
		$((PASSED - SUITE_PASSED)) $((FAILED - SUITE_FAILED)) "$t")")
	SUITE_NAME=
}

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

# a failed TAP test: its "not ok" line and the diagnostics after it
run_tap_log() {
	local log=$1 status=$2
	if ! count "$log" '^\s*ok [0-9]+' '^\s*not ok [0-9]+'; then
		grep -E -A12 '^\s*not ok [0-9]+' "$log" | grep -vE "background_psql|^# *[{}']" | head -80
	elif [ "$status" -ne 0 ]; then
		suite_failed "$log"
	fi
}

tally_summary() {
	local log=$1 status=$2 line p f
	line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)
	if [ -z "$line" ]; then
		suite_failed "$log"
		return
	fi
	p=${line%% passed*}
	f=${line#*passed, }
	f=${f%% failed}
	PASSED=$((PASSED + p))
	FAILED=$((FAILED + f))
	echo "$line"
	if [ "$f" -gt 0 ] || [ "$status" -ne 0 ]; then
		tail -40 "$log"
		[ "$f" -gt 0 ] || suite_failed "$log"
	fi
}

tally_one() {
	if [ "$2" -eq 0 ]; then
		PASSED=$((PASSED + 1))
		echo "1 passed, 0 failed"
	else
		FAILED=$((FAILED + 1))
		echo "0 passed, 1 failed"
		tail -40 "$1"
	fi
}

tally_end() {
	local s
	suite_done
	if [ ${#SUITES[@]} -gt 0 ]; then
		echo
		for s in "${SUITES[@]}"; do echo "$s"; done
		echo
	fi
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
}

#!/usr/bin/env bash
# fuzz/run.sh [SECONDS] -- fuzzes the state name parser (src/types/state_parse.c,
# the input function of inventory.state) with libFuzzer for SECONDS
# (default 60), and ends with one line "N passed, N failed".
#
# Why: the parser reads untrusted text (every '...'::inventory.state and
# every value COPYed in); state_fuzz.c checks it against a reference
# implementation under AddressSanitizer and UBSan.  No PostgreSQL needed.
#
#   fuzz/run.sh          # 60 s
#   fuzz/run.sh 600      # longer
#
# As root it installs what is missing (clang-14, libclang-rt-14-dev) from
# Debian; as another user it names them.  It builds the target in a
# temporary directory and fuzzes a copy of fuzz/corpus there, so the tree is
# left as it was.  Prints the number of inputs tried; on a finding, prints
# libFuzzer's report and the input, and exits non-zero.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$HERE/../scripts/lib.sh"

SECONDS_TO_RUN=${1:-60}
case $SECONDS_TO_RUN in
'' | *[!0-9]*) inv_die "usage: fuzz/run.sh [SECONDS]" ;;
esac

# lib.sh checks its own list (PostgreSQL, pgTAP...) on every call; the
# fuzzer needs only the compiler and its fuzzer/sanitizer runtimes
# shellcheck disable=SC2034 # read by inv_packages
INV_PACKAGES=()
inv_packages clang-14 libclang-rt-14-dev
CC=${CC:-clang-14}

WORK=$(mktemp -d /tmp/inventory-fuzz.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

inv_log "building state_fuzz with $CC"
"$CC" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I "$INV_TOP/src" -o "$WORK/state_fuzz" \
	"$HERE/state_fuzz.c" "$INV_TOP/src/types/state_parse.c" ||
	inv_die "building the fuzz target failed"

cp -r "$HERE/corpus" "$WORK/corpus"
mkdir "$WORK/findings"

inv_log "fuzzing for $SECONDS_TO_RUN s"
started=$(date +%s)
"$WORK/state_fuzz" -max_total_time="$SECONDS_TO_RUN" -print_final_stats=1 \
	-dict="$HERE/state.dict" -artifact_prefix="$WORK/findings/" \
	"$WORK/corpus" >"$WORK/fuzz.log" 2>&1
status=$?
elapsed=$(($(date +%s) - started))

# inputs tried: the final stats line, else the last "#N" progress line
runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$WORK/fuzz.log" | tail -1)
[ -n "$runs" ] || runs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$WORK/fuzz.log" | tail -1)
last=$(grep -E '^#[0-9]+' "$WORK/fuzz.log" | tail -1)
echo "inputs tried: ${runs:-unknown} in $elapsed s" \
	"(corpus: $(ls "$HERE/corpus" | wc -l) seeds, $(ls "$WORK/corpus" | wc -l) at the end)"
[ -n "$last" ] && echo "last status: $last"

if [ "$status" -eq 0 ] && [ -z "$(ls -A "$WORK/findings")" ]; then
	echo "no finding"
	echo "1 passed, 0 failed"
	exit 0
fi

echo "FINDING (libFuzzer exit status $status); its report:"
grep -vE '^#[0-9]+|^INFO:|^stat::' "$WORK/fuzz.log" | tail -60
for f in "$WORK"/findings/*; do
	[ -f "$f" ] || continue
	echo "input $(basename "$f") ($(wc -c <"$f") bytes):"
	od -A d -c "$f" | head -20
	# keep it for the developer: the temporary directory is removed
	cp "$f" "/tmp/inventory-$(basename "$f")" && echo "saved as /tmp/inventory-$(basename "$f")"
done
echo "0 passed, 1 failed"
exit 1

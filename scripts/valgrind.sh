#!/usr/bin/env bash
# scripts/valgrind.sh [TEST...] -- runs the regression suite (sql/*.sql
# against expected/*.out, with pg_regress) on a server whose processes all
# run under valgrind memcheck, and fails on any valgrind error in the
# extension's code.  Ends with one line "N passed, N failed" for two checks:
#   1. the regression suite passes under valgrind;
#   2. no valgrind error has a frame in inventory.so.
#
#   scripts/valgrind.sh              # the whole suite (about 5 minutes)
#   scripts/valgrind.sh state input  # only these tests (names from sql/)
#
# Why: a use of memory never written, a read or write outside a malloc'd
# block, a bad free, or undefined bytes handed to a system call can pass
# every test by luck; memcheck sees them.  Debian's server is not built with
# USE_VALGRIND, so memcheck sees palloc'd memory only as whole malloc'd
# blocks: it catches reads of never-written memory (fresh palloc'd memory,
# stack variables), but not an overrun that stays inside a memory context's
# block, nor a use of a pfree'd chunk.  Slow, so not part of scripts/test.sh.
#
# Like scripts/test.sh, it installs what is missing (as root: valgrind and
# the packages of lib.sh), builds and installs the extension, and works as
# the PostgreSQL user in a scratch copy of the tree.  The scratch cluster is
# made by lib.sh (initdb, a free port, the settings of test/inventory.conf
# that pg_regress --temp-config adds for `make installcheck`), then started
# again with its postmaster under valgrind (pg_ctl -p with a wrapper; the
# backends are forks of it).  A process with a valgrind error exits with
# code 128, which the postmaster treats as a crash, so such an error also
# fails the tests that run at that moment.  pg_regress runs against the
# server with --use-existing, in a database made as pg_regress makes its own.
#
# PostgreSQL's suppression file (src/tools/valgrind.supp) comes only with
# its sources, so the server makes some known noise of its own:
# fuzz/valgrind.supp suppresses it, and, to be safe, only the error records
# with a frame in the extension count (frames in inventory.so, which
# valgrind names by their source file under src/ since the module has debug
# information).  When anything is wrong the logs are kept, and the
# directory is printed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

inv_setup valgrind

WORK=$(mktemp -d /tmp/inventory-valgrind.XXXXXX)
CLUSTER=$WORK/cluster
VGLOGS=$WORK/valgrind
KEEP=0

# a fast shutdown (the extension's exit paths run too) takes seconds under
# valgrind; one asked for during the crash recovery that follows a valgrind
# error was seen to hang, so after 2 minutes an immediate one follows
stop_server() {
	[ -f "$CLUSTER/data/postmaster.pid" ] || return 0
	inv_as_pg pg_ctl -D "$CLUSTER/data" -m fast -t 120 -w stop >/dev/null 2>&1 ||
		inv_as_pg pg_ctl -D "$CLUSTER/data" -m immediate -t 120 -w stop >/dev/null 2>&1 ||
		inv_log "the server did not stop"
}
cleanup() {
	stop_server
	if [ "$KEEP" -eq 1 ]; then
		echo "logs kept in $WORK (valgrind/, cluster/server.log, tree/regression.diffs)"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

mkdir "$WORK/tree" "$VGLOGS"
tar -C "$INV_TOP" --exclude=.git --exclude='tmp_check*' --exclude=results \
	--exclude=output_iso -cf - . | tar -C "$WORK/tree" -xf -

# the tests: as the Makefile's REGRESS, every sql/NAME.sql in byte order
if [ $# -gt 0 ]; then
	TESTS=("$@")
else
	mapfile -t TESTS < <(cd "$WORK/tree/sql" && ls -- *.sql | sed 's/\.sql$//' | LC_ALL=C sort)
fi
for t in "${TESTS[@]}"; do
	[ -f "$WORK/tree/sql/$t.sql" ] || inv_die "no test sql/$t.sql"
done

cat >"$WORK/postgres-valgrind" <<WRAPPER
#!/bin/sh
# the server under memcheck: every process logs to valgrind.PID.log
exec valgrind --quiet --tool=memcheck --trace-children=yes \\
	--leak-check=no --track-origins=no --error-exitcode=128 \\
	--suppressions="$WORK/tree/fuzz/valgrind.supp" --gen-suppressions=all \\
	--error-markers=VALGRIND-ERROR-BEGIN,VALGRIND-ERROR-END \\
	--num-callers=40 --fullpath-after= \\
	--log-file="$VGLOGS/valgrind.%p.log" \\
	"$INV_PGBIN/postgres" "\$@"
WRAPPER
chmod +x "$WORK/postgres-valgrind"
[ "$(id -u)" -eq 0 ] && chown -R "$(inv_pg_user)" "$WORK"

# the regression tests' settings, then ours: few connections (each backend
# under valgrind is big), no worker (as in the tests), no JIT (LLVM under
# valgrind is slow and noisy; no test uses it)
SETTINGS=()
while IFS= read -r line; do
	SETTINGS+=("$line")
done < <(grep -vE '^[[:space:]]*(#|$)' "$WORK/tree/test/inventory.conf")
SETTINGS+=("inventory.worker_enabled = off" "max_connections = 20" "jit = off")

inv_log "scratch cluster"
inv_cluster_start "$CLUSTER" "${SETTINGS[@]}" >/dev/null
inv_as_pg pg_ctl -D "$CLUSTER/data" -m fast -w stop >/dev/null ||
	inv_die "stopping the scratch cluster failed"
inv_log "starting it under valgrind"
STARTED=$(date +%s)
if ! inv_as_pg pg_ctl -D "$CLUSTER/data" -l "$CLUSTER/server.log" \
	-p "$WORK/postgres-valgrind" -t 600 -w start >/dev/null; then
	KEEP=1
	tail -20 "$CLUSTER/server.log" >&2
	inv_die "the server did not start under valgrind"
fi
inv_log "up in $(($(date +%s) - STARTED)) s"

# the database as pg_regress makes it when not given --use-existing
# (PostgreSQL 15, create_database()), so that the expected output holds
DB=contrib_regression
if ! inv_as_pg psql -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<SQL; then
CREATE DATABASE "$DB" TEMPLATE=template0;
ALTER DATABASE "$DB" SET lc_messages TO 'C';
ALTER DATABASE "$DB" SET lc_monetary TO 'C';
ALTER DATABASE "$DB" SET lc_numeric TO 'C';
ALTER DATABASE "$DB" SET lc_time TO 'C';
ALTER DATABASE "$DB" SET bytea_output TO 'hex';
ALTER DATABASE "$DB" SET timezone_abbreviations TO 'Default';
SQL
	KEEP=1
	inv_die "creating the database failed"
fi

inv_log "pg_regress: ${TESTS[*]}"
STARTED=$(date +%s)
(cd "$WORK/tree" && inv_as_pg "$INV_PGBIN/../lib/pgxs/src/test/regress/pg_regress" \
	--use-existing --inputdir=. --outputdir=. --bindir="$INV_PGBIN" \
	--dbname="$DB" "${TESTS[@]}") >"$WORK/regress.log" 2>&1
REGRESS_STATUS=$?
REGRESS_TIME=$(($(date +%s) - STARTED))
cat "$WORK/regress.log"

inv_log "stopping the server"
stop_server

# valgrind writes each error record between the markers; a record counts
# against the extension when one of its stack frames (the error's or the
# block's) is in inventory.so: named so when valgrind has no debug
# information for it, else by its source file in this tree's src/
inv_log "reading the valgrind logs"
EXT_FRAME="inventory\\.so|$(cd "$INV_TOP" && pwd -P)/src/"
awk -v ext="$EXT_FRAME" -v out="$WORK/ext-errors" -v counts="$WORK/counts" '
	/VALGRIND-ERROR-BEGIN/ { inrec = 1; rec = ""; what = ""; mine = 0; next }
	/VALGRIND-ERROR-END/ {
		inrec = 0
		total++
		kind[what]++
		if (mine) { nmine++; print rec "\n" > out }
		next
	}
	inrec {
		rec = rec (rec == "" ? "" : "\n") $0
		if (what == "") { what = $0; sub(/^==[0-9]+== */, "", what) }
		if ($0 ~ /(at|by) 0x/ && $0 ~ ext) mine = 1
	}
	END {
		print total + 0, nmine + 0 > counts
		for (k in kind) printf "%6d  %s\n", kind[k], k
	}
' "$VGLOGS"/valgrind.*.log >"$WORK/kinds"
read -r VG_TOTAL VG_EXT <"$WORK/counts"
CRASHES=$(grep -c 'exited with exit code 128' "$CLUSTER/server.log")

. "$(dirname "${BASH_SOURCE[0]}")/tally.sh"
echo
echo "valgrind: $(ls "$VGLOGS" | wc -l) processes logged; $VG_TOTAL errors after" \
	"suppressions, $VG_EXT of them in inventory.so; $CRASHES processes exited" \
	"with valgrind's error code"
if [ "$VG_TOTAL" -gt 0 ]; then
	KEEP=1
	echo "errors by kind:"
	sort -rn "$WORK/kinds"
fi

if [ "$VG_EXT" -eq 0 ]; then
	PASSED=$((PASSED + 1))
	echo "ok: no valgrind error in inventory.so"
else
	FAILED=$((FAILED + 1))
	echo "FAILED: $VG_EXT valgrind errors in inventory.so; the first:"
	head -150 "$WORK/ext-errors"
fi

if [ "$REGRESS_STATUS" -eq 0 ]; then
	PASSED=$((PASSED + 1))
	echo "ok: the regression suite passes under valgrind (${#TESTS[@]} tests in $REGRESS_TIME s)"
else
	FAILED=$((FAILED + 1))
	KEEP=1
	echo "FAILED: the regression suite under valgrind (pg_regress exit $REGRESS_STATUS); the diffs:"
	[ -f "$WORK/tree/regression.diffs" ] && head -150 "$WORK/tree/regression.diffs"
fi

tally_end

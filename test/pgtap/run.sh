#!/usr/bin/env bash
# test/pgtap/run.sh DIR CONF TEST... -- runs the pgTAP files on a temporary
# cluster of their own in DIR (made afresh), which preloads the library with
# the settings of CONF, as pg_regress --temp-instance does for the regression
# tests.  `make installcheck-pgtap` calls it; initdb, pg_ctl, psql and
# pg_prove come from PATH.  Exits with pg_prove's status.
set -u
dir=$1 conf=$2
shift 2
[ $# -gt 0 ] || { echo "no pgTAP files given" >&2; exit 2; }

rm -rf "$dir"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
initdb -D "$dir/data" -A trust --no-sync >"$dir/initdb.log" 2>&1 ||
	{ cat "$dir/initdb.log" >&2; exit 1; }
{
	cat "$conf"
	echo "listen_addresses = ''"
	echo "unix_socket_directories = '$dir'"
	echo "fsync = off"
} >>"$dir/data/postgresql.conf"
pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null ||
	{ cat "$dir/server.log" >&2; exit 1; }
trap 'pg_ctl -D "$dir/data" -m fast -w stop >/dev/null 2>&1' EXIT

export PGHOST=$dir PGDATABASE=inventory_pgtap
createdb "$PGDATABASE" || exit 1
pg_prove --verbose "$@"

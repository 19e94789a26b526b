#!/usr/bin/env bash
# test/pgtap/run.sh DIR CONF TEST... -- runs the pgTAP files on a temporary
# cluster of their own in DIR (made afresh) that preloads the library with
# the settings of CONF, as pg_regress --temp-instance does for the regression
# tests: the cluster of scripts/lib.sh (inv_cluster_start), CONF included.
# `make installcheck-pgtap` calls it.  Exits with pg_prove's status.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
dir=$1 conf=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
shift 2
[ $# -gt 0 ] || inv_die "no pgTAP files given"

rm -rf "$dir"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
inv_cluster_start "$dir" "include '$conf'" "fsync = off"
trap 'inv_cluster_stop "$dir"' EXIT
export PGDATABASE=inventory_pgtap
inv_as_pg createdb "$PGDATABASE" || exit 1
inv_as_pg pg_prove --verbose "$@"

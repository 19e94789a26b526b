#!/usr/bin/python3
"""scripts/check_exports.py -- inventory.so exports the names PostgreSQL
looks up in it and nothing else (src/exports.map says why).

The names it may export: Pg_magic_func and _PG_init; every C function that
an inventory--*.sql script binds, released or not (AS 'MODULE_PATHNAME',
'name'), with its pg_finfo_ record; the background workers' entry points
(bgw_function_name in src/); and in a test build the fault functions the
tests bind (src/fault.c).  The names it must export: all of those but the
fault functions -- a database still on a released version calls its
script's names until ALTER EXTENSION UPDATE runs.

Prints TAP: two tests, the names that must not be exported and the names
that are missing as their diagnostics.  Usage:
    scripts/check_exports.py [TOP_DIR]      (TOP_DIR holds inventory.so)
"""
import glob
import os
import re
import subprocess
import sys

BOUND = re.compile(r"'MODULE_PATHNAME'\s*,\s*'([A-Za-z_0-9]+)'")
WORKER = re.compile(r'bgw_function_name\s*,\s*BGW_MAXLEN\s*,\s*"([A-Za-z_0-9]+)"')
FAULT = re.compile(r'^PG_FUNCTION_INFO_V1\((inventory_fault_[a-z_]+)\)', re.M)


def names_in(pattern, files):
    found = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            found.update(pattern.findall(f.read()))
    return found


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    lib = os.path.join(top, "inventory.so")
    if not os.path.exists(lib):
        print("Bail out! %s is not built" % lib)
        return 1
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.strip()}

    sql = names_in(BOUND, glob.glob(os.path.join(top, "inventory--*.sql")))
    sources = glob.glob(os.path.join(top, "src", "**", "*.c"), recursive=True)
    workers = names_in(WORKER, sources)
    faults = names_in(FAULT, [os.path.join(top, "src", "fault.c")])
    required = {"Pg_magic_func", "_PG_init"} | sql | {"pg_finfo_" + n for n in sql} | workers
    allowed = required | faults | {"pg_finfo_" + n for n in faults}

    print("1..2")
    extra = sorted(exported - allowed)
    what = ("inventory.so exports only what PostgreSQL looks up: %d names"
            % len(exported))
    print(("not ok" if extra else "ok") + " 1 - " + what)
    for name in extra:
        print("#   exported, and no script or worker names it: " + name)
    missing = sorted(required - exported)
    what = ("every name the scripts (%d functions) and the workers (%d) bind "
            "is exported" % (len(sql), len(workers)))
    print(("not ok" if missing else "ok") + " 2 - " + what)
    for name in missing:
        print("#   bound, and not exported: " + name)
    return 1 if extra or missing else 0


if __name__ == "__main__":
    sys.exit(main())

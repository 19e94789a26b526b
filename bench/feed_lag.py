#!/usr/bin/python3
"""bench/feed_lag.py -- case 15 of bench/run.py: how far behind the sale a
consumer of the change feed reads, while reservations go on.

Usage: feed_lag.py CONNINFO SECONDS

In a database with inventory.change_feed on, reads inventory.changes() as
an order service would: from the end of the feed as it stands (then it
prints "ready", for the load to start), in batches of up to 1000 rows
after the last cursor, without pause while rows come and 10 ms apart when
none does, for SECONDS, then until no row has come for half a second (the
load has ended by then).  The lag of a row is the server's clock when it
was read less its created_at (the reserve's statement start: its commit
follows within the call).  Prints then one line: "ROWS P50_MS P99_MS
MAX_MS".
"""
import sys
import time

import psycopg

READ = ("SELECT cursor, extract(epoch FROM clock_timestamp() - created_at) * 1000"
        " FROM inventory.changes(%s, 1000)")


def percentile(values, p):
    values = sorted(values)
    return values[max(0, min(len(values) - 1, int(round(p * len(values))) - 1))]


def read(conn, cursor):
    """The next batch after cursor: its rows' lags in ms, and the last cursor."""
    rows = conn.execute(READ, (cursor,)).fetchall()
    return [float(r[1]) for r in rows], (rows[-1][0] if rows else cursor)


def main(conninfo, seconds):
    conn = psycopg.connect(conninfo, autocommit=True)
    if conn.execute("SHOW inventory.change_feed").fetchone()[0] != "on":
        raise SystemExit("inventory.change_feed is off in this database")
    # the end of the feed as it stands: what came before is not this case's
    cursor, lags = None, [None]
    while lags:
        lags, cursor = read(conn, cursor)
    print("ready", flush=True)
    measured = []
    end = time.monotonic() + seconds
    quiet_since = None
    while True:
        lags, cursor = read(conn, cursor)
        measured += lags
        now = time.monotonic()
        if lags:
            quiet_since = None
            continue
        if now >= end:
            quiet_since = quiet_since or now
            if now - quiet_since >= 0.5:
                break
        time.sleep(0.01)
    if not measured:
        raise SystemExit("no row of the feed was read")
    print(len(measured), f"{percentile(measured, 0.5):.3f}", f"{percentile(measured, 0.99):.3f}",
          f"{max(measured):.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], float(sys.argv[2]))

#!/usr/bin/python3
"""bench/notify_latency.py -- cases 14 and 14b of bench/run.py: how soon
LISTEN inventory_stock hears that a SKU sold out, or came back on sale.

Usage: notify_latency.py CONNINFO SKU FLIPS GAP_MS [WHILE_SQL]

SKU has one unit on sale, in a database with inventory.stock_notifications
on (ALTER DATABASE ... SET: no session can turn it on for itself).  A seller
takes it with reserve() and gives it back with cancel(), FLIPS times each,
GAP_MS apart (more than inventory.stock_notify_interval, so that the rate
limit delays nothing); a listener in the same process waits for each
notification.  The latency of one is from the moment the seller's call
returned (its commit is done by then) to the moment the listener read the
notification of the state the call left: available 0 after a reserve, 1
after a cancel.  With WHILE_SQL, a query answering a boolean (case 14b:
is the worker still clearing its backlog?), a flip is made only while it
answers true, asked before the flip, and the flips stop when it answers
false.  Prints one line: "SAMPLES P50_MS P99_MS MAX_MS MISSED FLIPS",
MISSED the notifications not heard within 2 s, FLIPS the flips made.
"""
import select
import sys
import time

import psycopg


def percentile(values, p):
    values = sorted(values)
    return values[max(0, min(len(values) - 1, int(round(p * len(values))) - 1))]


def main(conninfo, sku, flips, gap_ms, while_sql=None):
    listener = psycopg.connect(conninfo, autocommit=True)
    listener.execute("LISTEN inventory_stock")
    seller = psycopg.connect(conninfo, autocommit=True)
    if seller.execute("SHOW inventory.stock_notifications").fetchone()[0] != "on":
        raise SystemExit("inventory.stock_notifications is off in this database:"
                         " ALTER DATABASE ... SET inventory.stock_notifications = on")
    pg = listener.pgconn
    latencies, missed = [], 0
    run = str(time.time_ns())
    made = 0
    for i in range(flips):
        if while_sql and not seller.execute(while_sql).fetchone()[0]:
            break
        made += 1
        for call, want in (("reserve", 0), ("cancel", 1)):
            time.sleep(gap_ms / 1000)
            key = f"note-{run}-{i}"
            if call == "reserve":
                row = seller.execute("SELECT (r).status, (r).version FROM inventory.reserve(%s, 1, %s) r",
                                     (sku, key)).fetchone()
            else:
                row = seller.execute("SELECT (r).status, (r).version FROM inventory.cancel(%s) r",
                                     (key,)).fetchone()
            done = time.monotonic()
            if row[0] != "ok":
                raise SystemExit(f"{call} answered {row[0]}")
            heard = None
            deadline = done + 2
            while heard is None and time.monotonic() < deadline:
                ready, _, _ = select.select([pg.socket], [], [], max(0, deadline - time.monotonic()))
                if not ready:
                    break
                pg.consume_input()
                while True:
                    n = pg.notifies()
                    if n is None:
                        break
                    payload = n.extra.decode()
                    if f'"available": {want},' in payload and f'"sku": "{sku}"' in payload:
                        heard = time.monotonic()
            if heard is None:
                missed += 1
            else:
                latencies.append((heard - done) * 1000)
    if not latencies:
        print(f"0 - - - {missed} {made}")
        return
    print(f"{len(latencies)} {percentile(latencies, 0.5):.1f} {percentile(latencies, 0.99):.1f} "
          f"{max(latencies):.1f} {missed} {made}")


if __name__ == "__main__":
    if len(sys.argv) not in (5, 6):
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]),
         sys.argv[5] if len(sys.argv) == 6 else None)

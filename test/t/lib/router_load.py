#!/usr/bin/python3
"""
A client of the router for the TAP tests, as a shop calls it: reserves one
unit of a SKU for order PREFIX-1, then pays for it (confirm) or gives it
up (cancel), then PREFIX-2, and so on, each call with the SKU and in a
transaction of its own (autocommit) on one connection; an odd order is
confirmed, an even one cancelled, and an order whose reserve did not
answer ok is left alone.  It stops before order ORDERS + 1 or as soon as
the file STOP exists, and exits 0.

    router_load.py CONNINFO SKU PREFIX ORDERS LOG STOP

Each call is a line of LOG, written when it answers:

    START <tab> END <tab> OP <tab> ORDER <tab> ANSWER

START and END: when the call was sent and when it answered, in seconds
since the epoch; OP: reserve, confirm or cancel; ANSWER: the status it
answered, or "error SQLSTATE message | detail" when it failed (on one
line).  A connection that breaks is opened again for the next order.
"""
import os
import sys
import time

import psycopg

CALLS = {
    "reserve": "SELECT status FROM inventory.reserve(%s, 1, %s, ttl => '1 hour')",
    "confirm": "SELECT status FROM inventory.confirm(%s, 1, %s)",
    "cancel": "SELECT status FROM inventory.cancel(%s, 1, %s)",
}


def one_line(text):
    return " ".join((text or "").split())


def main():
    conninfo, sku, prefix, orders, log_path, stop = sys.argv[1:7]
    conn = None
    with open(log_path, "w", buffering=1) as log:
        for n in range(1, int(orders) + 1):
            if os.path.exists(stop):
                break
            if conn is None or conn.broken:
                conn = psycopg.connect(conninfo, autocommit=True,
                                       application_name=prefix)
            order = f"{prefix}-{n}"
            ops = ["reserve", "confirm" if n % 2 else "cancel"]
            for op in ops:
                args = (sku, order) if op == "reserve" else (order, sku)
                start = time.time()
                try:
                    answer = conn.execute(CALLS[op], args).fetchone()[0]
                except psycopg.Error as e:
                    answer = "error %s %s | %s" % (
                        e.diag.sqlstate, one_line(e.diag.message_primary or str(e)),
                        one_line(e.diag.message_detail))
                log.write(f"{start:.6f}\t{time.time():.6f}\t{op}\t{order}\t{answer}\n")
                if answer != "ok" or conn.broken:
                    break
    if conn is not None:
        conn.close()


if __name__ == "__main__":
    main()

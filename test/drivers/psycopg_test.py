#!/usr/bin/python3
"""
The extension through psycopg 3, the driver Python applications use: what
an application receives (types, the result row, the state type in text and
binary), what it can pass (lists, timedelta, None), how errors reach it
(SQLSTATE, detail, hint), transactions, psycopg's automatic prepared
statements, client-side binding, pipeline mode, and many threads racing for
the last units.  Prints TAP.

Run with PGHOST, PGPORT, PGUSER and PGDATABASE set, against a server that
preloads inventory with its worker off (scripts/test.sh does so); works in
a database of its own, created and dropped here.
"""
import datetime
import os
import threading

import psycopg
from psycopg import ClientCursor, errors, sql
from psycopg.types import TypeInfo
from psycopg.types.composite import CompositeInfo, register_composite
from psycopg.types.string import TextBinaryLoader

tests = 0
failed = 0


def ok(cond, name):
    global tests, failed
    tests += 1
    if not cond:
        failed += 1
    print(f"{'' if cond else 'not '}ok {tests} - {name}", flush=True)
    return cond


def is_(got, want, name):
    if not ok(got == want, name):
        print(f"#   got:  {got!r}\n#   want: {want!r}", flush=True)


def raises(exc, call):
    """The exception of class exc that call() raises, or None."""
    try:
        call()
    except exc as e:
        return e
    return None


DB = f"inv_psycopg_{os.getpid()}"

admin = psycopg.connect(autocommit=True)
admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB)))


def connect(**kw):
    return psycopg.connect(dbname=DB, **kw)


def main():
    conn = connect(autocommit=True)
    conn.execute("CREATE EXTENSION inventory")

    def one(query, params=None, **kw):
        return conn.execute(query, params, **kw).fetchone()

    def available(sku):
        return one("SELECT inventory.available(%s)", [sku])[0]

    # --- the result row, column by column --------------------------------
    r = one("SELECT * FROM inventory.restock(%s, %s, %s)", ["PY-1", 10, "py-in-1"])
    is_((r[0], r[1], r[3]), (True, "ok", 10), "restock: ok, qty 10")

    r = one("SELECT * FROM inventory.reserve(%s, %s, %s)", ["PY-1", 2, "py-o1"])
    is_(r[:7], (True, "ok", "PY-1", 2, "PENDING", 8, 1),
        "reserve in FROM: ok, status, sku, qty, state, available, version as Python values")
    is_([type(v) for v in r],
        [bool, str, str, int, str, int, int, datetime.datetime],
        "bool, str, str, int, str (the state type, in text), int, int, datetime")
    ok(r[7].tzinfo is not None, "expires_at is an aware datetime")

    is_(one("SELECT (inventory.reserve(%s, %s, %s)).status", ["PY-1", 1, "py-o2"]),
        ("ok",), "the cheapest form: one field of the row in the select list")

    whole = one("SELECT inventory.reserve(%s, %s, %s)", ["PY-1", 1, "py-o3"])[0]
    ok(isinstance(whole, str) and whole.startswith("(t,ok,PY-1,1,PENDING,"),
       "the row as one value arrives as the text of a record")

    # a connection that registers the type gets an object instead
    reg = connect(autocommit=True)
    register_composite(CompositeInfo.fetch(reg, "inventory.result"), reg)
    obj = reg.execute("SELECT inventory.reserve(%s, %s, %s)", ["PY-1", 1, "py-o3"]).fetchone()[0]
    is_((obj.ok, obj.status, obj.qty, obj.state), (True, "duplicate", 1, "PENDING"),
        "with register_composite the row is an object with named fields")

    # binary results: the state type has send/receive; psycopg knows no loader for it
    r = one("SELECT * FROM inventory.reserve(%s, %s, %s)", ["PY-1", 1, "py-o3"], binary=True)
    is_(r[4], b"PENDING", "binary=True: the state arrives as bytes without a loader")
    state = TypeInfo.fetch(reg, "inventory.state")
    reg.adapters.register_loader(state.oid, TextBinaryLoader)
    state.register(reg)
    r = reg.execute("SELECT * FROM inventory.reserve(%s, %s, %s)", ["PY-1", 1, "py-o3"],
                    binary=True).fetchone()
    is_((r[1], r[4]), ("duplicate", "PENDING"), "with TextBinaryLoader registered, a str")
    is_(reg.execute("SELECT ARRAY['pending', 'Expired']::inventory.state[]").fetchone()[0],
        ["PENDING", "EXPIRED"], "with TypeInfo.register, an array of states is a list")
    is_(reg.execute("SELECT %s::inventory.state", ["confirmed"]).fetchone()[0], "CONFIRMED",
        "a state passed as a str parameter, case-insensitive")
    reg.close()

    # --- replay, refusal, automatic prepared statements -------------------
    before = available("PY-1")
    r = one("SELECT ok, status, available FROM inventory.reserve(%s, %s, %s)", ["PY-1", 2, "py-o1"])
    is_(r, (True, "duplicate", before), "a replayed reserve is a duplicate and changes nothing")

    # psycopg prepares a statement on the server after its fifth execution
    statuses = [one("SELECT (inventory.reserve(%s, 1, %s)).status", ["PY-1", f"py-loop-{i}"])[0]
                for i in range(8)]
    is_(statuses, ["ok"] * before + ["insufficient"] * (8 - before),
        f"eight calls, the same statement: {before} ok, then insufficient (a result, not an error)")
    ok(one("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
           ["%inventory.reserve($1, 1, $2)%"])[0] == 1,
       "psycopg prepared it on the server, and the prepared calls answered the same")
    is_(available("PY-1"), 0, "sold out")

    # --- errors by SQLSTATE -------------------------------------------------
    e = raises(errors.UniqueViolation,
               lambda: conn.execute("SELECT * FROM inventory.reserve(%s, %s, %s)", ["PY-1", 3, "py-o1"]))
    ok(e is not None and e.diag.sqlstate == "23505", "a key reused for another movement: UniqueViolation, 23505")
    ok(e is not None and 'reservation of 2 units of sku "PY-1"' in (e.diag.message_detail or "")
       and e.diag.message_hint, "with the original movement in its detail, and a hint")
    e = raises(errors.NullValueNotAllowed,
               lambda: conn.execute("SELECT * FROM inventory.reserve(%s, %s, %s)", [None, 1, "py-null"]))
    ok(e is not None and e.diag.message_primary == "sku must not be null",
       "None as the sku: NullValueNotAllowed (22004), 'sku must not be null'")
    e = raises(errors.InvalidParameterValue,
               lambda: conn.execute("SELECT * FROM inventory.reserve(%s, %s, %s)", ["PY-1", 0, "py-zero"]))
    ok(e is not None and e.diag.sqlstate == "22023" and e.diag.message_detail == "qty is 0.",
       "qty 0: InvalidParameterValue (22023), detail 'qty is 0.'")

    # --- transactions ---------------------------------------------------------
    one("SELECT inventory.restock(%s, %s, %s)", ["PY-2", 5, "py-in-2"])
    tx = connect()   # psycopg's default: every statement inside a transaction
    tx.execute("SELECT inventory.reserve(%s, %s, %s)", ["PY-2", 3, "py-tx-1"])
    is_(available("PY-2"), 2, "a reserve in an open transaction holds its units at once")
    tx.rollback()
    is_((available("PY-2"),
         one("SELECT count(*) FROM inventory.ledger WHERE order_id = %s", ["py-tx-1"])[0]),
        (5, 0), "rollback(): the units back, no ledger row")

    e = raises(errors.UniqueViolation,
               lambda: tx.execute("SELECT inventory.restock(%s, %s, %s)", ["PY-2", 1, "py-in-2"]))
    ok(e is not None, "an error inside the transaction")
    ok(raises(errors.InFailedSqlTransaction,
              lambda: tx.execute("SELECT inventory.available('PY-2')")) is not None,
       "the next statement: InFailedSqlTransaction (25P02) until rollback")
    tx.rollback()
    with tx.transaction():
        tx.execute("SELECT inventory.reserve(%s, %s, %s)", ["PY-2", 3, "py-tx-2"])
    is_(one("SELECT state FROM inventory.ledger WHERE order_id = %s", ["py-tx-2"]),
        ("PENDING",), "with conn.transaction(): committed")
    tx.close()

    # --- confirm, cancel, extend --------------------------------------------
    is_([one(q, ["py-tx-2"]) for q in ("SELECT ok, status FROM inventory.confirm(%s)",
                                       "SELECT ok, status FROM inventory.confirm(%s)",
                                       "SELECT ok, status FROM inventory.cancel(%s)")],
        [(True, "ok"), (True, "duplicate"), (False, "confirmed")],
        "confirm ok, confirm again duplicate, cancel of a sale: confirmed")

    # "now" is the start of the calling statement
    r = one("SELECT r.status, r.expires_at - statement_timestamp()"
            " FROM inventory.reserve(%s, %s, %s, ttl => %s) r",
            ["PY-2", 1, "py-ttl", datetime.timedelta(minutes=10)])
    is_(r, ("ok", datetime.timedelta(minutes=10)), "a timedelta as the ttl: expires 10 minutes after now")
    r = one("SELECT r.status, r.expires_at - statement_timestamp() FROM inventory.extend(%s, %s, %s) r",
            ["py-ttl", 1, datetime.timedelta(hours=2)])
    is_(r, ("ok", datetime.timedelta(hours=2)), "extend with a timedelta")

    # --- lists as arrays --------------------------------------------------------
    one("SELECT inventory.restock(%s, %s, %s)", ["PY-3", 3, "py-in-3"])
    one("SELECT inventory.restock(%s, %s, %s)", ["PY-5", 10, "py-in-5"])
    rows = conn.execute("SELECT status, available FROM inventory.reserve_many(%s, %s, %s)",
                        [["PY-3", "PY-3", "PY-3", "PY-NONE"], [2, 2, 1, 1],
                         ["py-m1", "py-m2", "py-m3", "py-m4"]]).fetchall()
    is_(rows, [("ok", 1), ("insufficient", 1), ("ok", 0), ("unknown_sku", None)],
        "reserve_many with Python lists: one row per element, in order, each its own outcome")
    rows = conn.execute("SELECT status FROM inventory.reserve_cart(%s, %s, %s)",
                        ["py-cart", ["PY-5", "PY-5"], [1, 1]]).fetchall()
    is_(rows, [("ok",), ("ok",)], "reserve_cart with Python lists")

    # --- client-side binding, as used behind a pooler in transaction mode --
    keys = ["py-'quote'", "py-été\n2", 'py-"back\\slash"']
    with ClientCursor(conn) as cur:
        for k in keys:
            cur.execute("SELECT (inventory.reserve(%s, %s, %s)).status", ["PY-5", 1, k])
    got = [r[0] for r in conn.execute(
        "SELECT order_id FROM inventory.ledger WHERE order_id = ANY(%s) ORDER BY order_id", [keys])]
    is_(got, sorted(keys), "ClientCursor: keys with quotes, a newline and non-ASCII land exactly")

    # --- pipeline mode: many calls, one round trip ---------------------------
    one("SELECT inventory.restock(%s, %s, %s)", ["PY-4", 5, "py-in-4"])
    with conn.pipeline():
        curs = [conn.execute("SELECT (inventory.reserve(%s, 1, %s)).status", ["PY-4", f"py-p{i}"])
                for i in range(8)]
    is_([c.fetchone()[0] for c in curs], ["ok"] * 5 + ["insufficient"] * 3,
        "pipeline mode: eight calls in one round trip, each answered in order")

    # --- threads racing for the last units ------------------------------------
    one("SELECT inventory.restock(%s, %s, %s)", ["PY-HOT", 50, "py-in-hot"])
    THREADS, CALLS = 16, 12
    answers = []
    lock = threading.Lock()
    start = threading.Barrier(THREADS)

    def buyer(t):
        with connect(autocommit=True) as c:
            start.wait()
            mine = [c.execute("SELECT (inventory.reserve('PY-HOT', 1, %s)).status",
                              [f"py-hot-{t}-{i}"]).fetchone()[0] for i in range(CALLS)]
        with lock:
            answers.extend(mine)

    workers = [threading.Thread(target=buyer, args=(t,)) for t in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    is_((answers.count("ok"), answers.count("insufficient"), len(answers)),
        (50, THREADS * CALLS - 50, THREADS * CALLS),
        f"{THREADS} threads, {THREADS * CALLS} reserves of 1 of 50 units: exactly 50 ok")
    is_((available("PY-HOT"), one("SELECT count(*) FROM inventory.verify()")[0]), (0, 0),
        "available 0, and the cache equals the tables (verify() returns no rows)")

    conn.close()


try:
    main()
finally:
    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DB)))
    admin.close()
    print(f"1..{tests}")

raise SystemExit(1 if failed else 0)

#!/usr/bin/python3
"""
The extension through psycopg 3, the driver Python applications use: what
an application receives (types, the result row, the state type in text and
binary), what it can pass (lists, timedelta, None), how errors reach it
(SQLSTATE, detail, hint), transactions, psycopg's automatic prepared
statements, client-side binding, pipeline mode, and many threads racing for
the last units; then the same for reserve_now(), whose status arrives as a
str in autocommit and which a transaction of the driver's refuses (25001).
Prints TAP.

Run with PGHOST, PGPORT, PGUSER (a superuser) and PGDATABASE set, against
a server that preloads inventory with its worker off (scripts/test.sh does
so); works in a database of its own, created and dropped here.

Who calls (docs/security.md, "The roles"), each over connections of its
own login role, as an application configures its pools (a connection, not
SET ROLE, so that role settings apply):
  shop_app      (inventory_app)      reserve, reserve_now, reserve_many,
                reserve_cart, confirm, cancel, extend, available, the stock
                view; every connection of the racing threads
  shop_admin    (inventory_admin)    restock, verify, and the reads of
                inventory.ledger the checks make
  shop_monitor  (inventory_monitor)  the express lane's figures
                (express_fallbacks, express_status)
The superuser (PGUSER) only creates and drops the database, creates the
extension and makes the login roles with the DO block of test/roles.sql:
what the manual gives a superuser, and scaffolding.
"""
import datetime
import os
import re
import threading
import traceback

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
APP, ADMIN, MONITOR = "shop_app", "shop_admin", "shop_monitor"
ROLES_SQL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "roles.sql")

# the superuser (PGUSER), on PGDATABASE: only to create and drop our database
superuser = psycopg.connect(autocommit=True)
superuser.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB)))


def connect(user, **kw):
    """A connection to our database as the login role user."""
    return psycopg.connect(dbname=DB, user=user, **kw)


def one(conn, query, params=None, **kw):
    return conn.execute(query, params, **kw).fetchone()


def roles_do_block():
    """The DO block of test/roles.sql, which makes the login roles (the
    file's other lines are psql's)."""
    with open(ROLES_SQL, encoding="utf-8") as f:
        m = re.search(r"^DO \$\$$.*?^\$\$;$", f.read(), re.S | re.M)
    if m is None:
        raise RuntimeError(f"no DO block in {ROLES_SQL}")
    return m.group(0)


def setup():
    """As the superuser, in our database: CREATE EXTENSION (the manual's:
    the extension is not trusted) and the login roles (a superuser's
    GRANT of the extension's roles).  Then each login role must be what
    the tests take it for: no superuser, and a member of its own group
    only, or a call could pass on a right the role is not given."""
    with psycopg.connect(dbname=DB, autocommit=True) as su:
        su.execute("CREATE EXTENSION inventory")
        su.execute(roles_do_block())
        # the change feed, and the order service's own tables
        su.execute(sql.SQL("ALTER DATABASE {} SET inventory.change_feed = on").format(sql.Identifier(DB)))
        su.execute("CREATE TABLE public.orders (order_id text, line int, state text, settled_by text,"
                   " PRIMARY KEY (order_id, line))")
        su.execute("CREATE TABLE public.feed_position (cursor text)")
        su.execute("INSERT INTO public.feed_position VALUES (NULL)")
        su.execute(f"GRANT SELECT, INSERT, UPDATE ON public.orders, public.feed_position TO {APP}")
        for login, group in ((APP, "inventory_app"), (ADMIN, "inventory_admin"),
                             (MONITOR, "inventory_monitor")):
            got = one(su, "SELECT r.rolsuper, array(SELECT g.rolname FROM pg_auth_members m"
                          " JOIN pg_roles g ON g.oid = m.roleid WHERE m.member = r.oid)"
                          " FROM pg_roles r WHERE r.rolname = %s", [login])
            if got != (False, [group]):
                raise RuntimeError(f"login role {login}: (superuser, member of) is {got!r},"
                                   f" not (False, [{group!r}])")


def race(query, key_prefix, threads, calls):
    """threads connections of shop_app in autocommit, released together,
    each making calls of query (one parameter: a key of its own); every
    answer."""
    answers = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def buyer(t):
        with connect(APP, autocommit=True) as c:
            start.wait()
            mine = [c.execute(query, [f"{key_prefix}-{t}-{i}"]).fetchone()[0] for i in range(calls)]
        with lock:
            answers.extend(mine)

    workers = [threading.Thread(target=buyer, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return answers


def main():
    setup()
    # the pools of the application (conn: every call of the API an
    # application makes), of the administrator and of monitoring
    conn = connect(APP, autocommit=True)
    adm = connect(ADMIN, autocommit=True)
    mon = connect(MONITOR, autocommit=True)

    def available(sku):
        return one(conn, "SELECT inventory.available(%s)", [sku])[0]

    # --- the result row, column by column --------------------------------
    r = one(adm, "SELECT * FROM inventory.restock(%s, %s, %s)", ["PY-1", 10, "py-in-1"])
    is_((r[0], r[1], r[3]), (True, "ok", 10), "restock: ok, qty 10")

    r = one(conn, "SELECT * FROM inventory.reserve(%s, %s, %s)", ["PY-1", 2, "py-o1"])
    is_(r[:7], (True, "ok", "PY-1", 2, "PENDING", 8, 1),
        "reserve in FROM: ok, status, sku, qty, state, available, version as Python values")
    is_([type(v) for v in r],
        [bool, str, str, int, str, int, int, datetime.datetime],
        "bool, str, str, int, str (the state type, in text), int, int, datetime")
    ok(r[7].tzinfo is not None, "expires_at is an aware datetime")

    is_(one(conn, "SELECT (inventory.reserve(%s, %s, %s)).status", ["PY-1", 1, "py-o2"]),
        ("ok",), "the cheapest form: one field of the row in the select list")

    whole = one(conn, "SELECT inventory.reserve(%s, %s, %s)", ["PY-1", 1, "py-o3"])[0]
    ok(isinstance(whole, str) and whole.startswith("(t,ok,PY-1,1,PENDING,"),
       "the row as one value arrives as the text of a record")

    # a connection that registers the type gets an object instead
    reg = connect(APP, autocommit=True)
    register_composite(CompositeInfo.fetch(reg, "inventory.result"), reg)
    obj = reg.execute("SELECT inventory.reserve(%s, %s, %s)", ["PY-1", 1, "py-o3"]).fetchone()[0]
    is_((obj.ok, obj.status, obj.qty, obj.state), (True, "duplicate", 1, "PENDING"),
        "with register_composite the row is an object with named fields")

    # binary results: the state type has send/receive; psycopg knows no loader for it
    r = one(conn, "SELECT * FROM inventory.reserve(%s, %s, %s)", ["PY-1", 1, "py-o3"], binary=True)
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
    r = one(conn, "SELECT ok, status, available FROM inventory.reserve(%s, %s, %s)", ["PY-1", 2, "py-o1"])
    is_(r, (True, "duplicate", before), "a replayed reserve is a duplicate and changes nothing")

    # psycopg prepares a statement on the server after its fifth execution
    statuses = [one(conn, "SELECT (inventory.reserve(%s, 1, %s)).status", ["PY-1", f"py-loop-{i}"])[0]
                for i in range(8)]
    is_(statuses, ["ok"] * before + ["insufficient"] * (8 - before),
        f"eight calls, the same statement: {before} ok, then insufficient (a result, not an error)")
    ok(one(conn, "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
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
    one(adm, "SELECT inventory.restock(%s, %s, %s)", ["PY-2", 5, "py-in-2"])
    tx = connect(APP)   # psycopg's default: every statement inside a transaction
    tx.execute("SELECT inventory.reserve(%s, %s, %s)", ["PY-2", 3, "py-tx-1"])
    is_(available("PY-2"), 2, "a reserve in an open transaction holds its units at once")
    tx.rollback()
    is_((available("PY-2"),
         one(adm, "SELECT count(*) FROM inventory.ledger WHERE order_id = %s", ["py-tx-1"])[0]),
        (5, 0), "rollback(): the units back, no ledger row")

    # the restock's key reused by a reservation
    e = raises(errors.UniqueViolation,
               lambda: tx.execute("SELECT inventory.reserve(%s, %s, %s)", ["PY-2", 1, "py-in-2"]))
    ok(e is not None, "an error inside the transaction")
    ok(raises(errors.InFailedSqlTransaction,
              lambda: tx.execute("SELECT inventory.available('PY-2')")) is not None,
       "the next statement: InFailedSqlTransaction (25P02) until rollback")
    tx.rollback()
    with tx.transaction():
        tx.execute("SELECT inventory.reserve(%s, %s, %s)", ["PY-2", 3, "py-tx-2"])
    is_(one(adm, "SELECT state FROM inventory.ledger WHERE order_id = %s", ["py-tx-2"]),
        ("PENDING",), "with conn.transaction(): committed")
    tx.close()

    # --- confirm, cancel, extend --------------------------------------------
    is_([one(conn, q, ["py-tx-2"]) for q in ("SELECT ok, status FROM inventory.confirm(%s)",
                                       "SELECT ok, status FROM inventory.confirm(%s)",
                                       "SELECT ok, status FROM inventory.cancel(%s)")],
        [(True, "ok"), (True, "duplicate"), (False, "confirmed")],
        "confirm ok, confirm again duplicate, cancel of a sale: confirmed")

    # "now" is the start of the calling statement
    r = one(conn, "SELECT r.status, r.expires_at - statement_timestamp()"
            " FROM inventory.reserve(%s, %s, %s, ttl => %s) r",
            ["PY-2", 1, "py-ttl", datetime.timedelta(minutes=10)])
    is_(r, ("ok", datetime.timedelta(minutes=10)), "a timedelta as the ttl: expires 10 minutes after now")
    r = one(conn, "SELECT r.status, r.expires_at - statement_timestamp() FROM inventory.extend(%s, %s, %s) r",
            ["py-ttl", 1, datetime.timedelta(hours=2)])
    is_(r, ("ok", datetime.timedelta(hours=2)), "extend with a timedelta")

    # --- lists as arrays --------------------------------------------------------
    one(adm, "SELECT inventory.restock(%s, %s, %s)", ["PY-3", 3, "py-in-3"])
    one(adm, "SELECT inventory.restock(%s, %s, %s)", ["PY-5", 10, "py-in-5"])
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
    got = [r[0] for r in adm.execute(
        "SELECT order_id FROM inventory.ledger WHERE order_id = ANY(%s) ORDER BY order_id", [keys])]
    is_(got, sorted(keys), "ClientCursor: keys with quotes, a newline and non-ASCII land exactly")

    # --- pipeline mode: many calls, one round trip ---------------------------
    one(adm, "SELECT inventory.restock(%s, %s, %s)", ["PY-4", 5, "py-in-4"])
    with conn.pipeline():
        curs = [conn.execute("SELECT (inventory.reserve(%s, 1, %s)).status", ["PY-4", f"py-p{i}"])
                for i in range(8)]
    is_([c.fetchone()[0] for c in curs], ["ok"] * 5 + ["insufficient"] * 3,
        "pipeline mode: eight calls in one round trip, each answered in order")

    # --- threads racing for the last units ------------------------------------
    one(adm, "SELECT inventory.restock(%s, %s, %s)", ["PY-HOT", 50, "py-in-hot"])
    THREADS, CALLS = 16, 12
    answers = race("SELECT (inventory.reserve('PY-HOT', 1, %s)).status", "py-hot", THREADS, CALLS)
    is_((answers.count("ok"), answers.count("insufficient"), len(answers)),
        (50, THREADS * CALLS - 50, THREADS * CALLS),
        f"{THREADS} threads, {THREADS * CALLS} reserves of 1 of 50 units: exactly 50 ok")
    # verify(wait): every cached SKU compared, none passed over as busy
    is_((available("PY-HOT"), one(adm, "SELECT count(*) FROM inventory.verify('30 s')")[0]), (0, 0),
        "available 0, and the cache equals the tables (verify() returns no rows)")

    # --- reserve_now(): one reservation committed on its own ------------------
    reserve_now_section(conn, adm, mon, available)
    feed_section(conn, adm)

    for c in (conn, adm, mon):
        c.close()


def follow_feed(conn):
    """docs/applications.md's consumer of the change feed, as it is
    written there: one batch, applied and its cursor saved in one
    transaction."""
    with conn.transaction():
        after = conn.execute("SELECT cursor FROM feed_position").fetchone()[0]   # NULL at first
        for c in conn.execute("SELECT cursor, order_id, batch_id, state, settled_by"
                              " FROM inventory.changes(%s, 500)", (after,)).fetchall():
            conn.execute("UPDATE orders SET state = %s, settled_by = %s"
                         " WHERE order_id = %s AND line = %s", (c[3], c[4], c[1], c[2]))
            after = c[0]
        conn.execute("UPDATE feed_position SET cursor = %s", (after,))


def feed_section(conn, adm):
    """The order service of docs/applications.md follows the feed: each
    decision, the buyer's and the expiry's, reaches its own table."""
    service = connect(APP)      # psycopg's default: not autocommit
    adm.execute("SELECT inventory.restock('PY-FEED', 10, 'py-feed-in')")
    for key in ("py-f1", "py-f2", "py-f3"):
        conn.execute("INSERT INTO orders VALUES (%s, 1, 'reserved', NULL)", [key])
        conn.execute("SELECT inventory.reserve('PY-FEED', 1, %s)", [key])
    conn.execute("INSERT INTO orders VALUES ('py-flate', 1, 'reserved', NULL)")
    adm.execute("INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)"
                " VALUES ('py-flate', 1, 'reserve', 'PY-FEED', 1, now() - interval '1 minute')")
    conn.execute("SELECT inventory.confirm('py-f1')")
    conn.execute("SELECT inventory.cancel('py-f2')")
    adm.execute("SELECT inventory.expire()")

    def states():
        return conn.execute("SELECT string_agg(order_id || ':' || state || ':' || coalesce(settled_by, '-'),"
                            " ' ' ORDER BY order_id) FROM orders WHERE order_id LIKE 'py-f%'").fetchone()[0]

    follow_feed(service)
    is_(states(), "py-f1:CONFIRMED:call py-f2:CANCELLED:call py-f3:PENDING:- py-flate:EXPIRED:expiry",
        "the consumer of the manual brings every decision into the order service's table")
    saved = one(conn, "SELECT cursor FROM feed_position")[0]
    ok(saved is not None, "and saves its cursor with them")
    follow_feed(service)
    is_(one(conn, "SELECT cursor FROM feed_position")[0], saved, "a second run finds nothing new")
    conn.execute("SELECT inventory.confirm('py-f3')")
    follow_feed(service)
    is_(states(), "py-f1:CONFIRMED:call py-f2:CANCELLED:call py-f3:CONFIRMED:call py-flate:EXPIRED:expiry",
        "the next run brings the next decision")
    e = raises(psycopg.Error, lambda: conn.execute("SELECT * FROM inventory.changes('0000000000000000-1-1-1-1')"))
    ok(e is not None and e.diag.sqlstate == "IV001", "a cursor of another feed: IV001 reaches the driver")
    service.close()


def reserve_now_section(conn, adm, mon, available):
    """reserve_now() as an application calls it: the status as a str, in
    autocommit; refused (25001) inside a transaction of the driver's."""
    def ledger(key):
        return one(adm, "SELECT kind, sku, qty, state, buyer_id, created_at, expires_at"
                   " FROM inventory.ledger WHERE order_id = %s AND batch_id = 1", [key])

    def rows_of(key):
        return one(adm, "SELECT count(*) FROM inventory.ledger WHERE order_id = %s", [key])[0]

    fallbacks = one(mon, "SELECT inventory.express_fallbacks()")[0]
    one(adm, "SELECT inventory.restock(%s, %s, %s)", ["PY-NOW", 6, "py-in-now"])

    # server-side binding: the arguments travel as parameters $1, $2...
    r = one(conn, "SELECT s, statement_timestamp() FROM inventory.reserve_now(%s, %s, %s, ttl => %s) s",
            ["PY-NOW", 2, "py-now-1", datetime.timedelta(minutes=10)])
    is_((type(r[0]), r[0]), (str, "ok"), "reserve_now in autocommit: 'ok', a str")
    is_(ledger("py-now-1"),
        ("reserve", "PY-NOW", 2, "PENDING", None, r[1], r[1] + datetime.timedelta(minutes=10)),
        "after 'ok' the ledger row is there: a PENDING reservation made at the statement's"
        " start, expiring ttl later")
    is_(available("PY-NOW"), 4, "its units are reserved")
    is_(one(conn, "SELECT inventory.reserve_now(%s, %s, %s)", ["PY-NOW", 2, "py-now-1"]), ("duplicate",),
        "the same key again: 'duplicate'")
    is_((available("PY-NOW"), rows_of("py-now-1")), (4, 1), "a duplicate changes nothing")
    is_(one(conn, "SELECT inventory.reserve_now(%s, %s, %s, buyer_id => %s)", ["PY-NOW-NONE", 1, "py-now-x", "ann"]),
        ("unknown_sku",), "an unknown SKU: 'unknown_sku', with buyer_id => %s")
    is_(one(conn, "SELECT inventory.reserve_now(%s, %s, %s)", ["PY-NOW", 1, "py-now-bin"], binary=True),
        ("ok",), "binary=True: the status is a str too")

    e = raises(errors.UniqueViolation,
               lambda: conn.execute("SELECT inventory.reserve_now(%s, %s, %s)", ["PY-NOW", 3, "py-now-1"]))
    ok(e is not None and 'reservation of 2 units of sku "PY-NOW"' in (e.diag.message_detail or ""),
       "a key reused for another movement: UniqueViolation (23505) with the original in its detail,"
       " as reserve() raises it")
    e = raises(errors.NullValueNotAllowed,
               lambda: conn.execute("SELECT inventory.reserve_now(%s, %s, %s)", [None, 1, "py-now-null"]))
    ok(e is not None and e.diag.message_primary == "sku must not be null",
       "None as the sku: NullValueNotAllowed (22004)")

    # a server-side prepared statement, every call: ok until sold out, then
    # insufficient (a result, not an error); a replay is still a duplicate
    before = available("PY-NOW")
    q = "SELECT inventory.reserve_now(%s, 1, %s)"
    statuses = [conn.execute(q, ["PY-NOW", f"py-now-p{i}"], prepare=True).fetchone()[0]
                for i in range(before + 3)]
    is_(statuses, ["ok"] * before + ["insufficient"] * 3,
        f"prepare=True, {before + 3} calls on {before} units: {before} 'ok', then 'insufficient'")
    is_(conn.execute(q, ["PY-NOW", "py-now-p0"], prepare=True).fetchone(), ("duplicate",),
        "sold out, a replay through the prepared statement is still 'duplicate'")
    ok(one(conn, "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
           ["%inventory.reserve_now($1, 1, $2)%"])[0] == 1,
       "psycopg prepared it on the server")
    is_((available("PY-NOW"),
         one(adm, "SELECT count(*) FROM inventory.ledger WHERE order_id LIKE %s", ["py-now-p%"])[0]),
        (0, before), "sold out, one ledger row per 'ok'")

    # client-side binding, as behind a pooler in transaction mode
    one(adm, "SELECT inventory.restock(%s, %s, %s)", ["PY-NOW2", 20, "py-in-now2"])
    key = "py-now-'quote' été"
    with ClientCursor(conn) as cur:
        cur.execute("SELECT inventory.reserve_now(%s, %s, %s)", ["PY-NOW2", 1, key])
        is_(cur.fetchone(), ("ok",), "ClientCursor (client-side binding): 'ok'")
    is_(rows_of(key), 1, "and the key with a quote and non-ASCII lands exactly")

    # inside a transaction of the driver's: refused, and nothing is reserved
    before = available("PY-NOW2")
    tx = connect(APP)   # psycopg's default: BEGIN before the first statement
    e = raises(errors.ActiveSqlTransaction,
               lambda: tx.execute("SELECT inventory.reserve_now(%s, %s, %s)", ["PY-NOW2", 1, "py-now-tx"]))
    ok(e is not None and e.diag.sqlstate == "25001"
       and e.diag.message_primary == "inventory.reserve_now() cannot run inside a transaction block",
       "in a psycopg transaction (autocommit off): ActiveSqlTransaction, 25001")
    is_(e and e.diag.message_hint, "Call it outside the transaction, in autocommit (psycopg: connection.autocommit = True; node-postgres and psql: without BEGIN), or use inventory.reserve(), which commits with the transaction around it.",
        "with the hint to use autocommit, or reserve()")
    ok(raises(errors.InFailedSqlTransaction, lambda: tx.execute("SELECT 1")) is not None,
       "the transaction is aborted (25P02) until rollback")
    tx.rollback()
    with tx.transaction():
        tx.execute("SELECT inventory.reserve(%s, %s, %s)", ["PY-NOW2", 1, "py-tx-for-now"])
    is_(rows_of("py-tx-for-now"), 1, "after rollback the connection works, and reserve() commits with it")
    tx.close()
    e = None
    try:
        with conn.transaction():
            conn.execute("SELECT inventory.reserve_now(%s, %s, %s)", ["PY-NOW2", 1, "py-now-tx"])
    except errors.ActiveSqlTransaction as x:
        e = x
    ok(e is not None, "in conn.transaction() on an autocommit connection: 25001 too")
    e = raises(errors.ActiveSqlTransaction,
               lambda: conn.execute("SELECT inventory.reserve_now('PY-NOW2', 1, 'py-now-tx'); SELECT 1"))
    ok(e is not None and "transaction block" in e.diag.message_primary,
       "two statements in one query string (an implicit transaction block): 25001")
    is_((available("PY-NOW2"), rows_of("py-now-tx")), (before - 1, 0),
        "the refused calls reserved nothing (the one unit is reserve()'s)")

    # pipeline mode: the statements up to a sync share an implicit
    # transaction, which the server marks once its first statement has run
    # (as for VACUUM): the first call commits on its own, the next is refused
    e = None
    try:
        with conn.pipeline():
            for i in range(3):
                conn.execute("SELECT inventory.reserve_now(%s, %s, %s)", ["PY-NOW2", 1, f"py-now-pipe-{i}"])
    except errors.ActiveSqlTransaction as x:
        e = x
    ok(e is not None and e.diag.message_primary == "inventory.reserve_now() cannot run in a pipeline",
       "pipeline mode: the second call is refused, 25001")
    is_([rows_of(f"py-now-pipe-{i}") for i in range(3)], [1, 0, 0],
        "pipeline mode: the first call committed on its own, the others reserved nothing")
    e = None
    try:
        with conn.pipeline():
            conn.execute("SELECT inventory.reserve(%s, %s, %s)", ["PY-NOW2", 1, "py-pipe-r"])
            conn.execute("SELECT inventory.reserve_now(%s, %s, %s)", ["PY-NOW2", 1, "py-now-pipe-w"])
    except errors.ActiveSqlTransaction as x:
        e = x
    ok(e is not None and e.diag.message_primary == "inventory.reserve_now() cannot run in a pipeline",
       "after a reserve() in the same pipeline: 25001")
    is_((rows_of("py-pipe-r"), rows_of("py-now-pipe-w")), (0, 0), "and neither reserved")
    got = None
    try:
        with conn.pipeline():
            c1 = conn.execute("SELECT inventory.reserve_now(%s, %s, %s)", ["PY-NOW2", 1, "py-now-pipe-e"])
            conn.execute("SELECT 1 / 0")
    except errors.DivisionByZero:
        got = c1.fetchone()
    is_((got, rows_of("py-now-pipe-e")), (("ok",), 1),
        "an 'ok' stands when a later statement of its pipeline fails: the row is there")

    # executemany sends its calls in one pipeline: refused from the second
    e = None
    try:
        with conn.cursor() as cur:
            cur.executemany("SELECT inventory.reserve_now(%s, %s, %s)",
                            [("PY-NOW2", 1, f"py-now-many-{i}") for i in range(3)], returning=True)
    except errors.ActiveSqlTransaction as x:
        e = x
    ok(e is not None and e.diag.message_primary == "inventory.reserve_now() cannot run in a pipeline",
       "executemany(): the second call is refused, 25001")
    is_([rows_of(f"py-now-many-{i}") for i in range(3)], [1, 0, 0],
        "executemany(): only the first call reserved")

    # threads racing for the last units, each call committed on its own
    one(adm, "SELECT inventory.restock(%s, %s, %s)", ["PY-NOW-HOT", 50, "py-in-now-hot"])
    THREADS, CALLS = 16, 12
    answers = race("SELECT inventory.reserve_now('PY-NOW-HOT', 1, %s)", "py-now-hot", THREADS, CALLS)
    is_((answers.count("ok"), answers.count("insufficient"), len(answers)),
        (50, THREADS * CALLS - 50, THREADS * CALLS),
        f"{THREADS} threads, {THREADS * CALLS} reserve_now calls of 1 of 50 units: exactly 50 'ok'")
    is_(one(adm, "SELECT count(*), sum(qty) FROM inventory.ledger WHERE sku = 'PY-NOW-HOT' AND kind = 'reserve'"),
        (50, 50), "50 ledger rows, one per 'ok'")

    # every call went through the express lane: the writer wrote each row
    is_(one(mon, "SELECT inventory.express_fallbacks()")[0], fallbacks,
        "no call fell back to a transaction of its own")
    is_(one(mon, "SELECT s.rows FROM inventory.express_status s WHERE s.datname = current_database()"),
        one(adm, "SELECT count(*) FROM inventory.ledger WHERE order_id LIKE %s AND kind = 'reserve'", ["py-now-%"]),
        "express_status: the database's writer wrote every row answered 'ok'")
    is_((available("PY-NOW-HOT"), one(adm, "SELECT count(*) FROM inventory.verify('30 s')")[0]), (0, 0),
        "available 0, and verify() returns no rows")


try:
    main()
except Exception:
    # an error outside any test's expectations: a failed test, not a crash
    ok(False, "the suite ran to the end")
    print("# " + traceback.format_exc().replace("\n", "\n# "), flush=True)
finally:
    superuser.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(DB)))
    superuser.close()
    print(f"1..{tests}")

raise SystemExit(1 if failed else 0)

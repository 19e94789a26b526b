#!/usr/bin/python3
"""bench/report.py -- the benchmark's report and pictures, from its data.

Usage:
  bench/report.py DATA.json [--out REPORT.md]
  bench/report.py --records RECORDS.jsonl DATA.json [--out REPORT.md]

Reads the data of one run of bench/run.py (bench/results/latest.json, or a
dated copy of it) and writes the Markdown report (default: DATA with .md for
.json) and, beside it, its two pictures REPORT-tps.svg (TPS per case against
clients) and REPORT-ratios.svg (each target: measured against its target).
Without matplotlib the report still comes out, and says it has no pictures.
With --records, first gathers the records that bench/run.py appended as it
ran (one JSON object a line) into DATA.json.

Exits 0; 1 when the data shows a failure (a case without a number, a failed
check, an error, case 8, 8r or 9 without its figures) or the pictures could
not be drawn, the report being written all the same; 2 when there is no
report (usage, data that cannot be read).

The targets, their thresholds and how they are judged are in TARGETS below,
and nowhere else.  A ratio is the TPS of a case over the TPS of its baseline
at the same client count; targets are judged at settings.target_clients on
the value as the report shows it (a ratio to 2 decimals, 3 under 0.1), in
the table of the run and, for those run again in rounds, on the median of
the rounds' ratios as shown (an even count: the mean of the middle two).

The data (format 1), one JSON object:

  format        1
  run           the run: commit (git rev-parse HEAD of the tree measured, or
                null), dirty (true when that tree had uncommitted changes),
                branch, command (the command line, quoted to paste),
                started_utc, finished_utc ("YYYY-MM-DDTHH:MM:SSZ")
  machine       cores (nproc), memory_kib (MemTotal), cpu_model, kernel
                (uname -srm), os, postgres (postgres --version), redis
                (redis-server --version, or null), fdatasync_per_s (the
                fdatasync rate that pg_test_fsync measured on the cluster's
                file system), fsync_test_s (its -s; 0: not
                measured, as in a smoke run)
  settings      smoke (true for --smoke), duration_s, transactions_per_client
                (a smoke run's length of a run, or null), warmup_s (0: none),
                clients [numbers], cases [ids selected], all_cases [every
                id, in run.py's order], rounds, round_cases [ids run in
                rounds], target_clients (the client count of the targets and
                the rounds), pgbench (its options), synchronous_commit and
                fsync (as the server reported them), max_skus, nskus (case
                6's SKUs), backlog (case 8), settled (case 9), batch (case
                10's reservations per call), limit_per_buyer and buyers (case
                4b), load_restarts (case 9's restarts per phase),
                expire_batch, expiry_clients and expiry_load_s (cases 8 and
                8r: the worker's batch, and the clients and the length of
                each run of the case 4 load they clear under)
  measurements  [one per case and client count] case, clients, status ("ok",
                "failed" or "skipped"), and when ok: tps (transactions per
                second as the tool measured them: pgbench script runs,
                redis-benchmark calls; case 10: calls of reserve_many, which
                the report multiplies by settings.batch), latency_ms (mean),
                transactions (of the measured run), warmup_transactions;
                when failed: detail (the first error of its log)
  rounds        [one per round and case] round (1..), case, clients, status,
                tps, latency_ms, transactions (or detail)
  case8         (when case 8 ran) backlog, seconds (from switching the worker
                on until the backlog's units were back on sale; null: not
                within 600 s), load_tps (the case 4 load meanwhile: the mean
                of its runs), load_runs (runs of expiry_load_s, one after the
                other until the backlog was cleared; absent: 1),
                load_started_s_before (the load's head start on the clock),
                worker_cpu_s, autovacuum_cpu_s, autovacuum_workers (CPU while
                it cleared, sampled from /proc every cpu_sample_s)
  case8r        (when case 8r ran) the figures of case8, for the same backlog
                cleared with a reconciler set, and reconciler (the function
                set with inventory.set_reconciler, which looks the order up
                in one indexed table and answers expire), reconcile_budget
                (inventory.reconcile_budget as the server showed it),
                reconcile_expired and reconcile_other (what
                inventory.reconcile_stats counted for the database while it
                cleared: reservations expired, and those confirmed,
                cancelled, made to wait or whose ask failed)
  case8f        (when case 8f ran) the figures of case8, for the same backlog
                cleared with inventory.change_feed on
  case9         (when case 9 ran) settled, restarts, autovacuum_during_fold
                (autovacuum processed inventory.ledger while the loads right
                after the fold were timed), bytes_per_sku (cache_info()'s
                bytes_per_entry), loads [phase ("fold": right after the
                fold, "vacuum": after VACUUM), restart (1..), sku
                (LOAD-FULL or LOAD-EMPTY), ms (the first available() after
                the restart), available (what it returned)]
  case14        (when case 14 ran) flips, samples, p50_ms, p99_ms, max_ms
                (from a call's answer until the listener heard the state it
                left), missed (not heard within 2 s), gap_ms (between calls)
  case15        (when case 15 ran) clients, seconds, load_tps (case 4f's
                load meanwhile), rows (read by the consumer), p50_ms, p99_ms,
                max_ms (from a reservation's statement to its row's read)
  case14b       (when case 14b ran) the figures of case14, measured while
                the worker cleared backlog overdue reservations, and
                flips_made (the flips made before the backlog's units were
                all back on sale), left_after (overdue reservations left
                when the last flip was heard: more than 0 when every flip
                ran during the clearing)
  checks        [name, ok (true/false)], in the order they were made
  notes         [text] for the report, as they came (e.g. Redis skipped)
  errors        [text] what went wrong outside the checks

Numbers are JSON numbers; a figure that was not measured is null.  Runs
with Debian's python3 (/usr/bin/python3), whose python3-matplotlib draws
the pictures (bench/pictures.py).
"""
import argparse
import datetime
import json
import os
import statistics
import sys

FORMAT = 1

# ---------------------------------------------------------------- the cases
# What each case is, in the report's order (cases 8, 8r and 9 have sections
# of their own); {nskus}, {limit}, {batch}: from the settings.
NAMES = {
    "1": "1 floor: SELECT 1",
    "1b": "1b floor: SELECT * FROM a C function returning a row",
    "1k": "1k floor: SELECT of a random order key",
    "1c": "1c floor: SELECT of an absent key by the ledger's primary key",
    "2a": "2a SQL: conditional UPDATE, one hot row",
    "2b": "2b SQL: UPDATE + ledger INSERT, one transaction",
    "2c": "2c SQL: SELECT FOR UPDATE + UPDATE",
    "2d": "2d SQL: ledger INSERT alone",
    "2e": "2e SQL: INSERT into a copy of inventory.ledger (its 3 indexes)",
    "2f": "2f SQL: the same INSERT ... ON CONFLICT DO NOTHING",
    "3": "3 Redis: EVALSHA check-and-DECRBY (in memory)",
    "3d": "3d Redis: 3 with appendonly yes, appendfsync always (durable)",
    "4": "4 inventory: reserve, hot SKU, succeeds",
    "4b": "4b inventory: 4 with max_per_buyer {limit}, a new buyer per call",
    "4n": "4n inventory: 4 in a database with inventory.stock_notifications on",
    "4f": "4f inventory: 4 in a database with inventory.change_feed on",
    "5": "5 inventory: reserve, hot SKU, sold out",
    "6": "6 inventory: reserve, {nskus} SKUs uniform",
    "7": "7 inventory: reserve + confirm/cancel/expire",
    "10": "10 inventory: reserve_many of {batch}, hot SKU (reservations/s)",
    "13": "13 inventory: reserve_now, hot SKU, succeeds",
    "13s": "13s inventory: reserve_now, hot SKU, sold out",
    "13r": "13r inventory: reserve_now_result, hot SKU, the whole result row",
    "13f": "13f inventory: 13 in a database with inventory.change_feed on",
    "13u": "13u inventory: reserve_now, {nskus} SKUs uniform",
    "11": "11 router: case 4 through inventory_router",
    "11b": "11b router: 11 on a SKU split over 2 buckets",
    "11c": "11c router: 11 on a SKU split over 4 buckets",
    "12": "12 router: case 5 through inventory_router",
    "12c": "12c router: 12 on a SKU split over 4 buckets, sold out",
}
# each case's baseline in the table of every run
BASE = {"1b": "1", "1k": "1", "1c": "1", "2a": "1", "2b": "1", "2c": "1", "2d": "1",
        "2e": "2d", "2f": "2d", "3": "1", "3d": "3", "4": "2b", "4b": "4", "4n": "4", "4f": "4", "5": "1",
        "6": "2b", "7": "2b", "10": "3d", "13": "4", "13s": "5", "13u": "6", "13r": "13", "13f": "13",
        "11": "4", "11b": "11", "11c": "11",
        "12": "5", "12c": "12"}
ROUTER = ["11", "11b", "11c", "12", "12c"]
# the rows of case 8's section when case 8r ran
EXPIRY_NAMES = {"8": "8", "8r": "8r with a reconciler (one indexed lookup per order)",
                "8f": "8f with the change feed on"}


# ---------------------------------------------------------------- the targets
class Target:
    """A target, or a bound reported beside the targets (no goal).

    measure: "ratio" (TPS of case `of` over TPS of case `to`, at the target
    client count), "p99_ratio" (their 99th percentiles of latency, at the
    target client count), "p50_extra" (case `of`'s median latency minus case
    `to`'s, in ms, at 1 client), "bound" (case `of`'s TPS over the most a
    call could reach if it cost a round trip with a key, case `to`, plus a
    row written in a batch, case `also`, and nothing else), or one of case
    8's and 9's figures: "expiry_rate" (rows
    per second), "load_ratio_fold", "load_ratio_vacuum" (LOAD-FULL over
    LOAD-EMPTY, medians of the restarts) and "bytes_per_sku".
    in_run: shown in the table of the run; rounds: its place in the table of
    rounds (0: not run in rounds), rounds_text its words there if other."""

    def __init__(self, text, of, to=None, op=None, goal=None, measure="ratio",
                 in_run=True, rounds=0, rounds_text=None, also=None):
        self.text, self.of, self.to, self.op, self.goal = text, of, to, op, goal
        self.measure, self.in_run, self.rounds = measure, in_run, rounds
        self.rounds_text = rounds_text or text
        self.also = also

    def cases(self):
        return [c for c in (self.of, self.to, self.also) if c]


TARGETS = [
    Target("case 4 ≥ 10× case 2b", "4", "2b", ">=", 10, rounds=4),
    Target("case 4 ≥ 0.8× case 2d", "4", "2d", ">=", 0.8, rounds=5),
    Target("(case 4 / case 2e: a reserve against the bare insert of its own row)",
           "4", "2e", rounds=7),
    Target("(case 4 / case 2f: a reserve against the insert of its own row that answers a replay)",
           "4", "2f"),
    Target("case 4b ≥ 0.8× case 4 (a limit per buyer, a new buyer per call)",
           "4b", "4", ">=", 0.8),
    Target("case 4n ≥ 0.95× case 4 (LISTEN inventory_stock on: within noise)", "4n", "4", ">=",
           0.95, rounds=11),
    Target("(case 4f / case 4: the change feed on, a row of the feed per reservation)", "4f", "4",
           rounds=12),
    Target("case 5 ≥ 0.9× case 1", "5", "1", ">=", 0.9, rounds=1),
    Target("(case 5 / case 1k: a refusal against a round trip that carries its key)",
           "5", "1k", rounds=3),
    Target("(case 1k / case 1: the round trip with a key against the bare one)", "1k", "1",
           rounds=2, rounds_text="(case 1k / case 1: the round trip with a key against the"
           " bare one, the most case 5 can reach)"),
    Target("(case 1c / case 1: the key's index probe alone, in SQL)", "1c", "1"),
    Target("(case 5 / case 1c: a refusal against the probe of its key)", "5", "1c"),
    Target("case 6 ≥ 1.0× case 2b", "6", "2b", ">=", 1.0),
    Target("case 10 reservations/s ≥ 1.0× case 3d calls/s (reserve_many of {batch} against"
           " durable Redis)", "10", "3d", ">=", 1.0),
    Target("(case 10 / case 4: reservations/s in batches of {batch} against one reserve per call)",
           "10", "4"),
    Target("(case 3d / case 3: Redis durable against in memory)", "3d", "3"),
    Target("case 13 ≥ 3× case 4 (reserve_now against reserve, one reservation per call)",
           "13", "4", ">=", 3, rounds=8),
    Target("case 13 ≥ 0.75× case 3d (reserve_now against durable Redis; stretch)",
           "13", "3d", ">=", 0.75),
    Target("(case 13 / the most a call can reach at the cost of a round trip with a key, case 1k,"
           " and a row written in a batch, case 10, with a hand-off that costs nothing)",
           "13", "1k", measure="bound", also="10"),
    Target("case 13s ≥ 0.9× case 1 (reserve_now's sold-out refusal)", "13s", "1", ">=", 0.9,
           rounds=9),
    Target("(case 13s / case 1k: reserve_now's refusal against a round trip that carries its key)",
           "13s", "1k", rounds=10),
    Target("case 13 99th percentile latency ≤ case 4's (ratio ≤ 1)", "13", "4", "<=", 1,
           measure="p99_ratio"),
    Target("case 13 median latency at 1 client ≤ case 4's + 0.1 ms (ms more)", "13", "4", "<=", 0.1,
           measure="p50_extra"),
    Target("case 13u ≥ 2× case 6 (reserve_now over many SKUs)", "13u", "6", ">=", 2),
    Target("(case 13r / case 13: reserve_now's whole result row against its status)", "13r", "13",
           rounds=13),
    Target("(case 13f / case 13: the change feed on, written by the express writer)", "13f", "13",
           rounds=14),
    Target("(case 2e / case 2d: the INSERT of the ledger's own row against the one-index"
           " INSERT, the most case 4 can reach)", "2e", "2d", in_run=False, rounds=6),
    Target("case 8 ≥ 20,000 rows/s", "8", op=">=", goal=20000, measure="expiry_rate"),
    Target("case 9 load ratio about 1 (≤ 2), right after the fold", "9", op="<=", goal=2,
           measure="load_ratio_fold"),
    Target("case 9 load ratio about 1 (≤ 2), after VACUUM", "9", op="<=", goal=2,
           measure="load_ratio_vacuum"),
    Target("case 14: LISTEN inventory_stock heard within 100 ms of the sale (99th percentile, ms)",
           "14", op="<=", goal=100, measure="notify_p99"),
    Target("case 14b: the same while the worker clears an expiry backlog (99th percentile, ms)",
           "14b", op="<=", goal=100, measure="notify_p99_backlog"),
    Target("case 9 bytes per SKU (with its rules) ≤ 288", "9", op="<=", goal=288,
           measure="bytes_per_sku"),
]


# ---------------------------------------------------------------- numbers
def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def fmt(v, decimals=0):
    """A number rounded, with thousands separators; text as it is; — for none."""
    if is_num(v):
        return f"{v:,.{decimals}f}"
    return "—" if v is None or v == "" else str(v)


def ratio(a, b):
    """a / b as the report shows it (2 decimals, 3 under 0.1), or —."""
    if not (is_num(a) and is_num(b)) or b <= 0:
        return "—"
    r = a / b
    return f"{r:.3f}" if r < 0.1 else f"{r:.2f}"


def shown(text):
    """The number a cell shows ("1,234", "0.75"), or None for —."""
    try:
        return float(text.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def verdict(text, op, goal):
    """PASS or MISS of a value as shown, or — without a value or a goal."""
    v = shown(text)
    if v is None or op is None:
        return "—"
    return "PASS" if (v >= goal if op == ">=" else v <= goal) else "MISS"


def median(values):
    """The median of numbers, or None when one of them is not a number."""
    if not values or not all(is_num(v) for v in values):
        return None
    return statistics.median(values)


# ---------------------------------------------------------------- the data
OBJECTS = ("run", "machine", "settings", "case8", "case8r", "case8f", "case9", "case14", "case14b", "case15")
LISTS = {"measurement": "measurements", "round": "rounds", "check": "checks"}
TEXTS = {"note": "notes", "error": "errors"}


def assemble(records_path):
    """The data document from bench/run.py's records, one JSON object a line:
    {"type": T, ...}; the objects of a type in OBJECTS merge into one, the
    others make lists.  A line that cannot be read becomes an error."""
    doc = {"format": FORMAT, "run": {}, "machine": {}, "settings": {},
           "measurements": [], "rounds": [], "checks": [], "notes": [], "errors": []}
    with open(records_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            kind = rec.pop("type")
        except (ValueError, KeyError, AttributeError) as e:
            doc["errors"].append(f"record {n} could not be read ({e}): {line[:200]}")
            continue
        if kind in OBJECTS:
            doc.setdefault(kind, {}).update(rec)
        elif kind in LISTS:
            doc[LISTS[kind]].append(rec)
        elif kind in TEXTS:
            doc[TEXTS[kind]].append(rec.get("text") or "")
        elif kind == "load":
            doc.setdefault("case9", {}).setdefault("loads", []).append(rec)
        else:
            doc["errors"].append(f"record {n} is of an unknown type {kind!r}")
    return doc


class Run:
    """The data of one run, with the lookups the report makes."""

    def __init__(self, doc):
        if doc.get("format") != FORMAT:
            raise ValueError(f"format {doc.get('format')!r}, not {FORMAT}")
        self.doc = doc
        self.meta = doc.get("run", {})
        self.machine = doc.get("machine", {})
        self.s = s = doc.get("settings", {})
        self.clients = s.get("clients", [])
        self.cases = s.get("cases", [])
        self.tc = s.get("target_clients") or (64 if 64 in self.clients else max(self.clients, default=0))
        self.batch = s.get("batch")
        self.m = {(r.get("case"), r.get("clients")): r for r in doc.get("measurements", [])}
        self.r = {(r.get("case"), r.get("round")): r for r in doc.get("rounds", [])}
        self.case8 = doc.get("case8")
        self.case8r = doc.get("case8r")
        self.case8f = doc.get("case8f")
        self.case9 = doc.get("case9")
        self.case14 = doc.get("case14")
        self.case14b = doc.get("case14b")
        self.case15 = doc.get("case15")
        self.checks = doc.get("checks", [])
        self.notes = doc.get("notes", [])
        self.errors = doc.get("errors", [])
        # the pgbench and redis-benchmark cases that ran, in the report's order
        self.ids = [c for c in NAMES if c in self.cases]

    def want(self, *ids):
        return all(i in self.cases for i in ids)

    def name(self, case):
        return NAMES[case].format(nskus=fmt(self.s.get("nskus")), limit=self.s.get("limit_per_buyer"),
                                  batch=self.batch)

    def text(self, words):
        return words.format(batch=self.batch)

    def _scaled(self, case, tps):
        # case 10: reservations per second, batch per call
        if case == "10" and is_num(tps) and is_num(self.batch):
            return tps * self.batch
        return tps

    def tps(self, case, c):
        """The TPS of a case at c clients (case 10: reservations/s), or None."""
        rec = self.m.get((case, c))
        return self._scaled(case, rec.get("tps")) if rec and rec.get("status") == "ok" else None

    def tps_cell(self, case, c):
        """The TPS as the tables show it: the number, FAILED, skipped or —."""
        rec = self.m.get((case, c))
        if rec is None:
            return "—"
        if rec.get("status") == "ok":
            return fmt(self.tps(case, c))
        return {"failed": "FAILED", "skipped": "skipped"}.get(rec.get("status"), "—")

    def calls(self, case, c):
        rec = self.m.get((case, c))
        return rec.get("tps") if rec and rec.get("status") == "ok" else None

    def latency(self, case, c):
        rec = self.m.get((case, c))
        return rec.get("latency_ms") if rec and rec.get("status") == "ok" else None

    def pct(self, case, c, key):
        rec = self.m.get((case, c))
        return rec.get(key) if rec and rec.get("status") == "ok" else None

    def round_tps(self, case, r):
        rec = self.r.get((case, r))
        return self._scaled(case, rec.get("tps")) if rec and rec.get("status") == "ok" else None

    # case 8, 8r and 9
    def expiry(self, case="8"):
        """The figures of case 8, 8r or 8f ({} when missing)."""
        return {"8r": self.case8r, "8f": self.case8f}.get(case, self.case8) or {}

    def expiry_seconds(self, case="8"):
        return self.expiry(case).get("seconds")

    def expiry_rate(self, case="8"):
        """Case 8's (or 8r's) rows per second, rounded as shown, or FAILED."""
        secs, n = self.expiry_seconds(case), self.expiry(case).get("backlog")
        if is_num(secs) and secs > 0 and is_num(n):
            return round(n / secs)
        return "FAILED"

    def load_median(self, phase, sku):
        loads = [x.get("ms") for x in (self.case9 or {}).get("loads", [])
                 if x.get("phase") == phase and x.get("sku") == sku]
        return median(loads)

    def measure(self, t):
        """A target's value as the report shows it."""
        if t.measure == "ratio":
            return ratio(self.tps(t.of, self.tc), self.tps(t.to, self.tc))
        if t.measure == "p99_ratio":
            return ratio(self.pct(t.of, self.tc, "p99_ms"), self.pct(t.to, self.tc, "p99_ms"))
        if t.measure == "p50_extra":
            a, b = self.pct(t.of, 1, "p50_ms"), self.pct(t.to, 1, "p50_ms")
            return f"{a - b:.3f}" if is_num(a) and is_num(b) else "—"
        if t.measure == "bound":
            a, b = self.tps(t.to, self.tc), self.tps(t.also, self.tc)
            most = 1 / (1 / a + 1 / b) if is_num(a) and is_num(b) and a > 0 and b > 0 else None
            return ratio(self.tps(t.of, self.tc), most)
        if t.measure == "expiry_rate":
            return fmt(self.expiry_rate())
        if t.measure.startswith("load_ratio_"):
            phase = t.measure[len("load_ratio_"):]
            return ratio(self.load_median(phase, "LOAD-FULL"), self.load_median(phase, "LOAD-EMPTY"))
        if t.measure == "bytes_per_sku":
            return fmt((self.case9 or {}).get("bytes_per_sku"))
        if t.measure == "notify_p99":
            return fmt((self.case14 or {}).get("p99_ms"), 1)
        if t.measure == "notify_p99_backlog":
            return fmt((self.case14b or {}).get("p99_ms"), 1)
        raise ValueError(t.measure)

    def failures(self):
        """What in the data makes the run a failure, in words."""
        out = []
        for case in self.ids:
            for c in self.clients:
                rec = self.m.get((case, c))
                if not rec or rec.get("status") not in ("ok", "skipped") \
                        or (rec.get("status") == "ok" and not is_num(rec.get("tps"))):
                    out.append(f"case {case} at {c} clients produced no number")
        for rec in self.doc.get("rounds", []):
            if rec.get("status") != "ok" or not is_num(rec.get("tps")):
                out.append(f"round {rec.get('round')}: case {rec.get('case')} produced no number")
        out += [f"check failed: {c.get('name')}" for c in self.checks if c.get("ok") is not True]
        out += [f"error: {e}" for e in self.errors]
        for case in ("8", "8r", "8f"):
            if self.want(case) and not is_num(self.expiry_rate(case)):
                out.append(f"case {case}: the backlog was not cleared (no time)")
        if self.want("14") and not is_num((self.case14 or {}).get("p99_ms")):
            out.append("case 14: no latency of the notifications")
        if self.want("15") and not is_num((self.case15 or {}).get("p99_ms")):
            out.append("case 15: no lag of the change feed's consumer")
        if self.want("14b") and not is_num((self.case14b or {}).get("p99_ms")):
            out.append("case 14b: no latency of the notifications")
        if self.want("9"):
            c9 = self.case9 or {}
            figures = [self.load_median(p, s) for p in ("fold", "vacuum")
                       for s in ("LOAD-FULL", "LOAD-EMPTY")] + [c9.get("bytes_per_sku")]
            if not all(is_num(v) for v in figures):
                out.append("case 9: a load time or the bytes per SKU is missing")
        return out


# ---------------------------------------------------------------- the report
def when(iso):
    """'2026-12-01T02:37:05Z' as '2026-12-01 02:37 UTC'."""
    try:
        t = datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%SZ")
    except (TypeError, ValueError):
        return iso or "?"
    return t.strftime("%Y-%m-%d %H:%M UTC")


def table(header, align, rows):
    """A Markdown table: align is one of "l", "r" a column."""
    out = ["| " + " | ".join(header) + " |",
           "|" + "".join("---|" if a == "l" else "---:|" for a in align)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def latency_table(c):
    """Cases 14 and 14b: how soon the listener heard each crossing of zero."""
    return table(["notifications", "median, ms", "99th percentile, ms", "most, ms", "missed"], "rrrrr",
                 [[fmt(c.get("samples")), fmt(c.get("p50_ms"), 1), fmt(c.get("p99_ms"), 1),
                   fmt(c.get("max_ms"), 1), fmt(c.get("missed"))]])


def report(run, pictures, stem):
    """The report's lines.  pictures: whether its pictures are drawn, named
    after stem (the report's file name without .md)."""
    s, mach, meta = run.s, run.machine, run.meta
    clients, tc = run.clients, run.tc
    L = []
    add = L.append

    def picture(alt, kind):
        if pictures:
            add("")
            add(f"![{alt}]({stem}-{kind}.svg)")

    add("# inventory benchmark")
    add("")
    if meta.get("commit"):
        state = {True: "with uncommitted changes", False: "as committed"}.get(
            meta.get("dirty"), "uncommitted changes unknown")
        branch = f" (branch {meta['branch']})" if meta.get("branch") else ""
        add(f"Commit: `{meta['commit']}`{branch}, {state}.")
    else:
        add("Commit: unknown (the tree measured was not a git checkout).")
    add("")
    add(f"Command: `{meta.get('command', 'bench/run.py')}` (run as root from the checkout;"
        f" {when(meta.get('finished_utc') or meta.get('started_utc'))})")
    add("")
    memory = mach.get("memory_kib")
    parts = [f"{mach.get('cores', '?')} cores"]
    if is_num(memory):
        parts.append(f"{memory / 1024 / 1024:.1f} GiB of memory")
    if mach.get("cpu_model"):
        parts.append(mach["cpu_model"])
    what = ", ".join(parts)
    system = "; ".join(x for x in (mach.get("os"), mach.get("kernel")) if x)
    if mach.get("fsync_test_s") == 0:
        fsync = " fdatasync not measured (a smoke run)."
    else:
        fsync = (f" fdatasync {fmt(mach.get('fdatasync_per_s'))} ops/s"
                 f" (`pg_test_fsync -s {mach.get('fsync_test_s', '?')}` on the cluster's file system).")
    add(f"Machine: {what}{'; ' + system if system else ''}; {mach.get('postgres', 'PostgreSQL ?')};"
        + fsync)
    add("")
    warm = s.get("warmup_s") or 0
    length = (f"{s['transactions_per_client']} transactions per client"
              if s.get("transactions_per_client") else f"{s.get('duration_s')} s")
    add(f"Each run: pgbench {s.get('pgbench', '-M prepared -j 2')}, {length}"
        + (f" after a {warm} s warm-up" if warm > 0 else ", no warm-up")
        + f", on one scratch cluster with the server defaults (synchronous_commit ="
        f" {s.get('synchronous_commit', '?')}, fsync = {s.get('fsync', '?')}), plus"
        f" inventory.max_skus = {s.get('max_skus', '?')}. TPS are transactions (pgbench script runs)"
        " per second; a ratio is TPS divided by the TPS of the named baseline at the same client count.")
    if run.want("3") or run.want("3d"):
        add("Cases 3 and 3d: redis-benchmark -c CLIENTS --threads 2 over TCP on 127.0.0.1,"
            f" a request count sized to last {s.get('duration_s')} s; TPS are calls per second.")
    if run.want("10"):
        add(f"Case 10: TPS are reservations per second, {run.batch} per call (calls per second"
            f" × {run.batch}); its latency is that of a call of {run.batch}.")
    if run.cases != s.get("all_cases", run.cases):
        add("")
        add(f"Only cases {' '.join(run.cases)} (`--cases`).")
    if run.notes:
        add("")
        add(" ".join(run.notes))
    if not pictures:
        add("")
        add("matplotlib is not available here: no pictures.")

    # every case at every client count
    add("")
    add("## Throughput (TPS)")
    add("")
    L += table(["case"] + [f"{c} client{'s' if c > 1 else ''}" for c in clients],
               "l" + "r" * len(clients),
               [[run.name(i)] + [run.tps_cell(i, c) for c in clients] for i in run.ids])
    picture("TPS per case against clients", "tps")
    add("")
    add("## Each case and client count")
    add("")
    rows = []
    for i in run.ids:
        b = BASE.get(i)
        for c in clients:
            rows.append([run.name(i), c, run.tps_cell(i, c), fmt(run.latency(i, c), 3),
                         ratio(run.tps(i, c), run.tps(b, c)) if b else "—",
                         f"case {b}" if b else "—"])
    L += table(["case", "clients", "TPS", "mean latency (ms)", "ratio", "baseline"], "lrrrrl", rows)

    expiry = [i for i in ("8", "8r", "8f") if run.want(i)]
    if expiry:
        # with 8r or 8f, each table has a row per case, which its first column names
        with_8r = len(expiry) > 1
        first = run.expiry(expiry[0])
        backlog = first.get("backlog", s.get("backlog"))
        load_clients = s.get("expiry_clients", 32)
        add("")
        add("## 8: expiry backlog")
        add("")
        add(f"{fmt(backlog)} overdue PENDING reservations (inserted with the worker off) cleared by the"
            f" worker (inventory.expire_batch = {s.get('expire_batch', 10000)}) while case 4 runs at"
            f" {load_clients} clients; timed from switching inventory.worker_enabled on until all the"
            " backlog's units are back on sale (`inventory.available()` polled every 10 ms).")
        if "8f" in expiry:
            add("")
            add("Case 8f: the same backlog, of a SKU of its own, cleared the same way with"
                " inventory.change_feed on for the database: each expiry also writes a row of the change"
                " feed.")
        if "8r" in expiry:
            c8r = run.expiry("8r")
            budget = c8r.get("reconcile_budget") or "?"
            add("")
            add("Case 8r: the same backlog, of a SKU and orders of its own, cleared the same way with a"
                f" reconciler set (`inventory.set_reconciler('{c8r.get('reconciler') or '?'}')`): the"
                " expiry asks it about each overdue order before it settles it, at most 63 orders a"
                f" transaction and inventory.reconcile_budget = {budget} of asking a round. It looks the"
                " order up in a payments table by its primary key (one indexed lookup; every order"
                " unpaid) and answers `expire`, so that every reservation ends EXPIRED as in case 8:"
                " the difference is the cost of asking.")
        add("")
        head_cells, rows = [], []
        for i in expiry:
            c = run.expiry(i)
            secs = run.expiry_seconds(i)
            # the load started this long before the clock: did it last the clearing?
            late = ""
            head = c.get("load_started_s_before", 1)
            load_s = s.get("expiry_load_s")
            if is_num(secs) and is_num(load_s) and secs + head > load_s * c.get("load_runs", 1):
                late = " (the load ended before the backlog was cleared)"
            row = [fmt(c.get("backlog", backlog)), fmt(secs if is_num(secs) else "FAILED", 2),
                   fmt(run.expiry_rate(i))]
            if with_8r:
                row = [EXPIRY_NAMES[i]] + row + [
                    ratio(run.expiry_rate(i), run.expiry_rate("8")) if i != "8" else "—"]
            rows.append(row + [fmt(c.get("load_tps")) + late])
        if with_8r:
            head_cells = ["case"]
        L += table(head_cells + ["backlog", "seconds", "rows/s"]
                   + (["rows/s against 8"] if with_8r else [])
                   + [f"case 4 TPS at {load_clients} clients meanwhile"],
                   ("l" if with_8r else "") + "rrr" + ("r" if with_8r else "") + "r", rows)
        add("")
        add("The database was vacuumed and checkpointed first, so that nothing the earlier cases left"
            f" competes with the worker. Meanwhile (sampled from /proc every {first.get('cpu_sample_s', 0.1):g} s):")
        add("")
        rows = []
        for i in expiry:
            c = run.expiry(i)
            secs, n = run.expiry_seconds(i), c.get("backlog", backlog)
            w, n_av, cpu_av = c.get("worker_cpu_s"), c.get("autovacuum_workers"), c.get("autovacuum_cpu_s")
            if is_num(secs) and is_num(w) and w > 0 and is_num(n):
                row = [fmt(w, 2), f"{100 * w / secs:.0f}%", fmt(round(n / w)),
                       fmt(n_av if is_num(n_av) else 0), fmt(cpu_av if is_num(cpu_av) else 0, 2)]
            else:
                row = ["—", "—", "—", fmt(n_av), fmt(cpu_av, 2)]
            rows.append(([EXPIRY_NAMES[i]] if with_8r else []) + row)
        L += table(head_cells + ["worker CPU, s", "worker's share of the clearing", "rows per worker CPU-second",
                                 "autovacuum workers", "their CPU, s"], ("l" if with_8r else "") + "rrrrr", rows)

    if run.want("15"):
        c15 = run.case15 or {}
        add("")
        add("## 15: the change feed's lag")
        add("")
        add(f"While case 4f runs at {fmt(c15.get('clients'))} clients for {fmt(c15.get('seconds'))} s in its"
            " database (inventory.change_feed on), a consumer follows inventory.changes() from the end of"
            " the feed in batches of up to 1000 rows, without pause while rows come (bench/feed_lag.py,"
            " psycopg). The lag of a row: from its reservation's statement start to the consumer's read.")
        add("")
        L += table(["case 4f TPS meanwhile", "rows read", "p50 (ms)", "p99 (ms)", "max (ms)"], "rrrrr",
                   [[fmt(c15.get("load_tps")), fmt(c15.get("rows")), fmt(c15.get("p50_ms"), 1),
                     fmt(c15.get("p99_ms"), 1), fmt(c15.get("max_ms"), 1)]])

    if run.want("14"):
        c14 = run.case14 or {}
        add("")
        add("## 14: sold out as an event")
        add("")
        add(f"A SKU of one unit taken with reserve() and given back with cancel(), {fmt(c14.get('flips'))}"
            f" times each, {fmt(c14.get('gap_ms'))} ms apart, in a database with"
            " inventory.stock_notifications on; a listener (LISTEN inventory_stock) waits for each"
            " crossing of zero. Latency: from the call's answer until the listener read the state it"
            " left (bench/notify_latency.py).")
        add("")
        L += latency_table(c14)

    if run.want("14b"):
        c14b = run.case14b or {}
        add("")
        add("## 14b: sold out as an event, while the worker clears a backlog")
        add("")
        add(f"Case 14 ({fmt(c14b.get('flips'))} flips, {fmt(c14b.get('gap_ms'))} ms apart) in a database of"
            f" its own where the worker clears {fmt(c14b.get('backlog', s.get('notify_backlog')))} overdue"
            " PENDING reservations meanwhile (inserted with the worker off, as in case 8, and expired in"
            " batches of at most the default inventory.expire_batch, shorter while a batch takes over"
            " 50 ms): the worker sends the notes between any two of its transactions, so a notification"
            " waits for at most one of them. The flips run while the"
            f" backlog lasts: {fmt(c14b.get('flips_made'))} were made, and"
            f" {fmt(c14b.get('left_after'))} overdue reservations were left after the last.")
        add("")
        L += latency_table(c14b)

    if run.want("9"):
        c9 = run.case9 or {}
        add("")
        add("## 9: cache load after restart")
        add("")
        during = " (autovacuum processed inventory.ledger meanwhile)" if c9.get("autovacuum_during_fold") else ""
        add("First `inventory.available(sku)` in a fresh session after a server restart, timed on the"
            f" server; median of {c9.get('restarts', s.get('load_restarts'))} restart(s). LOAD-FULL has"
            f" {fmt(c9.get('settled', s.get('settled')))} restock movements of 1 unit, all settled and"
            " folded (`inventory.fold()` until 0); LOAD-EMPTY has none. Measured right after the"
            f" fold{during}, then again after `VACUUM inventory.ledger`.")
        add("")
        rows = []
        for phase, words in (("fold", "right after the fold"), ("vacuum", "after VACUUM")):
            full, empty = run.load_median(phase, "LOAD-FULL"), run.load_median(phase, "LOAD-EMPTY")
            rows.append([words, fmt(empty, 3), fmt(full, 3), ratio(full, empty)])
        L += table(["when", "LOAD-EMPTY (ms)", "LOAD-FULL (ms)", "ratio"], "lrrr", rows)
        add("")
        add(f"Shared memory per cached SKU (`inventory.cache_info()`): {fmt(c9.get('bytes_per_sku'))} bytes.")

    if run.want("10"):
        add("")
        add("## 10: batched admission against durable Redis")
        add("")
        add(f"One pgbench transaction is one call of `inventory.reserve_many` with {run.batch} reservations"
            " of 1 unit of HOT-MANY, each under a key of its own, committed together; against case 3d's"
            " calls of the check-and-DECRBY script on a Redis that fsyncs its AOF at every write.")
        add("")
        rows = [[c, fmt(run.calls("10", c)), run.tps_cell("10", c), fmt(run.latency("10", c), 3),
                 run.tps_cell("3d", c), ratio(run.tps("10", c), run.tps("3d", c))] for c in clients]
        L += table(["clients", "calls/s", "reservations/s", "mean latency of a call (ms)",
                    "case 3d calls/s", "ratio"], "rrrrrr", rows)

    if run.want("13"):
        add("")
        add("## 13: the express lane")
        add("")
        add("One pgbench transaction is one call of `inventory.reserve_now`, one reservation of 1 unit of"
            " HOT-NOW under a key of its own, committed by the database's express writer in a batch with"
            " the calls that arrived meanwhile and durable when it answers; against case 4's `reserve()`,"
            " a transaction per call, and case 3d's durable Redis. Latency percentiles from pgbench's"
            " log of every transaction.")
        add("")
        rows = [[c, run.tps_cell("13", c), run.tps_cell("4", c), ratio(run.tps("13", c), run.tps("4", c)),
                 run.tps_cell("3d", c), ratio(run.tps("13", c), run.tps("3d", c)),
                 fmt(run.pct("13", c, "p50_ms"), 3), fmt(run.pct("4", c, "p50_ms"), 3),
                 fmt(run.pct("13", c, "p99_ms"), 3), fmt(run.pct("4", c, "p99_ms"), 3)] for c in clients]
        L += table(["clients", "case 13 calls/s", "case 4", "13 / 4", "case 3d", "13 / 3d",
                    "p50 13 (ms)", "p50 4 (ms)", "p99 13 (ms)", "p99 4 (ms)"], "rrrrrrrrrr", rows)

    routed = [i for i in ROUTER if run.want(i)]
    if routed:
        lo = min(clients)
        add("")
        add("## 11-12c: the router")
        add("")
        add("The same reserve through `inventory_router` (PL/Proxy) to four partition databases on this"
            " server, against the call made directly (case 4, 5), and on hot SKUs split over 2 and 4 buckets"
            " (12c: sold out, each router session asking the other buckets again once a second)."
            f" Router, partitions and pgbench share the machine's {mach.get('cores', '?')} cores: these are"
            " the costs of a routed call, not the capacity of more servers. Extra latency per call at"
            f" {lo} client(s): the routed call's mean latency minus the direct one's.")
        add("")
        rows = []
        for i in routed:
            b = "5" if i.startswith("12") else "4"
            la, lb = run.latency(i, lo), run.latency(b, lo)
            rows.append([run.name(i), tc, run.tps_cell(i, tc), run.tps_cell(b, tc),
                         ratio(run.tps(i, tc), run.tps(b, tc)),
                         f"{la - lb:.3f}" if is_num(la) and is_num(lb) else "—"])
        L += table(["call", "clients", "TPS", "direct TPS", "ratio",
                    f"extra latency per call at {lo} client(s) (ms)"], "lrrrrr", rows)

    # the targets, at the target client count
    add("")
    add(f"## Targets (at {tc} clients)")
    add("")
    rows = []
    for t in judged(run):
        rows.append([t["text"], t["shown"], t["verdict"]])
    L += table(["target", "measured", "result"], "lrl", rows)

    rounds, rcases = s.get("rounds", 0), s.get("round_cases", [])
    if rounds > 0 and rcases:
        add("")
        add(f"## Targets in rounds (at {tc} clients)")
        add("")
        add(f"Cases {' '.join(rcases)} again, {rounds} time(s) in turn, {s.get('duration_s')} s each, after"
            " the cases above: each round's ratio compares runs about a minute apart, and the target is"
            " judged on the median.")
        add("")
        rows = [[t["text"]] + [f"{r}×" for r in t["rounds"]] + [t["shown"] + "×", t["verdict"]]
                for t in judged_rounds(run)]
        L += table(["target"] + [f"round {r}" for r in range(1, rounds + 1)] + ["median", "result"],
                   "l" + "r" * (rounds + 1) + "l", rows)
    picture("Each target: measured against its target", "ratios")

    add("")
    add("## Checks")
    add("")
    L += table(["check", "result"], "ll",
               [[c.get("name"), "ok" if c.get("ok") is True else "**FAILED**"] for c in run.checks])
    if run.errors:
        add("")
        add("## Errors")
        add("")
        L += [f"- {e}" for e in run.errors]
    return L


def judged(run):
    """The targets of the run's table whose cases ran, each as a dict:
    text, shown (the value as shown, × after a ratio), value, op, goal, verdict."""
    out = []
    for t in TARGETS:
        if not t.in_run or not run.want(*t.cases()):
            continue
        v = run.measure(t)
        unit = "" if t.measure in ("expiry_rate", "bytes_per_sku") else \
            " ms" if t.measure in ("p50_extra", "notify_p99", "notify_p99_backlog") else "×"
        out.append({"text": run.text(t.text), "shown": v + (unit if v != "—" else ""),
                    "value": shown(v), "op": t.op, "goal": t.goal, "verdict": verdict(v, t.op, t.goal)})
    return out


def judged_rounds(run):
    """The targets run in rounds, in the order of their table: text, rounds
    (each round's ratio as shown), shown (the median), value, op, goal, verdict."""
    s = run.s
    rounds = range(1, s.get("rounds", 0) + 1)
    out = []
    for t in sorted((t for t in TARGETS if t.rounds), key=lambda t: t.rounds):
        if not set(t.cases()) <= set(s.get("round_cases", [])):
            continue
        # each round's ratio as shown, and their median, as the reader can check it
        each = [ratio(run.round_tps(t.of, r), run.round_tps(t.to, r)) for r in rounds]
        m = median([shown(x) for x in each])
        v = ratio(m, 1) if m is not None else "—"
        out.append({"text": run.text(t.rounds_text), "rounds": each,
                    "shown": v, "value": shown(v), "op": t.op, "goal": t.goal,
                    "verdict": verdict(v, t.op, t.goal)})
    return out


# ---------------------------------------------------------------- main
def main(argv):
    ap = argparse.ArgumentParser(prog="bench/report.py",
                                 description="The benchmark's report and pictures, from its data.")
    ap.add_argument("data", metavar="DATA.json")
    ap.add_argument("--out", metavar="REPORT.md", help="the report (default: DATA with .md)")
    ap.add_argument("--records", metavar="RECORDS.jsonl",
                    help="first gather bench/run.py's records into DATA.json")
    args = ap.parse_args(argv)

    try:
        if args.records:
            doc = assemble(args.records)
            with open(args.data, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1, ensure_ascii=False)
                f.write("\n")
        with open(args.data, encoding="utf-8") as f:
            run = Run(json.load(f))
    except (OSError, ValueError) as e:
        print(f"bench/report.py: {e}", file=sys.stderr)
        return 2

    out = args.out or os.path.splitext(args.data)[0] + ".md"
    base = os.path.splitext(out)[0]
    stem = os.path.basename(base)
    sys.dont_write_bytecode = True   # no __pycache__ in the checkout
    try:
        import pictures
    except ImportError as e:
        if e.name not in ("matplotlib", "numpy") and not (e.name or "").startswith("matplotlib."):
            raise
        pictures = None
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(report(run, pictures is not None, stem)) + "\n")
    print(f"== report written to {out}", file=sys.stderr)

    status = 0
    if pictures is not None:
        name = f"{stem}, {when(run.meta.get('finished_utc') or run.meta.get('started_utc'))}"
        series = [(run.name(i), {c: run.tps(i, c) for c in run.clients if is_num(run.tps(i, c))})
                  for i in run.ids]
        targets = [(t["text"], t["shown"], t["value"], (t["op"], t["goal"]), t["verdict"])
                   for t in judged(run) if t["op"] and t["value"] is not None]
        targets += [(t["text"] + ", median of the rounds", t["shown"] + "×", t["value"],
                     (t["op"], t["goal"]), t["verdict"])
                    for t in judged_rounds(run) if t["op"] and t["value"] is not None]
        try:
            pictures.draw_tps(series, run.clients, f"TPS per case against clients ({name})",
                              base + "-tps.svg")
            pictures.draw_ratios(targets, f"Targets at {run.tc} clients: measured (bar) against its"
                                 f" target (dashed line)\n{name}", base + "-ratios.svg")
            print(f"== pictures drawn: {base}-tps.svg, {base}-ratios.svg", file=sys.stderr)
        except Exception as e:  # noqa: BLE001 -- any failure to draw fails the run, after the report
            print(f"bench/report.py: the pictures could not be drawn: {e!r}", file=sys.stderr)
            status = 1

    for problem in run.failures():
        print(f"== FAILED: {problem}", file=sys.stderr)
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

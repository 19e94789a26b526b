#!/usr/bin/env python3
"""bench/run.py -- the benchmark of inventory against what users would pick
instead (plain SQL on a hot row, Redis), in one run on one scratch cluster.

Usage:
  bench/run.py [--smoke] [--duration SECONDS] [--clients "1 8 32 64"]
               [--cases "1 4 4b"] [--rounds N]

  (default)   every case at 1, 8, 32 and 64 clients, 15 s per run after a
              3 s warm-up, then 3 rounds; takes about 38 minutes on 2 cores.
  --smoke     every case for 150 transactions per client at 8 clients
              (or --duration seconds), small data, no fsync measurement;
              checks that each case produces a number and its counts
              (targets not enforced).  About a minute.
  --duration  seconds per measured run.
  --clients   the client counts, in quotes.
  --cases     only these cases, in quotes (default: all); a target is
              reported when all its cases ran, a ratio shows as — when its
              baseline did not.
  --rounds    after the cases, run the cases of the throughput targets (1,
              5, 2b, 2d, 4, 4n, 13, 13s) and of their bounds (1k, 2e) again
              N times in turn at the targets' client count, and judge those
              targets on the median of the rounds' ratios (default 3; 1
              with --smoke; 0: none).

Run as root: installs what is missing (lib.sh, plus python3, redis-server,
redis-tools and python3-matplotlib), builds and installs the extension, and
runs PostgreSQL and pgbench as the postgres user.

Outputs, in bench/results/ (smoke.* for --smoke, so that a smoke run does
not overwrite the last real one):
  latest.json       the data of the run: the commit measured, the machine,
                    the settings, every measured run, the rounds, cases 8,
                    8r and 9, the checks and the notes (bench/report.py
                    documents its schema)
  latest.md         the report, which bench/report.py makes from that data
                    and this script prints: tables, ratios, the targets
                    judged PASS/MISS, the rounds' medians, the checks
  latest-tps.svg, latest-ratios.svg   its pictures (none without matplotlib)
`bench/report.py latest.json` makes the report and the pictures again from
the data alone; to keep a run, copy latest.json, latest.md and the two
pictures under a dated name.  Exits non-zero when a case produced no
number, a correctness check failed or the report or its pictures could not
be made; PASS/MISS of the targets is reported, not enforced.

Cases (pgbench -M prepared -j 2, synchronous_commit = on, fsync = on):
  1   SELECT 1: the floor, one round trip
  1b  SELECT * FROM inventory.cache_info(): the floor of any call of the
      form SELECT * FROM f(), a C function returning one row
  1k  SELECT of a random order key: the floor of any call that carries one,
      as every reserve does
  1c  SELECT of a key absent from inventory.ledger, by its primary key: the
      floor of a refusal that must still recognise a replayed key (run
      after case 5, on the same ledger)
  2a  plain SQL: UPDATE stock SET qty = qty - 1 WHERE sku = $1 AND qty >= 1
  2b  plain SQL: 2a + a ledger INSERT with UNIQUE (order_id, batch_id)
  2c  plain SQL: SELECT ... FOR UPDATE, then UPDATE
  2d  plain SQL: the ledger INSERT alone (one durable write per call)
  2e  plain SQL: the same INSERT into a copy of inventory.ledger, with its
      three indexes (key, SKU, expiry): the cost of the data model alone
  2f  plain SQL: 2e with ON CONFLICT DO NOTHING, which probes the key
      first, as a reserve must to answer a replay without an error
  3   Redis: check-and-DECRBY Lua script by EVALSHA (redis-benchmark), in
      memory only
  3d  3 on a durable Redis: appendonly yes, appendfsync always (an
      acknowledged call survives a crash), a redis-server of its own
  4   inventory.reserve on one hot SKU, always succeeds (cases 4-7 call
      the API in the select list asking for the status only, SELECT
      (inventory.reserve(...)).status, the cheapest call form)
  4b  4 on another hot SKU with max_per_buyer = 2, for a buyer drawn from
      9e18 (almost every call a buyer's first): the cost of the limit
  4n  4 in a database of its own (bench_n), set up as bench is for case 4,
      with inventory.stock_notifications on (ALTER DATABASE): what LISTEN
      inventory_stock costs a sale
  4f  4 in a database of its own (bench_f) with inventory.change_feed on:
      what the change feed costs a sale (a row of the feed per reservation)
  5   inventory.reserve on one sold-out SKU, always refused
  6   inventory.reserve on a random SKU among 100,000
  7   reserve, then confirm (70%), cancel (20%) or let expire (10%)
  8   the worker clears 100,000 overdue reservations under case 4 load
  8r  8 with a reconciler set (inventory.set_reconciler) that looks each
      order up in a payments table, one indexed lookup, and answers
      expire: the cost of asking
  8f  8 with inventory.change_feed on for the bench database: a row of the
      feed per reservation expired
  9   cache load after restart: SKU with 1,000,000 settled movements vs none
  10  inventory.reserve_many of BATCH (50) reservations of 1 unit, each
      under a key of its own, on another hot SKU: reported as reservations
      per second (calls per second x BATCH), against case 3d
  13  inventory.reserve_now (the express lane) on a hot SKU, one
      reservation per call, against case 4
  13s 13 on a sold-out SKU, against case 5
  13r 13 through inventory.reserve_now_result, asking for the whole result
      row (SELECT *), against case 13's status
  13f 13 in case 4f's database, with the change feed on, against case 13
  13u 13 on a random SKU among 100,000, against case 6
  14  LISTEN inventory_stock: a SKU of one unit taken and given back,
      alone, 40 times each (5 with --smoke), in case 4n's database; how long
      from a call's answer until a listener hears the state it left
      (bench/notify_latency.py, psycopg)
  15  the change feed's lag: while case 4f runs at 32 clients in its
      database, a consumer follows inventory.changes() in batches of up to
      1000 from the end of the feed (bench/feed_lag.py, psycopg); how long
      from a reservation's statement until the consumer read its row
  14b 14 while the worker clears an expiry backlog, in a database of its
      own with notifications on: 1,000,000 overdue reservations (600,000
      with --smoke) inserted with the worker off, as in case 8, cleared in
      batches of at most the default inventory.expire_batch (shorter while
      a batch takes over 50 ms, as in any database with notifications on);
      the flips run while the backlog lasts, and a note waits for at most
      one of the worker's transactions
  11  case 4 through a router (inventory_router over PL/Proxy) to four
      partition databases on the same server: the router's cost per call
  11b 11 on a hot SKU split over 2 buckets (inventory.split)
  11c 11 on a hot SKU split over 4 buckets
  12  case 5 through the router: a sold-out refusal
  12c 12 on a SKU split over 4 buckets, sold out
"""
import concurrent.futures
import csv
import functools
import glob
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
LIB = TOP / "scripts" / "lib.sh"
ALL_CASES = ("1 1b 1k 1c 2a 2b 2c 2d 2e 2f 3 3d 4 4b 4n 4f 5 6 7 8 8r 8f 9 10 13 13s 13u 13r 13f 14 14b 15"
             " 11 11b 11c 12 12c").split()
# The cases of the throughput targets and of their bounds, run again in
# rounds (see run_rounds), in their order, with their pgbench script and
# arguments
ROUND_ARGS = {
    "1": ["floor.sql"],
    "1k": ["floor_param.sql", "-D", "prefix=o1kr-"],
    "5": ["reserve.sql", "-D", "sku=SOLD-1", "-D", "prefix=o5r-"],
    "2b": ["sql_update_ledger.sql", "-D", "sku=HOT"],
    "2d": ["sql_ledger.sql", "-D", "sku=HOT"],
    "2e": ["sql_ledger3.sql", "-D", "sku=HOT"],
    "4": ["reserve.sql", "-D", "sku=HOT-1", "-D", "prefix=o4r-"],
    "4n": ["reserve.sql", "-D", "sku=HOT-N", "-D", "prefix=o4nr-"],
    "13": ["reserve_now.sql", "-D", "sku=HOT-NOW", "-D", "prefix=o13r-"],
    "13s": ["reserve_now.sql", "-D", "sku=SOLD-NOW", "-D", "prefix=o13sr-"],
    "4f": ["reserve.sql", "-D", "sku=HOT-F", "-D", "prefix=o4fr-"],
    "13f": ["reserve_now.sql", "-D", "sku=HOT-FNOW", "-D", "prefix=o13fr-"],
    "13r": ["reserve_now_result.sql", "-D", "sku=HOT-NOWR", "-D", "prefix=o13rr-"],
}
# the database of a case that is not bench's
CASE_DB = {"4n": "bench_n", "4f": "bench_f", "13f": "bench_f"}
PGBENCH_OPTIONS = ["-M", "prepared", "-j", "2"]
# case 4b: the limit per buyer, and the range its buyers are drawn from
LIMIT = 2
BUYERS = 9000000000000000000
# case 10: the reservations in one call of inventory.reserve_many
BATCH = 50
# cases 8 and 8r: the worker's batch, and the clients of the load it clears under
EXPIRE_BATCH = 10000
EXPIRY_CLIENTS = 32
# cases 3 and 3d: the units of stock:HOT, more than any run takes
REDIS_STOCK = 1000000000000
# cases 4n and 14: their database, with inventory.stock_notifications on
NOTIFY_DB = "bench_n"
# case 14b: its database of its own
BACKLOG_NOTIFY_DB = "bench_nb"
# cases 4f and 13f: their database, with inventory.change_feed on
FEED_DB = "bench_f"
# cases 11-12c: through the router
ROUTER_CASES = ("11", "11b", "11c", "12", "12c")
# the bench database's inventory worker in a process title (not bench_n's)
BENCH_WORKER = re.compile(r"inventory worker for database bench(\s|$)")
# a JSON number, as the figures that psql, pgbench and the others print
JSON_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")


# ---------------------------------------------------------------- the settings
@dataclass
class Settings:
    """What a run measures and how long, from its command line."""

    smoke: bool
    duration: int          # seconds per measured run
    smoke_tx: int          # transactions per client and run instead (0: DURATION seconds)
    clients: list
    cases: list
    rounds: int
    warmup: int            # seconds of warm-up before each measured run (0: none)
    nskus: int             # cases 6 and 13u: their SKUs
    backlog: int           # cases 8 and 8r: the overdue reservations cleared
    settled: int           # case 9: the settled movements of LOAD-FULL
    fsync_secs: int        # pg_test_fsync -s (0: not measured)
    load_rounds: int       # case 9: the restarts per phase
    notify_flips: int      # cases 14 and 14b
    notify_backlog: int    # case 14b: the overdue reservations cleared meanwhile
    out: Path              # the report
    command: str           # the command line, quoted so that it can be pasted

    @property
    def data(self):
        """The data of the run, beside its report."""
        return self.out.with_suffix(".json")

    @property
    def measure(self):
        """What a measured run lasts, as pgbench_once takes it: seconds, or tN transactions."""
        return f"t{self.smoke_tx}" if self.smoke_tx else str(self.duration)

    @property
    def target_clients(self):
        """The client count of the targets and the rounds: 64, as the targets are stated,
        or else the largest count."""
        return 64 if 64 in self.clients else max(self.clients)

    @property
    def expiry_load(self):
        """Cases 8 and 8r: the length of each run of the load they clear under (as
        many follow each other as the clearing takes)."""
        return 2 if self.smoke else max(self.duration, 20)

    @property
    def round_cases(self):
        """The cases run again in rounds: those of ROUND_ARGS that were selected."""
        return [case for case in ROUND_ARGS if self.want(case)]

    def want(self, *cases):
        """Whether any of CASES is selected."""
        return any(case in self.cases for case in cases)


def usage():
    """Prints the Usage part of the docstring and exits 2: the answer to --help
    and to a command line that cannot be read."""
    sys.stderr.write(__doc__[__doc__.index("Usage:"):__doc__.index("Run as root")])
    sys.exit(2)


def read_options(argv):
    """The options of the command line as given, in a dict; usage() for anything else."""
    options = {"smoke": False}
    rest = list(argv)
    while rest:
        arg = rest.pop(0)
        if arg == "--smoke":
            options["smoke"] = True
        elif arg in ("--duration", "--clients", "--cases", "--rounds") and rest:
            options[arg[2:]] = rest.pop(0)
        else:
            usage()
    return options


def whole_number(text, positive, complaint):
    """TEXT as a whole number; dies with COMPLAINT when it is none (or is 0 and
    must be POSITIVE)."""
    if not re.fullmatch(r"[1-9][0-9]*" if positive else r"[0-9]+", text):
        die(complaint)
    return int(text)


def quoted_command(argv):
    """The command line as it can be pasted: an argument with a space in quotes."""
    return " ".join(["bench/run.py"] + [f'"{a}"' if " " in a else a for a in argv])


def settings_from(argv):
    """The settings of the run: the options, checked, and the sizes of a smoke
    run (small data, SMOKE_TX transactions per client and run unless --duration
    says otherwise) or of a real one."""
    options = read_options(argv)
    smoke = options["smoke"]
    duration = options.get("duration") or ("1" if smoke else "15")
    clients = (options.get("clients") or ("8" if smoke else "1 8 32 64")).split()
    rounds = options.get("rounds") or ("1" if smoke else "3")
    cases = options.get("cases", " ".join(ALL_CASES)).split()
    duration = whole_number(duration, True, "--duration takes a whole number of seconds")
    rounds = whole_number(rounds, False, "--rounds takes a whole number")
    if not clients:
        die("--clients takes numbers")
    clients = [whole_number(c, True, "--clients takes numbers") for c in clients]
    if not cases:
        die(f"--cases takes case ids: {' '.join(ALL_CASES)}")
    for case in cases:
        if case not in ALL_CASES:
            die(f"no case {case}; the cases are: {' '.join(ALL_CASES)}")
    sizes = dict(warmup=0, nskus=1000, backlog=2000, settled=10000, fsync_secs=0, load_rounds=1,
                 notify_flips=5, notify_backlog=600000) if smoke else \
        dict(warmup=3, nskus=100000, backlog=100000, settled=1000000, fsync_secs=2, load_rounds=3,
             notify_flips=40, notify_backlog=1000000)
    return Settings(
        smoke=smoke,
        duration=duration,
        smoke_tx=150 if smoke and not options.get("duration") else 0,
        clients=clients,
        cases=cases,
        rounds=rounds,
        out=TOP / "bench" / "results" / ("smoke.md" if smoke else "latest.md"),
        command=quoted_command(argv),
        **sizes)


# ---------------------------------------------------------------- processes
def log(text):
    """A line of progress on stderr, as scripts/lib.sh's inv_log writes it."""
    print(f"== {text}", file=sys.stderr, flush=True)


def die(text):
    """Ends the run with an error, as scripts/lib.sh's inv_die (the scratch
    cluster is cleaned up on the way out)."""
    print(f"error: {text}", file=sys.stderr, flush=True)
    sys.exit(1)


def lib(commands, *args, capture=False):
    """Runs COMMANDS in bash with scripts/lib.sh sourced (ARGS are their "$@"):
    the set-up that scripts/test.sh and scripts/demo.sh share, packages, build,
    cluster, router.  Returns the CompletedProcess; its stdout when CAPTURE."""
    return subprocess.run(["bash", "-c", '. "$0" && ' + commands, str(LIB), *args],
                          stdout=subprocess.PIPE if capture else None, text=True)


@functools.cache
def pg_bindir():
    """The server's programs, as scripts/lib.sh finds them (PG_CONFIG's, when it
    names a PostgreSQL of its own)."""
    return lib('echo "$INV_PGBIN"', capture=True).stdout.strip()


def as_postgres(command):
    """COMMAND run as the user that owns PostgreSQL (postgres when we are root),
    with the server's programs first in PATH and the cluster's PG* variables,
    as scripts/lib.sh's inv_as_pg runs it."""
    env = [f"PATH={pg_bindir()}:{os.environ.get('PATH', '')}"]
    env += [f"{v}={os.environ[v]}" for v in ("PGHOST", "PGPORT", "PGUSER", "PGDATABASE")
            if os.environ.get(v)]
    user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return user + ["env"] + env + [str(c) for c in command]


def output(command, **kwargs):
    """The stdout of COMMAND, without its last newlines ('' when it cannot run),
    as a shell's $(...) gives it."""
    try:
        return subprocess.run(command, stdout=subprocess.PIPE, text=True, **kwargs).stdout.rstrip("\n")
    except OSError:
        return ""


def number(text):
    """TEXT as a JSON number when it is one, None otherwise (empty, FAILED, -):
    the figures come as text from psql, pgbench and the other tools."""
    return json.loads(text) if text is not None and JSON_NUMBER.fullmatch(text) else None


def whole(text):
    """TEXT as a whole number (a count psql printed), None when it is none."""
    return int(text) if re.fullmatch(r"-?[0-9]+", text or "") else None


def minus(after, before):
    """AFTER - BEFORE, None when either count is missing (its query failed)."""
    return None if after is None or before is None else after - before


def utc_now():
    """The time, as the data's run object keeps it."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def wait_until(condition, tries, pause):
    """Asks CONDITION up to TRIES times, PAUSE seconds apart, until it holds:
    the waits for the worker, for a server, for a backlog."""
    for _ in range(tries):
        if condition():
            return True
        time.sleep(pause)
    return False


# ---------------------------------------------------------------- pgbench logs
def read_text(path):
    """The text of a file (a tool's log, a file of /proc), '' when there is none."""
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def log_figure(path, pattern):
    """The figure that PATTERN's group catches on a line of a pgbench log, as text."""
    found = re.search(pattern, read_text(path), re.M)
    return found.group(1) if found else ""


def tps(path):
    """The TPS of a pgbench log, or None."""
    return number(log_figure(path, r"^tps = ([0-9.]*) "))


def latency(path):
    """The mean latency (ms) of a pgbench log, or None."""
    return number(log_figure(path, r"^latency average = ([0-9.]*) ms"))


def processed(path):
    """The transactions a pgbench log counted, or None."""
    return number(log_figure(path, r"^number of transactions actually processed: ([0-9]*)"))


def failed(path):
    """Shows the end of a failed run's log on stderr; returns its first error
    (or its last line), which the record of the run keeps."""
    lines = read_text(path).splitlines()
    for line in lines[-20:]:
        print(f"    {line}", file=sys.stderr)
    errors = [line for line in lines if re.search(r"error|fatal|abort|failed", line, re.I)]
    return (errors or lines[-1:] or [""])[0]


def percentiles(path):
    """(P50, P99) in ms of the transactions that pgbench logged next to PATH
    (its -l logs), or None when it logged none."""
    latencies = []
    for name in glob.glob(f"{glob.escape(str(path))}.lat.*"):
        latencies += [int(words[2]) for words in map(str.split, read_text(name).splitlines())
                      if len(words) > 2]
    if not latencies:
        return None
    latencies.sort()
    at = [max(int(len(latencies) * p), 1) for p in (0.50, 0.99)]
    return tuple(round(latencies[i - 1] / 1000, 3) for i in at)


def remove_latency_logs(path):
    """Removes the latency logs of a run (PATH.lat.*): large, once read."""
    for name in glob.glob(f"{glob.escape(str(path))}.lat.*"):
        os.unlink(name)


# ---------------------------------------------------------------- Redis
class Redis:
    """The redis-server of case 3 or 3d, one at a time, with its files in the
    run's directory, on a free port."""

    def __init__(self, workdir):
        self.workdir, self.port, self.pid = workdir, None, None

    def start(self, case, *options):
        """Starts the server of CASE with OPTIONS; True once it answers (and has
        loaded its AOF, if it has one)."""
        home = self.workdir / f"redis-{case}"
        home.mkdir(parents=True, exist_ok=True)
        self.port = lib("inv_free_port", capture=True).stdout.strip()
        try:
            started = subprocess.run(
                ["redis-server", "--port", self.port, "--bind", "127.0.0.1", *options,
                 "--daemonize", "yes", "--pidfile", home / "redis.pid", "--dir", home,
                 "--logfile", home / "redis.log"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError:
            return False
        if started.returncode != 0:
            return False
        wait_until(lambda: "PONG" in output(["redis-cli", "-p", self.port, "ping"],
                                            stderr=subprocess.DEVNULL), 100, 0.1)
        self.pid = whole(read_text(home / "redis.pid").strip())
        return self.pid is not None

    def stop(self, sig=signal.SIGTERM):
        """Ends the running server with SIG, and waits until it has ended."""
        if self.pid is None:
            return
        try:
            os.kill(self.pid, sig)
            wait_until(lambda: not os.path.exists(f"/proc/{self.pid}"), 100, 0.1)
        except ProcessLookupError:
            pass
        self.pid = None

    def cli(self, *args):
        """What redis-cli answers to ARGS on the running server."""
        return output(["redis-cli", "-p", self.port, *args])

    def aof(self):
        """The running server's AOF settings, as it reports them."""
        persistence = self.cli("info", "persistence").replace("\r", "")
        enabled = re.search(r"^aof_enabled:(.*)$", persistence, re.M)
        return (f"appendonly {self.config('appendonly')}, appendfsync {self.config('appendfsync')},"
                f" aof_enabled:{enabled.group(1) if enabled else ''}")

    def config(self, name):
        """A setting of the running server (config get's second line)."""
        lines = self.cli("config", "get", name).splitlines()
        return lines[1] if len(lines) > 1 else ""

    def benchmark(self, clients, requests, sha):
        """redis-benchmark of the check-and-DECRBY script: (calls/s, mean latency
        in ms) of REQUESTS calls at CLIENTS clients, 0 when it measured nothing."""
        lines = output(["redis-benchmark", "-h", "127.0.0.1", "-p", self.port, "-c", str(clients),
                        "--threads", "2", "-n", str(requests), "--csv",
                        "EVALSHA", sha, "1", "stock:HOT", "1"], stderr=subprocess.DEVNULL).splitlines()
        row = next(csv.reader(lines[-1:]), [])
        return csv_figure(row, 1), csv_figure(row, 2)


def csv_figure(row, i):
    """Field I of a row of redis-benchmark's CSV as a number to 3 decimals, 0
    when it has none (the run then measured nothing)."""
    try:
        return round(float(row[i]), 3)
    except (IndexError, ValueError):
        return 0


# ---------------------------------------------------------------- the run
class Bench:
    """One run: its settings, its scratch directory and cluster, the records it
    appends, and the calls that every case makes."""

    def __init__(self, settings, workdir, redis_ok):
        self.s = settings
        self.dir = workdir
        self.redis_ok = redis_ok
        self.redis = Redis(workdir)
        # Everything measured is appended here as it comes, one JSON object a
        # line; bench/report.py gathers them into the data and makes the report.
        self.records = workdir / "records.jsonl"

    def want(self, *cases):
        """Whether any of CASES is selected."""
        return self.s.want(*cases)

    # -------------------------------------------------------- the data
    def record(self, kind, **fields):
        """Appends {"type": KIND, FIELDS...} to the records; an empty text is
        null, as a figure that was not measured."""
        rec = {"type": kind, **{k: None if v == "" else v for k, v in fields.items()}}
        with open(self.records, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")

    def check(self, name, ok):
        """A correctness check, in the order they are made; the run fails on a failed one."""
        self.record("check", name=name, ok=bool(ok))
        if not ok:
            log(f"CHECK FAILED: {name}")

    def error(self, text):
        """Something that went wrong outside a check; the run fails."""
        self.record("error", text=text)
        log(f"ERROR: {text}")

    # -------------------------------------------------------- SQL
    def psql(self, *args, db="bench", stdin=None):
        """psql as the postgres user on DB, unaligned and quiet, stopping at the
        first error: the CompletedProcess, with its output."""
        return subprocess.run(as_postgres(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1",
                                           "-d", db, *args]),
                              input=stdin, stdout=subprocess.PIPE, text=True)

    def query(self, sql, db="bench"):
        """The result of SQL, unaligned, as text (what it printed when it failed,
        usually nothing: a check on it then fails)."""
        return self.psql("-c", sql, db=db).stdout.rstrip("\n")

    def execute(self, sql, db="bench"):
        """Runs SQL for its effect; True when it succeeded."""
        return self.psql("-c", sql, db=db).returncode == 0

    def run_script(self, script, db="bench"):
        """Runs SCRIPT, statements one after the other; True when all succeeded."""
        return self.psql(db=db, stdin=script).returncode == 0

    def ledger_rows(self, where, db="bench"):
        """The rows of inventory.ledger matching WHERE, or None."""
        return whole(self.query(f"SELECT count(*) FROM inventory.ledger WHERE {where}", db))

    def reload_with(self, *settings):
        """ALTER SYSTEM each of SETTINGS ("SET name = value", "RESET name"), then
        reloads the configuration."""
        for setting in settings:
            self.execute(f"ALTER SYSTEM {setting}")
        self.execute("SELECT pg_reload_conf()")

    def wait_worker_off(self, db):
        """Waits (10 s at most) until DB's worker has seen inventory.worker_enabled
        = off, so that it cannot start on a backlog being inserted."""
        wait_until(lambda: self.query("SELECT count(*) FROM inventory.worker_status"
                                      f" WHERE datname = '{db}' AND state <> 'disabled'") == "0",
                   100, 0.1)

    def fold_all(self):
        """inventory.fold() until it has nothing left to fold."""
        wait_until(lambda: self.query("SELECT inventory.fold()") == "0", 1000, 0)

    # -------------------------------------------------------- pgbench
    def pgbench_once(self, clients, length, log_path, script, *args, db="bench", latencies=False):
        """One pgbench run as the postgres user, logged to LOG_PATH; LENGTH is
        seconds, or tN for N transactions per client.  With LATENCIES, pgbench also
        logs every transaction's latency, for percentiles().  False on an aborted
        client or a failed transaction."""
        command = ["pgbench", "-n", *PGBENCH_OPTIONS, "-c", clients]
        command += ["-t", length[1:]] if length.startswith("t") else ["-T", length]
        if latencies:
            remove_latency_logs(log_path)
            command += ["-l", f"--log-prefix={log_path}.lat"]
        command += ["-f", self.dir / "sql" / script, *args, db]
        with open(log_path, "w") as out:
            status = subprocess.run(as_postgres(command), cwd=self.dir, stdout=out,
                                    stderr=subprocess.STDOUT).returncode
        text = read_text(log_path)
        return (status == 0 and re.search(r"^tps = ", text, re.M) is not None
                and not re.search(r"^number of failed transactions: [1-9]", text, re.M))

    def run_case(self, case, script, *args, db="bench", latencies=False):
        """CASE at each client count: a warm-up and a measured run, each recorded
        as a measurement.  Returns the transactions made, warm-ups included, which
        its checks compare with what they count."""
        made = 0
        for clients in self.s.clients:
            log(f"case {case}, {clients} clients")
            log_path = self.dir / f"pgbench-{case}-{clients}.log"
            warm_path = Path(f"{log_path}.warm")
            warm = 0
            if self.s.warmup > 0:
                if not self.pgbench_once(clients, str(self.s.warmup), warm_path, script, *args, db=db):
                    self.record("measurement", case=case, clients=clients, status="failed",
                                detail=f"warm-up: {failed(warm_path)}")
                    continue
                warm = processed(warm_path)
                made += warm or 0
            if not self.pgbench_once(clients, self.s.measure, log_path, script, *args, db=db,
                                     latencies=latencies):
                self.record("measurement", case=case, clients=clients, status="failed",
                            detail=failed(log_path))
                continue
            made += processed(log_path) or 0
            figures = dict(tps=tps(log_path), latency_ms=latency(log_path),
                           transactions=processed(log_path), warmup_transactions=warm)
            pct = percentiles(log_path) if latencies else None
            if pct:
                figures.update(p50_ms=pct[0], p99_ms=pct[1])
                remove_latency_logs(log_path)
            self.record("measurement", case=case, clients=clients, status="ok", **figures)
        return made

    def run_counted(self, case, what, count, run, unit="calls", per_call=1):
        """Runs RUN (a run_case) between two COUNTs of ledger rows and checks
        that it wrote PER_CALL rows per call, as "case CASE: WHAT (N UNIT, M
        rows)".  Returns (calls, rows) for the case's other checks."""
        before = count()
        calls = run()
        rows = minus(count(), before)
        self.check(f"case {case}: {what} ({calls} {unit}, {rows} rows)",
                   rows is not None and rows == per_call * calls)
        return calls, rows


# ---------------------------------------------------------------- set-up
def install(settings):
    """Installs what is missing and builds and installs the extension, as
    scripts/lib.sh does for every suite; returns whether Redis is there for
    cases 3 and 3d (only a reference: without it they are skipped)."""
    if lib('inv_setup "$@"', "python3").returncode != 0:
        sys.exit(1)
    redis_ok = (not settings.want("3", "3d")
                or lib('inv_packages "$@"', "redis-server", "redis-tools").returncode == 0)
    # the listener of cases 14 and 14b
    if settings.want("14", "14b") and lib('inv_packages "$@"', "python3-psycopg").returncode != 0:
        die("python3-psycopg could not be installed (cases 14, 14b)")
    # the pictures too: without matplotlib the report has none
    if lib('inv_packages "$@"', "python3-matplotlib").returncode != 0:
        log("python3-matplotlib could not be installed: no pictures")
    return redis_ok


def git(*args):
    """What git says of the tree measured, or None when it cannot say."""
    answer = subprocess.run(["git", "-C", TOP, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    return answer.stdout.strip() if answer.returncode == 0 else None


def run_started(settings):
    """The fields of the run's first record, taken before the build: the tree
    measured (its commit, branch, and whether it had uncommitted changes), the
    time and the command line."""
    changes = git("status", "--porcelain")
    return dict(commit=git("rev-parse", "HEAD"), dirty=None if changes is None else changes != "",
                branch=git("rev-parse", "--abbrev-ref", "HEAD"), started_utc=utc_now(),
                command=settings.command)


def start_cluster(b):
    """The scratch cluster of the run, as scripts/lib.sh's inv_cluster_start makes
    it; its PGHOST, PGPORT and PGUSER are then every command's.  max_skus: case
    6's SKUs all fit in the cache.  max_connections: a router session of cases
    11-12 holds a connection to each partition it called, up to four.  Everything
    else stays at the defaults: synchronous_commit = on, fsync = on."""
    log(f"starting a scratch cluster in {b.dir}")
    started = lib('inv_cluster_start "$@" && printf "%s\\n" "$PGHOST" "$PGPORT" "$PGUSER"',
                  b.dir, "inventory.max_skus = 200000", "max_connections = 400", capture=True)
    if started.returncode != 0:
        sys.exit(1)
    os.environ.update(zip(("PGHOST", "PGPORT", "PGUSER"), started.stdout.splitlines()))


def fdatasync_rate(b):
    """The fdatasync rate (ops/s, as text) that pg_test_fsync measures on the
    cluster's file system; None in a smoke run (it takes 16 s whatever its -s)."""
    if b.s.fsync_secs == 0:
        return None
    log(f"measuring the fsync rate (pg_test_fsync -s {b.s.fsync_secs})")
    report = output(as_postgres([f"{pg_bindir()}/pg_test_fsync", "-s", b.s.fsync_secs,
                                 "-f", b.dir / "data" / "pg_test_fsync.tmp"]), stderr=subprocess.STDOUT)
    for line in report.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0] == "fdatasync" and words[2] == "ops/sec":
            return words[1]
    return None


def record_machine(b):
    """What the figures were measured on, for the report's reader to scale them."""
    cpuinfo, meminfo = read_text("/proc/cpuinfo"), read_text("/proc/meminfo")
    cpu_model = re.search(r"^model name\s*: *(.*)$", cpuinfo, re.M)
    memory = re.search(r"^MemTotal:\s*([0-9]+)", meminfo, re.M)
    try:
        os_name = platform.freedesktop_os_release().get("PRETTY_NAME")
    except OSError:
        os_name = None
    uname = os.uname()
    redis = b.redis_ok and b.want("3", "3d")
    b.record("machine", cores=len(os.sched_getaffinity(0)),
             memory_kib=int(memory.group(1)) if memory else None,
             cpu_model=cpu_model.group(1) if cpu_model else None,
             kernel=f"{uname.sysname} {uname.release} {uname.machine}", os=os_name,
             postgres=output([f"{pg_bindir()}/postgres", "--version"]),
             redis=output(["redis-server", "--version"], stderr=subprocess.DEVNULL) if redis else None,
             fdatasync_per_s=number(fdatasync_rate(b)), fsync_test_s=b.s.fsync_secs)


def bench_database_sql(s):
    """The bench database: the extension, the plain-SQL tables of case 2, the
    SKUs of the cases, and the functions that cases 8 and 9 time with."""
    return f"""
CREATE EXTENSION inventory;
-- Case 4 makes millions of PENDING holds; a long default ttl keeps them from
-- expiring (and keeping the worker busy) in the middle of later cases.
ALTER DATABASE bench SET inventory.default_ttl = '1d';

-- case 2: the plain-SQL alternative, on ordinary tables
CREATE TABLE stock (sku text PRIMARY KEY, qty bigint NOT NULL);
INSERT INTO stock VALUES ('HOT', 1000000000000);   -- never runs out
CREATE TABLE ledger (
	order_id   text NOT NULL,
	batch_id   int NOT NULL,
	sku        text NOT NULL,
	qty        bigint NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	UNIQUE (order_id, batch_id)
);

-- cases 2e and 2f: inventory's own ledger table, without the extension
-- around it; one each, so that both start empty as case 4 does
CREATE TABLE ledger3 (LIKE inventory.ledger INCLUDING DEFAULTS INCLUDING INDEXES)
	WITH (fillfactor = 45);
CREATE TABLE ledger3c (LIKE ledger3 INCLUDING DEFAULTS INCLUDING INDEXES)
	WITH (fillfactor = 45);

-- cases 4-7: SKUs of the extension
SELECT inventory.restock('HOT-1', 1000000000000, 'stock-hot');
-- case 4b: the same stock as HOT-1, with a limit per buyer
SELECT inventory.restock('HOT-LIM', 1000000000000, 'stock-hot-lim');
SELECT inventory.set_rules('HOT-LIM', max_per_buyer => {LIMIT});
INSERT INTO inventory.sku (sku, on_hand) VALUES ('SOLD-1', 0);
INSERT INTO inventory.sku (sku, on_hand)
	SELECT 'U-' || g, 1000000000 FROM generate_series(1, {s.nskus}) g;
SELECT inventory.restock('LIFE-1', 1000000000000, 'stock-life');
-- case 10: the same stock as HOT-1, for the batches
SELECT inventory.restock('HOT-MANY', 1000000000000, 'stock-hot-many');
-- cases 13, 13r and 13s: the same as HOT-1 and SOLD-1, for the express lane
SELECT inventory.restock('HOT-NOW', 1000000000000, 'stock-hot-now');
SELECT inventory.restock('HOT-NOWR', 1000000000000, 'stock-hot-nowr');
INSERT INTO inventory.sku (sku, on_hand) VALUES ('SOLD-NOW', 0);

-- case 8: waits until s has n units available, polling every 10 ms; returns
-- the seconds since t0, NULL after timeout seconds.  Asks the cache: a query
-- of the ledger for overdue rows would read a large ledger for seconds,
-- taking CPU from the worker it times and ending the clock late.
CREATE FUNCTION bench_wait_available(s text, n bigint, t0 timestamptz, timeout float8)
RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
	WHILE inventory.available(s) < n LOOP
		IF extract(epoch FROM clock_timestamp() - t0) > timeout THEN RETURN NULL; END IF;
		PERFORM pg_sleep(0.01);
	END LOOP;
	RETURN extract(epoch FROM clock_timestamp() - t0);
END $$;

-- case 9: times one call of inventory.available() on the server
CREATE FUNCTION bench_time_available(s text, OUT avail bigint, OUT ms float8)
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
	avail := inventory.available(s);
	ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;
"""


def create_notify_db(b, db, sql):
    """DB with the extension and inventory.stock_notifications on, as an
    application turns it on (a session cannot), then SQL run there; True when
    all went well.  Its case 14 SKU, NOTE-1, is one unit taken and given back."""
    log(f"creating the {db} database, with inventory.stock_notifications on")
    return subprocess.run(as_postgres(["createdb", db])).returncode == 0 and b.run_script(f"""
CREATE EXTENSION inventory;
ALTER DATABASE {db} SET inventory.default_ttl = '1d';
ALTER DATABASE {db} SET inventory.stock_notifications = on;
SELECT inventory.restock('NOTE-1', 1, 'stock-note');
{sql}
""", db=db)


def create_feed_db(b):
    """Cases 4f and 13f's database, with the extension and inventory.change_feed
    on, as an application turns it on (a session cannot), and their SKUs; True
    when all went well."""
    log(f"creating the {FEED_DB} database, with inventory.change_feed on")
    return subprocess.run(as_postgres(["createdb", FEED_DB])).returncode == 0 and b.run_script(f"""
CREATE EXTENSION inventory;
ALTER DATABASE {FEED_DB} SET inventory.default_ttl = '1d';
ALTER DATABASE {FEED_DB} SET inventory.change_feed = on;
SELECT inventory.restock('HOT-F', 1000000000000, 'stock-hot-f');
SELECT inventory.restock('HOT-FNOW', 1000000000000, 'stock-hot-fnow');
""", db=FEED_DB)


def create_databases(b):
    """The bench database, for cases 4n and 14 the database with
    notifications on, and for cases 4f and 13f the one with the change feed
    on, each set up as bench is for case 4."""
    log("creating the bench database")
    subprocess.run(as_postgres(["createdb", "bench"]))
    if not b.run_script(bench_database_sql(b.s)):
        die("set-up of the bench database failed")
    if b.want("4n", "14") and not create_notify_db(
            b, NOTIFY_DB, "SELECT inventory.restock('HOT-N', 1000000000000, 'stock-hot-n');"):
        die(f"set-up of the {NOTIFY_DB} database failed")
    if b.want("4f", "13f", "15") and not create_feed_db(b):
        die(f"set-up of the {FEED_DB} database failed")


def record_settings(b):
    """What the run measured and how, as the server reports what it can."""
    s = b.s
    b.record("settings", smoke=s.smoke, duration_s=s.duration,
             transactions_per_client=s.smoke_tx or None, warmup_s=s.warmup, clients=s.clients,
             cases=s.cases, all_cases=ALL_CASES, rounds=s.rounds, round_cases=s.round_cases,
             target_clients=s.target_clients, pgbench=" ".join(PGBENCH_OPTIONS),
             synchronous_commit=b.query("SHOW synchronous_commit"), fsync=b.query("SHOW fsync"),
             max_skus=number(b.query("SHOW inventory.max_skus")), nskus=s.nskus, backlog=s.backlog,
             settled=s.settled, batch=BATCH, limit_per_buyer=LIMIT, buyers=BUYERS,
             load_restarts=s.load_rounds, expire_batch=EXPIRE_BATCH,
             expiry_clients=EXPIRY_CLIENTS, expiry_load_s=s.expiry_load,
             notify_backlog=s.notify_backlog)


def copy_pgbench_scripts(b):
    """bench/sql/*.sql, copied where the postgres user can read them."""
    target = b.dir / "sql"
    for script in sorted((TOP / "bench" / "sql").glob("*.sql")):
        shutil.copy(script, target)
        os.chmod(target / script.name, (target / script.name).stat().st_mode | 0o444)
    os.chmod(target, target.stat().st_mode | 0o555)


# ---------------------------------------------------------------- cases 1, 2
FLOOR_AND_SQL_CASES = [
    ("1", "floor.sql"),
    ("1b", "floor_fn.sql"),
    ("1k", "floor_param.sql", "-D", "prefix=o1k-"),
    ("2a", "sql_update.sql", "-D", "sku=HOT"),
    ("2b", "sql_update_ledger.sql", "-D", "sku=HOT"),
    ("2c", "sql_for_update.sql", "-D", "sku=HOT"),
    ("2d", "sql_ledger.sql", "-D", "sku=HOT"),
    ("2e", "sql_ledger3.sql", "-D", "sku=HOT"),
    ("2f", "sql_ledger3_oc.sql", "-D", "sku=HOT"),
]


def run_floor_and_sql_cases(b):
    """Cases 1 and 2: the floors of a call, and what plain SQL does instead."""
    for case, script, *args in FLOOR_AND_SQL_CASES:
        if b.want(case):
            b.run_case(case, script, *args)


# ---------------------------------------------------------------- cases 3, 3d: Redis
REDIS_CHECK_AND_DECRBY = """
		local n = tonumber(ARGV[1])
		if tonumber(redis.call('GET', KEYS[1]) or '0') >= n then
			return redis.call('DECRBY', KEYS[1], n)
		end
		return -1"""
# case 3: in memory only (no AOF, no snapshots): a reference point, not durable
REDIS_IN_MEMORY = ["--save", "", "--appendonly", "no"]
# case 3d: durable, as a seller must run it not to lose acknowledged sales in
# a crash: every write appended to the AOF and fsynced before its reply (no
# snapshots, so what comes back after a restart comes from the AOF alone)
REDIS_DURABLE = ["--save", "", "--appendonly", "yes", "--appendfsync", "always"]


def redis_bench(b, case):
    """CASE on the running redis-server: stock:HOT set to REDIS_STOCK, the
    check-and-DECRBY script by EVALSHA at each client count; records its
    measurements once every count has one.  Returns the calls made, warm-ups
    included, or None when a step failed."""
    redis = b.redis
    if redis.cli("set", "stock:HOT", str(REDIS_STOCK)) != "OK":
        return None
    sha = redis.cli("script", "load", REDIS_CHECK_AND_DECRBY)
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        return None
    calls, runs = 0, []
    for clients in b.s.clients:
        log(f"case {case}, {clients} clients")
        # redis-benchmark takes a request count, not a duration: a short run
        # (also the warm-up) sizes the measured one.
        warm = clients * 500 + 5000
        rate, _ = redis.benchmark(clients, warm, sha)
        calls += warm
        if rate < 1:
            return None
        requests = int(rate * b.s.duration)
        rate, mean_latency = redis.benchmark(clients, requests, sha)
        calls += requests
        if rate < 1:
            return None
        runs.append((clients, rate, mean_latency, requests, warm))
    # the script refuses to go below zero, and every call took one unit
    if not (whole(redis.cli("get", "stock:HOT")) or 0) > 0:
        return None
    for clients, rate, mean_latency, requests, warm in runs:
        b.record("measurement", case=case, clients=clients, status="ok", tps=rate,
                 latency_ms=mean_latency, transactions=requests, warmup_transactions=warm)
    return calls


def redis_skip(b, case):
    """CASE has no number: Redis could not be installed or run here."""
    for clients in b.s.clients:
        b.record("measurement", case=case, clients=clients, status="skipped")
    b.record("note", text=f"Redis could not be installed or run here: case {case} skipped.")
    log(f"redis skipped (case {case})")
    b.redis.stop(signal.SIGKILL)


def run_redis_in_memory(b):
    """Case 3: Redis in memory only."""
    if b.redis_ok and b.redis.start("3", *REDIS_IN_MEMORY) and redis_bench(b, "3") is not None:
        b.redis.stop()
    else:
        redis_skip(b, "3")


def run_redis_durable(b):
    """Case 3d: Redis with its AOF fsynced at every write; checks that the AOF
    is on, and that a crash right after the last reply loses no acknowledged call."""
    if not (b.redis_ok and b.redis.start("3d", *REDIS_DURABLE)):
        redis_skip(b, "3d")
        return
    aof = b.redis.aof()
    b.check(f"case 3d: the AOF is on, fsynced at every write ({aof})",
            aof == "appendonly yes, appendfsync always, aof_enabled:1")
    calls = redis_bench(b, "3d")
    if calls is None:
        redis_skip(b, "3d")
        return
    left = b.redis.cli("get", "stock:HOT")
    b.redis.stop(signal.SIGKILL)
    back = b.redis.cli("get", "stock:HOT") if b.redis.start("3d", *REDIS_DURABLE) else ""
    b.check(f"case 3d: after kill -9 and a restart, the AOF gives back every acknowledged call"
            f" ({calls} calls; stock:HOT {left or '?'} before, {back or '?'} after)",
            back != "" and back == left and whole(back) == REDIS_STOCK - calls)
    b.redis.stop()


# ---------------------------------------------------------------- cases 4-7
def run_hot_reserve(b):
    """Case 4: reserve on one hot SKU, always succeeds; its latencies logged,
    against which case 13's are judged."""
    b.run_counted("4", "one ledger row per reserve", lambda: b.ledger_rows("sku = 'HOT-1'"),
                  lambda: b.run_case("4", "reserve.sql", "-D", "sku=HOT-1", "-D", "prefix=o4-",
                                     latencies=True))


def run_limit_per_buyer(b):
    """Case 4b, right after case 4, on a ledger that case 4 made larger (its rows
    are not in ledger_buyer_idx, which holds only rows with a buyer); checks that
    the limit was in force."""
    b.run_counted("4b", "one ledger row, with its buyer, per reserve",
                  lambda: b.ledger_rows("sku = 'HOT-LIM' AND buyer_id IS NOT NULL"),
                  lambda: b.run_case("4b", "reserve_buyer.sql", "-D", "sku=HOT-LIM", "-D", "prefix=o4b-",
                                     "-D", f"buyers={BUYERS}"))
    # a buyer's units past the limit are refused
    got = " ".join(b.psql(stdin=f"""
SELECT status FROM inventory.reserve('HOT-LIM', {LIMIT}, 'o4b-check-1', buyer_id => 'b-check');
SELECT status FROM inventory.reserve('HOT-LIM', 1, 'o4b-check-2', buyer_id => 'b-check');
""").stdout.splitlines())
    b.check(f"case 4b: the limit is in force ({LIMIT} units for one buyer, then 1 more: {got})",
            got == "ok limit_exceeded")
    b.check(f"case 4b: no buyer holds more than {LIMIT} units of HOT-LIM",
            b.query(f"""SELECT count(*) = 0 FROM (SELECT buyer_id FROM inventory.ledger
		         WHERE sku = 'HOT-LIM' AND kind = 'reserve' AND state IN ('PENDING', 'CONFIRMED')
		         GROUP BY buyer_id HAVING sum(qty) > {LIMIT}) o""") == "t")


def run_reserve_notified(b):
    """Case 4n: case 4 in the database with inventory.stock_notifications on."""
    b.run_counted("4n", "one ledger row per reserve", lambda: b.ledger_rows("sku = 'HOT-N'", NOTIFY_DB),
                  lambda: b.run_case("4n", "reserve.sql", "-D", "sku=HOT-N", "-D", "prefix=o4n-",
                                     db=NOTIFY_DB))
    b.check("case 4n: its sessions have inventory.stock_notifications on, from their database",
            b.query("SHOW inventory.stock_notifications", NOTIFY_DB) == "on")


def feed_rows(b, sku):
    """The rows of the change feed of FEED_DB that made a reservation of SKU."""
    return whole(b.query("SELECT count(*) FROM inventory.change c JOIN inventory.ledger l USING (order_id, batch_id)"
                         f" WHERE l.sku = '{sku}' AND c.state = 'PENDING'", FEED_DB))


def run_reserve_fed(b):
    """Case 4f: case 4 in the database with inventory.change_feed on: one row
    of the feed per reservation."""
    b.run_counted("4f", "one ledger row per reserve", lambda: b.ledger_rows("sku = 'HOT-F'", FEED_DB),
                  lambda: b.run_case("4f", "reserve.sql", "-D", "sku=HOT-F", "-D", "prefix=o4f-",
                                     db=FEED_DB))
    b.check("case 4f: each of its reservations is a row of the change feed",
            feed_rows(b, "HOT-F") == b.ledger_rows("sku = 'HOT-F' AND kind = 'reserve'", FEED_DB))


def key_filter_counts(b):
    """The key filter's refusals answered alone, and those it said maybe to but
    whose key was not there: together every refusal (none of case 5's keys exists)."""
    counts = [whole(n) for n in b.query("SELECT said_absent || ' ' || false_positives"
                                        " FROM inventory.key_filter").split()]
    return tuple(counts) if len(counts) == 2 else (None, None)


def run_sold_out(b):
    """Case 5: reserve on one sold-out SKU, always refused, by the key filter
    but for its false positives, and without a ledger row."""
    def rejects():
        return whole(b.query("SELECT coalesce(sum(rejects), 0) FROM inventory.sku_stats WHERE sku = 'SOLD-1'"))

    before, (said_before, fp_before) = rejects(), key_filter_counts(b)
    calls = b.run_case("5", "reserve.sql", "-D", "sku=SOLD-1", "-D", "prefix=o5-")
    refused, (said_after, fp_after) = minus(rejects(), before), key_filter_counts(b)
    b.check(f"case 5: every reserve refused ({calls} calls, {refused} rejects)", refused == calls)
    # the warm-up's refusals count too
    said, fp = minus(said_after, said_before), minus(fp_after, fp_before)
    ready = b.query("SELECT ready FROM inventory.key_filter")
    fill = b.query("SELECT round(fill::numeric, 3) FROM inventory.key_filter")
    b.check(f"case 5: the key filter answered every refusal but its false positives (under 1%), which"
            f" were looked up (ready: {ready}, {said} answered, {fp} false positives at a fill of {fill})",
            ready == "t" and said is not None and fp is not None and said + fp >= calls
            and fp * 100 < calls)
    b.check("case 5: refused reserves wrote no ledger row", b.ledger_rows("sku = 'SOLD-1'") == 0)
    b.check("case 5: available('SOLD-1') is 0", b.query("SELECT inventory.available('SOLD-1') = 0") == "t")


def run_absent_key(b):
    """Case 1c: the floor of a refusal that must still recognise a replayed key,
    after case 5, on the same ledger."""
    b.run_case("1c", "floor_key.sql")


def run_many_skus(b):
    """Case 6: reserve on a random SKU among NSKUS, all of them in the cache."""
    b.run_counted("6", "one ledger row per reserve", lambda: b.ledger_rows("sku LIKE 'U-%'"),
                  lambda: b.run_case("6", "reserve_skus.sql", "-D", f"nskus={b.s.nskus}"))
    b.check(f"case 6: all {b.s.nskus} SKUs fit in the cache (no eviction)",
            b.query("SELECT evictions = 0 FROM inventory.cache_info()") == "t")


def run_lifecycle(b):
    """Case 7: reserve, then confirm, cancel or let expire; every confirm and
    cancel settles its reservation."""
    b.run_counted("7", "one ledger row per buyer", lambda: b.ledger_rows("sku = 'LIFE-1'"),
                  lambda: b.run_case("7", "lifecycle.sql", "-D", "sku=LIFE-1"), unit="buyers")
    # a long-ttl reservation still PENDING would be a confirm or cancel that failed
    b.check("case 7: every confirm and cancel settled its reservation",
            b.ledger_rows("sku = 'LIFE-1' AND state = 'PENDING'"
                          " AND expires_at > created_at + interval '1 minute'") == 0)


# ---------------------------------------------------------------- cases 11, 12: the router
ROUTER_SKUS = """
SELECT inventory.restock(s, 1000000000000, 'stock-' || s) FROM unnest(ARRAY['R-HOT', 'R-HOT2', 'R-HOT4']) s;
SELECT count(*) FROM inventory.split('R-HOT2', 2);
SELECT count(*) FROM inventory.split('R-HOT4', 4);
-- once more: forgets the unsplit layouts, under which no key was made
SELECT count(*) FROM inventory.rebalance('R-HOT2');
SELECT count(*) FROM inventory.rebalance('R-HOT4');
SELECT inventory.restock('R-SOLD', 1, 'stock-r-sold'), inventory.withdraw('R-SOLD', 1, 'gone-r-sold');
-- case 12c: 4 units over 4 buckets, all taken by one order
SELECT inventory.restock('R-SOLD4', 4, 'stock-r-sold4');
SELECT count(*) FROM inventory.split('R-SOLD4', 4);
SELECT count(*) FROM inventory.rebalance('R-SOLD4');
SELECT inventory.reserve('R-SOLD4', 4, 'all-r-sold4');
"""
ROUTED_HOT_SKUS = {"11": "R-HOT", "11b": "R-HOT2", "11c": "R-HOT4"}


def router_rows(b, where):
    """The ledger rows matching WHERE on all four partitions, or None."""
    counts = [b.ledger_rows(where, f"inv_p{p}") for p in range(4)]
    return None if None in counts else sum(counts)


def create_router(b):
    """Four partition databases inv_p0..inv_p3 with the extension, and a router
    database shop with inventory_router over them, on this same server (as
    scripts/lib.sh's inv_router_create makes them), with the SKUs of the cases."""
    log("creating the partition databases and the router")
    # the partitions keep case 11's holds for a day, as the bench database does
    if lib('inv_router_create "$@"', "4", "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET"
           " inventory.default_ttl = ''1d''', current_database()); END $$").returncode != 0:
        sys.exit(1)
    if not b.run_script(ROUTER_SKUS, db="shop"):
        die("set-up of the router's SKUs failed")
    layouts = b.query("SELECT string_agg(sku || ':' || buckets || '/' || former_layouts, ' ' ORDER BY sku)"
                      " FROM inventory.buckets", "shop")
    b.check("cases 11b, 11c, 12c: R-HOT2 split over 2 buckets, R-HOT4 and R-SOLD4 over 4, no former"
            f" layout kept ({layouts})", layouts == "R-HOT2:2/0 R-HOT4:4/0 R-SOLD4:4/0")


def run_router_cases(b):
    """Cases 11-12c: what a call through the router costs, not what more
    servers would give (two cores)."""
    create_router(b)
    for case, sku in ROUTED_HOT_SKUS.items():
        if b.want(case):
            b.run_counted(case, f"one ledger row per reserve, on the partitions of {sku}",
                          lambda: router_rows(b, f"sku = '{sku}'"),
                          lambda: b.run_case(case, "reserve.sql", "-D", f"sku={sku}", "-D", f"prefix=o{case}-",
                                             db="shop"))
    if b.want("12"):
        b.run_case("12", "reserve.sql", "-D", "sku=R-SOLD", "-D", "prefix=o12-", db="shop")
        b.check("case 12: refused reserves wrote no ledger row",
                router_rows(b, "sku = 'R-SOLD' AND kind = 'reserve'") == 0)
    if b.want("12c"):
        b.run_case("12c", "reserve.sql", "-D", "sku=R-SOLD4", "-D", "prefix=o12c-", db="shop")
        b.check("case 12c: refused reserves wrote no ledger row (the one order that took the 4 units only)",
                router_rows(b, "sku = 'R-SOLD4' AND kind = 'reserve'") == 1)
    b.check("cache = tables on every partition after cases 11-12 (inventory.verify() through the router is empty)",
            b.query("SELECT count(*) = 0 FROM inventory.verify()", "shop") == "t")


# ---------------------------------------------------------------- case 10: batches
def run_batches(b):
    """Case 10, after cases 4-7, so that its ledger rows (BATCH per call) do not
    grow the ledger under them; its measurements are calls per second, which the
    report shows as reservations per second (x BATCH)."""
    def available():
        return whole(b.query("SELECT inventory.available('HOT-MANY')"))

    before = available()
    calls, _ = b.run_counted("10", f"{BATCH} ledger rows per call", lambda: b.ledger_rows("sku = 'HOT-MANY'"),
                             lambda: b.run_case("10", "reserve_batch.sql", "-D", "sku=HOT-MANY",
                                                "-D", "prefix=o10-", "-D", f"batch={BATCH}"),
                             per_call=BATCH)
    held = minus(before, available())
    b.check(f"case 10: one unit held per reservation (available('HOT-MANY') went down by {held})",
            held == BATCH * calls)


# ---------------------------------------------------------------- case 13: the express lane
def run_express_hot(b):
    """Case 13: reserve_now() on a hot SKU, against reserve() in case 4; its
    calls written by the express writer in batches."""
    _, rows = b.run_counted("13", "one ledger row per call", lambda: b.ledger_rows("sku = 'HOT-NOW'"),
                            lambda: b.run_case("13", "reserve_now.sql", "-D", "sku=HOT-NOW",
                                               "-D", "prefix=o13-", latencies=True))
    written = b.query("SELECT coalesce(sum(rows), 0) || ' rows in ' || coalesce(sum(batches), 0) || ' batches, '"
                      " || inventory.express_fallbacks() || ' in their own transaction'"
                      " FROM inventory.express_status")
    b.check(f"case 13: the calls were written by the express writer in batches ({written})",
            b.query(f"SELECT coalesce(sum(rows), 0) >= {rows} AND inventory.express_fallbacks() = 0"
                    " FROM inventory.express_status") == "t")
    log("express lane: " + b.query("SELECT rows_per_batch::numeric(10,1) || ' rows per batch, ' || sent_back"
                                    " || ' sent back' FROM inventory.express_status WHERE datname = 'bench'"))


def run_express_result(b):
    """Case 13r: case 13 through reserve_now_result(), the whole result row."""
    b.run_counted("13r", "one ledger row per call", lambda: b.ledger_rows("sku = 'HOT-NOWR'"),
                  lambda: b.run_case("13r", "reserve_now_result.sql", "-D", "sku=HOT-NOWR",
                                     "-D", "prefix=o13r-"))


def run_express_fed(b):
    """Case 13f: case 13 in the database with inventory.change_feed on: the
    express writer writes a row of the feed per reservation."""
    b.run_counted("13f", "one ledger row per call", lambda: b.ledger_rows("sku = 'HOT-FNOW'", FEED_DB),
                  lambda: b.run_case("13f", "reserve_now.sql", "-D", "sku=HOT-FNOW", "-D", "prefix=o13f-",
                                     db=FEED_DB))
    b.check("case 13f: each of its reservations is a row of the change feed",
            feed_rows(b, "HOT-FNOW") == b.ledger_rows("sku = 'HOT-FNOW' AND kind = 'reserve'", FEED_DB))


def run_express_sold_out(b):
    """Case 13s: reserve_now() on a sold-out SKU, against reserve() in case 5."""
    b.run_case("13s", "reserve_now.sql", "-D", "sku=SOLD-NOW", "-D", "prefix=o13s-")
    b.check("case 13s: refused calls wrote no ledger row", b.ledger_rows("sku = 'SOLD-NOW'") == 0)


def run_express_many_skus(b):
    """Case 13u: reserve_now() over NSKUS SKUs, against reserve() in case 6."""
    b.run_counted("13u", "one ledger row per call", lambda: b.ledger_rows("sku LIKE 'U-%'"),
                  lambda: b.run_case("13u", "reserve_now_skus.sql", "-D", f"nskus={b.s.nskus}"))


# ---------------------------------------------------------------- cases 14, 14b: LISTEN
def notify_latency(b, db, errors, *while_sql):
    """bench/notify_latency.py on DB, as the postgres user: its line "SAMPLES
    P50_MS P99_MS MAX_MS MISSED FLIPS" split in words, or None when it failed
    (its stderr in ERRORS)."""
    with open(errors, "w") as err:
        answer = subprocess.run(as_postgres(
            ["python3", TOP / "bench" / "notify_latency.py",
             f"host={os.environ['PGHOST']} port={os.environ['PGPORT']} dbname={db}",
             "NOTE-1", b.s.notify_flips, "150", *while_sql]),
            stdout=subprocess.PIPE, stderr=err, text=True)
    words = answer.stdout.split()
    return words if answer.returncode == 0 and len(words) == 6 else None


def first_bytes(path):
    """The first 300 bytes of a file, for an error's text."""
    try:
        return Path(path).read_bytes()[:300].decode(errors="replace")
    except OSError:
        return ""


def run_notify(b):
    """Case 14: how soon a listener hears that a SKU sold out or came back."""
    flips = b.s.notify_flips
    log(f"case 14: LISTEN inventory_stock, {flips} flips")
    heard = notify_latency(b, NOTIFY_DB, b.dir / "case14.err")
    if heard is None:
        b.error(f"case 14: bench/notify_latency.py failed: {first_bytes(b.dir / 'case14.err')}")
        return
    samples, p50, p99, most, missed, _ = heard
    b.record("case14", flips=flips, samples=number(samples), p50_ms=number(p50), p99_ms=number(p99),
             max_ms=number(most), missed=number(missed), gap_ms=150)
    b.check(f"case 14: every one of {2 * flips} crossings of zero was heard (missed: {missed})",
            missed == "0" and samples == str(2 * flips))


def run_feed_lag(b):
    """Case 15: a consumer of the change feed under case 4f's load at
    EXPIRY_CLIENTS clients, for the measured length; its rows, their lag."""
    seconds = "1" if b.s.smoke else str(b.s.duration)
    log(f"case 15: a consumer of the change feed while case 4f runs at {EXPIRY_CLIENTS} clients, {seconds} s")
    load_log = b.dir / "pgbench-15-load.log"
    errors = b.dir / "case15.err"
    with open(errors, "w") as err:
        # the consumer stands at the end of the feed before the load starts
        consumer = subprocess.Popen(as_postgres(
            ["python3", TOP / "bench" / "feed_lag.py",
             f"host={os.environ['PGHOST']} port={os.environ['PGPORT']} dbname={FEED_DB}", seconds]),
            stdout=subprocess.PIPE, stderr=err, text=True)
        ready = consumer.stdout.readline().strip() == "ready"
        load_ok = ready and b.pgbench_once(str(EXPIRY_CLIENTS), seconds, load_log, "reserve.sql",
                                           "-D", "sku=HOT-F", "-D", "prefix=o15-", db=FEED_DB)
        out, _ = consumer.communicate()
    answer = subprocess.CompletedProcess(consumer.args, consumer.returncode, out)
    words = answer.stdout.split()
    if answer.returncode != 0 or len(words) != 4 or not load_ok:
        b.error(f"case 15: the load or bench/feed_lag.py failed: {failed(load_log) if not load_ok else first_bytes(errors)}")
        return
    rows, p50, p99, most = words
    made = b.ledger_rows("order_id LIKE 'o15-%'", FEED_DB)
    b.record("case15", clients=EXPIRY_CLIENTS, seconds=number(seconds), load_tps=tps(load_log),
             rows=number(rows), p50_ms=number(p50), p99_ms=number(p99), max_ms=number(most))
    b.check(f"case 15: the consumer read a row of each of the {made} reservations of the load (read {rows})",
            number(rows) == made)


def insert_overdue(b, case, sku, first, last, db="bench"):
    """Reservations FIRST..LAST of CASE's backlog, of SKU, overdue by a minute:
    less than inventory.reconcile_max_wait (1 hour), past which the expiry no
    longer asks about an order.  True when inserted."""
    return b.execute(f"""INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty, expires_at)
		     SELECT 'o{case}-' || g, 1, 'reserve', '{sku}', 1, now() - interval '1 minute'
		       FROM generate_series({first}, {last}) g""", db)


def chunks(total, parts):
    """1..TOTAL in PARTS ranges (first, last), for inserts of a bearable size."""
    size = (total + parts - 1) // parts
    return [(first, min(first + size - 1, total)) for first in range(1, total + 1, size)]


def run_notify_during_backlog(b):
    """Case 14b: case 14 while the worker clears NOTIFY_BACKLOG overdue
    reservations, in a database of its own with notifications on (dropped after,
    so that its settled movements leave nothing to fold for the cases after).
    The backlog is inserted with the workers off, as in case 8, and cleared at
    the default inventory.expire_batch.  The flips run while the backlog's units
    are not all back (notify_latency.py's WHILE_SQL); the backlog is sized to
    outlast them, and a check says when it did not."""
    db, backlog, flips = BACKLOG_NOTIFY_DB, b.s.notify_backlog, b.s.notify_flips

    def available():
        return b.query("SELECT inventory.available('EXP-N')", db)

    log(f"case 14b: LISTEN inventory_stock, {flips} flips, while the worker clears {backlog}"
        " overdue reservations")
    if not create_notify_db(b, db, f"SELECT inventory.restock('EXP-N', {backlog}, 'stock-exp-n');"):
        b.error(f"case 14b: set-up of the {db} database failed")
    b.reload_with("SET inventory.worker_enabled = off")
    b.wait_worker_off(db)
    for first, last in chunks(backlog, 10):
        if not insert_overdue(b, "14b", "EXP-N", first, last, db):
            b.error("case 14b: inserting the backlog failed")
    found = available()
    b.check(f"case 14b: the backlog is {backlog} overdue reservations (found {found} units of EXP-N"
            " available)", found == "0")
    b.reload_with("RESET inventory.worker_enabled")
    # the clearing has begun: the first expiry committed
    wait_until(lambda: (whole(available()) or 0) > 0, 300, 0.1)
    heard = notify_latency(b, db, b.dir / "case14b.err", f"SELECT inventory.available('EXP-N') < {backlog}")
    if heard is None:
        b.error(f"case 14b: bench/notify_latency.py failed: {first_bytes(b.dir / 'case14b.err')}")
    else:
        samples, p50, p99, most, missed, made = heard
        left = minus(backlog, whole(available()))
        b.record("case14b", flips=flips, flips_made=number(made), samples=number(samples),
                 p50_ms=number(p50), p99_ms=number(p99), max_ms=number(most), missed=number(missed),
                 gap_ms=150, backlog=backlog, left_after=left)
        b.check(f"case 14b: every one of {2 * flips} crossings of zero was heard while the worker cleared"
                f" the backlog ({made} flips made before it was cleared, {left} overdue reservations left"
                f" after the last; missed: {missed})",
                missed == "0" and samples == str(2 * flips) and left is not None and left > 0)
    wait_until(lambda: available() == str(backlog), 600, 0.5)
    back = available()
    b.check(f"case 14b: the worker cleared the backlog (EXP-N has {back} of {backlog} units back on sale)",
            back == str(backlog))
    b.check(f"cache = tables in {db} after case 14b (inventory.verify() is empty)",
            b.query("SELECT count(*) = 0 FROM inventory.verify()", db) == "t")
    if subprocess.run(as_postgres(["dropdb", "--force", db])).returncode != 0:
        b.error(f"case 14b: dropping {db} failed")


# ---------------------------------------------------------------- rounds
def run_rounds(b):
    """The cases of the throughput targets again, ROUNDS times in turn at the
    targets' client count.  The load of a shared machine drifts over the minutes
    between a case and its baseline in the run above; in turn, each round's ratio
    compares runs a minute apart, and the median of the rounds is judged.  With
    them, the bounds of two targets: the round trip that carries a key (1k), which
    a refusal must make, and the bare INSERT of the ledger's own row (2e), which a
    reservation must make."""
    clients = b.s.target_clients
    for r in range(1, b.s.rounds + 1):
        for case in b.s.round_cases:
            log(f"round {r}: case {case}, {clients} clients")
            log_path = b.dir / f"pgbench-round-{r}-{case}.log"
            db = CASE_DB.get(case, "bench")
            if b.pgbench_once(clients, b.s.measure, log_path, *ROUND_ARGS[case], db=db):
                b.record("round", round=r, case=case, clients=clients, status="ok", tps=tps(log_path),
                         latency_ms=latency(log_path), transactions=processed(log_path))
            else:
                b.record("round", round=r, case=case, clients=clients, status="failed",
                         detail=failed(log_path))


# ---------------------------------------------------------------- cases 8, 8r: expiry
def postmaster_pid(b):
    """The pid of the scratch cluster's postmaster, the parent of its workers."""
    return whole(read_text(b.dir / "data" / "postmaster.pid").split("\n", 1)[0])


def cpu_ticks(postmaster):
    """{pid: (kind, ticks)} of the bench database's inventory worker ("worker")
    and of the cluster's autovacuum workers ("autovacuum"): their user + system
    CPU since they started, in clock ticks."""
    ticks = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        kind = "worker" if BENCH_WORKER.search(title) else \
            "autovacuum" if "autovacuum worker" in title else None
        if kind and int(fields[1]) == postmaster:
            ticks[int(pid)] = (kind, int(fields[11]) + int(fields[12]))
    return ticks


def sample_cpu(stop, postmaster):
    """Every 0.1 s until STOP is set, the cpu_ticks() of the worker and
    autovacuum: a list of samples, for cpu_used()."""
    samples = []
    while not stop.is_set():
        samples.append(cpu_ticks(postmaster))
        stop.wait(0.1)
    return samples


def cpu_used(samples):
    """(worker seconds, autovacuum seconds, autovacuum processes) of SAMPLES: a
    process of the first sample counts from there, one that came later from its
    start."""
    first, last, kinds = {}, {}, {}
    for n, sample in enumerate(samples):
        for pid, (kind, ticks) in sample.items():
            if pid not in first:
                first[pid], kinds[pid] = (ticks if n == 0 else 0), kind
            last[pid] = ticks
    seconds = {"worker": 0.0, "autovacuum": 0.0}
    for pid, ticks in last.items():
        seconds[kinds[pid]] += (ticks - first[pid]) / os.sysconf("SC_CLK_TCK")
    return (round(seconds["worker"], 2), round(seconds["autovacuum"], 2),
            list(kinds.values()).count("autovacuum"))


def expiry_load(b, log_path, stop, prefix):
    """Case 4's reserve of HOT-1 at EXPIRY_CLIENTS clients, under keys PREFIX...,
    in runs of expiry_load s one after the other until STOP is set (one run at
    least), logged to LOG_PATH.1, .2, ...: the load lasts as long as the clearing,
    however long that is.  Returns (ok, runs); a failed run ends it."""
    runs = 0
    while runs == 0 or not stop.is_set():
        runs += 1
        if not b.pgbench_once(EXPIRY_CLIENTS, str(b.s.expiry_load), f"{log_path}.{runs}", "reserve.sql",
                              "-D", "sku=HOT-1", "-D", f"prefix={prefix}"):
            return False, runs
    return True, runs


def reconcile_counts(b):
    """(expired, other) of inventory.reconcile_stats for the bench database: the
    overdue reservations its reconciler's answers expired, and those they
    confirmed, cancelled, made wait or whose ask failed."""
    counts = [whole(n) for n in b.query(
        "SELECT coalesce(sum(expired), 0) || ' ' || coalesce(sum(confirmed + cancelled + waited + failed), 0)"
        " FROM inventory.reconcile_stats WHERE datname = 'bench'").split()]
    return tuple(counts) if len(counts) == 2 else (None, None)


def reconciler_sql(backlog):
    """Case 8r's application: its payments, as it records them, a row for every
    order of the backlog, none of them paid; and its reconciler, owned by the
    shop's role as the rules of a reconciler ask, which looks the order up there
    (one indexed lookup) and answers expire."""
    return f"""
DO $$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bench_shop') THEN
		CREATE ROLE bench_shop;
	END IF;
END $$;
CREATE SCHEMA bench_shop AUTHORIZATION bench_shop;
CREATE TABLE bench_shop.payments (order_id text PRIMARY KEY, state text NOT NULL);
INSERT INTO bench_shop.payments SELECT 'o8r-' || g, 'unpaid' FROM generate_series(1, {backlog}) g;
ALTER TABLE bench_shop.payments OWNER TO bench_shop;
CREATE FUNCTION bench_shop.reconcile(order_id text, batch_id integer) RETURNS text
	LANGUAGE sql STABLE SET search_path = pg_catalog, bench_shop, pg_temp AS $$
	SELECT CASE (SELECT p.state FROM payments p WHERE p.order_id = reconcile.order_id)
	       WHEN 'paid' THEN 'confirm' ELSE 'expire' END
$$;
ALTER FUNCTION bench_shop.reconcile(text, integer) OWNER TO bench_shop;
ANALYZE bench_shop.payments;
"""


RECONCILER = "bench_shop.reconcile(text,integer)"
# the function inventory.set_reconciler makes
RECONCILER_FUNCTION = "SELECT FROM pg_proc WHERE proname = 'reconciler' AND pronamespace = 'inventory'::regnamespace"
# the clock of cases 8 and 8r: from switching the worker on until SKU has
# BACKLOG units back on sale (none after 600 s)
TIME_THE_WORKER = """
SELECT clock_timestamp() AS t0 \\gset
ALTER SYSTEM SET inventory.worker_enabled = on;
SELECT pg_reload_conf() \\gset
SELECT bench_wait_available(:'sku', :backlog, :'t0', 600);
"""


def prepare_expiry(b, case, reconciler):
    """The worker off, and nothing but the backlog left for it to do: what case 7
    left overdue (its 1 s holds included) expired, what is settled (the other
    expiry case's backlog, when it ran before) folded, and what the cases before
    left to vacuum vacuumed (an autovacuum of their tables would take its share of
    the two cores from the worker while it clears)."""
    b.reload_with("SET inventory.worker_enabled = off", f"SET inventory.expire_batch = {EXPIRE_BATCH}")
    b.wait_worker_off("bench")
    b.execute("SELECT pg_sleep(1.2)")
    b.execute("SELECT inventory.expire()")
    b.fold_all()
    if reconciler and not b.run_script(reconciler_sql(b.s.backlog)):
        b.error("case 8r: creating the payments and the reconciler failed")
    log(f"case {case}: VACUUM and CHECKPOINT first")
    b.execute("VACUUM")
    b.execute("CHECKPOINT")


def insert_backlog(b, case, sku):
    """BACKLOG overdue reservations of SKU, inserted while the worker is off."""
    backlog = b.s.backlog
    b.execute(f"SELECT inventory.restock('{sku}', {backlog}, 'stock-{sku}')")
    for first, last in chunks(backlog, 4):
        if not insert_overdue(b, case, sku, first, last):
            b.error(f"case {case}: inserting the backlog failed")
    overdue = b.ledger_rows("state = 'PENDING' AND expires_at <= now()")
    b.check(f"case {case}: the backlog is {backlog} overdue reservations (found {overdue})", overdue == backlog)


def set_reconciler(b, sku):
    """Case 8r's reconciler set, and checked to be asked about every order of the backlog."""
    if not b.execute(f"SELECT inventory.set_reconciler('{RECONCILER}')"):
        b.error(f"case 8r: inventory.set_reconciler('{RECONCILER}') failed")
    b.check("case 8r: the reconciler is set, and every order of the backlog is overdue for less than"
            f" inventory.reconcile_max_wait ({b.query('SHOW inventory.reconcile_max_wait')}), so it is asked about",
            b.query(f"""SELECT EXISTS ({RECONCILER_FUNCTION})
			          AND min(expires_at) > now() - current_setting('inventory.reconcile_max_wait')::interval
			        FROM inventory.ledger WHERE sku = '{sku}'""") == "t")


def clear_under_load(b, case, sku):
    """The worker switched on and timed until the backlog's units are back on
    sale, while case 4 runs at EXPIRY_CLIENTS clients (started 1 s before the
    clock) and the CPU of the worker and of autovacuum is sampled: the figures of
    the case's record."""
    log(f"case {case}: the worker clears it under case 4 load at {EXPIRY_CLIENTS} clients")
    load_log = b.dir / f"pgbench-{case}-load.log"
    stop = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        try:
            load = pool.submit(expiry_load, b, load_log, stop, f"o{case}l-")
            time.sleep(1)   # let the load ramp up
            sampler = pool.submit(sample_cpu, stop, postmaster_pid(b))
            seconds = b.psql("-v", f"backlog={b.s.backlog}", "-v", f"sku={sku}",
                             stdin=TIME_THE_WORKER).stdout.strip()
        finally:
            stop.set()
        load_ok, runs = load.result()
        samples = sampler.result()
    if not load_ok:
        b.error(f"case {case}: the load (case 4 at {EXPIRY_CLIENTS} clients) failed:"
                f" {failed(f'{load_log}.{runs}')}")
    # the load's runs, each expiry_load s: its TPS is their mean
    load_tps = [t for t in (tps(f"{load_log}.{n}") for n in range(1, runs + 1)) if t is not None]
    worker_cpu, autovacuum_cpu, autovacuum_workers = cpu_used(samples)
    return dict(backlog=b.s.backlog, seconds=number(seconds),
                load_tps=round(statistics.mean(load_tps), 3) if load_tps else None,
                load_runs=runs, load_started_s_before=1, worker_cpu_s=worker_cpu,
                autovacuum_cpu_s=autovacuum_cpu, autovacuum_workers=autovacuum_workers,
                cpu_sample_s=0.1)


def run_expiry(b, case):
    """Case 8 (CASE 8), 8r or 8f: BACKLOG overdue reservations of a SKU of their
    own, inserted with the worker off, then cleared by the worker under load;
    records caseCASE.  In 8r a reconciler is set first, which answers expire
    for every order: both end with every reservation EXPIRED, and differ by the
    cost of asking alone.  In 8f the change feed is on while the backlog is
    cleared (a row of it per expiry).  Each cleans up after itself, so any
    runs whether or not the others ran before it."""
    asks = case == "8r"
    fed = case == "8f"
    sku = {"8r": "EXP-R", "8f": "EXP-F"}.get(case, "EXP-1")
    log(f"case {case}: a backlog of {b.s.backlog} overdue reservations{', with a reconciler' if asks else ''}")
    prepare_expiry(b, case, asks)
    insert_backlog(b, case, sku)
    if asks:
        set_reconciler(b, sku)
        expired_before, other_before = reconcile_counts(b)
    if fed:
        b.execute("ALTER DATABASE bench SET inventory.change_feed = on")
    figures = clear_under_load(b, case, sku)
    if fed:
        b.execute("ALTER DATABASE bench RESET inventory.change_feed")
        b.check(f"case 8f: each expiry of the backlog is a row of the change feed",
                b.query(f"SELECT count(*) = {b.s.backlog} FROM inventory.change c"
                        f" JOIN inventory.ledger l USING (order_id, batch_id)"
                        f" WHERE l.sku = '{sku}' AND c.state = 'EXPIRED'") == "t")
    if asks:
        expired_after, other_after = reconcile_counts(b)
        expired, other = minus(expired_after, expired_before), minus(other_after, other_before)
        figures.update(reconciler=RECONCILER, reconcile_budget=b.query("SHOW inventory.reconcile_budget"),
                       reconcile_expired=expired, reconcile_other=other)
    b.record(f"case{case}", **figures)
    b.check(f"case {case}: all {b.s.backlog} reservations EXPIRED",
            b.ledger_rows(f"sku = '{sku}' AND state = 'EXPIRED'") == b.s.backlog)
    b.check(f"case {case}: their units are back on sale",
            b.query(f"SELECT inventory.available('{sku}') = {b.s.backlog}") == "t")
    if asks:
        b.check(f"case 8r: the reconciler's answers expired them all, and nothing else"
                f" (inventory.reconcile_stats: {expired} expired, {other} confirmed, cancelled, waited or failed)",
                expired == b.s.backlog and other == 0)
        b.execute("SELECT inventory.set_reconciler(NULL)")
        b.check("case 8r: set_reconciler(NULL) removed the reconciler",
                b.query(f"SELECT NOT EXISTS ({RECONCILER_FUNCTION})") == "t")
        b.execute("DROP SCHEMA bench_shop CASCADE")
    b.reload_with("RESET inventory.expire_batch")


# ---------------------------------------------------------------- case 9: cache load
def time_load(b, sku):
    """(available, ms) of the first inventory.available(SKU) in a new session, as text."""
    words = b.psql("-F", " ", "-c", f"SELECT avail, round(ms::numeric, 3) FROM bench_time_available('{sku}')"
                   ).stdout.split()
    return tuple(words) if len(words) == 2 else ("", "")


def measure_loads(b, phase):
    """load_rounds restarts, each timing the first call for LOAD-FULL and
    LOAD-EMPTY, recorded as a load each; returns what available('LOAD-FULL')
    answered after each."""
    full = []
    b.execute("CHECKPOINT")   # so the restart does not replay the load
    for restart in range(1, b.s.load_rounds + 1):
        log(f"case 9 ({phase}): restart {restart} of {b.s.load_rounds}")
        if subprocess.run(as_postgres(["pg_ctl", "-D", b.dir / "data", "-l", b.dir / "server.log",
                                       "-m", "fast", "-w", "restart"]),
                          stdout=subprocess.DEVNULL).returncode != 0:
            die("the server did not restart")
        time_load(b, "LOAD-WARM")   # pays the first session's catalog loading
        # alternate the order, so neither SKU always goes first
        for sku in ("LOAD-EMPTY", "LOAD-FULL") if restart % 2 == 1 else ("LOAD-FULL", "LOAD-EMPTY"):
            available, ms = time_load(b, sku)
            b.record("load", phase=phase, restart=restart, sku=sku, ms=number(ms), available=number(available))
            if sku == "LOAD-FULL":
                full.append(available)
    return full


def run_cache_load(b):
    """Case 9: the first available() after a restart, for a SKU of SETTLED settled
    movements against one of none; right after the fold, as specified (the fold
    updated every row, so until VACUUM the (sku, folded) index still holds an
    entry per old row version), and once VACUUM has removed the dead versions,
    as autovacuum eventually does."""
    settled = b.s.settled
    log(f"case 9: {settled} settled movements")
    b.execute("INSERT INTO inventory.sku (sku) VALUES ('LOAD-FULL'), ('LOAD-EMPTY'), ('LOAD-WARM')")
    for first, last in chunks(settled, 4):
        if not b.execute(f"""INSERT INTO inventory.ledger (order_id, batch_id, kind, sku, qty)
		     SELECT 'o9-' || g, 1, 'restock', 'LOAD-FULL', 1 FROM generate_series({first}, {last}) g"""):
            b.error("case 9: inserting the movements failed")
    b.fold_all()
    b.check(f"case 9: LOAD-FULL has {settled} movements, all folded",
            b.query(f"SELECT count(*) = {settled} AND bool_and(folded) FROM inventory.ledger"
                    " WHERE sku = 'LOAD-FULL'") == "t")

    def autovacuums():
        return b.query("SELECT autovacuum_count FROM pg_stat_user_tables"
                       " WHERE relid = 'inventory.ledger'::regclass")

    before = autovacuums()
    full = measure_loads(b, "fold")
    after = autovacuums()
    log("case 9: VACUUM inventory.ledger")
    b.execute("VACUUM inventory.ledger")
    full += measure_loads(b, "vacuum")
    b.check(f"case 9: available('LOAD-FULL') = {settled} after every restart (got{''.join(' ' + a for a in full)})",
            bool(full) and all(whole(a) == settled for a in full))
    b.record("case9", settled=settled, restarts=b.s.load_rounds, autovacuum_during_fold=after != before,
             bytes_per_sku=number(b.query("SELECT bytes_per_entry FROM inventory.cache_info()")))


# ---------------------------------------------------------------- the run
def run_cases(b):
    """Every selected case, in the order the sections above give their reasons
    for: 1c after 5, on its ledger; 4b right after 4; 10 and 13 after 4-7; the
    expiry after the rounds; 9, which restarts the server, last."""
    run_floor_and_sql_cases(b)
    steps = [("3", run_redis_in_memory), ("3d", run_redis_durable), ("4", run_hot_reserve),
             ("4b", run_limit_per_buyer), ("4n", run_reserve_notified), ("4f", run_reserve_fed),
             ("5", run_sold_out),
             ("1c", run_absent_key), ("6", run_many_skus), ("7", run_lifecycle)]
    for case, step in steps:
        if b.want(case):
            step(b)
    if b.want(*ROUTER_CASES):
        run_router_cases(b)
    steps = [("10", run_batches), ("13", run_express_hot), ("13r", run_express_result),
             ("13f", run_express_fed), ("13s", run_express_sold_out),
             ("13u", run_express_many_skus), ("14", run_notify), ("15", run_feed_lag)]
    for case, step in steps:
        if b.want(case):
            step(b)
    run_rounds(b)
    for case in ("8", "8r", "8f"):
        if b.want(case):
            run_expiry(b, case)
    log("comparing the cache with the tables (inventory.verify())")
    b.check("cache = tables after cases 4-8 and 10 (inventory.verify() is empty)",
            b.query("SELECT count(*) = 0 FROM inventory.verify()") == "t")
    if b.want("4n", "14"):
        b.check(f"cache = tables in {NOTIFY_DB} after cases 4n and 14 (inventory.verify() is empty)",
                b.query("SELECT count(*) = 0 FROM inventory.verify()", NOTIFY_DB) == "t")
    if b.want("4f", "13f", "15"):
        b.check(f"cache = tables in {FEED_DB} after cases 4f, 13f and 15 (inventory.verify() is empty)",
                b.query("SELECT count(*) = 0 FROM inventory.verify()", FEED_DB) == "t")
    if b.want("14b"):
        run_notify_during_backlog(b)
    if b.want("9"):
        run_cache_load(b)


def make_report(b):
    """The report and its pictures, which bench/report.py makes from the
    records (under Debian's python3, which has the matplotlib of
    python3-matplotlib), printed; returns its exit status: non-zero when the data
    shows a failure or the report could not be made."""
    b.record("run", finished_utc=utc_now())
    out, data = b.s.out, b.s.data
    out.parent.mkdir(parents=True, exist_ok=True)
    # nothing of an earlier run beside this one's, should a step fail
    for path in (out, data, out.with_name(f"{out.stem}-tps.svg"), out.with_name(f"{out.stem}-ratios.svg")):
        path.unlink(missing_ok=True)
    status = subprocess.run(["/usr/bin/python3", TOP / "bench" / "report.py", "--records", b.records,
                             data, "--out", out]).returncode
    if out.exists():
        sys.stdout.write(out.read_text())
        sys.stdout.flush()
    if data.exists():
        log(f"data written to {data}")
    if status != 0:
        log(f"the run failed (bench/report.py exited {status})")
    return status


def clean_up(b):
    """Stops what the run started and removes its scratch directory, not to be
    interrupted half-way (a second TERM or ^C would leave a server running)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    b.redis.stop()
    lib('inv_cluster_stop "$@"', b.dir)
    shutil.rmtree(b.dir, ignore_errors=True)


def main(argv):
    """The run: set-up, the cases, the report; returns the exit status."""
    settings = settings_from(argv)
    started = run_started(settings)
    redis_ok = install(settings)
    # a TERM ends the run as an error does, through the clean-up
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    b = Bench(settings, Path(tempfile.mkdtemp(prefix="inventory-bench.", dir="/tmp")), redis_ok)
    try:
        b.record("run", **started)
        start_cluster(b)
        (b.dir / "sql").mkdir()
        record_machine(b)
        create_databases(b)
        record_settings(b)
        copy_pgbench_scripts(b)
        run_cases(b)
        return make_report(b)
    finally:
        clean_up(b)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/python3
"""scripts/tally.py -- the strict count of scripts/test.sh and
scripts/test-long.sh (through scripts/tally.sh, which they source).

Every suite's count is read from its log and checked against what its runner
says it ran:

  tap LOG STATUS RUNNER   TAP output: RUNNER is prove or pg_prove (several
                          files, each with its plan, and the runner's
                          "Files=F, Tests=T" summary) or plain (one TAP
                          stream with its plan: the drivers, the layout
                          check).  A test line is top-level "ok N" or
                          "not ok N"; "ok N # skip" is a skip, not a pass;
                          "not ok N # TODO" is a known failure, not a
                          failure.  A file's tests must match its plan
                          ("1..0 # SKIP why" skips the whole file), the
                          files and tests the runner's summary.
  regress LOG STATUS      pg_regress: "... ok" and "... FAILED" lines,
                          checked against "All N tests passed" or
                          "N of M tests failed".
  summary LOG STATUS      a log whose last such line is "N passed, N failed".
  one LOG STATUS          one test: passed when STATUS is 0.

Each way a suite's log does not add up (a file without its plan, a count
the runner does not confirm, a non-zero exit without a failed test) counts
as one failure more, and the log is shown.  The state of the run is
kept in the file TALLY_STATE names (JSON), one suite after another:

  begin NAME              a suite begins
  end                     prints each suite's count, skips and time, every
                          skip with its reason, then the last line
                          "N passed, N failed"; exits 1 if anything failed.

With INVENTORY_STRICT=1 (as .ci/run sets), `end` also fails the run for a
skip that scripts/allowed-skips does not list, and for a suite whose planned
tests -- a skipped file counting the tests the list records for it -- fall
below its floor in scripts/test-floors.
"""
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STATE = os.environ.get("TALLY_STATE")

TEST = re.compile(r"^(not )?ok (\d+)\b(.*)$")
PLAN = re.compile(r"^1\.\.(\d+)(?:\s*#\s*(?:skip|SKIP)\S*\s*(.*))?\s*$")
DIRECTIVE = re.compile(r"#\s*(skip|todo)\b\s*(.*)$", re.I)
FILE_HEADER = re.compile(r"^(?:\./)?/?(\S+\.(?:pl|sql|t|py|js))\s\.{2,}\s?.*$")
SUMMARY = re.compile(r"^Files=(\d+), Tests=(\d+),")


def load():
    with open(STATE, encoding="utf-8") as f:
        return json.load(f)


def save(state):
    with open(STATE, "w", encoding="utf-8") as f:
        json.dump(state, f)


def current(state):
    return state["suites"][-1]


def read(log):
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError:
        return []


def parse_tap(lines, runner):
    """Files of a TAP log: [{name, plan, skip_all, passed, failed, skips,
    todo, problems}], and the runner's summary (files, tests) or None."""
    files, summary = [], None
    cur = None

    def new(name):
        f = {"name": name, "plan": None, "skip_all": None, "passed": 0,
             "failed": 0, "skips": [], "todo": 0, "tests": 0, "problems": [],
             "failures": []}
        files.append(f)
        return f

    if runner == "plain":
        cur = new("")
    for i, line in enumerate(lines):
        m = SUMMARY.match(line)
        if m:
            summary = (int(m.group(1)), int(m.group(2)))
            continue
        if runner != "plain":
            m = FILE_HEADER.match(line)
            if m:
                cur = new(m.group(1).lstrip("/"))
                continue
        if cur is None:
            continue
        m = PLAN.match(line)
        if m:
            if cur["plan"] is not None:
                cur["problems"].append("two plans")
            cur["plan"] = int(m.group(1))
            if cur["plan"] == 0:
                cur["skip_all"] = (m.group(2) or "").strip() or "no reason given"
            continue
        m = TEST.match(line)
        if not m:
            continue
        cur["tests"] += 1
        d = DIRECTIVE.search(m.group(3) or "")
        kind = d.group(1).lower() if d else None
        if kind == "skip":
            cur["skips"].append({"test": m.group(2), "reason": d.group(2).strip()})
        elif m.group(1):
            if kind == "todo":
                cur["todo"] += 1
            else:
                cur["failed"] += 1
                cur["failures"].append(i)
        else:
            cur["passed"] += 1
    for f in files:
        if f["plan"] is None:
            f["problems"].append("no plan: it stopped before its end")
        elif f["plan"] != f["tests"]:
            f["problems"].append("planned %d tests, ran %d" % (f["plan"], f["tests"]))
    return files, summary


def show_failures(lines, files):
    shown = 0
    for f in files:
        for i in f["failures"]:
            for line in lines[i:i + 13]:
                if re.search(r"background_psql|^# *[{}']", line):
                    continue
                print(line)
                shown += 1
                if shown > 80:
                    return


def add(state, passed, failed, skips=(), todo=0, planned=0, problems=(), log=None, lines=None):
    s = current(state)
    s["passed"] += passed
    s["failed"] += failed
    s["todo"] += todo
    s["planned"] += planned
    s["skips"].extend(skips)
    msg = "%d passed, %d failed" % (passed, failed)
    if skips:
        msg += ", %d skipped" % len(skips)
    if todo:
        msg += ", %d todo" % todo
    print(msg)
    if problems:
        s["failed"] += len(problems)
        print("the suite's log does not add up (each counts as a failure):")
        for p in problems:
            print("  " + p)
        if lines is not None:
            print("its log ends:")
            for line in lines[-40:]:
                print(line)


def cmd_tap(state, log, status, runner):
    lines = read(log)
    files, summary = parse_tap(lines, runner)
    problems = []
    for f in files:
        problems += ["%s: %s" % (f["name"] or log, p) for p in f["problems"]]
    tests = sum(f["tests"] for f in files)
    if runner == "plain":
        if not files or files[0]["plan"] is None and not files[0]["tests"]:
            problems.append("no test ran")
    else:
        if summary is None:
            problems.append("no summary of %s (Files=, Tests=): it did not finish" % runner)
        elif summary != (len(files), tests):
            problems.append("%s counted %d files and %d tests, the log shows %d and %d"
                            % (runner, summary[0], summary[1], len(files), tests))
        if not files:
            problems.append("no test file ran")
    passed = sum(f["passed"] for f in files)
    failed = sum(f["failed"] for f in files)
    if status != 0 and failed == 0 and not problems:
        problems.append("it exited with status %d and no failed test" % status)
    skips = []
    for f in files:
        if f["skip_all"] is not None:
            skips.append({"file": f["name"], "test": "all", "reason": f["skip_all"]})
        for s in f["skips"]:
            skips.append({"file": f["name"], "test": s["test"], "reason": s["reason"]})
    show_failures(lines, files)
    planned = sum(f["plan"] or 0 for f in files)
    add(state, passed, failed, skips, sum(f["todo"] for f in files), planned,
        problems, log, lines if problems else None)


def cmd_regress(state, log, status):
    lines = read(log)
    ok = sum(1 for line in lines if re.search(r"\.\.\. ok\b", line))
    bad = sum(1 for line in lines if re.search(r"\.\.\. (FAILED|failed)\b", line))
    problems = []
    text = "\n".join(lines)
    m_all = re.search(r"All (\d+) tests passed", text)
    m_some = re.search(r"(\d+) of (\d+) tests failed", text)
    if m_all:
        if int(m_all.group(1)) != ok or bad:
            problems.append("pg_regress says all %s passed, the log shows %d ok and %d failed"
                            % (m_all.group(1), ok, bad))
    elif m_some:
        if int(m_some.group(1)) != bad or int(m_some.group(2)) != ok + bad:
            problems.append("pg_regress says %s of %s failed, the log shows %d ok and %d failed"
                            % (m_some.group(1), m_some.group(2), ok, bad))
    else:
        problems.append("no summary of pg_regress: it did not finish")
    if status != 0 and bad == 0 and not problems:
        problems.append("it exited with status %d and no failed test" % status)
    add(state, ok, bad, planned=ok + bad, problems=problems, log=log,
        lines=lines if problems else None)


def cmd_summary(state, log, status):
    lines = read(log)
    found = [line for line in lines if re.match(r"^\d+ passed, \d+ failed$", line)]
    if not found:
        add(state, 0, 0, problems=["no line \"N passed, N failed\": it did not finish"],
            lines=lines)
        return
    p, f = (int(x) for x in re.findall(r"\d+", found[-1]))
    problems = []
    if status != 0 and f == 0:
        problems.append("it exited with status %d and no failed test" % status)
    add(state, p, f, planned=p + f, problems=problems, lines=lines if problems or f else None)


def cmd_one(state, log, status):
    if status == 0:
        add(state, 1, 0, planned=1)
    else:
        add(state, 0, 1, planned=1)
        for line in read(log)[-40:]:
            print(line)


def table(path):
    """Rows of a |-separated file, comments and blank lines left out."""
    rows = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    rows.append([c.strip() for c in line.split("|")])
    except OSError:
        pass
    return rows


def allowed(skip, rules):
    """The tests a listed skip stands for (0 for one test), or None when
    scripts/allowed-skips does not list it."""
    for r in rules:
        if len(r) < 4 or not skip["file"].endswith(r[0]) or not re.search(r[2], skip["reason"]):
            continue
        tests = r[1].split()
        if tests[0] == "all" and skip["test"] == "all":
            return int(tests[1]) if len(tests) > 1 and tests[1].isdigit() else 0
        if tests[0] == skip["test"]:
            return 0
    return None


def cmd_end(state):
    strict = os.environ.get("INVENTORY_STRICT") == "1"
    rules = table(os.path.join(HERE, "allowed-skips"))
    floors = {r[0]: int(r[1]) for r in table(os.path.join(HERE, "test-floors")) if len(r) >= 2}
    passed = failed = skipped = 0
    print()
    for s in state["suites"]:
        t = s["end"] - s["start"]
        print("%-44s %5d passed, %3d failed, %3d skipped, %5d s"
              % (s["name"], s["passed"], s["failed"], len(s["skips"]), t))
        passed += s["passed"]
        failed += s["failed"]
        skipped += len(s["skips"])
    print()
    problems = []
    for s in state["suites"]:
        planned = s["planned"]
        for k in s["skips"]:
            n = allowed(k, rules)
            where = "%s: %s" % (s["name"], k["file"]) + ("" if k["test"] == "all" else " test %s" % k["test"])
            print("skipped  %s: %s%s" % (where, k["reason"], "" if n is not None else "  (not in scripts/allowed-skips)"))
            if n is None:
                problems.append("an unlisted skip: %s" % where)
            else:
                planned += n
        floor = floors.get(s["name"])
        if floor is not None and planned < floor:
            problems.append("%s planned %d tests, below its floor of %d in scripts/test-floors"
                            % (s["name"], planned, floor))
    if skipped:
        print()
    if strict:
        for p in problems:
            print("INVENTORY_STRICT: " + p)
            failed += 1
        if problems:
            print()
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


def main(argv):
    if not STATE:
        sys.exit("tally.py: TALLY_STATE is not set")
    cmd = argv[1]
    if cmd == "init":
        save({"suites": []})
        return 0
    state = load()
    if cmd == "begin":
        now = time.time()
        if state["suites"]:
            state["suites"][-1]["end"] = now
        state["suites"].append({"name": argv[2], "start": now, "end": now, "passed": 0,
                                "failed": 0, "todo": 0, "planned": 0, "skips": []})
        save(state)
        return 0
    if cmd == "end":
        if state["suites"]:
            state["suites"][-1]["end"] = time.time()
        return cmd_end(state)
    if not state["suites"]:
        sys.exit("tally.py: no suite has begun")
    log, status = argv[2], int(argv[3])
    if cmd == "tap":
        cmd_tap(state, log, status, argv[4])
    elif cmd == "regress":
        cmd_regress(state, log, status)
    elif cmd == "summary":
        cmd_summary(state, log, status)
    elif cmd == "one":
        cmd_one(state, log, status)
    else:
        sys.exit("tally.py: unknown command " + cmd)
    current(state)["end"] = time.time()
    save(state)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

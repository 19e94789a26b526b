#!/usr/bin/python3
"""bench/plot.py -- draws a benchmark report's results beside it.

Usage: bench/plot.py REPORT.md...

For each report, writes REPORT-tps.svg (TPS per case against clients) and
REPORT-ratios.svg (each target: the measured value against the target).
The numbers come from the report's own markdown tables, so a dated report
kept in bench/results/ can be drawn as well as bench/run.sh's latest one:

  - a throughput table: header "case | 1 client | 8 clients | ...";
  - a targets table: a "target" column, the value in "measured" (or
    "this run", or "median" for the table of rounds), the target either in that column ("≥ 10×") or in the
    target's own words ("case 4 ≥ 10× case 2b"), and PASS/MISS in "result"
    where the report judged it.

A report that holds several runs (each with its throughput table) gets
them side by side, labelled run 1, run 2, ...  Rows without a number (—,
FAILED, skipped) and rows without a target are left out.

Runs with Debian's python3-matplotlib (hence /usr/bin/python3, not a
python3 that may come first in PATH without it).
"""
import itertools
import math
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import matplotlib.ticker as ticker  # noqa: E402

# Text stays text, and the same report gives the same file: no date, fixed ids.
plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "inventory",
                     "font.size": 9})
SVG_META = {"Date": None}

NUMBER = re.compile(r"[0-9][0-9,]*(?:\.[0-9]+)?")
COMPARE = re.compile(r"(≥|≤|>=|<=)\s*(" + NUMBER.pattern + ")")
CLIENTS = re.compile(r"([0-9]+) clients?")
AT_CLIENTS = re.compile(r"at ([0-9]+) clients")

# what each kind of case is, by the word after its id ("4 inventory: ...")
STYLE = {"inventory": ("-", 2.0), "SQL": ("--", 1.2), "Redis": ("-.", 1.2),
         "floor": (":", 1.2)}
MARKERS = "osD^vP*Xhp<>"
RUN_MARKERS = "os^D"
PASS, MISS = "#2ca02c", "#d62728"


def number(text):
    """The number a cell starts with ("23,816 rows/s" -> 23816.0), or None."""
    m = NUMBER.match(text.strip())
    return float(m.group().replace(",", "")) if m else None


def cells(line):
    """The cells of a table line, without markdown's backticks and bold."""
    return [c.strip().replace("`", "").replace("**", "")
            for c in line.strip().strip("|").split("|")]


def tables(lines):
    """(heading, header, rows) of each markdown table, under its last heading."""
    heading, block = "", []
    for line in lines + [""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if block:
            rows = [cells(b) for b in block if not re.match(r"^\|[-:| ]+\|\s*$", b)]
            yield heading, rows[0], rows[1:]
            block = []
        if line.startswith("#"):
            heading = line.lstrip("#").strip()


def target_of(text):
    """(operator, value) of a target's words, or None for a ratio shown
    without a target.  "about 1" is judged as bench/run.sh judges it: ≤ 2."""
    m = COMPARE.search(text)
    if m:
        op = ">=" if m.group(1) in ("≥", ">=") else "<="
        return op, number(m.group(2))
    m = re.search(r"about (" + NUMBER.pattern + ")", text)
    if m:
        return "<=", 2 * number(m.group(1))
    return None


def parse(path):
    """The runs of a report: each {"clients": [...], "tps": {case: {c: tps}},
    "targets": [(label, measured text, value, (op, target), verdict)], "at": N}."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    runs = []
    for heading, header, rows in tables(lines):
        low = [h.lower() for h in header]
        counts = [CLIENTS.fullmatch(h) for h in low[1:]]
        if low[0] == "case" and counts and all(counts):
            clients = [int(m.group(1)) for m in counts]
            tps = {}
            for row in rows:
                tps[row[0]] = {c: number(v) for c, v in zip(clients, row[1:])
                               if number(v) is not None}
            runs.append({"clients": clients, "tps": tps, "targets": [], "at": None})
        elif "target" in low and runs:
            run = runs[-1]
            at = AT_CLIENTS.search(heading + " " + header[0])
            run["at"] = int(at.group(1)) if at else max(run["clients"])
            t = low.index("target")
            # the value: "measured", "this run", or the median of rounds
            names = [n for n in ("measured", "this run", "median") if n in low]
            if not names:
                continue
            col = low.index(names[0])
            for row in rows:
                label, measured = row[0], row[col]
                if names[0] == "median":
                    label += ", median of the rounds"
                target = target_of(row[t])
                if t != 0 and target:
                    judged = "" if COMPARE.search(row[t]) else f", judged ≤ {target[1]:g}"
                    label += f"  (target {row[t]}{judged})"
                value = number(measured)
                if target is None or value is None:
                    continue
                verdict = row[low.index("result")] if "result" in low else ""
                if verdict not in ("PASS", "MISS"):
                    op, goal = target
                    verdict = "PASS" if (value >= goal if op == ">=" else value <= goal) else "MISS"
                run["targets"].append((label, measured, value, target, verdict))
    return runs


def when(path):
    """The date and time of the report's run, as the report gives it."""
    with open(path, encoding="utf-8") as f:
        m = re.search(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2} UTC", f.read())
    return m.group() if m else ""


def colours(cases):
    """A colour per case: a family of shades per kind of case, so that
    inventory's cases stand apart from what users would pick instead."""
    families = {"floor": ("Greys", 0.45, 0.8), "SQL": ("Blues", 0.4, 0.95),
                "Redis": ("Oranges", 0.5, 0.85)}
    kinds = [kind_of(c) for c in cases]
    dark = plt.get_cmap("Dark2").colors
    own = itertools.cycle(dark[i] for i in (0, 2, 3, 4, 5, 6, 7, 1))   # orange, Redis's, last
    out = {}
    for case, kind in zip(cases, kinds):
        if kind in families:
            name, lo, hi = families[kind]
            same = [c for c, k in zip(cases, kinds) if k == kind]
            step = (hi - lo) / max(len(same) - 1, 1)
            out[case] = plt.get_cmap(name)(hi - step * same.index(case))
        else:
            out[case] = next(own)
    return out


def kind_of(case):
    """The word after a case's id: floor, SQL, Redis or inventory."""
    words = case.split()
    return words[1].rstrip(":") if len(words) > 1 else ""


def label_ids(ax, points, gap=0.045):
    """Writes each case's id right of its last point, nudged apart where
    several end close together (gap in decades of the log scale)."""
    for x in {p[0] for p in points}:
        at = sorted((math.log10(y), text, colour) for px, y, text, colour in points if px == x)
        last = -math.inf
        for ly, text, colour in at:
            last = max(ly, last + gap)
            ax.annotate(text, (x, 10 ** last), xytext=(6, 0), textcoords="offset points",
                        va="center", fontsize=7, color=colour)


def nothing(text, title, out):
    """A picture that says there is nothing to draw, so that a report's
    links always lead somewhere."""
    fig, ax = plt.subplots(figsize=(8, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center")
    ax.set_title(title)
    fig.savefig(out, metadata=SVG_META)
    plt.close(fig)


def draw_tps(runs, title, out):
    if not any(run["tps"][case] for run in runs for case in run["tps"]):
        return nothing("No case measured a throughput in this report.", title, out)
    fig, ax = plt.subplots(figsize=(11, 6.5))
    cases = []   # every case once, in the report's order: one colour each
    for run in runs:
        cases += [c for c in run["tps"] if c not in cases]
    colour = colours(cases)
    counts = sorted({c for run in runs for c in run["clients"]})
    ends = []
    for r, run in enumerate(runs):
        for case, tps in run["tps"].items():
            if not tps:
                continue
            line, width = STYLE.get(kind_of(case), ("-", 1.2))
            # a gap where a count has no number, so the line does not bridge it
            ys = [tps.get(c, math.nan) for c in run["clients"]]
            if len(runs) > 1:
                label, marker = f"{case}  (run {r + 1})", RUN_MARKERS[r % len(RUN_MARKERS)]
            else:
                label, marker = case, MARKERS[cases.index(case) % len(MARKERS)]
            ax.plot(run["clients"], ys, line, lw=width, marker=marker, ms=5,
                    color=colour[case], label=label)
            last = max(tps)
            ends.append((last, tps[last], case.split()[0], colour[case]))
    label_ids(ax, ends)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(counts, [str(c) for c in counts])
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlim(counts[0] / 1.4, counts[-1] * 1.4)
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlabel("clients")
    ax.set_ylabel("transactions per second (log scale)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7.5, frameon=False)
    fig.savefig(out, bbox_inches="tight", metadata=SVG_META)
    plt.close(fig)


def draw_ratios(runs, title, out):
    rows = []
    for r, run in enumerate(runs):
        for row in run["targets"]:
            rows.append(((f"run {r + 1}: " if len(runs) > 1 else "") + row[0],) + row[1:])
    if not rows:
        return nothing("No target was measured in this report.", title, out)
    # one row per target, each on its own scale: ratios, rows/s and bytes
    fig, axes = plt.subplots(len(rows), 1, figsize=(9, 0.62 * len(rows) + 0.9), squeeze=False)
    for ax, (label, measured, value, (op, goal), verdict) in zip(axes[:, 0], rows):
        colour = PASS if verdict == "PASS" else MISS
        ax.barh(0, value, height=0.6, color=colour, alpha=0.85)
        ax.axvline(goal, color="black", lw=1.5, ls="--")
        ax.set_xlim(0, max(value, goal) * 1.15)
        ax.set_ylim(-0.35, 0.8)   # room above the bar for the target's value
        ax.text(goal, 0.78, f" {'≥' if op == '>=' else '≤'} {goal:,g}", va="top", fontsize=7.5)
        # the value as the report prints it, in a column of its own
        ax.text(1.02, 0, f"{measured}  {verdict}", transform=ax.get_yaxis_transform(), va="center",
                fontsize=8.5, fontweight="bold", color=colour)
        ax.set_title(label, loc="left", fontsize=8.5, pad=2)
        ax.set_xticks([])
        ax.set_yticks([])
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
    fig.suptitle(title, x=0.01, ha="left", fontsize=10)
    fig.tight_layout(h_pad=0.6)
    fig.savefig(out, bbox_inches="tight", metadata=SVG_META)
    plt.close(fig)


def main(paths):
    if not paths:
        sys.exit(__doc__.split("\n\n")[1])
    for path in paths:
        runs = parse(path)
        if not runs:
            sys.exit(f"{path}: no throughput table (| case | 1 client | ...) found")
        base = os.path.splitext(path)[0]
        name = ", ".join(filter(None, (os.path.basename(base), when(path))))
        draw_tps(runs, f"TPS per case against clients ({name})", base + "-tps.svg")
        at = {run["at"] for run in runs if run["at"]}
        on = f" at {at.pop()} clients" if len(at) == 1 else ""
        draw_ratios(runs, f"Targets{on}: measured (bar) against its target (dashed line)\n{name}",
                    base + "-ratios.svg")
        print(f"{base}-tps.svg, {base}-ratios.svg")


if __name__ == "__main__":
    main(sys.argv[1:])

"""bench/pictures.py -- the two pictures of a benchmark report, for
bench/report.py, which gives them its figures:

  draw_tps(series, clients, title, out): TPS per case against clients, one
      line per case (log scales), the case's id at its last point;
  draw_ratios(targets, title, out): each target, a bar of the measured value
      against its target as a dashed line, green for PASS, red for MISS.

Needs matplotlib (Debian's python3-matplotlib); importing this module
without it raises ImportError, and the report then has no pictures.  The
SVG is deterministic: text stays text, ids come from a fixed salt, and no
date is written, so the same data gives the same files.
"""
import itertools
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import matplotlib.ticker as ticker  # noqa: E402

plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "inventory",
                     "font.size": 9})
SVG_META = {"Date": None}

# what each kind of case is, by the word after its id ("4 inventory: ...")
STYLE = {"inventory": ("-", 2.0), "SQL": ("--", 1.2), "Redis": ("-.", 1.2),
         "floor": (":", 1.2)}
MARKERS = "osD^vP*Xhp<>"
PASS, MISS = "#2ca02c", "#d62728"


def kind_of(case):
    """The word after a case's id: floor, SQL, Redis, inventory or router."""
    words = case.split()
    return words[1].rstrip(":") if len(words) > 1 else ""


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


def draw_tps(series, clients, title, out):
    """series: [(case name, {clients: tps})] in the report's order, only
    the counts that have a number; clients: the run's client counts."""
    if not any(tps for _, tps in series):
        return nothing("No case measured a throughput in this report.", title, out)
    fig, ax = plt.subplots(figsize=(11, 6.5))
    cases = [case for case, _ in series]
    colour = colours(cases)
    counts = sorted(clients)
    ends = []
    for case, tps in series:
        if not tps:
            continue
        line, width = STYLE.get(kind_of(case), ("-", 1.2))
        # a gap where a count has no number, so the line does not bridge it
        ys = [tps.get(c, math.nan) for c in clients]
        ax.plot(clients, ys, line, lw=width, marker=MARKERS[cases.index(case) % len(MARKERS)],
                ms=5, color=colour[case], label=case)
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


def draw_ratios(targets, title, out):
    """targets: [(label, measured as the report shows it, value, (op, goal),
    PASS or MISS)], only those with a goal and a value."""
    if not targets:
        return nothing("No target was measured in this report.", title, out)
    # one row per target, each on its own scale: ratios, rows/s and bytes
    fig, axes = plt.subplots(len(targets), 1, figsize=(9, 0.62 * len(targets) + 0.9), squeeze=False)
    for ax, (label, measured, value, (op, goal), verdict) in zip(axes[:, 0], targets):
        colour = PASS if verdict == "PASS" else MISS
        ax.barh(0, value, height=0.6, color=colour, alpha=0.85)
        ax.axvline(goal, color="black", lw=1.5, ls="--")
        ax.set_xlim(min(0, value) * 1.15, max(value, goal) * 1.15)
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

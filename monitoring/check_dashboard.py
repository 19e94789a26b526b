#!/usr/bin/env python3
"""Check that every metric the dashboard and the alert rules use is exported.

    check_dashboard.py SCRAPE [--require-all] [--optional PREFIX]...
                       [--dashboard FILE] [--rules FILE]...
    check_dashboard.py --list [--dashboard FILE] [--rules FILE]...

SCRAPE is a file of the exporter's /metrics text (curl -s
http://HOST:9187/metrics > scrape.txt). The metric names are taken from
every PromQL expression of the Grafana dashboard (its panels' targets and
its template variables' queries) and of the alert rules (each rule's
expr); a name a recording rule of those files defines counts as present.
Some series exist only at times, and a healthy server may have none of
them: the replication slots' (no slot), the express writers' (no writer
running), the hot SKUs' (nothing cached yet), the next due work's
(nothing due). Their absence is listed and is not a failure;
--optional PREFIX adds a prefix of names to them (say, a router's
series), --require-all makes every name required (a scrape of a server
that is selling, with a slot).
Exit status: 0 when every required name is in the scrape, 1 when some are
not (they are listed, with where each is used), 2 on bad usage or an
unreadable file: a deployment can gate on it. --list prints the names
used, one a line, and reads no scrape.

Python 3 standard library only. The defaults are the files beside this
script: grafana/inventory.json and prometheus/inventory.rules.yml.
"""

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DASHBOARD = os.path.join(HERE, "grafana", "inventory.json")
DEFAULT_RULES = os.path.join(HERE, "prometheus", "inventory.rules.yml")

# Series a healthy server may not have, by name prefix, and why.
OPTIONAL = {
    "inventory_replication_slot_": "no replication slot",
    "inventory_express_": "no express writer running",
    "inventory_hot_sku_": "no SKU cached yet",
    "inventory_worker_next_due_": "no work due",
}
ALWAYS = {"inventory_express_fallbacks_total"}

# Words of PromQL that look like names but are not metrics.
KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "and", "or", "unless", "offset", "atan2", "inf", "nan", "start", "end",
}

IDENT = re.compile(r"(?<![A-Za-z0-9_:.$])[A-Za-z_:][A-Za-z0-9_:]*")
STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
NAME_MATCHER = re.compile(r'__name__\s*=\s*("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')')
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
GRAFANA_VAR = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[\w+\]\]")


def promql_metrics(expr):
    """The metric names an expression selects."""
    names = set()
    # a selector by __name__ (inside braces, before they are dropped)
    for m in NAME_MATCHER.finditer(expr):
        names.add(m.group(1)[1:-1])
    text = STRING.sub('""', expr)
    # label matchers, then ranges and subqueries
    prev = None
    while prev != text:
        prev = text
        text = re.sub(r"\{[^{}]*\}", " ", text)
    text = re.sub(r"\[[^\[\]]*\]", " ", text)
    text = GROUPING.sub(" ", text)
    text = GRAFANA_VAR.sub(" ", text)
    for m in IDENT.finditer(text):
        word = m.group(0)
        rest = text[m.end():].lstrip()
        if rest.startswith("("):
            continue            # a function or an aggregation
        if word.lower() in KEYWORDS:
            continue
        names.add(word)
    return names


def split_args(s):
    """The top-level comma-separated arguments of s."""
    args, depth, cur, quote = [], 0, "", None
    for ch in s:
        if quote:
            cur += ch
            if ch == quote:
                quote = None
            continue
        if ch in "\"'`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(cur)
            cur = ""
            continue
        cur += ch
    args.append(cur)
    return [a.strip() for a in args]


def variable_metrics(query):
    """The metric names a Grafana template variable's query reads."""
    q = query.strip()
    m = re.match(r"^(label_values|query_result|metrics|label_names)\s*\((.*)\)\s*$", q, re.S)
    if not m:
        return promql_metrics(q)
    func, inner = m.group(1), m.group(2)
    if func == "label_values":
        args = split_args(inner)
        return promql_metrics(args[0]) if len(args) == 2 else set()
    if func == "query_result":
        return promql_metrics(inner)
    return set()                # metrics(regex), label_names(): no metric


def dashboard_uses(path):
    """{name: [where]} for the dashboard's targets and variables."""
    with open(path, encoding="utf-8") as f:
        dash = json.load(f)
    uses = {}

    def add(names, where):
        for n in names:
            uses.setdefault(n, []).append(where)

    def walk(node, title):
        if isinstance(node, dict):
            title = node.get("title", title) if node.get("type") != "row" else title
            expr = node.get("expr")
            if isinstance(expr, str) and expr.strip():
                add(promql_metrics(expr), "%s: panel %r" % (os.path.basename(path), title))
            for k, v in node.items():
                if k != "templating":
                    walk(v, title)
        elif isinstance(node, list):
            for v in node:
                walk(v, title)

    walk(dash.get("panels", []), None)
    for var in dash.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        q = var.get("query")
        if isinstance(q, dict):
            q = q.get("query", "")
        if isinstance(q, str) and q.strip():
            add(variable_metrics(q), "%s: variable %r" % (os.path.basename(path), var.get("name")))
    return uses


def yaml_scalar(lines, i, indent, value):
    """The value of the key on lines[i], inline or a block scalar; and the next line."""
    value = value.strip()
    if value and value[0] in "|>":
        folded = value[0] == ">"
        block, j = [], i + 1
        while j < len(lines) and (not lines[j].strip() or
                                  len(lines[j]) - len(lines[j].lstrip()) > indent):
            block.append(lines[j].strip())
            j += 1
        return (" " if folded else "\n").join(block).strip(), j
    if value[:1] == '"':
        return json.loads(value), i + 1
    if value[:1] == "'":
        return value[1:-1].replace("''", "'"), i + 1
    return re.sub(r"\s+#.*$", "", value), i + 1


def rules_uses(path):
    """({name: [where]} of the rules' expressions, {names recorded})."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    uses, recorded = {}, set()
    current = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^(\s*)(?:-\s+)?(alert|record|expr):\s*(.*)$", line)
        if not m:
            i += 1
            continue
        # a block scalar's lines are indented more than its key
        value, i = yaml_scalar(lines, i, m.start(2), m.group(3))
        key = m.group(2)
        if key == "alert":
            current = "alert %s" % value
        elif key == "record":
            current = "record %s" % value
            recorded.add(value)
        else:
            for n in promql_metrics(value):
                uses.setdefault(n, []).append("%s: %s" % (os.path.basename(path), current))
    return uses, recorded


def scrape_names(path):
    """The metric names of the samples in a /metrics text."""
    names = set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)", line)
            if m:
                names.add(m.group(1))
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scrape", nargs="?", help="a file of the exporter's /metrics text")
    ap.add_argument("--dashboard", action="append", help="Grafana dashboard JSON (default: %(default)s)")
    ap.add_argument("--rules", action="append", help="Prometheus rules file")
    ap.add_argument("--list", action="store_true", help="print the metric names used, and stop")
    ap.add_argument("--optional", action="append", default=[], metavar="PREFIX",
                    help="names with this prefix may be absent (besides the built-in ones)")
    ap.add_argument("--require-all", action="store_true",
                    help="every name is required, the built-in optional ones too")
    args = ap.parse_args()
    dashboards = args.dashboard or [DEFAULT_DASHBOARD]
    rules = args.rules or [DEFAULT_RULES]
    if not args.list and not args.scrape:
        ap.error("a scrape file is required (or --list)")

    uses, recorded = {}, set()
    try:
        for d in dashboards:
            for n, w in dashboard_uses(d).items():
                uses.setdefault(n, []).extend(w)
        for r in rules:
            u, rec = rules_uses(r)
            recorded |= rec
            for n, w in u.items():
                uses.setdefault(n, []).extend(w)
        if args.list:
            for n in sorted(uses):
                print(n)
            return 0
        exported = scrape_names(args.scrape)
    except (OSError, ValueError) as e:
        print("check_dashboard: %s" % e, file=sys.stderr)
        return 2

    optional = {} if args.require_all else dict(OPTIONAL)
    for prefix in args.optional:
        optional[prefix] = "--optional %s" % prefix

    def why_optional(name):
        if name in ALWAYS and not any(name.startswith(p) for p in args.optional):
            return None
        for prefix, why in optional.items():
            if name.startswith(prefix):
                return why
        return None

    absent = sorted(n for n in uses if n not in exported and n not in recorded)
    missing = [n for n in absent if why_optional(n) is None]
    allowed = [n for n in absent if why_optional(n) is not None]
    if allowed:
        print("%d of %d metric names used are absent and optional:" % (len(allowed), len(uses)))
        for n in allowed:
            print("  %s  (%s)" % (n, why_optional(n)))
    if missing:
        print("%d of %d metric names used are not in %s:" % (len(missing), len(uses), args.scrape))
        for n in missing:
            print("  %s  (%s)" % (n, "; ".join(sorted(set(uses[n])))))
        return 1
    print("all %d required metric names used are in %s" % (len(uses) - len(allowed), args.scrape))
    return 0


if __name__ == "__main__":
    sys.exit(main())

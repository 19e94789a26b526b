#!/usr/bin/python3
"""scripts/check_layers.py -- the layout of src/ holds: calls go down the
layers, one folder to a layer, and no module reaches itself through its
includes.

A module is a .c file and its .h (src/shmem/cache.c and src/shmem/cache.h
are the module shmem/cache), with its internal header if it has one
(src/shmem/cache_internal.h: the layout that the files built on the module
share); any other header without a .c is a module of its own.
Module A depends on module B when A's .c or .h includes B's header.  The
layers, top to bottom (CONTRIBUTING.md says what each one is):

    init            src/init.c: _PG_init
    api             the SQL-callable functions
    worker          the background processes
    movement        one movement on the tables and the cache, for the API
                    and the express writer
    maintenance     expiry, fold, verify and the asks of a reconciler
    enforce         the trigger, the rules, restores, the utility hook
    xact            a transaction's pending changes
    shmem           shared memory: the cache, escrow, key filter, pool
    tables          the extension's tables: catalog, rows, scans, SQL
    types           the inventory.state type
    (inventory.h)   limits shared by every layer; fault.c, faults a test
                    build injects; setting.c, settings only a database has

A module may include the headers of its own folder and those of the layers
below; no two folders share a rank, so an include between folders goes
down or fails.
Prints TAP: one test, with every include that goes up and every cycle
as its diagnostics.  Usage:
    scripts/check_layers.py [SRC_DIR]
"""
import os
import re
import sys

LAYERS = [("init",), ("api",), ("worker",), ("movement",), ("maintenance",), ("enforce",),
          ("xact",), ("shmem",), ("tables",), ("types",), ("inventory", "fault", "setting")]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module_of(name):
    """The module of a file or include name relative to src/, less its
    .c or .h: an internal header belongs to the module it is internal to."""
    mod = name[:-2]
    return mod[:-len("_internal")] if mod.endswith("_internal") else mod


def modules(src):
    """{module: [files]} for every .c and .h under src."""
    mods = {}
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith((".c", ".h")):
                path = os.path.join(root, f)
                mods.setdefault(module_of(os.path.relpath(path, src)), []).append(path)
    return mods


def layer(mod):
    top = mod.split("/")[0]
    if top not in RANK:
        raise SystemExit("Bail out! %s is in no layer: add its folder to "
                         "LAYERS in %s" % (mod, sys.argv[0]))
    return top


def dependencies(src, mods):
    deps = {m: set() for m in mods}
    for mod, files in mods.items():
        for path in files:
            with open(path, encoding="utf-8") as f:
                for inc in INCLUDE.findall(f.read()):
                    target = module_of(inc) if inc.endswith(".h") else None
                    if target in mods and target != mod:
                        deps[mod].add(target)
    return deps


def cycles(deps):
    """The strongly connected sets of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                found.append(sorted(scc))

    for v in sorted(deps):
        if v not in index:
            visit(v)
    return found


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "src")
    mods = modules(src)
    deps = dependencies(src, mods)
    wrong = []
    for mod in sorted(mods):
        for d in sorted(deps[mod]):
            if RANK[layer(d)] < RANK[layer(mod)]:
                wrong.append("%s (layer %s) includes %s (layer %s)"
                             % (mod, layer(mod), d, layer(d)))
    for scc in cycles(deps):
        wrong.append("one cycle through: " + ", ".join(scc))
    print("1..1")
    what = ("the layers of src/ hold: %d modules, each includes only its layer "
            "and below, and none reaches itself through its includes" % len(mods))
    if wrong:
        print("not ok 1 - " + what)
        for w in wrong:
            print("#   " + w)
        return 1
    print("ok 1 - " + what)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The module graph of src/ (without the tests): no import cycles, and each layer imports only
what its module doc allows. An edge is any `crate::a::b` or `super::` path in a module's code
or docs outside its `#[cfg(test)] mod tests`; a path to an item re-exported at the crate root
counts as the root. Prints each layer's edges and exits 1 on a cycle or a forbidden edge.

    python3 scripts/check-layers.py
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

# layer -> the top-level modules it may import (besides itself and the crate root's
# re-exports). Anything not listed here is not checked beyond cycles.
ALLOWED = {
    "error": {"proto", "ring", "value"},
    "proto": set(),
    "ring": set(),
    "value": set(),
    "plan": {"ring"},
    "detect": {"ring", "servers", "hash", "value"},
    "settings": {"error", "ring", "proto", "value", "near", "hotkeys"},
    "core": {"error", "proto", "ring", "settings", "value", "observe", "hotkeys", "near",
             "plan", "outcome", "watch"},
    "discovery": {"core", "settings", "error", "ring", "observe", "proto", "servers", "outcome"},
    "blocking": {"core", "settings", "error", "outcome", "ring", "observe", "routes", "proto",
                 "servers", "hash", "discovery"},
    "aio": {"core", "settings", "error", "outcome", "ring", "observe", "routes", "proto",
            "servers", "hash", "discovery"},
}


def modules():
    found = {}
    for d, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(d, f)
            parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            found["::".join(parts)] = path
    return found


def edges_of(mods):
    def resolve(path):
        segs = path.split("::")
        for i in range(len(segs), 0, -1):
            m = "::".join(segs[:i])
            if m in mods:
                return m
        return ""

    edges = {}
    for m, path in mods.items():
        with open(path, encoding="utf-8") as fh:
            src = fh.read()
        src = re.split(r"#\[cfg\(test\)\]\s*mod tests", src)[0]
        base = m.split("::") if m else []
        is_dir = path.endswith(("mod.rs", "lib.rs"))
        parent = base if is_dir else base[:-1]
        paths = re.findall(r"crate::([a-z_0-9]+(?:::[a-z_0-9]+)*)", src)
        for sup, rest in re.findall(r"\bsuper::((?:super::)*)([a-z_0-9]+(?:::[a-z_0-9]+)*)", src):
            up = sup.count("super::")
            p = parent[: len(parent) - up] if up else parent
            paths.append("::".join(p + [rest]))
        targets = set()
        for p in paths:
            t = resolve(p)
            if t and t != m and not m.startswith(t + "::"):
                targets.add(t)
        edges[m] = targets
    return edges


def cycles(edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(edges):
        if v not in index:
            visit(v)
    return out


def main():
    mods = modules()
    edges = edges_of(mods)
    bad = []
    layers = {}
    for m, ts in edges.items():
        top = m.split("::")[0]
        for t in ts:
            tt = t.split("::")[0]
            if tt != top:
                layers.setdefault(top, set()).add(tt)
                if top in ALLOWED and tt not in ALLOWED[top]:
                    bad.append(f"{m} imports {t}: not allowed for layer {top}")
    for top in sorted(layers):
        print(f"{top or '(root)'} -> {', '.join(sorted(layers[top]))}")
    found = cycles(edges)
    for comp in found:
        bad.append("import cycle: " + " -> ".join(comp))
    print(f"modules: {len(mods)}, import cycles: {len(found)}, forbidden edges: "
          f"{len(bad) - len(found)}")
    for b in bad:
        print("FAIL:", b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

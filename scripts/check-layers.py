#!/usr/bin/env python3
"""The module graph of src/ (without the tests): no import cycles, and each layer imports only
what its module doc allows.

An edge is any path to another module in a module's code outside its `#[cfg(test)] mod tests`:
`crate::a::b`, `$crate::a::b` (a macro's body counts for the module that defines the macro),
`super::x`, and every path of a `use crate::{a::X, b::{Y, Z}}` or `super::{...}` list. A path
to an item goes to the module that defines it: re-exports (`pub use`, `pub(crate) use`, in any
module, the crate root's included) are followed, so `crate::Client` is an edge to `blocking`.
Comments and doc comments are not code: an intra-doc link compiles to nothing.

Every top-level module must have a row in ALLOWED (a new module is placed, not ignored). The
report gives each layer's edges and the cycles between top-level modules; it exits 1 on a
cycle (between any two modules), a forbidden edge or a module without a row.

    python3 scripts/check-layers.py              # src/
    python3 scripts/check-layers.py --self-test  # fails on planted cycles, passes without
"""
import os
import re
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

# layer -> the top-level modules it may import (besides itself and the crate root).
ALLOWED = {
    "error": {"proto", "ring", "value"},
    "proto": set(),
    "ring": set(),
    "value": set(),
    "plan": {"ring"},
    "detect": {"ring", "value"},
    "settings": {"error", "ring", "proto", "value", "near"},
    "config": {"error", "ring", "settings"},
    "peer": {"config", "ring", "settings", "value", "error"},
    "hotkeys": {"near", "observe", "error", "settings"},
    "near": {"error", "outcome", "settings"},
    "outcome": {"error", "proto", "ring", "value"},
    "observe": {"error", "outcome", "proto", "settings", "ring"},
    "watch": {"error", "ring"},
    "core": {"error", "proto", "ring", "settings", "value", "observe", "hotkeys", "near",
             "plan", "outcome", "watch"},
    "discovery": {"core", "settings", "error", "ring", "observe", "proto", "outcome"},
    "routes": {"core", "settings", "error", "outcome", "proto", "ring", "value", "observe",
               "hotkeys", "near"},
    "blocking": {"core", "settings", "error", "outcome", "ring", "observe", "routes", "proto",
                 "discovery", "hotkeys", "value"},
    "aio": {"core", "settings", "error", "outcome", "ring", "observe", "routes", "proto",
            "discovery", "hotkeys", "value"},
}


def modules(root):
    found = {}
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(d, f)
            parts = os.path.relpath(path, root)[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib"):
                parts = parts[:-1]
            found["::".join(parts)] = path
    return found


TEST_MOD = re.compile(
    r"#\[cfg\((?:all\()?test\b[^\]]*\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([a-z]+\))?\s+)?mod\s+\w+\s*\{")


def without_test_modules(src):
    """`src` without its `#[cfg(test)]` modules (`mod tests`, test helpers), braces matched."""
    out, at = [], 0
    for m in TEST_MOD.finditer(src):
        if m.start() < at:
            continue
        out.append(src[at:m.start()])
        depth, i = 1, m.end()
        while i < len(src) and depth:
            depth += {"{": 1, "}": -1}.get(src[i], 0)
            i += 1
        at = i
    out.append(src[at:])
    return "".join(out)


def code_of(path):
    """The module's code: without its test modules, comments and string literals' contents."""
    with open(path, encoding="utf-8") as fh:
        src = fh.read()
    # doc strings in attributes (`#[doc = "..."]`, `#[error("...")]`) and comments are not code;
    # raw strings (`r#"..."#`) hold examples
    src = re.sub(r'r(#+)"(?:.|\n)*?"\1', '""', src)
    src = re.sub(r'"(?:\\.|[^"\\])*"', '""', src)
    src = re.sub(r"/\*(?:.|\n)*?\*/", "", src)
    src = re.sub(r"//[^\n]*", "", src)
    return without_test_modules(src)


def expand(prefix, body):
    """The paths of a `use` tree body (what follows `prefix::`), braces expanded."""
    body = body.strip()
    if not body.startswith("{"):
        m = re.match(r"([A-Za-z_0-9:]+)(?:\s*::\s*(\{.*\}))?(?:\s+as\s+([A-Za-z_0-9]+))?$", body, re.S)
        if not m:
            return []
        head = m.group(1).strip(":")
        if m.group(2):
            return expand(prefix + [p for p in head.split("::") if p], m.group(2))
        segs = [p for p in head.split("::") if p]
        return [(prefix + segs, m.group(3) or (segs[-1] if segs else None))]
    inner = body[1:-1]
    out, depth, start = [], 0, 0
    for i, c in enumerate(inner):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(inner[start:i])
            start = i + 1
    out.append(inner[start:])
    paths = []
    for part in out:
        part = part.strip()
        if not part:
            continue
        if part == "self":
            paths.append((prefix, prefix[-1] if prefix else None))
        else:
            paths.extend(expand(prefix, part))
    return paths


USE = re.compile(r"\b(pub(?:\([a-z]+\))?\s+)?use\s+([^;]+);")


def uses(code):
    """Each `use` of `code`: (is a re-export, path segments, the name it binds)."""
    for m in USE.finditer(code):
        for segs, name in expand([], " ".join(m.group(2).split())):
            yield bool(m.group(1)), segs, name


def absolute(m, segs, is_dir):
    """`segs` (a use path or a path in code) of module `m` as a path from the crate root, or
    None for a path into another crate (std, a dependency)."""
    base = m.split("::") if m else []
    parent = base if is_dir else base[:-1]
    if not segs:
        return None
    if segs[0] in ("crate", "$crate"):
        return segs[1:]
    if segs[0] == "self":
        return parent + segs[1:]
    if segs[0] == "super":
        p = parent
        while segs and segs[0] == "super":
            p = p[:-1]
            segs = segs[1:]
        return p + segs
    return None


def graph(root):
    mods = modules(root)
    codes = {m: code_of(p) for m, p in mods.items()}
    is_dir = {m: p.endswith(("mod.rs", "lib.rs")) for m, p in mods.items()}
    # (module, name) -> absolute path it re-exports; relative `use x::Y` in a module
    # resolves from that module's directory
    exports = {}
    for m, code in codes.items():
        for _, segs, name in uses(code):
            if name is None:
                continue
            a = absolute(m, segs, is_dir[m])
            if a is None:
                # a relative path: a child module's item (`pub use client::Client`)
                base = m.split("::") if m else []
                parent = base if is_dir[m] else base[:-1]
                if "::".join(parent + segs[:1]) in mods:
                    a = parent + segs
            if a is not None:
                exports[(m, name)] = a

    def resolve(path, seen=0):
        """The module that defines what `path` (from the root) names."""
        segs = list(path)
        for i in range(len(segs), -1, -1):
            mod = "::".join(segs[:i])
            if mod in mods or i == 0:
                rest = segs[i:]
                if rest and (mod, rest[0]) in exports and seen < 20:
                    target = exports[(mod, rest[0])] + rest[1:]
                    return resolve(target, seen + 1)
                return mod
        return ""

    edges = {}
    for m, code in codes.items():
        paths = []
        for _, segs, _ in uses(code):
            a = absolute(m, segs, is_dir[m])
            if a is not None:
                paths.append(a)
        for p in re.findall(r"(?<![A-Za-z_0-9])\$?crate((?:::[A-Za-z_0-9]+)+)", code):
            paths.append([s for s in p.split("::") if s])
        for p in re.findall(r"(?<![A-Za-z_0-9:])((?:super::)+[A-Za-z_0-9]+(?:::[A-Za-z_0-9]+)*)", code):
            a = absolute(m, p.split("::"), is_dir[m])
            if a is not None:
                paths.append(a)
        targets = set()
        for p in paths:
            t = resolve(p)
            if t and t != m and not m.startswith(t + "::"):
                targets.add(t)
        edges[m] = targets
    return mods, edges


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


def check(root, allowed, quiet=False):
    mods, edges = graph(root)
    bad = []
    layers = {}
    for m, ts in edges.items():
        top = m.split("::")[0]
        for t in ts:
            tt = t.split("::")[0]
            if tt != top and tt:
                layers.setdefault(top, {}).setdefault(tt, m)
                if top and top in allowed and tt not in allowed[top]:
                    bad.append(f"{m} imports {t}: not allowed for layer {top}")
    tops = sorted({m.split("::")[0] for m in mods if m})
    for top in tops:
        if top not in allowed:
            bad.append(f"module {top} has no row in ALLOWED: say which layers it may import")
    top_edges = {top: set(ts) for top, ts in layers.items() if top}
    top_cycles = cycles(top_edges)
    module_cycles = cycles(edges)
    if not quiet:
        for top in sorted(layers):
            print(f"{top or '(root)'} -> {', '.join(sorted(layers[top]))}")
    for comp in top_cycles:
        # each edge of the cycle with one module that makes it, so it can be found
        why = [f"{a} -> {b} ({layers[a][b]})" for a in comp for b in comp
               if a != b and b in layers.get(a, {})]
        bad.append("import cycle between top-level modules: " + " <-> ".join(comp)
                   + "; edges: " + "; ".join(why))
    inner = [c for c in module_cycles if len({m.split("::")[0] for m in c}) == 1]
    for comp in inner:
        bad.append("import cycle: " + " -> ".join(comp))
    n = len(top_cycles) + len(inner)
    if not quiet:
        print(f"modules: {len(mods)}, import cycles: {n}, forbidden edges or unplaced modules: "
              f"{len(bad) - n}")
    return bad


def self_test():
    """A tree with a cycle through a root re-export, one through a `crate::{...}` list, and
    one without: the check fails on each planted cycle and passes on the clean tree."""
    def tree(files):
        d = tempfile.mkdtemp(prefix="check-layers-")
        for rel, text in files.items():
            path = os.path.join(d, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        return d

    allowed = {"a": {"b"}, "b": {"a"}, "c": set()}
    base = {
        "lib.rs": "mod a;\nmod b;\nmod c;\npub use a::Thing;\npub use b::{Other, More};\n",
        "a/mod.rs": "mod inner;\npub use inner::Thing;\n",
        "a/inner.rs": "pub struct Thing;\n",
        "b.rs": "pub struct Other;\npub struct More;\n/// [`crate::c::X`] is a doc link, not an edge\nfn f() {}\n",
        "c.rs": "pub struct X;\n",
    }
    cases = {
        "root re-export": {"a/inner.rs": "pub struct Thing(crate::Other);\n",
                           "b.rs": "pub struct Other(Box<crate::Thing>);\npub struct More;\n"},
        "use list": {"a/inner.rs": "use crate::{b::{More, Other}};\npub struct Thing(Other);\n",
                     "b.rs": "use crate::{a::Thing};\npub struct Other;\npub struct More(Box<Thing>);\n"},
        "macro body": {"a/inner.rs": "macro_rules! m { () => { $crate::b::Other } }\npub struct Thing;\n",
                       "b.rs": "pub struct Other(crate::Thing);\npub struct More;\n"},
    }
    ok = True
    clean = check(tree(base), allowed, quiet=True)
    if clean:
        print("self-test: the clean tree fails:", clean, file=sys.stderr)
        ok = False
    for name, change in cases.items():
        found = check(tree({**base, **change}), allowed, quiet=True)
        if not any("import cycle" in b for b in found):
            print(f"self-test: the planted cycle ({name}) is not found", file=sys.stderr)
            ok = False
    unplaced = check(tree({**base, "d.rs": "pub struct D;\n",
                           "lib.rs": base["lib.rs"] + "mod d;\n"}), allowed, quiet=True)
    if not any("no row" in b for b in unplaced):
        print("self-test: a module without a row is not reported", file=sys.stderr)
        ok = False
    print("self-test:", "ok" if ok else "FAILED")
    return 0 if ok else 1


def main():
    if "--self-test" in sys.argv[1:]:
        return self_test()
    root = next((a for a in sys.argv[1:] if not a.startswith("-")), ROOT)
    bad = check(root, ALLOWED)
    for b in bad:
        print("FAIL:", b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

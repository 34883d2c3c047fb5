"""Where a callgrind-counted loop spends its instructions, function by function.

usage: cg_functions.py SHORT LONG DIVISOR [ROWS]

SHORT and LONG are callgrind outputs of the same program run for fewer and more rounds; each
function's own (exclusive) instructions in LONG minus those in SHORT, over DIVISOR (rounds
times keys, say), is its cost per unit of the loop alone: start-up and set-up cancel out.
Prints a Markdown table of the ROWS (default 12) costliest functions and a row for the rest.
"""

import re
import subprocess
import sys


def own_instructions(path):
    """Each function's exclusive instruction count in one callgrind output."""
    out = subprocess.run(
        ["callgrind_annotate", "--auto=no", "--threshold=100", "--show-percs=no", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    counts = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+)\s+(\S.*)$", line)
        if not m or m.group(2).startswith("PROGRAM TOTALS"):
            continue
        name = m.group(2).strip()
        # "file:function [object]" -> "function"
        name = re.sub(r"\s*\[[^\]]*\]$", "", name)
        if ":" in name and not name.startswith("<"):
            head, _, rest = name.partition(":")
            if "/" in head or head.endswith(".rs") or head.endswith(".S") or head.endswith(".c") or head == "???":
                name = rest
        counts[name] = counts.get(name, 0) + int(m.group(1).replace(",", ""))
    return counts


def short_name(name):
    """A function's name without the paths of the standard library's types and without the
    crate's name, at most 90 characters."""
    name = re.sub(r"(?<!memshard::)\b(?:core|alloc|std)::(?:[a-z_][a-z0-9_]*::)*", "", name)
    name = name.replace("memshard::", "")
    return name if len(name) <= 90 else name[:87] + "..."


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    short, long_, div = own_instructions(sys.argv[1]), own_instructions(sys.argv[2]), float(sys.argv[3])
    rows = int(sys.argv[4]) if len(sys.argv) > 4 else 12
    per = {k: (long_.get(k, 0) - short.get(k, 0)) / div for k in set(short) | set(long_)}
    ranked = sorted(per.items(), key=lambda kv: -kv[1])
    total = sum(per.values())
    print("| function (own instructions) | per unit | share |")
    print("|---|---|---|")
    for name, v in ranked[:rows]:
        print(f"| `{short_name(name)}` | {v:,.0f} | {100 * v / total:.0f} % |")
    rest = sum(v for _, v in ranked[rows:])
    print(f"| everything else | {rest:,.0f} | {100 * rest / total:.0f} % |")
    print(f"| **total** | **{total:,.0f}** | |")


if __name__ == "__main__":
    main()

"""System calls per round of a loop, by name, counted with strace.

usage: syscalls.py SHORT LONG COMMAND [ARG...]

Runs COMMAND under `strace -f -c` twice, with ROUNDS=SHORT and ROUNDS=LONG in its environment
(examples/multiget_profile reads it; an argument `{rounds}` is replaced by the count too, for
commands that take it as an argument), and prints each system call's count in the longer run
minus the shorter, per extra round, as `name count` lines and a `total count` line: start-up
and set-up cancel out.
"""

import os
import re
import subprocess
import sys
import tempfile


def counts(rounds, command):
    """Each system call's count in one run of `command` for `rounds` rounds."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        args = [str(rounds) if a == "{rounds}" else a for a in command]
        subprocess.run(
            ["strace", "-f", "-c", "-o", out.name, *args],
            env={**os.environ, "ROUNDS": str(rounds)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        table = out.read()
    calls = {}
    for line in table.splitlines():
        # % time, seconds, usecs/call, calls, [errors,] syscall
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?([a-z_0-9]+)$", line)
        if m and m.group(2) != "total":
            calls[m.group(2)] = int(m.group(1))
    return calls


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    short, long_ = int(sys.argv[1]), int(sys.argv[2])
    command = sys.argv[3:]
    a, b = counts(short, command), counts(long_, command)
    per = {k: (b.get(k, 0) - a.get(k, 0)) / (long_ - short) for k in set(a) | set(b)}
    shown = {k: v for k, v in per.items() if v >= 0.05}
    for name, v in sorted(shown.items(), key=lambda kv: -kv[1]):
        print(f"{name} {v:.2f}")
    print(f"total {sum(shown.values()):.2f}")


if __name__ == "__main__":
    main()

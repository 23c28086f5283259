"""``python tests/_timed.py CMD [ARG...] [;; CMD [ARG...]]...``: run the commands one after the other, stop at the
first that fails (its exit status is ours), and end with one line: wall seconds and CPU seconds of all of them and
of every process they waited for (``make test``: ruff, mypy and pytest with its xdist workers; issue 26)."""

from __future__ import annotations

import resource
import subprocess
import sys
import time


def split_commands(argv: list[str]) -> list[list[str]]:
    """``["a", "x", ";;", "b"]`` -> ``[["a", "x"], ["b"]]`` (empty commands dropped).

    >>> split_commands(["ruff", "check", ";;", "mypy", "src"])
    [['ruff', 'check'], ['mypy', 'src']]
    """
    cmds: list[list[str]] = [[]]
    for arg in argv:
        if arg == ";;":
            cmds.append([])
        else:
            cmds[-1].append(arg)
    return [c for c in cmds if c]


def children_cpu() -> float:
    """CPU seconds (user + system) of the waited-for children of this process and their own waited-for children."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def main(argv: list[str]) -> int:
    start = time.monotonic()
    code = 0
    for cmd in split_commands(argv):
        print(" ".join(cmd), flush=True)
        code = subprocess.call(cmd)
        if code != 0:
            break
    wall = time.monotonic() - start
    print(f"total: {wall:.0f} s wall, {children_cpu():.0f} s CPU (the commands above, with pytest's xdist workers and "
          f"every subprocess){'' if code == 0 else f'; stopped at exit status {code}'}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

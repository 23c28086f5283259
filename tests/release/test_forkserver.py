"""The side-channel check's fork server (issue 26): a forked run behaves as a fresh ``python -m MODULE`` process.

A tiny module (no preloads, so each server costs one bare interpreter) is run both ways on the same argv, cwd and
environment; exit code, stdout, stderr and the files it writes must agree byte for byte, including an uncaught
exception (traceback, exit 1), ``sys.exit`` with a message, an ``atexit`` handler, and a run killed at its timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from distpriv.release.forkserver import ForkServer, module_of, start

MODULE = '''
import atexit, os, sys, time
mode = sys.argv[1]
print("argv", sys.argv[1:], "cwd", os.path.basename(os.getcwd()), "path0", os.path.basename(sys.path[0]))
print("env", os.environ.get("FS_TEST"), "main", __name__, "stdin", repr(sys.stdin.read()))
print("to stderr", file=sys.stderr)
with open("written.txt", "w") as fh:
    fh.write(open("data.csv").read().upper())
atexit.register(lambda: print("atexit ran"))
if mode == "fail":
    raise ValueError("planted")
if mode == "exit":
    sys.exit("a message")
if mode == "sleep":
    time.sleep(60)
sys.exit(3)
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> tuple[ForkServer, Path, dict[str, str]]:
    d = tmp_path_factory.mktemp("forkserver")
    (d / "lib").mkdir()
    (d / "lib" / "fs_probe.py").write_text(MODULE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(d / "lib"), os.environ.get("PYTHONPATH", "")]),
               FS_TEST="seen")
    srv = start("fs_probe", env, d / "server", preload=("json",), calls=())
    assert srv is not None
    yield srv, d, env
    srv.close()


def _fresh(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, bytes, bytes]:
    try:
        p = subprocess.run([sys.executable, "-m", "fs_probe", *args], cwd=cwd, env=env, capture_output=True,
                           stdin=subprocess.DEVNULL, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return -9, b"", b""
    return p.returncode, p.stdout, p.stderr


@pytest.mark.parametrize("mode", ["ok", "fail", "exit"])
def test_a_forked_run_is_a_fresh_run(server: tuple[ForkServer, Path, dict[str, str]], mode: str) -> None:
    srv, d, env = server
    runs = {}
    for how in ("fresh", "forked"):
        cwd = d / f"{mode}-{how}"
        io = d / f"{mode}-{how}-io"
        cwd.mkdir()
        io.mkdir()
        (cwd / "data.csv").write_text("a,b\n1,2\n")
        if how == "fresh":
            code, out, err = _fresh([mode], cwd, env, 60)
        else:
            code, out, err, seconds = srv.run([mode], cwd, io, 60)
            assert seconds > 0
        name = cwd.name.encode()  # the two runs' folders differ by name only: shown as CWD
        runs[how] = (code, out.replace(name, b"CWD"), err.replace(str(cwd).encode(), b"CWD").replace(name, b"CWD"),
                     (cwd / "written.txt").read_text())
    fresh, forked = runs["fresh"], runs["forked"]
    assert forked[0] == fresh[0] == {"ok": 3, "fail": 1, "exit": 1}[mode]
    assert forked[1] == fresh[1] and f"argv ['{mode}'] cwd CWD path0 CWD".encode() in forked[1]
    assert b"env seen main __main__ stdin ''" in forked[1] and b"atexit ran" in forked[1]
    assert forked[3] == fresh[3] == "A,B\n1,2\n"
    if mode == "fail":  # the traceback's frames name the interpreter's own files: compare its first and last lines
        assert forked[2].splitlines()[0] == fresh[2].splitlines()[0] == b"to stderr"
        assert forked[2].splitlines()[-1] == fresh[2].splitlines()[-1] == b"ValueError: planted"
    else:
        assert forked[2] == fresh[2]


def test_a_run_past_its_timeout_is_killed(server: tuple[ForkServer, Path, dict[str, str]]) -> None:
    srv, d, _ = server
    cwd, io = d / "slow", d / "slow-io"
    cwd.mkdir()
    io.mkdir()
    (cwd / "data.csv").write_text("x\n")
    code, out, err, seconds = srv.run(["sleep"], cwd, io, 1.0)
    assert code == -9 and err.endswith(b"timed out after 1 s") and 1.0 <= seconds < 30
    code, _, _, _ = srv.run(["ok"], cwd, io, 60)  # the server still serves
    assert code == 3


def test_only_this_interpreters_module_commands_are_forked() -> None:
    assert module_of([sys.executable, "-m", "distpriv.cli", "release"]) == "distpriv.cli"
    assert module_of(["/usr/bin/env", "-m", "distpriv.cli"]) is None
    assert module_of([sys.executable, "script.py"]) is None


def test_a_stopped_server_raises_oserror(server: tuple[ForkServer, Path, dict[str, str]]) -> None:
    """The side-channel check then runs every release again as a fresh process."""
    _, d, env = server
    srv = start("fs_probe", env, d / "server2", preload=(), calls=())
    assert srv is not None
    srv.proc.kill()
    srv.proc.wait()
    (d / "dead").mkdir()
    with pytest.raises(OSError):
        srv.run(["ok"], d / "dead", d / "dead", 10)
    srv.close()

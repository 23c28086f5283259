"""A fork server for the side-channel check's synthetic releases: ``python -m MODULE ARGS`` without re-importing.

Every synthetic release of :func:`distpriv.release.sidechannel.side_channel_check` used to be a fresh
``python -m distpriv.cli release …`` process, about half of whose CPU time is importing numpy, pandas,
scipy, DuckDB, matplotlib and distpriv (issue 26). The server is one fresh process, started with the very
interpreter, flags and environment a fresh run would get (so a ``sitecustomize``, ``PYTHONPATH`` or any
variable acts in it as in a fresh run), in an empty folder; it imports the modules a release imports
(:data:`PRELOAD`) and then, per request, forks a child that *is* the fresh run from that point on:

* the child moves to the run's folder (``sys.path[0]``, as ``python -m`` sets it, becomes that folder), points
  its stdin at ``/dev/null`` and its stdout and stderr at the two capture files, sets ``sys.argv`` and runs
  the module with :func:`runpy.run_module` (``run_name="__main__"``, as ``-m`` does); it leaves the server's
  loop, so its exit is the interpreter's own: an uncaught exception prints its traceback and exits 1, a
  ``SystemExit`` its code, ``atexit`` handlers run and buffers are flushed as in any process;
* the server waits for it and replies with its exit status; the parent reads the two files.

**Why the check sees what a fresh process publishes.** Before the fork the server has only run the
interpreter's start-up and imported modules, in a folder that holds nothing: no table, no argument, no
output folder has reached it, so nothing it holds can depend on the table a child releases. From the fork
on, the child executes exactly the code a fresh ``python -m`` run executes after its imports, on the same
argv, cwd and environment, and writes the same files; a module a release imports lazily and the server did
not preload is imported in the child, as fresh. What differs, and why it does not hide a leak:

* run time leaves out the preloaded imports — a constant that never saw the table, so it cannot differ
  between the two tables; without it a data-dependent delay is a larger share of the time compared;
* the children share the server's hash seed and every other state the imports created (e.g. a random
  state drawn at import): the same in both tables' runs, so it cannot tell them apart either — a fresh
  process would differ from run to run by chance, not by the table;
* the server's objects are moved out of the garbage collector's reach (:func:`gc.freeze`) before the fork, so
  a child's collections do not copy the server's pages; they are the imports' objects, which a fresh process
  keeps alive too;
* anything the imports print (an import-time warning) goes to the server's stderr, discarded, not to each
  run's: the same for both tables;
* stdin is ``/dev/null`` (a release reads none).

The server needs ``os.fork`` (POSIX); elsewhere, or when the command is not ``python -m MODULE …`` of this
interpreter, or when the server cannot start, :func:`start` returns ``None`` and the caller runs fresh
processes as before.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

#: Modules the server imports before forking: those a release imports (its heavy dependencies and distpriv's own;
#: nothing a release does not import, which would only cost each child its copied pages).
PRELOAD = (
    "numpy", "pandas", "scipy.special", "duckdb",
    "distpriv", "distpriv.cli", "distpriv.cli.release", "distpriv.release", "distpriv.release.core",
    "distpriv.release.render", "distpriv.release.output", "distpriv.report", "distpriv.mechanisms",
    "distpriv.accounting.release", "distpriv.release.run", "distpriv.release.outdir", "distpriv.release.intervals",
    "distpriv.release.record_mixed", "distpriv.release.progress", "distpriv.data.cell_hash", "distpriv.cli.coercion",
    "distpriv.cli.arguments", "markdown", "pygments", "PIL.Image", "PIL.PngImagePlugin", "narwhals",
)
#: Functions (``module:name``) the server calls after the imports: the figures' backend, set as a release sets it
#: (``matplotlib.use("Agg")`` then ``import matplotlib.pyplot``).
PRELOAD_CALLS = ("distpriv.release.render:_plt",)
#: Seconds the server may take to import :data:`PRELOAD` before the caller gives up on it.
START_TIMEOUT = 600.0

_SERVER = r'''
import importlib, json, os, runpy, sys
_module, _preload, _calls = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
for _name in _preload:
    try:
        importlib.import_module(_name)
    except Exception:  # not installed here: a child that needs it imports it itself (and fails) as a fresh run
        pass
for _name in _calls:
    try:
        _mod, _, _fn = _name.partition(":")
        getattr(importlib.import_module(_mod), _fn)()
    except Exception:  # same: the child then makes the call itself, as a fresh run does
        pass
_out = os.fdopen(os.dup(1), "w")
_null = os.open(os.devnull, os.O_WRONLY)
os.dup2(_null, 1)
os.close(_null)
_child = None
import gc
gc.collect()
gc.freeze()
_out.write(json.dumps({"ready": True}) + "\n")
_out.flush()
for _line in sys.stdin:
    _req = json.loads(_line)
    _pid = os.fork()
    if _pid == 0:
        _child = _req
        break
    _out.write(json.dumps({"pid": _pid}) + "\n")
    _out.flush()
    _, _status = os.waitpid(_pid, 0)
    _out.write(json.dumps({"status": os.waitstatus_to_exitcode(_status)}) + "\n")
    _out.flush()
if _child is None:
    sys.exit(0)
_out.close()
os.chdir(_child["cwd"])
sys.path[0] = os.getcwd()
for _fd, _path, _flags in ((0, os.devnull, os.O_RDONLY), (1, _child["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                           (2, _child["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
    _new = os.open(_path, _flags, 0o600)
    if _new != _fd:
        os.dup2(_new, _fd)
        os.close(_new)
sys.stdin = open(0, closefd=False)
sys.argv = [_module, *_child["args"]]
runpy.run_module(_module, run_name="__main__", alter_sys=True)
'''


class ForkServer:
    """One server process (module docstring); :meth:`run` releases once, :meth:`close` ends the server."""

    def __init__(self, proc: subprocess.Popen[str], module: str) -> None:
        self.proc = proc
        self.module = module

    def _reply(self, timeout: float) -> dict[str, Any] | None:
        out = self.proc.stdout
        assert out is not None
        ready, _, _ = select.select([out], [], [], max(timeout, 0.0))
        if not ready:
            return None
        line = out.readline()
        return json.loads(line) if line else None

    def run(self, args: Sequence[str], cwd: Path, io_dir: Path, timeout: float) -> tuple[int, bytes, bytes, float]:
        """(exit code, stdout, stderr, seconds) of ``python -m MODULE ARGS`` run in ``cwd``; the capture files
        live in ``io_dir``. Timed out: the child is killed, exit code −9 and a line appended to stderr."""
        so, se = io_dir / "stdout", io_dir / "stderr"
        req = {"args": list(args), "cwd": str(cwd), "stdout": str(so), "stderr": str(se)}
        assert self.proc.stdin is not None
        t0 = time.perf_counter()
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        started = self._reply(START_TIMEOUT)
        if started is None or "pid" not in started:
            raise OSError("the fork server stopped")
        done = self._reply(timeout - (time.perf_counter() - t0))
        timed_out = done is None
        if timed_out:
            os.kill(int(started["pid"]), signal.SIGKILL)
            done = self._reply(START_TIMEOUT)
        seconds = time.perf_counter() - t0
        if done is None or "status" not in done:
            raise OSError("the fork server stopped")
        code = int(done["status"])
        out, err = so.read_bytes() if so.exists() else b"", se.read_bytes() if se.exists() else b""
        if timed_out:
            code, err = -9, err + f"\ntimed out after {timeout:g} s".encode()
        return code, out, err, seconds

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def module_of(cmd: Sequence[str]) -> str | None:
    """MODULE when ``cmd`` is ``[this interpreter, "-m", MODULE, …]``, else ``None``."""
    if len(cmd) >= 3 and cmd[1] == "-m" and os.path.realpath(cmd[0]) == os.path.realpath(sys.executable):
        return str(cmd[2])
    return None


def start(module: str, env: dict[str, str], folder: Path, *, preload: Sequence[str] = PRELOAD,
          calls: Sequence[str] = PRELOAD_CALLS) -> ForkServer | None:
    """A server for ``python -m module`` in ``env``, started in the empty folder ``folder``, that imports
    ``preload`` and calls ``calls`` (``module:function``) before forking; ``None`` where ``os.fork`` is missing
    or the server does not come up (the caller then runs fresh processes)."""
    if not hasattr(os, "fork") or sys.platform == "win32":
        return None
    folder.mkdir(parents=True, exist_ok=True)
    stderr: IO[bytes] | int = subprocess.DEVNULL
    try:
        proc = subprocess.Popen([sys.executable, "-c", _SERVER, module, json.dumps(list(preload)),
                                 json.dumps(list(calls))], cwd=folder, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True)
    except OSError:
        return None
    server = ForkServer(proc, module)
    try:
        ready = server._reply(START_TIMEOUT)
    except ValueError:
        ready = None
    if proc.poll() is not None or not ready or not ready.get("ready"):
        server.close()
        return None
    return server

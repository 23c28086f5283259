"""Safe output folders for ``distpriv release --out`` and ``distpriv audit --out``.

A release is written into a fresh temporary folder next to ``--out`` and renamed into
place only when every file is complete, so an interrupted or failed run leaves ``--out``
as it was and never a half-written report:

* ``--out`` is checked **before any computation** (:func:`check_out`): it must name a folder
  other than the current one or one containing it (``--out ""`` and ``--out .`` are refused: a
  release would replace the working folder), must not be a symbolic link nor lie under one (every
  parent component is checked without following it: a link could redirect the private ledger
  elsewhere), must be a folder if it exists, must be empty unless ``--force`` is given
  (and then must contain no symbolic link, so nothing is written or deleted through one),
  and its nearest existing ancestor must be a folder in which a folder can be created —
  which is probed for real by creating the temporary sibling (:meth:`OutputFolder.open`),
  so read-only, virtual (``/proc``) and "under a regular file" (``file.txt/sub``) targets
  fail with one line instead of a traceback after the computation.
* Files are written only into that temporary folder (created with :func:`tempfile.mkdtemp`,
  so no existing path or link is ever opened for writing).
* :meth:`OutputFolder.commit` renames it onto ``--out``: a plain :func:`os.rename` when
  ``--out`` is absent or empty (atomic on POSIX); with ``--force`` over a non-empty folder
  an atomic exchange (Linux ``renameat2(RENAME_EXCHANGE)``) where available, otherwise
  two renames, then the old contents are deleted without following links.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import tempfile
from pathlib import Path
from types import TracebackType

from ..errors import InvalidParameterError, arg

_RENAME_EXCHANGE = 2


def _links_inside(folder: Path) -> Path | None:
    """The first symbolic link at any depth under ``folder`` (links are not followed), else ``None``."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in (*dirs, *files):
            p = Path(root) / name
            if p.is_symlink():
                return p
    return None


def _nearest_existing(path: Path) -> Path:
    p = path
    while not os.path.lexists(p):
        if p.parent == p:
            break
        p = p.parent
    return p


def check_out(out: Path | None, *, force: bool = False, option: str = "out") -> None:
    """Refuse an unusable ``--out`` before any computation (one :class:`InvalidParameterError`)."""
    if out is None:
        return
    text = str(out)
    out = Path(out)
    if text.strip() == "" or text.strip() in (".", "./"):
        raise InvalidParameterError(f"give the name of a new folder, not the current folder ({text!r})", argument=option)
    here = Path(os.getcwd())  # the physical path: no links in it
    joined = here / out  # '..' kept: each prefix is what the system walks through
    for i in range(1, len(joined.parts)):
        prefix = Path(*joined.parts[:i])
        if prefix.is_symlink():
            raise InvalidParameterError(
                f"{prefix} is a symbolic link; give a path without links (links are never followed)", argument=option
            )
    full = Path(os.path.abspath(joined))  # lexical, exact once no component is a link
    if full == here or full in here.parents:
        raise InvalidParameterError(
            f"{out} is the current folder or contains it; give the name of a new folder", argument=option
        )
    from .ledger import ledger_key_path

    key = Path(os.path.abspath(ledger_key_path()))
    if full == key.parent or full in key.parents:
        raise InvalidParameterError(
            f"{out} would contain the ledger key {key}; keep DISTPRIV_HOME outside every output folder", argument=option
        )
    if out.is_symlink():
        raise InvalidParameterError(f"{out} is a symbolic link; give a real folder (links are never followed)", argument=option)
    if os.path.lexists(out):
        if not out.is_dir():
            raise InvalidParameterError(f"{out} exists and is not a folder", argument=option)
        try:
            entries = os.listdir(out)
        except OSError as exc:
            raise InvalidParameterError(f"cannot read {out}: {exc.strerror}", argument=option) from None
        if entries and not force:
            raise InvalidParameterError(
                f"{out} exists and is not empty; give {arg('force')} to replace it, or a new folder", argument=option
            )
        link = _links_inside(out)
        if link is not None:
            raise InvalidParameterError(
                f"{link} is a symbolic link; refusing to replace a folder containing links", argument=option
            )
    anc = _nearest_existing(out.parent if out.parent != out else out)
    if not anc.is_dir():
        raise InvalidParameterError(f"cannot create {out}: {anc} is not a folder", argument=option)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths (Linux renameat2 RENAME_EXCHANGE); False when unsupported."""
    name = ctypes.util.find_library("c")
    if name is None:  # pragma: no cover - platform dependent
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):  # pragma: no cover - platform dependent
        return False
    at_fdcwd = -100
    rc = fn(at_fdcwd, os.fsencode(str(a)), at_fdcwd, os.fsencode(str(b)), _RENAME_EXCHANGE)
    if rc != 0:  # pragma: no cover - filesystem dependent
        err = ctypes.get_errno()
        if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            return False
        raise OSError(err, os.strerror(err), str(b))
    return True


class OutputFolder:
    """A temporary sibling of ``out`` to write into, renamed onto ``out`` by :meth:`commit`.

    Use as a context manager: on an exception the temporary folder (and any ancestor folders
    this object created) are removed and ``out`` is left untouched.
    """

    def __init__(self, out: Path, *, force: bool = False, option: str = "out") -> None:
        self.out = Path(out)
        self.force = force
        self.option = option
        self.path: Path | None = None
        self._made: list[Path] = []

    def open(self) -> Path:
        """Create the missing ancestors and the temporary folder; returns the folder to write into."""
        check_out(self.out, force=self.force, option=self.option)
        parent = self.out.parent
        missing: list[Path] = []
        p = parent
        while not os.path.lexists(p):
            missing.append(p)
            p = p.parent
        try:
            for d in reversed(missing):
                d.mkdir()
                self._made.append(d)
            self.path = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.tmp-", dir=parent))
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(self.path, 0o777 & ~umask)
        except OSError as exc:
            self.discard()
            raise InvalidParameterError(
                f"cannot create {self.out}: {exc.strerror or exc} ({exc.filename or parent})", argument=self.option
            ) from None
        return self.path

    def __enter__(self) -> OutputFolder:
        if self.path is None:
            self.open()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if kind is not None:
            self.discard()

    def discard(self) -> None:
        """Remove the temporary folder and the ancestors created for it (``out`` is not touched)."""
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None
        for d in reversed(self._made):
            with contextlib.suppress(OSError):
                d.rmdir()
        self._made = []

    def commit(self) -> Path:
        """Rename the finished temporary folder onto ``out`` (see the module docstring)."""
        if self.path is None:
            raise InvalidParameterError("nothing to commit", argument=self.option)
        tmp, out = self.path, self.out
        try:
            check_out(out, force=self.force, option=self.option)  # again: it may have changed meanwhile
            if not os.path.lexists(out) or not os.listdir(out):
                os.rename(tmp, out)  # onto an absent or empty folder: atomic
            elif _exchange(tmp, out):
                shutil.rmtree(tmp)  # tmp now holds the old contents; rmtree never follows links
            else:  # pragma: no cover - non-Linux fallback
                old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
                os.rename(out, old / "x")
                os.rename(tmp, out)
                shutil.rmtree(old)
        except OSError as exc:
            self.discard()
            raise InvalidParameterError(f"cannot write {out}: {exc.strerror or exc}", argument=self.option) from None
        except InvalidParameterError:
            self.discard()
            raise
        self.path = None
        self._made = []
        return out

"""On-disk memo of the calibrations and audits of ``distpriv reproduce compare`` (:mod:`.compare`).

Calibrating every mechanism at one exact guarantee is the comparison's main cost: the papers'
Laplace mechanisms are topped up by a verified search over their scale (each step a certified
privacy profile, :mod:`distpriv.accounting.topup`), the SSP quantizer scans bin widths, the
Kantorovich plan is an O(N³) assignment. A calibration is a pure function of

* the code that computes it (every ``.py`` file of the installed :mod:`distpriv` package, hashed),
* the mechanism's registry name, the model it is calibrated on (the bytes of the Gaussian fit's
  means and covariances, or of the samples), the secret pair, ε and δ,

so it is memoised on the SHA-256 of exactly those inputs; likewise each audit (a seeded Monte Carlo
run: keyed on its mechanism's calibration key, the auditor's model, the trials and the seed) and the
proven δ of a claim made on another law. Any change of the code or of an input
gives another key (the entry is never consulted); a hit returns the very mechanism a fresh
calibration returns, noise, guarantee, notes and all (pickled by Python's :mod:`pickle`: the cache
lives in the user's own cache directory, ``$XDG_CACHE_HOME/distpriv/compare``, read with the same
trust as the installed package). An unreadable entry is recomputed and overwritten. Entries live in one
subfolder per code version; a new version deletes all but the most recent older one.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Cache format; bump to orphan every entry written by an older layout.
FORMAT = 1


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """SHA-256 over the relative path and bytes of every ``.py`` file of the :mod:`distpriv` package."""
    import distpriv

    root = Path(distpriv.__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def model_fingerprint(model: Any, pair: tuple[Any, Any]) -> bytes:
    """The bytes a calibration on ``pair`` reads from ``model``: its samples, else its means and covariances."""
    import numpy as np

    parts: list[bytes] = [type(model).__name__.encode()]
    for label in pair:
        parts.append(repr(label).encode())
        if callable(getattr(model, "samples", None)):
            parts.append(np.ascontiguousarray(model.samples(label), dtype=float).tobytes())
        else:
            parts.append(np.ascontiguousarray(model.mean(label), dtype=float).tobytes())
            parts.append(np.ascontiguousarray(model.covariance(label), dtype=float).tobytes())
    return b"\0".join(parts)


def key(*parts: Any) -> str:
    """SHA-256 of (format, code fingerprint, parts): str/bytes as they are, floats by their exact hex, else repr."""
    h = hashlib.sha256()
    for part in (str(FORMAT), code_fingerprint(), *parts):
        if isinstance(part, bytes):
            data = part
        elif isinstance(part, float):
            data = part.hex().encode()
        else:
            data = (part if isinstance(part, str) else repr(part)).encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


def calibration_key(name: str, model: Any, pair: tuple[Any, Any], epsilon: float, delta: float) -> str:
    """The key of one calibration: mechanism, model bytes, pair, ε, δ (and the code)."""
    return key("calibrate", name, model_fingerprint(model, pair), float(epsilon), float(delta))


def has_entry(folder: Path, digest: str) -> bool:
    """Whether ``folder`` holds an entry for ``digest`` under the current code version (not read: it may still be
    unreadable, then :func:`cached` recomputes it)."""
    return (folder / code_fingerprint()[:16] / f"{digest}.pkl").is_file()


def has_version(folder: Path) -> bool:
    """Whether ``folder`` holds any entry written by the current code version."""
    here = folder / code_fingerprint()[:16]
    return here.is_dir() and any(p.suffix == ".pkl" for p in here.iterdir())


def cached(folder: Path | None, digest: str, compute: Callable[[], Any]) -> tuple[Any, bool]:
    """(``compute()``'s value, whether it came from the cache); ``folder`` None: no cache, always compute.

    ``digest``: a :func:`key` naming every input of ``compute``. Only values are cached; an
    exception of ``compute`` (a refusal) propagates and is recomputed next time.
    """
    if folder is None:
        return compute(), False
    here = folder / code_fingerprint()[:16]
    path = here / f"{digest}.pkl"
    if path.is_file():
        try:
            with path.open("rb") as fh:
                return pickle.load(fh), True
        except Exception:  # noqa: BLE001 - a truncated or foreign entry is recomputed, never trusted
            pass
    value = compute()
    if not here.is_dir():
        here.mkdir(parents=True, exist_ok=True)
        _prune(folder, keep=here)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")  # concurrent writers never share a partial file
    with tmp.open("wb") as fh:
        pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(path)
    return value, False


#: Code versions whose entries are kept (the current one and the most recently used others).
KEEP_VERSIONS = 2


def _prune(folder: Path, keep: Path) -> None:
    """Delete the entries of all but the :data:`KEEP_VERSIONS` most recently modified code versions (bounded disk)."""
    import shutil

    others = sorted((p for p in folder.iterdir() if _is_entry_folder(p) and p != keep),
                    key=lambda p: p.stat().st_mtime, reverse=True)
    for old in others[KEEP_VERSIONS - 1:]:
        shutil.rmtree(old, ignore_errors=True)


def _is_entry_folder(path: Path) -> bool:
    """Whether ``path`` is a cache version folder this module wrote: a real directory (not a
    symlink) named by 16 hex digits that holds only ``.pkl``/``.tmp`` entries, so pruning never
    deletes anything else a user keeps in the folder."""
    if path.is_symlink() or not path.is_dir() or len(path.name) != 16:
        return False
    if any(c not in "0123456789abcdef" for c in path.name):
        return False
    return all(f.is_file() and not f.is_symlink() and f.suffix in (".pkl", ".tmp") for f in path.iterdir())


def default_folder() -> Path:
    """``$XDG_CACHE_HOME/distpriv/compare`` (or ``~/.cache/distpriv/compare``): the folder of
    :func:`distpriv.datasets.adult.cache_dir` plus ``compare``, computed here without importing the Adult loader
    (pandas), so the CLI can look at the cache before it starts the workers (a test pins the two paths equal)."""
    base = os.environ.get("XDG_CACHE_HOME")
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "distpriv" / "compare"

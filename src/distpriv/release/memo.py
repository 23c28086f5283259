"""A process-wide memo of release computations whose inputs are all public (issue 26).

Two releases with the same public inputs — the same population or declared model, Ψ, ε, δ and statistics,
two tables differing only in the secret, or one spec re-run — compute the same candidate evaluations
(:func:`~distpriv.release.selection.evaluate_candidate`, most of a release's CPU time in its exact accounting)
and the same k-gap table (:func:`~distpriv.release.grid.gap_profiles`). :func:`memoized` computes each once
per process: the key is the SHA-256 of the pickled arguments *as the computation reads them* (the model's
samples, Ψ, the diagnostics, ε, δ, ...), so a hit returns exactly what the computation would return again, and
an input that differed — for whatever reason — would miss.

Only public inputs may enter: callers use it where f_θ is modelled from public inputs
(``Modelling.public``: a population or a declared model) and never with ``--model-from-data``, whose model is
a function of the private rows (a hit would then time whether two private tables model alike). Warnings
raised by a computation are recorded and replayed on every call, hit or miss, so a caller sees the same
warnings either way. A fresh process (every ``distpriv`` command, every side-channel run of the audit) starts
with an empty memo.

Nothing stored is ever handed out: every call, hit or miss, returns a deep copy (the objects named by
``shared`` excepted), so a caller changing a result in place cannot change a later release. One memoised
computation runs at a time (a process-wide lock), and only the warnings of the computing thread are recorded:
another thread's warnings raised meanwhile are shown as usual, never stored and replayed to another release.
Replays keep the warning's module name, so ``filterwarnings(..., module=...)`` treats them as the originals.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import pickle
import sys
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

#: Most entries kept (least recently used dropped first); an entry is one candidate or one k-gap table.
MAX_ENTRIES = 512

@dataclass(frozen=True)
class _Warning:
    """One recorded warning, with the module it was raised in (for ``warn_explicit``'s module filters)."""

    message: Warning | str
    category: type[Warning]
    filename: str
    lineno: int
    module: str | None


_STORE: OrderedDict[str, tuple[Any, list[_Warning]]] = OrderedDict()
#: One memoised computation at a time: the recording swaps the process-wide warning state (re-entrant: a
#: memoised computation may call another).
_LOCK = threading.RLock()
#: Per-file warning registries of the replays (Python's "show once per location" for the replayed warnings).
_REGISTRIES: dict[str, dict[Any, Any]] = {}


_TOKENS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_COUNTER = itertools.count()


def token(obj: Any) -> tuple[str, int]:
    """A key part standing for the identity of ``obj`` (a function computing a value on first use): the same
    for the same object while it lives, never reused for another one."""
    if obj not in _TOKENS:
        _TOKENS[obj] = next(_COUNTER)
    return ("object", _TOKENS[obj])


def digest(*parts: Any) -> str | None:
    """SHA-256 of the pickled ``parts``, or ``None`` when they cannot be pickled (then nothing is memoised)."""
    try:
        data = pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError, ValueError):
        return None
    return hashlib.sha256(data).hexdigest()


def _module_of(filename: str, lineno: int) -> str | None:
    """The ``__name__`` of the frame that raised a warning at ``filename:lineno`` (``None`` if not on the stack)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename == filename and frame.f_lineno == lineno:
            name = frame.f_globals.get("__name__")
            return name if isinstance(name, str) else None
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _replay(caught: list[_Warning]) -> None:
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, module=w.module,
                               registry=_REGISTRIES.setdefault(w.filename, {}))


def _record(compute: Callable[[], T]) -> tuple[T, list[_Warning]]:
    """``compute()`` and the warnings this thread raised meanwhile (shown again by the caller, :func:`_replay`);
    other threads' warnings go to the display they would have had (``warnings.showwarning`` before)."""
    me = threading.get_ident()
    caught: list[_Warning] = []
    with warnings.catch_warnings():
        show = warnings.showwarning

        def hook(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
            if threading.get_ident() == me:
                caught.append(_Warning(message, category, filename, lineno, _module_of(filename, lineno)))
            else:
                show(message, category, filename, lineno, file, line)

        warnings.showwarning = hook
        warnings.simplefilter("always")
        try:
            value = compute()
        except BaseException:
            _replay(caught)  # not memoised: the warnings before the error, as without the memo
            raise
    return value, caught


def memoized(tag: str, key: tuple[Any, ...], compute: Callable[[], T], *, enabled: bool = True,
             shared: Callable[[T], Iterable[Any]] = lambda _v: ()) -> T:
    """``compute()``, computed once per ``(tag, key)`` in this process; its warnings replayed on every call.

    ``key``: every input ``compute`` reads, all public (module docstring); ``enabled=False`` computes without the
    memo. Every call returns a deep copy of the stored value, except the objects ``shared(value)`` names (kept as
    they are, e.g. a function whose identity enters later keys: :func:`token`).
    """
    k = digest(tag, *key) if enabled else None
    if k is None:
        return compute()
    with _LOCK:
        hit = _STORE.get(k)
        if hit is None:
            hit = _record(compute)
            _STORE[k] = hit
            while len(_STORE) > MAX_ENTRIES:
                _STORE.popitem(last=False)
        else:
            _STORE.move_to_end(k)
        value = copy.deepcopy(hit[0], {id(o): o for o in shared(hit[0])})
    _replay(hit[1])
    return value


def clear() -> None:
    """Forget every memoised value (tests that time or count a computation from scratch)."""
    _STORE.clear()

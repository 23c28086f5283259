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
"""

from __future__ import annotations

import hashlib
import itertools
import pickle
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: Most entries kept (least recently used dropped first); an entry is one candidate or one k-gap table.
MAX_ENTRIES = 512

_STORE: OrderedDict[str, tuple[Any, list[warnings.WarningMessage]]] = OrderedDict()
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


def _replay(caught: list[warnings.WarningMessage]) -> None:
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno,
                               registry=_REGISTRIES.setdefault(w.filename, {}))


def memoized(tag: str, key: tuple[Any, ...], compute: Callable[[], T], *, enabled: bool = True) -> T:
    """``compute()``, computed once per ``(tag, key)`` in this process; its warnings replayed on every call.

    ``key``: every input ``compute`` reads, all public (module docstring); ``enabled=False`` computes without the
    memo. The value returned is the stored one: callers copy what they might change.
    """
    k = digest(tag, *key) if enabled else None
    if k is None:
        return compute()
    hit = _STORE.get(k)
    if hit is None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                value = compute()
            except BaseException:
                _replay(list(caught))  # not memoised: the warnings before the error, as without the memo
                raise
        hit = (value, list(caught))
        _STORE[k] = hit
        while len(_STORE) > MAX_ENTRIES:
            _STORE.popitem(last=False)
    else:
        _STORE.move_to_end(k)
    _replay(hit[1])
    return hit[0]


def clear() -> None:
    """Forget every memoised value (tests that time or count a computation from scratch)."""
    _STORE.clear()

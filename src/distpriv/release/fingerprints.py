"""Row identity for the composition ledger: keyed per-column hashes of normalised cells, compared on shared columns.

Composition (Chen & Ohrimenko Props. A.4/A.5) depends on whether two releases
used the same records, which a hash of the *file* cannot tell (one appended byte
changes it), nor a hash of the whole row: the same people re-exported with a
column dropped, added or re-cased, in another order or format, are the same
data. The private ledger of a release therefore keeps, for every row, one keyed
64-bit hash per column of the row's *normalised* cell
(:func:`distpriv.data.fingerprint.cell_fingerprints`, scheme
:data:`~distpriv.data.fingerprint.CELL_SCHEME`, v3: numbers by exact value, text
trimmed and case-folded, CSV and Parquet alike, hashed with keyed SipHash-2-4 by
numpy, :mod:`distpriv.data.cell_hash`; column names trimmed and case-folded).
Ledgers of scheme v2 (keyed MD5 of normalised text) are refused when read.
A later table is hashed with the earlier release's key and rows are compared on
the columns **both** tables have (a row restricted to columns S is identified by
Σ_{c∈S} h_c mod 2⁶⁴), as multisets: a value present twice here and once there
counts once.

Different people can agree on the shared columns by chance: on two disjoint
2,000-row samples of the Adult census, (age, sex, income) agree on 1,638 rows;
all 15 columns on none. So the chance collision rate of the shared columns is
measured on the public population (:func:`collision_rate`): ρ = the probability
that two different population records agree on them, Σ_v c_v(c_v − 1) / (N(N − 1)).
A row of the current table then has an expected ``rows_earlier · ρ`` chance
partners; where this rate is above :data:`RATE_THRESHOLD` (or unknown: no
population) rows cannot tell disjoint samples from reused ones, and
``--independent`` requires an identifying column (``--id COL``), on which rows
are then compared alone. Below it, matches up to a chance allowance
(:func:`chance_allowance`: a Chernoff bound on a Poisson count of mean
μ = rows_current · rows_earlier · ρ, exceeded by chance with probability at most
:data:`FALSE_ALARM`) are taken as chance, so honest disjoint samples of a survey
without an id, which repeat rows legitimately, are not refused; more are shared
rows. This catches accidental reuse; that the datasets were sampled
independently stays the curator's assumption, printed in the guarantee.

The key of each release is 16 characters from the operating system's entropy
(96 bits), kept in its private ledger.
"""

from __future__ import annotations

import math
import secrets
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..data.fingerprint import cell_fingerprints, normalise_name, normalised_row_hashes
from ..errors import InvalidParameterError, arg

#: Length of a fingerprint key (16 characters of a 64-symbol alphabet: 96 bits).
KEY_LENGTH = 16
_ALPHABET = string.ascii_letters + string.digits + "-_"

#: Largest expected share of the current rows with a chance partner in an earlier release (a different record
#: agreeing on every shared column) at which rows still identify records; above it ``--independent`` needs ``--id``.
RATE_THRESHOLD = 0.01
#: Probability that disjoint samples show more matches than :func:`chance_allowance` allows (Poisson model).
FALSE_ALARM = 1e-9


def new_key() -> str:
    """A fresh fingerprint key from the operating system's entropy."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(KEY_LENGTH))


def key_bytes(key: str) -> bytes:
    """The bytes of a ledger key (16 ASCII characters)."""
    if not isinstance(key, str) or len(key) != KEY_LENGTH or not key.isascii():
        raise ValueError("key: expected 16 ASCII characters")  # pragma: no cover - internal use
    return key.encode("ascii")


def row_sums(cells: NDArray[np.uint64], index: Sequence[int] | None = None) -> NDArray[np.uint64]:
    """Row identities on a set of columns: Σ_{c ∈ index} cells[:, c] mod 2⁶⁴ (all columns by default)."""
    sub = cells if index is None else cells[:, list(index)]
    if sub.shape[1] == 0:
        return np.zeros(sub.shape[0], dtype=np.uint64)
    return np.asarray(sub.sum(axis=1, dtype=np.uint64), dtype=np.uint64)


def table_cells(table: Any, key: str) -> tuple[tuple[str, ...], NDArray[np.uint64]]:
    """Normalised column names and the (rows, columns) keyed cell hashes of ``table``, rows sorted by their
    whole-row identity (the file's row order is not kept)."""
    names, cells = cell_fingerprints(table, key=key_bytes(key))
    # rows with equal identities are equal rows (up to a 2^-64 chance), so an unstable sort gives the same array
    order = np.argsort(row_sums(cells))
    if not cells.flags.f_contiguous or cells.flags.c_contiguous or not cells.flags.writeable:
        return tuple(names), np.take(cells, order, axis=0)
    for j in range(cells.shape[1]):  # column-major (files): reorder each column in place, one column of scratch
        cells[:, j] = cells[order, j]
    return tuple(names), cells


def count_shared(current: NDArray[np.uint64], previous: NDArray[np.uint64]) -> int:
    """Size of the multiset intersection of two fingerprint arrays: Σ_x min(#x in current, #x in previous)."""
    if previous.size == 0 or current.size == 0:
        return 0
    cv, cc = np.unique(current, return_counts=True)
    pv, pc = np.unique(previous, return_counts=True)
    _, ci, pi = np.intersect1d(cv, pv, assume_unique=True, return_indices=True)
    return int(np.minimum(cc[ci], pc[pi]).sum())


def collision_rate(population: Any, columns: Sequence[str]) -> float:
    """ρ = Σ_v c_v(c_v − 1) / (N(N − 1)): the probability that two different records of ``population`` agree on
    the normalised ``columns`` (c_v: records with value v, N records); 0 when N < 2."""
    return _rate_of(normalised_row_hashes(population, key=secrets.token_bytes(32), columns=columns))


def _rate_of(h: NDArray[np.uint64]) -> float:
    n = h.size
    if n < 2:
        return 0.0
    _, counts = np.unique(h, return_counts=True)
    c = counts.astype(np.float64)
    return float(np.sum(c * (c - 1.0)) / (float(n) * (n - 1.0)))


def chance_allowance(mu: float, alarm: float = FALSE_ALARM) -> int:
    """Least k with P(X > k) <= ``alarm`` for X ~ Poisson(μ), by the Chernoff bound
    P(X >= k) <= e^{−μ} (eμ/k)^k (k > μ); 0 when μ = 0."""
    if mu <= 0.0:
        return 0
    target = math.log(alarm)

    def log_tail(k: float) -> float:  # log of the bound on P(X >= k)
        return -mu + k * (1.0 + math.log(mu) - math.log(k))

    lo, hi = max(math.floor(mu), 0), math.ceil(max(2.0 * mu, mu + 10.0))
    while log_tail(hi) > target:
        hi *= 2
    while hi - lo > 1:  # log_tail decreases for k > μ
        mid = (lo + hi) // 2
        if mid > mu and log_tail(mid) <= target:
            hi = mid
        else:
            lo = mid
    return int(hi) - 1  # P(X >= hi) <= alarm, so P(X > hi − 1) <= alarm


@dataclass(frozen=True)
class Overlap:
    """How the rows of this release's data compare with one earlier release's.

    Rows are compared on the shared columns and, so that one changed column (``fnlwgt + 1``) does not hide a
    re-export, on every shared column but one; ``columns`` is the comparison that decided (the most matches
    beyond chance), ``matches`` its multiset intersection. Matches beyond a comparison's chance allowance are
    evidence of shared rows whatever its rate; only the comparison on every shared column decides whether rows
    identify records (``reason``).
    """

    columns: tuple[str, ...]  # normalised names compared
    matches: int  # multiset intersection on those columns
    shared: int  # matches taken as shared rows (0 when within the chance allowance)
    rate: float | None  # expected share of rows with a chance partner (None: unknown)
    expected: float | None  # expected chance matches μ (None: unknown)
    allowance: int  # matches allowed as chance
    by_id: bool  # compared on --id alone
    reason: str | None  # why rows cannot identify records here (then --independent needs --id)

    def describe(self) -> str:
        """One private line for the curator."""
        cols = ", ".join(self.columns)
        if self.by_id:
            return f"rows compared on the id column ({cols}): {self.matches} shared"
        tail = "chance rate unknown" if self.rate is None or self.expected is None else (
            f"{self.matches} matches, {self.expected:.3g} expected by chance (allowance {self.allowance}), "
            f"chance rate {self.rate:.3g} per row")
        return f"rows compared on {len(self.columns)} shared columns ({cols}): {tail}"


def _compare_one(current: Any, cols: Sequence[str], entry: Any, *, id_column: str | None, pop_cells: Any,
                 rows: int) -> Overlap:
    earlier = {name: i for i, name in enumerate(entry.columns)}
    mine = {normalise_name(c): c for c in cols}
    if id_column is not None:
        want = normalise_name(id_column)
        if want not in earlier:
            raise InvalidParameterError(
                f"the earlier release {entry.id[:8]}… has no column {id_column!r} (its columns: "
                f"{', '.join(entry.columns)}); rows can only be compared by an id both tables hold", argument="id"
            )
        names = [want]
    else:
        names = [n for n in mine if n in earlier]
    if not names:
        return Overlap((), 0, 0, None, None, 0, False,
                       "it shares no column with this table, so its rows cannot be compared")
    got, cells = cell_fingerprints(current, key=key_bytes(entry.fingerprint_key), columns=[mine[n] for n in names])
    theirs = entry.cells[:, [earlier[n] for n in got]]

    def matches(index: Sequence[int]) -> int:
        return count_shared(row_sums(cells, index), row_sums(theirs, index))

    everything = list(range(len(got)))
    if id_column is not None:
        k = matches(everything)
        return Overlap(tuple(got), k, k, None, None, 0, True, None)
    pop_names, pop = pop_cells(got)
    full_k = matches(everything)
    common = [i for i, n in enumerate(got) if n in pop_names]
    if not common:
        unknown = (f"there is no {arg('population')} to measure how often different records agree on them"
                   if pop is None else "the population has none of them, so how often different records agree "
                   "is unknown")
        return Overlap(tuple(got), full_k, full_k, None, None, 0, False, unknown)

    def judged(index: list[int]) -> Overlap:
        on_pop = [pop_names.index(got[i]) for i in index if got[i] in pop_names]
        rho = _rate_of(row_sums(pop, on_pop)) if on_pop else 1.0  # fewer columns: a larger (conservative) rate
        rate, mu = min(1.0, entry.rows * rho), rows * entry.rows * rho
        k = full_k if index == everything else matches(index)
        allowed = chance_allowance(mu)
        reason = None if rate <= RATE_THRESHOLD else (
            f"different records agree on them by chance for {rate:.1%} of the rows (measured on the population; "
            f"the threshold is {RATE_THRESHOLD:.0%})")
        return Overlap(tuple(got[i] for i in index), k, k if k > allowed else 0, rate, mu, allowed, False, reason)

    full = judged(everything)
    best = full
    if len(got) > 1:  # evidence of reuse from any comparison; identification is decided on every shared column
        for drop in everything:
            o = judged([i for i in everything if i != drop])
            if o.shared > best.shared:
                best = o
    return Overlap(best.columns, best.matches, best.shared, best.rate, best.expected, best.allowance, False,
                   full.reason)


def compare_rows(current: Any, chain: Sequence[Any], *, rows: int, id_column: str | None = None,
                 population: Any = None) -> Mapping[str, Overlap]:
    """Per earlier release of ``chain`` (its id), how this table's rows compare with its rows (module docstring).

    ``current`` and ``population``: :class:`distpriv.data.Table` objects (or anything
    :func:`distpriv.data.open_table` accepts); ``id_column``: the ``--id`` column. The population's cells are
    hashed once (one engine pass) to measure the collision rate of every set of columns compared.
    """
    from ..data import open_table

    table = open_table(current)
    pop = None if population is None else open_table(population)
    if id_column is not None and normalise_name(id_column) not in {normalise_name(c) for c in table.columns}:
        raise InvalidParameterError(f"the data has no column {id_column!r}", argument="id")
    cache: dict[str, Any] = {}
    pop_key = secrets.token_bytes(32)
    pop_by_name = {} if pop is None else {normalise_name(c): c for c in pop.columns}

    def pop_cells(names: Sequence[str]) -> tuple[list[str], Any]:
        """Normalised names and cells of the population's columns among ``names``. Every population column the data
        also has is hashed in one engine pass, at first use (one pass keeps the rows of all columns aligned)."""
        if pop is not None and not cache:
            wanted = [pop_by_name[n] for n in dict.fromkeys(normalise_name(c) for c in table.columns)
                      if n in pop_by_name]
            if wanted:
                got, cells = cell_fingerprints(pop, key=pop_key, columns=wanted)
                cache.update({n: cells[:, i] for i, n in enumerate(got)})
        have = [n for n in names if n in cache]
        if not have:
            return [], pop
        return have, np.column_stack([cache[n] for n in have])

    return {e.id: _compare_one(table, table.columns, e, id_column=id_column, pop_cells=pop_cells, rows=rows)
            for e in chain}

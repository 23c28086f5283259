"""Tupling χ² / Hellinger / KL claims at the edges of float64 (issue 25, reviewer's findings).

* wide-magnitude inputs (entries 1e-78 .. 1, ν down to 1e-70): no crash (the outer rule's node count
  overflowed when every node's lower bound was 0), every bracket contains the exact value and every claim is
  at least the exact value;
* dummy laws off 1 by up to 1e-8 (accepted by the validators): the claim is for the normalised laws, at
  every k (it was 9e-9 below at k = 1 and raised beyond k = 50);
* the enumeration route at k = 1000 is an upper bound (float sums were 6e-14 relative below).

The exact values are written here independently: every multiset ``c`` of the k+1 draws in mpmath (80 digits)
with its multinomial probability ``B(c)`` under ν̂ and ``S_b(c) = Σ_y c_y â_b[y]/ν̂[y]``, from the inputs
normalised exactly (``P(c) = B(c) S0/(k+1)``, ``Q(c) = B(c) S1/(k+1)``).
"""

from __future__ import annotations

import itertools

import mpmath as mp
import numpy as np
import pytest

from distpriv.local.tupling import Tupling
from distpriv.local.tupling_laplace import base_caps, divergence_brackets

CTX = mp.MPContext()
CTX.dps = 80


def exact(a0: np.ndarray, a1: np.ndarray, nu: np.ndarray, k: int) -> dict[str, mp.mpf]:
    """Exact divergences between the tuple laws of the normalised inputs (P = Q#λ0, Q = Q#λ1)."""
    n, m = k + 1, len(nu)
    p0 = [CTX.mpf(float(x)) for x in a0]
    p1 = [CTX.mpf(float(x)) for x in a1]
    pn = [CTX.mpf(float(x)) for x in nu]
    s0, s1, sn = CTX.fsum(p0), CTX.fsum(p1), CTX.fsum(pn)
    p0, p1, pn = [x / s0 for x in p0], [x / s1 for x in p1], [x / sn for x in pn]
    w0 = [p0[i] / pn[i] for i in range(m)]
    w1 = [p1[i] / pn[i] for i in range(m)]
    out = {key: CTX.mpf(0) for key in ("chi2", "reverse-chi2", "hellinger", "kl", "reverse-kl")}
    for head in itertools.product(range(n + 1), repeat=m - 1):
        if sum(head) > n:
            continue
        c = list(head) + [n - sum(head)]
        b = CTX.factorial(n)
        for i in range(m):
            b = b * pn[i] ** c[i] / CTX.factorial(c[i])
        big_s0 = CTX.fsum(c[i] * w0[i] for i in range(m))
        big_s1 = CTX.fsum(c[i] * w1[i] for i in range(m))
        pc, qc = b * big_s0 / n, b * big_s1 / n
        if pc == qc:
            continue
        out["chi2"] += (pc - qc) ** 2 / qc if qc > 0 else CTX.inf
        out["reverse-chi2"] += (pc - qc) ** 2 / pc if pc > 0 else CTX.inf
        out["hellinger"] += (CTX.sqrt(pc) - CTX.sqrt(qc)) ** 2 / 2
        # KL in its non-negative form p ln(p/q) − p + q (the extra terms sum to 0): no cancellation
        out["kl"] += (pc * CTX.log(pc / qc) - pc + qc if qc > 0 else CTX.inf) if pc > 0 else qc
        out["reverse-kl"] += (qc * CTX.log(qc / pc) - qc + pc if pc > 0 else CTX.inf) if qc > 0 else pc
    for key in ("kl", "reverse-kl"):  # KL >= 0 (Gibbs); 80 digits can leave a residue of -1e-150
        out[key] = max(out[key], CTX.mpf(0))
    return out


def _normed(x: np.ndarray) -> np.ndarray:
    return np.asarray(x / x.sum(), dtype=float)


WIDE_A0 = _normed(np.array([1.0, 1e-78, 1e-27]))
WIDE_A1 = _normed(np.array([1.0, 1.0000001e-78, 1.0000001e-27]))
WIDE_NU = _normed(np.array([1e-70, 1.0, 1e-15]))


def _check_all(a0: np.ndarray, a1: np.ndarray, nu: np.ndarray, k: int) -> None:
    ref = exact(a0, a1, nu, k)
    acc = Tupling(np.vstack([a0, a1]), k, nu).accountant
    for name in ("chi2", "hellinger"):
        lo, hi = acc.f_divergence_bounds([1, 0], [0, 1], name)
        assert lo <= ref[name] <= hi, (name, lo, ref[name], hi)
    lo, hi = acc.kl_bounds([1, 0], [0, 1])
    assert lo <= ref["kl"] <= hi, ("kl", lo, ref["kl"], hi)
    assert acc.distp_divergence([1, 0], [0, 1], "chi2") >= max(ref["chi2"], ref["reverse-chi2"])
    assert acc.distp_divergence([1, 0], [0, 1], "hellinger") >= ref["hellinger"]
    assert acc.distp_divergence([1, 0], [0, 1], "kl") >= max(ref["kl"], ref["reverse-kl"])
    caps = base_caps(a0, a1)
    base = exact(a0, a1, np.full(len(nu), 1.0 / len(nu)), 0)  # k = 0: the base laws themselves
    for key in ("chi2", "reverse-chi2", "hellinger", "kl", "reverse-kl"):
        assert caps[key] >= base[key], (key, caps[key], base[key])


@pytest.mark.parametrize("k", [2, 10])
def test_wide_magnitudes_no_overflow_and_sound(k: int) -> None:
    _check_all(WIDE_A0, WIDE_A1, WIDE_NU, k)


def test_wide_magnitudes_beyond_enumeration() -> None:
    """The same laws spread over 60 outputs (uniformly inside one class): the quadrature route."""
    m = 60
    a = [np.concatenate([x[:2], np.full(m - 2, x[2] / (m - 2))]) for x in (WIDE_A0, WIDE_A1, WIDE_NU)]
    acc = Tupling(np.vstack(a[:2]), 10, a[2]).accountant
    assert acc.multiset_laws([1, 0], [0, 1]) is None
    ref = exact(WIDE_A0, WIDE_A1, WIDE_NU, 10)  # w_b is constant on each class: the same divergences
    assert acc.distp_divergence([1, 0], [0, 1], "chi2") >= max(ref["chi2"], ref["reverse-chi2"])
    assert acc.distp_divergence([1, 0], [0, 1], "hellinger") >= ref["hellinger"]
    assert acc.distp_divergence([1, 0], [0, 1], "kl") >= max(ref["kl"], ref["reverse-kl"])


#: Draws of the battery checked in the suite (issue 26: CPU): one in eight, mixed and close rows alike, and the
#: draws 31 and 37 that claimed below exact before the fix; all 40 pass (run with range(40) to see).
CHECKED_DRAWS = frozenset(range(0, 40, 8)) | frozenset(range(3, 40, 16)) | {31, 37}


@pytest.mark.slow
def test_random_wide_magnitude_battery() -> None:
    """|Y| = 3, entries 10^U(−80, 0), half the draws with a1 = a0 (1 + O(1e-7)): brackets contain the exact
    (before the fix, draws 31, 37 and 57 of this seed claimed χ² up to 2e-9 relative below the exact value,
    and a sixth of such draws crashed)."""
    rng = np.random.default_rng(60)
    for it in range(40):
        a0 = _normed(10.0 ** rng.uniform(-80, 0, 3))
        if it % 2:
            a1 = _normed(a0 * (1.0 + 1e-7 * rng.uniform(-1, 1, 3)))
        else:
            a1 = _normed(10.0 ** rng.uniform(-80, 0, 3))
        nu = _normed(10.0 ** rng.uniform(-70, 0, 3))
        k = int(rng.choice([2, 10]))
        if it not in CHECKED_DRAWS:  # drawn to keep the seed's sequence; checked: one in eight of each kind plus the two regressions
            continue
        ref = exact(a0, a1, nu, k)
        got = divergence_brackets(a0, a1, nu, k, ("reverse-chi2",))  # the rest through the accountant
        for key, (lo, hi) in got.items():
            if not np.isnan(hi):
                assert lo <= ref[key] <= hi, (it, key, lo, ref[key], hi)
        _check_all(a0, a1, nu, k)


def test_rows_closer_than_an_ulp_of_their_entries() -> None:
    """Rows 1e-16 apart on 1e-16 entries: the base mechanism's row normalisation rounds each entry, which
    moved χ² by 2e-9 relative; the claim covers the given rows (normalised exactly)."""
    a0 = np.array([2.2711713793419067e-16, 5.9942375903355514e-37, 0.9999999999999997])
    a1 = np.array([2.271171613454072e-16, 5.994237960749184e-37, 0.9999999999999998])
    nu = np.array([1.0, 1.2459232159852835e-37, 2.1761629646050093e-17])
    _check_all(a0, a1, nu, 10)


@pytest.mark.parametrize("k", [1, 50, 1000])
def test_unnormalised_dummy_claims_the_normalised_laws(k: int) -> None:
    a = np.array([[0.9, 0.1], [0.2, 0.8]])
    nu = np.array([0.3 - 9e-9, 0.7])  # Σν = 1 − 9e-9: accepted by the validator
    acc = Tupling(a, k, nu).accountant
    ref = exact(a[0], a[1], nu, k)
    chi = acc.distp_divergence([1, 0], [0, 1], "chi2")
    hel = acc.distp_divergence([1, 0], [0, 1], "hellinger")
    ex_chi = max(ref["chi2"], ref["reverse-chi2"])
    assert ex_chi <= chi <= ex_chi * (1 + 1e-9)
    assert ref["hellinger"] <= hel <= ref["hellinger"] * (1 + 1e-9)
    if k <= 50:
        p, q = acc.multiset_laws([1, 0], [0, 1])  # type: ignore[misc]
        assert abs(p.sum() - 1.0) < 1e-12 and abs(q.sum() - 1.0) < 1e-12


def test_enumeration_is_an_upper_bound_at_k1000() -> None:
    a = np.array([[0.5, 0.5], [0.1, 0.9]])
    nu = np.array([1e-12, 1 - 1e-12])
    acc = Tupling(a, 1000, nu).accountant
    assert acc.multiset_laws([1, 0], [0, 1]) is not None
    ref = exact(a[0], a[1], nu, 1000)
    chi = acc.distp_divergence([1, 0], [0, 1], "chi2")
    hel = acc.distp_divergence([1, 0], [0, 1], "hellinger")
    ex_chi = max(ref["chi2"], ref["reverse-chi2"])
    assert ex_chi <= chi <= ex_chi * (1 + 1e-9)  # the rounding margin is ~5e-11 relative
    assert ref["hellinger"] <= hel <= ref["hellinger"] * (1 + 1e-9)

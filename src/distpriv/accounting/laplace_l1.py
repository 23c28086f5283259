"""A sharper tail bound on the scaled ℓ1 norm of a Gaussian shift (issue 25, gap32): the sign-vector union bound.

For D ~ N(μ, K) in d dimensions and scales b_k > 0, M = Σ_k |D_k|/b_k is the largest of the 2^d linear forms
σᵀ(D/b) over sign vectors σ ∈ {−1, +1}^d (attained at σ = sign D), so

    P(M > s) = P(∪_σ {σᵀ(D/b) > s}) <= Σ_σ Φ((σᵀμ' − s)/√(σᵀK'σ)),   μ' = μ/b, K' = K/(b bᵀ),

each term an exact Gaussian tail (σᵀ(D/b) ~ N(σᵀμ', σᵀK'σ); a term with σᵀK'σ = 0 is the indicator of σᵀμ' > s).
Each term is non-increasing in s, so the bound is too. In one dimension it is P(|D| > s) exactly.

Where it helps: the common-Gaussian-factor bound (:mod:`.laplace_common`, module notes 4.) needs P(M > s) for the
Laplace-shift level M of the residual shift D; its :func:`~distpriv.accounting.laplace_common.l1_tail` takes union
bounds over coordinates and Gaussian concentration with the worst-case Lipschitz constant Σ_k σ_k/b_k. When |E D_k|
is several σ_k, M is nearly the single Gaussian linear form σ*ᵀ(D/b) (σ* = sign E D) with standard deviation
√(σ*ᵀK'σ*), up to √d times smaller than that Lipschitz constant, and this bound reads it exactly (the other 2^d − 1
terms are far smaller). Taking min(l1_tail, sign_union_tail) keeps every certificate (a minimum of upper bounds).
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray
from scipy import special

#: Largest dimension for which the 2^d sign vectors are enumerated (above it :func:`sign_union_tail` returns the
#: trivial bound 1).
MAX_DIM = 12


def sign_union_tail(s: NDArray[np.float64], mean: NDArray[np.float64], cov: NDArray[np.float64],
                    scales: NDArray[np.float64]) -> NDArray[np.float64]:
    """Upper bounds min(1, Σ_σ Φ((σᵀμ' − s)/√(σᵀK'σ))) on P(Σ_k |D_k|/b_k > s) for each s, D ~ N(mean, cov), b =
    ``scales`` (module notes); 1 beyond MAX_DIM dimensions."""
    s = np.asarray(s, dtype=float)
    mu = np.asarray(mean, dtype=float) / scales
    d = mu.size
    if d > MAX_DIM:
        return np.ones_like(s)
    k = np.asarray(cov, dtype=float) / np.outer(scales, scales)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=d)))
    m = signs @ mu
    sd = np.sqrt(np.clip(np.einsum("ij,jk,ik->i", signs, 0.5 * (k + k.T), signs), 0.0, None))
    pos = sd > 0
    out = np.zeros(s.shape)
    if bool(pos.any()):
        z = (m[pos][None, :] - s.reshape(-1, 1)) / sd[pos][None, :]
        out += special.ndtr(z).sum(axis=1).reshape(s.shape)
    if not bool(pos.all()):  # a degenerate form is an atom of σᵀ(D/b): counted where it is within rounding of s
        md, sv = m[~pos][None, :], s.reshape(-1, 1)
        near = 8.0 * np.finfo(float).eps * np.maximum(np.abs(md), np.abs(sv))
        out += (md >= sv - near).sum(axis=1).reshape(s.shape)
    return np.minimum(out, 1.0)

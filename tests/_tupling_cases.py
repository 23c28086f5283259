"""Small random tupling instances shared by the tupling test files."""

from __future__ import annotations

import numpy as np

from distpriv import local


def small_case(seed: int, m: int = 4, n: int = 3, k: int = 3, dummy: np.ndarray | None = None):
    rng = np.random.default_rng(seed)
    a = rng.dirichlet(np.ones(m) * 0.6, size=n)
    t = local.Tupling(base=local.Mechanism(a), k=k, dummy=dummy)
    return t, rng.dirichlet(np.ones(n)), rng.dirichlet(np.ones(n))

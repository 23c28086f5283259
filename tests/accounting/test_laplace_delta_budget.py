"""Issue 25: a δ budget never costs more Laplace noise than the pure claim (ε, 0), which implies (ε, δ)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import distpriv as dp
from distpriv.accounting.release import NoiseLaw, proven_delta, pure_epsilon
from distpriv.accounting.topup import topup_laplace, topup_pure

ADULT = dp.GaussianModel(means={0.45: [28.05], 0.55: [25.50]}, covariances={0.45: [[18.31]], 0.55: [[18.03]]})
SHIFTED = dp.GaussianModel(means={0: [0.0], 1: [0.5]}, covariances={0: [[1.0]], 1: [[1.5]]})


@pytest.mark.parametrize(("name", "model", "pair", "delta", "pure_scale"), [
    # before the fix: 25.5825 with δ = 1e-7 against 25.5580 pure (Adult); 5.4653 with δ = 1e-6 against 5.4586
    ("expm-laplace", ADULT, (0.45, 0.55), 1e-7, 25.55795),
    ("dirm-laplace", SHIFTED, (0, 1), 1e-6, 5.45863),
])
def test_delta_budget_never_costs_more_than_pure(name, model, pair, delta, pure_scale):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pure = dp.calibrate(name, model, [pair], epsilon=0.1)
        approx = dp.calibrate(name, model, [pair], epsilon=0.1, delta=delta)
    assert pure.guarantee.delta == 0.0
    assert pure.laplace_scale == pytest.approx(pure_scale, rel=2e-4)
    # the pure scale is the least with sup|ℓ| <= ε (up to the search's 1e-4): ε at the pure scale / 1.001 exceeds 0.1
    shrunk = NoiseLaw.laplace(np.eye(1), [pure.laplace_scale / 1.001])
    assert pure_epsilon(model, [pair], shrunk).epsilon_lower > 0.1
    assert approx.laplace_scale <= pure.laplace_scale
    assert approx.guarantee.delta == delta
    assert proven_delta(model, [pair], NoiseLaw.of(approx), 0.1, rtol=1e-2).delta_upper <= delta


def test_topup_laplace_is_capped_by_the_pure_topup():
    noise = NoiseLaw.laplace(np.eye(1), [0.5 / 0.1])
    tp = topup_pure(SHIFTED, [(0, 1)], noise, 0.1)
    assert tp is not None
    for delta in (1e-6, 1e-12):  # before the fix: factor 1.09306 at δ = 1e-6 against the pure 1.09173
        tu = topup_laplace(SHIFTED, [(0, 1)], noise, 0.1, delta)
        assert tu.factor <= tp.factor
        assert tu.after.delta_upper <= delta
    # a generous budget still gives strictly less noise than the pure claim (the paper's scale passes)
    loose = topup_laplace(SHIFTED, [(0, 1)], noise, 0.1, 1e-2)
    assert loose.factor == 1.0 < tp.factor * 0.99

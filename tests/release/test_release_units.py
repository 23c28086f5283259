"""Unit-free noise (issue 11): statistics in different units never set each other's noise.

The release pipeline calibrates on D⁻¹F, D the spread of each statistic under the model
(:mod:`distpriv.release.standardize`). Grams → milligrams multiplies that statistic's noise by
exactly 1000 and leaves every other statistic's noise unchanged; without standardisation the
same change moves the other statistics' noise (the control below shows the test can fail).
"""

from __future__ import annotations

import numpy as np
import pytest

from distpriv.models import EmpiricalModel, GaussianModel
from distpriv.release.noise import plan_noise
from distpriv.release.sampler import bit_source
from distpriv.release.selection import select_mechanism
from distpriv.release.standardize import (
    StandardizedPlan,
    grid_step,
    model_spread,
    standardization,
    standardize_model,
)

PAIRS = [(0.45, 0.55)]
LAPLACE_FAMILY = {"wasserstein", "approx-wasserstein", "expm-laplace", "dirm-laplace", "groupdp-laplace"}


def penguins(n: int = 150, seed: int = 0) -> dict[float, np.ndarray]:
    """Skewed, non-Gaussian statistics in mixed units: body mass (g), flipper length (mm), a count."""
    r = np.random.default_rng(seed)
    out = {}
    for theta in (0.45, 0.55):
        shift = (theta - 0.5) * 10
        mass = 4200 + 300 * shift + (80 + 60 * shift) * r.exponential(1.0, n)  # not a translation across θ
        flipper = 200 + 2 * shift + r.uniform(-1.5, 1.5, n)
        count = r.poisson(60 + 6 * shift, n).astype(float)
        out[theta] = np.column_stack([mass, flipper, count])
    return out


def _released_std(samples: dict[float, np.ndarray], *, standardise: bool) -> tuple[str, np.ndarray]:
    model = EmpiricalModel(samples)
    if not standardise:
        sel = select_mechanism(model, PAIRS, epsilon=1.0, delta=1e-3, rng=0)
        return sel.chosen.name, plan_noise(sel.chosen).noise_std
    std = standardization(model, PAIRS)
    sel = select_mechanism(standardize_model(model, std.scale), PAIRS, epsilon=1.0, delta=1e-3, rng=0)
    return sel.chosen.name, StandardizedPlan(plan_noise(sel.chosen), std.scale).noise_std


def test_grams_to_milligrams_changes_only_that_statistics_noise() -> None:
    grams = penguins()
    mg = {k: v * np.array([1000.0, 1.0, 1.0]) for k, v in grams.items()}
    name_g, std_g = _released_std(grams, standardise=True)
    name_mg, std_mg = _released_std(mg, standardise=True)
    assert name_g == name_mg and name_g in LAPLACE_FAMILY  # a Laplace/Wasserstein mechanism is chosen
    assert std_mg[1:] == pytest.approx(std_g[1:], rel=1e-9, abs=0)
    assert std_mg[0] == pytest.approx(1000.0 * std_g[0], rel=1e-9, abs=0)
    # control: calibrating on the raw units, the milligrams change the other statistics' noise
    _, raw_g = _released_std(grams, standardise=False)
    _, raw_mg = _released_std(mg, standardise=False)
    assert np.max(raw_mg[1:] / raw_g[1:]) > 10.0


def test_spread_is_the_std_under_the_mixture_of_the_model() -> None:
    # Gaussian model: Var = mean_θ Σ_kk + Var_θ(μ_k) (law of total variance), closed form
    g = GaussianModel({0.45: [1.0, 10.0], 0.55: [3.0, 10.0]},
                      {0.45: np.diag([4.0, 0.0]), 0.55: np.diag([2.0, 0.0])})
    s = model_spread(g, PAIRS)
    assert s[0] == pytest.approx(np.sqrt(3.0 + 1.0), rel=1e-12) and s[1] == 0.0
    std = standardization(g, PAIRS)
    assert std.scale[0] == pytest.approx(2.0, rel=1e-12) and std.scale[1] == 10.0  # constant: |mean|
    # empirical model: the same identity on the samples (ddof = 1 within θ)
    x = penguins(60, 3)
    e = EmpiricalModel(x)
    want = np.sqrt(np.mean([np.var(v, axis=0, ddof=1) for v in x.values()], axis=0)
                   + np.var([v.mean(axis=0) for v in x.values()], axis=0))
    assert model_spread(e, PAIRS) == pytest.approx(want, rel=1e-12)
    # standardised model: unit spread for every non-constant statistic
    assert model_spread(standardize_model(e, standardization(e, PAIRS).scale), PAIRS) == pytest.approx(1.0, rel=1e-12)


def test_standardized_plan_publishes_on_power_of_two_grids() -> None:
    model = EmpiricalModel(penguins(80, 5))
    std = standardization(model, PAIRS)
    sel = select_mechanism(standardize_model(model, std.scale), PAIRS, epsilon=1.0, delta=1e-3, rng=0,
                           mechanism="expm-laplace")
    plan = StandardizedPlan(plan_noise(sel.chosen), std.scale)
    assert plan.grids is not None
    for d, g in zip(std.scale, plan.grids, strict=True):
        assert g == grid_step(g) and d * plan.grid / 2 < g <= d * plan.grid
    x = np.array([4210.123, 199.87, 61.0])
    vals = np.array([plan.apply(x, bit_source(s)) for s in range(40)])
    assert np.all(vals / np.array(plan.grids) == np.round(vals / np.array(plan.grids)))
    # the noise is the plan's, in the statistic's units: std of 40 draws within a 4-sigma band of the law's
    sd = vals.std(axis=0, ddof=1)
    rel_se = np.sqrt(5.0 / 40)  # Laplace kurtosis 6: Var(s²)/σ⁴ ≈ (κ − 1)/N = 5/N
    assert np.all(np.abs(sd**2 / plan.noise_std**2 - 1) < 4 * rel_se)
    assert plan.noise_std == pytest.approx(plan.plan.noise_std * std.scale, rel=1e-12)


def test_many_statistics_report_caps_the_f_theta_panels() -> None:
    from distpriv.release import protect
    from distpriv.release.public import public_context
    from distpriv.release.render import MAX_PANELS, release_figures, release_sections
    from test_release import people

    data, pop = people(200, 7), people(2000, 9, start=100_000)
    stats = [f"count:age>{a}" for a in range(25, 25 + MAX_PANELS + 3)]
    res = protect(data, stats=stats, protect="income=>50K", pairs=[(0.45, 0.55)], epsilon=1.0, delta=1e-3,
                  population=pop, samples=40, mechanism="expm-laplace", seed=1)
    ctx = public_context(res)
    figs = release_figures(ctx, {"epsilon": []}, None)
    f_theta = next(f for f in figs if f.name == "f_theta")
    drawn = [ax for ax in f_theta.image.axes if ax.axison]
    assert len(drawn) == MAX_PANELS
    assert all(ax.get_xlabel() and ax.get_ylabel() == "density" for ax in drawn)  # labelled axes
    assert "first 12 of 15" in f_theta.caption
    md = "\n".join(s.body for s in release_sections(ctx, None))
    assert "not shown: count:age&gt;37, count:age&gt;38, count:age&gt;39" in md


def test_exact_release_says_so_plainly() -> None:
    from distpriv.release import protect
    from distpriv.release.public import public_context
    from distpriv.release.render import release_sections
    from test_release import people

    data, pop = people(200, 7), people(2000, 9, start=100_000)
    res = protect(data, stats=["mean:age"], protect="income=>50K", pairs=[(0.45, 0.55)], epsilon=1e6, delta=1e-300,
                  population=pop, samples=40)  # auto: Thm 5.4 holds at this ε
    doc = res.to_json()
    assert doc["mechanism"] == "none" and doc["noise"]["grid"] is None and doc["statistics"][0]["value"] == float(data["age"].mean())
    secs = release_sections(public_context(res), None)
    assert secs[0].title == "The guarantee in words"
    assert "**The values are exact.**" in secs[0].body and "without noise" in secs[0].body
    md = "\n".join(s.body for s in secs)
    assert "not shown" not in md and "Released **exactly, without noise** (Theorem 5.4)" in md

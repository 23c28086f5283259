"""Gaussian record models (distpriv.attribute.record_model): closed forms vs Monte Carlo, sup over Θ, Algorithm 1."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from distpriv.attribute import (
    ClassConditionalColumn,
    GaussianRecordModel,
    Interval,
    apgm,
    apgm_noise_variance,
    box_extremum,
    dataset_attribute_privacy,
    distributional_attribute_privacy,
)
from distpriv.attribute import examples as ex
from distpriv.calibration import gaussian_delta
from distpriv.errors import InvalidParameterError, UnknownLabelError

MU = {"x": 1.0, "y": -2.0, "z": 0.5}
COV = {("x", "x"): 2.0, ("y", "y"): 3.0, ("z", "z"): 1.5, ("x", "y"): 1.2, ("x", "z"): -0.4, ("y", "z"): 0.3}


def _model(n: int = 20) -> GaussianRecordModel:
    return GaussianRecordModel(["x", "y", "z"], MU, COV, n)


def test_record_model_closed_forms_vs_monte_carlo() -> None:
    """F | g = a ~ N(μ_j + (V_ij/V_ii)(a − μ_i), (V_jj − V_ij²/V_ii)/n) on simulated datasets."""
    m = _model(20)
    data = m.sample(MU, COV, size=6000, rng=1)  # (6000, 20, 3)
    g = data[:, :, 0].mean(axis=1)
    f = data[:, :, 1].mean(axis=1)
    slope, intercept, *_ = stats.linregress(g, f)
    mean_a, var = m.conditional_moments(MU, COV, "x", ["y"], 0.0)
    mean_b, _ = m.conditional_moments(MU, COV, "x", ["y"], 1.0)
    r = float(mean_b[0] - mean_a[0])
    vbar = float(var[0, 0])
    n_sim = g.size
    se_slope = math.sqrt(vbar / (n_sim * g.var()))
    assert r == pytest.approx(1.2 / 2.0)
    assert abs(slope - r) < 5 * se_slope
    assert abs(intercept - mean_a[0]) < 5 * math.sqrt(vbar / n_sim) * math.sqrt(1 + g.mean() ** 2 / g.var())
    resid = f - (intercept + slope * g)
    assert resid.var(ddof=2) == pytest.approx(vbar, rel=5 * math.sqrt(2 / n_sim))
    assert vbar == pytest.approx((3.0 - 1.2**2 / 2.0) / 20)
    assert stats.kstest(resid / math.sqrt(vbar), "norm").pvalue > 1e-3
    # vector F: conditional covariance of (mean y, mean z)
    _, cov2 = m.conditional_moments(MU, COV, "x", ["y", "z"], 0.0)
    fz = data[:, :, 1:].mean(axis=1)
    beta = np.linalg.lstsq(np.column_stack([np.ones(n_sim), g]), fz, rcond=None)[0]
    res2 = fz - np.column_stack([np.ones(n_sim), g]) @ beta
    np.testing.assert_allclose(np.cov(res2, rowvar=False), cov2, atol=6 * np.sqrt(2 / n_sim) * cov2.max())


def test_class_conditional_column_vs_monte_carlo() -> None:
    """Hospital weight: given exactly 13 of 50 female, mean weight ~ N(a m_F + (1−a) m_O, (a v_F + (1−a) v_O)/n)."""
    n, k = 50, 13
    theta = {"k1": 3.2, "k2": 85.0, "mu_F": 65.0, "mu_O": 70.0, "sd_height_F": 3.0, "sd_height_O": 8.0, "sd_weight": 15.0}
    model = ex.hospital_models(n)["weight"]
    rng = np.random.default_rng(2)
    sims = 20000
    female = np.zeros(n, dtype=bool)
    female[:k] = True
    h = np.where(female, theta["mu_F"], theta["mu_O"]) + np.where(female, 3.0, 8.0) * rng.standard_normal((sims, n))
    w = theta["k1"] * h - theta["k2"] + 15.0 * rng.standard_normal((sims, n))
    f = w.mean(axis=1)
    a = k / n
    mean, var = model.mean(theta, a), model.variance(theta, a)
    assert abs(f.mean() - mean) < 5 * math.sqrt(var / sims)
    assert f.var(ddof=1) == pytest.approx(var, rel=5 * math.sqrt(2 / sims))
    assert stats.kstest((f - mean) / math.sqrt(var), "norm").pvalue > 1e-3


@pytest.mark.parametrize(
    "vii, vjj, vij",
    [
        (Interval.closed(1, 2), Interval.closed(2, 3), Interval.closed(0.5, 1.0)),  # PSD constraint slack
        (Interval.closed(0.5, 2), Interval.closed(1, 1.5), Interval.closed(-2, 1)),  # PSD binds, sign change
        (Interval.closed(0.2, 2), Interval.closed(1, 2), Interval.closed(1.5, 2)),  # PSD forces V_ii up
    ],
)
def test_sensitivity_and_variance_sup_vs_grid(vii: Interval, vjj: Interval, vij: Interval) -> None:
    n = 10
    m = GaussianRecordModel(["i", "j"], {"i": 0.0, "j": 0.0}, {("i", "i"): vii, ("j", "j"): vjj, ("i", "j"): vij}, n)
    fw = dataset_attribute_privacy(["i", "j"], [(("i", Interval.closed(0.0, 0.1)), ("i", Interval.closed(0.9, 1.0)))])
    s = m.sensitivity("i", ["j"], fw.pairs[0])
    v = m.min_conditional_variance("i", ["j"])
    g = 61
    V, W, C = np.meshgrid(np.linspace(vii.low, vii.high, g), np.linspace(vjj.low, vjj.high, g),
                          np.linspace(vij.low, vij.high, g), indexing="ij")
    ok = C**2 <= V * W + 1e-12
    ratio = np.where(ok, np.abs(C) / V, -np.inf).max()
    vmin = np.where(ok, (W - C**2 / V) / n, np.inf).min()
    assert s.value >= ratio * 1.0 - 1e-12  # sup|a − b| = 1.0
    assert s.value == pytest.approx(ratio, rel=0.03)
    assert v.value <= vmin + 1e-12
    assert v.value == pytest.approx(vmin, abs=0.01 * max(vjj.high, 1) / n)
    # the generic numeric search over the same box agrees
    num = box_extremum(lambda x: abs(x["c"]) / x["v"] if x["c"] ** 2 <= x["v"] * x["w"] + 1e-12 else float("nan"),
                       {"v": vii, "w": vjj, "c": vij})
    assert num.value <= s.value + 1e-9


def test_open_ranges_are_flagged_not_attained() -> None:
    m = GaussianRecordModel(["i", "j"], {"i": 0.0, "j": 0.0},
                            {("i", "i"): Interval.open(1, 2), ("j", "j"): 3.0, ("i", "j"): Interval.open(0.5, 1.0)}, 5)
    fw = dataset_attribute_privacy(["i", "j"], [(("i", Interval.open(0.0, 0.5)), ("i", Interval.open(0.5, 1.0)))])
    s = m.sensitivity("i", ["j"], fw.pairs[0])
    assert s.value == pytest.approx(1.0 / 1.0 * 1.0) and not s.attained


def test_apgm_privacy_by_exact_profile() -> None:
    """For every θ in the box and secret pair, the released Gaussians meet (ε, δ) exactly."""
    box_cov = {("x", "x"): Interval.closed(1.5, 2.5), ("y", "y"): Interval.closed(2.5, 3.5),
               ("x", "y"): Interval.closed(0.8, 1.4), ("z", "z"): 1.0}
    m = GaussianRecordModel(["x", "y", "z"], {"x": 0.0, "y": 0.0, "z": 0.0}, box_cov, 8)
    fw = dataset_attribute_privacy(["x", "y", "z"], [(("x", Interval.closed(-1, 0)), ("x", Interval.closed(0.5, 2)))])
    rng = np.random.default_rng(3)
    for cal, eps in (("exact", 1.0), ("exact", 0.3), ("classic", 0.5)):
        mech = m.apgm(fw, "y", epsilon=eps, delta=1e-4, calibration=cal)
        s2 = mech.noise_variance
        assert s2 > 0 and mech.kind == "gaussian"
        worst = 0.0
        for _ in range(300):
            vii, vjj, vij = rng.uniform(1.5, 2.5), rng.uniform(2.5, 3.5), rng.uniform(0.8, 1.4)
            cov = {("x", "x"): vii, ("y", "y"): vjj, ("x", "y"): vij}
            a, b = rng.uniform(-1, 0), rng.uniform(0.5, 2)
            ma, va = m.conditional_moments({"x": 0, "y": 0}, cov, "x", ["y"], a)
            mb, vb = m.conditional_moments({"x": 0, "y": 0}, cov, "x", ["y"], b)
            assert va[0, 0] == pytest.approx(vb[0, 0])  # Theorem 1's equal variance holds here
            d = abs(ma[0] - mb[0]) / math.sqrt(va[0, 0] + s2)
            worst = max(worst, float(gaussian_delta(d, eps)))
        assert worst <= 1e-4 * (1 + 1e-9)
        # the extreme corner (V_ii = 1.5, V_ij = 1.4, V_jj = 2.5, a = −1, b = 2) is tight for exact
        ma, va = m.conditional_moments({"x": 0, "y": 0}, {("x", "x"): 1.5, ("y", "y"): 2.5, ("x", "y"): 1.4}, "x", ["y"], -1)
        mb, _ = m.conditional_moments({"x": 0, "y": 0}, {("x", "x"): 1.5, ("y", "y"): 2.5, ("x", "y"): 1.4}, "x", ["y"], 2)
        corner = float(gaussian_delta(abs(ma[0] - mb[0]) / math.sqrt(va[0, 0] + s2), eps))
        if cal == "exact":
            assert corner == pytest.approx(1e-4, rel=1e-6)
        else:
            assert corner <= 1e-4


def test_bad_inputs() -> None:
    with pytest.raises(InvalidParameterError, match="missing variance"):
        GaussianRecordModel(["x", "y"], {"x": 0, "y": 0}, {("x", "x"): 1.0}, 5)
    with pytest.raises(UnknownLabelError):
        GaussianRecordModel(["x"], {"x": 0}, {("x", "x"): 1.0, ("x", "q"): 0.1}, 5)
    with pytest.raises(InvalidParameterError, match="low must be <= high"):
        GaussianRecordModel(["x"], {"x": Interval(2, 1)}, {("x", "x"): 1.0}, 5)
    m = _model()
    fw = dataset_attribute_privacy(["x", "y", "z"], [(("x", (0.0,)), ("x", (1.0,)))])
    with pytest.raises(UnknownLabelError):
        m.apgm(fw, "nope", epsilon=1, delta=1e-3)
    dfw = distributional_attribute_privacy(["x"], [(("x", (0.0,)), ("x", (1.0,)))], thetas=("t",))
    with pytest.raises(InvalidParameterError, match="dataset attribute"):
        apgm(dfw, lambda *a: ([0.0], [[1.0]]), epsilon=1, delta=1e-3)
    with pytest.raises(InvalidParameterError):
        apgm_noise_variance(1.0, 0.0, 0.0, 1e-3)
    bad = GaussianRecordModel(["i", "j"], {"i": 0, "j": 0},
                              {("i", "i"): Interval.closed(0.1, 0.2), ("j", "j"): 1.0, ("i", "j"): Interval.closed(2, 3)}, 5)
    with pytest.raises(InvalidParameterError, match="PSD"):
        bad.sensitivity("i", ["j"], fw.pairs[0])


def test_class_conditional_column_is_linear() -> None:
    col = ClassConditionalColumn(lambda t: (t["m1"], t["m0"]), lambda t: (1.0, 4.0), 10)
    th = {"m1": 3.0, "m0": 1.0}
    assert col.mean(th, 0.25) == pytest.approx(1.5) and col.variance(th, 0.25) == pytest.approx(3.25 / 10)


def test_vector_record_model_sup_on_psd_boundary() -> None:
    """Vector F = (mean j, mean k), k independent of (i, j): Δ and min λ(V̄) must match the 1-D closed forms,
    whose extremum sits on the PSD boundary V_ij² = V_ii V_jj (missed by a vertex search)."""
    fw = dataset_attribute_privacy(["i", "j", "k"], [(("i", (0.0,)), ("i", (1.0,)))])
    for vii, vjj, vij in [(Interval.closed(0.2, 2), Interval.closed(1, 2), Interval.closed(1.5, 2)),
                          (Interval.closed(0.5, 2), Interval.closed(1, 1.5), Interval.closed(-2, 1))]:
        cov = {("i", "i"): vii, ("j", "j"): vjj, ("i", "j"): vij, ("k", "k"): 1.0}
        m = GaussianRecordModel(["i", "j", "k"], {"i": 0.0, "j": 0.0, "k": 0.0}, cov, 10)
        one = m.sensitivity("i", ["j"], fw.pairs[0]).value
        assert m.sensitivity("i", ["j", "k"], fw.pairs[0]).value >= one * (1 - 1e-12)
        assert m.min_conditional_variance("i", ["j", "k"]).value <= m.min_conditional_variance("i", ["j"]).value + 1e-12
        # the released pair at the boundary point meets D_max
        mech = m.apgm(fw, ["j", "k"], epsilon=1.0, delta=1e-3)
        vs = max(vii.low, vij.low**2 / vjj.high) if vij.low > 0 else vii.low
        c = min(max(abs(vij.low), abs(vij.high)), math.sqrt(vs * vjj.high))
        c = c if abs(vij.high) >= abs(vij.low) else -c
        pt = {("i", "i"): vs, ("j", "j"): vjj.high, ("i", "j"): c, ("k", "k"): 1.0}
        ma, va = m.conditional_moments({"i": 0, "j": 0, "k": 0}, pt, "i", ["j", "k"], 0.0)
        mb, _ = m.conditional_moments({"i": 0, "j": 0, "k": 0}, pt, "i", ["j", "k"], 1.0)
        d = ma - mb
        dist = float(np.sqrt(d @ np.linalg.solve(va + mech.noise_covariance, d)))
        assert dist <= mech.details["d_max"] * (1 + 1e-9)

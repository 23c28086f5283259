"""Per-statistic intervals of a release (issue 21, item 3): closed forms, an independent numerical CDF, coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

import distpriv as dp
from distpriv.errors import InvalidParameterError
from distpriv.release.intervals import (
    display,
    joint_region,
    marginal_laws,
    noise_cdf,
    noise_quantile,
    statistic_intervals,
)
from distpriv.release.noise import plan_noise
from distpriv.release.sampler import SeededBits
from distpriv.release.selection import Candidate, Relaxation
from distpriv.release.standardize import StandardizedPlan


def gil_pelaez_cdf(x: float, s: float, cs: list[float]) -> float:
    """P(N <= x) for N = G + Σ c_j L_j by Gil-Pelaez inversion of φ(t) = e^{−s²t²/2} Π 1/(1 + c_j² t²) (QAWF)."""
    def phi_over_t(t: float) -> float:
        if t == 0.0:
            return 0.0
        v = math.exp(-0.5 * s * s * t * t)
        for c in cs:
            v /= 1.0 + c * c * t * t
        return v / t

    if x == 0:
        return 0.5
    val, _ = integrate.quad(phi_over_t, 0.0, np.inf, weight="sin", wvar=abs(x), limlst=200)
    half = val / math.pi
    return 0.5 + half if x > 0 else 0.5 - half


def gil_pelaez_quantile(p: float, s: float, cs: list[float]) -> float:
    from scipy.optimize import brentq

    hi = 10 * math.sqrt(s * s + 2 * sum(c * c for c in cs))
    return brentq(lambda x: gil_pelaez_cdf(x, s, cs) - p, 0.0, hi, xtol=1e-12)


# --------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99])
def test_gaussian_and_laplace_quantiles_match_closed_forms(level: float) -> None:
    p = 1 - (1 - level) / 2
    assert noise_quantile(p, 2.5, []) == pytest.approx(2.5 * stats.norm.ppf(p), rel=1e-12)
    assert noise_quantile(p, 0.0, [0.7]) == pytest.approx(stats.laplace.ppf(p, scale=0.7), rel=1e-12)
    # an upper bound, never below the exact quantile
    assert noise_quantile(p, 2.5, []) >= 2.5 * stats.norm.ppf(p)
    assert noise_quantile(p, 0.0, [0.7]) >= stats.laplace.ppf(p, scale=0.7)


def test_normal_laplace_cdf_against_direct_integration() -> None:
    s, c = 0.7, 1.3
    for x in (-3.0, -0.4, 0.0, 1.1, 4.0):
        direct, _ = integrate.quad(lambda u, x=x: stats.norm.cdf((x - u) / s) * stats.laplace.pdf(u, scale=c),
                                   -80, 80, points=[0.0, x], limit=400)
        assert noise_cdf(x, s, [c]) == pytest.approx(direct, abs=1e-10)


@pytest.mark.parametrize(("s", "cs"), [(0.0, [1.0, 0.4]), (0.5, [1.0, 0.3]), (1.2, [0.2, 0.9, 2.0]), (0.0, [1.5, 1.4, 0.1])])
def test_linear_combination_cdf_against_gil_pelaez(s: float, cs: list[float]) -> None:
    for x in (-2.5, -0.3, 0.8, 3.7):
        assert noise_cdf(x, s, cs) == pytest.approx(gil_pelaez_cdf(x, s, cs), abs=2e-8)
    q = noise_quantile(0.975, s, cs)
    ref = gil_pelaez_quantile(0.975, s, cs)
    assert ref <= q * (1 + 1e-9)
    assert q == pytest.approx(ref, rel=1e-7)


def test_equal_scales_are_separated_conservatively() -> None:
    """Two equal Laplace scales: the quantile is an upper bound within the 0.1% separation."""
    q = noise_quantile(0.975, 0.3, [1.0, 1.0])
    ref = gil_pelaez_quantile(0.975, 0.3, [1.0, 1.0])
    assert ref <= q <= ref * 1.001
    with pytest.raises(InvalidParameterError, match="laplace"):
        noise_cdf(0.0, 0.3, [1.0, 1.0])


def test_display_digits() -> None:
    assert display(14.2022705078125, 0.098) == "14.202 ± 0.098"
    assert display(377.3125, 40.2) == "377 ± 41"
    assert display(28.68, 0.61) == "28.68 ± 0.61"
    assert display(0.32134, 0.000123) == "0.32134 ± 0.00013"
    assert display(1234.5, 995.0) == "1200 ± 1000"  # 995 rounds up to 1000: two digits, the hundreds
    assert display(-2.0, 0.0) == "-2"
    assert display(5.0, 3.0) == "5.0 ± 3.0"


# --------------------------------------------------------------------------- plans of every noise family
def _model() -> dp.GaussianModel:
    mu = {0.2: np.array([1.0, 2.0, 0.5]), 0.3: np.array([1.4, 1.7, 0.9])}
    cov = np.array([[1.0, 0.3, 0.1], [0.3, 0.8, 0.2], [0.1, 0.2, 0.5]]) * 0.01
    return dp.GaussianModel(means=mu, covariances={0.2: cov, 0.3: cov})


def _candidate(name: str, extra: float = 0.0) -> Candidate:
    mech = dp.calibrate(name, _model(), [(0.2, 0.3)], epsilon=1.0, delta=1e-3)
    rel = Relaxation(lam=0.1, w=0.01) if extra else None
    return Candidate(name, name, True, "test", 3, mech, extra, None, mech.guarantee, 1.0, rel)


FAMILIES = {
    "gaussian": lambda: plan_noise(_candidate("expm-gauss")),
    "laplace": lambda: plan_noise(_candidate("expm-laplace")),
    "rotated-gaussian": lambda: plan_noise(_candidate("eigm")),
    "rotated-laplace": lambda: plan_noise(_candidate("dirm-laplace")),
    "gaussian+laplace": lambda: plan_noise(_candidate("eigm", extra=0.05)),
    "standardized": lambda: StandardizedPlan(plan_noise(_candidate("dirm-laplace", extra=0.02)), [3.0, 1000.0, 0.01]),
}


def test_families_are_what_they_say() -> None:
    fams = {k: {law.family for law in marginal_laws(f())} for k, f in FAMILIES.items()}
    assert fams["gaussian"] == {"gaussian"}
    assert fams["laplace"] == {"laplace"}
    assert fams["rotated-gaussian"] == {"gaussian"}
    assert fams["rotated-laplace"] == {"laplace"}
    assert fams["gaussian+laplace"] == {"gaussian+laplace"}
    assert FAMILIES["rotated-laplace"]().rotated


def test_rotated_marginal_quantile_against_independent_computation() -> None:
    """DirM (L) + Thm 5.7 noise: marginal = Σ_j V_ij b_j L_j + b′L′; quantile from Gil-Pelaez on the raw plan."""
    plan = plan_noise(_candidate("dirm-laplace", extra=0.03))
    v, scales = np.asarray(plan.basis), np.asarray(plan.scales)
    ivs = statistic_intervals(np.zeros(3), plan, 0.95)
    for i in range(3):
        cs = [abs(v[i, j]) * scales[j] for j in range(3) if plan.laws[j] == "laplace" and abs(v[i, j]) * scales[j] > 0]
        cs.append(plan.extra_laplace_scale)
        ref = gil_pelaez_quantile(0.975, 0.0, cs)
        assert ivs[i].quantile == pytest.approx(ref, rel=1e-6)
        assert ivs[i].half_width >= ref


def _coverage(plan, level: float, n: int, seed: int) -> tuple[np.ndarray, float | None]:
    x = np.array([1.234567, -2.5, 0.0071])
    src = SeededBits(seed)
    hits = np.zeros(3)
    joint_hits = 0
    joint = joint_region(x, plan, level) is not None
    cov = np.asarray(plan.noise_covariance)
    for _ in range(n):
        o = plan.apply(x, src)
        for k, iv in enumerate(statistic_intervals(o, plan, level)):
            hits[k] += iv.lo <= x[k] <= iv.hi
        if joint:
            reg = joint_region(o, plan, level)
            assert reg is not None
            d = o - x
            joint_hits += float(d @ np.linalg.pinv(cov) @ d) <= reg["radius"] ** 2
    return hits / n, (joint_hits / n if joint else None)


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_interval_coverage_per_noise_family(family: str) -> None:
    """1,000 seeded releases: coverage of every statistic within 3.5 binomial standard errors of 0.9
    (benchmarks/bench_intervals.py runs 2,000 at 0.95)."""
    level, n = 0.9, 1000
    plan = FAMILIES[family]()
    cov, joint = _coverage(plan, level, n, seed=21)
    tol = 3.5 * math.sqrt(level * (1 - level) / n)
    assert np.all(np.abs(cov - level) <= tol), (family, cov)
    if joint is not None:
        assert abs(joint - level) <= tol, (family, joint)


def test_interval_coverage_smoke() -> None:
    """Fast check (400 releases, rotated Laplace): coverage within 3.5 binomial standard errors."""
    level, n = 0.8, 400
    cov, _ = _coverage(FAMILIES["rotated-laplace"](), level, n, seed=5)
    assert np.all(np.abs(cov - level) <= 3.5 * math.sqrt(level * (1 - level) / n)), cov


def test_noiseless_interval_is_the_value() -> None:
    model = _model()
    far = dp.GaussianModel(means={0.2: np.zeros(3), 0.3: np.full(3, 1e-6)},
                           covariances={0.2: np.eye(3), 0.3: np.eye(3)})
    del model
    from distpriv.release.selection import quiet_check_noiseless as check_noiseless

    chk = check_noiseless(far, [(0.2, 0.3)], epsilon=1.0, delta=1e-3)
    assert chk.ok
    cand = Candidate("none", "None", True, "test", 3, None, 0.0, None, chk.guarantee, 0.0)
    plan = plan_noise(cand)
    ivs = statistic_intervals([1.0, 2.0, 3.0], plan, 0.95)
    assert [iv.to_list() for iv in ivs] == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]


def test_level_is_validated() -> None:
    plan = FAMILIES["gaussian"]()
    with pytest.raises(InvalidParameterError, match="interval_level"):
        statistic_intervals([0.0, 0.0, 0.0], plan, 1.5)


# --------------------------------------------------------------------------- in a release
MODEL_TOML = """statistics = ["mean:age", "count:sex=Female"]
[theta."0.45"]
mean = [42.25, 147.0]
covariance = [[0.26, 0.1], [0.1, 90.0]]
[theta."0.55"]
mean = [42.75, 153.0]
covariance = [[0.26, 0.1], [0.1, 90.0]]
"""


@pytest.fixture(scope="module")
def declared_release(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    import pandas as pd

    from distpriv.release import protect

    d = tmp_path_factory.mktemp("intervals")
    (d / "model.toml").write_text(MODEL_TOML)
    g = np.random.default_rng(0)
    flag = np.arange(400) < 180
    data = pd.DataFrame({"income": np.where(flag, ">50K", "<=50K"), "age": np.round(g.normal(40, 10, 400)),
                         "sex": np.where(g.random(400) < 0.35, "Female", "Male")})
    res = protect(data, stats=["mean:age", "count:sex=Female"], protect="income=>50K", pairs=[(0.45, 0.55)],
                  epsilon=1.0, delta=1e-3, model=d / "model.toml", seed=3, interval_level=0.9)
    return d, data, res


def test_release_publishes_intervals_and_display(declared_release) -> None:  # noqa: ANN001
    _, _, res = declared_release
    doc = res.to_json()
    ivs = statistic_intervals(res.values, res.noise, 0.9)
    for st, iv, v in zip(doc["statistics"], ivs, res.values, strict=True):
        assert st["value"] == float(v)  # the exact grid value
        assert st["interval"] == iv.to_list() and st["interval_level"] == 0.9
        assert iv.lo < v < iv.hi and (iv.hi - iv.lo) / 2 == pytest.approx(iv.half_width, rel=1e-12)
        assert st["display"] == display(float(v), iv.half_width)
    assert [iv.to_list() for iv in res.intervals] == [st["interval"] for st in doc["statistics"]]
    assert res.display == [st["display"] for st in doc["statistics"]]
    # the half-width is the closed-form quantile of each statistic's noise (plus the rounding) when 1-D
    for iv, law in zip(ivs, marginal_laws(res.noise), strict=True):
        if law.family == "gaussian":
            assert iv.quantile == pytest.approx(law.gaussian * stats.norm.ppf(0.95), rel=1e-9)
        elif law.family == "laplace" and len(law.laplace) == 1:
            assert iv.quantile == pytest.approx(stats.laplace.ppf(0.95, scale=law.laplace[0]), rel=1e-9)


def test_interval_level_is_validated_in_the_spec(declared_release) -> None:  # noqa: ANN001
    from distpriv.release import protect

    d, data, _ = declared_release
    with pytest.raises(InvalidParameterError, match="^interval_level: "):
        protect(data, stats=["mean:age", "count:sex=Female"], protect="income=>50K", pairs=[(0.45, 0.55)],
                epsilon=1.0, delta=1e-3, model=d / "model.toml", seed=3, interval_level=1.0)


def test_interval_warning_uses_published_values_only() -> None:
    from distpriv.release.render import interval_warnings, noise_warnings

    doc = {"statistics": [
        {"name": "a", "value": 0.01, "interval": [-0.04, 0.06], "interval_level": 0.95, "display": "0.01 ± 0.05"},
        {"name": "b", "value": 10.0, "interval": [9.0, 11.0], "interval_level": 0.95, "display": "10.0 ± 1.0"},
    ]}
    warns = interval_warnings(doc)
    assert len(warns) == 1 and "'a'" in warns[0] and "0.01 ± 0.05" in warns[0] and "95%" in warns[0]
    assert noise_warnings(doc) == []  # nothing value-dependent on public stderr


def test_value_renderings_cover_what_differs_in_the_report() -> None:
    """Two payloads that differ only in values/intervals/displays give the same report once the renderings go."""
    from distpriv.release.render import value_renderings

    def doc(v: float, lo: float, hi: float, disp: str) -> dict:
        return {"statistics": [{"name": "a", "value": v, "interval": [lo, hi], "interval_level": 0.95,
                                "display": disp}]}

    a, b = doc(0.01, -0.04, 0.06, "0.01 ± 0.05"), doc(10.0, 9.95, 10.05, "10.00 ± 0.05")
    ra, rb = value_renderings(a), value_renderings(b)
    assert len(ra) == 2 and len(rb) == 1  # a warns (half-width > |value|), b does not

    def text(d: dict, r: list[str]) -> str:
        from distpriv.release.render import _interval_warning_lines

        t = "| a | " + d["statistics"][0]["display"] + " |\nnote" + "".join(_interval_warning_lines(d)) + "\n## next"
        for s in r:
            t = t.replace(s, "")
        return t

    assert text(a, ra) == text(b, rb) == "| a |  |\nnote\n## next"


def test_joint_ellipsoid_radius_is_the_chi2_quantile_plus_rounding() -> None:
    plan = FAMILIES["rotated-gaussian"]()
    reg = joint_region(np.zeros(3), plan, 0.95)
    assert reg is not None and reg["rank"] == 3
    ref = math.sqrt(stats.chi2.ppf(0.95, 3))
    assert ref < reg["radius"] <= ref + 3 / 1024  # ρ <= ||R||₂/σ_min <= √3·(√3 + 1)/2 · g/σ_min, g <= σ_min/1024
    assert joint_region(np.zeros(3), FAMILIES["laplace"](), 0.95) is None  # Laplace noise: no ellipsoid


def test_exact_combinations_are_the_directions_without_noise() -> None:
    from distpriv.release.intervals import exact_combinations

    plan = FAMILIES["rotated-laplace"]()  # DirM (L): Laplace along one direction, none elsewhere
    combos = exact_combinations(plan)
    noisy = np.asarray(plan.basis)[:, [j for j, law in enumerate(plan.laws) if law == "laplace"]]
    assert len(combos) == 3 - noisy.shape[1]
    for u in combos:
        assert np.linalg.norm(u) == pytest.approx(1.0) and np.abs(noisy.T @ u).max() < 1e-9
    assert exact_combinations(FAMILIES["laplace"]()) == []

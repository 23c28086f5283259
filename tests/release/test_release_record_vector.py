"""Record-level DP for the linear vector statistics (issue 22 item 2): histograms, group-by sums and counts.

* the replace-one worst case against an independent brute force: every record of a small enumerated domain
  (bin or none, group or none, the summed value on a grid of its bounds) paired with every other, the
  contribution vectors built here from the statistics' definitions, not by the module;
* the (E, D)-DP claim of a release with a histogram and a group-by sum, on the noise actually drawn, with δ(E)
  by numerical integration (``hockey_stick_delta`` of tests/test_release_record.py);
* refusals with the reason: variances, quantiles, ratios (not linear), group-by means (private group sizes),
  a group-by sum without bounds.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

from distpriv.errors import InvalidParameterError
from distpriv.release import protect
from distpriv.release.record import check_record_specs, layout_sensitivity_set, max_mahalanobis
from distpriv.statspec import build_layout
from test_release_privacy import table
from test_release_record import gaussian_part, hockey_stick_delta

E, D = 1.0, 1e-6
BINS = (-math.inf, 35.0, 45.0, math.inf)
STATS = ["hist:age@-inf,35,45,inf", "sum:hours@by=sex:Female|Male", "count:age>40@by=sex:Female|Male", "mean:age"]
LO, HI = 0.0, 80.0
ALO, AHI = 20.0, 60.0


def contribution(age: float | None, sex: str | None, hours: float, n: int) -> np.ndarray:
    """The record's contribution to each published coordinate, from the statistics' definitions.

    ``age=None``/``sex=None``: a value in no bin / no declared group.
    """
    b = [0.0, 0.0, 0.0]
    if age is not None:
        b[next(i for i in range(3) if BINS[i] <= age < BINS[i + 1])] = 1.0
    groups = ("Female", "Male")
    sums = [hours if sex == g else 0.0 for g in groups]
    counts = [1.0 if (sex == g and age is not None and age > 40) else 0.0 for g in groups]
    mean = (min(max(age, ALO), AHI) if age is not None else ALO) / n
    return np.array([*b, *sums, *counts, mean])


def brute_force_mu(cov: np.ndarray, n: int, *, none_bin: bool = True) -> float:
    """sup over pairs of records of ‖c(r) − c(r′)‖ in cov⁻¹, records enumerated over a grid of the domain."""
    ages: list[float | None] = [20.0, 30.0, 40.0, 41.0, 50.0, 60.0]
    if none_bin:
        ages.append(None)
    records = [contribution(a, s, h, n) for a, s, h in itertools.product(
        ages, ["Female", "Male", None], [LO, 0.5 * (LO + HI), HI])]
    inv = np.linalg.inv(cov)
    c = np.asarray(records)
    diff = (c[:, None, :] - c[None, :, :]).reshape(-1, c.shape[1])
    return math.sqrt(float(np.max(np.einsum("ij,jk,ik->i", diff, inv, diff))))


def test_layout_sensitivity_set_against_brute_force() -> None:
    """The module's worst case equals the brute force over the enumerated domain, for random covariances."""
    layout = build_layout(STATS, STATS)
    n = 300
    sens = layout_sensitivity_set(layout, (("age", ALO, AHI), ("hours", LO, HI)), n)
    assert layout.dim == 8 and sens.dim == 8
    per = sens.per_statistic()
    assert np.allclose(per, [1, 1, 1, HI - LO, HI - LO, 1, 1, (AHI - ALO) / n], rtol=1e-12)
    # L1: a histogram 2, a group-by sum 2(hi − lo) (hi·e_a − lo·e_b), a group-by count 2, the mean (hi − lo)/n
    assert sens.l1() == pytest.approx(2 + 2 * (HI - LO) + 2 + (AHI - ALO) / n, rel=1e-12)
    rng = np.random.default_rng(5)
    for _ in range(3):
        a = rng.normal(size=(8, 8)) * np.r_[np.ones(3), 40.0, 40.0, 1.0, 1.0, 0.1]
        cov = a @ a.T + 0.05 * np.diag(np.r_[np.ones(3), 1600.0, 1600.0, 1.0, 1.0, 0.01])
        mu = max_mahalanobis(cov, sens)
        # the module's domain: independent statistics, each record possibly in no bin or group
        # (the brute force couples them through one record: its μ is at most the module's)
        brute = brute_force_mu(cov, n)
        assert brute <= mu * (1 + 1e-9)
    # the product domain of the module (statistics independent): brute force over one record per statistic
    diag = np.diag(np.r_[np.ones(3), 1600.0, 1600.0, 1.0, 1.0, 1e-4])
    mu = max_mahalanobis(diag, sens)
    # diagonal: worst = two bins (2) + two group sums ((80² + 80²)/1600 = 8) + two counts (2) + mean ((40/n)²/1e-4)
    want = math.sqrt(2 + 8 + 2 + ((AHI - ALO) / n) ** 2 / 1e-4)
    assert mu == pytest.approx(want, rel=1e-6)  # up to the floating-point term of the claim
    assert brute_force_mu(diag, n) <= mu * (1 + 1e-9)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("recvec")
    table(6000, 2400, 1, 1_000_000).to_csv(d / "pop.csv", index=False)
    table(300, 120, 2, 0).to_csv(d / "d40.csv", index=False)
    return d


@pytest.mark.slow
def test_histogram_and_groupby_sum_claim(folder: Path) -> None:
    stats = ["hist:age@-inf,35,45,inf", "sum:hours@by=sex:Female|Male"]
    res = protect(str(folder / "d40.csv"), stats=stats, protect="income=>50K", pairs=[(0.3, 0.4)], epsilon=1.0,
                  delta=1e-3, population=str(folder / "pop.csv"), samples=200, seed=0, record_epsilon=E,
                  record_delta=D, bounds={"hours": (LO, HI)})
    doc = res.to_json()
    rec = doc["record_guarantee"]
    assert (rec["epsilon"], rec["delta"], rec["neighbours"]) == (E, D, "replace-one")
    cov = gaussian_part(res)
    assert np.linalg.eigvalsh(cov)[0] > 0  # full rank
    inv = np.linalg.inv(cov)
    # independent brute force over pairs of records: bin (or none, the module's domain), sex (or none), hours
    recs = []
    for b, s, h in itertools.product([0, 1, 2, None], ["Female", "Male", None], [LO, 40.0, HI]):
        c = np.zeros(5)
        if b is not None:
            c[b] = 1.0
        if s is not None:
            c[3 + ("Female", "Male").index(s)] = h
        recs.append(c)
    c = np.asarray(recs)
    diff = (c[:, None, :] - c[None, :, :]).reshape(-1, 5)
    mu = math.sqrt(float(np.max(np.einsum("ij,jk,ik->i", diff, inv, diff))))
    assert mu <= rec["worst_case_mahalanobis"] * (1 + 1e-9)  # the claim covers the true worst case
    assert rec["worst_case_mahalanobis"] <= mu * (1 + 1e-6)  # and is exact up to the rounding term
    assert hockey_stick_delta(rec["worst_case_mahalanobis"], E) <= D * (1 + 1e-6)
    names = [f"{stats[0]}[[-inf, 35)]", f"{stats[0]}[[35, 45)]", f"{stats[0]}[[45, inf)]",
             f"{stats[1]}[Female]", f"{stats[1]}[Male]"]
    assert list(rec["sensitivities"]) == names
    assert np.allclose(list(rec["sensitivities"].values()), [1, 1, 1, HI - LO, HI - LO], rtol=1e-12)
    assert any("at most one bin of a histogram" in a for a in rec["assumptions"])
    g = doc["guarantee"]
    assert g["epsilon"] <= 1.0 + 1e-9 and g["delta"] <= 1e-3 * (1 + 1e-9)
    # the true values are of the data (the histogram of age, hours summed per sex)
    import pandas as pd

    df = pd.read_csv(folder / "d40.csv")
    want = [float((df["age"] < 35).sum()), float(((df["age"] >= 35) & (df["age"] < 45)).sum()),
            float((df["age"] >= 45).sum()), float(df.loc[df["sex"] == "Female", "hours"].clip(LO, HI).sum()),
            float(df.loc[df["sex"] == "Male", "hours"].clip(LO, HI).sum())]
    assert np.allclose(res.prepared.values, want, rtol=1e-12)


@pytest.mark.parametrize(("stat", "why"), [
    ("median:age", "not linear"), ("var:age", "not linear"), ("std:age", "not linear"),
    ("quantile:age@0.9", "not linear"), ("ratio:sum(age)/sum(hours)", "not linear"),
    ("mean:hours@by=sex", "group-by mean.*sum:hours@by=sex"),
])
def test_nonlinear_refused_with_reason(folder: Path, stat: str, why: str) -> None:
    with pytest.raises(InvalidParameterError, match=why) as exc:
        protect(str(folder / "d40.csv"), stats=["mean:age", stat], protect="income=>50K", pairs=[(0.3, 0.4)],
                epsilon=1.0, delta=1e-3, population=str(folder / "pop.csv"), record_epsilon=E, record_delta=D,
                bounds={"age": (20, 60), "hours": (0, 80)})
    assert exc.value.argument == "record_epsilon"


def test_vector_statistics_accepted_and_bounds_needed() -> None:
    check_record_specs(["hist:education", "hist:age@-inf,18,inf", "count:sex=Female@by=race", "sum:hours@by=sex"],
                       (("hours", 0.0, 80.0),))
    # bins that leave values outside would let one record decide between a release and a refusal
    with pytest.raises(InvalidParameterError, match="start them at -inf and end them at inf") as exc:
        check_record_specs(["hist:age@0,18,inf"], (("age", 17.0, 90.0),))
    assert exc.value.argument == "stats"
    with pytest.raises(InvalidParameterError, match="bounds for column 'hours'") as exc:
        check_record_specs(["hist:education", "sum:hours@by=sex"], (("age", 17.0, 90.0),))
    assert exc.value.argument == "bounds"


def test_least_record_noise_matches_the_semidefinite_program() -> None:
    """The record-only noise by the dual solver and the block split equals the joint SDP over every product vertex
    (cvxpy/Clarabel, an independent computation), is feasible, and its trace is certified by the weak dual."""
    from distpriv.release.record import (
        SensitivitySet,
        _one_hot_differences,
        _pad,
        _solve_set,
        least_record_noise,
        least_trace_cover,
    )

    m = 6
    rng = np.random.default_rng(3)
    d = rng.uniform(0.5, 2.0, m)  # a public diagonal: breaks the histogram's symmetry
    seg = np.zeros(m)
    seg[0] = 0.7
    hist = _one_hot_differences([1, 2, 3, 4], m, (1.0,), 0.0)
    gsum = _one_hot_differences([5], m, (0.0, 3.0), 3.0)
    sens = SensitivitySet((np.vstack([seg, -seg]), hist, gsum), np.zeros(m), m).scaled(d)
    mu = 0.8
    cov = least_record_noise(sens, mu)
    verts = sens.vertices()
    q = np.einsum("ij,jk,ik->i", verts, np.linalg.inv(cov), verts)
    assert q.max() <= mu**2 * (1 + 1e-9)  # feasible on every product vertex
    sdp = _pad(_solve_set(None, verts, mu, [], 0.0), sens, mu)
    assert np.trace(cov) == pytest.approx(np.trace(sdp), rel=2e-4)
    # weak duality: any λ on the vertices bounds every feasible trace from below; the uniform λ's bound holds
    lam = np.full(len(verts), 1.0 / len(verts))
    w = np.linalg.eigvalsh((verts * lam[:, None]).T @ verts)
    assert np.sum(np.sqrt(w)) ** 2 / mu**2 <= np.trace(cov) * (1 + 1e-9)
    # one histogram alone, unscaled: the optimum is known in closed form, α I + β 11ᵀ with α = 2, β = −2/(k + 1)
    k = 4
    cover = least_trace_cover(_one_hot_differences(list(range(k)), k, (1.0,), 0.0))
    assert np.trace(cover) == pytest.approx(2 * k * k / (k + 1), rel=2e-4)

"""The paper's worked examples: the synthetic hospital (Section 4.2) and the school (Example 1).

Hospital (dataset attribute privacy, Section 4.2 "Experiments"). 50 records:
gender ~ Bernoulli(.6) (1 = female); height ~ N(65, 3) if female else N(70, 3);
weight | height ~ N(3.6·height − 90, 15); temperature ~ N(98.6, 0.5);
blood pressure ~ N(100, 3) if female else N(106, 3). The second argument of
N(·, ·) is read as a standard deviation: the paper's conditional variances
4.5 = 15²/50, 2 = 10²/50 and 0.08 = 2²/50 only fit that reading.

Θ (the analyst's assumptions): weight | height ~ N(k1·height − k2, 15) with
k1 ∈ (3, 3.5), k2 ∈ (80, 90); height ~ N(μ_F, 3), μ_F ∈ (64, 66) if female and
N(μ_O, 8), μ_O ∈ (69, 71) otherwise; blood pressure N(b_F, 10) / N(b_O, 10) with
6 <= b_F − b_O <= 10; temperature N(t_F, 2) / N(t_O, 2) with 0 <= t_F − t_O <= 0.3;
gender ~ Bernoulli(p), p ∈ (.25, .75). Secrets: the share a of female patients,
Q = {(a, b) : a ∈ (.25, .5), b ∈ (.5, .75)} with a, b multiples of 1/50.

Given the share a, each column average is exactly Gaussian with a mean linear in
a (:class:`~distpriv.attribute.record_model.ClassConditionalColumn`):

* weight: class means k1·μ_c − k2, class variances k1²·s_c² + 15² (s_F = 3, s_O = 8);
* blood pressure: class means b_O + (b_F − b_O)·1[c = F], variance 10² (b_O cancels in Δ);
* temperature: likewise with t_F − t_O and variance 2².

School (distributional attribute privacy, Example 1, Figure 1). The paper gives
the network's shape (family income, gender, SAT, height, weight) but no
parameters; the supports and tables below are illustrative choices of this
module (edges: income → gender, income → SAT, gender → SAT, gender → height,
gender → weight, height → weight), with Θ holding two such networks.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, cast

import numpy as np
import pandas as pd

from .._validation import RngLike, as_rng, check_int
from .bayesnet import ParameterNetwork
from .pufferfish import (
    Interval,
    Lattice,
    PufferfishFramework,
    dataset_attribute_privacy,
    distributional_attribute_privacy,
)
from .record_model import ClassConditionalColumn

# --------------------------------------------------------------------------- hospital
HOSPITAL_ATTRIBUTES = ("gender", "height", "weight", "blood_pressure", "temperature")

#: The generator of Section 4.2 (means and standard deviations).
HOSPITAL_GENERATOR: dict[str, float] = {
    "p_female": 0.6, "height_female": 65.0, "height_other": 70.0, "height_sd": 3.0,
    "weight_slope": 3.6, "weight_intercept": -90.0, "weight_sd": 15.0,
    "temperature_mean": 98.6, "temperature_sd": 0.5,
    "bp_female": 100.0, "bp_other": 106.0, "bp_sd": 3.0,
}

#: Θ of Section 4.2 as a box per statistic (open ranges as printed; fixed values as points).
HOSPITAL_THETA: dict[str, dict[str, Interval]] = {
    "weight": {
        "k1": Interval.open(3.0, 3.5), "k2": Interval.open(80.0, 90.0),
        "mu_F": Interval.open(64.0, 66.0), "mu_O": Interval.open(69.0, 71.0),
        "sd_height_F": Interval.point(3.0), "sd_height_O": Interval.point(8.0), "sd_weight": Interval.point(15.0),
    },
    "blood_pressure": {"gap": Interval.closed(6.0, 10.0), "sd": Interval.point(10.0)},
    "temperature": {"gap": Interval.closed(0.0, 0.3), "sd": Interval.point(2.0)},
}

HOSPITAL_SECRETS = (Interval.open(0.25, 0.5), Interval.open(0.5, 0.75))


def hospital_framework(n: int = 50) -> PufferfishFramework:
    """Q = {(share ∈ (.25, .5), share ∈ (.5, .75))} on gender, shares on the lattice k/n."""
    lo, hi = HOSPITAL_SECRETS
    return dataset_attribute_privacy(
        HOSPITAL_ATTRIBUTES, [(("gender", lo), ("gender", hi))], codomains={"gender": Lattice.fractions(n)}
    )


def hospital_models(n: int = 50) -> dict[str, ClassConditionalColumn]:
    """Conditional moment models of the three released averages given the female share."""
    def w_means(t: Mapping[str, float]) -> tuple[float, float]:
        return t["k1"] * t["mu_F"] - t["k2"], t["k1"] * t["mu_O"] - t["k2"]

    def w_vars(t: Mapping[str, float]) -> tuple[float, float]:
        k = t["k1"] ** 2
        return k * t["sd_height_F"] ** 2 + t["sd_weight"] ** 2, k * t["sd_height_O"] ** 2 + t["sd_weight"] ** 2

    def gap_means(t: Mapping[str, float]) -> tuple[float, float]:
        return t["gap"], 0.0

    def sd_vars(t: Mapping[str, float]) -> tuple[float, float]:
        return t["sd"] ** 2, t["sd"] ** 2

    return {
        "weight": ClassConditionalColumn(w_means, w_vars, n),
        "blood_pressure": ClassConditionalColumn(gap_means, sd_vars, n),
        "temperature": ClassConditionalColumn(gap_means, sd_vars, n),
    }


def generate_hospital(n: int = 50, rng: RngLike = None, params: Mapping[str, float] | None = None) -> pd.DataFrame:
    """The synthetic hospital dataset of Section 4.2 (gender 1 = female)."""
    k = check_int(n, "n", minimum=1)
    p = {**HOSPITAL_GENERATOR, **(params or {})}
    g = as_rng(rng)
    female = g.random(k) < p["p_female"]
    height = np.where(female, p["height_female"], p["height_other"]) + p["height_sd"] * g.standard_normal(k)
    weight = p["weight_slope"] * height + p["weight_intercept"] + p["weight_sd"] * g.standard_normal(k)
    temperature = p["temperature_mean"] + p["temperature_sd"] * g.standard_normal(k)
    bp = np.where(female, p["bp_female"], p["bp_other"]) + p["bp_sd"] * g.standard_normal(k)
    return pd.DataFrame({"gender": female.astype(int), "height": height, "weight": weight,
                         "blood_pressure": bp, "temperature": temperature})


def hospital_generator_outside_theta() -> list[str]:
    """Where the paper's data generator falls outside its own Θ (reported, not corrected)."""
    gen = HOSPITAL_GENERATOR
    th = HOSPITAL_THETA
    out = []
    if not th["weight"]["k1"].contains(gen["weight_slope"]):
        out.append(f"weight slope 3.6 ∉ k1 range {th['weight']['k1']}")
    if not th["weight"]["k2"].contains(-gen["weight_intercept"]):
        out.append(f"weight intercept 90 ∉ k2 range {th['weight']['k2']}")
    if gen["height_sd"] != th["weight"]["sd_height_O"].low:
        out.append("height sd of non-female patients is 3 in the generator, 8 in Θ")
    if not th["blood_pressure"]["gap"].contains(gen["bp_female"] - gen["bp_other"]):
        out.append(f"b_F − b_O = {gen['bp_female'] - gen['bp_other']:g} ∉ [6, 10] (Θ assumes females have higher blood pressure)")
    if gen["bp_sd"] != th["blood_pressure"]["sd"].low:
        out.append("blood pressure sd is 3 in the generator, 10 in Θ")
    if gen["temperature_sd"] != th["temperature"]["sd"].low:
        out.append("temperature sd is 0.5 in the generator, 2 in Θ")
    return out


# --------------------------------------------------------------------------- school
SCHOOL_ATTRIBUTES = ("income", "gender", "sat", "height", "weight")
SCHOOL_PARENTS = {"gender": ("income",), "sat": ("income", "gender"), "height": ("gender",),
                  "weight": ("gender", "height")}
#: Supports of φ: mean family income ($k), share of girls, mean SAT, mean height (in), mean weight (lb).
SCHOOL_SUPPORTS = {"income": (40, 80, 150), "gender": (0.0, 0.5, 1.0), "sat": (1050, 1200, 1350),
                   "height": (64, 67, 70), "weight": (130, 150, 170)}


def _school_tables(variant: int) -> dict[str, Any]:
    shift = 0.05 * variant
    return {
        "income": [0.3, 0.5, 0.2],
        "gender": {  # P(share of girls | income): weakly tied to income
            (40,): [0.25 - shift, 0.5 + shift, 0.25],
            (80,): [0.3, 0.45, 0.25],
            (150,): [0.4 + shift, 0.35 - shift, 0.25],
        },
        "sat": np.array([  # P(mean SAT | income, share of girls): strongly tied to income
            [[0.7, 0.25, 0.05], [0.65, 0.3, 0.05], [0.6, 0.3, 0.1]],
            [[0.2, 0.6, 0.2], [0.2, 0.55, 0.25], [0.15, 0.55, 0.3]],
            [[0.05, 0.3, 0.65], [0.05, 0.25, 0.7], [0.05, 0.2, 0.75]],
        ]),
        "height": {(0.0,): [0.1, 0.3, 0.6], (0.5,): [0.25, 0.5, 0.25], (1.0,): [0.6, 0.3, 0.1]},
        "weight": np.array([  # P(mean weight | share of girls, mean height)
            [[0.5, 0.35, 0.15], [0.3, 0.45, 0.25], [0.15, 0.4, 0.45]],
            [[0.55, 0.35, 0.1], [0.35, 0.45, 0.2], [0.2, 0.45, 0.35]],
            [[0.6, 0.3, 0.1], [0.4, 0.45, 0.15], [0.25, 0.45, 0.3]],
        ]),
    }


def school_networks() -> tuple[ParameterNetwork, ParameterNetwork]:
    """Θ for Example 1: two parameterisations of the Figure 1 network."""
    return tuple(ParameterNetwork(SCHOOL_SUPPORTS, SCHOOL_PARENTS, _school_tables(k), name=f"school-{k}")
                 for k in (0, 1))  # type: ignore[return-value]


def school_framework() -> PufferfishFramework:
    """Protect the distribution of family income: every pair of distinct φ_income values."""
    vals = SCHOOL_SUPPORTS["income"]
    pairs = [(("income", (a,)), ("income", (b,))) for i, a in enumerate(vals) for b in vals[i + 1:]]
    return distributional_attribute_privacy(SCHOOL_ATTRIBUTES, pairs, thetas=("school-0", "school-1"))


def generate_school(n: int = 200, rng: RngLike = None, network: ParameterNetwork | None = None) -> tuple[dict[str, Any], pd.DataFrame]:
    """Draw φ from the network, then n students with columns independent given φ (Definition 5)."""
    k = check_int(n, "n", minimum=1)
    g = as_rng(rng)
    net = network if network is not None else school_networks()[0]
    phi = net.sample(g)
    df = pd.DataFrame({
        "income": g.lognormal(np.log(_num(phi["income"])), 0.4, k),
        "gender": (g.random(k) < _num(phi["gender"])).astype(int),
        "sat": np.clip(np.round(_num(phi["sat"]) + 150.0 * g.standard_normal(k)), 400, 1600),
        "height": _num(phi["height"]) + 3.0 * g.standard_normal(k),
        "weight": _num(phi["weight"]) + 15.0 * g.standard_normal(k),
    })
    return phi, df



def _num(value: Hashable) -> float:
    """A numeric parameter value φ_i of a school network (the networks' values are numbers)."""
    return float(cast(float, value))

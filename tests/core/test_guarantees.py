"""Typed guarantees (kinds, enumerated framework/calibration, validation) and their composition."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

import distpriv as dp
from distpriv import divergences as dv
from distpriv.calibration import CALIBRATIONS
from distpriv.errors import AssumptionError, DistPrivError, InvalidParameterError, InvalidTypeError
from distpriv.guarantees import DIVERGENCES, Calibration, Framework, Guarantee, compose

PSI = ((0.45, 0.55),)


def g(eps: float = 1.0, delta: float = 1e-3, **kw) -> Guarantee:
    kw.setdefault("pairs", PSI)
    return Guarantee(eps, delta, kw.pop("mechanism", "m"), **kw)


# --------------------------------------------------------------------------- the type
def test_enum_coercion_keeps_plain_strings_working() -> None:
    x = g(framework="attribute-privacy", calibration="classic")
    assert x.framework is Framework.ATTRIBUTE and x.calibration is Calibration.CLASSIC
    assert x.framework == "attribute-privacy" and x.calibration == "classic"
    assert isinstance(x.framework, str) and f"{x.framework}" == "attribute-privacy" and str(x.calibration) == "classic"
    d = json.loads(json.dumps(x.to_dict()))
    assert d["framework"] == "attribute-privacy" and d["calibration"] == "classic" and d["divergence"] is None
    # copies re-validate and keep the enum members
    y = replace(x, epsilon=2.0).with_notes("n").with_assumptions("a")
    assert y.framework is Framework.ATTRIBUTE and y.notes == ("n",) and y.assumptions == ("a",)
    # every calibration rule the library accepts is a Calibration value
    assert set(CALIBRATIONS) <= {c.value for c in Calibration}
    assert {f.value for f in Framework} == {
        "distribution-privacy", "attribute-privacy", "local-distribution-privacy",
        "differential-privacy", "group-differential-privacy",
    }


def test_str_and_to_dict_name_the_kind() -> None:
    assert str(g()) == "(1, 0.001)-distribution-privacy [m, exact]"
    assert str(g(0.5, 0.0, calibration="laplace")) == "(0.5, 0)-distribution-privacy [m, laplace]"
    k = Guarantee(0.125, 0.0, "coupling", framework="local-distribution-privacy", calibration="theorem",
                  divergence="kl")
    assert str(k) == "KL ≤ 0.125 local-distribution-privacy [coupling, theorem]"
    assert k.is_divergence and not g().is_divergence
    d = k.to_dict()
    assert d["divergence"] == "kl" and d["epsilon"] == 0.125 and d["delta"] == 0.0
    assert d["framework"] == "local-distribution-privacy" and d["calibration"] == "theorem"
    labels = {name: str(Guarantee(0.25, 0.0, "m", divergence=name)).split(" ≤ ")[0] for name in DIVERGENCES}
    assert labels == {"kl": "KL", "reverse-kl": "reverse KL", "tv": "TV", "chi2": "χ²", "hellinger": "Hellinger²"}
    assert set(DIVERGENCES) == set(dv.F_DIVERGENCES)
    # a vacuous claim is allowed and says so
    assert str(g(math.inf, 0.1)) == "(inf, 0.1)-distribution-privacy [m, exact]"


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"framework": "central"}, InvalidParameterError, "framework: unknown value 'central'"),
        ({"calibration": "analytic"}, InvalidParameterError, "calibration: unknown value 'analytic'"),
        ({"eps": math.nan}, InvalidParameterError, "epsilon: must be >= 0"),
        ({"eps": -0.1}, InvalidParameterError, "epsilon: must be >= 0"),
        ({"eps": -math.inf}, InvalidParameterError, "epsilon"),
        ({"eps": "one"}, InvalidTypeError, "epsilon"),
        ({"eps": True}, InvalidTypeError, "epsilon"),
        ({"delta": 1.5}, InvalidParameterError, r"delta: must be in \[0, 1\]"),
        ({"delta": -1e-9}, InvalidParameterError, "delta"),
        ({"delta": math.nan}, InvalidParameterError, "delta"),
        ({"delta": math.inf}, InvalidParameterError, "delta"),
        ({"divergence": "renyi"}, InvalidParameterError, "divergence: unknown value 'renyi'"),
        ({"divergence": "max"}, InvalidParameterError, "use divergence=None"),
        ({"divergence": 3}, InvalidTypeError, "divergence"),
        ({"divergence": "kl", "delta": 0.01}, InvalidParameterError, "divergence claim"),
        ({"pairs": ((1, 2, 3),)}, InvalidParameterError, "pairs"),
        ({"pairs": "ab"}, InvalidTypeError, "pairs"),
        ({"mechanism": 7}, InvalidTypeError, "mechanism"),
    ],
)
def test_bad_values_are_refused(kwargs: dict, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match) as info:
        g(**kwargs)
    assert isinstance(info.value, DistPrivError)


def test_valid_edge_values() -> None:
    assert g(0.0, 0.0).epsilon == 0.0
    assert g(1.0, 1.0).delta == 1.0
    x = g(np.float64(0.5), np.float64(1e-6), pairs=[[1, 2]])
    assert type(x.epsilon) is float and x.pairs == ((1, 2),)


def test_central_mechanisms_make_epsilon_delta_claims() -> None:
    cov = [[2.0, 0.3], [0.3, 1.0]]
    model = dp.GaussianModel(means={0.45: [0.0, 0.0], 0.55: [1.0, 0.5]}, covariances={0.45: cov, 0.55: cov})
    mech = dp.calibrate("expm-gauss", model, [(0.45, 0.55)], epsilon=1.0, delta=1e-3)
    assert mech.guarantee.divergence is None
    assert mech.guarantee.framework is Framework.DISTRIBUTION and mech.guarantee.calibration is Calibration.EXACT


# --------------------------------------------------------------------------- compose: refusals
def test_compose_refuses_mixed_frameworks() -> None:
    with pytest.raises(InvalidParameterError, match="different frameworks, distribution-privacy .* local-distribution"):
        compose([g(), g(framework="local-distribution-privacy")])
    with pytest.raises(InvalidParameterError, match="frameworks"):
        compose([g(framework="differential-privacy"), g(framework="group-differential-privacy")])


def test_compose_refuses_mixed_kinds_of_claim() -> None:
    kl = g(0.1, 0.0, divergence="kl")
    with pytest.raises(InvalidParameterError, match=r"\(ε, δ\) claim .* KL claim"):
        compose([g(), kl])
    with pytest.raises(InvalidParameterError, match="KL claim .* TV claim"):
        compose([kl, g(0.1, 0.0, divergence="tv")])


def test_compose_refuses_unequal_psi() -> None:
    with pytest.raises(AssumptionError, match="same secret pairs Ψ"):
        compose([g(), g(pairs=((0.45, 0.55), (0.5, 0.6)))])
    with pytest.raises(AssumptionError, match="Ψ"):
        compose([g(), g(pairs=())])


def test_compose_refuses_bad_arguments() -> None:
    with pytest.raises(InvalidParameterError, match="at least one"):
        compose([])
    with pytest.raises(InvalidTypeError, match="guarantees"):
        compose([g(), (1.0, 1e-3)])  # type: ignore[list-item]
    with pytest.raises(InvalidTypeError, match="guarantees"):
        compose(g())  # type: ignore[arg-type]


# --------------------------------------------------------------------------- compose: valid cases
def test_compose_epsilon_delta_adds_and_keeps_assumptions() -> None:
    a = g(0.5, 1e-3, mechanism="eigm", assumptions=("Gaussian f_θ",))
    b = g(0.7, 2e-3, mechanism="expm-gauss", pairs=((0.55, 0.45),), assumptions=("Gaussian f_θ", "translation"))
    c = compose([a, b], independent=True)
    assert c.epsilon == pytest.approx(1.2) and c.delta == pytest.approx(3e-3) and c.divergence is None
    assert c.mechanism == "eigm+expm-gauss" and c.framework is Framework.DISTRIBUTION
    assert c.pairs == PSI and c.theorem == "Chen & Ohrimenko Prop. A.4/A.5"
    assert c.assumptions[:2] == ("Gaussian f_θ", "translation")
    assert c.assumptions[2].startswith("sequential composition (Chen & Ohrimenko Prop. A.4/A.5): releases use "
                                       "independent noise and the released query values are conditionally "
                                       "independent given θ")
    assert c.calibration is Calibration.EXACT and c.notes == ()
    # δ is capped at 1; a single guarantee composes to itself (values)
    assert compose([g(1.0, 0.7), g(1.0, 0.6)], independent=True).delta == 1.0
    one = compose([a])
    assert (one.epsilon, one.delta) == (a.epsilon, a.delta)


def test_compose_mixed_calibrations_and_other_frameworks() -> None:
    c = compose([g(calibration="classic", mechanism="eigm"), g(calibration="laplace", mechanism="expm-laplace")], independent=True)
    assert c.calibration is Calibration.MIXED and c.notes == ("parts calibrated as: eigm: classic, expm-laplace: laplace",)
    loc = compose([g(framework="local-distribution-privacy")] * 2, independent=True)
    assert "tupling" in loc.theorem and any("independent" in a and "Ψ ⋄ Ψ" in a for a in loc.assumptions)
    dpc = compose([g(framework="differential-privacy")] * 3)
    assert dpc.theorem == "Dwork & Roth Thm 3.16" and dpc.epsilon == pytest.approx(3.0)
    att = compose([g(framework="attribute-privacy")] * 2, independent=True)
    assert any("(s, θ)" in a for a in att.assumptions)
    assert compose([g(math.inf), g()], independent=True).epsilon == math.inf


def _pairs(seed: int, n: int = 5) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(rng.dirichlet(np.ones(n) * 1.5) for _ in range(4))


@pytest.mark.parametrize("seed", range(5))
def test_compose_divergence_rules_against_exact_products(seed: int) -> None:
    """Each rule applied to the exact divergences of two releases equals (KL, χ², Hellinger²) or bounds (TV)
    the exact divergence of the independent pair of outputs."""
    p1, q1, p2, q2 = _pairs(seed)
    p, q = np.outer(p1, p2).ravel(), np.outer(q1, q2).ravel()
    for name in DIVERGENCES:
        fn = dv.F_DIVERGENCES[name]
        parts = [Guarantee(fn(a, b), 0.0, f"m{i}", pairs=PSI, divergence=name)
                 for i, (a, b) in enumerate(((p1, q1), (p2, q2)))]
        c = compose(parts, independent=True)
        assert c.divergence == name and c.delta == 0.0
        whole = fn(p, q)
        if name == "tv":
            assert whole <= c.epsilon + 1e-12
            assert c.epsilon == pytest.approx(min(1.0, parts[0].epsilon + parts[1].epsilon))
        else:
            assert c.epsilon == pytest.approx(whole, rel=1e-10, abs=1e-14)
    # the naive sum would under-state χ² of the product: the rule is needed
    chi = dv.chi_square
    assert chi(p, q) > chi(p1, q1) + chi(p2, q2)


@pytest.mark.parametrize("seed", range(5))
def test_compose_epsilon_delta_against_exact_products(seed: int) -> None:
    p1, q1, p2, q2 = _pairs(seed + 10)
    p, q = np.outer(p1, p2).ravel(), np.outer(q1, q2).ravel()
    d1, d2 = 0.01, 0.03
    e1 = dv.symmetric_approx_max_divergence(p1, q1, d1)
    e2 = dv.symmetric_approx_max_divergence(p2, q2, d2)
    c = compose([g(e1, d1), g(e2, d2)], independent=True)
    assert dv.symmetric_approx_max_divergence(p, q, c.delta) <= c.epsilon + 1e-12


# --------------------------------------------------------------------------- compose: independence (issue 27)
def _joint_delta_quadrature(cov_a: np.ndarray, cov_b: np.ndarray, epsilon: float) -> float:
    """δ(ε) = ∫ (p_a − e^ε p_b)_+ of two centred 2-D Gaussians, by a midpoint rule on [-8, 8]² (independent
    of distpriv; outside, the unit-variance densities hold < 1e-14; the grid step 0.02 resolves them to ~1e-5)."""
    x = np.arange(-8.0, 8.0, 0.02) + 0.01
    pts = np.stack(np.meshgrid(x, x), axis=-1)

    def pdf(c: np.ndarray) -> np.ndarray:
        q = np.einsum("...i,ij,...j->...", pts, np.linalg.inv(c), pts)
        return np.exp(-q / 2) / (2 * np.pi * np.sqrt(np.linalg.det(c)))

    return float(np.maximum(pdf(cov_a) - math.exp(epsilon) * pdf(cov_b), 0.0).sum() * 0.02**2)


def test_compose_refuses_without_a_declaration_of_independence() -> None:
    """The issue's case: two statistics with identical N(0, 1) marginals under both θ, correlation +0.9 under one
    and −0.9 under the other, released without noise. Each alone is truthfully (0.5, 1e-5) (its law does not
    depend on θ); together the true δ at ε = 1 is 0.61, not the basic-composition 2e-5."""
    a, b = g(0.5, 1e-5, mechanism="first"), g(0.5, 1e-5, mechanism="second")
    with pytest.raises(AssumptionError, match=r"^independent: composing distribution-privacy claims .*"
                                              r"pass independent=True .*joint vector") as err:
        compose([a, b])
    assert "\n" not in str(err.value)
    for fw in ("attribute-privacy", "local-distribution-privacy"):
        with pytest.raises(AssumptionError, match="pass independent=True"):
            compose([g(framework=fw), g(framework=fw)])
    with pytest.raises(InvalidTypeError, match="independent: expected True or False"):
        compose([a, b], independent="yes")  # type: ignore[arg-type]
    plus, minus = np.array([[1.0, 0.9], [0.9, 1.0]]), np.array([[1.0, -0.9], [-0.9, 1.0]])
    true_delta = max(_joint_delta_quadrature(plus, minus, 1.0), _joint_delta_quadrature(minus, plus, 1.0))
    assert true_delta == pytest.approx(0.6118, abs=2e-3)
    # the declared claim is what basic composition gives, and carries the declaration as an assumption
    c = compose([a, b], independent=True)
    assert (c.epsilon, c.delta) == (1.0, 2e-5) and c.delta < true_delta / 1e4
    assert c.assumptions[-1].startswith("declared by the caller (independent=True), not checked")
    # the joint alternative: the accounting core's exact profile of the joint vector sees the correlation
    from distpriv.accounting.gaussian import gaussian_pair_profile

    prof = gaussian_pair_profile([0.0, 0.0], plus, [0.0, 0.0], minus, 1.0, rtol=1e-3)
    assert prof.delta == pytest.approx(true_delta, rel=5e-3)
    # one guarantee, and differential privacy (composes on the same data: Dwork & Roth 3.16), need no declaration
    assert compose([a]).epsilon == 0.5
    dpc = compose([g(framework="differential-privacy")] * 2)
    assert dpc.epsilon == 2.0 and not any("independent=True" in x for x in dpc.assumptions)

"""Auditing a mechanism: a lower bound on ε from the attacker's whole trade-off curve.

**Hypothesis-testing view of (ε, δ).** If M is (ε, δ)-distribution private for
the pair (θ0, θ1) (Chen & Ohrimenko Definition 3.2; tupling paper Definition 8
for local mechanisms), then for *every* output set S and both orders

    Pr(M ∈ S | θ1) <= e^ε Pr(M ∈ S | θ0) + δ,     Pr(M ∈ S | θ0) <= e^ε Pr(M ∈ S | θ1) + δ.

Read S as the rejection region of a test that guesses θ1: with FPR = Pr(S | θ0)
and TPR = Pr(S | θ1) every test obeys TPR <= e^ε FPR + δ, i.e.

    ε >= ln((TPR − δ) / FPR)                                               (1)

(Kairouz, Oh & Viswanath 2015, Thm 2.1; Jagielski, Ullman & Oprea 2020; Nasr et
al. 2021). The accuracy bound of the old audit is (1) at the symmetric point of
the trade-off curve, where a Gaussian mechanism leaks least; (1) at a low FPR
approaches the true ε.

**The estimator.** Draw ``trials`` query values F(Data) per secret from the
auditor's model, release each through the mechanism and score every release
with s(y) = ln p1(y)/p0(y) — the exact log-likelihood ratio where the output law
is known (Neyman–Pearson: its upper sets are the most powerful tests), else the
log-odds of a classifier trained on a separate split. The releases of each
secret are split into a *selection* part and an *evaluation* part:

1. on the selection part, for every candidate threshold t of the test
   "guess θ1 when s >= t" and of the mirrored "guess θ0 when s <= t", compute the
   bound (2) from the selection counts themselves (at the stricter level
   α / 10, which favours thresholds that many releases support over lucky ones
   deep in a tail), and keep the ``tests`` best candidates;
2. on the evaluation part count the false positives k_F of n and true positives
   k_T of n of each kept test and bound the rates one-sidedly by Clopper–Pearson
   at level α = (1 − confidence) / (2 · tests) (Bonferroni over the kept tests and
   over the two bounds of each):

       FPR_hi = Beta⁻¹(1 − α; k_F + 1, n − k_F),   TPR_lo = Beta⁻¹(α; k_T, n − k_T + 1),

       ε_lower = max(0, max over kept tests of ln((TPR_lo − δ) / FPR_hi)),      (2)

   δ the mechanism's claimed δ.

**Why it holds with probability >= confidence.** Given the selection (and
training) data the kept tests are fixed and the evaluation counts are binomial,
so each of the 2 · tests events {TPR_lo > TPR}, {FPR_hi < FPR} has probability
<= α. Outside their union every kept test has (TPR_lo − δ)/FPR_hi <= (TPR − δ)/FPR
<= e^{ε*}, ε* the least ε for which the mechanism is (ε, δ)-private for the pair
under the auditor's model — so Pr(ε_lower > ε*) <= 1 − confidence, and
``refuted`` (ε_lower above the claimed ε) happens at most at that rate for an
honest claim. Choosing thresholds on the evaluation data itself would void this.

**Smallest useful audit.** The best possible evaluation outcome is k_F = 0 and
k_T = n, where FPR_hi = 1 − α^{1/n} and TPR_lo = α^{1/n}; (2) can exceed ε only if
α^{1/n} > (e^ε + δ)/(1 + e^ε), i.e. n > ln α / ln((e^ε + δ)/(1 + e^ε))
(:func:`min_evaluation_size`). Fewer trials can never refute the claim and are
refused.

**Scorers** (:attr:`AuditReport.scorer`):

* ``"exact-gaussian"``: Gaussian model, Gaussian noise (or none): the output is
  N(μ_θ, Σ_θ + Σ_Z) and s is the difference of the two Gaussian log densities;
* ``"exact-gaussian-laplace"``: 1-D Gaussian model with Laplace noise of scale b:
  p(y) = e^{σ²/(2b²)}/(2b) · [e^{−z/b} Φ(z/σ − σ/b) + e^{z/b} Φ(−z/σ − σ/b)], z = y − μ;
* ``"exact-atoms"``: empirical model, no noise: the output is a resampled row,
  p_θ(y) = (copies of y among θ's rows)/N_θ;
* ``"exact-mixture"``: empirical model with Gaussian noise of full rank or Laplace
  noise along an invertible basis: p_θ(y) = (1/N_θ) Σ_i p_Z(y − x_i);
* ``"exact-finite"``: local mechanisms: A#(λ)[y] (tupling: Σ_i A#(λ)[y_i]/ν[y_i]);
* ``"classifier"``: otherwise, logistic regression on quadratic features
  (scikit-learn) trained on a third split of the releases.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ._validation import RngLike, as_rng, check_int, check_labels_present, check_real
from .errors import AssumptionError, InvalidParameterError, InvalidTypeError, UnknownLabelError
from .guarantees import Framework, Guarantee
from .models import EmpiricalModel, GaussianModel
from .noise import NoiseLaw

#: Share of each secret's releases used to choose thresholds (exact scorers).
SELECTION_FRACTION = 0.2
#: Shares (training, selection) of each secret's releases when a classifier scores them.
CLASSIFIER_FRACTIONS = (0.25, 0.15)
#: The selection part is bounded at level α / SELECTION_STRICTNESS: a stricter level than the
#: evaluation's favours thresholds that many selection releases support (less winner's curse).
SELECTION_STRICTNESS = 10.0
#: Fewest training releases per secret for the classifier.
MIN_TRAIN = 10
#: Largest number of candidate thresholds tried on the selection part (per tail).
MAX_CANDIDATES = 2048
#: Significant digits kept of every score (see :func:`_round_scores`).
SCORE_DIGITS = 10
#: Largest (outputs × rows × dimension) the exact mixture scorer evaluates; above it a classifier is used.
MIXTURE_BUDGET = 4e9

Scorer = Callable[[Any], NDArray[np.float64]]


# --------------------------------------------------------------------------- bounds
def _check_confidence(confidence: Any, name: str = "confidence") -> float:
    c = check_real(confidence, name)
    if not 0.0 < c < 1.0:
        raise InvalidParameterError(f"must be in (0, 1), got {c}", argument=name)
    return c


def _counts(successes: ArrayLike, trials: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    k = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    if np.any(~np.isfinite(k)) or np.any(~np.isfinite(n)):
        raise InvalidParameterError("successes, trials: must be finite")
    if np.any(n < 1):
        raise InvalidParameterError(f"must be >= 1, got {n.min()}", argument="trials")
    if np.any(k < 0) or np.any(k > n):
        raise InvalidParameterError("successes: must be in [0, trials]")
    return k, n


def clopper_pearson_lower(successes: ArrayLike, trials: ArrayLike, confidence: float) -> Any:
    """One-sided Clopper–Pearson lower bound p_lo with Pr(p < p_lo) <= 1 − ``confidence``.

    p_lo = Beta⁻¹(1 − confidence; k, n − k + 1), and 0 for k = 0 (Clopper & Pearson
    1934). Vectorised; non-integer k (projected counts) are allowed.
    """
    from scipy import stats

    c = _check_confidence(confidence)
    k, n = _counts(successes, trials)
    with np.errstate(invalid="ignore"):
        out = np.where(k > 0, stats.beta.ppf(1.0 - c, np.where(k > 0, k, 1.0), n - k + 1.0), 0.0)
    return float(out) if out.ndim == 0 else out


def clopper_pearson_upper(successes: ArrayLike, trials: ArrayLike, confidence: float) -> Any:
    """One-sided Clopper–Pearson upper bound p_hi with Pr(p > p_hi) <= 1 − ``confidence``.

    p_hi = Beta⁻¹(confidence; k + 1, n − k), and 1 for k = n. Vectorised.
    """
    from scipy import stats

    c = _check_confidence(confidence)
    k, n = _counts(successes, trials)
    with np.errstate(invalid="ignore"):
        out = np.where(k < n, stats.beta.ppf(c, k + 1.0, np.where(k < n, n - k, 1.0)), 1.0)
    return float(out) if out.ndim == 0 else out


def epsilon_from_rates(tpr_lower: ArrayLike, fpr_upper: ArrayLike, delta: float) -> Any:
    """(1) on bounds: max(0, ln((TPR_lo − δ)/FPR_hi)); 0 when TPR_lo <= δ, ``inf`` when FPR_hi = 0."""
    t = np.asarray(tpr_lower, dtype=float)
    f = np.asarray(fpr_upper, dtype=float)
    d = float(delta)
    with np.errstate(divide="ignore", invalid="ignore"):
        val = np.where(t > d, np.log(np.maximum(t - d, 1e-300)) - np.log(f), 0.0)
    out = np.maximum(np.nan_to_num(val, nan=0.0, posinf=np.inf), 0.0)
    return float(out) if out.ndim == 0 else out


def epsilon_from_counts(
    false_positives: int, negatives: int, true_positives: int, positives: int, delta: float, confidence: float
) -> float:
    """ε lower bound (2) of one fixed test from its counts, each CP bound at ``confidence``.

    For one test evaluated alone at overall confidence c use ``confidence = 1 − (1 − c)/2``.
    """
    fp = check_int(false_positives, "false_positives", minimum=0)
    nn = check_int(negatives, "negatives", minimum=1)
    tp = check_int(true_positives, "true_positives", minimum=0)
    npos = check_int(positives, "positives", minimum=1)
    hi = clopper_pearson_upper(fp, nn, confidence)
    lo = clopper_pearson_lower(tp, npos, confidence)
    return float(epsilon_from_rates(lo, hi, delta))


def min_evaluation_size(epsilon: float, delta: float, confidence: float, *, tests: int = 1) -> int:
    """Fewest evaluation releases per secret for which (2) can exceed ``epsilon`` at all.

    The best outcome (no false positive, every release of the other secret caught)
    gives TPR_lo = α^{1/n}, FPR_hi = 1 − α^{1/n} with α = (1 − confidence)/(2·tests),
    and ln((TPR_lo − δ)/FPR_hi) > ε ⟺ α^{1/n} > a* = (e^ε + δ)/(1 + e^ε), so
    n_min = ⌊ln α / ln a*⌋ + 1. ``epsilon = inf`` asks for any positive bound (a* at ε = 0).
    """
    c = _check_confidence(confidence)
    t = check_int(tests, "tests", minimum=1)
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"expected a real number, got {epsilon!r}", argument="epsilon") from None
    if math.isnan(eps) or eps < 0:
        raise InvalidParameterError(f"must be >= 0 (or inf), got {eps}", argument="epsilon")
    if math.isinf(eps):
        eps = 0.0
    d = check_real(delta, "delta")
    if not 0.0 <= d < 1.0:
        raise InvalidParameterError(f"must be in [0, 1), got {d}", argument="delta")
    alpha = (1.0 - c) / (2 * t)
    # a* = (e^ε + δ)/(1 + e^ε) written as 1 − (1 − δ)/(1 + e^ε) (stable for large ε)
    log_astar = math.log1p(-(1.0 - d) / (1.0 + math.exp(min(eps, 700.0))))
    n = math.floor(math.log(alpha) / log_astar) + 1
    # guard the floor against rounding: make sure the bound at n exceeds ε and at n − 1 does not
    while n > 1 and _best_case(n - 1, alpha, d) > eps:
        n -= 1
    while _best_case(n, alpha, d) <= eps:
        n += 1
    return int(n)


def _best_case(n: int, alpha: float, delta: float) -> float:
    a = alpha ** (1.0 / n)
    return float(epsilon_from_rates(a, -math.expm1(math.log(alpha) / n), delta))


def _split(trials: int, classifier: bool) -> tuple[int, int, int]:
    """(training, selection, evaluation) releases per secret."""
    if classifier:
        ft, fs = CLASSIFIER_FRACTIONS
        n_train = max(MIN_TRAIN, int(round(ft * trials)))
        n_sel = max(1, int(round(fs * trials)))
    else:
        n_train, n_sel = 0, max(1, int(round(SELECTION_FRACTION * trials)))
    return n_train, n_sel, trials - n_train - n_sel


def minimum_trials(epsilon: float, delta: float, confidence: float, *, tests: int = 1, classifier: bool = False) -> int:
    """Fewest ``trials`` per secret whose evaluation part reaches :func:`min_evaluation_size`."""
    need = min_evaluation_size(epsilon, delta, confidence, tests=tests)
    frac = 1.0 - (sum(CLASSIFIER_FRACTIONS) if classifier else SELECTION_FRACTION)
    t = max(need + 1, math.floor(need / frac) - 2)
    while _split(t, classifier)[2] < need:
        t += 1
    while t > 2 and _split(t - 1, classifier)[2] >= need and _split(t - 1, classifier)[1] >= 1:
        t -= 1
    return int(t)


# --------------------------------------------------------------------------- report
@dataclass(frozen=True)
class AuditTest:
    """One kept test, its evaluation counts and its bound (2).

    The test guesses ``guess`` when the score s = ln p(y | pair[1]) / p(y | pair[0])
    is ``>= threshold`` (``tail == ">="``, guess = pair[1]) or ``<= threshold``
    (``tail == "<="``, guess = pair[0]). False positives are counted on the other
    secret's evaluation releases, true positives on ``guess``'s.
    """

    guess: Hashable
    tail: str
    threshold: float
    false_positives: int
    negatives: int
    true_positives: int
    positives: int
    fpr_upper: float
    tpr_lower: float
    epsilon: float
    selection_epsilon: float

    @property
    def fpr(self) -> float:
        """Observed false-positive rate on the evaluation part."""
        return self.false_positives / self.negatives

    @property
    def tpr(self) -> float:
        """Observed true-positive rate on the evaluation part."""
        return self.true_positives / self.positives

    def to_dict(self) -> dict[str, Any]:
        return {
            "guess": _jsonable(self.guess),
            "tail": self.tail,
            "threshold": float(self.threshold),
            "false_positives": self.false_positives,
            "negatives": self.negatives,
            "true_positives": self.true_positives,
            "positives": self.positives,
            "fpr": self.fpr,
            "tpr": self.tpr,
            "fpr_upper": self.fpr_upper,
            "tpr_lower": self.tpr_lower,
            "epsilon": self.epsilon,
            "selection_epsilon": self.selection_epsilon,
        }


@dataclass(frozen=True)
class AuditReport:
    """Outcome of :func:`audit`.

    Attributes
    ----------
    epsilon_lower:
        (2): a lower bound on the least ε for which the mechanism is (ε, δ)-private
        for ``pair`` at the claimed δ, under the auditor's model, holding with
        probability >= ``confidence``.
    claimed:
        The mechanism's :class:`~distpriv.Guarantee` (or the ``claim`` passed in).
    pair, confidence, delta:
        The audited secrets, the confidence level and the δ used in (2) (the claim's).
    scorer, scorer_note:
        Which attacker scored the releases (see the module docstring) and why.
    trials, n_train, n_selection, n_evaluation:
        Releases per secret and their split.
    tests:
        The kept tests with evaluation counts and bounds.
    roc, roc_mirrored:
        (FPR, TPR) arrays on the evaluation part for "guess pair[1] when s >= t"
        and "guess pair[0] when s <= t" over a grid of thresholds.
    exact_epsilon, exact_note:
        The exact ε at δ of the output pair under the auditor's model where it is
        computable (local mechanisms: :func:`distpriv.local.distp_epsilon`; Gaussian
        outputs with equal covariances: Balle & Wang's profile; resampled rows without
        noise: the exact hockey-stick divergence), else ``None``; the note says which,
        or why not.
    min_trials:
        The fewest trials per secret that could refute the claim at this confidence.
    """

    epsilon_lower: float
    claimed: Guarantee
    pair: tuple[Hashable, Hashable]
    confidence: float
    delta: float
    scorer: str
    scorer_note: str
    trials: int
    n_train: int
    n_selection: int
    n_evaluation: int
    tests: tuple[AuditTest, ...]
    roc: tuple[NDArray[np.float64], NDArray[np.float64]] = field(repr=False)
    roc_mirrored: tuple[NDArray[np.float64], NDArray[np.float64]] = field(repr=False)
    exact_epsilon: float | None = None
    exact_note: str = ""
    min_trials: int = 0

    @property
    def refuted(self) -> bool:
        """True iff the bound exceeds the claimed ε (a false refutation has probability <= 1 − confidence)."""
        return bool(self.epsilon_lower > self.claimed.epsilon)

    @property
    def best(self) -> AuditTest:
        """The kept test with the largest bound."""
        return max(self.tests, key=lambda t: (t.epsilon, t.selection_epsilon))

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly view (ROC arrays as lists)."""
        return {
            "epsilon_lower": self.epsilon_lower,
            "claimed": self.claimed.to_dict(),
            "refuted": self.refuted,
            "pair": [_jsonable(self.pair[0]), _jsonable(self.pair[1])],
            "confidence": self.confidence,
            "delta": self.delta,
            "scorer": self.scorer,
            "scorer_note": self.scorer_note,
            "trials": self.trials,
            "split": {"train": self.n_train, "selection": self.n_selection, "evaluation": self.n_evaluation},
            "tests": [t.to_dict() for t in self.tests],
            "exact_epsilon": self.exact_epsilon,
            "exact_note": self.exact_note,
            "min_trials": self.min_trials,
            "roc": {"fpr": self.roc[0].tolist(), "tpr": self.roc[1].tolist()},
            "roc_mirrored": {"fpr": self.roc_mirrored[0].tolist(), "tpr": self.roc_mirrored[1].tolist()},
        }

    def plot(self, ax: Any = None) -> Any:
        """See :func:`plot_audit`."""
        return plot_audit(self, ax=ax)


def _jsonable(x: Any) -> Any:
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    try:
        return float(x)
    except (TypeError, ValueError):
        return str(x)


# --------------------------------------------------------------------------- scorers
def _psd_whitener(cov: NDArray[np.float64], tol: float) -> tuple[NDArray[np.float64], float] | None:
    """(W, ½ log det Σ) with W Wᵀ = Σ⁻¹ for a positive-definite Σ, else ``None``."""
    w, v = np.linalg.eigh(cov)
    if w.size and w.min() <= tol:
        return None
    return v / np.sqrt(w), 0.5 * float(np.log(w).sum())


def _gaussian_scorer(
    mu0: NDArray[np.float64], s0: NDArray[np.float64], mu1: NDArray[np.float64], s1: NDArray[np.float64]
) -> Scorer | None:
    """s(y) = ln N(y; μ1, S1) − ln N(y; μ0, S0), also when S0 + S1 is singular.

    On the common support R = range(S0 + S1) both covariances must be positive
    definite (else ``None``: the laws live on different subspaces). A mean
    difference outside R separates the outputs perfectly: s = ±inf by the side of
    the mid-point they fall on.
    """
    w, u = np.linalg.eigh(s0 + s1)
    scale = max(float(w.max(initial=0.0)), 1e-300)
    tol = 1e-10 * scale
    keep = w > tol
    r, nul = u[:, keep], u[:, ~keep]
    d = mu1 - mu0
    dn = nul.T @ d
    sep = float(np.linalg.norm(dn)) > 1e-9 * (float(np.linalg.norm(d)) + math.sqrt(scale))
    parts = []
    for s in (s0, s1):
        wh = _psd_whitener(r.T @ s @ r, tol) if r.shape[1] else (np.zeros((0, 0)), 0.0)
        if wh is None:
            return None
        parts.append(wh)
    (w0, h0), (w1, h1) = parts
    mid = 0.5 * (mu0 + mu1)

    def score(y: NDArray[np.float64]) -> NDArray[np.float64]:
        z0 = ((y - mu0) @ r) @ w0
        z1 = ((y - mu1) @ r) @ w1
        out = 0.5 * (np.einsum("ij,ij->i", z0, z0) - np.einsum("ij,ij->i", z1, z1)) + (h0 - h1)
        if sep:
            side = ((y - mid) @ nul) @ dn
            out = np.where(side > 0, np.inf, -np.inf)
        return out

    return score


def _log_gauss_laplace(z: NDArray[np.float64], sigma: float, b: float) -> NDArray[np.float64]:
    """ln of the density of N(0, σ²) ⊛ Lap(b) at z (closed form; pure Laplace when σ = 0)."""
    if sigma <= 0:
        return -math.log(2 * b) - np.abs(z) / b
    r = sigma / b
    return (-math.log(2 * b) + 0.5 * r * r
            + np.logaddexp(-z / b + special.log_ndtr(z / sigma - r), z / b + special.log_ndtr(-z / sigma - r)))


def _gauss_laplace_scorer(m0: float, v0: float, m1: float, v1: float, b: float) -> Scorer:
    s0, s1 = math.sqrt(max(v0, 0.0)), math.sqrt(max(v1, 0.0))

    def score(y: NDArray[np.float64]) -> NDArray[np.float64]:
        x = y[:, 0]
        return _log_gauss_laplace(x - m1, s1, b) - _log_gauss_laplace(x - m0, s0, b)

    return score


def _atoms_scorer(
    rows0: NDArray[np.float64], rows1: NDArray[np.float64]
) -> tuple[Scorer, Callable[[], tuple[NDArray[np.float64], NDArray[np.float64]]]]:
    """Exact LR of resampled rows: copies of y among θ's rows over N_θ (±inf where one law has no copy)."""
    def score(y: NDArray[np.float64]) -> NDArray[np.float64]:
        allrows = np.concatenate([rows0, rows1, y])
        _, inv = np.unique(allrows, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        n0, n1 = len(rows0), len(rows1)
        size = int(inv.max()) + 1
        c0 = np.bincount(inv[:n0], minlength=size) / n0
        c1 = np.bincount(inv[n0:n0 + n1], minlength=size) / n1
        q = inv[n0 + n1:]
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.log(c1[q]) - np.log(c0[q])
        return np.nan_to_num(s, nan=0.0, posinf=np.inf, neginf=-np.inf)

    def laws() -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        _, inv = np.unique(np.concatenate([rows0, rows1]), axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        size = int(inv.max()) + 1
        return (np.bincount(inv[:len(rows0)], minlength=size) / len(rows0),
                np.bincount(inv[len(rows0):], minlength=size) / len(rows1))

    return score, laws


def _logsumexp_rows(u: NDArray[np.float64], r: NDArray[np.float64], metric: str) -> NDArray[np.float64]:
    """ln Σ_i exp(−½|u − r_i|²) (``"l2"``) or ln Σ_i exp(−|u − r_i|_1) (``"l1"``) per row of u, in chunks."""
    out = np.empty(u.shape[0])
    n, m = r.shape
    step = max(1, int(2e6 // max(n * (m if metric == "l1" else 1), 1)))
    half_rr = 0.5 * np.einsum("ij,ij->i", r, r)
    for a in range(0, u.shape[0], step):
        blk = u[a:a + step]
        if metric == "l2":
            d = blk @ r.T
            d -= half_rr[None, :]
            d -= 0.5 * np.einsum("ij,ij->i", blk, blk)[:, None]  # d = −½|u − r_i|²
            np.minimum(d, 0.0, out=d)
        else:
            d = -np.abs(blk[:, None, :] - r[None, :, :]).sum(axis=2)
        top = d.max(axis=1)
        d -= top[:, None]
        np.exp(d, out=d)
        out[a:a + step] = top + np.log(d.sum(axis=1))
    return out


def _mixture_scorer(rows0: NDArray[np.float64], rows1: NDArray[np.float64], transform: NDArray[np.float64],
                    metric: str) -> Scorer:
    """Exact LR of a row resampled from an empirical model plus noise with density ∝ exp(−dist(T(y − x)))."""
    centre = 0.5 * (rows0.mean(axis=0) + rows1.mean(axis=0))
    r0 = (rows0 - centre) @ transform
    r1 = (rows1 - centre) @ transform

    def score(y: NDArray[np.float64]) -> NDArray[np.float64]:
        u = (y - centre) @ transform
        return (_logsumexp_rows(u, r1, metric) - math.log(len(r1))) - (_logsumexp_rows(u, r0, metric) - math.log(len(r0)))

    return score


def _classifier_scorer(train0: NDArray[np.float64], train1: NDArray[np.float64], rng: np.random.Generator) -> Scorer:
    """Logistic regression on standardised quadratic features (all products up to m = 30, else squares only)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, PolynomialFeatures, StandardScaler

    x = np.concatenate([train0, train1]).reshape(len(train0) + len(train1), -1)
    yl = np.concatenate([np.zeros(len(train0)), np.ones(len(train1))])
    m = x.shape[1]
    if m <= 30:
        feats: Any = PolynomialFeatures(degree=2, include_bias=False)
    else:
        feats = FunctionTransformer(lambda a: np.concatenate([a, a * a], axis=1))
    clf = make_pipeline(StandardScaler(), feats, StandardScaler(),
                        LogisticRegression(C=1.0, max_iter=2000, random_state=int(rng.integers(2**31 - 1))))
    clf.fit(x, yl)

    def score(y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(clf.decision_function(np.asarray(y, dtype=float).reshape(len(y), -1)), dtype=float)

    return score


# --------------------------------------------------------------------------- central setting
@dataclass
class _Setting:
    """What the audit samples and how it scores (central or local)."""

    draw: Callable[[int, int, np.random.Generator], Any]  # (secret index, size, rng) -> releases
    scorer: Scorer | None
    scorer_name: str
    scorer_note: str
    exact_epsilon: Callable[[float], float | None]
    exact_note: str
    mixture_cost: float = 0.0  # operations per scored release of the exact mixture scorer (0: not a mixture)


def _model_rows(model: Any, label: Hashable) -> NDArray[np.float64]:
    rows = model.samples(label)
    return rows.reshape(len(rows), -1)


def _central_setting(mech: Any, model: Any, pair: tuple[Hashable, Hashable]) -> _Setting:
    a, b = pair
    if isinstance(model, EmpiricalModel):
        rows = (_model_rows(model, a), _model_rows(model, b))

        def sample(i: int, n: int, g: np.random.Generator) -> NDArray[np.float64]:
            r = rows[i]
            return r[g.integers(0, len(r), size=n)]
    elif callable(getattr(model, "sample", None)):
        def sample(i: int, n: int, g: np.random.Generator) -> NDArray[np.float64]:
            try:
                x = model.sample(pair[i], n, g)
            except KeyError as exc:
                raise UnknownLabelError(f"pair: label {pair[i]!r} is not in the model") from exc
            x = np.asarray(x, dtype=float)
            return x.reshape(n, -1)
    else:
        raise InvalidTypeError(
            "model: expected a GaussianModel, an EmpiricalModel or an object with sample(label, size, rng), "
            f"got {type(model).__name__}"
        )

    def draw(i: int, n: int, g: np.random.Generator) -> NDArray[np.float64]:
        y = np.asarray(mech.release_batch(sample(i, n, g), rng=g), dtype=float)
        return y.reshape(n, -1)

    law = _law(mech)
    scorer: Scorer | None = None
    name, note = "classifier", "logistic regression on quadratic features trained on a separate split"
    exact: Callable[[float], float | None] = lambda d: None  # noqa: E731
    exact_note = "no exact ε for this model and noise law"
    dim = getattr(model, "dim", None)
    if law is not None and law.gaussian_family and isinstance(model, GaussianModel):
        cz = law.covariance_matrix
        mu0, mu1 = model.mean(a), model.mean(b)
        s0, s1 = model.covariance(a) + cz, model.covariance(b) + cz
        scorer = _gaussian_scorer(mu0, s0, mu1, s1)
        if scorer is not None:
            name, note = "exact-gaussian", "exact log-likelihood ratio of N(μ_θ, Σ_θ + Σ_Z)"
            if np.allclose(s0, s1, rtol=1e-12, atol=1e-14 * max(1.0, float(np.abs(s0).max(initial=0.0)))):
                dist = _mahalanobis(mu1 - mu0, s0)
                exact = lambda d: _gaussian_epsilon(dist, d)  # noqa: E731
                exact_note = f"Gaussian shift of Mahalanobis length {dist:.6g} (Balle & Wang 2018, Thm 8)"
            else:
                exact_note = "output covariances differ across the pair: exact ε not computed here"
        else:
            note = "output Gaussians live on different subspaces; " + note
    elif law is not None and law.pure and isinstance(model, GaussianModel) and model.dim == 1:
        basis = np.asarray(law.basis, dtype=float)
        scales = np.asarray(law.scales, dtype=float)
        if basis.shape == (1, 1) and scales.size == 1:
            bscale = float(scales[0] * abs(basis[0, 0]))
            scorer = _gauss_laplace_scorer(float(model.mean(a)[0]), float(model.covariance(a)[0, 0]),
                                           float(model.mean(b)[0]), float(model.covariance(b)[0, 0]), bscale)
            name, note = "exact-gaussian-laplace", "exact log-likelihood ratio of N(μ_θ, σ_θ²) ⊛ Lap(b) (1-D closed form)"
    elif isinstance(model, EmpiricalModel) and law is not None:
        r0, r1 = rows
        noiseless = law.gaussian_family and not np.any(law.covariance_matrix)
        if noiseless:
            scorer, laws = _atoms_scorer(r0, r1)
            name, note = "exact-atoms", "exact likelihood ratio of resampled rows (no noise)"

            def exact_atoms(d: float) -> float:
                from . import divergences as dv

                p, q = laws()
                return float(dv.symmetric_approx_max_divergence(p, q, d))

            exact, exact_note = exact_atoms, "exact hockey-stick divergence of the two row distributions"
        else:
            transform, metric = law.density_transform()
            cost = float(len(r0) + len(r1)) * model.dim
            if transform is not None:
                scorer = _mixture_scorer(r0, r1, transform, metric)
                name = "exact-mixture"
                note = (f"exact log-likelihood ratio of the {len(r0)}- and {len(r1)}-row "
                        f"{'Gaussian' if metric == 'l2' else 'Laplace'} mixtures")
            else:
                note = "noise law is degenerate (singular covariance or non-invertible Laplace basis); " + note
    if dim is not None and getattr(mech, "dim", dim) != dim:
        raise InvalidTypeError(f"model: query dimension {dim} does not match the mechanism's dimension {mech.dim}")
    setting = _Setting(draw, scorer, name, note, exact, exact_note)
    if name == "exact-mixture":
        setting.mixture_cost = cost
    return setting


def _noise_transform(mech: Any, m: int) -> tuple[NDArray[np.float64] | None, str]:
    """(T, metric) of the mechanism's noise density (:meth:`distpriv.noise.NoiseLaw.density_transform`)."""
    law = NoiseLaw.of(mech)
    if law.dim != m:
        raise InvalidTypeError(f"mechanism: noise of dimension {law.dim}, expected {m}")
    return law.density_transform()


def _law(mech: Any) -> NoiseLaw | None:
    """The mechanism's :class:`~distpriv.noise.NoiseLaw`; ``None`` without one, and for a sum with Theorem 5.7's
    extra Laplace noise (no closed-form likelihood ratio: a classifier scores)."""
    law = getattr(mech, "noise", None)
    return law if isinstance(law, NoiseLaw) and law.extra_laplace == 0.0 else None


def _mahalanobis(d: NDArray[np.float64], cov: NDArray[np.float64]) -> float:
    w, v = np.linalg.eigh(cov)
    tol = 1e-12 * max(float(w.max(initial=0.0)), 1e-300)
    proj = v.T @ d
    if np.any((w <= tol) & (np.abs(proj) > 1e-9 * max(1.0, float(np.linalg.norm(d))))):
        return math.inf
    good = w > tol
    return float(math.sqrt(float(np.sum(proj[good] ** 2 / w[good]))))


def _gaussian_epsilon(dist: float, delta: float) -> float:
    from .calibration import gaussian_epsilon

    if dist == 0:
        return 0.0
    if math.isinf(dist) or delta <= 0:
        return math.inf
    return float(gaussian_epsilon(dist, delta))


# --------------------------------------------------------------------------- local setting
def _is_local(mech: Any) -> bool:
    """A local mechanism (:class:`distpriv.local.Mechanism` or :class:`~distpriv.local.Tupling`)? An instance of
    either exists only once its module is imported, so the modules are looked up, not imported: importing
    :mod:`distpriv.local` (scipy.stats) cost every ``distpriv audit`` of a release ~0.75 s CPU (issue 26)."""
    import sys

    local = __name__.rpartition(".")[0] + ".local"
    kinds = tuple(c for c in (getattr(sys.modules.get(f"{local}.mechanism"), "LocalMechanism", None),
                              getattr(sys.modules.get(f"{local}.tupling"), "Tupling", None)) if isinstance(c, type))
    return bool(kinds) and isinstance(mech, kinds)


def _local_setting(mech: Any, model: Any, pair: tuple[Hashable, Hashable]) -> _Setting:
    from .local import Tupling, distp_epsilon
    from .local.mechanism import check_distribution

    if not isinstance(model, Mapping):
        raise InvalidTypeError(
            "model: for a local mechanism expected a mapping label -> input distribution λ over X "
            f"(length {mech.n_inputs}), got {type(model).__name__}"
        )
    check_labels_present(pair, list(model), "pair")
    lams = [check_distribution(model[lab], mech.n_inputs, f"model[{lab!r}]") for lab in pair]
    a0, a1 = mech.lift(lams[0]), mech.lift(lams[1])
    chunk = max(1, int(4e6 // max(mech.n_outputs, 1)))

    def draw(i: int, n: int, g: np.random.Generator) -> NDArray[np.int64]:
        xs = g.choice(mech.n_inputs, size=n, p=lams[i])
        parts = [np.asarray(mech.sample(xs[s:s + chunk], g)) for s in range(0, n, chunk)]
        return np.concatenate(parts)

    if isinstance(mech, Tupling):
        nu = np.asarray(mech.dummy, dtype=float)
        if np.all(nu > 0):
            w0, w1 = a0 / nu, a1 / nu

            def score(t: NDArray[np.int64]) -> NDArray[np.float64]:
                with np.errstate(divide="ignore", invalid="ignore"):
                    s = np.log(w1[t].sum(axis=1)) - np.log(w0[t].sum(axis=1))
                return np.nan_to_num(s, nan=0.0, posinf=np.inf, neginf=-np.inf)
        else:
            def score(t: NDArray[np.int64]) -> NDArray[np.float64]:
                with np.errstate(divide="ignore", invalid="ignore"):
                    s = np.log(mech.tuple_probability(lams[1], t)) - np.log(mech.tuple_probability(lams[0], t))
                return np.nan_to_num(s, nan=0.0, posinf=np.inf, neginf=-np.inf)
        note = "exact log-likelihood ratio of the tuple: ln Σ_i A#(λ1)[y_i]/ν[y_i] − ln Σ_i A#(λ0)[y_i]/ν[y_i]"
    else:
        with np.errstate(divide="ignore"):
            la0, la1 = np.log(a0), np.log(a1)

        def score(t: NDArray[np.int64]) -> NDArray[np.float64]:
            with np.errstate(invalid="ignore"):
                s = la1[t] - la0[t]
            return np.nan_to_num(s, nan=0.0, posinf=np.inf, neginf=-np.inf)
        note = "exact log-likelihood ratio ln A#(λ1)[y] − ln A#(λ0)[y]"

    def exact(d: float) -> float:
        return float(distp_epsilon(mech, lams[0], lams[1], d))

    return _Setting(draw, score, "exact-finite", note, exact,
                    "local.distp_epsilon: exact (ε, δ)-DistP of the pair (tupling: certified upper end)")


# --------------------------------------------------------------------------- selection and evaluation
def _round_scores(s: NDArray[np.float64], digits: int = SCORE_DIGITS) -> NDArray[np.float64]:
    """Scores rounded to ``digits`` significant digits (±inf and 0 kept).

    Exact likelihood ratios are often constant on whole regions (e.g. ±Δ/b in the
    Laplace tails); computed in floating point they scatter by a few ulps there, and a
    threshold between those ulps would select releases by their last bits — which
    float arithmetic does not distribute as the exact law does (Mironov 2012). Rounding
    restores the ties so the tests are those of the exact ratio.
    """
    s = np.asarray(s, dtype=float)
    out = s.copy()
    fin = np.isfinite(s) & (s != 0)
    if np.any(fin):
        mag = np.floor(np.log10(np.abs(s[fin])))
        scale = 10.0 ** (mag - (digits - 1))
        out[fin] = np.round(s[fin] / scale) * scale
    return out


def _tail_rates(sorted_scores: NDArray[np.float64], t: NDArray[np.float64], tail: str) -> NDArray[np.intp]:
    """Counts of scores >= t (``">="``) or <= t (``"<="``) for sorted scores."""
    n = len(sorted_scores)
    if tail == ">=":
        return n - np.searchsorted(sorted_scores, t, side="left")
    return np.searchsorted(sorted_scores, t, side="right")


def _candidates(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    """Thresholds: every distinct score when few, else quantiles dense in both tails (log-spaced levels)."""
    u = np.unique(scores)
    if len(u) <= MAX_CANDIDATES:
        return u
    n = len(scores)
    lv = np.geomspace(1.0 / n, 0.5, MAX_CANDIDATES // 2)
    levels = np.unique(np.clip(np.concatenate([lv, 1.0 - lv]), 0.0, 1.0))
    return np.unique(_inverted_cdf(scores, levels))


def _inverted_cdf(scores: NDArray[np.float64], levels: NDArray[np.float64]) -> NDArray[np.float64]:
    """``np.quantile(scores, levels, method="inverted_cdf")``, the same floats, from one sort.

    The k-th order statistic with k = ⌈n q⌉ (1-based; k = n q when n q − 1 is an integer), computed as numpy
    does (index n q − 1 in floating point, rounded up unless integral, at least 0). ``np.quantile`` partitions
    around all ~2,000 indices at once, which costs far more than a sort of the scores (issue 25: the audits of
    ``reproduce compare``). With a NaN numpy's own routine is used (every quantile is then NaN).
    """
    if bool(np.isnan(scores).any()):
        return np.asarray(np.quantile(scores, levels, method="inverted_cdf"), dtype=float)
    index = len(scores) * levels - 1
    prev = np.floor(index)
    k = np.where(index - prev == 0, prev, prev + 1).astype(np.intp)
    k[k < 0] = 0
    return np.asarray(np.sort(scores)[k], dtype=float)


def _select(s0: NDArray[np.float64], s1: NDArray[np.float64], delta: float, level: float,
            tests: int) -> list[tuple[str, float, float]]:
    """The ``tests`` best (tail, threshold) by the bound (2) computed on the selection part itself.

    ``level`` is the confidence of each CP bound here. Bounding the selection counts
    at the selection size and a strict level (rather than projecting the selection
    rates to the evaluation size) penalises thresholds deep in a tail that only a
    handful of selection releases support, which would otherwise win by luck.
    """
    a, b = np.sort(s0), np.sort(s1)
    cand = _candidates(np.concatenate([a, b]))
    rows: list[tuple[float, str, float]] = []
    for tail, neg, pos in ((">=", a, b), ("<=", b, a)):
        hi = clopper_pearson_upper(_tail_rates(neg, cand, tail), len(neg), level)
        lo = clopper_pearson_lower(_tail_rates(pos, cand, tail), len(pos), level)
        val = np.atleast_1d(epsilon_from_rates(lo, hi, delta))
        rows.extend((float(v), tail, float(t)) for v, t in zip(val, cand, strict=True))
    rows.sort(key=lambda r: (-r[0], r[1], r[2]))
    return [(tail, t, v) for v, tail, t in rows[:tests]]


def _roc(s0: NDArray[np.float64], s1: NDArray[np.float64], tail: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(FPR, TPR) of the test ``tail`` over the candidate thresholds, from (0, 0) to (1, 1)."""
    a, b = np.sort(s0), np.sort(s1)
    t = _candidates(np.concatenate([a, b]))
    neg, pos = (a, b) if tail == ">=" else (b, a)
    fpr = np.concatenate([[0.0], _tail_rates(neg, t, tail) / len(neg), [1.0]])
    tpr = np.concatenate([[0.0], _tail_rates(pos, t, tail) / len(pos), [1.0]])
    order = np.lexsort((tpr, fpr))
    return fpr[order].astype(float), tpr[order].astype(float)


# --------------------------------------------------------------------------- entry point
#: Releases scored per call of the scorer (progress granularity; the scores do not depend on it).
SCORE_CHUNK = 50_000


def _stage(tick: Callable[[float], None], start: float, width: float) -> Callable[[float], None]:
    """Progress of one stage: fraction f of it is overall ``start + width · f``."""
    return lambda f: tick(start + width * f)


def _score_chunked(scorer: Scorer, releases: Any, tick: Callable[[float], None]) -> NDArray[np.float64]:
    """``scorer(releases)`` in chunks of :data:`SCORE_CHUNK` rows, reporting the fraction scored."""
    n = len(releases)
    if n <= SCORE_CHUNK:
        out = np.asarray(scorer(releases), dtype=float)
        tick(1.0)
        return out
    parts = []
    for a in range(0, n, SCORE_CHUNK):
        parts.append(np.asarray(scorer(releases[a:a + SCORE_CHUNK]), dtype=float))
        tick(min(a + SCORE_CHUNK, n) / n)
    return np.concatenate(parts)


def _resolve_claim(mechanism: Any, claim: Any, local: bool) -> Guarantee:
    if claim is None:
        g = getattr(mechanism, "guarantee", None)
        if not isinstance(g, Guarantee):
            if local:
                raise InvalidParameterError(
                    "claim: a local mechanism carries no guarantee; pass claim=(epsilon, delta) or a Guarantee "
                    "(e.g. local.distp_guarantee(...))"
                )
            raise InvalidTypeError(
                f"mechanism: {type(mechanism).__name__} has no guarantee (expected dp.calibrate(...) or pass claim=)"
            )
        claim = g
    if isinstance(claim, Guarantee):
        g = claim
    else:
        try:
            eps, dl = claim
        except (TypeError, ValueError):
            raise InvalidTypeError(f"claim: expected a Guarantee or an (epsilon, delta) pair, got {claim!r}") from None
        g = Guarantee(epsilon=eps, delta=dl, mechanism=getattr(mechanism, "name", type(mechanism).__name__),
                      framework=Framework.LOCAL if local else Framework.DISTRIBUTION,
                      theorem="claim supplied to dp.audit")
    if g.divergence is not None:
        raise AssumptionError(
            f"mechanism: its guarantee is a {g.divergence} divergence claim; the audit tests (ε, δ) claims only"
        )
    if g.delta >= 1.0:
        raise InvalidParameterError(f"claim: δ = {g.delta} >= 1 claims nothing; the audit needs δ in [0, 1)")
    return g


def _check_pair(pair: Any, model: Any, claimed: Guarantee) -> tuple[Hashable, Hashable]:
    if isinstance(pair, (str, bytes)):
        raise InvalidTypeError(f"pair: expected a 2-tuple of θ labels, got {pair!r}")
    try:
        a, b = pair
    except (TypeError, ValueError):
        raise InvalidTypeError(f"pair: expected a 2-tuple of θ labels, got {pair!r}") from None
    if a == b:
        raise InvalidParameterError(f"pair: the two secrets must differ, got ({a!r}, {b!r})")
    labels = list(model) if isinstance(model, Mapping) else getattr(model, "labels", None)
    if labels is not None:
        check_labels_present((a, b), labels, "pair")
    if claimed.pairs and frozenset((a, b)) not in {frozenset(p) for p in claimed.pairs}:
        raise InvalidParameterError(
            f"pair: ({a!r}, {b!r}) is not a secret pair of the claim; the guarantee covers "
            f"{[tuple(p) for p in claimed.pairs]}"
        )
    return (a, b)


def audit(
    mechanism: Any,
    model: Any,
    pair: Sequence[Hashable],
    *,
    trials: int,
    confidence: float = 0.95,
    rng: RngLike = None,
    claim: Guarantee | tuple[float, float] | None = None,
    tests: int = 1,
    progress: Callable[[float], None] | None = None,
) -> AuditReport:
    """Audit ``mechanism``'s claim on the secret ``pair``: a lower bound on ε at the claimed δ.

    Draws ``trials`` query values per secret from ``model`` — the auditor's view of the
    truth, which may differ from the model the mechanism was calibrated on — releases
    them through the mechanism, scores them with the strongest attacker available and
    returns the bound (2) of the module docstring, valid with probability >= ``confidence``.

    Parameters
    ----------
    mechanism:
        A central mechanism with ``release_batch(xs, rng)`` and a ``guarantee``
        (:func:`distpriv.calibrate`), or a local :class:`distpriv.local.Mechanism` /
        :class:`distpriv.local.Tupling` (then ``claim`` is required).
    model:
        Central: a :class:`~distpriv.GaussianModel` (draws N(μ_θ, Σ_θ)), an
        :class:`~distpriv.EmpiricalModel` (resamples its rows) or any object with
        ``sample(label, size, rng) -> (size, m)``. Local: a mapping label -> input
        distribution λ over X (users' inputs are drawn from λ, then obfuscated).
    pair:
        The two secrets (θ labels of ``model``); both orders are tested.
    trials:
        Releases per secret (split into selection/evaluation, plus a training split
        when a classifier scores). Too few to ever refute the claim raises
        :class:`~distpriv.InvalidParameterError` naming the minimum (:func:`minimum_trials`).
    confidence:
        In (0, 1): Pr(epsilon_lower > true ε) <= 1 − confidence.
    rng:
        Generator or seed for the data draws and the releases (same seed, same report).
    claim:
        Overrides the mechanism's guarantee: a :class:`~distpriv.Guarantee` or (ε, δ).
    tests:
        How many selected tests are evaluated (Bonferroni over 2 · tests bounds).
    progress:
        Called with the fraction of the work done (0 to 1) after each stage (drawing,
        scoring in chunks, evaluating); the CLI's progress bar. No effect on the result.

    Returns
    -------
    AuditReport
        ``epsilon_lower``, ``claimed``, ``refuted``, the kept tests, the evaluation ROC,
        the scorer, and the exact ε where computable.

    Examples
    --------
    >>> import numpy as np, distpriv as dp
    >>> m = dp.GaussianModel(means={0: [0.0], 1: [1.0]}, covariances={0: [[1.0]], 1: [[1.0]]})
    >>> mech = dp.calibrate("eigm", m, [(0, 1)], epsilon=1.0, delta=1e-3)
    >>> r = dp.audit(mech, m, (0, 1), trials=20_000, rng=np.random.default_rng(0))
    >>> r.scorer, r.refuted
    ('exact-gaussian', False)
    """
    c = _check_confidence(confidence)
    k_tests = check_int(tests, "tests", minimum=1)
    n_trials = check_int(trials, "trials", minimum=1)
    local = _is_local(mechanism)
    if not local and not callable(getattr(mechanism, "release_batch", None)):
        raise InvalidTypeError(
            "mechanism: expected a calibrated mechanism with release_batch (dp.calibrate) or a "
            f"local.Mechanism / local.Tupling, got {type(mechanism).__name__}"
        )
    claimed = _resolve_claim(mechanism, claim, local)
    delta = float(claimed.delta)
    ab = _check_pair(pair, model, claimed)
    setting = _local_setting(mechanism, model, ab) if local else _central_setting(mechanism, model, ab)
    g = as_rng(rng)
    level = 1.0 - (1.0 - c) / (2 * k_tests)

    classifier = setting.scorer is None
    if not classifier and 2 * n_trials * setting.mixture_cost > MIXTURE_BUDGET:
        classifier = True
        setting.scorer_note = (f"the exact mixture would cost > {MIXTURE_BUDGET:.0e} operations; "
                               "logistic regression on quadratic features trained on a separate split")
        setting.scorer_name = "classifier"
    need = minimum_trials(claimed.epsilon, delta, c, tests=k_tests, classifier=classifier)
    if n_trials < need:
        target = "exceed the claimed ε" if math.isfinite(claimed.epsilon) else "be positive"
        raise InvalidParameterError(
            f"{n_trials} per secret is too few for the bound to {target} at δ = {delta:g} and "
            f"confidence {c:g}; need trials >= {need} (the evaluation part needs >= "
            f"{min_evaluation_size(claimed.epsilon, delta, c, tests=k_tests)} releases per secret)", argument="trials"
        )
    n_train, n_sel, n_eval = _split(n_trials, classifier)
    tick: Callable[[float], None] = progress if progress is not None else (lambda f: None)
    tick(0.0)
    rel = []
    for i in (0, 1):
        rel.append(setting.draw(i, n_trials, g))
        tick(0.1 * (i + 1))
    if classifier:
        scorer = _classifier_scorer(rel[0][:n_train], rel[1][:n_train], g)
        if setting.scorer_name != "classifier":
            setting.scorer_name = "classifier"
    else:
        assert setting.scorer is not None
        scorer = setting.scorer
    scores = [_round_scores(_score_chunked(scorer, r[n_train:], _stage(tick, 0.2 + 0.35 * i, 0.35)))
              for i, r in enumerate(rel)]
    sel = [s[:n_sel] for s in scores]
    ev = [s[n_sel:] for s in scores]
    chosen = _select(sel[0], sel[1], delta, 1.0 - (1.0 - level) / SELECTION_STRICTNESS, k_tests)

    a_sorted, b_sorted = np.sort(ev[0]), np.sort(ev[1])
    kept: list[AuditTest] = []
    for tail, t, sel_eps in chosen:
        neg, pos = (a_sorted, b_sorted) if tail == ">=" else (b_sorted, a_sorted)
        fp = int(_tail_rates(neg, np.array([t]), tail)[0])
        tp = int(_tail_rates(pos, np.array([t]), tail)[0])
        hi = float(clopper_pearson_upper(fp, n_eval, level))
        lo = float(clopper_pearson_lower(tp, n_eval, level))
        eps = float(epsilon_from_rates(lo, hi, delta))
        kept.append(AuditTest(ab[1] if tail == ">=" else ab[0], tail, t, fp, n_eval, tp, n_eval, hi, lo, eps, sel_eps))
    exact = setting.exact_epsilon(delta)
    tick(1.0)
    return AuditReport(
        epsilon_lower=max(t.epsilon for t in kept),
        claimed=claimed,
        pair=ab,
        confidence=c,
        delta=delta,
        scorer=setting.scorer_name,
        scorer_note=setting.scorer_note,
        trials=n_trials,
        n_train=n_train,
        n_selection=n_sel,
        n_evaluation=n_eval,
        tests=tuple(kept),
        roc=_roc(ev[0], ev[1], ">="),
        roc_mirrored=_roc(ev[0], ev[1], "<="),
        exact_epsilon=None if exact is None else float(exact),
        exact_note=setting.exact_note,
        min_trials=need,
    )


# --------------------------------------------------------------------------- plot
def plot_audit(report: AuditReport, ax: Any = None) -> Any:
    """ROC of the evaluation part on log axes with the claimed privacy region and the bound.

    The claimed (ε, δ) region is TPR <= min(e^ε FPR + δ, 1 − e^{−ε}(1 − δ − FPR))
    (the definition applied to the test's region and to its complement); the dashed
    line TPR = e^{ε_lower} FPR + δ is the audit's bound, the markers the kept tests'
    (FPR_hi, TPR_lo). Returns the matplotlib Figure (matplotlib is imported here).
    """
    from matplotlib.figure import Figure

    if ax is None:
        fig = Figure(figsize=(5.5, 4.5))
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    floor = 0.5 / max(report.n_evaluation, 1)
    x = np.geomspace(floor, 1.0, 400)
    eps, d = report.claimed.epsilon, report.delta
    if math.isfinite(eps):
        bound = np.minimum(math.exp(eps) * x + d, 1.0 - math.exp(-eps) * (1.0 - d - x))
        ax.fill_between(x, floor, np.clip(bound, floor, 1.0), color="tab:green", alpha=0.15,
                        label=f"claimed region (ε = {eps:.3g}, δ = {d:.2g})")
    a, b = _plain(report.pair[0]), _plain(report.pair[1])
    for (fpr, tpr), lab in ((report.roc, f"guess {b} when s ≥ t"), (report.roc_mirrored, f"guess {a} when s ≤ t")):
        ok = (fpr > 0) & (tpr > 0)
        ax.plot(fpr[ok], tpr[ok], lw=1.2, label=f"ROC: {lab}")
    el = report.epsilon_lower
    if math.isfinite(el):
        ax.plot(x, np.clip(math.exp(el) * x + d, floor, 1.0), "k--", lw=1,
                label=f"audit bound ε ≥ {el:.3g} ({report.confidence:.0%})")
    for t in report.tests:
        ax.plot([t.fpr_upper], [max(t.tpr_lower, floor)], "kv", ms=6)
        if t.fpr > 0:
            ax.plot([t.fpr], [t.tpr], "ko", ms=4, mfc="none")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(floor, 1.0)
    ax.set_ylim(floor, 1.05)
    ax.set_xlabel("false-positive rate")
    ax.set_ylabel("true-positive rate")
    ax.set_title(f"audit of {_plain(report.claimed.mechanism)} on ({a}, {b}) ({report.scorer})", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    return fig


def _plain(x: Any) -> str:
    """``str(x)`` shown literally by matplotlib: ``$`` escaped so user labels never start mathtext."""
    return str(x).replace("$", r"\$")

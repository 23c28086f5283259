"""Property inference attacks on central releases (Chen & Ohrimenko Section 6.3).

An attacker wants to tell whether a released query value F(Data) + Z came from
a dataset whose sensitive global property is ``p1`` or ``p2``. Everything here
works on arrays of query values: data access is abstracted by a *sampler*,

    sampler(p, size, rng) -> (size, m) array of query values F(Data), Data ~ θ_p,

so the same code runs on the Adult property model
(``PropertyModel.sample_query``) and on synthetic Gaussian samplers in tests.

Three attackers are provided:

* the paper's **meta-classifier** (Section 6.3.1): a classifier (logistic
  regression on standardised features by default, any scikit-learn classifier
  can be plugged in) trained on query values of 200 *clean* shadow datasets
  sampled from auxiliary data (half p1, half p2) and tested on 200 *protected*
  releases of datasets sampled from test data, 50 repetitions;
* an **adaptive** meta-classifier that is trained on shadow releases passed
  through the same mechanism as the target (it knows the defence);
* a **likelihood-ratio** attacker under the Gaussian model: it decides between
  N(μ1, Σ1 + Σ_Z) and N(μ2, Σ2 + Σ_Z) by the log-likelihood ratio, which is
  Bayes-optimal for equal priors. With equal covariances Σ = Σ1 = Σ2 its exact
  accuracy is Φ(D/2), D the Mahalanobis distance between μ1 and μ2 under
  Σ + Σ_Z (:func:`gaussian_lr_accuracy`).

Accuracy is reported as the mean over repetitions with a 95% interval
(:class:`AttackResult`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from ._validation import (
    RngLike,
    as_rng,
    check_array,
    check_int,
    check_positive,
    check_psd,
    check_real,
)
from .errors import InvalidParameterError, InvalidTypeError

Sampler = Callable[[float, int, np.random.Generator], NDArray[np.float64]]
"""``sampler(p, size, rng) -> (size, m)`` query values of datasets with property value ``p``."""


@runtime_checkable
class _BatchReleaser(Protocol):
    def release_batch(self, xs: ArrayLike, rng: RngLike = None) -> NDArray[np.float64]: ...


Defence = _BatchReleaser | Callable[[NDArray[np.float64], np.random.Generator], NDArray[np.float64]] | None
"""A mechanism with ``release_batch(xs, rng)``, a function ``(xs, rng) -> noisy xs``, or ``None`` (no defence)."""


@dataclass(frozen=True)
class FreshSplits:
    """Re-split the data every repetition (Section 6.3.1: "a different set of
    auxiliary data and testing data each time").

    ``factory(rng)`` returns a fresh ``(shadow_sampler, test_sampler)`` pair,
    e.g. by re-splitting Adult into auxiliary and test records.
    """

    factory: Callable[[np.random.Generator], tuple[Sampler, Sampler]]


Samplers = Sampler | tuple[Sampler, Sampler] | FreshSplits


# --------------------------------------------------------------------------- data
@dataclass(frozen=True)
class AttackData:
    """Shadow (training) and test query values for ``reps`` repetitions.

    Labels are 0 for ``p1`` and 1 for ``p2``. Arrays are stacked over
    repetitions: ``shadow_x`` is (reps, n_shadow, m), ``shadow_y`` is
    (reps, n_shadow); likewise for the test set. Values are the *clean* query
    values; defences are applied by the attacks.
    """

    p1: float
    p2: float
    shadow_x: NDArray[np.float64]
    shadow_y: NDArray[np.int_]
    test_x: NDArray[np.float64]
    test_y: NDArray[np.int_]

    def __post_init__(self) -> None:
        sx, tx = self.shadow_x, self.test_x
        if sx.ndim != 3 or tx.ndim != 3:
            raise InvalidTypeError("shadow_x, test_x: expected (reps, N, m) arrays")
        if sx.shape[0] != tx.shape[0] or sx.shape[2] != tx.shape[2]:
            raise InvalidTypeError(f"shadow_x {sx.shape} and test_x {tx.shape} disagree on reps or m")
        if self.shadow_y.shape != sx.shape[:2] or self.test_y.shape != tx.shape[:2]:
            raise InvalidTypeError("shadow_y, test_y: expected (reps, N) label arrays matching the features")

    @property
    def reps(self) -> int:
        """Number of repetitions."""
        return int(self.shadow_x.shape[0])

    @property
    def dim(self) -> int:
        """Query dimension m."""
        return int(self.shadow_x.shape[2])

    @property
    def n_test(self) -> int:
        """Test datasets per repetition."""
        return int(self.test_x.shape[1])

    @classmethod
    def from_arrays(
        cls,
        p1: float,
        p2: float,
        shadow_x: ArrayLike,
        shadow_y: ArrayLike,
        test_x: ArrayLike,
        test_y: ArrayLike,
    ) -> AttackData:
        """Build from arrays; 2-D inputs ((N, m) features, (N,) labels) are read as one repetition."""
        sx = check_array(shadow_x, "shadow_x", ndim=(2, 3))
        tx = check_array(test_x, "test_x", ndim=(2, 3))
        sy = np.asarray(shadow_y)
        ty = np.asarray(test_y)
        if sx.ndim == 2:
            sx, sy = sx[None], sy[None]
        if tx.ndim == 2:
            tx, ty = tx[None], ty[None]
        for name, y in (("shadow_y", sy), ("test_y", ty)):
            if not np.all(np.isin(y, (0, 1))):
                raise InvalidParameterError("labels must be 0 (p1) or 1 (p2)", argument=name)
        return cls(float(p1), float(p2), sx, sy.astype(np.int_), tx, ty.astype(np.int_))


def _halves(n: int, name: str) -> tuple[int, int]:
    n = check_int(n, name, minimum=2)
    return (n + 1) // 2, n // 2


def _draw(sampler: Sampler, p: float, size: int, rng: np.random.Generator, name: str) -> NDArray[np.float64]:
    out = np.asarray(sampler(p, size, rng), dtype=float)
    if out.ndim == 1:
        out = out[:, None]
    if out.ndim != 2 or out.shape[0] != size:
        raise InvalidTypeError(f"sampler must return a ({size}, m) array for p={p}, got shape {out.shape}", argument=name)
    if not np.all(np.isfinite(out)):
        raise InvalidParameterError(f"sampler returned NaN or infinite query values for p={p}", argument=name)
    return out


def _sample_block(
    shadow: Sampler, test: Sampler, p1: float, p2: float, reps: int, ns: tuple[int, int], nt: tuple[int, int], g: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """All shadow and test values of ``reps`` repetitions, four sampler calls in total."""

    def block(sampler: Sampler, sizes: tuple[int, int], name: str) -> NDArray[np.float64]:
        a = _draw(sampler, p1, reps * sizes[0], g, name).reshape(reps, sizes[0], -1)
        b = _draw(sampler, p2, reps * sizes[1], g, name).reshape(reps, sizes[1], -1)
        if a.shape[2] != b.shape[2]:
            raise InvalidTypeError("query dimension differs between p1 and p2", argument=name)
        return np.concatenate([a, b], axis=1)

    return block(shadow, ns, "shadow sampler"), block(test, nt, "test sampler")


def sample_attack_data(
    samplers: Samplers,
    p1: float,
    p2: float,
    *,
    n_shadow: int = 200,
    n_test: int = 200,
    reps: int = 50,
    rng: RngLike = None,
) -> AttackData:
    """Sample the shadow and test query values of Section 6.3.1.

    Parameters
    ----------
    samplers:
        One sampler used for both roles, a ``(shadow_sampler, test_sampler)``
        pair (auxiliary vs test data, as in the paper), or :class:`FreshSplits`
        to draw a new pair every repetition.
    p1, p2:
        The two property values the attacker distinguishes (labels 0 and 1).
    n_shadow, n_test:
        Datasets per repetition, half with ``p1`` and half with ``p2``
        (paper: 200 and 200).
    reps:
        Repetitions (paper: 50).

    Notes
    -----
    With fixed samplers all repetitions are drawn in one vectorised call per
    (role, p); with :class:`FreshSplits` one block per repetition.
    """
    a, b = check_real(p1, "p1"), check_real(p2, "p2")
    r = check_int(reps, "reps", minimum=1)
    ns, nt = _halves(n_shadow, "n_shadow"), _halves(n_test, "n_test")
    g = as_rng(rng)
    if isinstance(samplers, FreshSplits):
        parts = [_sample_block(*samplers.factory(g), a, b, 1, ns, nt, g) for _ in range(r)]
        sx = np.concatenate([s for s, _ in parts])
        tx = np.concatenate([t for _, t in parts])
    else:
        if isinstance(samplers, tuple):
            if len(samplers) != 2:
                raise InvalidTypeError("samplers: expected a sampler, a (shadow, test) pair or FreshSplits")
            shadow, test = samplers
        elif callable(samplers):
            shadow = test = samplers
        else:
            raise InvalidTypeError("samplers: expected a sampler, a (shadow, test) pair or FreshSplits")
        sx, tx = _sample_block(shadow, test, a, b, r, ns, nt, g)
    sy = np.repeat(np.array([0, 1]), ns)[None].repeat(r, axis=0)
    ty = np.repeat(np.array([0, 1]), nt)[None].repeat(r, axis=0)
    return AttackData(a, b, sx, sy, tx, ty)


def gaussian_sampler(
    means: dict[float, ArrayLike], covariances: dict[float, ArrayLike] | ArrayLike
) -> Sampler:
    """A sampler drawing query values from N(μ_p, Σ_p) (synthetic tests, Gaussian-model attacks).

    ``covariances`` is one shared (m × m) matrix or a dict ``p -> Σ_p``.
    """
    mu = {float(k): check_array(v, f"means[{k!r}]", ndim=1) for k, v in means.items()}
    if isinstance(covariances, dict):
        cov = {float(k): check_psd(v, f"covariances[{k!r}]") for k, v in covariances.items()}
    else:
        shared = check_psd(covariances, "covariances")
        cov = dict.fromkeys(mu, shared)
    factors = {}
    for k, s in cov.items():
        w, v = np.linalg.eigh(s)
        factors[k] = v * np.sqrt(np.clip(w, 0.0, None))

    def sample(p: float, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
        key = float(p)
        if key not in mu or key not in factors:
            raise InvalidParameterError(f"p: no Gaussian given for property value {p}; known {sorted(mu)}")
        z = rng.standard_normal((size, mu[key].shape[0]))
        return mu[key] + z @ factors[key].T

    return sample


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class AttackResult:
    """Per-repetition accuracies of one attack and their summary (mean, 95% interval).

    The interval is a Student-t interval over repetitions; with a single
    repetition it is the Wilson score interval of that repetition's test set.
    """

    attack: str
    p1: float
    p2: float
    accuracies: NDArray[np.float64]
    n_test: int
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def reps(self) -> int:
        return int(self.accuracies.size)

    @property
    def accuracy(self) -> float:
        """Mean accuracy over repetitions (the paper's reported number)."""
        return float(self.accuracies.mean())

    @property
    def std(self) -> float:
        """Standard deviation of the per-repetition accuracies (0 for one repetition)."""
        return float(self.accuracies.std(ddof=1)) if self.reps > 1 else 0.0

    @property
    def ci(self) -> tuple[float, float]:
        """95% interval for the mean accuracy."""
        from scipy import stats

        m = self.accuracy
        if self.reps > 1:
            half = float(stats.t.ppf(0.975, self.reps - 1)) * self.std / math.sqrt(self.reps)
            return max(0.0, m - half), min(1.0, m + half)
        z, n = 1.959963984540054, self.n_test
        centre = (m + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(m * (1 - m) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.ci
        return {
            "attack": self.attack,
            "p1": self.p1,
            "p2": self.p2,
            "accuracy": self.accuracy,
            "ci_low": lo,
            "ci_high": hi,
            "std": self.std,
            "reps": self.reps,
            "n_test": self.n_test,
            **{k: v for k, v in self.details.items() if not k.startswith("_")},
        }


# --------------------------------------------------------------------------- defences
def _apply(defence: Defence, x: NDArray[np.float64], g: np.random.Generator) -> NDArray[np.float64]:
    """Release every row of a (reps, N, m) stack through ``defence`` in one vectorised call."""
    if defence is None:
        return x
    flat = x.reshape(-1, x.shape[-1])
    if isinstance(defence, _BatchReleaser):
        out = defence.release_batch(flat, g)
    elif callable(defence):
        out = defence(flat, g)
    else:
        raise InvalidTypeError("defence: expected a mechanism with release_batch(xs, rng), a function (xs, rng) or None")
    out = np.asarray(out, dtype=float)
    if out.shape != flat.shape:
        raise InvalidTypeError(f"defence: release must keep the shape {flat.shape}, got {out.shape}")
    return out.reshape(x.shape)


def _noise_covariance(defence: Defence, m: int) -> NDArray[np.float64]:
    if defence is None:
        return np.zeros((m, m))
    cov = getattr(defence, "noise_covariance", None)
    if cov is None:
        raise InvalidParameterError(
            "noise_covariance: the defence does not expose .noise_covariance; pass noise_covariance= explicitly"
        )
    return check_psd(cov, "noise_covariance", dim=m)


# --------------------------------------------------------------------------- meta-classifier
def _standardise(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-repetition StandardScaler statistics (population std, zeros replaced by 1)."""
    mean = x.mean(axis=1, keepdims=True)
    std = x.std(axis=1, keepdims=True)
    std = np.where(std > 1e-12 * np.maximum(1.0, np.abs(mean)), std, 1.0)
    return mean, std


def _logistic_objective(
    w: NDArray[np.float64], xt: NDArray[np.float64], y: NDArray[np.float64], c: float
) -> NDArray[np.float64]:
    z = (xt @ w[..., None])[..., 0]
    loss = np.logaddexp(0.0, z) - y * z
    return 0.5 * np.sum(w[:, :-1] ** 2, axis=1) + c * loss.sum(axis=1)


def _fit_logistic_batch(
    x: NDArray[np.float64], y: NDArray[np.int_], c: float = 1.0, max_iter: int = 100, tol: float = 1e-10
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """L2-regularised logistic regression on standardised features, fitted for all repetitions at once.

    Minimises ½||w||² + C Σ_i log(1 + exp(−s_i (w·x̃_i + b))) per repetition
    (intercept unpenalised) — the objective of scikit-learn's
    ``make_pipeline(StandardScaler(), LogisticRegression(C=C))`` — by damped
    Newton steps on the stacked (reps, m+1) parameters.
    Returns (mean, std, params) with params[:, :m] = w and params[:, m] = b.
    """
    mean, std = _standardise(x)
    xs = (x - mean) / std
    r, n, m = xs.shape
    xt = np.concatenate([xs, np.ones((r, n, 1))], axis=2)
    yf = y.astype(float)
    w = np.zeros((r, m + 1))
    reg = np.ones(m + 1)
    reg[-1] = 0.0
    obj = _logistic_objective(w, xt, yf, c)
    xtt = np.swapaxes(xt, 1, 2)
    for _ in range(max_iter):
        z = (xt @ w[..., None])[..., 0]
        s = special.expit(z)
        grad = reg * w + c * (xtt @ (s - yf)[..., None])[..., 0]
        h = c * ((xtt * (s * (1.0 - s))[:, None, :]) @ xt)
        h += np.diag(reg + 1e-12)
        step = np.linalg.solve(h, grad[..., None])[..., 0]
        t = np.ones(r)
        new = w - step
        new_obj = _logistic_objective(new, xt, yf, c)
        for _ in range(30):  # backtracking only where the full step does not decrease the objective
            bad = new_obj > obj + 1e-12 * np.maximum(1.0, np.abs(obj))
            if not bad.any():
                break
            t = np.where(bad, t / 2, t)
            new = w - t[:, None] * step
            new_obj = _logistic_objective(new, xt, yf, c)
        done = np.max(np.abs(new - w)) < tol
        w, obj = new, new_obj
        if done:
            break
    return mean, std, w


class MetaClassifierAttack:
    """The meta-classifier property inference attack (Section 6.3; Ateniese et al. 2015).

    Parameters
    ----------
    classifier:
        ``None`` for the paper's logistic regression on standardised features
        (fitted in a single vectorised Newton solve over all repetitions, the
        same objective as ``make_pipeline(StandardScaler(), LogisticRegression())``),
        or any scikit-learn classifier (cloned and fitted per repetition).
    C:
        Inverse regularisation strength of the default logistic regression.

    Notes
    -----
    :meth:`fit` trains one meta-classifier per repetition on the shadow values
    (clean, or released through ``defence`` for the adaptive attacker);
    :meth:`evaluate` tests them on (protected) test releases. A fitted attack
    can be evaluated against many defences.
    """

    def __init__(self, classifier: Any = None, *, C: float = 1.0) -> None:
        if classifier is not None and not (hasattr(classifier, "fit") and hasattr(classifier, "predict")):
            raise InvalidTypeError("classifier: expected a scikit-learn classifier with fit() and predict()")
        self.classifier = classifier
        self.C = check_positive(C, "C")
        self._fitted: Any = None
        self._reps = 0
        self._dim = 0

    def fit(self, data: AttackData, defence: Defence = None, rng: RngLike = None) -> MetaClassifierAttack:
        """Train on the shadow values of every repetition (released through ``defence`` if given)."""
        x = _apply(defence, data.shadow_x, as_rng(rng))
        if self.classifier is None:
            self._fitted = _fit_logistic_batch(x, data.shadow_y, self.C)
        else:
            from sklearn.base import clone

            self._fitted = [clone(self.classifier).fit(x[i], data.shadow_y[i]) for i in range(data.reps)]
        self._reps, self._dim = data.reps, data.dim
        return self

    def predict(self, x: NDArray[np.float64]) -> NDArray[np.int_]:
        """Predicted labels (reps, N) for a (reps, N, m) stack, one fitted classifier per repetition."""
        if self._fitted is None:
            raise InvalidParameterError("MetaClassifierAttack: call fit() before predict()/evaluate()")
        if x.ndim != 3 or x.shape[0] != self._reps or x.shape[2] != self._dim:
            raise InvalidTypeError(f"x: expected shape ({self._reps}, N, {self._dim}), got {x.shape}")
        if self.classifier is None:
            mean, std, w = self._fitted
            z = np.einsum("rnk,rk->rn", (x - mean) / std, w[:, :-1]) + w[:, -1:]
            return (z > 0).astype(np.int_)
        return np.stack([np.asarray(c.predict(x[i])) for i, c in enumerate(self._fitted)]).astype(np.int_)

    def evaluate(
        self, data: AttackData, defence: Defence = None, rng: RngLike = None, *, name: str = "meta-classifier"
    ) -> AttackResult:
        """Accuracy on the test releases ``defence(F(Data))`` of every repetition."""
        x = _apply(defence, data.test_x, as_rng(rng))
        acc = (self.predict(x) == data.test_y).mean(axis=1)
        return AttackResult(name, data.p1, data.p2, acc.astype(float), data.n_test)


def meta_classifier_attack(
    data: AttackData,
    defence: Defence = None,
    *,
    adaptive: bool = False,
    classifier: Any = None,
    rng: RngLike = None,
) -> AttackResult:
    """The paper's attack (Section 6.3.1): train on clean shadow values, test on protected releases.

    With ``adaptive=True`` the shadow values are released through the same
    ``defence`` before training (see :func:`adaptive_attack`).
    """
    g = as_rng(rng)
    attack = MetaClassifierAttack(classifier)
    attack.fit(data, defence if adaptive else None, g)
    return attack.evaluate(data, defence, g, name="adaptive" if adaptive else "meta-classifier")


def adaptive_attack(data: AttackData, defence: Defence, *, classifier: Any = None, rng: RngLike = None) -> AttackResult:
    """A meta-classifier trained on shadow releases passed through the target's mechanism.

    Knowing the defence, the attacker learns the decision rule for the noised
    distributions N(μ_p, Σ_p + Σ_Z) instead of the clean ones; it is at least
    as accurate as the paper's attacker up to sampling error.
    """
    return meta_classifier_attack(data, defence, adaptive=True, classifier=classifier, rng=rng)


# --------------------------------------------------------------------------- likelihood ratio
def mahalanobis_distance(mu1: ArrayLike, mu2: ArrayLike, cov: ArrayLike, noise_covariance: ArrayLike | None = None) -> float:
    """D = sqrt((μ1 − μ2)ᵀ (Σ + Σ_Z)⁻¹ (μ1 − μ2))."""
    a = check_array(mu1, "mu1", ndim=1)
    b = check_array(mu2, "mu2", ndim=1)
    if a.shape != b.shape:
        raise InvalidTypeError(f"mu1, mu2: shapes differ ({a.shape} vs {b.shape})")
    s = check_psd(cov, "cov", dim=a.shape[0])
    if noise_covariance is not None:
        s = s + check_psd(noise_covariance, "noise_covariance", dim=a.shape[0])
    d = a - b
    try:
        sol = np.linalg.solve(s, d)
    except np.linalg.LinAlgError:
        sol = np.linalg.pinv(s) @ d
    return float(math.sqrt(max(0.0, float(d @ sol))))


def gaussian_lr_accuracy(
    mu1: ArrayLike, mu2: ArrayLike, cov: ArrayLike, noise_covariance: ArrayLike | None = None
) -> float:
    """Exact accuracy Φ(D/2) of the Bayes-optimal attacker for N(μ1, Σ+Σ_Z) vs N(μ2, Σ+Σ_Z), equal priors.

    The log-likelihood ratio is linear, (μ2−μ1)ᵀS⁻¹x + const with S = Σ + Σ_Z,
    and under either hypothesis it is N(±D²/2, D²); the error probability is
    therefore Φ(−D/2) on both sides.
    """
    return float(special.ndtr(mahalanobis_distance(mu1, mu2, cov, noise_covariance) / 2.0))


def _as_pair_params(
    means: Sequence[ArrayLike] | Any, covariances: Sequence[ArrayLike] | None, p1: float, p2: float, m: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(2, m) means and (2, m, m) covariances from arrays or a model with .mean(p)/.covariance(p)."""
    if hasattr(means, "mean") and hasattr(means, "covariance") and covariances is None:
        model = means
        mu = np.stack([np.asarray(model.mean(p1), float), np.asarray(model.mean(p2), float)])
        cov = np.stack([np.asarray(model.covariance(p1), float), np.asarray(model.covariance(p2), float)])
    else:
        if covariances is None:
            raise InvalidParameterError("covariances: required when means are given as arrays")
        mu = check_array(cast(ArrayLike, means), "means", ndim=2)  # a sequence of (m,) means is array-like
        cov_in = check_array(cast(ArrayLike, covariances), "covariances", ndim=(2, 3))
        cov = np.stack([cov_in, cov_in]) if cov_in.ndim == 2 else cov_in
    if mu.shape != (2, m) or cov.shape != (2, m, m):
        raise InvalidTypeError(f"means/covariances: expected shapes (2, {m}) and (2, {m}, {m}), got {mu.shape}, {cov.shape}")
    for i in range(2):
        check_psd(cov[i], f"covariances[{i}]", dim=m)
    return mu, cov


def _gaussian_loglik(x: NDArray[np.float64], mu: NDArray[np.float64], cov: NDArray[np.float64]) -> NDArray[np.float64]:
    """log N(x; μ_r, S_r) up to the shared constant, batched: x (R, N, m), mu (R, m), cov (R, m, m)."""
    m = cov.shape[-1]
    scale = np.maximum(1.0, np.trace(cov, axis1=-2, axis2=-1) / m)
    cov = cov + (1e-10 * scale)[:, None, None] * np.eye(m)
    chol = np.linalg.cholesky(cov)
    diff = x - mu[:, None, :]
    # Solve L y = diffᵀ for every repetition.
    y = np.linalg.solve(chol, np.swapaxes(diff, 1, 2))
    logdet = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(axis=-1)
    return -0.5 * (np.sum(y**2, axis=1) + logdet[:, None])


def likelihood_ratio_attack(
    data: AttackData,
    defence: Defence = None,
    *,
    means: Sequence[ArrayLike] | Any = None,
    covariances: Sequence[ArrayLike] | None = None,
    noise_covariance: ArrayLike | None = None,
    rng: RngLike = None,
) -> AttackResult:
    """Gaussian likelihood-ratio attacker: Bayes-optimal for N(μ1, Σ1+Σ_Z) vs N(μ2, Σ2+Σ_Z), equal priors.

    Parameters
    ----------
    means, covariances:
        The attacker's Gaussian model of f_{p1}, f_{p2}: (2, m) means and
        (2, m, m) or one shared (m, m) covariance, or a model object with
        ``.mean(p)`` / ``.covariance(p)`` (e.g. :class:`distpriv.GaussianModel`
        keyed by p1, p2) passed as ``means``. ``None``: plug-in estimates from
        each repetition's clean shadow values (sample means and covariances).
    noise_covariance:
        Σ_Z of the defence; default ``defence.noise_covariance`` (zeros without
        a defence). For Laplace noise this is the Gaussian approximation with
        the same covariance.

    Notes
    -----
    With equal covariances the accuracy is Φ(D/2) (:func:`gaussian_lr_accuracy`),
    recorded in ``details["closed_form"]`` when a known model is given.
    """
    g = as_rng(rng)
    m, r = data.dim, data.reps
    sz = check_psd(noise_covariance, "noise_covariance", dim=m) if noise_covariance is not None else _noise_covariance(defence, m)
    details: dict[str, Any] = {}
    if means is None:
        mu = np.stack([(data.shadow_x * (data.shadow_y == k)[..., None]).sum(axis=1) / (data.shadow_y == k).sum(axis=1)[:, None] for k in (0, 1)], axis=1)
        cov = np.empty((r, 2, m, m))
        for k in (0, 1):
            mask = data.shadow_y == k
            cnt = mask.sum(axis=1)
            if np.any(cnt < 2):
                raise InvalidParameterError("shadow data: need at least 2 shadow datasets per class to estimate covariances")
            d = (data.shadow_x - mu[:, k][:, None, :]) * mask[..., None]
            cov[:, k] = np.einsum("rni,rnj->rij", d, d) / (cnt - 1)[:, None, None]
        details["model"] = "plug-in (shadow data)"
    else:
        mu2, cov2 = _as_pair_params(means, covariances, data.p1, data.p2, m)
        mu = np.broadcast_to(mu2, (r, 2, m))
        cov = np.broadcast_to(cov2, (r, 2, m, m))
        details["model"] = "given"
        if np.allclose(cov2[0], cov2[1]):
            details["closed_form"] = gaussian_lr_accuracy(mu2[0], mu2[1], cov2[0], sz)
    x = _apply(defence, data.test_x, g)
    ll1 = _gaussian_loglik(x, np.ascontiguousarray(mu[:, 0]), np.ascontiguousarray(cov[:, 0]) + sz)
    ll2 = _gaussian_loglik(x, np.ascontiguousarray(mu[:, 1]), np.ascontiguousarray(cov[:, 1]) + sz)
    pred = (ll2 > ll1).astype(np.int_)
    acc = (pred == data.test_y).mean(axis=1).astype(float)
    return AttackResult("likelihood-ratio", data.p1, data.p2, acc, data.n_test, details)

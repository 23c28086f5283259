"""Auditing the mechanism a release would choose, pair by pair, with :func:`distpriv.audit`.

``distpriv audit`` (and ``distpriv release --audit``) prepare a release exactly as
``distpriv release`` does, select its mechanism, and then run :func:`distpriv.audit`
(:mod:`distpriv.auditing`: a lower bound on ε from the attacker's whole trade-off
curve, Clopper–Pearson bounds on FPR and TPR at thresholds chosen on held-apart
releases) for every secret pair of Ψ. This module is only the glue: which
mechanism, which claim, which auditor's model, which randomness.

* **Mechanism and claim.** The chosen candidate's noise as
  :meth:`~distpriv.release.selection.Candidate.release_batch` draws it, against the
  candidate's guarantee (ε, δ) at the target. Where the noise law is a single
  calibrated mechanism (no Theorem 5.7 extra noise) that mechanism is audited
  directly so the exact likelihood-ratio scorers apply; a noiseless release
  (Theorem 5.4) is audited as the identity. The release itself publishes the
  noisy values rounded to a grid (post-processing) with Theorem 5.7's extra noise
  raised for that rounding, so it leaks no more than what is audited here.
* **Auditor's model.** By default the model of f_θ the release uses (a sampled
  :class:`~distpriv.EmpiricalModel` or the declared :class:`~distpriv.GaussianModel`);
  ``audit_model`` — a file in the declared-model format of
  :mod:`distpriv.release.declared` — audits against a different truth, e.g. to
  check what happens when the declared variances are too large.
* **Confidence over Ψ.** Each pair is audited at confidence
  1 − (1 − c)/|Ψ| (Bonferroni), so the probability that *any* pair of an honest
  claim is refuted is at most 1 − c.
* **Randomness.** Seeded from the public inputs (the audit stream of
  :class:`~distpriv.release.core.Prepared`), or from ``--seed``; one independent
  child generator per pair.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..auditing import AuditReport, audit
from ..errors import DistPrivError, InvalidParameterError, arg
from ..guarantees import Guarantee
from ..mechanisms.base import Mechanism
from ..noise import NoiseLaw

#: Releases per secret of a CLI audit unless ``--trials`` says otherwise.
DEFAULT_TRIALS = 20_000
#: Exit code of ``distpriv audit`` / ``audit-local`` when a claim is refuted (1: the side-channel check failed).
EXIT_REFUTED = 3
_STREAM_AUDIT = 3


def check_audit_options(trials: Any, confidence: Any) -> tuple[int, float]:
    """``--trials`` an integer >= 1 and ``--confidence`` in (0, 1), else a one-line error naming the option."""
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise InvalidParameterError(f"must be an integer >= 1, got {trials!r}", argument="trials")
    try:
        c = float(confidence)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"must be a number in (0, 1), got {confidence!r}", argument="confidence") from None
    if not 0.0 < c < 1.0:  # also rejects nan
        raise InvalidParameterError(f"must be in (0, 1), got {confidence!r}", argument="confidence")
    return int(trials), c


def auditable_mechanism(candidate: Any) -> tuple[Any, Guarantee]:
    """(mechanism to audit, claim) for a selected candidate (module docstring)."""
    g = candidate.guarantee
    if g is None:
        raise InvalidParameterError(f"{candidate.name} was rejected; a rejected candidate has no claim", argument="mechanism")
    extra = float(candidate.extra_laplace_scale)
    base = candidate.base
    if extra == 0.0:
        if base is not None:
            return base, g
        return Mechanism(candidate.name, candidate.label, int(candidate.dim), NoiseLaw.none(int(candidate.dim)), g), g
    if base is None or base.noise.noiseless:
        dim = int(candidate.dim)
        return Mechanism(candidate.name, candidate.label, dim, NoiseLaw.laplace(np.eye(dim), np.full(dim, extra)),
                         g), g
    return candidate, g  # base noise plus Theorem 5.7 Laplace noise: no closed form, a classifier scores


def load_audit_model(path: str | Path, stats: Sequence[str],
                     pairs: Sequence[tuple[float, float]]) -> tuple[Any, str]:
    """(GaussianModel, public description) of an ``audit_model`` file (declared-model format).

    Errors name ``audit_model`` (the loader's errors name ``model``: the argument is renamed, the message
    kept). The description names the file by its SHA-256 only (no user string).
    """
    from .declared import load_model_file

    try:
        declared = load_model_file(path, stats, pairs)
        return declared.model, f"the declared Gaussian model of the audit model file (SHA-256 {declared.sha256[:12]}…)"
    except DistPrivError as exc:
        if exc.argument == "model":
            exc.argument = "audit_model"
        raise


@dataclass(frozen=True)
class ReleaseAudit:
    """Audits of one selected mechanism, one :class:`~distpriv.auditing.AuditReport` per pair of Ψ."""

    mechanism: str
    label: str
    guarantee: Guarantee
    reports: tuple[AuditReport, ...]
    confidence: float
    trials: int
    model_source: str

    @property
    def refuted(self) -> bool:
        """True iff some pair's lower bound exceeds the claimed ε."""
        return any(r.refuted for r in self.reports)

    @property
    def epsilon_lower(self) -> float:
        """The largest lower bound over the pairs."""
        return max(r.epsilon_lower for r in self.reports)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly summary (no ROC arrays: the report's figures show them)."""
        return {
            "mechanism": self.mechanism,
            "mechanism_label": self.label,
            "claimed": {"epsilon": float(self.guarantee.epsilon), "delta": float(self.guarantee.delta)},
            "epsilon_lower": self.epsilon_lower,
            "refuted": self.refuted,
            "confidence": self.confidence,
            "trials": self.trials,
            "auditor_model": self.model_source,
            "pairs": [pair_summary(r) for r in self.reports],
        }


def pair_summary(r: AuditReport) -> dict[str, Any]:
    """One pair's audit without the ROC arrays."""
    d = r.to_dict()
    best = r.best
    return {
        "pair": d["pair"],
        "epsilon_lower": r.epsilon_lower,
        "claimed": {"epsilon": float(r.claimed.epsilon), "delta": float(r.claimed.delta)},
        "refuted": r.refuted,
        "trials": r.trials,
        "confidence": r.confidence,
        "split": d["split"],
        "scorer": r.scorer,
        "exact_epsilon": r.exact_epsilon,
        "exact_note": r.exact_note,
        "min_trials": r.min_trials,
        "best_test": best.to_dict(),
    }


def audit_release(
    prep: Any,
    selection: Any,
    *,
    trials: int = DEFAULT_TRIALS,
    confidence: float = 0.95,
    audit_model: Any = None,
    model_source: str | None = None,
    progress: Callable[[float], None] | None = None,
) -> ReleaseAudit:
    """Run :func:`distpriv.audit` on the selected mechanism for every pair of Ψ (module docstring).

    ``audit_model``: the auditor's model (default ``prep.modelling.model``);
    ``progress``: called with the fraction of all pairs' work done.
    """
    n, c = check_audit_options(trials, confidence)
    cand = selection.chosen
    mech, claim = auditable_mechanism(cand)
    model = prep.modelling.model if audit_model is None else audit_model
    std = getattr(prep, "standardization", None)
    if audit_model is not None and std is not None:
        # the mechanism was calibrated on D⁻¹F (release/standardize.py): audit it on the same scale
        from .standardize import standardize_model

        model = standardize_model(audit_model, std.scale)
    source = model_source or ("the model the release uses" if audit_model is None else "an auditor's model")
    pairs = list(prep.spec.pairs)
    per_pair = 1.0 - (1.0 - c) / len(pairs)
    root = prep.stream(_STREAM_AUDIT) if prep.spec.seed is None else np.random.default_rng(prep.spec.seed)
    rngs = root.spawn(len(pairs))
    reports = []
    for i, (pair, g) in enumerate(zip(pairs, rngs, strict=True)):
        tick = None if progress is None else (lambda f, i=i: progress((i + f) / len(pairs)))
        reports.append(audit(mech, model, tuple(pair), trials=n, confidence=per_pair, rng=g, claim=claim,
                             progress=tick))
    return ReleaseAudit(cand.name, cand.label, claim, tuple(reports), c, n, source)


def fmt_eps(x: float | None) -> str:
    """ε for tables: 4 significant digits, ``inf`` spelled out, ``–`` for none."""
    if x is None:
        return "–"
    return "inf" if math.isinf(x) else f"{x:.4g}"


# --------------------------------------------------------------------------- local mechanisms (audit-local)
def _numbers(text: str, name: str) -> list[float]:
    try:
        vals = [float(v) for v in str(text).split(",") if v.strip()]
    except ValueError:
        raise InvalidParameterError(f"expected comma-separated numbers, got {text!r}", argument=name) from None
    if not vals or not all(math.isfinite(v) for v in vals):
        raise InvalidParameterError(f"expected comma-separated finite numbers, got {text!r}", argument=name)
    return vals


def local_mechanism(matrix: str | Path | None, randomized_response: str | None, tupling: int | None) -> tuple[Any, str]:
    """(local mechanism, public description) for ``distpriv audit-local``.

    Exactly one of ``matrix`` — a JSON file holding a row-stochastic matrix A[x, y]
    (a list of rows, or ``{"matrix": rows}``) — and ``randomized_response`` (``"K,EPS"``:
    k-ary randomized response at ε, :func:`distpriv.local.randomized_response`).
    ``tupling`` = k wraps it in the tupling mechanism with k uniform dummies
    (:class:`distpriv.local.Tupling`).
    """
    import json

    from .. import local

    mech: Any
    if (matrix is None) == (randomized_response is None):
        raise InvalidParameterError(f"{arg('matrix')}, {arg('randomized_response')}: give exactly one of them")
    if matrix is not None:
        p = Path(matrix)
        if not p.is_file():
            from ..errors import DataUnavailableError

            raise DataUnavailableError(f"file not found: {p}", argument="matrix")
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidParameterError(f"malformed JSON: {' '.join(str(exc).split())}", argument="matrix") from None
        rows = doc.get("matrix") if isinstance(doc, dict) else doc
        try:
            mech = local.Mechanism(np.asarray(rows, dtype=float), name="matrix")
        except (TypeError, ValueError) as exc:
            msg = str(exc) if isinstance(exc, DistPrivError) else "expected a list of rows of numbers"
            raise InvalidParameterError(f"{msg}", argument="matrix") from None
        desc = f"the {mech.n_inputs} × {mech.n_outputs} matrix of the matrix file"
    else:
        vals = _numbers(randomized_response or "", "randomized_response")
        if len(vals) != 2 or vals[0] != int(vals[0]) or vals[0] < 2 or vals[1] <= 0:
            raise InvalidParameterError(
                f"expected K,EPS with an integer K >= 2 and EPS > 0, got {randomized_response!r}", argument="randomized_response")
        mech = local.randomized_response(int(vals[0]), vals[1])
        desc = f"{int(vals[0])}-ary randomized response at ε = {vals[1]:g}"
    if tupling is not None:
        if isinstance(tupling, bool) or int(tupling) != tupling or tupling < 1:
            raise InvalidParameterError(f"must be an integer >= 1, got {tupling!r}", argument="tupling")
        mech = local.Tupling(base=mech, k=int(tupling))
        desc += f", tupled with {int(tupling)} uniform dummies"
    return mech, desc


def local_inputs(mech: Any, lambda0: str, lambda1: str) -> dict[str, Any]:
    """The auditor's model of ``audit-local``: {"λ0": λ0, "λ1": λ1}, each a distribution over the inputs X."""
    from ..local.mechanism import check_distribution

    n = int(mech.n_inputs)
    out = {}
    for lab, text, name in (("λ0", lambda0, "lambda0"), ("λ1", lambda1, "lambda1")):
        if text is None:
            raise InvalidParameterError(f"give the input distribution as {n} comma-separated probabilities", argument=name)
        vals = _numbers(text, name)
        if len(vals) != n:
            raise InvalidParameterError(f"expected {n} probabilities (one per input), got {len(vals)}", argument=name)
        out[lab] = check_distribution(vals, n, name)
    if np.array_equal(out["λ0"], out["λ1"]):
        raise InvalidParameterError(f"{arg('lambda0')}, {arg('lambda1')}: the two input distributions must differ")
    return out


def audit_local(
    mech: Any,
    inputs: dict[str, Any],
    *,
    epsilon: float | None,
    delta: float,
    trials: int,
    confidence: float,
    seed: int = 0,
    progress: Callable[[float], None] | None = None,
) -> AuditReport:
    """dp.audit of a finite mechanism on the pair (λ0, λ1), claim (ε, δ); ε defaults to the exact ε at δ."""
    from ..local import distp_epsilon

    n, c = check_audit_options(trials, confidence)
    try:
        d = float(delta)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"must be a number in [0, 1), got {delta!r}", argument="delta") from None
    if not 0.0 <= d < 1.0:
        raise InvalidParameterError(f"must be in [0, 1), got {delta!r}", argument="delta")
    if epsilon is None:
        eps = float(distp_epsilon(mech, inputs["λ0"], inputs["λ1"], d))
    else:
        eps = float(epsilon)
        if not (eps >= 0 and not math.isnan(eps)):
            raise InvalidParameterError(f"must be >= 0, got {epsilon!r}", argument="epsilon")
    return audit(mech, inputs, ("λ0", "λ1"), trials=n, confidence=c, rng=np.random.default_rng(seed),
                 claim=(eps, d), progress=progress)

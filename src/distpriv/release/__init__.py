"""Protect a property of your own table: ``distpriv release`` and ``distpriv audit``.

A data curator names the statistics to publish (``--stat mean:age``), the
property to hide (``--protect "income=>50K"``: the share of such records is the
secret θ) and the values to make indistinguishable (``--pairs 0.45,0.55``).
The release then

1. models f_θ, the distribution of the statistics over datasets with share θ,
   from a reference population or by resampling the data itself
   (:mod:`distpriv.release.data`);
2. calibrates every mechanism of Chen & Ohrimenko for (ε, δ), tests its
   assumptions and applies Theorem 5.6/5.7 corrections where they fail, and
   keeps the valid mechanism with the smallest expected error
   (:mod:`distpriv.release.selection`);
3. releases the noisy statistics (never the true ones) with the guarantee and
   its assumptions, composing with earlier releases only where Propositions
   A.4/A.5 allow (:mod:`distpriv.release.compose`);
4. optionally writes ``report.md`` and a self-contained ``report.html``
   (:mod:`distpriv.report`).

``distpriv audit`` attacks the chosen mechanism with the paper's
meta-classifier, an adaptive and a likelihood-ratio attacker and turns the
best attack into an empirical lower bound on ε (:mod:`distpriv.release.audit`).

Python use::

    from distpriv.release import ReleaseSpec, prepare, release
    spec = ReleaseSpec(data=Path("people.csv"), stats=("mean:age",), protect="income=>50K",
                       pairs=((0.45, 0.55),), epsilon=1.0, delta=1e-3)
    result = release(prepare(spec))
    result.to_json()["statistics"]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ..errors import InvalidParameterError
from .audit import AuditResult, clopper_pearson_lower, epsilon_lower_bound, run_audit
from .compose import Composition, compose_releases, read_previous
from .core import Prepared, ReleaseResult, prepare, release, select
from .selection import (
    Candidate,
    Diagnostics,
    Selection,
    diagnose_assumptions,
    evaluate_candidate,
    select_mechanism,
)
from .spec import ReleaseSpec, build_spec, load_spec_file

__all__ = [
    "AuditResult",
    "Candidate",
    "Composition",
    "Diagnostics",
    "Prepared",
    "ReleaseResult",
    "ReleaseSpec",
    "Selection",
    "audit",
    "build_spec",
    "clopper_pearson_lower",
    "compose_releases",
    "diagnose_assumptions",
    "epsilon_lower_bound",
    "evaluate_candidate",
    "load_spec_file",
    "prepare",
    "read_previous",
    "register",
    "release",
    "run_audit",
    "select",
    "select_mechanism",
    "write_release_report",
]


def _check_out(out: Path | None) -> None:
    if out is not None and out.exists() and not out.is_dir():
        raise InvalidParameterError(f"--out: {out} exists and is not a directory")


def write_release_report(result: ReleaseResult, out: Path, *, attack_reps: int = 5) -> dict[str, str]:
    """Compute the figures and write ``report.md``, ``report.html``, ``figures/*.png`` and ``release.json``."""
    from ..experiments._common import dumps
    from ..report import write_report
    from .render import attack_summary, error_curves, release_figures, release_sections

    curves = error_curves(result)
    rows = attack_summary(result, reps=attack_reps)
    figures = release_figures(result, curves, rows)
    sections = release_sections(result, rows)
    paths = write_report(out, "distpriv release report", sections, figures)
    files = {k: str(v) for k, v in paths.items()}
    files["json"] = str(out / "release.json")
    result.files = files
    (out / "release.json").write_text(dumps(result.to_json()) + "\n", encoding="utf-8")
    return files


def audit(prep: Prepared, selection: Selection, *, reps: int = 20, datasets: int = 200, confidence: float = 0.95) -> AuditResult:
    """Audit the selected mechanism of a prepared release (no values are released)."""
    spec = prep.spec
    g = selection.chosen.guarantee
    assert g is not None
    return run_audit(
        prep.modelling.sampler, selection.chosen, list(spec.pairs), gaussian_model=prep.modelling.model.to_gaussian(),
        claimed_epsilon=g.epsilon, claimed_delta=g.delta, reps=reps, n_shadow=datasets, n_test=datasets,
        confidence=confidence, rng=prep.rng,
    )


# --------------------------------------------------------------------------- CLI
_DATA = typer.Argument(None, help="CSV or Parquet table (or 'data' in --config).", show_default=False)
_STAT = typer.Option(None, "--stat", help="Statistic kind:target, e.g. mean:age, count:sex=Female (repeatable).")
_PROTECT = typer.Option(None, "--protect", help="Predicate whose share of records is the secret, e.g. 'income=>50K'.")
_PAIRS = typer.Option(None, "--pairs", help="Two property values p1,p2 to make indistinguishable (repeatable).")
_AROUND = typer.Option(None, "--around", help="Centre P of the pair (P − DP/2, P + DP/2); with --gap.")
_GAP = typer.Option(None, "--gap", help="Gap DP of the pair around --around.")
_EPS = typer.Option(None, "--epsilon", help="Privacy parameter ε > 0.")
_DELTA = typer.Option(None, "--delta", help="Privacy parameter δ in (0, 1).")
_MECH = typer.Option(None, "--mechanism", help="'auto' (default) or a mechanism name, e.g. dirm-laplace.")
_POP = typer.Option(None, "--population", help="Reference population table to model f_θ (default: resample the data).")
_CONFIG = typer.Option(None, "--config", help="TOML spec file (command-line options override it).")
_FMT = typer.Option("md", "--format", help="json or md (Markdown on stdout).")
_OUT = typer.Option(None, "--out", help="Directory for report.md, report.html, figures/ and the JSON.")
_SEED = typer.Option(None, "--seed", help="Random seed (default 0).")
_N = typer.Option(None, "--n", help="Records per modelled dataset (default: rows of the data).")
_SAMPLES = typer.Option(None, "--samples", help="Datasets sampled per θ to estimate f_θ (default 1000).")
_CAL = typer.Option(None, "--calibration", help="Gaussian calibration: exact (default) or classic.")


def register(app: typer.Typer) -> None:
    """Add the top-level ``release`` and ``audit`` commands to the ``distpriv`` app."""

    @app.command("release")
    def release_cmd(
        data: Path = _DATA,
        stat: list[str] = _STAT,
        protect: str = _PROTECT,
        pairs: list[str] = _PAIRS,
        around: float = _AROUND,
        gap: float = _GAP,
        epsilon: float = _EPS,
        delta: float = _DELTA,
        mechanism: str = _MECH,
        population: Path = _POP,
        config: Path = _CONFIG,
        fmt: str = _FMT,
        out: Path = _OUT,
        seed: int = _SEED,
        n: int = _N,
        samples: int = _SAMPLES,
        calibration: str = _CAL,
        previous: list[Path] = typer.Option(None, "--previous", help="JSON of an earlier release to compose with (repeatable)."),
        independent: bool = typer.Option(False, "--independent", help="Assert the releases' datasets were sampled independently (Prop. A.5)."),
    ) -> None:
        """Release noisy statistics of DATA while hiding the share of records satisfying --protect."""
        from ..experiments._common import check_format, dumps
        from ..report import render_markdown

        check_format(fmt)
        _check_out(out)
        spec = build_spec(data=data, stats=stat, protect=protect, pairs=pairs, around=around, gap=gap,
                          epsilon=epsilon, delta=delta, mechanism=mechanism, population=population, config=config,
                          n=n, samples=samples, calibration=calibration, seed=seed, previous=previous,
                          independent=independent or None)
        result = release(prepare(spec))
        if out is not None:
            write_release_report(result, out)
        if fmt == "json":
            print(dumps(result.to_json()))
        else:
            from .render import release_sections

            print(render_markdown("distpriv release", release_sections(result, figures=False)))

    @app.command("audit")
    def audit_cmd(
        data: Path = _DATA,
        stat: list[str] = _STAT,
        protect: str = _PROTECT,
        pairs: list[str] = _PAIRS,
        around: float = _AROUND,
        gap: float = _GAP,
        epsilon: float = _EPS,
        delta: float = _DELTA,
        mechanism: str = _MECH,
        population: Path = _POP,
        config: Path = _CONFIG,
        fmt: str = _FMT,
        out: Path = _OUT,
        seed: int = _SEED,
        n: int = _N,
        samples: int = _SAMPLES,
        calibration: str = _CAL,
        reps: int = typer.Option(20, "--reps", help="Attack repetitions."),
        datasets: int = typer.Option(200, "--datasets", help="Shadow and test datasets per repetition (even)."),
        confidence: float = typer.Option(0.95, "--confidence", help="Confidence level of the ε lower bound."),
    ) -> None:
        """Attack the mechanism a release would use and report an empirical lower bound on ε."""
        from ..experiments._common import check_format, dumps
        from ..report import render_markdown, write_report
        from .render import audit_sections

        check_format(fmt)
        _check_out(out)
        if reps < 1:
            raise InvalidParameterError(f"--reps: must be >= 1, got {reps}")
        if datasets < 2 or datasets % 2:
            raise InvalidParameterError(f"--datasets: must be an even number >= 2, got {datasets}")
        if not 0.0 < confidence < 1.0:
            raise InvalidParameterError(f"--confidence: must be in (0, 1), got {confidence}")
        spec = build_spec(data=data, stats=stat, protect=protect, pairs=pairs, around=around, gap=gap,
                          epsilon=epsilon, delta=delta, mechanism=mechanism, population=population, config=config,
                          n=n, samples=samples, calibration=calibration, seed=seed)
        prep = prepare(spec)
        sel = select(prep)
        res = audit(prep, sel, reps=reps, datasets=datasets, confidence=confidence)
        payload: dict[str, Any] = {"mechanism": sel.chosen.name, "mechanism_label": sel.chosen.label,
                                   "guarantee": sel.chosen.guarantee.to_dict() if sel.chosen.guarantee else None,
                                   **res.to_dict()}
        sections = audit_sections(sel.chosen.label, res)
        if out is not None:
            paths = write_report(out, "distpriv audit report", sections, None)
            payload["files"] = {k: str(v) for k, v in paths.items()} | {"json": str(out / "audit.json")}
            (out / "audit.json").write_text(dumps(payload) + "\n", encoding="utf-8")
        if fmt == "json":
            print(dumps(payload))
        else:
            print(render_markdown("distpriv audit", sections))

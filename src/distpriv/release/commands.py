"""The ``distpriv release`` and ``distpriv audit`` commands: thin wrappers over the library.

Bad input raises a :class:`~distpriv.errors.DistPrivError` before anything is
written; :func:`distpriv.cli.main` prints it as one line and exits 2.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from ..errors import InvalidParameterError

__all__ = ["AUDIT_SCOPE", "audit", "register"]

AUDIT_SCOPE = (
    "This audit tests the noise of the mechanism a release would use, under the model of f_θ it was calibrated "
    "on: attackers who know that model try to tell the pairs of Ψ apart from one release, and their best accuracy "
    "gives an empirical lower bound on ε. It does not test whether the model describes the real data, nor what an "
    "attacker knows beyond it. A side-channel check releases two synthetic datasets differing only in θ through "
    "the real public-output path and fails if the public outputs differ beyond the noisy values."
)

_DATA = typer.Argument(None, help="CSV or Parquet table (or 'data' in --config).", show_default=False)
_STAT = typer.Option(None, "--stat", help="Statistic kind:target, e.g. mean:age, count:sex=Female (repeatable).")
_PROTECT = typer.Option(None, "--protect", help="Predicate whose share of records is the secret, e.g. 'income=>50K'.")
_PAIRS = typer.Option(None, "--pairs", help="Two property values p1,p2 to make indistinguishable (repeatable).")
_AROUND = typer.Option(None, "--around", help="Centre P of the pair (P − DP/2, P + DP/2); with --gap.")
_GAP = typer.Option(None, "--gap", help="Gap DP of the pair around --around.")
_EPS = typer.Option(None, "--epsilon", help="Privacy parameter ε > 0.")
_DELTA = typer.Option(None, "--delta", help="Privacy parameter δ in (0, 1).")
_MECH = typer.Option(None, "--mechanism", help="'auto' (default) or a mechanism name, e.g. dirm-laplace.")
_POP = typer.Option(None, "--population", help="Public reference population table from which f_θ is modelled.")
_MODEL = typer.Option(None, "--model", help="Declared f_θ: JSON/TOML file of per-θ means and covariances.")
_FROM_DATA = typer.Option(False, "--model-from-data",
                          help="Model f_θ by resampling the private table itself (outside the guarantee).")
_CONFIG = typer.Option(None, "--config", help="TOML spec file (command-line options override it).")
_FMT = typer.Option("md", "--format", help="json or md (Markdown on stdout).")
_OUT = typer.Option(None, "--out", help="Folder for release.json, report.md/.html, figures/ and private/ (the ledger).")
_SEED = typer.Option(None, "--seed", help="Seed the noise: tests and reproduction ONLY (a seeded release is not private).")
_N = typer.Option(None, "--n", help="Records per dataset (default: rows of the data; treated as public).")
_SAMPLES = typer.Option(None, "--samples", help="Datasets sampled per θ to estimate f_θ (default 1000).")
_CAL = typer.Option(None, "--calibration", help="Gaussian calibration: exact (default) or classic.")
_MISSING = typer.Option(None, "--missing", help="Missing values in a used column: error (default) or drop the rows.")
_SEP = typer.Option(None, "--sep", help="CSV delimiter (one character; default ',' and tab for .tsv).")
_ENCODING = typer.Option(None, "--encoding", help="CSV encoding: utf-8 (default), utf-16 or latin-1.")


def _check_out(out: Path | None, previous: list[Path] | None = None) -> None:
    if out is None:
        return
    if out.exists() and not out.is_dir():
        raise InvalidParameterError(f"--out: {out} exists and is not a directory")
    for p in previous or []:
        if Path(p).exists() and out.exists() and out.resolve() == Path(p).resolve():
            raise InvalidParameterError(f"--out: {out} is also given as --previous; write the new release elsewhere")


def _warn_seeded(seed: int | None) -> None:
    if seed is not None:
        print("distpriv: warning: a seeded release is not private (--seed): anyone who knows the seed can remove "
              "the noise; use it for tests and reproduction only", file=sys.stderr)


def audit(prep: Any, selection: Any, *, reps: int = 20, datasets: int = 200, confidence: float = 0.95) -> Any:
    """Audit the selected mechanism of a prepared release (no values are released)."""
    from .audit import run_audit
    from .noise import plan_noise

    spec = prep.spec
    g = plan_noise(selection.chosen).guarantee
    model = prep.modelling.model
    gauss = model.to_gaussian() if hasattr(model, "to_gaussian") else model
    rng = prep.stream(3) if spec.seed is None else spec.seed
    return run_audit(
        prep.modelling.sampler, selection.chosen, list(spec.pairs), gaussian_model=gauss,
        claimed_epsilon=g.epsilon, claimed_delta=g.delta, reps=reps, n_shadow=datasets, n_test=datasets,
        confidence=confidence, rng=rng,
    )


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
        model: Path = _MODEL,
        model_from_data: bool = _FROM_DATA,
        config: Path = _CONFIG,
        fmt: str = _FMT,
        out: Path = _OUT,
        seed: int = _SEED,
        n: int = _N,
        samples: int = _SAMPLES,
        calibration: str = _CAL,
        previous: list[Path] = typer.Option(None, "--previous",
                                            help="--out folder of an earlier release to compose with (repeatable)."),
        independent: bool = typer.Option(False, "--independent",
                                         help="Assert the releases' datasets were sampled independently (Prop. A.5)."),
        missing: str = _MISSING,
        sep: str = _SEP,
        encoding: str = _ENCODING,
    ) -> None:
        """Release noisy statistics of DATA while hiding the share of records satisfying --protect."""
        from ..experiments._common import check_format, dumps
        from ..report import render_markdown
        from .core import prepare, release
        from .spec import build_spec

        check_format(fmt)
        _check_out(out, previous)
        spec = build_spec(data=data, stats=stat, protect=protect, pairs=pairs, around=around, gap=gap,
                          epsilon=epsilon, delta=delta, mechanism=mechanism, population=population, config=config,
                          model=model, model_from_data=model_from_data or None, n=n, samples=samples,
                          calibration=calibration, seed=seed, previous=previous, independent=independent or None,
                          missing=missing, sep=sep, encoding=encoding)
        _warn_seeded(spec.seed)
        result = release(prepare(spec))
        if out is not None:
            from .output import write_release

            write_release(result, out)
        if fmt == "json":
            print(dumps(result.to_json()))
        else:
            from .public import public_context
            from .render import release_sections

            print(render_markdown("distpriv release", release_sections(public_context(result), figures=False)))

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
        model: Path = _MODEL,
        model_from_data: bool = _FROM_DATA,
        config: Path = _CONFIG,
        fmt: str = _FMT,
        out: Path = _OUT,
        seed: int = typer.Option(None, "--seed", help="Seed of the attack simulations (default: from the public inputs)."),
        n: int = _N,
        samples: int = _SAMPLES,
        calibration: str = _CAL,
        reps: int = typer.Option(20, "--reps", help="Attack repetitions."),
        datasets: int = typer.Option(200, "--datasets", help="Shadow and test datasets per repetition (even)."),
        confidence: float = typer.Option(0.95, "--confidence", help="Confidence level of the ε lower bound."),
        missing: str = _MISSING,
        sep: str = _SEP,
        encoding: str = _ENCODING,
    ) -> None:
        """Attack the mechanism a release would use, report an empirical lower bound on ε, check side channels."""
        from ..experiments._common import check_format, dumps
        from ..report import render_markdown, write_report
        from .core import prepare, select
        from .noise import plan_noise
        from .render import audit_sections
        from .sidechannel import side_channel_check
        from .spec import build_spec

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
                          model=model, model_from_data=model_from_data or None, n=n, samples=samples,
                          calibration=calibration, seed=seed, missing=missing, sep=sep, encoding=encoding)
        prep = prepare(spec)
        sel = select(prep)
        res = audit(prep, sel, reps=reps, datasets=datasets, confidence=confidence)
        side = side_channel_check(prep, sel)
        g = plan_noise(sel.chosen).guarantee
        payload: dict[str, Any] = {"mechanism": sel.chosen.name, "mechanism_label": sel.chosen.label,
                                   "guarantee": g.to_dict(), "scope": AUDIT_SCOPE, **res.to_dict(),
                                   "side_channel": side.to_dict()}
        sections = audit_sections(sel.chosen.label, res, AUDIT_SCOPE, side.to_dict())
        if out is not None:
            write_report(out, "distpriv audit report", sections, None)
            (out / "audit.json").write_text(dumps(payload) + "\n", encoding="utf-8")
        if fmt == "json":
            print(dumps(payload))
        else:
            print(render_markdown("distpriv audit", sections))
        if not side.passed:
            print("distpriv: audit: the side-channel check failed: the public outputs differ beyond the noisy values "
                  f"in {', '.join(side.differences)}", file=sys.stderr)
            raise typer.Exit(1)

"""The ``distpriv release`` and ``distpriv audit`` commands: thin wrappers over the library.

Bad input raises a :class:`~distpriv.errors.DistPrivError` before anything is
written; :func:`distpriv.cli.main` prints it as one line and exits 2.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from contextlib import nullcontext as _nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from ..errors import InvalidParameterError, arg

AUDIT_SCOPE = (
    "This audit tests the noise of the mechanism a release would use against a model of f_θ — the model it was "
    "calibrated on, or the auditor's own (--audit-model): for every pair of Ψ it releases many query values drawn "
    "from that model, scores them with the strongest attacker available and turns the false- and true-positive "
    "rates of the best test into a lower bound on ε (dp.audit). It does not test whether the model describes the "
    "real data, nor what an attacker knows beyond it; with --model-from-data the model is the private rows. A "
    "side-channel check releases two synthetic datasets differing only in θ through the whole release command, from "
    "scratch in fresh processes, and fails if any public output (stdout, public stderr, exit code, file names, "
    "release.json, report.md, report.html, figure bytes, run time) differs beyond the documented fields that may "
    "differ, or a value lies off its grid. Exit code 3: a claim was refuted; 1: the side-channel check failed."
)

_DATA = typer.Argument(None, help="CSV or Parquet table (or 'data' in --config).", show_default=False)
_STAT = typer.Option(None, "--stat", help="Statistic KIND:TARGET (repeatable). KIND is one of mean, sum (TARGET a "
                     "numeric column: mean:age, sum:hours) or count, proportion (TARGET a predicate: "
                     "count:sex=Female, proportion:age>40).")
_PROTECT = typer.Option(None, "--protect", help="Predicate whose share of records is the secret, e.g. 'income=>50K'.")
_PAIRS = typer.Option(None, "--pairs", help="Two property values p1,p2 to make indistinguishable (repeatable).")
_AROUND = typer.Option(None, "--around", help="Centre P of the pair (P − DP/2, P + DP/2); with --gap.")
_GAP = typer.Option(None, "--gap", help="Gap DP of the pair around --around, or step G of the --range grid.")
_RANGE = typer.Option(None, "--range", help="LO:HI: protect every adjacent pair of the public grid LO, LO+G, …, HI "
                      "(with --gap G); choose it from public knowledge, never from the data.")
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
_NA = typer.Option(None, "--na-values", metavar="TOKENS",
                   help="CSV cells read as missing, comma-separated (default: NA,N/A,NaN,nan,null,NULL; an empty "
                        "cell is always missing). Applies to every CSV input.")
_DECIMAL = typer.Option(None, "--decimal", metavar="CHAR",
                        help="Decimal mark of numbers in every CSV input: '.' (default) or ','.")
_THOUSANDS = typer.Option(None, "--thousands", metavar="CHAR",
                          help="Thousands separator of numbers in every CSV input, e.g. ',' to read \"3,250\".")
_POP_SEP = typer.Option(None, "--population-sep", metavar="CHAR",
                        help="CSV delimiter of the population when it differs from --sep.")
_POP_ENCODING = typer.Option(None, "--population-encoding", metavar="NAME",
                             help="CSV encoding of the population when it differs from --encoding.")
_TRIALS = typer.Option(20_000, "--trials", help="Audit: releases per secret drawn from the auditor's model.")
_CONFIDENCE = typer.Option(0.95, "--confidence", help="Audit: confidence of the lower bound on ε, in (0, 1).")
_INTERVAL = typer.Option(None, "--interval-level",
                         help="1 − α of the interval published with each value (default 0.95; per statistic).")
_REC_EPS = typer.Option(None, "--record-epsilon",
                        help="Also (E, D)-differential privacy for one record replaced, from the same noise draw "
                             "(with --record-delta and --bounds).")
_REC_DELTA = typer.Option(None, "--record-delta", help="D of the record-level DP guarantee, in (0, 1).")
_BOUNDS = typer.Option(None, "--bounds", help="Declared public bounds COLUMN=LO:HI of a column a mean/sum reads "
                       "(repeatable); values outside are clamped (the count goes to the curator only).")
_FORCE = typer.Option(False, "--force", help="Replace a non-empty --out folder (atomically, never through links).")


@dataclass(frozen=True)
class SpecOptions:
    """The options ``release`` and ``audit`` share, declared once (:func:`_spec_options`)."""

    data: Path | None
    stat: list[str] | None
    protect: str | None
    pairs: list[str] | None
    around: float | None
    gap: float | None
    epsilon: float | None
    delta: float | None
    mechanism: str | None
    population: Path | None
    model: Path | None
    model_from_data: bool
    config: Path | None
    fmt: str
    out: Path | None
    n: int | None
    samples: int | None
    calibration: str | None
    missing: str | None
    sep: str | None
    encoding: str | None
    force: bool
    na_values: str | None = None
    decimal: str | None = None
    thousands: str | None = None
    population_sep: str | None = None
    population_encoding: str | None = None
    interval_level: float | None = None
    psi_range: str | None = None

    def spec_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :func:`distpriv.release.spec.build_spec` (all but the command's own)."""
        return {"data": self.data, "stats": self.stat, "protect": self.protect, "pairs": self.pairs,
                "around": self.around, "gap": self.gap, "epsilon": self.epsilon, "delta": self.delta,
                "mechanism": self.mechanism, "population": self.population, "config": self.config,
                "model": self.model, "model_from_data": self.model_from_data or None, "n": self.n,
                "samples": self.samples, "calibration": self.calibration, "missing": self.missing, "sep": self.sep,
                "encoding": self.encoding, "na_values": self.na_values, "decimal": self.decimal,
                "thousands": self.thousands, "population_sep": self.population_sep,
                "population_encoding": self.population_encoding, "interval_level": self.interval_level,
                "range": self.psi_range}


#: (name, type, typer default) of every shared option, in --help order
_SHARED: tuple[tuple[str, Any, Any], ...] = (
    ("data", Path, _DATA), ("stat", list[str], _STAT), ("protect", str, _PROTECT), ("pairs", list[str], _PAIRS),
    ("around", float, _AROUND), ("gap", float, _GAP), ("epsilon", float, _EPS), ("delta", float, _DELTA),
    ("mechanism", str, _MECH), ("population", Path, _POP), ("model", Path, _MODEL),
    ("model_from_data", bool, _FROM_DATA), ("config", Path, _CONFIG), ("fmt", str, _FMT), ("out", Path, _OUT),
    ("n", int, _N), ("samples", int, _SAMPLES), ("calibration", str, _CAL), ("missing", str, _MISSING),
    ("sep", str, _SEP), ("encoding", str, _ENCODING), ("force", bool, _FORCE),
    ("na_values", str, _NA), ("decimal", str, _DECIMAL), ("thousands", str, _THOUSANDS),
    ("population_sep", str, _POP_SEP), ("population_encoding", str, _POP_ENCODING),
    ("interval_level", float, _INTERVAL), ("psi_range", str, _RANGE),
)


def _spec_options(fn: Callable[..., None]) -> Callable[..., None]:
    """Give a command the shared options: its first parameter ``o`` receives them as :class:`SpecOptions`.

    typer reads the wrapper's ``__signature__``: the shared options, then the command's own.
    """
    own = [p for p in inspect.signature(fn, eval_str=True).parameters.values() if p.name != "o"]
    shared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=tp)
              for name, tp, default in _SHARED]
    params = shared + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]

    @functools.wraps(fn)
    def command(**kwargs: Any) -> None:
        o = SpecOptions(**{name: kwargs.pop(name) for name, _, _ in _SHARED})
        fn(o, **kwargs)

    del command.__wrapped__  # typer must see the signature below, not fn's
    command.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


def _check_out(out: Path | None, previous: list[Path] | None = None, force: bool = False) -> None:
    """Refuse a bad ``--out`` before anything is read (the library's rule: :func:`distpriv.release.run.check_run`)."""
    if out is None:
        return
    for p in previous or []:
        if Path(p).exists() and out.exists() and out.resolve() == Path(p).resolve():
            raise InvalidParameterError(f"{out} is also given as {arg('previous')}; write the new release elsewhere",
                                        argument="out")
    from ..release.outdir import check_out

    check_out(out, force=force)


def _warn_seeded(seed: int | None) -> None:
    if seed is not None:
        print("distpriv: warning: a seeded release is not private (--seed): anyone who knows the seed can remove "
              "the noise; use it for tests and reproduction only", file=sys.stderr)


def _warn_public(result: Any) -> None:
    """Public warnings on stderr: a population that cannot supply the datasets of some θ (public inputs only)."""
    from ..release.public import coverage_warnings

    for w in coverage_warnings(result):
        print(f"distpriv: warning: {w}", file=sys.stderr)


def _release_args(o: SpecOptions) -> list[str]:
    """The ``distpriv release`` options of ``o`` (all shared options but the data, --out, --format and --force), as
    the user gave them: the side-channel check's synthetic runs (whose tables are written with the spec's CSV
    delimiter and encoding)."""
    skip = {"data", "fmt", "out", "force"}
    args: list[str] = []
    for name, tp, info in _SHARED:
        value = getattr(o, name)
        if name in skip or value is None or value is False or value == []:
            continue
        flag = str(info.param_decls[0])
        if tp is bool:
            args.append(flag)
            continue
        for v in value if isinstance(value, (list, tuple)) else [value]:
            args += [flag, str(Path(v).resolve()) if isinstance(v, Path) else str(v)]
    return args


def add_release_commands(app: typer.Typer) -> None:
    """Add the top-level ``release``, ``audit`` and ``audit-local`` commands to the ``distpriv`` app."""

    @app.command("release")
    @_spec_options
    def release_cmd(
        o: SpecOptions,
        seed: int = _SEED,
        previous: list[Path] = typer.Option(None, "--previous",
                                            help="--out folder of an earlier release to compose with (repeatable)."),
        independent: bool = typer.Option(False, "--independent",
                                         help="Assert the releases' datasets were sampled independently (Prop. A.5)."),
        id_column: str = typer.Option(None, "--id",
                                      help="Column identifying records: rows are compared with --previous releases "
                                           "on it (needed with --independent when the shared columns do not "
                                           "identify records)."),
        audit_release: bool = typer.Option(False, "--audit",
                                           help="Also audit the chosen mechanism (dp.audit) and add it to the report."),
        trials: int = _TRIALS,
        record_epsilon: float = _REC_EPS,
        record_delta: float = _REC_DELTA,
        bounds: list[str] = _BOUNDS,
    ) -> None:
        """Release noisy statistics of DATA while hiding the share of records satisfying --protect."""
        # A thin wrapper (issue 24 item 2): flags -> the ReleaseSpec protect() builds -> the library's
        # run_release (policy, prepare/release, audit, the output transaction) -> print.
        from ..formatting import check_format, dumps
        from ..release.run import check_run, run_release
        from ..release.spec import build_spec
        from ..report import render_markdown, terminal_markdown

        fmt, out, force = o.fmt, o.out, o.force
        check_format(fmt)
        if out is not None:  # refuse a bad --out before the spec reads any file (as before the refactor)
            _check_out(out, previous, force)
        spec = build_spec(**o.spec_kwargs(), seed=seed, previous=previous, independent=independent or None,
                          id=id_column, record_epsilon=record_epsilon, record_delta=record_delta, bounds=bounds)
        _warn_seeded(spec.seed)
        check_run(spec, audit=audit_release, trials=trials)  # policy before any data is read
        run = run_release(spec, out=out, force=force, audit=audit_release, trials=trials)
        result, checked = run.result, run.audit
        from ..release.public import curator_lines
        from .arguments import flag_for

        for line in curator_lines(result.curator_notes, flag_for):  # private facts for the curator alone, never in a file
            print(line, file=sys.stderr)
        _warn_public(result)
        if fmt == "json":
            print(dumps(run.to_json()))
        else:
            from ..release.audit_report import audit_sections
            from ..release.public import public_context
            from ..release.render import release_sections

            secs = release_sections(public_context(result), figures=False)
            if checked is not None:
                secs += audit_sections(checked, figures=False)
            print(terminal_markdown(render_markdown("distpriv release", secs)))

    @app.command("audit")
    @_spec_options
    def audit_cmd(
        o: SpecOptions,
        seed: int = typer.Option(None, "--seed", help="Seed of the audit's draws (default: from the public inputs)."),
        trials: int = _TRIALS,
        confidence: float = _CONFIDENCE,
        audit_model: Path = typer.Option(None, "--audit-model",
                                         help="Auditor's f_θ (declared-model JSON/TOML) to audit against instead of "
                                              "the release's model."),
        side_channel_runs: int = typer.Option(5, "--side-channel-runs",
                                              help="Side-channel check: releases of each synthetic table (all timed; "
                                                   "run time is compared from 3 on)."),
    ) -> None:
        """Audit the mechanism a release would use with dp.audit on every pair of Ψ; check side channels.

        Exit code 0: no claim refuted; 3: a pair's lower bound on ε exceeds the claim; 1: the side-channel check
        failed; 2: bad input.
        """
        from ..formatting import check_format, dumps
        from ..release.audit import (
            EXIT_REFUTED,
            audit_release,
            check_audit_options,
            load_audit_model,
        )
        from ..release.audit_report import audit_figures, audit_progress, audit_sections
        from ..release.core import prepare, select
        from ..release.noise import plan_noise
        from ..release.sidechannel import check_runs, side_channel_check
        from ..release.spec import build_spec
        from ..report import render_markdown, terminal_markdown, write_report
        from .command import release_command

        fmt, out, force = o.fmt, o.out, o.force
        check_format(fmt)
        _check_out(out, None, force)
        check_audit_options(trials, confidence)
        runs = check_runs(side_channel_runs)
        release_args = _release_args(o)  # the audited release's own options, for the synthetic runs
        spec = build_spec(**o.spec_kwargs(), seed=seed)
        truth, source = (None, None) if audit_model is None else load_audit_model(audit_model, spec.stats, spec.pairs)
        from ..release.outdir import OutputFolder
        from ..release.progress import Stages

        folder = OutputFolder(out, force=force) if out is not None else None
        with folder or _nullcontext():
            with Stages("distpriv audit") as stages:
                stages.step("reading the data and modelling f_θ")
                prep = prepare(spec)
                stages.step("choosing the mechanism")
                sel = select(prep)
            with audit_progress("auditing") as tick:
                res = audit_release(prep, sel, trials=trials, confidence=confidence, audit_model=truth, model_source=source,
                            progress=tick)
            with audit_progress("side-channel check") as tick:
                side = side_channel_check(prep, release_command(release_args), runs=runs, progress=tick)
            g = plan_noise(sel.chosen).guarantee
            payload: dict[str, Any] = {"guarantee": g.to_dict(), "scope": AUDIT_SCOPE, **res.to_dict(),
                                       "side_channel": side.to_dict()}
            if folder is not None:
                assert folder.path is not None
                write_report(folder.path, "distpriv audit report", audit_sections(res, AUDIT_SCOPE, side.to_dict()),
                             audit_figures(res.reports))
                (folder.path / "audit.json").write_text(dumps(payload) + "\n", encoding="utf-8")
                folder.commit()
        if fmt == "json":
            print(dumps(payload))
        else:
            print(terminal_markdown(render_markdown("distpriv audit", audit_sections(res, AUDIT_SCOPE, side.to_dict(),
                                                                                     figures=False))))
        if res.refuted:
            worst = max(res.reports, key=lambda r: r.epsilon_lower)
            print(f"distpriv: audit: the claim is refuted: ε >= {worst.epsilon_lower:.4g} for the pair "
                  f"{worst.pair[0]} vs {worst.pair[1]} (claimed ε = {res.guarantee.epsilon:.4g}) at confidence "
                  f"{res.confidence:g}", file=sys.stderr)
        if not side.passed:
            print("distpriv: audit: the side-channel check failed: the public outputs differ beyond the noisy values "
                  f"in {', '.join(side.differences)}", file=sys.stderr)
        if res.refuted:
            raise typer.Exit(EXIT_REFUTED)
        if not side.passed:
            raise typer.Exit(1)

    @app.command("audit-local")
    def audit_local_cmd(
        matrix: Path = typer.Option(None, "--matrix", help="JSON file: row-stochastic matrix A[x, y] (list of rows)."),
        randomized_response: str = typer.Option(None, "--randomized-response", help="K,EPS: k-ary randomized response."),
        tupling: int = typer.Option(None, "--tupling", help="Wrap in the tupling mechanism with K uniform dummies."),
        lambda0: str = typer.Option(None, "--lambda0", help="Input distribution λ0 over X, comma-separated."),
        lambda1: str = typer.Option(None, "--lambda1", help="Input distribution λ1 over X, comma-separated."),
        epsilon: float = typer.Option(None, "--epsilon", help="Claimed ε (default: the exact ε at --delta)."),
        delta: float = typer.Option(0.0, "--delta", help="Claimed δ in [0, 1)."),
        trials: int = _TRIALS,
        confidence: float = _CONFIDENCE,
        seed: int = typer.Option(0, "--seed", help="Seed of the audit's draws."),
        fmt: str = _FMT,
        out: Path = typer.Option(None, "--out", help="Folder for audit.json, report.md/.html and figures/."),
        force: bool = _FORCE,
    ) -> None:
        """Audit a finite-output local mechanism's (ε, δ)-DistP claim for (λ0, λ1); show the exact ε beside it.

        Exit code 0: not refuted; 3: the lower bound exceeds the claimed ε; 2: bad input.
        """
        from ..formatting import check_format, dumps
        from ..release.audit import (
            EXIT_REFUTED,
            audit_local,
            check_audit_options,
            local_inputs,
            local_mechanism,
            pair_summary,
        )
        from ..release.audit_report import audit_figures, audit_progress, local_audit_sections
        from ..report import render_markdown, terminal_markdown, write_report

        check_format(fmt)
        _check_out(out, None, force)
        check_audit_options(trials, confidence)
        mech, desc = local_mechanism(matrix, randomized_response, tupling)
        inputs = local_inputs(mech, lambda0, lambda1)
        with audit_progress("auditing") as tick:
            rep = audit_local(mech, inputs, epsilon=epsilon, delta=delta, trials=trials, confidence=confidence,
                              seed=seed, progress=tick)
        payload = {"mechanism": desc, "n_inputs": int(mech.n_inputs), "n_outputs": int(mech.n_outputs),
                   **pair_summary(rep)}
        if out is not None:
            from ..release.outdir import OutputFolder

            with OutputFolder(out, force=force) as folder:
                assert folder.path is not None
                write_report(folder.path, "distpriv local audit report", local_audit_sections(rep, desc),
                             audit_figures([rep]))
                (folder.path / "audit.json").write_text(dumps(payload) + "\n", encoding="utf-8")
                folder.commit()
        if fmt == "json":
            print(dumps(payload))
        else:
            print(terminal_markdown(render_markdown("distpriv audit-local", local_audit_sections(rep, desc,
                                                                                                 figures=False))))
        if rep.refuted:
            print(f"distpriv: audit-local: the claim is refuted: ε >= {rep.epsilon_lower:.4g} > claimed "
                  f"{rep.claimed.epsilon:.4g} at confidence {rep.confidence:g}", file=sys.stderr)
            raise typer.Exit(EXIT_REFUTED)

"""``distpriv reproduce chen-ohrimenko``: Tables 3–4 and Figures 2–5 (:mod:`distpriv.experiments.chen_ohrimenko`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

DEFAULT_REPS = 50  # the paper's repetitions; equals experiments.chen_ohrimenko.REPS (checked by the tests)


def chen_ohrimenko(
    table: int | None = typer.Option(None, "--table", help="Table to reproduce: 3 (L2 error) or 4 (attack accuracy)."),
    figure: int | None = typer.Option(None, "--figure", help="Figure to reproduce: 2, 3, 4 or 5."),
    all_: bool = typer.Option(False, "--all", help="Tables 3-4 and Figures 2-5."),
    seed: int = typer.Option(0, "--seed", help="Random seed (same seed, same numbers)."),
    reps: int = typer.Option(DEFAULT_REPS, "--reps", help="Repetitions (paper: 50)."),
    calibration: str = typer.Option("classic", "--calibration", help="classic (the paper's rule) or exact."),
    paper_settings: bool = typer.Option(
        False, "--paper-settings", help="the paper's own arithmetic: DirM (L) scaled by Δ_E,1/ε as printed."),
    fmt: str = typer.Option("md", "--format", help="json or md."),
    out: Path | None = typer.Option(None, "--out", help="Directory for PNG figures and a Markdown report."),
) -> None:
    """Chen & Ohrimenko Section 6: Tables 3-4 and Figures 2-5 on UCI Adult, beside the published values."""
    from .._validation import check_choice, check_int
    from ..errors import InvalidParameterError
    from ..experiments import chen_ohrimenko as co
    from ..formatting import check_format, dumps, prepare_out

    check_format(fmt)
    check_choice(calibration, "calibration", co.CALIBRATIONS)
    check_int(reps, "reps", minimum=2)
    check_int(seed, "seed", minimum=0)
    chosen = sum(x is not None for x in (table, figure)) + int(all_)
    if chosen != 1:
        raise InvalidParameterError("chen-ohrimenko: give exactly one of --table N, --figure N or --all")
    tables = (3, 4) if all_ else ((table,) if table is not None else ())
    figures = (2, 3, 4, 5) if all_ else ((figure,) if figure is not None else ())
    results, timing = co.run_chen_ohrimenko(tables=tables, figures=figures, reps=reps, seed=seed, calibration=calibration,
                             paper_settings=paper_settings, show_progress=True)
    out_dir = prepare_out(out)
    if out_dir is not None:
        co.write_chen_ohrimenko_report(results, out_dir, timing)
    if fmt == "json":
        payload: Any = results[0] if len(results) == 1 else {"study": co.STUDY, "results": results,
                                                             "timing_seconds": timing}
        typer.echo(dumps(payload))
    else:
        typer.echo("\n".join(co.chen_ohrimenko_markdown(r) for r in results))


def add_chen_ohrimenko_commands(app: typer.Typer) -> None:
    """Add ``reproduce chen-ohrimenko`` to the ``reproduce`` Typer sub-app."""
    app.command("chen-ohrimenko")(chen_ohrimenko)

"""``distpriv reproduce zhang-attribute``: hospital and school examples (:mod:`distpriv.experiments.zhang_attribute`)."""

from __future__ import annotations

import time
from pathlib import Path

import typer


def zhang_attribute(
    format: str = typer.Option("md", "--format", help="json or md"),
    seed: int = typer.Option(0, "--seed", help="random seed"),
    runs: int = typer.Option(100, "--runs", help="noisy releases per statistic"),
    epsilon: float = typer.Option(1.0, "--epsilon", help="privacy parameter ε"),
    delta: float = typer.Option(1e-3, "--delta", help="privacy parameter δ (APGM)"),
    calibration: str = typer.Option("classic", "--calibration",
                                    help="classic (paper) or exact (adds exact-calibration rows)"),
    paper_settings: bool = typer.Option(False, "--paper-settings",
                                        help="the paper's printed arithmetic: max|a − b| = 0.25, Var = 15²/50 etc."),
    out: Path | None = typer.Option(None, "--out", help="directory for a Markdown report and JSON"),
) -> None:
    """Synthetic hospital (Section 4.2) and school example (Example 1) of Zhang, Ohrimenko & Cummings."""
    from ..experiments.zhang_attribute import (
        run_zhang_attribute,
        write_zhang_attribute_report,
        zhang_attribute_markdown,
    )
    from ..formatting import check_format, dumps

    fmt = check_format(format)
    start = time.perf_counter()
    res = run_zhang_attribute(seed=seed, runs=runs, epsilon=epsilon, delta=delta, calibration=calibration,
              paper_settings=paper_settings, show_progress=fmt != "json")
    if out is not None:
        write_zhang_attribute_report(res, out, {"zhang-attribute": time.perf_counter() - start})
    typer.echo(dumps(res) if fmt == "json" else zhang_attribute_markdown(res))


def add_zhang_attribute_commands(app: typer.Typer) -> None:
    """Add ``reproduce zhang-attribute`` to the ``reproduce`` sub-application."""
    app.command("zhang-attribute")(zhang_attribute)

"""``distpriv demo``: the papers' worked examples, then the Adult workflow (:mod:`distpriv.demo`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer


def demo(
    out: Path = typer.Option(Path("demo-report"), "--out", help="Directory for the report and figures."),
    seed: int = typer.Option(0, "--seed", help="Random seed."),
    fmt: str = typer.Option("md", "--format", help="md (tables) or json."),
    reps: int = typer.Option(20, "--reps", help="Attack repetitions in the Adult workflow."),
    examples_only: bool = typer.Option(False, "--examples-only", help="Only the worked examples (no Adult data)."),
) -> None:
    """Walk through the papers' worked examples, then protect the income share of UCI Adult end to end."""
    from ..demo import figure_1_example, print_examples, section_5_3_example
    from ..formatting import check_format, dumps, prepare_out

    check_format(fmt)
    ex = section_5_3_example()
    fig1 = figure_1_example()
    result: dict[str, Any] = {"section_5_3": ex, "figure_1": fig1}
    if fmt == "md":
        print_examples(ex, fig1)
    if not examples_only:
        from ..experiments.workflow import adult_workflow, print_workflow

        outdir = prepare_out(out)
        wf = adult_workflow(seed=seed, reps=reps, out=outdir, progress_bar=fmt == "md")
        result["adult"] = wf
        if fmt == "md":
            print_workflow(wf)
    if fmt == "json":
        print(dumps(result))


def add_demo_commands(app: typer.Typer) -> None:
    """Add the ``demo`` command."""
    app.command("demo")(demo)

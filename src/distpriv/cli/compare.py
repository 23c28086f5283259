"""``distpriv reproduce compare``: every mechanism on Chen & Ohrimenko's Table 3 workload (:mod:`distpriv.experiments.compare`)."""

from __future__ import annotations

from pathlib import Path

import typer


def compare(
    quick: bool = typer.Option(False, "--quick", help="income only, fewer datasets, attack repetitions and audit trials."),
    properties: str | None = typer.Option(None, "--properties", help="comma-separated: income, workclass, sex."),
    mechanisms: str | None = typer.Option(None, "--mechanisms", help="comma-separated registry names (default all)."),
    epsilons: str | None = typer.Option(None, "--epsilons", help="comma-separated ε values (default 0.2,1,5)."),
    audit: bool = typer.Option(True, "--audit/--no-audit", help="audit every row (the slowest column)."),
    seed: int = typer.Option(0, "--seed", help="Random seed (same seed, same numbers)."),
    cache: bool = typer.Option(True, "--cache/--no-cache",
                               help="memoise the calibrated mechanisms in $XDG_CACHE_HOME/distpriv/compare (keyed on "
                                    "the code and every input; the rows do not change)."),
    jobs: int | None = typer.Option(None, "--jobs", help="worker processes (default min(2, CPU count); 1: serial). "
                                                         "The rows do not depend on it."),
    fmt: str = typer.Option("md", "--format", help="json or md."),
    out: Path | None = typer.Option(None, "--out", help="Directory for compare.json, compare.md and compare.png."),
) -> None:
    """The papers' mechanisms, OptM and the peers (SSP quantizer, Ding (L), Kantorovich) at one exact guarantee."""
    from ..experiments.compare_cache import default_folder
    from ..experiments.compare_work import start_workers

    folder = default_folder() if cache else None
    start_workers(jobs, folder)  # the workers' imports run beside this process's (not for a warm rerun)
    from ..experiments import compare as cmp
    from ..experiments.chen_ohrimenko.settings import EPSILONS
    from ..formatting import check_format, dumps, parse_positive_list

    check_format(fmt)

    def names(text: str | None) -> list[str] | None:
        return None if text is None else [t.strip() for t in text.split(",") if t.strip()]

    eps = parse_positive_list(epsilons, "--epsilons") or EPSILONS
    res = cmp.run_compare(quick=quick, seed=seed, properties=names(properties), epsilons=eps, mechanisms=names(mechanisms),
                  audit=audit, out=out, show_progress=True, cache=folder,
                          jobs=jobs)
    typer.echo(dumps(res) if fmt == "json" else cmp.compare_markdown(res))


def add_compare_commands(app: typer.Typer) -> None:
    """Add ``reproduce compare`` to the ``reproduce`` Typer sub-app."""
    app.command("compare")(compare)

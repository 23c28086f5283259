"""``distpriv reproduce kawamoto-coupling``: the coupling mechanism (:mod:`distpriv.experiments.kawamoto_coupling`)."""

from __future__ import annotations

import typer


def kawamoto_coupling(
    fmt: str = typer.Option("md", "--format", help="json or md"),
    out: str | None = typer.Option(None, "--out", help="directory for PNG figures and JSON"),
    seed: int = typer.Option(0, "--seed", help="seed of the synthetic data and the subsamples"),
    users: int = typer.Option(2000, "--users", help="number of synthetic users"),
    sizes: str | None = typer.Option(None, "--sizes", help="comma-separated sample sizes for λ̂"),
    repeats: int = typer.Option(3, "--repeats", help="subsamples per size"),
    quick: bool = typer.Option(False, "--quick", help="small sweep"),
) -> None:
    """Coupling mechanism: the Fig. 2 example and privacy vs accuracy of λ̂."""
    from ..formatting import check_format, dumps, parse_positive_list

    check_format(fmt)
    from ..experiments.kawamoto_coupling import kawamoto_coupling_markdown, run_kawamoto_coupling

    res = run_kawamoto_coupling(seed=seed, n_users=users, sizes=parse_positive_list(sizes, "--sizes", int), quick=quick,
              repeats=repeats, out=out)
    typer.echo(dumps(res) if fmt == "json" else kawamoto_coupling_markdown(res))


def add_kawamoto_coupling_commands(app: typer.Typer) -> None:
    """Add ``reproduce kawamoto-coupling`` to the CLI."""
    app.command("kawamoto-coupling")(kawamoto_coupling)

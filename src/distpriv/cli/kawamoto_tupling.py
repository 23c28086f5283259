"""``distpriv reproduce kawamoto-tupling``: Fig. 2, 4, 5 and Table 2 (:mod:`distpriv.experiments.kawamoto_tupling`)."""

from __future__ import annotations

import typer


def kawamoto_tupling(
    fmt: str = typer.Option("md", "--format", help="json or md"),
    out: str | None = typer.Option(None, "--out", help="directory for PNG figures and JSON"),
    seed: int = typer.Option(0, "--seed", help="seed of the synthetic check-ins and the attacker"),
    users: int = typer.Option(2000, "--users", help="number of synthetic users"),
    quick: bool = typer.Option(False, "--quick", help="small sweeps (seconds)"),
    k_values: str | None = typer.Option(None, "--k", help="comma-separated k values for Fig. 2a"),
    eps_a: str | None = typer.Option(None, "--eps-a", help="comma-separated ε_A values (Fig. 2b/2d/5)"),
    radii: str | None = typer.Option(None, "--radii", help="comma-separated radii r for Fig. 2c"),
) -> None:
    """Tupling mechanism: Fig. 2, Fig. 4, Fig. 5 and Table 2 on the built-in check-ins."""
    from ..errors import InvalidParameterError
    from ..formatting import check_format, dumps, parse_positive_list

    check_format(fmt)
    kv = parse_positive_list(k_values, "--k")
    if kv is not None and any(v != int(v) or v < 1 for v in kv):
        raise InvalidParameterError(f"--k: expected integers >= 1, got {k_values!r}")
    from ..experiments.kawamoto_tupling import kawamoto_tupling_markdown, run_kawamoto_tupling

    res = run_kawamoto_tupling(seed=seed, n_users=users, quick=quick, out=out,
              k_values=None if kv is None else tuple(int(v) for v in kv),
              eps_a_values=parse_positive_list(eps_a, "--eps-a"), radii=parse_positive_list(radii, "--radii"))
    typer.echo(dumps(res) if fmt == "json" else kawamoto_tupling_markdown(res))


def add_kawamoto_tupling_commands(app: typer.Typer) -> None:
    """Add ``reproduce kawamoto-tupling`` to the CLI."""
    app.command("kawamoto-tupling")(kawamoto_tupling)

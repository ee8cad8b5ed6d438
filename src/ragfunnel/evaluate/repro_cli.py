"""`ragfunnel repro`: re-run the committed results of docs/results/registry.toml and compare their headline numbers.

    ragfunnel repro --list                       # every result, its cost and whether this machine can check it
    ragfunnel repro --check                      # check all current results (SKIP what this machine cannot run)
    ragfunnel repro --check first_stage latency  # some of them (names, shell patterns, stage:NAME)
    ragfunnel repro first_stage                  # re-run the full command: rewrites the committed files
    ragfunnel repro --readme                     # regenerate docs/results/README.md from the registry
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ragfunnel.evaluate.repro import (
    REGISTRY,
    Environment,
    EntryResult,
    RegistryError,
    load_registry,
    registry_problems,
    requirement_lines,
    result_lines,
    run_entries,
    summary_line,
    write_readme,
)


def repro(
    names: Annotated[Optional[list[str]], typer.Argument(help="results to run: names, shell patterns or stage:NAME (default: all current)")] = None,
    check: Annotated[bool, typer.Option("--check", help="run each result's check into a scratch folder and compare (committed files untouched)")] = False,
    list_: Annotated[bool, typer.Option("--list", help="list the results, their cost and what this machine lacks for each")] = False,
    max_minutes: Annotated[Optional[float], typer.Option("--max-minutes", min=0, help="time budget: SKIP results that would not fit in what is left")] = None,
    readme: Annotated[bool, typer.Option("--readme", help="regenerate docs/results/README.md from the registry")] = False,
    registry: Annotated[Path, typer.Option(help="the registry file")] = REGISTRY,
) -> None:
    """Re-check the committed results (docs/results/registry.toml): OK / FAIL per headline number, SKIP with the reason."""
    try:
        reg = load_registry(registry)
        entries = reg.select(names or [], include_archive=bool(names))
    except RegistryError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except KeyError as exc:
        typer.echo(f"error: no result named {exc.args[0]} in {registry} (see `ragfunnel repro --list`)", err=True)
        raise typer.Exit(2) from None
    if readme:
        typer.echo(f"wrote {write_readme(reg)}")
    if list_:
        env = Environment()
        for entry, missing in requirement_lines(reg, env, check=True):
            if names and entry not in entries:
                continue
            state = "ready" if not missing else "SKIP: " + "; ".join(missing)
            typer.echo(f"{entry.stage:<12} {entry.name:<34} ~{entry.estimate(True):g} min  {state}")
        for problem in registry_problems(reg):
            typer.echo(f"warning: {problem}", err=True)
        return
    if not check and not names:
        if not readme:
            typer.echo("nothing to do: give --check, --list, --readme or the NAMEs of results to re-run", err=True)
            raise typer.Exit(2)
        return
    if not check:
        typer.echo("re-running the full commands: the committed files will be rewritten", err=True)

    def report(result: EntryResult) -> None:
        for line in result_lines(result):
            typer.echo(line)

    results = run_entries(entries, Environment(), check=check, max_minutes=max_minutes, report=report)
    typer.echo(summary_line(results))
    if any(r.status == "FAIL" for r in results):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add `ragfunnel repro` to the command line."""
    app.command("repro")(repro)

"""Command-line options shared by every command module (cli.py, generate/cli.py, serve/cli.py, ...)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

CollectionOpt = Annotated[
    Optional[str],
    typer.Option("--collection", "-c", help="which collection: friends (default), or a name given to "
                                           "`ragfunnel index PATH --collection NAME`; env RAGFUNNEL_COLLECTION"),
]

FilterOpt = Annotated[
    Optional[list[str]],
    typer.Option("--filter", "-f", help="only documents whose metadata matches, applied inside the index (repeatable, all "
                                       "must hold): format=pdf, 'year>=2019', 'path=reviews/*', 'season in 8,9', "
                                       "'date>=2020-01-01', section=Methods, 'page<=3' (docs/filters.md)"),
]

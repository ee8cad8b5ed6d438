"""Command-line options shared by every command module (cli.py, generate/cli.py, serve/cli.py, ...)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

CollectionOpt = Annotated[
    Optional[str],
    typer.Option("--collection", "-c", help="which collection: friends (default), or a name given to "
                                           "`ragfunnel index PATH --collection NAME`; env RAGFUNNEL_COLLECTION"),
]

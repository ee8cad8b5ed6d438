"""The HTTP API and web page (`create_app`), and the `ragfunnel serve` command (`serve.cli.register`).

`create_app` is imported on first use, so `ragfunnel.serve.cli` (loaded with every CLI command) does not pull in
FastAPI."""

from typing import Any

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from ragfunnel.serve.app import create_app

        return create_app
    raise AttributeError(name)

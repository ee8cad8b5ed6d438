"""ragfunnel: a retrieval funnel (sparse + dense + fusion + rerank) with grounded answers.

    import ragfunnel
    with ragfunnel.open("friends") as rf:
        hits = rf.search("Who did Rachel dump at the altar?", k=5)       # a SearchResponse
        answer = rf.ask("Who did Rachel dump at the altar?", reader="evidence")  # an AnswerResponse

`open`, `Client` and the result models are loaded on first use (`import ragfunnel` loads nothing heavy); see
docs/python.md."""

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "open": "ragfunnel.api.client", "Client": "ragfunnel.api.client", "AskEvent": "ragfunnel.api.client",
    "Turn": "ragfunnel.api.conversation",
    "SearchResponse": "ragfunnel.schema", "AnswerResponse": "ragfunnel.schema", "SearchHit": "ragfunnel.schema",
    "Citation": "ragfunnel.schema", "PassageResponse": "ragfunnel.schema", "CollectionSummary": "ragfunnel.schema",
    "RagfunnelError": "ragfunnel.errors", "QueryError": "ragfunnel.errors", "ConfigError": "ragfunnel.errors",
}
_DEPRECATED = {"SceneHit": "ragfunnel.schema"}  # the former name of SearchHit: importable, with a DeprecationWarning
__all__ = ["__version__", *_LAZY]

# No import of them here, not even for type checkers: modules low in the layers import this package (for
# __version__), and the layer contract follows every import of it.


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name) or _DEPRECATED.get(name)
    if module is None:
        raise AttributeError(f"module 'ragfunnel' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

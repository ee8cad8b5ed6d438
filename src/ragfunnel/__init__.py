"""ragfunnel: a retrieval funnel (sparse + dense + fusion + rerank) with grounded answers."""

__version__ = "0.1.0"

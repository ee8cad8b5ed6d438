"""The stable Python API (`ragfunnel.open`, `Client`) and the framework retrievers built on it
(`ragfunnel.api.langchain.RagfunnelRetriever`, `ragfunnel.api.llamaindex.RagfunnelRetriever`, in their extras).

Imported on first use of `ragfunnel.open`, so `import ragfunnel` stays light."""

from ragfunnel.api.client import AskEvent, Client, open, read_filter
from ragfunnel.api.conversation import Turn, standalone_question

__all__ = ["AskEvent", "Client", "Turn", "open", "read_filter", "standalone_question"]

"""Clients of external services, one layer for the rerankers and the generators alike (standard library only).

- `http`: JSON POST and Server-Sent Events streams with timeouts, bounded retries (Retry-After honoured), no
  redirects and failures that are safe to show (`HTTPFailure`).
- `chat`: the shape the chat-model clients share (`complete`, `stream`, error mapping to `LLMError`).
- `anthropic`, `openai_compat`: the Anthropic Messages and OpenAI-compatible chat-completions APIs.
- `cohere`: Cohere's v2 rerank call.

This package imports nothing of ragfunnel but `errors`, so every stage may use it.
"""

from ragfunnel.clients.anthropic import AnthropicClient
from ragfunnel.clients.chat import ChatClient, LLMError
from ragfunnel.clients.cohere import CohereClient
from ragfunnel.clients.http import HTTPFailure, api_key, post_json, stream_sse
from ragfunnel.clients.openai_compat import OpenAICompatibleClient

__all__ = [
    "AnthropicClient", "ChatClient", "CohereClient", "HTTPFailure", "LLMError", "OpenAICompatibleClient",
    "api_key", "post_json", "stream_sse",
]

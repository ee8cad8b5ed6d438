"""Errors a user can cause and fix. The CLI prints them as one clear message, never a traceback."""


class RagfunnelError(Exception):
    """Base class for user-facing errors."""


class CorpusError(RagfunnelError):
    """A corpus file is missing or malformed (the message names the file and line)."""


class IndexUnusableError(RagfunnelError):
    """The index is missing, incomplete, or was built with other settings."""


class QueryError(RagfunnelError):
    """The question cannot be searched (empty, too long...)."""


class ConfigError(RagfunnelError):
    """A setting has an invalid value."""


class EncoderError(RagfunnelError):
    """The embedding model gave no usable vectors: an embeddings server unreachable, refusing or answering
    malformed replies (the message names the server and the failure, never a key)."""

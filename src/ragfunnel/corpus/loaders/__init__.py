"""File loaders, one module per format (see base.py for what a loader returns; registry.py maps extensions to them).
The optional packages they use come with the `files` extra; a missing one is `Unreadable` naming the extra."""

from ragfunnel.corpus.loaders.base import Block, Container, LoadedFile, LoaderOptions, Unreadable

__all__ = ["Block", "Container", "LoadedFile", "LoaderOptions", "Unreadable"]

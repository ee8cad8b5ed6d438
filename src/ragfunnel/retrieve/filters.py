"""Metadata filters: keep the documents whose metadata has the values a question named.

The corpus reads them from the question (`Corpus.query_filter`: Friends reads "season 8" / "episode 16" /
"S08E16", see corpus/friends.py); the pipeline keeps only the fused candidates that match, and when none of them
does, it keeps the unfiltered list and says so in the trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MetadataFilter:
    """Metadata key -> wanted value, in the order the question named them."""

    wanted: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, values: Mapping[str, Any] | None) -> MetadataFilter | None:
        """A filter on the values that are set (None values are left out), or None when nothing is left."""
        wanted = tuple((key, value) for key, value in (values or {}).items() if value is not None)
        return cls(wanted) if wanted else None

    @classmethod
    def where(cls, **values: Any) -> MetadataFilter | None:
        return cls.of(values)

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        return all(metadata.get(key) == want for key, want in self.wanted)

    def describe(self) -> str:
        return ", ".join(f"{key} {value}" for key, value in self.wanted)

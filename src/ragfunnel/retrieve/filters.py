"""Metadata filters read from the question (self-query): "in season 8", "season eight", "episode 16",
"S08E16", "s8 e16".

Words like "season 8" carry no lexical or semantic signal a retriever can use (every scene of season 8 is as
"season 8" as any other), yet a user who writes them means a filter. The pipeline keeps only the fused candidates
whose document metadata has that `season` / `episode`, when the corpus has such metadata; when none of the
candidates matches, it keeps the unfiltered list and says so in the trace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20,
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10,
}
_NUM = r"(\d{1,2}|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"
_CODE = re.compile(r"\bs(\d{1,2})\s*e(\d{1,2})\b", re.IGNORECASE)  # S08E16, s8 e16
_SEASON = re.compile(rf"\bseason\s+{_NUM}\b|\b{_NUM}\s+season\b", re.IGNORECASE)  # season 8, eighth season
_EPISODE = re.compile(rf"\bepisode\s+{_NUM}\b", re.IGNORECASE)


def _number(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBER_WORDS[text.lower()]


@dataclass(frozen=True)
class MetadataFilter:
    season: int | None = None
    episode: int | None = None

    def matches(self, metadata: dict[str, Any]) -> bool:
        return all(want is None or metadata.get(key) == want
                   for key, want in (("season", self.season), ("episode", self.episode)))

    def describe(self) -> str:
        parts = [f"{key} {value}" for key, value in (("season", self.season), ("episode", self.episode)) if value is not None]
        return ", ".join(parts)


def parse_filter(question: str) -> MetadataFilter | None:
    """The season/episode a question names, or None."""
    code = _CODE.search(question)
    if code:
        return MetadataFilter(int(code.group(1)), int(code.group(2)))
    season = _SEASON.search(question)
    episode = _EPISODE.search(question)
    if not season and not episode:
        return None
    s = _number(next(g for g in season.groups() if g)) if season else None
    e = _number(episode.group(1)) if episode else None
    return MetadataFilter(s, e)

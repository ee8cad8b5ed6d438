"""The Friends corpus: transcripts in our JSONL (one scene a line, optionally gzipped) or Emory's season JSON.

Both formats become `Document` (one per scene) holding `Unit`s (one per utterance; stage directions kept and
marked), with episode labels in the metadata. `FriendsCorpus` is the `Corpus` (corpus/base.py): these documents, the
question sets of corpus/friends_questions.py, the prompt's domain line and the season/episode query filter.

Query filters ("in season 8", "season eight", "episode 16", "S08E16", "s8 e16"): words like "season 8" carry no
lexical or semantic signal a retriever can use (every scene of season 8 is as "season 8" as any other), yet a user
who writes them means a filter. The pipeline searches only the scenes whose metadata has that `season` / `episode`
(inside the index, as any metadata filter: docs/filters.md); when no scene matches, it searches without it and
says so in the trace.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragfunnel.corpus.base import Domain, PromptExample, QuestionLoader
from ragfunnel.corpus.friends_questions import FRIENDS_SETS, load_friends_set
from ragfunnel.errors import CorpusError
from ragfunnel.types import Document, Unit

CORPUS_FILE = "friends_corpus.jsonl.gz"
EMORY_GLOB = "friends_season_*.json"
_SCENE_ID = re.compile(r"^s(\d+)_e(\d+)_c(\d+)$")

FRIENDS_DOMAIN = Domain(
    line="about the TV show Friends", sources="scene transcripts", off_topic="the question is not about Friends",
    said_by="something a character said", source_kind="scene", refusal="I don't know based on the provided scenes.",
    example=PromptExample(
        Document("s03_e02_c04", "The One Where No One's Ready", (
            Unit("s03_e02_c04_u001", "Where's Chandler?", ("Monica Geller",)),
            Unit("s03_e02_c04_u002", "He went to the airport to pick up Janice.", ("Ross Geller",)),
        ), {"label": "S03E02, Scene 4"}),
        "Who did Chandler pick up at the airport?",
        "Chandler picked up Janice.",
        "Ross Geller: He went to the airport to pick up Janice.",
    ),
    refusal_example=PromptExample(
        Document("s02_e07_c03", "The One Where Ross Finds Out", (
            Unit("s02_e07_c03_u001", "I got a part in a play!", ("Joey Tribbiani",)),
        ), {"label": "S02E07, Scene 3"}),
        "What is the largest ocean on Earth?",
    ),
)


def is_friends_collection(settings: Any) -> bool:
    """Whether `settings` name the built-in Friends collection: its own index build, training recipes and bundled
    question sets (a folder or BEIR collection brings its own questions)."""
    return is_builtin_collection(settings.collection)


def is_builtin_collection(name: str) -> bool:
    """Whether the collection `name` is the built-in Friends one, which is indexed from the corpus data rather than
    from a user's folder, and keeps the home's own `index/` and `models/` (it is older than collections)."""
    return name == FriendsCorpus.name


class FriendsCorpus:
    """The Friends corpus in `path`: a folder (JSONL preferred, else Emory's season files) or one corpus file; the
    question sets are read from the folder (a file's folder)."""

    name = "friends"
    domain = FRIENDS_DOMAIN
    # the router's labelled questions (bench/query/route_examples.py writes them)
    route_examples: Path | None = Path(__file__).with_name("friends_route_examples.tsv")
    # the evidence selector and the extractive reader trained on FriendsQA for the default index (`ragfunnel train
    # evidence`, `ragfunnel train reader`), so a fresh install answers without training them
    trained_models: Path | None = Path(__file__).with_name("friends_models")

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()

    @property
    def questions_dir(self) -> Path:
        return self.path if self.path.is_dir() or not self.path.suffix else self.path.parent

    def documents(self) -> Iterator[Document]:
        return iter(load_friends(self.path))

    def located_documents(self) -> Iterator[tuple[Document, str]]:
        """Each scene with where it is ("file, line 12"): for checks that name places (duplicate ids)."""
        return iter(load_friends(self.path, located=True))

    def question_sets(self) -> Mapping[str, QuestionLoader]:
        return {name: (lambda name=name: load_friends_set(name, self.questions_dir)) for name in FRIENDS_SETS}

    def citation_label(self, doc: Document, units: Sequence[Unit] = ()) -> str:
        return doc.label  # the scene: its lines are listed beside the citation

    def query_filter(self, question: str) -> dict[str, Any] | None:
        return parse_season_episode(question)


def scene_label(season: int, episode: int, scene: int) -> str:
    return f"S{season:02d}E{episode:02d}, Scene {scene}"


def load_friends(path: str | Path, located: bool = False) -> list[Any]:
    """Load a Friends corpus from a file or a directory (JSONL preferred, else Emory season JSON files); with
    `located`, (document, "file, line N") pairs."""
    path = Path(path).expanduser()
    if path.is_dir():
        for name in (CORPUS_FILE, "friends_corpus.jsonl"):
            if (path / name).is_file():
                return list(iter_jsonl_scenes(path / name, located))
        seasons = sorted(path.glob(EMORY_GLOB))
        if seasons:
            return [doc for f in seasons for doc in iter_emory_scenes(f, located)]
        raise CorpusError(
            f"{path}: no Friends corpus here (expected {CORPUS_FILE} or {EMORY_GLOB}). "
            "Point --data at ../shared/data/friends or run `ragfunnel data friends` to download Emory's files."
        )
    if not path.exists():
        raise CorpusError(f"{path}: corpus file not found")
    if path.name.endswith((".jsonl", ".jsonl.gz")):
        return list(iter_jsonl_scenes(path, located))
    if path.suffix == ".json":
        return list(iter_emory_scenes(path, located))
    raise CorpusError(f"{path}: unknown corpus format (expected .jsonl, .jsonl.gz or Emory's .json)")


def _open_text(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def iter_jsonl_scenes(path: Path, located: bool = False) -> Iterator[Any]:
    """Our JSONL: `{"scene_id", "season", "episode", "scene", "episode_title", "utterances": [...]}` a line. With
    `located`: (document, "file, line N")."""
    try:
        with _open_text(path) as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    doc = _scene_from_record(record)
                except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
                    raise CorpusError(f"{path}, line {lineno}: not a valid scene record ({_why(exc)})") from None
                yield (doc, f"{path}, line {lineno}") if located else doc
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: cannot read ({exc})") from None


def iter_emory_scenes(path: Path, located: bool = False) -> Iterator[Any]:
    """Emory character-mining season file: `{"season_id", "episodes": [{"episode_id", "scenes": [...]}]}`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path}, line {exc.lineno}: invalid JSON ({exc.msg})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: cannot read ({exc})") from None
    try:
        episodes = data["episodes"]
        for e, episode in enumerate(episodes, 1):
            for n, scene in enumerate(episode["scenes"], 1):
                doc = _scene_from_record(scene)
                yield (doc, f"{path}, episode {e}, scene {n}") if located else doc
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorpusError(f"{path}: not an Emory season file ({_why(exc)})") from None


def _why(exc: Exception) -> str:
    return f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)


def _scene_from_record(record: dict[str, Any]) -> Document:
    if not isinstance(record, dict):
        raise ValueError(f"a scene must be an object, not {type(record).__name__}")
    scene_id = _text(record["scene_id"], "scene_id")
    match = _SCENE_ID.match(scene_id)
    if not match:
        raise ValueError(f"scene_id {scene_id!r} is not of the form sSS_eEE_cCC")
    season, episode, scene = (int(g) for g in match.groups())
    if not isinstance(record["utterances"], list):
        raise ValueError(f"field 'utterances' must be a list, not {type(record['utterances']).__name__}")
    units = tuple(_unit_from_record(u) for u in record["utterances"])
    title = _text(record.get("episode_title") or "", "episode_title")
    return Document(
        doc_id=scene_id,
        title=title,
        units=units,
        metadata={
            "season": int(record.get("season", season)),
            "episode": int(record.get("episode", episode)),
            "scene": int(record.get("scene", scene)),
            "episode_title": title,
            "label": scene_label(season, episode, scene),
        },
    )


def _text(value: Any, field: str) -> str:
    """A string field of a record: text that can be written as UTF-8 (no lone surrogate, as a JSON `\\udcff` escape
    gives), else a ValueError naming the field."""
    if not isinstance(value, str):
        raise ValueError(f"field {field!r} must be a string, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"field {field!r} holds a lone surrogate (\\u{ord(value[exc.start]):04x}) at character "
                         f"{exc.start}: not valid text") from None
    return value


def _unit_from_record(u: dict[str, Any]) -> Unit:
    if not isinstance(u, dict):
        raise ValueError(f"an utterance must be an object, not {type(u).__name__}")
    uid = _text(u["utterance_id"], "utterance_id")
    raw = u.get("speakers") or ()
    if isinstance(raw, str):  # a string would become one speaker per character
        raise ValueError(f"field 'speakers' of utterance {uid} must be a list of names, not a string ({raw[:40]!r})")
    if not isinstance(raw, (list, tuple)):
        raise ValueError(f"field 'speakers' of utterance {uid} must be a list of names, not {type(raw).__name__}")
    speakers = tuple(_text(name, f"speakers of {uid}") for name in raw)
    text = _text(u.get("transcript") or u.get("transcript_with_note") or "", f"transcript of {uid}")
    # Emory marks action notes by an empty speaker list; our JSONL says so explicitly.
    is_direction = bool(u.get("stage_direction", not speakers))
    return Unit(unit_id=uid, text=text, speakers=speakers, is_direction=is_direction)


_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20,
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10,
}
_NUM = r"(\d{1,2}|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"
_CODE = re.compile(r"\bs(\d{1,2})\s*e(\d{1,2})\b", re.IGNORECASE)  # S08E16, s8 e16
_SEASON = re.compile(rf"\bseason\s+{_NUM}\b|\b{_NUM}[\s-]+season\b|\bs(\d{{1,2}})\b", re.IGNORECASE)  # season 8, eighth season, first-season, S8
_EPISODE = re.compile(rf"\bepisode\s+{_NUM}\b", re.IGNORECASE)
LAST_SEASON = 10  # the corpus's seasons: "the final season", "the last season" is the tenth
_LAST_SEASON = re.compile(r"\b(?:final|last)\s+season\b", re.IGNORECASE)


def _number(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBER_WORDS[text.lower()]


def parse_season_episode(question: str) -> dict[str, int] | None:
    """The season and/or episode a question names (`{"season": 8, "episode": 16}`), or None."""
    code = _CODE.search(question)
    if code:
        return {"season": int(code.group(1)), "episode": int(code.group(2))}
    season = _SEASON.search(question)
    last = _LAST_SEASON.search(question)
    episode = _EPISODE.search(question)
    if not season and not last and not episode:
        return None
    wanted = {}
    if season:
        wanted["season"] = _number(next(g for g in season.groups() if g))
    elif last:
        wanted["season"] = LAST_SEASON
    if episode:
        wanted["episode"] = _number(episode.group(1))
    return wanted

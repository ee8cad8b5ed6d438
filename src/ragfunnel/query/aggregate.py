"""The aggregation path: exhaustive, not top-k.

"In which scenes does Ross say 'we were on a break'?", "How many times does Joey say 'How you doin''?", "Name every
episode where Ugly Naked Guy is mentioned": the answer is spread over 5-70 scenes, more than any top-k holds. So:

1. `parse_aggregate` reads the question: the phrase (quoted words, or the thing "mentioned" / "talked about"), the
   speaker ("does Ross say"), whether scenes or episodes are listed and what is counted ("how many times" counts
   lines, "how many scenes" scenes);
2. `Aggregator.run` enumerates every line that matches, from the index: the sparse index's exhaustive conjunction
   (`Store.match_sparse`, every unit holding all the phrase's terms, inside the metadata filter) checked line by
   line — a quoted phrase must appear word for word (case, punctuation and g-dropping ignored: doin' = doing), a
   mentioned thing as its analysed terms in a row (stems: dinosaur = dinosaurs), the speaker among the line's
   speakers; optionally (`dense_min_similarity`) lines whose vector is that close to the phrase (paraphrases);
3. groups the lines by scene or by episode; every item cites its own lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ragfunnel.embedding import Encoder
from ragfunnel.schema import ItemCitation, ListItem
from ragfunnel.store.base import Store
from ragfunnel.store.filters import Filter
from ragfunnel.types import Chunk, Document, Unit

UNIT_VIEW = "utt"
MAX_QUOTES_PER_ITEM = 12

_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|‘([^’]+)’|(?<![\w])'(.+?)'(?![\w])")
_NAME = r"(?P<name>[A-Z][\w.'-]*(?:\s+(?:[A-Z][\w.'-]*|Jr\.|Sr\.)){0,2})"
_SAY = r"(?:ever\s+)?(?:say|said|says|saying|tell|tells|yell|yells|shout|shouts|scream|screams|use|uses|sing|sings|call|calls|mention|mentions|mentioning|talk|talks|talking|speak|speaks|speaking|ask|asks|have|has|having|appear|appears|show up|shows up)"
_SPEAKER_PATTERNS = (
    re.compile(rf"\b(?:does|did|do|has|have)\s+{_NAME}\s+{_SAY}\b"),
    re.compile(rf"\b{_NAME}\s+(?:says|said|saying|yells|shouts|mentions|mentioning|talks|talking|speaks|speaking|sings|singing|uses|asks|calls|appears|shows up)\b"),
    re.compile(rf"\blines\s+(?:does|did)\s+{_NAME}\s+(?:have|say|speak)\b"),
    re.compile(rf"\b(?:have|has|with|feature|features)\s+{_NAME}\s+(?:saying|talking|speaking|mentioning|in them)\b"),
)
_NOT_NAMES = {"which", "what", "how", "in", "list", "name", "every", "each", "all", "find", "show", "give", "count",
              "where", "when", "who", "does", "did", "the", "a", "i", "season", "episode", "scene", "tell", "someone",
              "anyone", "anybody", "somebody", "everyone", "name", "number", "enumerate"}
_SPEAKS_ONLY = re.compile(r"\b(?:appear|appears|show up|shows up|speak|speaks|speaking|talk|talks|talking|have lines|lines)\b(?!\s+about)", re.I)
_MENTION_PATTERNS = (
    re.compile(r"\b(?:is|are|was|were|gets?|got)\s+(?P<x>.+?)\s+(?:mentioned|brought up|talked about)\b", re.I),
    re.compile(r"\b(?:where|when|in which)\s+(?P<x>.+?)\s+(?:comes?|came|coming)\s+up\b", re.I),
    re.compile(r"\bwhere\s+(?P<x>.+?)\s+(?:is|are|was|were|gets?|got)\s+(?:mentioned|brought up|talked about)\b", re.I),
    re.compile(r"\b(?:mentions of|mention of|mentioning|mentioned|mentions|mention)\s+(?P<x>.+?)(?=$|[?.!,]|\s+(?:in|during|from|of)\s+(?:season|episode|s\d))", re.I),
    re.compile(r"\b(?:talks?|talked|talking)\s+about\s+(?P<x>.+?)(?=$|[?.!,]|\s+(?:in|during|from|of)\s+(?:season|episode|s\d))", re.I),
    re.compile(r"\bthe (?:word|name|phrase)\s+(?P<x>\w[\w' -]*?)(?=$|[?.!,]|\s+(?:come|comes|came|in|is|was)\b)", re.I),
)
_NUMBER = r"(?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty)"
_CONSTRAINT = re.compile(rf"\b(?:in|of|from|during)?\s*(?:season|episode)\s+{_NUMBER}\b|\b(?:in|of|from|during)?\s*(?:the\s+)?(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)\s+season\b|\bs\d{{1,2}}\s*e\d{{1,2}}\b", re.I)
_ABBREVIATION = re.compile(r"\b(Mr|Mrs|Ms|Dr|Jr|Sr)\.")
_COUNT = re.compile(r"\bhow (?:many|often|frequently)\b|\bcount\b|\bnumber of\b", re.I)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class AggregateQuery:
    """What an aggregation question asks for, as read from it."""

    phrase: str | None  # the words a line must hold
    exact: bool  # True: the phrase word for word (quoted); False: its analysed terms in a row (a thing mentioned)
    speakers: tuple[str, ...] = ()  # a line's speakers must include one of these names
    group: str = "scene"  # scene | episode: what the items are
    count: str | None = None  # lines | scenes | episodes: what "how many" counts; None when no number is asked

    def describe(self) -> str:
        parts = []
        if self.speakers:
            parts.append(f"spoken by {' or '.join(self.speakers)}")
        if self.phrase:
            parts.append(f"{'saying' if self.exact else 'mentioning'} {self.phrase!r}")
        return f"lines {' '.join(parts) or '(nothing to look for)'}, by {self.group}" + (
            f", counting {self.count}" if self.count else "")

    def to_dict(self) -> dict[str, Any]:
        return {"phrase": self.phrase, "exact": self.exact, "speakers": list(self.speakers), "group": self.group,
                "count": self.count}


def parse_aggregate(question: str) -> AggregateQuery:
    """Read the phrase, speaker, grouping and count of an aggregation question (rules; see the module doc)."""
    q = " ".join(question.split())
    quoted = next((next(g for g in m.groups() if g) for m in _QUOTED.finditer(q)), None)
    unquoted = _ABBREVIATION.sub(r"\1", _QUOTED.sub(" ", q))
    speakers: list[str] = []
    for pattern in _SPEAKER_PATTERNS:
        for m in pattern.finditer(unquoted):
            name = _clean_name(m.group("name"))
            if name and name not in speakers:
                speakers.append(name)
    phrase, exact = (quoted.strip(" .,!?"), True) if quoted else (None, False)
    if phrase is None:
        for pattern in _MENTION_PATTERNS:
            m = pattern.search(unquoted)
            if m:
                x = _CONSTRAINT.sub(" ", m.group("x"))
                x = re.sub(r"^(?:the|a|an|his|her|their|my|your|our)\s+", "", x.strip(" .,!?"), flags=re.I).strip()
                if x and x.lower() not in ("it", "that", "this", "them"):
                    phrase = x
                    break
    if phrase is None and not speakers:
        # "Which episodes have Gunther in them?": a name alone is a mention
        m = re.search(rf"\b(?:have|has|with|feature|features)\s+{_NAME}", unquoted)
        if m and _clean_name(m.group("name")):
            phrase = _clean_name(m.group("name"))
    if phrase is not None and speakers and not quoted and any(phrase.lower() == s.lower() for s in speakers):
        phrase = None  # "does Janice appear": the name is the speaker, not a mention
    body = _CONSTRAINT.sub(" ", unquoted)
    group = "episode" if re.search(r"\bepisodes?\b", body, re.I) else "scene"
    count = None
    if _COUNT.search(q):
        if re.search(r"\bhow many (?:different\s+)?scenes\b|\bnumber of scenes\b|\bin how many scenes\b", q, re.I):
            count = "scenes"
        elif re.search(r"\bhow many (?:different\s+)?episodes\b|\bnumber of episodes\b|\bin how many episodes\b", q, re.I):
            count = "episodes"
        else:
            count = "lines"
    return AggregateQuery(phrase, exact, tuple(speakers), group, count)


def _clean_name(name: str) -> str | None:
    words = name.split()
    while words and words[0].lower().strip(".") in _NOT_NAMES:
        words = words[1:]
    while words and words[-1].lower().strip(".") in _NOT_NAMES:
        words = words[:-1]
    if not words:
        return None
    return re.sub(r"'s$", "", " ".join(words))


_POSSESSIVE = re.compile(r"'s\b")
_SPOKEN = {"ya": "you"}  # transcripts spell speech: "how ya doin'" is "how you doing"
_TITLES = ("mr", "mrs", "ms", "dr", "miss")


def normalise_words(text: str) -> list[str]:
    """Lower-cased words, possessives and apostrophes dropped, g-dropping undone (doin' -> doing), "ya" read as
    "you": how phrases are matched."""
    low = _POSSESSIVE.sub("", text.lower().replace("’", "'")).replace("'", "")
    words = [_SPOKEN.get(w, w) for w in _WORD.findall(low)]
    return [w + "g" if w.endswith("in") and len(w) >= 4 else w for w in words]


def _contains(haystack: list[str], needle: list[str], plural: bool = False) -> bool:
    """`needle` as consecutive words of `haystack`; `plural`: a word also matches with an added s / es
    (dinosaur ~ dinosaurs)."""
    n = len(needle)
    if n == 0:
        return False
    if not plural:
        return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))
    return any(all(h == w or h in (w + "s", w + "es") or w in (h + "s", h + "es") for h, w in zip(haystack[i:i + n], needle))
               for i in range(len(haystack) - n + 1))


def phrase_forms(query: AggregateQuery) -> list[list[str]]:
    """The word sequences a line may hold: the phrase, and for a mention that starts with a title, the rest of it
    ("Mr. Heckles" is mostly just "Heckles")."""
    if not query.phrase:
        return []
    words = normalise_words(query.phrase)
    forms = [words]
    if not query.exact and len(words) > 1 and words[0] in _TITLES:
        forms.append(words[1:])
    return forms


def speaker_matches(unit: Unit, names: tuple[str, ...]) -> bool:
    """A line's speakers include one of `names` (a name matches a speaker's full name or any word of it:
    "Ross" matches "Ross Geller")."""
    for speaker in unit.speakers:
        low = speaker.lower()
        words = set(low.replace(".", " ").split())
        for name in names:
            n = name.lower()
            if n == low or (n.replace(".", " ").split() and set(n.replace(".", " ").split()) <= words):
                return True
    return False


@dataclass(frozen=True)
class Match:
    doc_id: str
    label: str  # the parent's citation label
    unit_id: str
    line: str  # rendered: "Speaker: words"
    how: str  # phrase | speaker | dense
    score: float = 1.0


@dataclass
class AggregateItem:
    key: str  # the scene id, or the episode key (s01_e05)
    label: str
    title: str
    matches: list[Match] = field(default_factory=list)


@dataclass
class AggregateResult:
    query: AggregateQuery
    items: list[AggregateItem]
    lines: int  # matching lines in all
    scenes: int
    episodes: int
    notes: list[str] = field(default_factory=list)
    enumerated: int = 0  # index matches checked line by line

    @property
    def count(self) -> int | None:
        """The number asked for: lines, scenes or episodes; None when the question asks for a list."""
        if self.query.count is None:
            return None
        return {"lines": self.lines, "scenes": self.scenes, "episodes": self.episodes}[self.query.count]

    def answer(self) -> str:
        q = self.query
        what = q.describe()
        if not self.items:
            return f"No line matches ({what})."
        counted = f"{self.lines} line{'s' * (self.lines != 1)} in {self.scenes} scene{'s' * (self.scenes != 1)}" + (
            f" of {self.episodes} episode{'s' * (self.episodes != 1)}" if q.group == "episode" or q.count == "episodes" else "")
        head = f"{self.count}: " if self.count is not None else ""
        return f"{head}{counted} ({what})."


def episode_key(doc: Document) -> str:
    season, episode = doc.metadata.get("season"), doc.metadata.get("episode")
    if season is None or episode is None:
        return doc.doc_id
    return f"s{int(season):02d}_e{int(episode):02d}"


def episode_label(doc: Document) -> str:
    season, episode = doc.metadata.get("season"), doc.metadata.get("episode")
    if season is None or episode is None:
        return doc.label
    return f"S{int(season):02d}E{int(episode):02d}"


class Aggregator:
    """Every line the question asks about, from the store; `dense_min_similarity` adds lines that close to the
    phrase by the encoder (None: off)."""

    def __init__(self, store: Store, encoder: Encoder | None = None, view: str = UNIT_VIEW,
                 dense_min_similarity: float | None = None, dense_limit: int = 1000):
        self.store, self.encoder, self.view = store, encoder, view
        self.dense_min_similarity, self.dense_limit = dense_min_similarity, dense_limit

    def run(self, query: AggregateQuery, where: Filter | None = None) -> AggregateResult:
        notes: list[str] = []
        if query.phrase is None and not query.speakers:
            return AggregateResult(query, [], 0, 0, 0, ["could not read a phrase or a speaker to look for in the "
                                                        "question: quote the words, e.g. 'which scenes does Ross say \"hi\"'"])
        if self.view not in self.store.settings.sparse_views:
            return AggregateResult(query, [], 0, 0, 0, [f"this index has no BM25 view {self.view!r} of single units to "
                                                        "enumerate from"])
        chunk_ids = self._enumerate(query, where, notes)
        chunks = self.store.chunks(chunk_ids)
        forms = phrase_forms(query)
        docs: dict[str, Document | None] = {}
        matches: dict[str, Match] = {}
        for chunk in chunks:
            doc = docs.setdefault(chunk.doc_id, self.store.document(chunk.doc_id))
            if doc is None or (where is not None and not where.matches_document(doc.doc_id, doc.metadata)):
                continue
            for unit in doc.units[chunk.start:chunk.end]:
                if unit.unit_id in matches or not self._unit_matches(unit, query, forms):
                    continue
                if where is not None and not where.matches_unit(unit):
                    continue
                matches[unit.unit_id] = Match(doc.doc_id, doc.label, unit.unit_id, unit.render(),
                                              "phrase" if query.phrase else "speaker")
        if self.dense_min_similarity is not None and query.phrase and self.encoder is not None:
            added = self._dense(query, where, matches, docs)
            notes.append(f"{added} line(s) added by similarity >= {self.dense_min_similarity}")
        return self._group(query, list(matches.values()), docs, notes, len(chunks))

    def _enumerate(self, query: AggregateQuery, where: Filter | None, notes: list[str]) -> list[str]:
        """Every unit the index says may match: those holding all the terms of the phrase (and, for a quoted
        phrase, of its normalised form: doin' -> doing); where a form has no indexed term (stopwords only: "how you
        doing"), the speaker's lines (a line's text starts with its speaker's name); without a speaker, every unit."""
        forms = [query.phrase] if query.phrase else []
        forms += [" ".join(words) for words in phrase_forms(query)]
        found: set[str] = set()
        blind = not forms
        for form in dict.fromkeys(forms):
            if self.store.analyze(form):
                found.update(self.store.match_sparse(self.view, form, where=where))
            else:
                blind = True
        if blind and query.speakers and all(self.store.analyze(name) for name in query.speakers):
            for name in query.speakers:
                found.update(self.store.match_sparse(self.view, name, where=where))
        elif blind:
            notes.append(f"{query.phrase!r} has no indexed term: checked every line")
            found.update(c.chunk_id for c in self.store.view_chunks(self.view))
        return sorted(found)

    def _unit_matches(self, unit: Unit, query: AggregateQuery, forms: list[list[str]]) -> bool:
        """The speaker, and the phrase word for word (quoted) or with plurals allowed (a mention)."""
        if query.speakers and not speaker_matches(unit, query.speakers):
            return False
        if not forms:
            return query.phrase is None
        words = normalise_words(unit.text)
        return any(_contains(words, form, plural=not query.exact) for form in forms)

    def _dense(self, query: AggregateQuery, where: Filter | None, matches: dict[str, Match],
               docs: dict[str, Document | None]) -> int:
        assert self.encoder is not None and query.phrase is not None and self.dense_min_similarity is not None
        vector = self.encoder.encode([query.phrase])[0]
        hits = self.store.search_dense(self.view, vector, self.dense_limit, exact=True, where=where)
        added = 0
        for chunk_id, score in hits:
            if score < self.dense_min_similarity:
                break
            doc_id = Chunk.parent_of(chunk_id)
            doc = docs.setdefault(doc_id, self.store.document(doc_id))
            chunk = next(iter(self.store.chunks([chunk_id])), None)
            if doc is None or chunk is None:
                continue
            for unit in doc.units[chunk.start:chunk.end]:
                if unit.unit_id in matches or unit.is_direction:
                    continue
                if query.speakers and not speaker_matches(unit, query.speakers):
                    continue
                matches[unit.unit_id] = Match(doc_id, doc.label, unit.unit_id, unit.render(), "dense", round(score, 4))
                added += 1
        return added

    def _group(self, query: AggregateQuery, matches: list[Match], docs: dict[str, Document | None],
               notes: list[str], enumerated: int) -> AggregateResult:
        items: dict[str, AggregateItem] = {}
        scenes: set[str] = set()
        episodes: set[str] = set()
        for m in sorted(matches, key=lambda m: m.unit_id):
            doc = docs[m.doc_id]
            assert doc is not None
            scenes.add(doc.doc_id)
            episodes.add(episode_key(doc))
            if query.group == "episode":
                key, label, title = episode_key(doc), episode_label(doc), str(doc.metadata.get("episode_title") or doc.title)
            else:
                key, label, title = doc.doc_id, doc.label, doc.title
            items.setdefault(key, AggregateItem(key, label, title)).matches.append(m)
        return AggregateResult(query, sorted(items.values(), key=lambda i: i.key), len(matches), len(scenes),
                               len(episodes), notes, enumerated)


def list_items(result: AggregateResult, max_quotes: int = MAX_QUOTES_PER_ITEM) -> list[ListItem]:
    """The items in the result schema: each scene or episode with its own citations (its first `max_quotes` lines)."""
    return [
        ListItem(id=item.key, text=f"{item.label} — {item.title}" if item.title else item.label, matches=len(item.matches),
                 citations=[ItemCitation(id=m.doc_id, label=m.label, quote=m.line, unit_ids=[m.unit_id], how=m.how)
                            for m in item.matches[:max_quotes]])
        for item in result.items
    ]

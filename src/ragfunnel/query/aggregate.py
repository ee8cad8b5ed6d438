"""The aggregation path: exhaustive, not top-k.

"In which scenes does Ross say 'we were on a break'?", "How many times does Joey say 'How you doin''?", "Name every
episode where Ugly Naked Guy is mentioned", "Which documents mention the warranty?": the answer is spread over 5-70
parents, more than any top-k holds. So:

1. `ListQuestionReader.read` (query/list_question.py) reads the question against the index: the target (quoted
   words, else the longest part of the question's own words that some line holds: "the Geller Cup by name" -> Geller
   Cup), the speaker (resolved to the collection's speakers: Pete Becker -> Peter Becker), what is asked of the target
   (`speaks`, `mentions`, `setting`, `together`), whether scenes, episodes or documents are listed and what is counted;
2. `Aggregator.run` enumerates every line that matches, from the index: the sparse index's exhaustive conjunction
   (`Store.match_sparse`, every unit holding all the target's terms, inside the metadata filter) checked line by
   line — a quoted phrase word for word (case, punctuation and g-dropping ignored: doin' = doing), a mentioned thing
   as its words in a row, each also as its plural, another inflection or the action's name (adoption ~ adopted)
   that the bundled encoder agrees is the same word
   (dinosaur = dinosaurs, scarf = scarves, golf = golfing, but kids != kidding) in any of the spellings the index holds, the
   speaker among the line's speakers, a place in the heading that opens a scene ("[Scene: Central Perk, ...]"), two
   targets in one scene; optionally (`dense_min_similarity`) lines whose vector is that close to the phrase;
3. groups the lines by scene (a folder's document) or by episode; every item cites its own lines.

When nothing matches (or the question names nothing the index holds), the pipeline answers with the ranked list
instead and says so (`exhaustive` false): pipeline.Pipeline.search.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from ragfunnel.corpus.base import passage_label
from ragfunnel.embedding import Encoder
from ragfunnel.query.vocabulary import SameWord, contains, normalise_words, other_plurals, term_indexed, without_restored_g
from ragfunnel.schema import ItemCitation, ListItem
from ragfunnel.store.base import Store
from ragfunnel.store.filters import Filter
from ragfunnel.types import Chunk, Document, Unit

UNIT_VIEW = "utt"
MAX_QUOTES_PER_ITEM = 12
_TITLES = ("mr", "mrs", "ms", "dr", "miss")
_HEADING = re.compile(r"^\W*[A-Za-z][A-Za-z .]{0,20}:\s*")  # "[Scene: " opening a scene's first stage direction
_PLACE_END = re.compile(r",|\]|\)|(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)\.(?:\s|$)")

__all__ = ["AggregateQuery", "AggregateResult", "Aggregator", "list_items", "normalise_words", "unit_view"]


@dataclass(frozen=True)
class AggregateQuery:
    """What an aggregation question asks for, as read from it."""

    phrase: str | None  # the words a line must hold (the first target)
    exact: bool  # True: the phrase word for word (quoted); False: its words in a row, in other forms (mentioned)
    speakers: tuple[str, ...] = ()  # a line's speakers must include one of these names
    group: str = "scene"  # scene | episode: what the items are
    count: str | None = None  # lines | scenes | episodes: what "how many" counts; None when no number is asked
    relation: str = "mentions"  # speaks | mentions | setting | together (query/list_question.py)
    others: tuple[str, ...] = ()  # together: the other targets that must be in the same scene
    forms: tuple[tuple[tuple[str, ...], ...], ...] = ()  # per target: the word sequences that count (spellings)
    named: tuple[tuple[str, Any], ...] = ()  # metadata values the question names by a title ("in The One with ...")
    # setting: the place is someone's home ("Chandler and Joey's apartment"), or any of a few names of it ("(also
    # called Monica's)"): per name its owners' names in lower case; a heading counts when it opens with the owners of
    # one of them, in any order, and names nothing else (`home_heading`)
    owners: tuple[tuple[str, ...], ...] = ()
    # setting read from words that only name the scenes ("basement scenes", no "set in" / "take place"): when one
    # scene only is set there and more mention it, the scenes that mention it are what is asked (`Aggregator.run`)
    setting_implied: bool = False
    # what the question leaves out of the first target ("soda, not baking soda"): a line counts only where the target
    # stands outside these word sequences
    excluded: tuple[tuple[str, ...], ...] = ()
    punctuation: str = ""  # a quote's "!" that must follow its words in a line ("I know!": the exclamation)
    # False: a mentioned word counts with a plural s but in no other inflection ("say the word marry": not "married")
    inflections: bool = True
    reading: Any = field(default=None, compare=False, hash=False)  # what the reader saw (list_question.ListReading)

    def describe(self) -> str:
        named = " in " + " ".join(f"{k} {v}" for k, v in self.named) if self.named else ""  # "in season 1 episode 15"
        return self._described() + named

    def _described(self) -> str:
        parts = []
        if self.speakers:
            parts.append(f"spoken by {' or '.join(self.speakers)}")
        if self.relation == "setting" and self.phrase:
            return f"scenes whose heading places them at {self.phrase!r}, by {self.group}" + (
                f", counting {self.count}" if self.count else "")
        if self.phrase and self.exact and self.forms and len(self.forms[0]) > 1:  # quotes joined by "or"
            parts.append("saying " + " or ".join(repr(" ".join(f)) for f in self.forms[0]))
        elif self.phrase:
            parts.append(f"{'saying' if self.exact else 'mentioning'} {self.phrase!r}"
                         + ("" if self.exact or self.inflections else " (the word, or its plural)"))
        if self.punctuation:
            parts.append(f"followed by {self.punctuation!r}")
        if self.excluded:
            parts.append("not as " + " or ".join(repr(" ".join(e)) for e in self.excluded))
        if self.others:
            parts.append("in a scene that also mentions " + " and ".join(repr(o) for o in self.others))
        spellings = sorted({" ".join(f) for f in self.target_forms(0)} - {" ".join(normalise_words(self.phrase or ""))})
        if spellings and not self.exact:
            parts.append(f"(also as {', '.join(repr(s) for s in spellings)})")
        return f"lines {' '.join(parts) or '(nothing to look for)'}, by {self.group}" + (
            f", counting {self.count}" if self.count else "")

    def target_forms(self, i: int) -> list[list[str]]:
        """The word sequences that count as target `i` (0: the phrase; 1...: the others)."""
        if i < len(self.forms) and self.forms[i]:
            return [list(f) for f in self.forms[i]]
        text = self.phrase if i == 0 else self.others[i - 1]
        if not text:
            return []
        words = normalise_words(text)
        forms = [words]
        if not self.exact and len(words) > 1 and words[0] in _TITLES:
            forms.append(words[1:])  # "Mr. Heckles" is mostly just "Heckles"
        return forms

    def to_dict(self) -> dict[str, Any]:
        out = {"phrase": self.phrase, "exact": self.exact, "speakers": list(self.speakers), "group": self.group,
               "count": self.count, "relation": self.relation, "others": list(self.others),
               "forms": [[" ".join(f) for f in self.target_forms(i)] for i in range(1 + len(self.others))]}
        if self.named:
            out["named"] = dict(self.named)
        if self.punctuation:
            out["punctuation"] = self.punctuation
        if self.owners:
            out["owners"] = [" and ".join(o) for o in self.owners]
        if self.excluded:
            out["excluded"] = [" ".join(e) for e in self.excluded]
        if self.reading is not None:
            out["reading"] = {"masked": self.reading.masked, "targets": self.reading.targets,
                              "people": self.reading.people, "subject": self.reading.subject,
                              "relation_scores": {k: round(v, 3) for k, v in self.reading.relation_scores.items()}}
        return out


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


HOME_PARTS = frozenset({"apartment", "apartement", "apt", "place", "flat", "pad", "home", "bedroom", "room", "bathroom",
                        "kitchen", "balcony", "living", "hallway", "erm"})  # "erm": "[Scene: Monica and Chandler's, erm..."


def home_heading(place: list[str], homes: tuple[tuple[str, ...], ...]) -> bool:
    """A heading's place (normalised words) is one of `homes`: the home of exactly its owners (`owned_by`)."""
    return any(owned_by(place, owners) for owners in homes)


def owned_by(place: list[str], owners: tuple[str, ...]) -> bool:
    """A heading's place (normalised words) is the home of exactly `owners`: their names first, in any order, joined
    by "and" ("the" aside), then nothing or a part of a home: "Chandler and Joey's", "Joey's apartment", "Monica and
    Chandler's bedroom"; not "Chandler and Joey's apartment" for Joey's, nor "Joey's office", "Phoebe's
    grandmother's place", "Monica and Chandler's new house"."""
    words = place[1:] if place[:1] == ["the"] else place
    names, i = words[:1], 1  # i: the word after the names read so far
    while len(names) < len(owners) and i + 1 < len(words) and words[i] in ("and", "&"):
        names.append(words[i + 1])
        i += 2
    rest = words[i:]
    return sorted(names) == sorted(owners) and (not rest or rest[0] in HOME_PARTS)


def _followed_by(text: str, form: list[str], mark: str) -> bool:
    """Whether the line says the form's words in a row followed by `mark` ("I KNOW!!" for "i know" and "!")."""
    words = r"[\W_]+".join(re.escape(w) for w in form)
    return re.search(rf"(?<![\w]){words}\s*{re.escape(mark)}", text, re.I) is not None


WILDCARD = "*"  # in a quote's form: one or two words of any kind ("could * be any more")


def matches_template(words: list[str], form: list[str]) -> bool:
    """`form` as consecutive words of `words`, each WILDCARD standing for one or two words."""
    pattern = " ".join(r"\S+(?: \S+)?" if w == WILDCARD else re.escape(w) for w in form)
    return re.search(rf"(?:^| ){pattern}(?: |$)", " ".join(words)) is not None


MAX_DRAWN = 5  # more times a drawn-out interjection writes its last letter ("ewww")


def drawn_out(word: str) -> re.Pattern[str] | None:
    """For a short word said as an interjection ("ew", "ugh", "no"), a pattern of it drawn out: its last letter
    repeated ("ewww", "ughhh", "nooo"; a letter inside repeated makes other words: mon ~ moon); None for a longer
    word. A word asked already drawn out ("noooo") is any of its drawn-out spellings (nooo, nooooo), not the plain
    word ("no")."""
    if not word.isalpha():
        return None
    plain = plain_of_drawn(word)
    if plain is not None:
        return re.compile(re.escape(plain) + f"{re.escape(plain[-1])}+")
    if len(word) > 3:
        return None
    return re.compile(re.escape(word[:-1]) + f"{re.escape(word[-1])}+")


_DRAWN = re.compile(r"([a-z]{1,2}?)([a-z])\2{2,}", re.I)  # "noooo": "n", then "o" three times or more


def plain_of_drawn(word: str) -> str | None:
    """The plain word a word drawn out writes ("noooo" -> "no", "ewww" -> "ew"); None for a word not drawn out."""
    drawn = _DRAWN.fullmatch(word)
    return drawn.group(1) + drawn.group(2) if drawn is not None else None


def drawn_forms(query: AggregateQuery, forms: list[list[str]]) -> list[tuple[str, re.Pattern[str]]]:
    """The one-word forms of a target that a line may draw out, with their patterns: every short one of a quote
    ("say 'ew'") or of a target whose forms are one interjection drawn out ("ew or ewww"); [] otherwise."""
    if not (query.exact or _drawn_alternatives(forms)):
        return []
    return [(f[0], pattern) for f in forms if len(f) == 1 and (pattern := drawn_out(f[0])) is not None]


def _drawn_alternatives(forms: list[list[str]]) -> bool:
    """Whether a target's forms are one interjection drawn out ("ew or ewww")."""
    short = [f[0] for f in forms if len(f) == 1 and drawn_out(f[0]) is not None]
    return any(a != b and drawn_out(a).fullmatch(b) for a in short for b in (f[0] for f in forms if len(f) == 1))  # type: ignore[union-attr]


def drawn_spellings(word: str) -> list[str]:
    """The drawn-out spellings of a short word, its last letter written up to MAX_DRAWN more times ("ew" -> eww,
    ewww, ...)."""
    if drawn_out(word) is None:
        return []
    plain = plain_of_drawn(word)
    if plain is not None:  # "noooo": noo, nooo, ...
        return [plain + plain[-1] * n for n in range(1, MAX_DRAWN + 2)]
    return [word + word[-1] * n for n in range(1, MAX_DRAWN + 1)]


def without_sequences(words: list[str], sequences: tuple[tuple[str, ...], ...]) -> list[str]:
    """`words` with every occurrence of each sequence (plurals allowed) blanked out, so that nothing inside it
    matches ("we have baking soda" without "baking soda" holds no "soda")."""
    out = list(words)
    for seq in sequences:
        n = len(seq)
        for i in range(len(words) - n + 1):
            if contains(words[i:i + n], list(seq), plural=True):
                out[i:i + n] = [""] * n
    return out


def heading_place(doc: Document, unit_index: int) -> str | None:
    """The place the heading of a scene names: the stage direction that opens it, "[Scene: PLACE, what happens]" ->
    PLACE (up to the first comma, bracket or full stop); None for any other line."""
    if unit_index != 0 or not doc.units or not doc.units[0].is_direction:
        return None
    text = doc.units[0].text.strip()
    m = _HEADING.match(text)
    if not m:
        return None
    return _PLACE_END.split(text[m.end():], 1)[0]


@dataclass(frozen=True)
class Match:
    doc_id: str
    label: str  # the parent's citation label (with the page and section of the line, for a file)
    unit_id: str
    line: str  # rendered: "Speaker: words"
    how: str  # phrase | speaker | heading | dense | ranked
    score: float = 1.0


@dataclass
class AggregateItem:
    key: str  # the scene id, or the episode key (s01_e05)
    label: str
    title: str
    matches: list[Match] = field(default_factory=list)
    score: float | None = None  # a ranked (not exhaustive) list: the parent's fused score


@dataclass
class AggregateResult:
    query: AggregateQuery
    items: list[AggregateItem]
    lines: int  # matching lines in all
    scenes: int
    episodes: int
    notes: list[str] = field(default_factory=list)
    enumerated: int = 0  # index matches checked line by line
    exhaustive: bool = True  # False: nothing matched exactly, the items are the ranked list instead
    parents: str = "scene"  # what a parent is called: scene (Friends) or document (a folder)
    why: str | None = None  # a ranked list: why (None: nothing matched exactly); an exact list that was too broad

    @property
    def count(self) -> int | None:
        """The number asked for: lines, scenes or episodes; None when the question asks for a list, and when the
        list is ranked (nothing was counted)."""
        if self.query.count is None or not self.exhaustive:
            return None
        return {"lines": self.lines, "scenes": self.scenes, "episodes": self.episodes}[self.query.count]

    def answer(self) -> str:
        q = self.query
        what = q.describe()
        if not self.exhaustive:
            why = self.why[:1].upper() + self.why[1:] if self.why else f"Nothing matched exactly ({what})"
            return (f"{why}: the {len(self.items)} best-ranked {self.parents}s instead "
                    "(a ranked list, not an exhaustive one" + (", so no count" if q.count else "") + ").")
        if not self.items:
            return f"No line matches ({what})."
        counted = f"{self.lines} line{'s' * (self.lines != 1)} in {self.scenes} {self.parents}{'s' * (self.scenes != 1)}" + (
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


def unit_view(store: Store) -> str | None:
    """The sparse view to enumerate lines from: single units (`utt`) where the index has them, else its finest view
    of several units (a folder's section chunks), whose units are read one by one; None with only whole parents."""
    views = store.settings.sparse_views
    if UNIT_VIEW in views:
        return UNIT_VIEW
    finer = [v for v in views if v != "scene"]
    return finer[0] if finer else None


class Aggregator:
    """Every line the question asks about, from the store; `dense_min_similarity` adds lines that close to the
    phrase by the encoder (None: off)."""

    def __init__(self, store: Store, encoder: Encoder | None = None, view: str | None = None,
                 dense_min_similarity: float | None = None, dense_limit: int = 1000, same_word: SameWord | None = None):
        self.store, self.encoder, self.view = store, encoder, view if view is not None else unit_view(store)
        self.dense_min_similarity, self.dense_limit = dense_min_similarity, dense_limit
        self.same_word = same_word if same_word is not None else SameWord(store)

    def run(self, query: AggregateQuery, where: Filter | None = None) -> AggregateResult:
        notes: list[str] = []
        if query.named:  # the episode the question names by its title
            where = Filter.combine(where, Filter.equal(dict(query.named)))
        if query.phrase is None and not query.speakers:
            return AggregateResult(query, [], 0, 0, 0, ["could not read a phrase or a speaker to look for in the "
                                                        "question: quote the words, e.g. 'which scenes does Ross say \"hi\"'"])
        if self.view is None or self.view not in self.store.settings.sparse_views:
            return AggregateResult(query, [], 0, 0, 0, ["this index has no BM25 view of single units or passages to "
                                                        "enumerate from"])
        docs: dict[str, Document | None] = {}
        enumerated = 0
        mentioned = None  # the mentions, when a setting read from the words alone fell back to them
        if query.relation == "setting":
            matches, enumerated = self._matching(query, 0, where, docs, notes, heading=True)
            if not matches:
                notes.append(f"no scene heading names {query.phrase!r}: listed the lines that mention it")
                query = replace(query, relation="mentions")
            elif query.setting_implied and len({m.doc_id for m in matches.values()}) == 1:
                mentions, said_notes = replace(query, relation="mentions"), []
                said, n = self._matching(mentions, 0, where, docs, said_notes)
                if len({m.doc_id for m in said.values()}) > 1:  # "basement scenes": one is set there, more mention it
                    notes.append(f"one scene only is set at {query.phrase!r}: listed the lines that mention it")
                    notes.extend(said_notes)
                    query, mentioned = mentions, (said, n)
        if mentioned is not None:
            matches, enumerated = mentioned
        elif query.relation != "setting":
            matches, enumerated = self._matching(query, 0, where, docs, notes)
        if query.relation == "together" and query.others:
            for i in range(1, len(query.others) + 1):
                also, n = self._matching(query, i, where, docs, notes)
                enumerated += n
                scenes = {m.doc_id for m in matches.values()} & {m.doc_id for m in also.values()}
                matches = {u: m for u, m in {**matches, **also}.items() if m.doc_id in scenes}
        if self.dense_min_similarity is not None and query.phrase and self.encoder is not None and query.relation == "mentions":
            added = self._dense(query, where, matches, docs)
            notes.append(f"{added} line(s) added by similarity >= {self.dense_min_similarity}")
        return self._group(query, list(matches.values()), docs, notes, enumerated)

    def _matching(self, query: AggregateQuery, target: int, where: Filter | None, docs: dict[str, Document | None],
                  notes: list[str], heading: bool = False) -> tuple[dict[str, Match], int]:
        """The lines that match target `target` of `query` (and its speaker), by unit id; and how many index chunks
        were read."""
        forms = query.target_forms(target)
        drawn = drawn_forms(query, forms)  # once per target, not per line
        excluded = query.excluded if target == 0 else ()
        chunk_ids = self._enumerate(query, forms, where, notes)
        chunks = self.store.chunks(chunk_ids)
        matches: dict[str, Match] = {}
        for chunk in chunks:
            if chunk.doc_id not in docs:  # each document read once (a common word matches thousands of its lines)
                docs[chunk.doc_id] = self.store.document(chunk.doc_id)
            doc = docs[chunk.doc_id]
            if doc is None or (where is not None and not where.matches_document(doc.doc_id, doc.metadata)):
                continue
            for index in range(chunk.start, chunk.end):
                unit = doc.units[index]
                if unit.unit_id in matches:
                    continue
                if heading:
                    place = heading_place(doc, index)
                    if place is None or not (home_heading(normalise_words(place), query.owners) if query.owners else
                                             any(contains(normalise_words(place), f, plural=True) for f in forms)):
                        continue
                elif not self._unit_matches(unit, query, forms, excluded, drawn):
                    continue
                if where is not None and not where.matches_unit(unit):
                    continue
                how = "heading" if heading else "phrase" if forms else "speaker"
                matches[unit.unit_id] = Match(doc.doc_id, passage_label(doc, [unit]), unit.unit_id, unit.render(), how)
        return matches, len(chunks)

    def _enumerate(self, query: AggregateQuery, forms: list[list[str]], where: Filter | None, notes: list[str]) -> list[str]:
        """Every unit the index says may match: those holding all the terms of a form of the target; where a form
        has no indexed term (stopwords only: "how you doing"), the speaker's lines (a line's text starts with its
        speaker's name); without a speaker, every unit."""
        assert self.view is not None
        texts = [" ".join(w for w in f if w != WILDCARD) for f in forms]
        # normalise_words gives "-in" words their g ("doin'" ~ "doing", but "muffin" -> "muffing"): look both up
        texts += [" ".join(map(without_restored_g, f)) for f in forms if list(map(without_restored_g, f)) != f]
        # the stemmer keeps "scarves" apart from "scarf": look the other plural up too
        texts += [" ".join(f[:i] + [plural] + f[i + 1:]) for f in forms for i, w in enumerate(f) for plural in other_plurals(w)]
        if query.exact and query.phrase:
            texts.insert(0, query.phrase)
        if (query.exact and query.phrase) or _drawn_alternatives(forms):
            # "ew" is also written "eww", "ewww": the drawn-out spellings the index holds
            texts += [w for f in forms if len(f) == 1 for w in drawn_spellings(f[0]) if term_indexed(self.store, self.view, w)]
        found: set[str] = set()
        blind = not texts
        for text in dict.fromkeys(texts):
            if self.store.analyze(text):
                found.update(self.store.match_sparse(self.view, text, where=where))
            else:
                blind = True
        if blind and query.speakers and all(self.store.analyze(name) for name in query.speakers):
            for name in query.speakers:
                found.update(self.store.match_sparse(self.view, name, where=where))
        elif blind:
            notes.append(f"{query.phrase!r} has no indexed term: checked every line")
            found.update(c.chunk_id for c in self.store.view_chunks(self.view))
        return sorted(found)

    def _unit_matches(self, unit: Unit, query: AggregateQuery, forms: list[list[str]],
                      excluded: tuple[tuple[str, ...], ...] = (), drawn: list[tuple[str, re.Pattern[str]]] | None = None) -> bool:
        """The speaker, and the target word for word (quoted) or in its other forms (a mention: `SameWord`)."""
        if query.speakers and not speaker_matches(unit, query.speakers):
            return False
        if not forms:
            return query.phrase is None
        if query.punctuation and not any(_followed_by(unit.text, form, query.punctuation) for form in forms):
            return False
        words = normalise_words(unit.text)
        for word, pattern in drawn or ():  # "say 'ew'", "saying ew / ewww": "Eww!", "Ewww" drawn out
            words = [word if pattern.fullmatch(w) else w for w in words]
        if excluded:  # "soda, not baking soda": the words of "baking soda" are no mention of soda
            words = without_sequences(words, excluded)
        return any(matches_template(words, form) if WILDCARD in form else
                   contains(words, form, plural=not query.exact, same=self.same_word if query.inflections else None)
                   for form in forms)

    def _dense(self, query: AggregateQuery, where: Filter | None, matches: dict[str, Match],
               docs: dict[str, Document | None]) -> int:
        assert self.encoder is not None and query.phrase is not None and self.dense_min_similarity is not None
        assert self.view is not None
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
                matches[unit.unit_id] = Match(doc_id, passage_label(doc, [unit]), unit.unit_id, unit.render(), "dense",
                                              round(score, 4))
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
                               len(episodes), notes, enumerated, parents=parent_noun(docs.values()))


def parent_noun(docs: Any) -> str:
    """What to call a parent in an answer: a scene when it has speakers' lines, else a document."""
    for doc in docs:
        if doc is not None:
            return "scene" if any(u.speakers for u in doc.units) else "document"
    return "scene"


def list_items(result: AggregateResult, max_quotes: int = MAX_QUOTES_PER_ITEM) -> list[ListItem]:
    """The items in the result schema: each scene or episode with its own citations (its first `max_quotes` lines)."""
    return [
        ListItem(id=item.key, text=f"{item.label} — {item.title}" if item.title else item.label, matches=len(item.matches),
                 score=item.score,
                 citations=[ItemCitation(id=m.doc_id, label=m.label, quote=m.line, unit_ids=[m.unit_id], how=m.how)
                            for m in item.matches[:max_quotes]])
        for item in result.items
    ]

"""What the index attests: the phrases its lines hold and the people who speak them.

A list question names its target in the user's words ("the Geller Cup by name", "Pete Becker, Monica's millionaire
boyfriend", "Monica's restaurant Alessandro's"); the list path keeps only what the collection itself holds, so the
question's words are checked against the index rather than against templates:

- `occurs(words)`: some line holds these words in a row (the sparse index's conjunction of their terms, then the
  lines read word for word, stopping at the first that does);
- `speakers()`: every speaker of the collection with the number of lines, read once from the documents (kept in
  memory for the life of the vocabulary; `cache` keeps it on disk, named by the index fingerprint);
- `resolve_speakers(name)`: the speakers a name means: "Doug" -> Doug, "Treeger" -> Mr. Treeger, "Pete Becker" ->
  Peter Becker (a word may be the start of the speaker's: Pete ~ Peter, when no speaker has the word itself);
- `spellings(word)`: the spellings of a name the index holds, one or two letters doubled or undoubled
  (Alessandro's ~ Allesandro's ~ Allessandro's: the transcripts spell guests' names several ways).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ragfunnel.embedding import Encoder
from ragfunnel.store.base import Store
from ragfunnel.types import Unit

_WORD = re.compile(r"[a-z0-9]+")
_POSSESSIVE = re.compile(r"'s\b")
_NAME_GOES_ON = re.compile(r"\s+[A-Z][a-z]")  # a capitalised word followed by another: one longer name
_SPOKEN = {"ya": "you"}  # transcripts spell speech: "how ya doin'" is "how you doing"
# words whose 's is "is" or "us", not a possessive: "what's" reads as typed, "whats"
_IS_CONTRACTED = {"what", "that", "it", "he", "she", "there", "here", "who", "where", "how", "when", "why", "let"}
# the words "is" is contracted onto, as normalise_words writes them ("that's" -> "thats"): "that's" ~ "that is"
IS_CONTRACTIONS = {w + "s": w for w in _IS_CONTRACTED if w != "let"}  # "let's" is "let us"
CHECK_BATCH = 200  # chunks read at a time while looking for the first line that holds a phrase
# a word said to one speaker ("Pheebs, come on!") this many times, with the next line theirs this share of them, is
# what the others call that speaker
ADDRESSED_MIN, ADDRESSEE_SHARE = 3, 0.6
# ... and a nickname is mostly said to its owner: "Pheebs" is said to Phoebe in 0.39 of the lines that hold it, "Joe"
# to Joey 0.31, "Mon" to Monica 0.15; "Santa" to Chandler in 6 of its 55 lines (0.11: he wore the suit once)
ADDRESSED_SHARE_OF_USES = 0.12
MIN_PREFIX = 3  # "Pete" may name "Peter"; "Pe" names nobody
_NAME_TITLES = {"mr", "mrs", "ms", "dr", "miss", "sir", "aunt", "uncle", "cousin", "grandma", "grandpa"}
MIN_TYPO = 5  # a name of 5 letters or more may be typed one letter off ("Suzie"); "Ben" / "Bev" are two people
MAIN_SPEAKER_SHARE = 0.05  # a word one typo off is read as a name only for the speakers of that share of the lines or more
TITLE_PROBE = 50  # documents looked at for an `episode_title` before all of them are read for titles
MIN_STEMMED = 4  # a word matched by its stem has 4 letters or more: "bar" and "barring" stay apart
SAME_WORD_MIN_SIMILARITY = 0.5  # golf ~ golfing 0.91, screw ~ screwed 0.55; kids ~ kidding 0.24, wedding ~ wed 0.55
DERIVED_MIN_SIMILARITY = 0.7  # an action's name and the action (`named_action`): adoption ~ adopted 0.79
DOMINANCE = 100  # a speaker with 100 times the lines of another of the same first name is the one that name means


def normalise_words(text: str) -> list[str]:
    """Lower-cased words, possessives and apostrophes dropped, g-dropping undone (doin' -> doing), "ya" read as
    "you": how phrases are matched."""
    low = _POSSESSIVE.sub(_possessive_or_is, text.lower().replace("’", "'")).replace("'", "")
    words = [_SPOKEN.get(w, w) for w in _WORD.findall(low)]
    return [w + "g" if w.endswith("in") and len(w) >= 4 else w for w in words]


def _possessive_or_is(m: re.Match[str]) -> str:
    """A possessive 's goes (Monica's = Monica); the "is" of "what's" stays, as "whats" (how it is typed)."""
    before = m.string[max(0, m.start() - 6):m.start()].split()[-1:] if m.start() else []
    return "s" if before and before[0].strip("\"'(") in _IS_CONTRACTED else ""


def without_restored_g(word: str) -> str:
    """The word as written before `normalise_words` gave it back a dropped g ("muffing" -> "muffin"): how the sparse
    index may hold it."""
    return word[:-1] if word.endswith("ing") else word


def contains(haystack: list[str], needle: list[str], plural: bool = False,
             same: Callable[[str, str], bool] | None = None) -> bool:
    """`needle` as consecutive words of `haystack`; `plural`: a word also matches with an added s / es
    (dinosaur ~ dinosaurs), with y for ies (allergy ~ allergies) or f for ves (scarf ~ scarves); `same` (with
    `plural`): also a word it says is the needle's word in another form (`SameWord`: golf ~ golfing)."""
    n = len(needle)
    if n == 0:
        return False
    if not plural:
        return any(haystack[i:i + n] == needle for i in range(len(haystack) - n + 1))
    return any(all(h == w or _plural_of(h, w) or _plural_of(without_restored_g(h), without_restored_g(w))
                   or (same is not None and same(h, w))
                   for h, w in zip(haystack[i:i + n], needle))
               for i in range(len(haystack) - n + 1))


def _plural_of(a: str, b: str) -> bool:
    """One word the other's plural: dinosaur ~ dinosaurs, box ~ boxes, party ~ parties, scarf ~ scarves,
    fireman ~ firemen."""
    if len(a) > len(b):
        a, b = b, a
    if b in (a + "s", a + "es"):
        return True
    if len(a) <= 3:
        return False
    return (a.endswith("y") and b == a[:-1] + "ies") or (a.endswith("f") and b == a[:-1] + "ves") or (
        a.endswith("fe") and b == a[:-2] + "ves") or b == _man_men(a)


_NOT_MAN_COMPOUNDS = frozenset({"human", "humans", "amen", "semen", "omen"})


def _man_men(word: str) -> str | None:
    """The other number of a compound in -man / -men of five letters or more (fireman ~ firemen, women ~ woman);
    None for any other word (man, omen, human)."""
    if len(word) <= 4 or word[-3:] not in ("man", "men") or word in _NOT_MAN_COMPOUNDS:
        return None
    return word[:-3] + ("men" if word.endswith("man") else "man")


_INFLECTIONS = {"", "s", "es", "ed", "d", "ing", "e", "y", "ies", "ied"}


def inflected(a: str, b: str) -> bool:
    """Whether two words differ only by an inflection: golf ~ golfing, smoke ~ smoking, nap ~ napping, cry ~ cried;
    not paleontology ~ paleontologist or competitive ~ competition (another word made from the same root)."""
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    if p < 3:
        return False

    def ending(rest: str) -> str:
        # a doubled last consonant before -ed / -ing: nap -> napping
        return rest[1:] if rest[:1] == a[p - 1] and rest[1:] in ("ed", "ing") else rest

    return ending(a[p:]) in _INFLECTIONS and ending(b[p:]) in _INFLECTIONS


_NOUN_OF_VERB = ("tion", "sion", "ment", "al", "ance", "ence")  # adoption, proposal, annulment, magical


def named_action(a: str, b: str) -> bool:
    """Whether one word names the action the other one does, by its ending: adoption ~ adopted, adopting ~ adoption,
    proposal ~ proposing, annulment ~ annulled, magic ~ magical; not paleontology ~ paleontologist, competition ~
    competitive, serious ~ seriously (another kind of word made from the same root). The caller checks the meaning
    (apartment ~ apart has the shape)."""
    for noun, verb in ((a, b), (b, a)):
        ending = next((e for e in _NOUN_OF_VERB if noun.endswith(e)), None)
        if ending is None:
            continue
        base = noun[:-len(ending) + (1 if ending in ("tion", "sion") else 0)]  # adopt|ion, propos|al, annul|ment
        if len(base) < 3 or not verb.startswith(base):
            continue
        rest = verb[len(base):]
        if rest[:1] == base[-1:] and rest[1:] in ("ed", "ing"):
            rest = rest[1:]  # annul -> annulled
        if rest in _INFLECTIONS:
            return True
    return False


def other_plurals(word: str) -> list[str]:
    """The word's singulars or plural where they change f for ves (scarf ~ scarves, wives ~ wife) or man for men
    (fireman ~ firemen, a compound of five letters or more: not man, men, omen), which the stemmer keeps apart; []
    for any other word."""
    if len(word) <= 3:
        return []
    if _man_men(word) is not None:
        return [_man_men(word)]
    if word.endswith("ves"):
        return [word[:-3] + "f", word[:-3] + "fe"]
    if word.endswith("fe"):
        return [word[:-2] + "ves"]
    if word.endswith("f"):
        return [word[:-1] + "ves"]
    return []


class SameWord:
    """Whether a line's word is the asked word in another form: an inflection of it (`inflected`) or the name of the
    action it does (`named_action`: adoption ~ adopted, a closer agreement asked), of the same stem as
    the store's sparse analyzer makes them (golf ~ golfing, screw ~ screwed, cleaning ~ cleaned), and close in meaning
    by the bundled encoder (cosine >= `min_similarity`), since an inflection's letters also join words that are not
    the same: kids ~ kidding (0.24). Without an encoder only the same word and its plurals count. Answers are
    remembered."""

    def __init__(self, store: Store, encoder: Callable[[], Encoder | None] | None = None,
                 min_similarity: float = SAME_WORD_MIN_SIMILARITY):
        self.store, self._encoder_factory, self.min_similarity = store, encoder, min_similarity
        self._stems: dict[str, str] = {}
        self._same: dict[tuple[str, str], bool] = {}

    def stem(self, word: str) -> str:
        """The word's stem as the sparse index has it ("golfing" -> "golf"); a stopword is its own."""
        found = self._stems.get(word)
        if found is None:
            terms = self.store.analyze(word)
            found = self._stems[word] = terms[0] if len(terms) == 1 else word
        return found

    def __call__(self, word: str, asked: str) -> bool:
        if (word == asked or len(asked) < MIN_STEMMED or self._encoder_factory is None
                or not (inflected(word, asked) or named_action(word, asked)) or self.stem(word) != self.stem(asked)):
            return word == asked
        key = (word, asked)
        if key not in self._same:
            encoder = self._encoder_factory()
            if encoder is None:
                self._same[key] = False
            else:
                a, b = encoder.encode([word, asked])
                # the action's name needs more agreement than an inflection: adoption ~ adopted 0.79, proposal ~
                # proposed 0.85
                floor = self.min_similarity if inflected(word, asked) else DERIVED_MIN_SIMILARITY
                self._same[key] = float(a @ b) >= floor
        return self._same[key]


def term_indexed(store: Store, view: str, word: str) -> bool:
    """Whether some chunk of the store's `view` holds the word's term (its stem, as the sparse analyzer makes it)."""
    idfs = store.term_idfs(view, word)
    return bool(idfs) and all(v is not None for v in idfs.values())


def name_words(name: str) -> list[str]:
    """The words of a speaker's name as names are compared: lower case, full stops dropped ("Mr. Treeger" ->
    mr, treeger); a possessive stays a different word ("Mike's Mom" is not Mike)."""
    return [w.strip("'’") for w in name.lower().replace(".", " ").split() if w.strip("'’")]  # "Maitre D'" ~ maitre d


MAIN_SHARE = 0.2  # a speaker with a fifth of the lines of the one who speaks most is one of the main people
MIN_PRONOUNS, PRONOUN_SHARE = 10, 0.7  # how often, and how much more often than the other, a pronoun must follow


def is_main_speaker(speaker: str, line_counts: dict[str, int]) -> bool:
    return line_counts.get(speaker, 0) >= MAIN_SHARE * max(line_counts.values(), default=0)


class Vocabulary:
    """The phrases and speakers of one store's unit view (see the module doc)."""

    def __init__(self, store: Store, view: str, cache: Path | None = None):
        self.store, self.view, self.cache = store, view, cache
        self._speakers: dict[str, int] | None = None
        self._occurs: dict[tuple[tuple[str, ...], bool], bool] = {}
        self._capitalised: dict[str, bool] = {}
        self._addressees: dict[str, str | None] = {}
        self._titles: tuple[re.Pattern[str] | None, dict[str, dict[str, Any]]] | None = None
        self._first: dict[str, Any] | None = None
        self._main_name_words: frozenset[str] | None = None
        self._main_first_names: frozenset[str] | None = None
        self._pronouns: dict[str, str] | None = None
        self._lock = threading.Lock()

    def title_in(self, text: str) -> tuple[int, int, dict[str, Any]] | None:
        """Where `text` names an episode by its title ("in The One with the Stoned Guy") and the metadata values
        that select it ({"season": 1, "episode": 15}); None when it names none. Titles are the documents'
        `episode_title` of four words or more, matched whole, punctuation aside, and written as a title (its first
        word capitalised) or after "in" / "of" / "from" / "during" / "episode": "the last one" or "the one with the
        baby" in a sentence is no title."""
        if self._titles is None:
            with self._lock:
                if self._titles is None:
                    self._titles = self._load_titles()
        pattern, where = self._titles
        for found in pattern.finditer(text) if pattern is not None else ():
            if found.group(0)[:1].isupper() or _TITLE_AFTER.search(text[:found.start()]):
                return found.start(), found.end(), where[_title_key(found.group(0))]
        return None

    def first_episode(self) -> dict[str, Any] | None:
        """The season and episode of the collection's first episode ("the pilot"); None without episodes."""
        if self._first is None:
            metas = self.store.doc_metadata(self.store.doc_ids()).values()
            numbered = [(m["season"], m["episode"]) for m in metas
                        if isinstance(m.get("season"), int) and isinstance(m.get("episode"), int)]
            season, episode = min(numbered) if numbered else (None, None)
            self._first = {"season": season, "episode": episode} if numbered else {}
        return self._first or None

    def _load_titles(self) -> tuple[re.Pattern[str] | None, dict[str, dict[str, Any]]]:
        ids = self.store.doc_ids()
        if not any("episode_title" in meta for meta in self.store.doc_metadata(ids[:TITLE_PROBE]).values()):
            return None, {}  # a collection without episode titles (a folder, BEIR): every lookup asks, so read no more
        where: dict[str, dict[str, Any]] = {}
        for meta in self.store.doc_metadata(ids).values():
            title = meta.get("episode_title")
            if isinstance(title, str) and len(_title_key(title).split()) >= 4:
                where.setdefault(_title_key(title), {k: meta[k] for k in ("season", "episode") if k in meta})
        if not where:
            return None, {}
        alternatives = sorted(where, key=len, reverse=True)  # the longest first: "The One with the Ring" is shorter
        body = "|".join(r"\W+".join(re.escape(w) for w in key.split()) for key in alternatives)
        return re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.I), where

    def analysed(self, text: str) -> bool:
        """Whether `text` has a term the sparse index can look up (not only stopwords)."""
        return bool(self.store.analyze(text))

    def term_known(self, word: str) -> bool:
        """Whether some chunk of the view holds the word's term."""
        return term_indexed(self.store, self.view, word)

    def specificity(self, words: Sequence[str]) -> float:
        """How rare the phrase's rarest term is in the view (its IDF; 0 when no term is known): "Yemen" names a
        thing, "Chandler" is everywhere."""
        idfs = self.store.term_idfs(self.view, " ".join(self.indexed(normalise_words(" ".join(words)))))
        return max((v for v in idfs.values() if v is not None), default=0.0)

    def lines(self, words: Sequence[str], at_most: int | None = None) -> int:
        """How many lines (units) of the view hold the phrase in a row; counting stops past `at_most`."""
        found = 0
        for _ in self._holding(normalise_words(" ".join(words)), plural=True):
            found += 1
            if at_most is not None and found > at_most:
                break
        return found

    def occurs(self, words: list[str], plural: bool = True) -> bool:
        """Whether some line holds `words` in a row (`plural`: a word may take an s)."""
        key = (tuple(words), plural)
        if key not in self._occurs:
            self._occurs[key] = self._find(words, plural)
        return self._occurs[key]

    def indexed(self, words: Sequence[str]) -> list[str]:
        """`words` (normalised) as the sparse index holds them: a word `normalise_words` gave back its dropped g
        ("muffin" -> "muffing", so that "doin'" matches "doing") is looked up as written when only that is indexed."""
        return [without_restored_g(w) if not self.term_known(w) and self.term_known(without_restored_g(w)) else w
                for w in words]

    def _find(self, words: list[str], plural: bool) -> bool:
        return next(self._holding(words, plural), None) is not None

    def _holding(self, words: Sequence[str], plural: bool) -> Iterator[Unit]:
        """The lines (units) of the view that hold `words` (normalised) in a row, read a batch of chunks at a time."""
        if not words:
            return
        # "coin" is "coing" to normalise_words, whose stem "co" is known too: look the word up as written as well
        texts = [" ".join(self.indexed(words)), " ".join(map(without_restored_g, words))]
        found: dict[str, None] = {}
        for text in dict.fromkeys(texts):
            if not self.analysed(text):
                continue
            if not all(self.term_known(w) for w in text.split() if self.analysed(w)):
                continue  # a term no chunk holds: nothing to read
            found.update(dict.fromkeys(self.store.match_sparse(self.view, text)))
        ids = list(found)
        for start in range(0, len(ids), CHECK_BATCH):
            for chunk in self.store.chunks(ids[start:start + CHECK_BATCH]):
                doc = self.store.document(chunk.doc_id)
                if doc is not None:
                    yield from (u for u in doc.units[chunk.start:chunk.end]
                                if contains(normalise_words(u.text), list(words), plural))

    def capitalised(self, word: str, sample: int = 40) -> bool:
        """Whether the lines write `word` as a name: capitalised in at least half of the (first `sample`) lines that
        hold it, not counting a line's first word ("Leslie" is; "boss" is not); a word no line holds after its first
        word is none of the lines' common words, so a speaker called by it is written as a name ("Erin"). A word
        written capitalised before another capitalised one is part of a longer name there and tells nothing of the
        word alone ("Van" of "Van Damme" against "a van")."""
        if word not in self._capitalised:
            named = seen = 0
            pattern = re.compile(rf"(?<!^)\b{re.escape(word)}\b", re.I)  # after "Dr." too: "Dr. Harad"
            for unit in self._holding([word], plural=False):
                for m in pattern.finditer(unit.text):
                    if m.group(0)[:1].isupper() and _NAME_GOES_ON.match(unit.text, m.end()):
                        continue
                    seen += 1
                    named += m.group(0)[:1].isupper()
                if seen >= sample:
                    break
            self._capitalised[word] = named * 2 >= seen
        return self._capitalised[word]

    def addressee(self, word: str) -> str | None:
        """The speaker the others call `word` ("Pheebs" -> Phoebe Buffay, "Joe" -> Joey Tribbiani): in the lines that
        say it to someone ("Pheebs, come on!", "..., Rach."), the one who speaks next and is not the speaker, when
        that is mostly one speaker; None otherwise (a pet name for everyone: "honey", "dude")."""
        low = word.lower()
        if low not in self._addressees:
            self._addressees[low] = self._find_addressee(low)
        return self._addressees[low]

    def _find_addressee(self, low: str) -> str | None:
        if not low.isalpha() or not self.analysed(low) or not self.term_known(low):
            return None
        said_to = re.compile(rf"(?:^|[,.!?]\s*){low}\s*[,.!?]|,\s*{low}\W*$", re.I)
        counts: Counter[str] = Counter()
        ids = self.store.match_sparse(self.view, low)
        for start in range(0, len(ids), CHECK_BATCH):
            for chunk in self.store.chunks(ids[start:start + CHECK_BATCH]):
                doc = self.store.document(chunk.doc_id)
                if doc is None:
                    continue
                spoken = [i for i, u in enumerate(doc.units) if u.speakers and not u.is_direction]
                for here, after in zip(spoken, spoken[1:]):
                    line, reply = doc.units[here], doc.units[after]
                    if (chunk.start <= here < chunk.end and said_to.search(line.text) and len(reply.speakers) == 1
                            and reply.speakers[0] not in line.speakers):
                        counts[reply.speakers[0]] += 1
        total = sum(counts.values())
        best = counts.most_common(1)
        if (best and total >= ADDRESSED_MIN and best[0][1] >= ADDRESSEE_SHARE * total
                and best[0][1] >= ADDRESSED_SHARE_OF_USES * len(ids)):
            return best[0][0]
        return None

    def mistyped_name(self, word: str) -> bool:
        """Whether `word` is a name a main speaker (MAIN_SPEAKER_SHARE of the lines or more) is called by, typed one
        letter off or with two letters swapped ("pheobe"), that the lines hold only as a name, if at all (their own
        typos)."""
        if len(word) < MIN_TYPO or not word.isalpha():
            return False
        if self.occurs([word], plural=False) and not self.capitalised(word):
            return False  # "phone" is no Phoebe
        return any(_one_edit(w, word) for w in self.main_name_words())

    def main_name_words(self) -> frozenset[str]:
        """The words (MIN_TYPO letters or more) that the main speakers (MAIN_SPEAKER_SHARE of the lines or more) are
        called by and that the lines write capitalised: names, not roles ("weding" is no Wedding Planner)."""
        if self._main_name_words is None:
            speakers = self.speakers()
            floor = MAIN_SPEAKER_SHARE * sum(speakers.values())
            self._main_name_words = frozenset(w for name, lines in speakers.items() if lines >= floor
                                              for w in name_words(name) if len(w) >= MIN_TYPO and self.capitalised(w))
        return self._main_name_words

    def main_first_names(self) -> frozenset[str]:
        """The first names of the main speakers, lower case ("rachel", "ross", ...): the main name words that begin a
        speaker's name."""
        if self._main_first_names is None:
            self._main_first_names = frozenset({name.split()[0].lower() for name in self.speakers() if name.split()}
                                               & self.main_name_words())
        return self._main_first_names

    def speakers(self) -> dict[str, int]:
        """Every speaker of the collection -> lines spoken (empty for documents without speakers)."""
        if self._speakers is None:
            with self._lock:
                if self._speakers is None:
                    self._speakers = self._load_speakers()
        return self._speakers

    def _load_speakers(self) -> dict[str, int]:
        path = self._cache_path()
        cached = _read_json(path)
        if cached is not None:
            try:
                return {str(k): int(v) for k, v in cached.items()}
            except (ValueError, TypeError):
                pass  # a damaged cache: count again and replace it
        counts: Counter[str] = Counter()
        for doc_id in self.store.doc_ids():
            doc = self.store.document(doc_id)
            if doc is not None:
                counts.update(s for u in doc.units for s in u.speakers)
        if path is not None:
            _write_json(path, dict(counts))
        return dict(counts)

    def pronoun(self, speaker: str) -> str | None:
        """"he" or "she": what the stage directions call a main speaker ("Chandler enters, he is carrying ..."), by
        the pronoun that follows the first name in the same clause at least PRONOUN_SHARE of the time, seen
        MIN_PRONOUNS times or more; None for anyone else, or a collection without stage directions."""
        if self._pronouns is None:
            counts = self.speakers()  # before the lock, which speakers() takes too
            with self._lock:
                if self._pronouns is None:
                    self._pronouns = self._load_pronouns(counts)
        return self._pronouns.get(speaker)

    def _load_pronouns(self, counts: dict[str, int]) -> dict[str, str]:
        path = self._cache_path("pronouns")
        cached = _read_json(path)
        if cached is not None:
            return {str(k): str(v) for k, v in cached.items()}
        firsts = {name.split()[0]: name for name in counts if name.split() and is_main_speaker(name, counts)}
        found: dict[str, str] = {}
        if firsts:
            pattern = re.compile(r"\b(" + "|".join(map(re.escape, firsts)) + r")\b(?:(?![A-Z])[^.;:()\[\]]){0,40}?\b(he|she)\b")  # no other name between; "he" / "she" only ("Monica pushes him")
            seen: dict[str, Counter[str]] = {}
            for doc_id in self.store.doc_ids():
                doc = self.store.document(doc_id)
                for unit in doc.units if doc is not None else ():
                    if unit.is_direction:
                        for m in pattern.finditer(unit.text):
                            seen.setdefault(m.group(1), Counter())[m.group(2)] += 1
            for first, tally in seen.items():
                pronoun, n = tally.most_common(1)[0]
                if n >= MIN_PRONOUNS and n >= PRONOUN_SHARE * sum(tally.values()):
                    found[firsts[first]] = pronoun
        if path is not None:
            _write_json(path, found)
        return found

    def _cache_path(self, kind: str = "speakers") -> Path | None:
        if self.cache is None:
            return None
        try:
            fingerprint = self.store.info().fingerprint
        except Exception:  # noqa: BLE001 - a store that cannot say what it holds is counted every time
            return None
        return self.cache / f"{kind}-{fingerprint}.json"

    def resolve_speakers(self, name: str) -> tuple[str, ...]:
        """The speakers `name` means: every speaker whose name holds each of its words (a word may be the start of
        the speaker's word when no speaker has that word itself: Pete ~ Peter). Titles in the question are kept
        ("Mr. Treeger") and may be left out ("Treeger")."""
        words = name_words(name)
        if not words or all(w in _NAME_TITLES for w in words):
            return ()  # "Mr." alone names nobody ("Mr. sarcasm himself")
        speakers = self.speakers()
        by_words = {s: name_words(s) for s in speakers}
        known = {w for ws in by_words.values() for w in ws}
        wanted = [w if w in known or len(w) < MIN_PREFIX else None for w in words]
        if any(w is None for w in wanted):
            # a word no speaker has: let it be the start of one (Pete ~ Peter) or spelled with letters doubled or
            # undoubled (Rossellini ~ Rosselini, as spellings() allows in lines)
            matches = [s for s, ws in by_words.items()
                       if all(any(v == w or (w not in known and (v.startswith(w) or _undoubled(v) == _undoubled(w)))
                                  for v in ws) for w in words)]
        else:
            matches = [s for s, ws in by_words.items() if all(w in ws for w in words)]
        if not matches and any(w is None for w in wanted):
            # one letter typed wrong, left out or added in a longer name (Malcolm ~ Malcom, Suzie ~ Susie)
            matches = [s for s, ws in by_words.items()
                       if all(any(v == w or (w not in known and len(w) >= MIN_TYPO and _one_edit(v, w)) for v in ws)
                              for w in words)]
        matches = sorted(matches, key=lambda s: (-speakers[s], s))
        whole = [s for s in matches if by_words[s] == words]
        if whole and len(words) > 1:  # "Joey Tribbiani" is Joey Tribbiani, not Joey Tribbiani Sr.
            return tuple(whole)
        first = [s for s in matches if [w for w in by_words[s] if w not in _NAME_TITLES][:1] == words]
        if len(words) == 1 and first and not (matches[0] not in first and all(
                speakers[matches[0]] >= DOMINANCE * speakers[s] for s in first)):
            # "Lauren" is the Lauren who is called so, not Ralph Lauren; but "Tribbiani" is Joey Tribbiani (thousands
            # of lines), not Grandma Tribbiani
            matches = first
        if len(words) == 1 and matches:
            # a first name means its main bearer: "Joey" is Joey Tribbiani, not Joey Tribbiani Sr. (23 lines)
            matches = [s for s in matches if speakers[s] * DOMINANCE >= speakers[matches[0]]]
        return tuple(matches)

    def variants(self, word: str) -> list[str]:
        """`word` and the British / American spellings of it the index holds (moustache ~ mustache, colour ~ color,
        centre ~ center, realise ~ realize): how transcripts of one show still spell one word."""
        low = word.lower()
        if len(low) < 5 or not low.isalpha():
            return [low]
        found = [low]
        for variant in _us_uk(low):
            if variant not in found and self.term_known(variant):
                found.append(variant)
        return found

    def spellings(self, word: str, max_changes: int = 2) -> list[str]:
        """`word` and the spellings of it the index holds: letters doubled or undoubled, at most `max_changes`
        (for names of 6 letters or more; a shorter word stays as it is)."""
        low = word.lower()
        if len(low) < 6 or not low.isalpha():
            return [low]
        edits = []
        for i, ch in enumerate(low):
            if i + 1 < len(low) and low[i + 1] == ch:
                edits.append(("undouble", i))
            elif i > 0 and ch not in "aeiouy" and (i == 0 or low[i - 1] != ch):
                edits.append(("double", i))
        found = [low]
        for n in range(1, max_changes + 1):
            for combo in itertools.combinations(edits, n):
                variant = _apply(low, combo)
                if variant not in found and self.term_known(variant):
                    found.append(variant)
        return found


def _read_json(path: Path | None) -> dict[str, Any] | None:
    """A cache file's mapping; None when there is none or it is damaged (then it is counted again and replaced)."""
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """A cache file written whole or not at all (a read-only home: counted again next time)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(path)
    except OSError:
        pass


def _us_uk(word: str) -> list[str]:
    """Spellings of `word` one British / American difference away: -our ~ -or (colour, favourite), -oul- ~ -ol-
    (mould), moustache ~ mustache, -re ~ -er, -ise ~ -ize, doughnut ~ donut; not any "ou" (house is no hose, mouse
    no muse)."""
    out = []
    for m in re.finditer("ou(?=[rl])", word):
        out.append(word[:m.start()] + "o" + word[m.end():])
    for m in re.finditer("ou(?=stach)", word):
        out.append(word[:m.start()] + "u" + word[m.end():])
    for m in re.finditer("(?<!o)o(?=[rl])(?!u)", word):
        out.append(word[:m.start()] + "ou" + word[m.end():])
    for m in re.finditer("(?<![ou])u(?=stach)", word):
        out.append(word[:m.start()] + "ou" + word[m.end():])
    for m in re.finditer("ough", word):  # doughnut ~ donut, through ~ thru: the spelling the lines may use
        out += [word[:m.start()] + "o" + word[m.end():], word[:m.start()] + "u" + word[m.end():]]
    for m in re.finditer("(?<=d)o(?=nut)", word):
        out.append(word[:m.start()] + "ough" + word[m.end():])
    for a, b in (("re", "er"), ("er", "re"), ("ise", "ize"), ("ize", "ise"), ("ised", "ized"), ("ized", "ised")):
        if word.endswith(a):
            out.append(word[:-len(a)] + b)
    return out


_TITLE_AFTER = re.compile(r"\b(?:in|of|from|during|episode|ep)\s*[\"“'‘]?\s*$", re.I)


def _title_key(title: str) -> str:
    """A title as its lower-case words ("The One With the Stoned Guy" -> "the one with the stoned guy")."""
    return " ".join(re.findall(r"[a-z0-9]+", title.lower()))


def other_name_ending(word: str) -> set[str]:
    """A name's other spelling of its last sound: Lizzie ~ Lizzy, Suzy ~ Suzie."""
    if word.endswith("ie") and len(word) > 3:
        return {word[:-2] + "y"}
    if word.endswith("y") and len(word) > 2:
        return {word[:-1] + "ie"}
    return set()


def _one_edit(a: str, b: str) -> bool:
    """Whether two different words are one letter changed, left out or added, or two letters side by side swapped,
    apart (Pheobe ~ Phoebe)."""
    if a == b:
        return False
    if b in other_name_ending(a):
        return True  # Lizzie ~ Lizzy
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        return len(differ) == 1 or (len(differ) == 2 and differ[1] == differ[0] + 1
                                    and a[differ[0]] == b[differ[1]] and a[differ[1]] == b[differ[0]])
    short, long = sorted((a, b), key=len)
    return any(long[:i] + long[i + 1:] == short for i in range(len(long)))


def _undoubled(word: str) -> str:
    """The word with each run of one letter written once ("rossellini" -> "roselini")."""
    return re.sub(r"(.)\1+", r"\1", word)


def _apply(word: str, edits: tuple[tuple[str, int], ...]) -> str:
    out = list(word)
    for kind, i in sorted(edits, key=lambda e: -e[1]):  # right to left: earlier positions stay where they were
        if kind == "undouble":
            del out[i]
        else:
            out.insert(i, out[i])
    return "".join(out)

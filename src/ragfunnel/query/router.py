"""The router: which path a question takes.

- `lookup`: the funnel (retrieve the top k parents, answer from them) — most questions;
- `scoped`: a lookup inside the season / episode / ... the question names (the corpus's query filter, applied in
  the index: pipeline.resolve_filter);
- `aggregate`: a list (or a count) spread over many parents — "In which scenes does Ross say 'we were on a
  break'?", "How many times does Joey say 'How you doin''?" — answered exhaustively (query/aggregate.py), not top-k;
- `out_of_scope`: nothing in the corpus can answer it ("What is the capital of France?"); the answer step refuses.

Rules first (phrases that only aggregation questions use: "in which scenes", "every episode", "how many times does
X say"), then a small classifier (query/classifier.py) trained on first use from the corpus's `route_examples`
(Friends: corpus/friends_route_examples.tsv, written by bench/query/route_examples.py: labelled questions written
for it, half of the FriendsQA dev questions as lookups, the answerability gate's off-topic questions); a corpus
without examples gets the rules only. The classifier leaves lookup only when it is confident (`min_confidence`):
a lookup sent elsewhere costs more than the other way round. `--route lookup|aggregate` overrides it. The chosen route, where it came from and why are recorded in the Trace.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragfunnel.errors import QueryError
from ragfunnel.query.classifier import TextClassifier, fit_cached, read_examples  # noqa: F401 - read_examples: re-exported
from ragfunnel.query.list_question import CONSTRAINT, drop_appositions, spelled_out

ROUTES = ("lookup", "scoped", "aggregate", "out_of_scope")
OVERRIDES = ("auto", "lookup", "aggregate")
DEFAULT_MIN_CONFIDENCE = {"aggregate": 0.6, "out_of_scope": 0.9}  # per route; out_of_scope high: a lookup sent there is refused (the gate still catches what stays)

_PARENT_WORDS = "scenes|episodes|documents|files|pages|passages|sections"  # a folder's parents too
_PARENTS = f"(?:{_PARENT_WORDS})"
_NOT_A_WH_QUESTION = r"(?!(?:who|what|where|when|why|how|which|whom|whose)\b)"  # a fragment, not a question word first
_AGGREGATE_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bhow (?:many|often|frequently)\b.{0,40}\b(?:scenes|episodes|lines|documents|files)\b", re.I), "asks how many scenes/episodes/lines"),
    (re.compile(r"\bhow many times (?:does|did|do|is|was|has)\b.{0,60}\b(?:says?|said|saying|mention\w*|talk\w*|speak\w*|yell\w*|call\w*|use\w*|come up)\b", re.I),
     "asks how many times something is said"),
    (re.compile(r"\bhow (?:often|frequently) (?:does|did|do|is|was)\b", re.I), "asks how often"),
    # "Count how often the word awesome is said", "how frequently is 'pivot' yelled": a word's every use, counted
    (re.compile(r"\bhow (?:often|frequently|many times)\b.{0,60}?\b(?:said|says|say|used|uses|mentioned|heard|spoken|"
                r"yelled|shouted|comes? up|brought up|gets? (?:said|used|mentioned))\b", re.I), "asks how often something is said"),
    (re.compile(rf"\b(?:in|on)?\s*(?:which|what) (?:other |else |more )?{_PARENTS}\b", re.I), "asks which scenes/episodes/documents (plural)"),
    # "which bits have her saying 'rach'": the moments (plural) asked for, every one
    (re.compile(r"\bwhich\s+(?:bits|moments|parts|instances|occasions)\s+(?:have|has|does|do|did|is|are|was|were|"
                r"where|when|in\s+which|with|feature|show)\b", re.I), "asks which moments (plural)"),
    (re.compile(r"\b(?:every|each)\s+(?:single\s+)?(?:scenes?|episodes?|documents?|files?|times?|lines?|mentions?|occurrences?)\b", re.I),
     "asks for every scene/episode/time"),
    (re.compile(r"\ball(?: the| of the)?\s+(?:scenes|episodes|documents|files|times|lines|mentions|occurrences)\b", re.I),
     "asks for all the scenes/episodes/times"),
    (re.compile(r"\b(?:list|name|enumerate|count|find|show|give)\b.{0,30}\b(?:all|every|each)\b", re.I), "asks to list all"),
    (re.compile(r"\bin how many\b|(?:\b(?:number|count|tally|total)|#)\s*of (?:times|scenes|episodes|lines|documents|files)\b|^\W*(?:count|tally|total)"
                r" of\b", re.I), "asks for a number of scenes/episodes/times"),
    (re.compile(rf"^\W*(?:the\s+)?{_PARENTS}\b", re.I), "a list of scenes/episodes/documents"),
    (re.compile(rf"\b(?:list|show|give|find|name|count|enumerate)\b(?:\s+(?:me|us|the|all|every|those|these|(?:list|set)\s+of))*\s+(?:{_PARENT_WORDS}|lines|times)\b", re.I),
     "asks to list the scenes/episodes/documents"),
    # where / when something comes up, or someone speaks at all: every time, not one moment
    (re.compile(r"^\W*(?:where|when)\s+(?:else\s+)?(?:in\s+(?:the\s+)?(?:show|series)\s+)?(?:is|are|was|were|does|do|did)\s+"
                r"(?:(?!\b(?:first|last|finally)\b).){1,80}?\s+"
                r"(?:gets?\s+)?(?:mentioned|brought up|talked about|discussed|referred to|referenced|comes? up|get mentioned)"
                r"(?:\s+(?:in|on|at)\s+(?:the\s+)?(?:conversation|dialogue|the show|show|series|friends|all))?(?:\s*,[^,?!]*)?\s*[?.!]*$", re.I),
     "asks where something comes up: every time"),
    # "Where else that season does Ross say understand?": the other places he says it, every one
    (re.compile(r"^\W*(?:where|when)\s+else\b[^?.!]{0,40}?\b(?:does|do|did)\s+[^?.!]{1,40}?\b(?:say|use|mention|bring up|"
                r"talk about|yell|call)\b", re.I), "asks where else something is said: every time"),
    (re.compile(r"^\W*(?:where|when)\s+(?:does|do|did)\s+(?:(?!\b(?:first|last|finally|again)\b).){1,60}?\s+(?:actually\s+|ever\s+)?"
                r"(?:say (?:something|anything)|speak|talk|(?:have|get) (?:any |a )?(?:lines?|dialogue))\s*[?.!]*$", re.I),
     "asks where someone speaks: every time"),
    # "Where does Ross mention X?", "When do they talk about X?": the base verb after do-support asks where a thing
    # comes up, every time ("Where did the incident Ross was talking about happen?" has no such verb: a lookup)
    (re.compile(r"^\W*(?:where|when)\s+(?:in\s+(?:the\s+)?(?:show|series|friends)\s+)?(?:does|do|did)\s+"
                r"(?:(?!\b(?:first|last|finally|again)\b)[\w.'’-]+\s+){1,4}"
                r"(?:ever\s+|actually\s+|even\s+)?(?:mention|bring up|talk about|discuss|refer to|go on about|rant about|"
                r"complain about|say (?:something|anything) about)\b", re.I),
     "asks where someone mentions something: every time"),
    (re.compile(r"^\W*(?:where|when)\s+(?:is|was|are|were)\s+there\s+(?:any\s+)?(?:talk|mention|discussion)s?\s+(?:of|about)\b", re.I),
     "asks where there is talk of something: every time"),
    (re.compile(r"^\W*(?:where|when)\s+(?:do|does|did|can)\s+(?:we|you|i|viewers)\s+(?:ever\s+)?hear\s+(?!that\b|when\b|how\b|why\b)", re.I),
     "asks where we hear of something or someone: every time"),
    (re.compile(r"\b(?:list|show|give|find|count|enumerate)\b(?:\s+(?:me|us|the|all|every))*(?:\s+[\w.]+){0,2}?\s+[\w.]+(?:'s|’s|s')\s+"
                r"(?:lines|scenes|episodes|mentions)\b", re.I),
     "asks to list someone's lines/scenes"),
    # "the scenes where Russ talks", "any scene with Paul speaking", "any scene that features pigeons"
    (re.compile(rf"\b(?:the|any|all)\s+(?:{_PARENT_WORDS})\s+(?:where|in which|with|that|when)\b|\bany\s+(?:scene|episode|document|file)\s+"
                r"(?:where|in which|with|that|when)\b", re.I),
     "asks for the scenes/episodes where something happens"),
    # "Show me where Ethan speaks", "find when Gunther talks"
    (re.compile(r"\b(?:show|find|list|tell)\b(?:\s+(?:me|us))?\s+(?:where|when)\s+(?:[\w.'’-]+\s+){1,4}(?:speaks|talks|"
                r"says (?:something|anything)|has (?:any )?lines|gets (?:a )?lines?)\b", re.I),
     "asks where someone speaks: every time"),
    # "is Titanic ever brought up", "does anyone ever mention pigeons"
    (re.compile(r"^\W*(?:is|are|was|were|does|do|did|has|have)\b.{1,60}?\bever\b.{0,30}?\b(?:mentioned|brought up|talked about|"
                r"comes? up|referenced|discussed|mention|bring up|talk about|refer to|reference)\b", re.I),
     "asks whether something ever comes up: every time"),
    # "the Fonz / Happy Days references", "Gunther mentions?"
    (re.compile(r"^\W*[\w'’ /&.-]{1,60}?\s+(?:references|mentions|refs)(?:\s+(?:anywhere|ever))?(?:\s+in\s+(?:the\s+)?(?:show|series|friends))?"
                r"\s*[?.!]*$", re.I), "a list of references or mentions"),
    # "monkies mentioned", "bonnie brought up?": a thing and its mentions, nothing else asked
    (re.compile(rf"^\W*{_NOT_A_WH_QUESTION}[\w'’ /&.-]{{1,60}}?\s+(?:mentioned|brought\s+up|referenced)\s*[?.!]*$", re.I),
     "a list of mentions"),
    # "... basically anywhere football is brought up": every place something comes up
    (re.compile(r"\banywhere\s+[\w'’ -]{1,40}?\s+(?:is|are|gets?|was|were)\s+(?:brought\s+up|mentioned|talked\s+about|discussed)\b"
                r"|\banywhere\s+[\w'’ -]{1,40}?\s+comes?\s+up\b", re.I), "asks for anywhere something comes up"),
    # "emma said by rachel green": the words a speaker says, every time
    (re.compile(rf"^\W*{_NOT_A_WH_QUESTION}[\w'’ -]{{1,40}}?\s+(?:said|spoken|yelled|shouted)\s+by\s+[A-Za-z]", re.I),
     "asks for the lines a speaker says something in"),
    # "frank jr dialogue", "ursula lines": someone's lines
    (re.compile(rf"^\W*{_NOT_A_WH_QUESTION}(?:[A-Za-z][\w.'’-]*\s+){{1,3}}(?:dialogue|dialog|lines)\s*[?.!]*$", re.I),
     "asks for someone's lines"),
    # "cake + birthday same scene": two things in one scene
    (re.compile(r"(?:\band\b|\s[+&]\s).{1,50}?\bsame\s+(?:scene|episode)s?\s*[?.!]*$", re.I), "asks for two things in the same scene"),
    # "beard mentioned which scene": the scenes asked after what happens in them
    (re.compile(r"\b(?:mentioned|brought\s+up|referenced|talked\s+about|comes?\s+up)\s+(?:in\s+)?(?:which|what)\s+"
                r"(?:scenes?|episodes?|eps?)\b", re.I), "asks which scenes/episodes something is mentioned in"),
    # "emily waltham eps w/ dialogue", "scenes with his lines": the scenes or episodes where someone speaks
    (re.compile(r"\b(?:eps|episodes|scenes)\s+(?:w/|with)\s*(?:(?:his|her|their|any|some)\s+)?(?:dialogue|dialog|lines)\b", re.I),
     "asks for the scenes/episodes where someone speaks"),
    # "any time joey says 'ladies'", "moments when Precious is talking", "bits where Ross says professor": the
    # moments (plural) of something, every one of them
    (re.compile(r"^\W*(?:(?:(?:could|can|would|will)\s+(?:you|u)\s+(?:please\s+)?|please\s+|i\s+)?(?:find|show|give|get|list|need|want)"
                r"\s+(?:me\s+|us\s+)?)?(?:(?:any|every)\s*time|whenever|(?:all\s+)?(?:the\s+)?"
                r"(?:bits|moments|parts|times|lines|instances|occasions|spots|places)\s+(?:where|when|in which|that|"
                r"mentioning|featuring|with|set|about))\b", re.I),
     "asks for the moments where something happens: every one"),
    # "is Macbeth mentioned anywhere", "is Vegas ever talked about at all"
    (re.compile(r"^\W*(?:is|are|was|were|does|do|did)\b.{1,60}?\b(?:mentioned|brought up|talked about|referenced|discussed|"
                r"comes? up|mention\w*|talk\w* about)\s+(?:anywhere|at all|in the (?:show|series))\b", re.I),
     "asks whether something comes up anywhere: every time"),
    # "When does Rachel say shopping?", "Where does Monica use the word competitive?": a word said, every time
    (re.compile(r"^\W*(?:where|when)\s+(?:(?:does|do|did)\s+(?:[\w.'’-]+\s+){1,3}(?:ever\s+)?(?:say|use|utter|shout|yell)\s+"
                r"the\s+(?:word|words|phrase|expression|name)\s+\S+(?:\s+\S+){0,3}|(?:does|do)\s+(?:[\w.'’-]+\s+){1,3}"
                r"(?:ever\s+)?(?:say|use|utter|shout|yell|call\s+(?:someone|somebody|people|anyone|everyone|him|her|them))\s+"
                r"[a-z]\S*)\s*[?.!]*$", re.I),
     "asks where a word is said: every time"),  # "When did Jill say vestibule?" asks for one moment: a lookup
    # "candles and champagne in the same scene", "Ross and the monkey together in one episode"
    (re.compile(r"(?:\band\b|\s[+&]\s).{1,50}?\b(?:in the same|in one|in a single|together in (?:a|one|the same))\s+"
                r"(?:scene|episode|document|file)s?\b", re.I),
     "asks for scenes with two things together: every one"),
    # "mexico comes up where?", "cowboys get mentioned where": where, asked last
    (re.compile(r"^\W*[\w'’ &.-]{1,60}?\s+(?:comes? up|(?:is|are|gets?) (?:mentioned|brought up|talked about))\s*,?\s+where\b", re.I),
     "asks where something comes up: every time"),
    # "Which episode has Dana Keystone speaking?", "what scenes feature Gunther talking": where someone speaks
    (re.compile(r"\b(?:which|what)\s+(?:episodes?|eps?|scenes?)\s+(?:has|have|had|features?|featured|includes?|included)\s+"
                r"(?:[\w.'’-]+\s+){1,4}(?:speaking|talking|saying (?:something|anything)|with (?:any )?lines|having (?:any )?lines)\b", re.I),
     "asks where someone speaks"),
    # "what ep is he talking in": where someone described speaks
    (re.compile(r"\b(?:what|which)\s+(?:episodes?|eps?|scenes?)\s+(?:is|are|does|do|did)\s+(?:he|she|they)\s+(?:\w+\s+)?"
                r"(?:talk|talking|speak|speaking|say|saying|have\s+lines)\b", re.I),
     "asks where someone speaks"),
    # "any other eps where someone talks about getting tan?"
    # "where else is snoring a thing": the other places, every one
    (re.compile(r"\bwhere\s+else\s+(?:is|are|was|were|does|do|did|has|have)\b", re.I), "asks where else: every time"),
    # "anything about ballet?": whatever there is about a thing
    (re.compile(r"^\W*(?:anything|everything|stuff)\s+(?:about|on|with|mentioning)\s+[\w'’ -]{1,40}\?", re.I),
     "asks for anything about a thing: every time"),
    (re.compile(r"\b(?:any|all|other|every)\s+(?:(?:other|the)\s+)?(?:scenes|episodes|eps|moments|times|bits)\s+"
                r"(?:where|when|in which|that|with|mentioning|featuring|about)\b|\b(?:any|every)\s+other\s+(?:scene|episode|ep|moment|"
                r"time|bit)\s+(?:where|when|in which|that|with|mentioning|featuring|about)\b", re.I),
     "asks for every scene or episode where something happens"),
    # "where in the show does the word laser come up, by scene": the list's items named last
    (re.compile(r",\s*(?:listed\s+)?by\s+(?:scene|episode|ep)s?\s*[?.!]*$", re.I), "asks for a list by scene or episode"),
    # "pickle scenes - like ross making ...", "scarf scenes?": a thing's scenes, as a part of its own
    (re.compile(r"^\W*(?:the\s+|all\s+(?:the\s+)?|any\s+)?(?!(?:last|first|final|opening|closing|next|previous|same|other|"
                r"deleted|best|funniest|saddest)\b)[a-z][\w'’-]*(?:\s+[a-z][\w'’-]*){0,2}\s+(?:scenes|episodes|moments|bits)\s*(?:pls|please|plz)?"
                r"\s*[?.!]*$", re.I),
     "asks for a thing's scenes/episodes"),
    # "the other bride at the sale who fights monica, scenes w her lines": the scenes, asked after a comma
    (re.compile(rf"[,;]\s*(?:{_PARENT_WORDS})\s+(?:with|where|when|in which|that)\b", re.I),
     "asks for the scenes/episodes where something happens"),
    # "tattoos, any scene": every scene, asked after the thing
    (re.compile(rf"[,;:]\s*(?:any|every|all)\s+(?:the\s+)?(?:scenes?|episodes?|eps?)\s*(?:pls|please|plz)?\s*[?.!]*$", re.I),
     "asks for any scene or episode of a thing"),
    # "heckles total line count", "scene count for the pilot": a count named by its noun
    (re.compile(r"\b(?:line|scene|episode|ep)\s+(?:count|total|tally)\b|\btotal\s+(?:number\s+of\s+)?(?:lines|scenes|episodes|eps)\b", re.I),
     "asks for a count of lines, scenes or episodes"),
    # "scenes pls", "I want scenes.", "which scenes?" (a sentence of its own after the question)
    (re.compile(rf"^\W*(?:i want|i need|give me|show me|gimme|list|which|what)?\s*(?:the\s+|all\s+|all the\s+)?(?:{_PARENT_WORDS})"
                r"\s*(?:pls|please|plz)?\s*[?.!]*$", re.I),
     "asks for the scenes/episodes"),
)
# "Where does someone say "…"?", "When does Ross say "…" out loud?": where / when a quoted line is said asks for every
# time it is said, not for one fact
_QUOTED = re.compile(r"\"[^\"]+\"|“[^”]+”|‘[^’]+’|(?<![\w])'.+?'(?![\w])")
_WHERE_SAID = re.compile(r"^\W*(?:where|when)\b.*\b(?:say|says|said|saying|yell|yells|yelled|shout|shouts|shouted|scream|"
                         r"screams|screamed|sing|sings|sang|sung|call|calls|called|utter|utters|uttered|use|uses|used|exclaim|exclaims|exclaimed|"
                         r"ask|asks|asked|tell|tells|told|whisper|whispers|whispered|announce|announces|announced)\b"
                         # the quotative go: "when does pheebs go 'obviously'"
                         r"|^\W*(?:where|when)\b.*\b(?:go|goes|went|going)\s+(?=[\"“‘'])", re.I)
# "joey buddy", "season three joanna", "tired + sleep": a search-box fragment of a few words with no question word,
# auxiliary or pronoun asks where the words are, every time (a lookup asks a question: "Ross is angry in season 5 episode
# 16" has its verb); it reads as a list, and one the index cannot read falls back to the ranked list. A phrase with an
# article or a possessive describes one moment to find ("Monica's new boyfriend", "the job interview"): a ranked search
_FRAGMENT_MAX_WORDS = 5
_FRAGMENT_WORD = re.compile(r"[A-Za-z0-9][\w'’]*")
_NOT_IN_A_FRAGMENT = frozenset("""
who whom whose what when where why how which is are was were be been being do does did can could will would should
shall may might must has have had i you he she it we they not isn't doesn't didn't don't wasn't aren't
""".split())


_DESCRIBES_A_MOMENT = re.compile(r"\b(?:the|a|an)\b|\w['’]s\b", re.I)


# "ross says by the way", "joey goes oh man": a fragment of someone and the words they say (no question word or
# auxiliary first, no question mark, a few words)
_NAME_SAYS = re.compile(r"^\W*([A-Za-z][\w'’-]*)\s+(?:says|goes|saying|going)\s+[\w'’\"“]", re.I)
_NAME_SAYS_MAX_WORDS = 8


def _names_words_said(question: str) -> bool:
    m = _NAME_SAYS.match(question)
    words = _FRAGMENT_WORD.findall(question)
    return (m is not None and m.group(1).lower() not in _NOT_IN_A_FRAGMENT and len(words) <= _NAME_SAYS_MAX_WORDS
            and not question.rstrip().endswith("?"))


# "ross i swear", "joey you're": after the first word, I and you are the words someone says
_SAID_PRONOUNS = frozenset({"i", "you"})


def _fragment(question: str) -> bool:
    words = [w.lower() for w in _FRAGMENT_WORD.findall(question)]
    return (not question.rstrip().endswith("?") and 1 <= len(words) <= _FRAGMENT_MAX_WORDS
            and not any(w in _NOT_IN_A_FRAGMENT and not (i and w in _SAID_PRONOUNS) for i, w in enumerate(words))
            and not (len(words) > 1 and _DESCRIBES_A_MOMENT.search(question)))  # "delmonico's" alone is a name


# what a list question says somewhere: plural scenes / times / lines, a count, every / all / both, the ones asked for
# ("find me those", "the ones set at a party"), anyone doing it ("when somebody brings up the stuffing"); the
# classifier's "aggregate" without any of them ("Where does the scene take place?", "Ross is angry in season 5 episode
# 16") stays a lookup
_LIST_CUE = re.compile(r"\b(?:scenes|episodes|eps|documents|files|times|lines|occasions|moments|bits|instances|mentions|occurrences|"
                       r"every|each|all|both|together|whenever|list|count|enumerate)\b|\bhow (?:many|often|frequently)\b"
                       r"|\bany\s+(?:scene|episode|ep|moment|time|document|file)\b"  # "any scene someone talks about X"
                       r"|\b(?:find|show|give|get|list)\s+(?:me\s+|us\s+)?(?:those|these|them)\b|\bthe ones\b"
                       r"|\bwhen(?:ever)?\s+(?:somebody|someone|anybody|anyone|people)\b"
                       # "where else does Ross say understand", "which scene has a unicorn in it", "the scene where
                       # karaoke comes up": other places, or a thing's mentions, asked for (the classifier said list)
                       r"|\b(?:where|what|which|any)\s+(?:else|other)\b|\bmention(?:s|ed)?\b|\b(?:comes?|came)\s+up\b"
                       r"|\b(?:brought|brings?)\s+up\b|\bin\s+it\s*\?",
                       re.I)
_WHICH_PARENT = re.compile(r"^\W*(?:in\s+)?(?:which|what)\s+(?:scene|episode|document|file)\b", re.I)
_COUNT = re.compile(r"\bhow (?:many|often|frequently)\b|\bcount\b|\bnumber of\b|#\s*of\b|\bno\.\s*of\b", re.I)


_AFTER_COMMA = re.compile(r",\s*((?:where|when|which|what|how)\b[^,]*)$", re.I)
_SENTENCES = re.compile(r"(?<=[?!.])\s+|\s+[-–—]\s+|\s*[()]\s*|:\s+")


def _last_sentence(question: str) -> str | None:
    """The last sentence of a question of several (the one that asks, after a memory told first); None for one."""
    sentences = [p.strip() for p in re.split(r"(?<=[?!.])\s+", question.strip()) if len(p.strip()) > 2]
    return sentences[-1] if len(sentences) > 1 else None


def _readings(question: str) -> list[str]:
    """The question as the rules read it: as written ("eps" read as episodes), without the descriptions of the
    people it names, without the seasons and episodes it names, and each of its sentences and dash- or
    bracket-separated parts on its own ("When does Roger
    talk? The psychiatrist Phoebe dates ...", "tommy the screamer (...) - scenes where he says something")."""
    text = spelled_out(question)
    plain = " ".join(drop_appositions(text).replace(" , ", " ").split())
    parts = [p.strip() for p in _SENTENCES.split(text) if p and len(p.strip()) > 2]
    # "In the final season, where does adopting come up?": the question after a comma that sets the scene
    parts += [m.group(1) for m in _AFTER_COMMA.finditer(text)]
    # "which s10 scenes are set in ...", "season 10 scenes set at ...": the season named aside, what is asked for
    unscoped = [" ".join(CONSTRAINT.sub(" ", r).split()) for r in (text, *parts) if CONSTRAINT.search(r)]
    return list(dict.fromkeys([text, plain, *parts, *unscoped]))


@dataclass(frozen=True)
class Route:
    """The path a question takes and why."""

    name: str  # one of ROUTES
    source: str  # rule | classifier | override
    reason: str
    count: bool = False  # aggregate: a number is asked for ("how many"), not only a list
    scores: dict[str, float] = field(default_factory=dict, hash=False, compare=False)  # the classifier's, when it ran
    filter: dict[str, Any] | None = field(default=None, hash=False, compare=False)  # what the question names (scoped)

    @property
    def path(self) -> str:
        """The path that runs: scoped is a lookup with a filter."""
        return "lookup" if self.name == "scoped" else self.name

    def to_dict(self) -> dict[str, Any]:
        return {"route": self.name, "source": self.source, "reason": self.reason, "count": self.count,
                "scores": {k: round(v, 4) for k, v in self.scores.items()}, "filter": self.filter}


class Router:
    """Rules, then the classifier. Cheap to build; the classifier trains on the first question (~0.3 s)."""

    def __init__(self, examples: Path | None = None, min_confidence: dict[str, float] | None = None,
                 cache_dir: Path | None = None):
        """`cache_dir`: where the fitted classifier is kept (named by a hash of the examples and the model's settings),
        so a new process loads it in milliseconds instead of fitting it again (~1-3 s on 2 busy cores)."""
        self.examples, self.min_confidence = examples, {**DEFAULT_MIN_CONFIDENCE, **(min_confidence or {})}
        self.cache_dir = cache_dir
        self._model: TextClassifier | None = None
        self._lock = threading.Lock()

    @property
    def model(self) -> TextClassifier | None:
        """The classifier, trained on first use; None without examples (rules only)."""
        if self._model is None and self.examples is not None:
            with self._lock:
                if self._model is None:
                    self._model = self._fitted(self.examples)
        return self._model

    def _fitted(self, examples: Path) -> TextClassifier:
        return fit_cached(examples, self.cache_dir, "router")

    def route(self, question: str, override: str = "auto", named_filter: dict[str, Any] | None = None) -> Route:
        """The route of `question`. `override`: auto (rules, then the classifier), lookup or aggregate.
        `named_filter`: what the question names (the corpus's query filter), which makes a lookup scoped."""
        if override not in OVERRIDES:
            raise QueryError(f"unknown route {override!r}: choose one of {', '.join(OVERRIDES)}")
        count = bool(_COUNT.search(question))
        if override == "aggregate":
            return Route("aggregate", "override", "--route aggregate", count=count, filter=named_filter)
        if override == "lookup":
            return self._lookup(Route("lookup", "override", "--route lookup"), named_filter)
        # "When does Chip Matthews, Rachel's old prom date who later takes Monica out, speak?": the rules read the
        # question without the descriptions of the people it names
        texts = _readings(question)
        for pattern, reason in _AGGREGATE_RULES:
            m = next((found for text in texts if (found := pattern.search(text))), None)
            if m:
                return Route("aggregate", "rule", f"{reason}: {m.group(0).strip()!r}", count=count, filter=named_filter)
        if _QUOTED.search(question) and _WHERE_SAID.search(question):
            return Route("aggregate", "rule", "asks where or when a quoted line is said: every time it is", count=count,
                         filter=named_filter)
        if _QUOTED.search(question) and _WHICH_PARENT.search(question):
            return Route("aggregate", "rule", "asks which scene or episode holds a quoted line: every one that does",
                         count=count, filter=named_filter)
        if self.model is None:
            return self._lookup(Route("lookup", "rule", "no aggregation phrase (rules only: no trained router for this corpus)"),
                                named_filter)
        if _names_words_said(question):  # "ross says by the way": where he says them, every time
            return Route("aggregate", "rule", "a fragment of someone and the words they say: every place they say them",
                         count=count, filter=named_filter)
        if _fragment(question):  # only where a router was trained: a folder's keyword queries stay ranked searches
            return Route("aggregate", "rule", "a search-box fragment (no question word, auxiliary or pronoun): every "
                         "place that holds it", count=count, filter=named_filter)
        scores = self.model.scores(question)
        best = max(scores, key=scores.__getitem__)
        asked = _last_sentence(question)
        if (asked and (best != "aggregate" or scores[best] < self.min_confidence[best]) and _LIST_CUE.search(asked)
                and (part := self.model.scores(asked))["aggregate"] >= self.min_confidence["aggregate"]):
            # "Joey and Chandler sit glued to the Miracle Wax infomercial, ... Which bits of the show talk about a
            # miracle?": the memory told first drowns the sentence that asks
            why = f"classifier: aggregate p={part['aggregate']:.2f} on the last sentence (the whole: {best} p={scores[best]:.2f})"
            return Route("aggregate", "classifier", why, count=count, scores=part, filter=named_filter)
        if best == "aggregate" and scores[best] >= self.min_confidence[best] and not _LIST_CUE.search(question):
            why = f"classifier: aggregate p={scores[best]:.2f}, but the question asks for no list (no scenes, times, every, how many)"
            return self._lookup(Route("lookup", "classifier", why, scores=scores), named_filter)
        if best != "lookup" and scores[best] >= self.min_confidence[best]:
            why = f"classifier: {best} p={scores[best]:.2f}"
            return Route(best, "classifier", why, count=count and best == "aggregate", scores=scores, filter=named_filter)
        why = f"classifier: lookup p={scores['lookup']:.2f}" + (
            f" ({best} p={scores[best]:.2f} under {self.min_confidence[best]})" if best != "lookup" else "")
        return self._lookup(Route("lookup", "classifier", why, scores=scores), named_filter)

    @staticmethod
    def _lookup(route: Route, named_filter: dict[str, Any] | None) -> Route:
        if not named_filter:
            return route
        names = ", ".join(f"{k} {v}" for k, v in named_filter.items())
        return Route("scoped", route.source, f"{route.reason}; the question names {names}", scores=route.scores,
                     filter=named_filter)

"""Reading a list question: what is asked of which target, with the targets the index attests.

"Which scenes mention the Geller Cup by name?", "In what scenes does Doug actually say something?", "Which episodes
does Pete Becker, Monica's millionaire boyfriend, have lines in?", "How many scenes are set at the coffee house
Central Perk?": a user phrases a list question however they like, so `ListQuestionReader.read`

1. takes the quoted words as the phrase to find, word for word;
2. drops what describes a target rather than names it: an apposition after a name ("Pete Becker, Monica's
   millionaire boyfriend," -> Pete Becker; ", where Rachel works"), the possessor before a noun ("Monica's
   restaurant Alessandro's" -> restaurant Alessandro's; "Frank Jr.'s triplets" -> triplets), a parenthesis;
3. splits the rest at the words that frame a question (which, scenes, mention, does, take place, by, in ...) into
   runs of target words, and keeps of each run the longest part some line of the index holds, a name (capitalised
   words: "Alessandro's", "the Geller Cup", "Days of Our Lives") before a description ("restaurant", "costume"):
   "the Geller Cup by name" -> "Geller Cup", because no line holds "Geller Cup by";
4. resolves the people it names to the collection's speakers (vocabulary.py: Doug, Mr. Treeger, Pete -> Peter
   Becker) and tells the speaker ("does Ross talk about ...", "Ross's lines", "lines from Gavin") from a person
   mentioned ("is Ben mentioned", "say Richard's name");
5. asks a small classifier what is asked of the target (`RELATIONS`): the person's lines (`speaks`: say something,
   have lines, talk, appear), lines naming it (`mentions`: mention, bring up, talk about, say "…"), scenes set there
   (`setting`: take place in, set at, happen at: the place of the scene heading), or two targets in one scene
   (`together`). It is `TextClassifier` (query/classifier.py) trained on many phrasings of each
   (query/list_relation_examples.tsv, written by bench/query/list_relation_examples.py), with the targets masked;
6. reads by rules what "how many" counts (times and lines: lines; scenes; episodes) and whether scenes or episodes
   (or documents) are listed.
"""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ragfunnel.embedding import bundled_minilm_dir
from ragfunnel.query.aggregate import AggregateQuery, plain_of_drawn
from ragfunnel.query.classifier import TextClassifier, fit_cached
from ragfunnel.query.vocabulary import (IS_CONTRACTIONS, MAIN_SHARE, Vocabulary, contains, is_main_speaker, name_words,
                                        normalise_words, other_name_ending)

RELATIONS = ("speaks", "mentions", "setting", "together")
EXAMPLES = Path(__file__).with_name("list_relation_examples.tsv")
MASK_VERSION = 2  # part of the cached classifier's name: a change to `mask` must not load a model fitted on the old one

_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|‘([^’]+)’|(?<![\w])'(.+?)'(?![\w])")
_NUMBER = r"(?:\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty)"
_ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|final|last)"
CONSTRAINT = re.compile(rf"\b(?:in|of|from|during)?\s*(?:season|episode)\s+{_NUMBER}\b|\b(?:in|of|from|during)?\s*(?:the\s+)?"
                        rf"{_ORDINAL}\s+season\b|\bs\d{{1,2}}\s*e\d{{1,2}}\b|\bs\d{{1,2}}\b", re.I)
_ABBREVIATION = re.compile(r"\b(Mr|Mrs|Ms|Dr|Jr|Sr|St)\.")
# "# of scenes", and the search box's "# scenes w/ drinks", "# eps ...": a number sign before a unit counts it
_COUNT = re.compile(r"\bhow (?:many|often|frequently)\b|\bcount\b|\bnumber of\b|\btally\b|#\s*of\b|\bno\.\s*of\b|"
                    r"#\s*(?=(?:scenes?|episodes?|eps?|lines?|times|documents?|files?|pages?)\b)", re.I)
_COUNT_UNIT = re.compile(r"\b(scenes?|episodes?|eps?|lines?|times|documents?|files?|pages?)\b", re.I)
# before a quote: a possessive name and at most two words ("Joey's catchphrase"), or a name going / goes ("Rachel going")
_QUOTE_OWNER = re.compile(r"\b([A-Za-z][\w-]*)(?:['’]s(?:\s+[\w-]+){0,2}|\s+(?:going|goes|went|go)|"
                          r"\s+[a-z]+(?:\s+[a-z]+){0,3}\s+with(?:\s+(?:a|an|the))?|\s+(?:does|doing|did)"
                          r"(?:\s+(?:the|a|her|his|that|this|long|stretched|drawn|out|drawn-out|whole|famous|big|little))+)\s*[:,-]?\s*$")
# "rachel actually saying 'gunther'", "does she ever say 'mike'": who says the quote that follows
_APPOSITION = re.compile(r",\s*(?:the|a|an|his|her|their|our)\s[^,]{1,80},", re.I)
_ONLY_A_NAME = re.compile(r"^\W*([A-Za-z][\w-]*)\s*$")  # "phoebe shhh": a fragment of a speaker and the word said
_FIRST_PERSON = re.compile(r"I(?:['’](?:m|ve|d|ll))?$")  # "I", "I'm": capitalised, but no name
_SAYS_BEFORE_QUOTE = re.compile(r"\b([A-Za-z][\w-]*)\s+(?:(?:actually|ever|really|even|just|always|never|still)\s+)?"
                                r"(?:says?|saying|said|yells?|yelling|yelled|shouts?|shouting|shouted|screams?|"
                                r"screaming|screamed|goes|go|going|went|lets?\s+out(?:\s+an?)?)\s*(?:the\s+words?\s+)?[:,-]?\s*$",
                                re.I)
# "say the words my son": the words after it, up to punctuation or a verb, as if quoted
# where words said unquoted end: at punctuation, or at a word that goes on to say where or how they come up
_SAID_WORDS_END = (r"(?=\s*(?:[?.!,;:]|$)|\s+(?:in|on|during|at|from|out\s+loud|come|comes|came|show|shows|get|gets|is|are|"
                   r"was|were|appears?|pops?)\b)")
# two words or more: one word is read as it is; "the words boyfriend and girlfriend both come up" are two words
_UNQUOTED_WORDS = re.compile(r"\b(the\s+(?:words|phrase|expression))\s+(?![\"“‘'])((?:(?!(?:and|or)\s)[A-Za-z][\w'’-]*\s+){1,3}?"
                             r"[A-Za-z][\w'’-]*)" + _SAID_WORDS_END, re.I)
# "say the word marry": that word as it is written, as if quoted (not "the word screw in any form", "the word magic,
# including magicians")
_ONE_WORD_SAID = re.compile(r"\bthe\s+word\s+(?![\"“‘'])([A-Za-z][\w'’-]*)" + _SAID_WORDS_END, re.I)
_WIDER = re.compile(r"\b(?:including|included|plurals?|forms?|variations?|variants?|tenses?|kinds?|sorts?|spellings?|whatever|"
                    r"or\s+any)\b", re.I)
_SPEAKS_AFTER = re.compile(r"\s*(?:(?:ever|actually)\s+)?(?:(?:say|says|said)\s+(?:something|anything)|speak|speaks|talk|talks|"
                           r"(?:have|has|get|gets)\s+(?:any\s+)?(?:lines|dialogue))\b", re.I)
_PRONOUN = re.compile(r"\b(?:he|she|him|her|his|hers|they|them|their|it|its|those|these|this|that one|"
                      r"(?<!\bof\s)(?<!\bin\s)(?<!\bacross\s)(?<!\bthroughout\s)the show)\b", re.I)  # "bits of the show": the series
_SAME_SCENE = re.compile(r"(?i:\b(?:in\s+(?:the\s+same|one|a\s+single)\s+(?:scene|episode|document|file)|together|both)\b|"
                         r"\band\s+(?:also|as\s+well)\b|\bas\s+well\s+as\b|\band\s[^,.;?!]*\b(?:too|as\s+well)\s*(?:[?!.]|$))|"
                         r"\s[+&]\s|\bAND\b")  # "concert + tickets", "dancing AND weddings"
_IN_ONE_SCENE = re.compile(r"\bin\s+(?:the\s+same|one|a\s+single)\s+(?:scene|episode|document|file)\b", re.I)
# what joins two things said of one scene; without it ("bicycle scenes? like anything mentioning bikes") the second
# only says the first again
_JOINED = re.compile(r"\b(?:and|with|plus|also|together|both|same|as\s+well\s+as)\b|[+&]", re.I)
# how a request opens ("I'm trying to track down the episodes ..."): none of its words is a target
_REQUEST = re.compile(r"\b(?:(?:i'?m|i\s+am|we'?re|just)\s+)?(?:trying|looking|hoping|wanting|want|need|going)\s+to\s+"
                      r"(?:track\s+down|find|figure\s+out|locate|see|get|know|list|pull\s+up|dig\s+up|look\s+up)\b|"
                      r"\b(?:track|hunt|dig|pull|round)\s+(?:down|up|out)\b|\b(?:any|no)\s+idea\b|\b(?:i'?m|i\s+am|just)\s+(?:curious|wondering)\b|"
                      r"\bi\s+wonder\b|\bi'?d\s+(?:like|love)\s+to\s+(?:know|see|find\s+out)\b|"
                      # an aside set off by a comma or followed by the asking frames it ("out of curiosity, in how
                      # many scenes ...", "out of curiosity how many scenes"); else it may be what is said ("ross says
                      # by the way")
                      r"\b(?:(?:just\s+)?(?:out\s+of|for)\s+(?:curiosity|interest)(?:'?s\s+sake)?|quick\s+question|"
                      r"by\s+the\s+way|for\s+the\s+record)(?=\s*[,:]|\s+(?:how|which|what|where|when|in\s+(?:which|what|"
                      r"how)|is|are|was|were|does|do|did|has|have|can|could|list|find|show|give)\b)", re.I)
# "e.g. Monica needing to borrow cash", "for example ...": examples, up to the end of the sentence, name no target
_EXAMPLES = re.compile(r"(?:\b(?:e\.\s?g\.?|eg|for\s+(?:example|instance))|(?<=\s[-–—]\s)like|(?<=,\s)like(?=\s))(?=[\s,:])[^?!]*?"
                       r"(?=[?!]|\.\s|\.?$|\s[-–—]\s)", re.I)  # "pickle scenes - like ross making rachel a sandwich"; "...
# place, like after chandler moved out - which scenes are set at joey's apartment?": the example ends at the dash
# "cosmetics, i.e. makeup", "the Fonz aka Arthur Fonzarelli": the same thing in other words, either counts
_CLARIFIES = re.compile(r"\s*,?\s*\b(?:i\.\s?e\.|i\.e|a\.k\.a\.?|aka|also\s+known\s+as|in\s+other\s+words)(?=[\s,:])[,:]?", re.I)
# a quote the question leaves out ("not being 'in a pickle'", "leaving out the 'what a pickle' expression")
_EXCLUDED_BEFORE = re.compile(r"\b(?:not|leaving\s+out|leave\s+out|except|excluding|exclude|other\s+than|without|ignoring|"
                              r"ignore|apart\s+from|besides|minus|skip|skipping|(?:don'?t|do\s+not)\s+(?:count|include)|rather\s+than|instead\s+of|"
                              r"as\s+opposed\s+to)\b(?:\s+[\w'’-]+){0,3}\s*$",
                              re.I)
_CLAUSE_END = re.compile(r"[,;:?!)]|\.(?:\s|$)")
_SKIPS = re.compile(r"(?:(?:,\s*|\bbut\s+|\(|(?<=[?!.])\s+)(?:skip|skipping|excluding|except(?:\s+for)?|leaving\s+out|"
                    r"leave\s+out|not\s+counting|ignoring|ignore|other\s+than|apart\s+from|(?:don'?t|do\s+not)\s+(?:count|include))|(?:(?<=[?!.])\s+|,\s*)not(?!\s+(?:just|only|even|necessarily)\b)|"
                    r"(?:,\s*|\s)(?:rather\s+than|instead\s+of))\b(?:(?!\s[-–—]\s)[^,.;?!)'\"‘“]|(?<=\w)['’](?=\w)|(?:(?<=\bMr)|(?<=\bMs)|"
                    r"(?<=\bDr)|(?<=\bSt)|(?<=\bMrs))\.)*(?=[,.;?!)]|\s[-–—]\s|$)", re.I)  # ", excluding Mr. Peanut and ...", "? not the styrofoam kind"
# "... which scenes mention pie? skip cutie pie, the american pie song and ...": a sentence that only leaves things out
_SKIP_SENTENCE = re.compile(r"(?<=[?!])\s+(?:skip|skipping|ignore|ignoring|excluding|exclude|except|not\s+counting|"
                            r"leaving\s+out|leave\s+out|(?:don'?t|do\s+not)\s+(?:count|include))\b[^?!]*?(?=[?!]|\.\s|\.?$)",
                            re.I)
# "a fish, the animal or the food": which sense of the word is meant, not two more things
# "a doll comes up as a toy": the sense it comes up in, not a second thing
_AS_SENSE = re.compile(r"\b(comes?\s+up|(?:is|gets?)\s+mentioned|mentioned|talked\s+about)\s+as\s+(?:a|an)\s+[a-z]+\b", re.I)
_SENSES = re.compile(r",\s*(?:either\s+)?the\s+[a-z]+\s+or\s+the\s+[a-z]+\s*(?=[?!]|\.\s|\.?$)", re.I)
# what a question leaves out, to the end of its sentence or parenthesis ("soda, not baking soda", "(not "cutie pie", the
# song American Pie, or ...)"), read for the sequences of words around the target that it names (`_excluded`)
# "she insists she does not have chubby ankles": a "not" after an auxiliary negates its verb, it leaves nothing out
_EXCLUSION = re.compile(r"\b(?:(?<!\bdoes\s)(?<!\bdid\s)(?<!\bis\s)(?<!\bwas\s)(?<!\bwere\s)(?<!\bhas\s)(?<!\bhad\s)"
                        r"(?<!\bhave\s)(?<!\bcould\s)(?<!\bwould\s)(?<!\bcan\s)not(?!\s+(?:just|only|even|necessarily|sure)\b)|excluding|exclude|except|skip|skipping|ignore|"
                        r"ignoring|leaving\s+out|leave\s+out|other\s+than|rather\s+than|instead\s+of|besides|apart\s+from|"
                        r"minus|(?:don'?t|do\s+not)\s+(?:count|include))\b[^?!()]*?(?=[?!()]|\.\s|\.?$)", re.I)
# "birds, brown bird cookie stuff excluded", "a beach, the beach house included": what a clause leaves out or only
# says is part of it
_EXCLUDED_AFTER = re.compile(r",\s*([^,.;?!()]+?)\s+(?:excluded|left\s+out|not\s+included|aside|included)(?=\s*[,.;?!)]|\s*$)",
                             re.I)
# "the word chicken, whether it's food, the animal or even chicken pox": the senses it comes in, not more targets
# "the word magic, including magic tricks, magicians or a 'magical' something": what the target already covers
_INCLUDING = re.compile(r",\s*(?:including|incl\.?|even)\b[^?!;]*?(?=[?!;]|\.\s|\.?$)", re.I)
_WHETHER = re.compile(r",?\s*\bwhether\s+(?:it'?s|it\s+is|as|in|they'?re|that'?s)\b[^?!;]*?(?=[?!;]|\.\s|\.?$)", re.I)
_EXCLUDED_PIECE = re.compile(r"[,;:\"“”]|\b(?:or|and|nor|not|like|etc)\b|(?<!\w)'|'(?!\w)", re.I)
MAX_EXCLUDED = 6  # words in an excluded sequence
# "which scenes mention pie you actually eat?": a clause that ends the question and only says which kind is meant
_REDUCED_RELATIVE = re.compile(r"(?<=[a-z])\s+(?:that\s+|which\s+)?(?:you|we|they)\s+"
                               r"(?:(?:actually|really|can|could|would|might|ever|would\s+actually)\s+)?[a-z]+\s*(?=[?!]|\.\s|\.?$)",
                               re.I)
# "what scenes have her going 'sweetie'": going, before a quote, is saying
_PRONOUN_GOING = re.compile(r"\b(?:she|he|her|him)\s+(?:(?:is|was|keeps?|always)\s+)*(?:going|goes|went)\s+Quote\d+x|"
                            r"Quote\d+x\s+(?:thing|line|bit|catchphrase)\s+(?:that\s+)?(?:she|he)\s+(?:always\s+)?(?:does|says)\b",
                            re.I)  # "that whole 'oh please' thing she does"
_ONE_BACK = re.compile(r"\b(?:mention\w*|about|with|has|have|had|of|bring\w*\s+up|see|seen)\s+(?:a\s+)?one\b(?!\s+of)", re.I)
# the series' first episode, named by what it is rather than by its title
_FIRST_EPISODE = re.compile(r"\b(?:in|from|during|of)\s+the\s+pilot(?:\s+(?:episode|ep))?\b|\b(?:the\s+)?pilot\s+(?:episode|ep)\b|"
                            r"\b(?:the\s+)?very\s+first\s+(?:episode|ep)\b|\bthe\s+first\s+(?:episode|ep)\s+of\s+(?:the\s+)?"
                            r"(?:show|series)\b", re.I)
_WHOLE_SHOW = re.compile(r"\b(?:the\s+)?(?:whole|entire)\s+(?:show|series|run)\b|\ball\s+(?:ten|10)\s+seasons\b", re.I)
# "point me to each scene ...", "... , whatever the reason": how the question is put
_POINT_ME = re.compile(r"^\W*(?:point|direct|take|walk)\s+me\s+(?:to|through)\b|,?\s*\bwhatever\s+the\s+(?:reason|context)\b",
                       re.I)
# "- the hockey team doesn't count": what a clause leaves out, said after it
_NOT_COUNTED = re.compile(r"(?:^|[-–—,.;?!]\s*)([^,.;?!()–—-]+?)\s+(?:doesn'?t|don'?t|does\s+not|do\s+not|shouldn'?t|should\s+not|"
                          r"won'?t)\s+count\b[^,.;?!]*", re.I)
_GUESSED = re.compile(r"\b([A-Za-z][\w'’-]*(?:\s+[A-Za-z][\w'’-]*)?)(?:\W{0,2}(?:\s+(?:i\s+think|or\s+something|maybe))?\s*\?|"
                      r"\s+(?:or\s+something|i\s+think)\b)", re.I)  # "lizzy?", "guru sag or something"
_SHE_S = re.compile(r"\b(she|he)s\b", re.I)  # "scenes where shes talking": she's
# "uses the word screw in any form": how widely a word counts, not a target
_ANY_FORM = re.compile(r"\bin\s+(?:any|all|every)\s+(?:of\s+its\s+)?(?:forms?|ways?|shapes?|variations?|variants?|tenses?|"
                       r"contexts?|senses?)\b|\b(?:whatsoever|or\s+any\s+variation)\b|"
                       r"\bof\s+(?:any|every|all)\s+(?:kinds?|sorts?|types?)\b", re.I)  # "a dryer of any kind"
_SOMEONE = re.compile(r"\b(?:someone|somebody|anyone|anybody|everyone|everybody|people|they)\b", re.I)
_PARENTHESIS = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_EPS, _EP = re.compile(r"\beps\b", re.I), re.compile(r"\bep\b", re.I)
# "num eps cartoon mentions", "num. of scenes": the number of
_NUM = re.compile(r"\bnum\b\.?(?:\s+of\b)?(?=\s+(?:eps?|episodes?|scenes?|lines?|times)\b)", re.I)
_WITH = re.compile(r"(?i:\bw/(?!o\b)|\bw(?=\s+(?:a|an|the|his|her|my|their)\s))|(?<![\w'’])w(?=\s+[a-z])")  # "w/ suzie",
# "fix him up w a guy", "scenes w socks"
_WITHOUT = re.compile(r"\bw/o\b", re.I)


def spelled_out(question: str) -> str:
    """The question with its short words written out ("which eps" -> "which episodes", "w/" -> "with", "num" ->
    "number of"), as the router and the reader both read it."""
    text = _WITH.sub("with ", _WITHOUT.sub("without", _without_accents(question)))  # "scenes w/ suzie moss speaking"
    text = _REFS.sub("references", text)  # "ugly naked guy refs"
    text = _NUM.sub("number of", text)
    return _EP.sub("episode", _EPS.sub("episodes", text))


_REFS = re.compile(r"\brefs\b(?=\s*(?:[?.!,;:]|$|\s+(?:to|in|anywhere|ever)\b))", re.I)


def _without_accents(text: str) -> str:
    """"résumé" as the transcripts write it, "resume": letters without their accents."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


# ", Monica's millionaire boyfriend," / ", the paleontologist," / ", where Rachel works": after a name, a segment that
# describes it: it starts with a determiner, a possessive pronoun or a relative pronoun, or holds a possessive
_DESCRIBES = re.compile(r"^(?:the|a|an|his|her|their|its|our|my|your|who|whom|whose|which|where|that)\b|\w['’]s\b|\ws['’](?=\s)",
                        re.I)
_COMMA_SEGMENT = re.compile(r",\s*([^,?!:;–—]*?)(?:,|(?=\s*[:;–—])|(?=\s+-\s)|(?=[?!.]\s)|(?=[?!.]?\s*$))")  # to a comma, colon,
# dash, the end of a sentence or of the question
_LAST_WORD = re.compile(r"([A-Za-z][\w'’.-]*)\s*$")


_NOT_AFTER_TITLE = r"(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bJr\.)(?<!\bSr\.)(?<!\bMrs\.)"  # "Dr. Franzblau" is one part
_SEGMENT_END = re.compile(rf"(?<=[?!.:;]){_NOT_AFTER_TITLE}\s+|\s+[-–—]\s+")
_EXAMPLE_LIST = re.compile(r"\b(?:etc|and\s+so\s+on|and\s+stuff\s+like\s+that)\W*$", re.I)  # "..., phoebes soy burger etc"
_MENTION_CUE = re.compile(r"\b(?:comes?\s+up|came\s+up|brought\s+up|brings?\s+up|mention\w*|talk\w*\s+about|refer\w*|discuss\w*)\b",
                          re.I)
# "is he mentioned", "does she get mentioned", "he's brought up": the person a description is about is mentioned
_PRONOUN_MENTIONED = re.compile(r"\b(?:is|was|does|did|do)\s+(?:he|she)\s+(?:\w+\s+){0,2}?(?:mentioned|brought\s+up|"
                                r"come\s+up|talked\s+about|referenced|named)\b|\b(?:he|she)(?:'s|’s|\s+is|\s+gets|\s+got)\s+"
                                r"(?:\w+\s+)?(?:mentioned|brought\s+up|talked\s+about|referenced)\b"
                                r"|\bmention(?:s|ed|ing)?\s+(?:him|her)(?=\s*(?:by\s+name|in\b|at\s+all|[?.!,;]|$))"
                                r"|\b(?:his|her)\s+name\s+(?:comes?\s+up|is|gets)\b", re.I)
_HAPPENS_AT = re.compile(r"\b(?:happen|happens|happened|happening|occur|occurs|occurred)\s+(?:at|in|inside)\b", re.I)
_WHICH_PARENTS = re.compile(r"\b(?:which|what)\s+(?:other\s+)?(?:scenes|episodes|eps)\b|\bhow\s+many\b", re.I)
_ONE_NAME = re.compile(r"\b(?:his|her)\s+(?:first\s+)?name\s+(?:comes?|came|gets?|got|is|was|pops?)\b", re.I)  # "her name comes up"
_BOTH_NAMES = re.compile(r"\bboth\s+(?:of\s+)?(?:their|the(?:ir)?)\s+names\b|\bboth\s+names\b", re.I)
# where a memory told after the question starts: "... - I think Rachel ...", "... like the one where ...", "(e.g. ..."
_MEMORY_AFTER = re.compile(r"(?:\s[-–—]\s*|\.{2,}\s*|…\s*|[.;,]\s+|\s\(\s*)(?=(?:i\s+think|i\s+remember|i\s+believe|"
                           r"like\s+the\s+(?:one|time|ep|episode)\b|like\s+when\b|e\.g\.|for\s+example\b|for\s+instance\b))", re.I)
_BEFORE_A_PLACE = frozenset({"at", "in", "from", "for", "with", "of", "to", "on"})
_SET_AT = re.compile(r"\bset\s+(?:at|in|on|inside)\b|\btak(?:e|es|ing)\s+place\s+(?:at|in|on|inside)\b", re.I)
_SET_THERE = re.compile(r"\b(?:set|takes?\s+place|taking\s+place|happens?|happening)\s+(?:out\s+)?there\b", re.I)
_SETTING_CUE = re.compile(r"\bset\s+(?:at|in|on|there)\b|\btakes?\s+place\b|\blocat(?:ed|ion)\b|\bheadings?\b|\bscenes?\s+(?:at|in|inside)\s",
                          re.I)
_PARTICIPLE = re.compile(r"(?:ed|en|wn|rn|ne|ung|ught|ade)$")  # worn, eaten, done, sung, bought, made
_IN_THE_SCENES = re.compile(r"\b(?:scenes?|episodes?)\s+(?:is|are|was|were)\b[^,.?!;]*\s(?:in|on)\s*(?:[?.!,;]|$)", re.I)  # "what
# scenes is a closet in": the thing is in the scenes
_IN_THEM = re.compile(r"\b(?:in|with)\s+(?:them|it)\b", re.I)
_SENTENCE_END, _DASH = re.compile(rf"(?<=[?!.:;]){_NOT_AFTER_TITLE}\s+"), re.compile(r"\s+[-–—]\s+")
_ASKS = re.compile(r"\b(?:scenes|episodes|eps|lines|bits|moments|instances|mention\w*|say\w*|said|talk\w*|speak\w*|spoke\w*|which|what|where|"
                   r"when|how|count|list|show(?=\s+(?:me|us|all|every|each|the\s+(?:scenes|episodes|lines)))|every|any|find|brought|bring\w*|comes?|"
                   r"came|refer\w*)\b", re.I)  # a singular "the monkey
# episode" only describes


def _without_descriptions(text: str) -> str:
    """`text` without the sentences or dash-separated parts after the first that only describe someone ("When does
    Roger talk? The psychiatrist Phoebe dates ...", "... Ethan speaks - Monica's young boyfriend who ..."): a part
    that opens with a determiner or a possessive and asks nothing (no scenes, lines, mention, say, which, where ...)."""
    # each part with the separator before it, so that what is kept still reads as parts ("... room - which scenes")
    cuts = list(_SEGMENT_END.finditer(text))
    starts = [0] + [c.end() for c in cuts]
    ends = [c.start() for c in cuts] + [len(text)]
    seps = [""] + [c.group(0) for c in cuts]
    parts = [(sep, text[a:b]) for sep, a, b in zip(seps, starts, ends)]
    kept = [parts[0]] + [(sep, p) for sep, p in parts[1:] if not (_DESCRIBES_START.match(p.strip()) and not _ASKS.search(p)
                                                                   and not _NAMES_IT.match(p.strip()))]
    # after a comma, only a part with a relative clause ("talks, the guy who books Phoebe") or of more than four words
    # ("talking, the girlfriend Mike breaks up with"): "the duck, the chick" lists targets; before the comma, a
    # description with a relative clause ahead of the name ("the kid who lives in the house ..., Mackenzie: ...")
    def describes(c: str, first: bool) -> bool:
        c = c.strip()
        # "when his teeth are ..." inside "the woman Ross is dating when ..." is the description's own clause
        if not _DESCRIBES_START.match(c) or any(m.start() == 0 or m.group(0).lower() not in _CLAUSE_WORDS
                                                for m in _ASKS.finditer(c)):
            return False
        # "a cappuccino or an espresso" lists what is asked for
        return bool(_RELATIVE.search(c)) or (not first and len(c.split()) > 4 and not re.search(r"\bor\b", c, re.I))

    out = []
    for i, (sep, part) in enumerate(kept):
        commas = part.split(",")
        out.append((sep if i and sep.strip() else " , " if i else "")
                   + ",".join(c for i, c in enumerate(commas) if not describes(c, i == 0) or (i == 0 and len(commas) == 1)))
    return "".join(out)


_RELATIVE = re.compile(r"\b(?:who|whom|whose|that|which)\b", re.I)
# "... giving him free crab cakes. The place is Delmonico's - which scenes are set there?": a sentence that says what
# something is called names it, it is no description of someone
_NAMES_IT = re.compile(r"^(?i:the|this|that)\s+\w+\s+(?:\w+\s+)?(?:is|was)\s+(?:called\s+|named\s+)?[A-Z]")
_CLAUSE_WORDS = {"when", "where", "which", "what", "how"}
_DESCRIBES_START = re.compile(r"^(?:(?:one\s+)?(?:from|of)\s+)?(?:the|a|an|his|her|their|its|[a-z]+['’]s)\b|^(?:he|she|they)\s*"
                              r"(?:['’]s|['’]re|is|was|are|were)\s+(?:the|a|an|one|his|her|their)\b", re.I)  # "from
# the two guys who ..." too

# "pheebs is pretty weird herself lol, so which scenes ...": a question that starts after a comma
_ASKS_AFTER_COMMA = re.compile(r",\s*(?:(?:so|but|and|now|anyway|ok|okay)\s+)+(?=(?:which|what|(?:where|when)(?=\s+(?:does|did|do|is|was|"
                               r"are|were|has|have|had|can|could|will|would|else)\b)|how|in\s+(?:which|what)|"
                               r"list|find|show|give|can|could|i['’]?d\s+like|i\s+would\s+like|i\s+want|i\s+need)\b)|,\s*(?=(?:(?:in\s+)?(?:which|what)|how\s+many)\s+"
                               r"(?:scenes|episodes|lines|times)\b)|,\s*(?:(?:plus|and|also)\s+)?(?=(?:any\s+other|where\s+else|what\s+other|which\s+other)\b)"
                               r"|,\s*(?=(?:list|find|show|give|get)\s+(?:(?:me|us|all|every|the|those|of)\s+)*"
                               r"(?:scenes|episodes|eps|lines|times|bits|moments)\b)",
                               re.I)  # "... got me wondering, what episodes mention juice", "..., any other bits with horses",
# "stuff like ben's g.i. joe or emma's wind-up toys, list the scenes where a toy is mentioned"; "..., and when joey
# throws 'her ankles are a little chubby' into the list she insists ...": a "when" or "where" asks with its auxiliary
_POINTS_BACK = re.compile(r"\b(?:it|them|this|(?<!scenes\s)(?<!episodes\s)(?<!eps\s)(?<!lines\s)(?<!bits\s)(?<!scene\s)(?<!episode\s)"
                          r"(?<!ep\s)(?<!moments\s)(?<!moment\s)(?<!times\s)that(?!\s+(?:season|episode|ep|year|time|day|night)\b)|these|those|"
                          r"such)\b", re.I)  # "scenes that talk about a job": a relative "that" points nowhere
_GROUP_WORD = re.compile(r"\b(?:scenes?|episodes?)\b", re.I)
# "where else does an envelope turn up": comes up
_TURNS_UP = re.compile(r"\b(?:turns?|turned|turning|pops?|popped|popping|crops?|cropped|cropping)\s+up\b"
                       r"(?=\s*(?:[?.!,;]|$|in\b|again\b|anywhere\b))", re.I)  # not "Ross turns up as the Armadillo"
_WHICH_ONES = re.compile(r"\b(?:which|what)\s+(?:ones\s+|scenes\s+|episodes\s+)?(?:are|were)\s+they\b", re.I)  # the scenes asked for
# "is there any other scene where fireworks come up, or is that the only one?": a clause joined by a comma and a
# conjunction may point back on its own while the clause before it names the target
_CLAUSE_JOIN = re.compile(r",\s+(?:or|and|but)\s+", re.I)


# a part asks when it opens as a question or a request, or names what is listed; "where" / "when" inside a memory
# ("rehearsal dinner in london where chandler's toast bombs") and its verbs ("joey speaking french") do not ask
_OPENS_QUESTION = re.compile(r"^\W*(?:(?:so|and|but|now|ok|okay|plus|also|anyway|anyways),?\s+)*(?:which|what|where|when|how|in\s+(?:which|what)|list|find|"
                             r"show|give|gimme|can|could|count|is\s+there|are\s+there|was\s+there|were\s+there|"
                             r"(?:has|have|had)\s+(?:anyone|anybody|someone|somebody|there|ever)|do|does|did|any)\b", re.I)
_ASKS_ANYWHERE = re.compile(r"\b(?:(?<!\bcouple\s)(?<!\bfew\s)(?<!\bseveral\s)(?<!\bsome\s)(?<!\bbunch\sof\s)(?<!\blot\sof\s)(?<!\blots\sof\s)"
                            r"(?:scenes|episodes|eps|lines)|moments|"
                            r"(?:every|each|any)\s+(?:single\s+)?(?:scene|episode|ep)|"
                            r"instances|bits|mention\w*|brought\s+up|bring\w*\s+up|"
                            r"comes?\s+up|came\s+up|count|^\W*list|list(?=\s+(?:all|the|every|each|any|them|em|me|out|scenes|"
                            r"episodes|those|these)\b))\b", re.I)  # "list all the scenes", not "ross's pros and cons list"; "talks in a couple
# episodes" tells, it does not ask


# "how many times does rachel green say actually": the one word after the saying, at the end, is what is said, though
# it is a word that elsewhere only frames the question: an adverb (actually, really) or please; not "say stuff" or
# "is his name said in"
_ENDS_SENTENCE = re.compile(r"[.!?]+\W?$")  # a quote whose words end a sentence: 'only had one lunch today.'
_SCRIPT_LINE = re.compile(r"^\W*([A-Za-z][\w.'’-]*(?:\s+[A-Za-z][\w.'’-]*){0,2})\s*:\s*(?=\S)")  # "rachel: assistant"
_SAYS_LAST_WORD = re.compile(r"\b(?:say|says|saying)\s+(?:the\s+word\s+)?([A-Za-z]+)(\s*[?.!]*)$", re.I)
_SAID_FRAME_WORDS = frozenset({"please", "whatever", "anyway", "anyways"})


def _said_frame_word_quoted(question: str) -> str:
    m = _SAYS_LAST_WORD.search(question)
    if m is None or _QUOTED.search(question):
        return question
    word = m.group(1).lower()
    if word not in FRAME or not (word.endswith("ly") or word in _SAID_FRAME_WORDS):
        return question
    return f'{question[:m.start(1)]}"{m.group(1)}"{m.group(2)}'


def _preamble_end(text: str) -> int | None:
    """Where the asking part of `text` starts when the sentences, dash-separated parts or comma clauses before it
    ask nothing (a memory of the show told first: "joey snoring so loud chandler has to roll him over... scenes set
    in joeys room"); None when the question asks from its first part."""
    cuts = sorted({m.end() for m in _part_ends(text).finditer(text)} | {m.end() for m in _ASKS_AFTER_COMMA.finditer(text)})
    starts = [0] + cuts
    parts = [(a, text[a:b]) for a, b in zip(starts, cuts + [len(text)])]

    def asks(part: str) -> bool:
        return bool(_OPENS_QUESTION.search(part) or _ASKS_ANYWHERE.search(part)) and not _EXAMPLE_LIST.search(part)

    for i, (a, part) in enumerate(parts):
        if asks(part):
            # "When Erica comes to visit, Monica says ... Which bits mention a statue?": a "when" that opens a clause
            # of time tells a memory when a later part asks
            if (_TIME_CLAUSE_OPENS.match(part) or _REMEMBERS.match(part)) and any(asks(later) for _, later in parts[i + 1:]):
                continue  # "I remember he brings up a night out singing - can you find the scene ...": a memory too
            return a if i else None
    return None


_A_PLACE_SCENE = re.compile(r"\b(?:a|an)\s+[\w'’]+(?:\s+[\w'’]+)?\s+scene\b", re.I)  # "episodes with a hospital scene"


def _says_where_set(question: str) -> bool:
    """The question says that scenes are set somewhere ("set in", "takes place", "scenes at", "a hospital scene"), not
    only names them by a word ("basement scenes")."""
    return bool(_SETTING_CUE.search(question) or _SET_AT.search(question) or _HAPPENS_AT.search(question)
                or _A_PLACE_SCENE.search(question))


_TIME_CLAUSE_OPENS = re.compile(r"^\W*(?:when|whenever|while|after|before|once)\s+(?!(?:does|did|do|is|was|are|were|has|have|"
                                r"had|can|could|will|would|else|exactly|in|on|at)\b)(?:[A-Z][\w'’]*|he|she|they|we|i|you)\s+\w+",
                                re.I)


_ANYONE_SAYS = re.compile(r"\b(?:somebody|someone|anybody|anyone|everybody|everyone|people)\s+(?:ever\s+|actually\s+)?"
                          r"(?:say|says|said|saying|use|uses|used|mention|mentions|mentioned)\b", re.I)
_REMEMBERS = re.compile(r"^\W*(?:i\s+(?:remember|recall|think|know|believe)|remember\s+(?:when|how|that))\b", re.I)


def _part_ends(text: str) -> re.Pattern[str]:
    """What ends a part of `text`: sentence ends and dashes, or only sentence ends when two dashes hold an aside
    inside the question ("Chandler's dad - Charles Bing, who ... - is speaking"), not a sentence of its own."""
    return _SENTENCE_END if len(_DASH.findall(text)) >= 2 else _SEGMENT_END


def _quoted_text(m: re.Match[str]) -> str:
    """What a `_QUOTED` match holds inside its quote marks."""
    return next(g for g in m.groups() if g)


def _quote_written(question: str, quote: str) -> re.Match[str] | None:
    """Where the question quotes `quote` (as read: stripped of end punctuation), None when it does not."""
    return next((m for m in _QUOTED.finditer(question) if _quoted_text(m).strip(" .,!?") == quote), None)


def _word_as_written(question: str, query: AggregateQuery) -> AggregateQuery:
    """"say the word marry": the word (or its plural), not "married" or "marrying"; but "the word screw in any form",
    "the word magic, including magicians" as widely as a mention counts."""
    said = _ONE_WORD_SAID.search(question)
    if (said is None or _WIDER.search(question) or query.exact or query.relation != "mentions"
            or normalise_words(query.phrase or "") != normalise_words(said.group(1))):
        return query
    return replace(query, inflections=False)


def _plain_body(text: str) -> str:
    """`text` with its quotes, seasons / episodes named and parentheses cut to one comma each ("Marga (sp?), the
    Dutch girl": one comma)."""
    return re.sub(r"(?:\s*,\s*){2,}", " , ", _PARENTHESIS.sub(" , ", _without_constraints(_QUOTED.sub(" , ", text))))


_BEFORE_GROUP = re.compile(r"\s*(?:scenes?|episodes?|eps?|lines?)\b", re.I)


def _without_constraints(text: str) -> str:
    """`text` with its seasons and episodes cut: to a comma, or to nothing where they qualify the group asked for
    ("which season 3 scenes take place at ...": no comma parts "which" from its scenes)."""
    return CONSTRAINT.sub(lambda m: " " if _BEFORE_GROUP.match(text, m.end()) else " , ", text)


def drop_appositions(text: str, names: set[str] | None = None) -> str:
    """`text` without the comma-delimited descriptions that follow a name (capitalised, or one of `names` in lower
    case): "Pete Becker, Monica's millionaire boyfriend, speaks" -> "Pete Becker , speaks"; "his soap, Days of Our
    Lives" keeps its name."""
    out, pos = [], 0
    for m in _COMMA_SEGMENT.finditer(text):
        if m.start() < pos:
            continue
        before = _LAST_WORD.search(text[:m.start()])
        segment = m.group(1).strip()
        named = before and (before.group(1)[:1].isupper() or (names is not None and before.group(1).lower() in names))
        # "tea, the beverage, is referred to": a short description closed by a comma before the verb describes any word
        closed = (m.group(0).rstrip().endswith(",") and _APPOSITION_VERB.match(text, m.end()) is not None
                  and re.match(r"(?:the|a|an)\s+\w+(?:\s+\w+)?$", segment, re.I) is not None)
        if (named or closed) and segment and _DESCRIBES.search(segment):
            out.append(text[pos:m.start()] + " , ")
            pos = m.end()
    return "".join(out) + text[pos:]


_CALLED_AS = re.compile(r"\b(?:(?:address\w*|call(?:s|ed|ing)?|refer\w*\s+to)(?:\s+or\s+(?:address\w*|call\w*|refer\w*\s+to))?"
                        r"\s+(?:[\w'’]+\s+){1,3}?(?:as|by)|shorten\w*\s+(?:[\w'’]+\s+){1,3}?to|describ\w*\s+(?:[\w'’]+\s+){1,4}?as|"
                        r"call(?:s|ed|ing)?\s+(?:somebody|someone|anybody|anyone|people|everyone|everybody|others|him|her|them)|"
                        r"us(?:e|es|ed|ing)(?=\s+(?:the|a|her|his)\s+(?:nickname|pet\s+name|short\s+name|name)\b))\s+(?:(?:the|a|an|his|her)\s+)?(?:(?:short\s+form|short\s+name|"
                        r"nickname|pet\s+name|name)\s+(?:of\s+)?)?[\"“‘']?([A-Za-z][\w-]*)", re.I)  # "address Joey as Joe"
_SPEAKING_WORDS = re.compile(r"\b(?:lines?|dialog(?:ue)?|talk\w*|speak\w*|spoke|says?\s+(?:something|anything))\b", re.I)
# "his own job": "own" stresses whose it is, the job is what is asked ("his own full name" is read whole)
_OWN = re.compile(r"\b(his|her|their|my|your|our)\s+own\b(?!\s+(?:full|whole|complete|first\s+and\s+last)\s+name)", re.I)
_OWN_FULL_NAME = re.compile(r"\b(?:his|her)\s+(?:own\s+)?(?:full|whole|complete|first\s+and\s+last)\s+name\b", re.I)
# a person described, then the name ("the divorced guy michael", "a woman named Kathy"); the name may be a guess
_PERSON_NAMED = re.compile(r"\b(?:guy|girl|man|woman|lady|dude|boy|kid|boyfriend|girlfriend|date|husband|wife|named|called)\s+"
                           r"([A-Za-z][a-z'’-]+)\b(?!['’]s)", re.I)
_APPOSITION_VERB = re.compile(r"\s*(?:is|are|was|were|gets?|comes?|pops?|appears?|shows?|turns?)\b", re.I)
_TITLES = {"mr", "mrs", "ms", "dr", "jr", "sr", "st", "miss"}
# words that frame a question rather than name its target: a run of target words ends at them
FRAME = set("""
which what where when who whom how why whose many often frequently count counting counted number tally list listing name
names named show shows showing shown give find every each all any both together also same either ever actually really
even still just only keep keeps kept again please me us is are was were be been being do does did has have had having get
gets got getting someone somebody anyone anybody everyone everybody they we you he she it i them one people
scene scenes episode episodes line lines time times moment moments occasion occasions instance instances document documents
file files page pages passage passages part parts season seasons dialogue dialog transcript transcripts script scripts
occurrence occurrences mention mentions mentioned mentioning word words phrase phrases term terms
say says said saying tell tells telling told speak speaks spoke spoken speaking talk talks talked talking bring brings
brought bringing up come comes came coming refer refers referred referring reference references referenced call calls
called calling yell yells yelled yelling shout shouts shouted shouting scream screams screamed screaming use uses used using
insist insists insisted sing sings sang sung singing ask asks asked asking appear appears appeared appearing feature
features featured featuring contain contains contained containing hold holds include includes including included take
takes took taking taken place places set sets happen happens happened happening located location locations setting
settings seen see sees shows utter utters uttered discuss discusses discussed discussing cite cites cited out loud
something anything himself herself themselves total overall altogether whole series other others another whether plus bits bit
stuff subject topic full spelled spelling spellings heading headings header headers direction directions stage
in at on by from with about to into for during after before within between among around inside outside over under than
as like via or not no there here this that these those can could would should will let lets
want wants wanted need needs needed looking look i'm im i've i'd i'll
hear hears heard hearing exclaim exclaims exclaimed exclaiming going doing
bit bits spot spots anywhere whenever gimme pls plz
theyre they're dont don't doesnt doesn't isnt isn't matter wherever whatever whoever thank thanks remember
describe describes described describing identify locate enumerate retrieve hers theirs yours ours
character characters listed credited thing things anyway anyways else
complain complains complained complaining brag brags bragged bragging whine whines whined whining
individual separate distinct different roughly approximately
across throughout ones off away vibe vibes era they've we've you've they'd we'd you'd they'll we'll you'll he'd she'd he'll she'll
""".split())
# words for one relative that people use for each other: a mention of "her mom" is one of "her mother"
_KIN = {w: family for family in (("mom", "mother", "mommy", "mum"), ("dad", "father", "daddy"),
                                 ("grandma", "grandmother"), ("grandpa", "grandfather")) for w in family}
# what the transcripts call someone's relatives, by the surname of the one named ("Joshua's parents": Mr. Burgin and
# Mrs. Burgin; "Joey's grandmother": Grandma Tribbiani, besides a speaker called "Joey's Grandmother")
_RELATIVE_TITLES = {"parents": ("mr", "mrs"), "mom": ("mrs",), "mother": ("mrs",), "mum": ("mrs",), "dad": ("mr",),
                    "father": ("mr",), "grandma": ("grandma", "grandmother", "nana"), "grandmother": ("grandma", "grandmother", "nana"),
                    "nana": ("grandma", "grandmother", "nana"), "nonna": ("grandma", "grandmother", "nana"),
                    "grandpa": ("grandpa", "grandfather"), "grandfather": ("grandpa", "grandfather")}
_RELATIVES = re.compile(r"\b([A-Za-z]+)['’]s\s+(" + "|".join(_RELATIVE_TITLES) + r")\b", re.I)
COMMON_LINES = 300  # lines holding a quote's words past which a "!" in the quote is what is asked for
RARER_BY = 4  # how much rarer than a name the phrase after it must be to be the target instead
SOFT = {"of", "the", "a", "an", "and", "his", "her", "their", "its", "our", "my", "your", "de", "&"}
NAME_JOINERS = {"of", "the", "de", "&"}  # inside a name: Days of Our Lives, the Geller Cup, Law & Order
_ACTIVE = set("""
say says saying said tell tells telling speak speaks speaking spoke talk talks talking mention mentions mentioning
mentioned bring brings bringing call calls calling yell yells yelling yelled shout shouts shouting shouted scream screams
screaming use uses using insist insists insisting sing sings singing ask asks asking have has having appear appears
appearing show shows refer refers referring utter utters uttering discuss discusses discussing keep keeps
exclaim exclaims exclaiming
""".split()) | {"comes", "came"}  # "Rachel comes out with the phrase 'no way'"
# words that open questions and are no names (FRAME holds most of them)
_NOT_NAMES_FIRST = {"i", "im", "i'm", "id", "i'd", "looking", "search", "searching", "return", "get", "tell", "please",
                    "now", "so", "ok", "okay", "hey", "hi", "quick", "question", "also", "then", "and", "but", "or", "back",
                    "roughly", "approximately"}
# verbs of doing before a thing ("playing blackjack", "watching Baywatch"): the thing is the target
_DOING = {"playing", "watching", "eating", "drinking", "reading", "making", "buying", "wearing", "having", "doing",
          "getting", "taking", "cooking", "visiting", "using", "ordering", "selling", "finding", "losing", "winning",
          "driving", "riding", "hailing", "catching", "calling", "renting", "owning"}
_PLACE_AFTER_SET = {"in", "at", "on", "inside", "outside", "during", "around", "near", "by", "within", "entirely", "mostly",
                    "only", "mainly", "partly"}
_DIALOGUE = {"line", "lines", "dialogue", "dialog", "dialogues", "speeches", "quotes"}
_PARTICLES = {"up", "in", "out", "off", "down", "over", "away", "back", "on", "around"}
# "moving in or out", "moving in/out": either of the two phrases
_PARTICLE_PAIR = re.compile(r"\b([a-z]+ing)\s+(up|in|out|off|down|over|away|back|on)\s*(?:\bor\b|/)\s*"
                            r"(up|in|out|off|down|over|away|back|on)\b", re.I)
HOMES = {"apartment", "apt", "place", "flat", "pad", "home"}  # after someone's name: where they live
_OWNERS_JOINED = {"and", "&", "n", "+"}  # "chandler n joey's place"
_ALSO_CALLED = re.compile(r"\(([^)]*\b(?:also|aka|a\.k\.a|called|known\s+as)\b[^)]*)\)", re.I)
_SHOUTED = {"AND", "OR", "NOT", "BUT", "BOTH", "ALL", "ANY", "ONLY", "ALSO"}  # "bras AND underwear" names nobody
_ANY_PERSON = {"guy", "girl", "man", "woman", "lady", "dude", "kid", "boy", "person", "one", "gentleman", "chick"}
_HAS_OR_IS_AFTER = {"got", "gotten", "been", "going", "gonna", "not", "always", "never", "getting", "being", "having"}  # "joey's got"
_SKIP_BEFORE_VERB = {"actually", "ever", "really", "also", "even", "still", "just", "always", "never", "first", "himself",
                     "herself", "themselves"}
_PASSIVE_BEFORE = {"is", "was", "are", "were", "get", "gets", "got", "does", "did"}


@dataclass(frozen=True)
class Token:
    text: str  # as written, possessive stripped
    low: str
    capital: bool  # starts with a capital letter (a name), outside the first word of the question
    possessive: bool  # ended in 's / s'
    boundary_before: bool  # punctuation before it ends a run


@dataclass(frozen=True)
class PhraseSpan:
    words: tuple[str, ...]  # as written
    start: int  # token positions [start, end)
    end: int
    name: bool  # made of capitalised words

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass
class ListReading:
    """What the reader saw, for the trace: the question as the classifier read it, the relation's probabilities, the
    targets kept, the people named (with the speakers they mean) and the one who speaks."""

    masked: str = ""
    relation_scores: dict[str, float] = field(default_factory=dict)
    targets: list[str] = field(default_factory=list)
    people: dict[str, list[str]] = field(default_factory=dict)
    subject: str | None = None
    # how the speaker of a "speaks" question was found when a pronoun speaks: guess ("lizzie?"), first named (the
    # first person named is taken), described (nobody is named): for the last two the pipeline may ask the scenes
    speaker_from: str | None = None


def tokenize(text: str) -> list[Token]:
    text = _ABBREVIATION.sub(r"\1", text).replace("’", "'")
    out: list[Token] = []
    boundary = True
    first = True
    for m in re.finditer(r"[A-Za-z0-9][A-Za-z0-9'\-]*|[^\sA-Za-z0-9]", text):
        word = m.group(0)
        if not (word[0].isalnum()):
            if word not in ("&",):
                boundary = True
                first = first or word in ".?!"  # "Are turtles ever brought up? Give me the scenes": a new sentence
                continue
        possessive = bool(re.search(r"(?:'s|s')$", word, re.I)) and len(word) > 2
        bare = re.sub(r"'s$|(?<=s)'$", "", word, flags=re.I).strip("'-")
        if not bare:
            continue
        # the first word is capitalised anyway: a name only when it is no frame word ("Bonnie, ...: which scenes")
        named = bare[0].isupper() and bare not in _SHOUTED and not _FIRST_PERSON.match(bare) and (not first or (
            bare.lower() not in FRAME and bare.lower() not in SOFT and bare.lower() not in _NOT_NAMES_FIRST))
        out.append(Token(bare, bare.lower(), named, possessive, boundary))
        boundary = False
        first = False
    return out


def count_unit(question: str) -> str | None:
    """What "how many" counts: lines (times, lines), scenes, episodes or documents; None when no number is asked."""
    m = _COUNT.search(question)
    if not m:
        return None
    unit = _COUNT_UNIT.search(question, m.start())
    if unit is None:  # "bucks ep count": the unit before a count that ends the question
        unit = next(reversed(list(_COUNT_UNIT.finditer(question, 0, m.start()))), None)
    word = unit.group(1).lower() if unit else "times"
    if word.startswith("scene"):
        return "scenes"
    if word.startswith("ep"):
        return "episodes"
    if word.startswith(("document", "file", "page")):
        return "scenes"  # a folder's documents are its parents, as scenes are Friends'
    return "lines"


def group_of(question: str) -> str:
    """Episodes when the question asks for episodes ("which episodes", "in which episode", "every episode"); a singular
    episode that describes ("the monkey episode") leaves scenes."""
    body = CONSTRAINT.sub(" ", question)
    asked = re.search(r"\bepisodes\b|\b(?:which|what|every|each|per|by|any)\s+episode\b|^\W*episode\b|"
                      r"\b(?:episode|ep)\s+(?:count|tally|total)\b", body, re.I)  # "bucks ep count"
    return "episode" if asked else "scene"


def mask(question: str) -> str:
    """The question as the relation classifier reads it: quotes -> QUOTE, capitalised names after the first word ->
    NAME (one per name), seasons and episodes named -> dropped."""
    text = _QUOTED.sub(" QUOTE ", " ".join(question.split()))
    text = CONSTRAINT.sub(" ", _ABBREVIATION.sub(r"\1", text))
    words = text.split()
    out: list[str] = []
    for i, w in enumerate(words):
        core = w.strip(".,?!;:()\"'")
        if core == "QUOTE":
            out.append(w.replace(core, "QUOTE"))
        elif i > 0 and core[:1].isupper() and core.lower() not in FRAME and core not in _SHOUTED:
            tail = "'s" if re.search(r"'s\W*$", w) else ""
            punct = w[len(w.rstrip(".,?!;:")):]
            if out and out[-1].startswith("NAME") and not out[-1].endswith((",", "?", "!", ";", ":", ".")) and "'s" not in out[-1]:
                out[-1] = "NAME" + tail + punct
            else:
                out.append("NAME" + tail + punct)
        else:
            out.append(w)
    return " ".join(out)


class RelationModel:
    """The classifier of what is asked of a target (`RELATIONS`), trained on first use from `examples` and cached
    under `cache_dir` (named by a hash of the examples and the model's settings)."""

    def __init__(self, examples: Path = EXAMPLES, cache_dir: Path | None = None):
        self.examples, self.cache_dir = examples, cache_dir
        self._model: TextClassifier | None = None

    @property
    def model(self) -> TextClassifier:
        if self._model is None:
            self._model = fit_cached(self.examples, self.cache_dir, f"list-relations-v{MASK_VERSION}", prepare=mask)
        return self._model

    def scores(self, question: str) -> dict[str, float]:
        return self.model.scores(mask(question))


class ListQuestionReader:
    """Reads list questions against one collection's vocabulary (see the module doc)."""

    def __init__(self, vocabulary: Vocabulary, relations: RelationModel | None = None):
        self.vocabulary = vocabulary
        self.relations = relations or RelationModel()
        self._speaker_words: set[str] | None = None
        self._described: set[tuple[str, ...]] | None = None  # speakers' names of two or three words, in lower case
        self._roles: dict[str, list[str]] | None = None  # a speaker's name in lower case, "the" aside -> the speakers

    def read(self, question: str) -> AggregateQuery:
        """What the list question asks for; an episode it names by its title ("in The One with the Stoned Guy")
        selects that episode and is no target."""
        q = _TURNS_UP.sub("comes up", self._script_line(_said_frame_word_quoted(" ".join(question.split()))))
        title = self.vocabulary.title_in(q)
        # "the guy with a big hammer in the pilot - how many lines in the whole show ...": the whole show
        first = _FIRST_EPISODE.search(q) if title is None and not _WHOLE_SHOW.search(q) else None
        if first is not None and self.vocabulary.first_episode():  # "in the pilot", "very first ep"
            title = first.start(), first.end(), self.vocabulary.first_episode()
        if title is None:
            return _word_as_written(q, self._with_siblings(q))
        start, end, where = title
        return _word_as_written(q, replace(self._read(q[:start] + " , " + q[end:]), named=tuple(where.items())))

    def _asked_targets(self, asked: str | None) -> set[tuple[str, ...]]:
        """The targets the asking part names; none when it points back to the memory before it ("chess!! when do
        they play it"), unless a sentence of the asking part names them before the one that points back ("Were there
        other times anyone talked about getting a haircut? Show me those scenes") or a clause of it before one that points
        back ("any other scene where fireworks come up, or is that the only one?")."""
        def points_back(text: str) -> bool:
            return _POINTS_BACK.search(_IN_THEM.sub(" ", text)) is not None

        if not asked:
            return set()
        if not points_back(asked):
            return self._targets_of(asked)
        ends = [m.end() for m in _part_ends(asked).finditer(asked)] + [m.start() for m in _CLAUSE_JOIN.finditer(asked)]
        for end in sorted(ends, reverse=True):
            head, tail = asked[:end], asked[end:]
            if points_back(tail) and not points_back(head):
                return self._targets_of(head)
        return set()

    def _by_pronoun(self, tokens: list[Token], people: list[tuple[PhraseSpan, tuple[str, ...]]]
                    ) -> tuple[PhraseSpan, tuple[str, ...]] | None:
        """Of the people named, the only one whom the first "he" / "him" / "his" / "she" / "her" of `tokens` can be
        (`Vocabulary.pronoun`); None when none or several can, or when one named has no known pronoun."""
        said = next((t.low for t in tokens if t.low in ("he", "him", "his", "she", "her")), None)
        if said is None:
            return None
        pronoun = "she" if said in ("she", "her") else "he"
        named = [(p, s) for p, s in people if s]
        if any(len(s) != 1 or self.vocabulary.pronoun(s[0]) is None for _, s in named):
            return None  # "Bob from Chandler's office ... does he have lines": nothing says Bob is no "he"
        fits = [(p, s) for p, s in named if self.vocabulary.pronoun(s[0]) == pronoun]
        return fits[0] if len({s for _, s in fits}) == 1 else None

    def _script_line(self, question: str) -> str:
        """A question written as a transcript writes a line, a speaker's name and a colon before what is said
        ("rachel: assistant", "ross: 'i'm freaking out' - find those scenes"), as the name saying it; not when what
        follows the colon asks ("Monica: which scenes does she cook in?") or the name is no speaker's."""
        m = _SCRIPT_LINE.match(question)
        if m is None or _OPENS_QUESTION.match(question[m.end():]) or not self.vocabulary.resolve_speakers(m.group(1)):
            return question
        return f"{m.group(1)} says {question[m.end():]}"

    def _names_in_parentheses(self, question: str) -> str:
        """The question with a parenthesis that holds only a speaker's name written as an apposition ("mr geller
        (jack)" -> "mr geller , jack ,"): it says who is meant, it is no aside."""
        def named(m: re.Match[str]) -> str:
            inner = m.group(1).strip()
            if len(inner.split()) <= 3 and re.fullmatch(r"[A-Za-z][\w.'’ -]*", inner) and self.vocabulary.resolve_speakers(inner):
                return f" , {inner} , "
            return m.group(0)
        return re.sub(r"\(([^()]{1,40})\)", named, question)

    def _with_siblings(self, question: str) -> AggregateQuery:
        """`_read`, and where it finds nothing to look for, the question again with each word no line writes read
        as a sibling of it that lines do write ("which scenes mention sarcasm?": sarcastic)."""
        found = self._read(question)
        if found.phrase is not None or found.speakers:
            return found
        changed = question
        for word in dict.fromkeys(re.findall(r"[A-Za-z]{6,}", question)):
            low = word.lower()
            if self.vocabulary.occurs([low]):
                continue
            known = [w for w in sibling_words(low) if self.vocabulary.term_known(w) and self.vocabulary.occurs([w])]
            if known:
                changed = re.sub(rf"\b{word}\b", known[0], changed)
        return self._read(changed) if changed != question else found

    def _read(self, question: str) -> AggregateQuery:
        q = self._without_memory_after(" ".join(question.split()))
        q = _OWN.sub(r"\1", _CLARIFIES.sub(" or ", spelled_out(q)))
        q = _NAME_MENTIONS.sub(r"\2 of \1", _TEXTED_YOU.sub("you", q))
        q = _without_exclusions(_EXAMPLES.sub(" , ", _SHE_S.sub(r"\1 is", _SENSES.sub(" ", _AS_SENSE.sub(r"\1", _REDUCED_RELATIVE.sub("", q))))))
        q = _PARTICLE_PAIR.sub(r"\1 \2 or \1 \3", q)
        q = _PLUS_SOUND.sub(" & ", q)  # "voice + sing": the second thing (`_framed_noun`)
        q = _NAME_GIVEN.sub(r"\1", q)  # "the scenes where her name, Molly, comes up": Molly comes up
        q = _UNQUOTED_WORDS.sub(lambda m: f'{m.group(1)} "{m.group(2)}"', q)
        # "janice's nasal OH. MY. GOD.": words shouted one by one are said, as if quoted
        q = _SHOUTED_WORDS.sub(lambda m: ' "' + " ".join(re.findall(r"[A-Z]+", m.group(0))).lower() + '" ', q)
        if re.search(r"[a-z]", q):  # "WE WERE ON A BREAK - every scene ross yells it": a phrase in capitals is shouted
            q = _SHOUTED_PHRASE.sub(lambda m: ' "' + m.group(0).lower() + '" ', q)
        drawn = _DRAWN_WORD.search(q) if not _QUOTED.search(q) else None
        if drawn is not None and not re.search(rf"\b{re.escape(plain_of_drawn(drawn.group(1)) or '')}\b", q, re.I):
            # "rach going nooo, find me those scenes": a word drawn out is said, as if quoted (but "saying ew / ewww"
            # asks for the plain word too)
            q = q[:drawn.start()] + f'"{drawn.group(1)}"' + q[drawn.end():]
        if not _QUOTED.search(q):  # "bits where she says thats so sweet": the words said, as if quoted
            q = self._said_unquoted(q)
        if not _QUOTED.search(q):  # "way you look tonight song": words some line holds word for word, as if quoted
            q = self._attested_words_quoted(q)
        reading = ListReading(masked=mask(q))
        quotes = [next(g for g in m.groups() if g).strip(" .,!?") for m in _QUOTED.finditer(q)]
        quotes = [x for x in quotes if normalise_words(x)]
        # no punctuation inside a quote splits sentences, unless the quote ends one and the next begins after it
        # ("he complains that he 'only had one lunch today.' Can you show me ...")
        marked = _QUOTED.sub(lambda m: f" Quote{m.start()}x" + (". " if _ENDS_SENTENCE.search(m.group(0)) and re.match(
            r"\s+[A-Z]", q[m.end():]) else " "), q)
        # "bonnie ... and rach telling phoebe 'you said she was bald!!'... scenes where somebody's baldness comes up":
        # a memory told before the question asks; what the asking part names is the target, the memory only says
        # who "she" is
        cut = _preamble_end(marked)
        originals = {f"Quote{m.start()}x": m.group(0) for m in _QUOTED.finditer(q)}
        asked = re.sub(r"Quote\d+x", lambda m: originals[m.group(0)], marked[cut:]).strip() if cut else None
        # "chess!! when do they play it", "... scenes where that guy has dialogue": the asking part points back
        asked_targets = self._asked_targets(asked)
        asked_tokens = tokenize(asked) if asked else []
        # "... which scenes have rach saying ...": a nickname is the name it stands for
        asked_words = set(normalise_words(asked)) | {self._nickname(t).low for t in asked_tokens} if asked else set()
        asked_speaks = _pronoun_speaks(asked_tokens)  # "... what scenes does he talk in"
        if quotes:  # "katie, the girl who keeps punching joey "playfully" - ...", "(not 'rat me out')": a quote in a
            # description or an aside is none of the question's targets
            starts = [m.start() for m in _QUOTED.finditer(q) if normalise_words(next(g for g in m.groups() if g))]
            plain = _ABBREVIATION.sub(r"\1", _PARENTHESIS.sub(" , ", marked))
            plain = _without_descriptions(drop_appositions(plain, self._lower_case_names(plain)))
            # "... leaves ross that 'i'm over you' message.. the divorced guy michael. what scenes does he talk in": the
            # quote only tells who he is
            told = set(re.findall(r"Quote\d+x", marked[:cut])) if cut and (
                asked_targets or _QUOTED.search(asked) or asked_speaks) else set()
            quotes = [x for x, at in zip(quotes, starts) if f"Quote{at}x" in plain and f"Quote{at}x" not in told]
        body = _IN_ONE_SCENE.sub(" , ", _plain_body(self._names_in_parentheses(q)))  # "turkey + thanksgiving in the same scene": no 'thanksgiving in'
        lower_case_names = self._lower_case_names(body)
        body = drop_appositions(_ABBREVIATION.sub(r"\1", body), lower_case_names)
        # "the Fonz / Happy Days", "perfume/cologne": either
        body = _without_descriptions(re.sub(r"\s+/\s+|(?<=[A-Za-z]{3})/(?=[A-Za-z]{3})", " or ", body))
        body = self._asking_part(_ANY_FORM.sub(" , ", _REQUEST.sub(" , ", body)))
        tokens = self._tokens(body, lower_case_names)
        # the classifier reads the question without its descriptions (", where Rachel works" is no speaker's verb)
        scores = self.relations.scores(drop_appositions(_PARENTHESIS.sub(" ", q)))
        if asked:  # the memory told first may read as another relation: the asking part counts half as much as the whole
            scores = {r: (2 * p + self.relations.scores(drop_appositions(_PARENTHESIS.sub(" ", asked)))[r]) / 3
                      for r, p in scores.items()}
        reading.relation_scores = scores
        relation = max(scores, key=scores.__getitem__)
        mentioned_only = bool(_MENTION_CUE.search(asked or q)) and not _SPEAKING_WORDS.search(asked or q)
        if relation == "speaks" and mentioned_only:
            relation = "mentions"  # "the scenes where Molly comes up": a verb of mentioning and none of speaking
        if relation == "together" and asked and len(asked_targets) == 1 and not _SAME_SCENE.search(asked):
            # "Phoebe wanted a simple wedding, but Monica orders an ice sculpture. I want every scene that mentions a
            # sculpture": the asking part names one thing and joins it to nothing
            relation = max((r for r in scores if r != "together"), key=scores.__getitem__)
        runs = _runs(tokens)
        people = self._people(tokens, runs)
        reading.people = {p.text: list(s) for p, s in people}
        subject = _subject(tokens, people) or _fragment_speaker(tokens, people)
        if subject is None and not quotes and _pronoun_says(tokens) and not _pronoun_speaks(tokens):
            # "Monica on kids: the scenes where she says kid or kids": the one person named says it; "joey's whoa -
            # how many times does he say it": the one person named is its possessor
            if len({s for _, s in people if s}) == 1:
                subject = _named_speaker(tokens, people) or next(((p, s) for p, s in people if s), None)
        if subject is None and quotes and not _ANYONE_SAYS.search(asked or q):
            # (not "... Ross asks for twenty bucks. In how many episodes does somebody say 'bucks'?": anyone's lines)
            subject = self._quote_owner(q, tokens, people) or self._quote_sayer(q, quotes[0], tokens, people)
        if subject is None and quotes and (_pronoun_says(tokens) or _PRONOUN_GOING.search(marked)) and len(
                {s for _, s in people if s}) == 1:
            # "monica can't stand losing - which scenes have her saying the word "win"?": the one person named
            subject = _named_speaker(tokens, people) or next(((p, s) for p, s in people if s), None)
        if subject is None and quotes and (_pronoun_says(tokens) or _PRONOUN_GOING.search(marked)):
            # "pheebs shortening rachel's name... which bits have her saying 'rach'": of two named, the one who is
            # no possessor does it
            acting = [(p, s) for p, s in people if s and not tokens[p.end - 1].possessive]
            if len({s for _, s in acting}) == 1 and len({s for _, s in people if s}) == 2:
                subject = acting[0]
        if subject is None and len({s for _, s in people if s}) >= 2 and (
                _pronoun_says(asked_tokens or tokens) or _PRONOUN_GOING.search(asked or marked)):
            # "Chandler's comebacks end in 'huh?', like '..., huh, Mon?'. Which scenes have him saying huh?": of the
            # people named, the one the pronoun can be
            subject = self._by_pronoun(asked_tokens or tokens, people)
        if (subject is not None and (asked_targets or (asked and _ANYONE_SAYS.search(asked)))
                and not _PRONOUN.search(_WHICH_ONES.sub(" ", asked))
                and subject[0].words[-1].lower() not in asked_words):
            subject = None  # "ross yelling 'people need juice!!' got me wondering, what eps mention juice": anyone's lines
        reading.subject = subject[0].text if subject else None
        # "... the other waiters call him Dragon. Pull up every scene where the word dragon shows up": a name someone
        # is called in the memory is no name said, when the asking part names its own target
        called = _CALLED_AS.search(asked if asked and asked_targets else q)
        caller = subject or _named_speaker(tokens, people)
        if called and caller and called.group(1).lower() not in FRAME and self.vocabulary.occurs([called.group(1).lower()]):
            # "When does Rachel address Joey as Joe?", "rach shortening joey's name to joe": the name she says
            return AggregateQuery(called.group(1), False, caller[1], group_of(q), count_unit(q), "mentions",
                                  forms=((tuple(normalise_words(called.group(1))),),), reading=reading)
        if subject and len(subject[1]) == 1 and len(subject[1][0].split()) > 1 and _OWN_FULL_NAME.search(q):
            # "which scenes does he say his own full name": the speaker's name as the transcripts write it, said by him
            name = subject[1][0]
            return AggregateQuery(name, False, subject[1], group_of(q), count_unit(q), "mentions",
                                  forms=((tuple(normalise_words(name)),),), reading=reading)
        objects = self._objects(tokens, runs, exclude=_with_verb(tokens, subject[0]) if subject else None)
        if relation == "together" and len(objects) == 1 and not quotes and _TOGETHER_CUE.search(q):
            objects += self._rest_of_run(tokens, runs, objects[0])
        if asked_targets:  # the targets the asking part names, not those of the memory before it
            objects = [o for o in objects if tuple(normalise_words(o.text)) in asked_targets] or objects
        elif asked and _ONE_BACK.search(asked):
            # "someone flipping through a magazine on the couch... how many lines mention one?": "one" is a thing
            # named with "a" before it
            counted = [o for o in objects if o.start > 0 and tokens[o.start - 1].low in ("a", "an") and not o.name]
            if not counted:  # "flipping through a magazine": the noun after "a", though a longer phrase was read
                counted = [PhraseSpan((t.text,), i, i + 1, False) for i, t in enumerate(tokens[1:], 1)
                           if tokens[i - 1].low in ("a", "an") and t.low not in FRAME and t.low not in SOFT
                           and not t.capital and self.vocabulary.occurs([t.low])]
            objects = counted[-1:] + [o for o in objects if o not in counted[-1:]] if counted else objects
        elif not quotes and _POINTS_TO_THING.search(asked or q):
            # "i feel like phoebe would bring up yoga ..., find me every scene that mentions it": "it" is the thing
            named = {tuple(p.words) for p, s in people if s}
            objects = [o for o in objects if tuple(o.words) not in named] or objects
        if (not objects or (asked and not asked_targets)) and not quotes:
            # "... in how many scenes does puking come up?": a form no line writes, whose stem the index holds
            inflected = self._unwritten_inflection(asked_tokens if asked else tokens, tokens)
            if inflected is not None:
                objects = [inflected]
        if not objects and subject is not None and relation in ("mentions", "together") and not quotes and mentioned_only:
            # "chloe mentioned": her name is what is mentioned, not who speaks; with nothing else named, nothing is
            # mentioned together with it ("... scenes where her name, Molly, comes up")
            objects, subject, relation = [subject[0]], None, "mentions"
        if subject is not None:  # "a guy named terry talks ... which scenes does terry speak in": he is no target
            objects = [o for o in objects if not (o.name and self.vocabulary.resolve_speakers(o.text) == subject[1])]
        if relation == "mentions" and not quotes and _PRONOUN_MENTIONED.search(asked or q):
            # "Rachel's boss at Ralph Lauren, Mr. Zelner (...) - what scenes is he mentioned in": "he" is the person
            # the question names, not a possessor nor one named after a preposition (where he works)
            persons = [o for o in objects if o.name and self.vocabulary.resolve_speakers(o.text) and not _possessed(tokens, o)
                       and not (o.start > 0 and tokens[o.start - 1].low in _BEFORE_A_PLACE)] if len(objects) > 1 else []
            if persons:  # the first named
                objects = persons[:1]
        if relation == "mentions" and not quotes and _ONE_NAME.search(asked or q):
            # "charlie wheeler the paleontologist who dates joey then ross - scenes where her name comes up", "ross came
            # back from china with a girlfriend julie — scenes where her name comes up": the person the memory
            # describes, the first named who is not a main character (else the first), not possessed, by the name
            # the lines call them (her first name, unless a title); anyone may say it
            named = [(p, s) for p, s in people if s and not _possessed(tokens, p)]
            if named:
                counts = self.vocabulary.speakers()
                person = next((p for p, s in named if not any(is_main_speaker(x, counts) for x in s)), named[0][0])
                subject = None
                first = person.words[0]
                if (len(person.words) > 1 and first.lower().strip(".") not in _TITLES
                        and self.vocabulary.resolve_speakers(first) == self.vocabulary.resolve_speakers(person.text)):
                    person = PhraseSpan((first,), person.start, person.start + 1, True)
                objects = [person]
        if not quotes and _BOTH_NAMES.search(asked or q):
            # "Phoebe's little brother Frank married his old home-ec teacher Alice — the scenes where both of their
            # names come up": the two people named, not their possessor
            named = [p for p, s in people if s and not _possessed(tokens, p)]
            if len(named) == 2:
                objects, relation = named, "together"
        reading.targets = [" ".join(o.words) for o in objects]
        # "(the band doesn't count)" asks none; "the vegas eps - ... scenes set on the casino floor" asks for scenes
        count = count_unit(_PARENTHESIS.sub(" ", asked if asked and _COUNT.search(asked) else q))
        group = group_of(asked if asked and _GROUP_WORD.search(asked) else q)

        relatives = self._relatives(q) if not quotes and (_SPEAKING_WORDS.search(q) or relation == "speaks") else ()
        named_others = [s for p, s in people if s and not tokens[p.end - 1].possessive and not set(s) & set(relatives)]
        if relatives and not named_others and not _MENTION_CUE.search(asked or q):
            # "In which scenes do Joshua's parents speak?"; but "Bitsy Hannigan, Mike's mother" is named
            return AggregateQuery(None, False, relatives, group, count, "speaks", reading=reading)

        speakers = subject[1] if subject else ()
        if asked and _POINTS_BACK.search(asked) and _SPEAKING_WORDS.search(asked):
            role = self._role_speaking(asked_tokens)
            if role:  # "the guy officiating carol and susans wedding ... how many lines does that minister get"
                return AggregateQuery(None, False, role, group, count, "speaks", reading=reading)
        described = _DIALOGUE_OF_DESCRIBED.search(q) if not quotes and subject is None else None
        speaking = _DESCRIBED_SPEAKS.search(q) if not quotes and described is None else None
        if speaking is not None and speaking.group(1).lower() not in FRAME and not self._role_speaking(tokens):
            # "the scenes where the physician treating Joey has dialogue": the physician speaks, not Joey
            reading.speaker_from = "described"
            return AggregateQuery(None, False, (), group, count, "speaks", reading=reading)
        if described is not None:
            role = self._role_after(q[described.end():])
            if role:  # "lines spoken by the Minister": the speaker the transcripts call "Minister"
                return AggregateQuery(None, False, role, group, count, "speaks", reading=reading)
            # "Scenes with dialogue from the coma patient that Monica and Phoebe look after": who that is, the pipeline
            # asks the scenes the question retrieves
            reading.speaker_from = "described"
            return AggregateQuery(None, False, (), group, count, "speaks", reading=reading)
        if subject is not None and not quotes and asked_speaks and subject[0].words[-1].lower() not in asked_words:
            # "the doc who tells joey ... in the ep where phoebe has the triplets - scenes he's got lines in": phoebe
            # acts in the memory; "he" is who speaks
            subject = None
        # "the clooney doctor from the ep where rachel uses monicas insurance... dr mitchel? what scenes is he talking
        # in": a name given as a guess is who "he" is, whoever else does something in the memory
        speaks_back = not quotes and _pronoun_speaks(tokens)
        guessed = self._guessed_name(q) if speaks_back and (subject is None or asked) else None
        if speaks_back and (subject is None or guessed):
            # "Bonnie, the girlfriend ...: which scenes does she speak in?": the one person named speaks; of several,
            # the one whose name is a guess ("the homeless lady phoebe gives her soup to... lizzy? scenes where she talks")
            guessed = guessed or (None if _named_speaker(tokens, people) else self._described_name(q))
            person = guessed or _named_speaker(tokens, people)
            reading.speaker_from = "guess" if guessed else "first named" if person else "described"
            # nobody named speaks ("that vegas lady at the blackjack table ... - scenes where she talks"): the
            # pipeline asks the scenes the description retrieves who she is
            return AggregateQuery(None, False, person[1] if person else (), group, count, "speaks", reading=reading)
        if quotes and not speakers:
            quoted = self._quoted_speaker(q)
            if quoted:  # "when does 'Fake Monica' say something?": a speaker's name in quotes
                return AggregateQuery(None, False, quoted, group, count, "speaks", reading=reading)
        if quotes:
            if relation == "together" and len(quotes) >= 2:
                return AggregateQuery(quotes[0], True, speakers, group, count, "together", (quotes[1],), reading=reading)
            if relation == "together" and len(quotes) == 1 and objects and _TOGETHER_CUE.search(q):
                # "which scenes mention both 'naked' and a window": the quoted word and the thing named
                return AggregateQuery(quotes[0], False, speakers, group, count, "together", (objects[0].text,),
                                      forms=((tuple(normalise_words(quotes[0])),), self._forms(objects[0])),
                                      reading=reading)
            either = _quoted_alternatives(q, quotes)
            if len(either) > 1:  # "'whats the big deal' or 'no big deal'": either said
                return AggregateQuery(" or ".join(either), True, speakers, group, count, "mentions",
                                      forms=(tuple(tuple(normalise_words(x)) for x in either),), reading=reading)
            loose = self._word_of_similar(q, quotes[0])
            if loose is not None:  # "chandler goes 'this is awkward' or similar": any line with "awkward"
                return AggregateQuery(loose, False, speakers, group, count, "mentions", forms=(((loose,),),),
                                      reading=reading)
            if self._exclaimed(q, quotes[0]):  # "Monica's 'I know!'": the exclamation, not every "I know"
                return AggregateQuery(quotes[0], True, speakers, group, count, "mentions", punctuation="!", reading=reading)
            said = _said_forms(quotes[0])
            if len(said) > 1:  # "that's so sweet" is also written "that is so sweet"
                return AggregateQuery(quotes[0], True, speakers, group, count, "mentions", forms=(said,), reading=reading)
            template = _template_form(quotes[0])
            if template is not None:  # 'a line of the form "Could X be any more..."': any words where X stands
                return AggregateQuery(quotes[0], True, speakers, group, count, "mentions", forms=((template,),),
                                      reading=reading)
            return AggregateQuery(quotes[0], True, speakers, group, count, "mentions", reading=reading)
        if relation != "speaks" and not quotes and subject is None and _SPEAKING_WORDS.search(asked or q):
            role = self._role_speaking(asked_tokens or tokens)
            role_words = {w for name in role for w in name_words(name)}
            if role and all(set(normalise_words(o.text)) <= role_words for o in objects):
                # "which scenes give the salesman character any dialogue", "scenes where a janitor talks"
                return AggregateQuery(None, False, role, group, count, "speaks", reading=reading)
        says_my = any(_says_my(tokens, o) for o in objects)
        if relation == "speaks" and says_my:
            relation = "mentions"  # "scenes where she says my brother": words said, as if quoted
        if (relation == "speaks" and objects and asked
                and re.search(rf"\b(?:say|says|said|saying)\s+{re.escape(objects[0].text)}\b", asked, re.I)):
            relation = "mentions"  # "chandler being jealous of richard, what scenes does he actually say richard"
            if not speakers and re.search(r"\b(?:does|did|do|is|was)\s+(?:he|she)\b", asked, re.I):
                said = tuple(objects[0].words)  # "he" is the one person named who is not the name he says
                speakers = next((s for p, s in people if s and tuple(p.words) != said), ())
        if relation == "speaks" and subject and objects:
            relation = "mentions"  # "does Rachel say Emma's name": the speaker says something named
        if (relation == "speaks" and asked_targets and subject is None and not _SPEAKING_WORDS.search(asked or "")
                and not _PRONOUN.search(_IN_THEM.sub(" ", asked or ""))):
            relation = "mentions"  # "... he goes to hug rachel... what other scenes have an umbrella in them"
        if relation == "speaks" or (not objects and subject):
            # "Chandler's mom Nora Bing": the possessor is not who speaks when someone else is named
            person = subject or _named_speaker(tokens, people) or next(((p, s) for p, s in people if s), None)
            if person is not None and person[1]:
                return AggregateQuery(None, False, person[1], group, count, "speaks", reading=reading)
            role = self._role_speaking(tokens) if relation == "speaks" else ()
            if role:  # "how many lines does the minister have": the speaker the transcripts call "Minister"
                return AggregateQuery(None, False, role, group, count, "speaks", reading=reading)
            # nobody of that name speaks: the name is mentioned (Marcel "appears" in stage directions)
        home = self._home(tokens, people) if relation == "setting" or _SET_AT.search(asked or q) else None
        if home is not None:  # "scenes set at chandler n joey's place": their home, as the headings name it
            phrase, owners = home
            homes = tuple(dict.fromkeys([owners, *self._also_called(question)]))
            orders = [o for h in homes for o in ([h, h[::-1]] if len(h) == 2 else [h])]
            return AggregateQuery(phrase, False, (), group, count, "setting", owners=homes,
                                  forms=(tuple(tuple(" and ".join(o).split()) for o in orders),), reading=reading)
        if not objects:
            return AggregateQuery(None, False, speakers, group, count, relation, reading=reading)
        forms = tuple(self._forms(o) for o in objects)
        if says_my:  # "rachel says my mom or my mother": "my mom", not any mom
            forms = tuple(tuple(("my",) + f for f in fs) if o.start > 0 and tokens[o.start - 1].low == "my" else fs
                          for o, fs in zip(objects, forms))
        chains = _alternatives(tokens, objects)
        if relation == "together" and len(chains) >= 2:  # "moving in or out and a box or boxes": either of each
            first, second = sorted(chains[:2], key=lambda c: objects[c[0]].start)
            return AggregateQuery(" or ".join(objects[i].text for i in first), False, speakers, group, count, "together",
                                  (" or ".join(objects[i].text for i in second),),
                                  forms=tuple(tuple(dict.fromkeys(f for i in c for f in forms[i])) for c in (first, second)),
                                  reading=reading)
        either = _alternative(tokens, objects)
        if (relation == "mentions" and either is not None and len(either) < len(objects) and not quotes
                and _SAME_SCENE.search(q) and not any(_within(objects[k], objects[i]) or _within(objects[i], objects[k])
                                                      for k in range(len(objects)) if k not in either for i in either)):
            relation = "together"  # "moving in/out and boxes get mentioned too"; but "pheebs + cops. ... cop or police"
        if either is not None and relation == "together" and len(either) < len(objects):
            # "both a camera and pictures or photos": the camera, with either of the others
            first = min((i for i in range(len(objects)) if i not in either), key=lambda i: objects[i].start)
            ordered = sorted(either, key=lambda i: objects[i].start)
            return AggregateQuery(objects[first].text, False, speakers, group, count, "together",
                                  (" or ".join(objects[i].text for i in ordered),),
                                  forms=(forms[first], tuple(dict.fromkeys(f for i in ordered for f in forms[i]))),
                                  reading=reading)
        if either is None and relation == "together" and len(objects) >= 2 and not _JOINED.search(q):
            either = (0, 1)  # "bicycle scenes? like anything mentioning bikes": nothing joins them, so either counts
        if either is not None and (relation != "speaks" or not speakers):  # "smoking or cigarettes": either counts
            ordered = sorted(either, key=lambda i: objects[i].start)  # as the question says them
            either_forms = tuple(dict.fromkeys(f for i in ordered for f in forms[i]))
            return AggregateQuery(" or ".join(objects[i].text for i in ordered), False, speakers, group, count,
                                  "setting" if relation == "setting" else "mentions", forms=(either_forms,),
                                  excluded=self._excluded(question, either_forms) if relation != "setting" else (),
                                  setting_implied=relation == "setting" and not _says_where_set(q), reading=reading)
        if (len(objects) >= 2 and (relation in ("mentions", "setting") or (relation == "speaks" and not speakers))
                and not quotes and _SAME_SCENE.search(q)):
            relation = "together"  # "dancing AND weddings in the same scene"; "hospital + baby talk in the same scene"
        if relation == "setting" and subject is not None:
            relation = "mentions"  # "joey tribbiani saying italian": a speaker's words, not a place
        if relation == "together" and len(objects) >= 2 and _within(objects[1], objects[0]):
            relation = "mentions"  # "phoebe's rat babies and any other rats - which scenes mention rats?": rats
            objects, forms = [objects[1], objects[0]], (forms[1], forms[0])
        elif relation == "together" and len(objects) >= 2 and _within(objects[0], objects[1]):
            relation = "mentions"
        if relation == "together" and len(objects) >= 2:
            second, second_forms = objects[1].text, forms[1]
            either_second = _alternative(tokens, objects[1:])
            if either_second is not None:  # "a bra as well as panties or underwear": either of the second
                ordered = sorted(either_second, key=lambda i: objects[1 + i].start)
                second = " or ".join(objects[1 + i].text for i in ordered)
                second_forms = tuple(dict.fromkeys(f for i in ordered for f in forms[1 + i]))
            return AggregateQuery(objects[0].text, False, speakers, group, count, "together", (second,),
                                  forms=(forms[0], second_forms), reading=reading)
        first_after = objects[0].end
        if (relation in ("mentions", "speaks") and not speakers and first_after < len(tokens)
                and tokens[first_after].low in ("scene", "scenes") and not tokens[first_after].boundary_before):
            relation = "setting"  # "episodes with a hospital scene": scenes set there
        if relation == "setting" and (_MENTION_CUE.search(q) or _IN_THE_SCENES.search(_PARENTHESIS.sub(" ", q))) and not _SETTING_CUE.search(q):
            # "in how many eps do elevators come up", "what scenes is a closet in": mentioned, not a place scenes are set
            relation = "mentions"
        if (relation == "setting" and len(objects) == 1 and objects[0].name and not _SETTING_CUE.search(q)
                and not _SET_AT.search(q) and not _HAPPENS_AT.search(q) and self.vocabulary.resolve_speakers(objects[0].text)
                and not tokens[objects[0].end - 1].possessive
                and not (objects[0].start > 0 and tokens[objects[0].start - 1].low in ("at", "in", "inside"))):
            relation = "mentions"  # "count episodes estelle": a person is no place; nothing says where scenes are set
        if relation == "setting" and len(objects) > 1 and self.vocabulary.resolve_speakers(objects[0].text) and not (
                objects[0].start > 0 and tokens[objects[0].start - 1].possessive):
            # "phoebe waving pumpkin pie at chandler": a person is no place; the thing is what is mentioned
            objects = [o for o in objects if not self.vocabulary.resolve_speakers(o.text)] or objects
            forms = tuple(self._forms(o) for o in objects)
            if not (asked and _SETTING_CUE.search(asked)):  # "monica paces in a waiting room - scenes set in one"
                relation = "mentions"
        if relation == "setting":
            place, place_forms = objects[0], forms[0]
            at = next((k for k, o in enumerate(objects) if _after_place_word(tokens, o.start)), 0)
            if not _after_place_word(tokens, place.start) and at:  # "sitting around in a waiting room waiting for
                place, place_forms = objects[at], forms[at]  # news - which scenes are set in one": the room
            if asked and _SET_THERE.search(asked) and len(objects) > 1:
                # "Ross sits at a restaurant ... The place is Delmonico's - which scenes are set there?": "there" is
                # the place named last before it ("a house on the beach for the weekend": the beach)
                placed = [k for k, o in enumerate(objects) if _named_as_place(tokens, o.start)] or range(len(objects))
                last = max(placed, key=lambda k: objects[k].start)
                place, place_forms = objects[last], forms[last]
            owner = tokens[place.start - 1] if place.start > 0 else None
            if owner is not None and owner.possessive:  # "Chandler's office" is the place, not any office
                owned = f"{owner.text}'s {place.text}"
                owned_forms = tuple(f for f in _rooms(tuple(normalise_words(owned)), owned=True) if self.vocabulary.occurs(list(f)))
                if owned_forms:
                    return AggregateQuery(owned, False, (), group, count, "setting", forms=(owned_forms,),
                                          setting_implied=not _says_where_set(q), reading=reading)
            return AggregateQuery(place.text, False, (), group, count, "setting", forms=(place_forms,),
                                  setting_implied=not _says_where_set(q), reading=reading)
        target_forms = forms[0]
        if (speakers and objects[0].start > 0 and tokens[objects[0].start - 1].low in ("his", "her", "their")
                and objects[0].text.lower() in _KIN):
            # "Phoebe mentions her mom": the speaker says "my mom" (but "Ross mentioning his students" are any students)
            target_forms = tuple(("my",) + f for f in target_forms)
        return AggregateQuery(objects[0].text, False, speakers, group, count, "mentions", forms=(target_forms,),
                              excluded=self._excluded(question, target_forms), reading=reading)

    def _tokens(self, body: str, lower_case_names: set[str] | None) -> list[Token]:
        """The tokens of a question's body, names, described speakers and typos read (see `_named`,
        `_described_speakers`, `_corrected`)."""
        return self._corrected(self._described_speakers(self._named(tokenize(body), lower_case_names)))

    def _excluded(self, question: str, forms: Sequence[Sequence[str]]) -> tuple[tuple[str, ...], ...]:
        """The word sequences holding the target that the question leaves out ("not baking soda", "not 'under the
        bus'", "the Sweet Potato Pie restaurant" -> sweet potato pie): in each thing named after "not" / "except" /
        "skip" ..., the longest run of words around the target that some line holds, the target with more than
        articles beside it."""
        found: list[tuple[str, ...]] = []
        left_out = [m.group(0) for m in _EXCLUSION.finditer(question)] + [m.group(1) for m in _NOT_COUNTED.finditer(question)] + [
            m.group(1) for m in _EXCLUDED_AFTER.finditer(question) if re.search(r"excluded|left\s+out|not\s+included|aside",
                                                                                 m.group(0), re.I)]
        for text in left_out:
            for piece in _EXCLUDED_PIECE.split(text):
                words = normalise_words(piece or "")
                for form in forms:
                    n = len(form)
                    for i in range(len(words) - n + 1):
                        if contains(words[i:i + n], list(form), plural=True):
                            best = self._longest_around(words, i, i + n)
                            if best:
                                found.append(best)
        return tuple(dict.fromkeys(found))

    def _longest_around(self, words: list[str], start: int, end: int) -> tuple[str, ...] | None:
        """The longest sequence of `words` around words[start:end] (at most MAX_EXCLUDED words, more than articles
        beside it) that some line holds."""
        best: tuple[str, ...] | None = None
        for a in range(start, -1, -1):
            for b in range(end, len(words) + 1):
                w = words[a:b]
                if len(w) > MAX_EXCLUDED or (best is not None and len(w) <= len(best)):
                    continue
                if w[0] in SOFT or w[-1] in SOFT or all(x in SOFT for x in words[a:start] + words[end:b]):
                    continue
                if self.vocabulary.occurs(w):
                    best = tuple(w)
        return best

    def _also_called(self, question: str) -> list[tuple[str, ...]]:
        """The other names of a home a parenthesis gives ("(also called Monica's apartment)", "(aka monica's)"): the
        owners of each, as `_home` gives them."""
        homes = []
        for m in _ALSO_CALLED.finditer(question):
            tokens = tokenize(m.group(1))
            for i, t in enumerate(tokens):
                if not t.possessive:
                    continue
                names = [t] + ([tokens[i - 2]] if i >= 2 and tokens[i - 1].low in _OWNERS_JOINED else [])
                owners = tuple(first for n in names if (first := self._first_name(n)))
                if owners and len(owners) == len(names):
                    homes.append(owners[::-1])
        return homes

    def _first_name(self, token: Token) -> str | None:
        """The first name, as the transcripts spell it, of the speaker a token names ("rach" -> rachel); None when
        it names none."""
        speakers = self.vocabulary.resolve_speakers(self._nickname(token).text)
        return name_words(speakers[0])[0] if speakers else None

    def _home(self, tokens: list[Token], people: list[tuple[PhraseSpan, tuple[str, ...]]]) -> tuple[str, tuple[str, ...]] | None:
        """The home of one or two people a question names ("Chandler and Joey's apartment", "joey's place",
        "monica & chandler's apt"; "joey and chandler as roommates - scenes set in their apartment"): the phrase,
        and each owner's first name as the transcripts spell it."""
        people_named = list(dict.fromkeys(name_words(s[0])[0] for _, s in people if s))
        for i in range(1, len(tokens)):
            if tokens[i].low not in HOMES or tokens[i].boundary_before:
                continue
            pronoun = tokens[i - 1].low
            if (pronoun == "their" and len(people_named) == 2) or (pronoun in ("his", "her") and len(people_named) == 1):
                return " and ".join(o.capitalize() for o in people_named) + "'s " + tokens[i].text, tuple(people_named)
            if not tokens[i - 1].possessive:
                continue
            possessors = [tokens[i - 1]]
            if i >= 3 and tokens[i - 2].low in _OWNERS_JOINED and not tokens[i - 1].boundary_before:
                possessors.insert(0, tokens[i - 3])
            if self._first_name(possessors[-1]) is None:
                continue  # "joey's place": the possessor is someone; an unknown first of two is left out
            owners = [first for t in possessors if (first := self._first_name(t))]
            phrase = " and ".join(o.capitalize() for o in owners) + "'s " + tokens[i].text
            return phrase, tuple(owners)
        return None

    def _without_memory_after(self, question: str) -> str:
        """The question without a memory told after it ("any scene where a skirt gets brought up... like the one where
        Susie says he pulled up her skirt", "every scene where someone talks about graduating - I think Rachel
        complains about 'the graduation from hell'") when the part before asks for a list and names its own target:
        who acts in the memory and what is quoted there are not what is asked."""
        tail = _MEMORY_AFTER.search(question)
        if tail is None:
            return question
        head = question[:tail.start()]
        if not (_ASKS_ANYWHERE.search(head) and self._targets_of(head)):
            return question
        return head

    def _targets_of(self, text: str) -> set[tuple[str, ...]]:
        """The targets a part of a question names by itself (its quotes aside), as normalised words."""
        body = _ABBREVIATION.sub(r"\1", _REQUEST.sub(" , ", _plain_body(text)))
        tokens = self._tokens(body, self._lower_case_names(body))
        runs = _runs(tokens)
        targets = self._objects(tokens, runs, None)
        parts = [part for a, b in runs for part in _split_and(tokens, a, b, self.vocabulary.occurs)]  # "bras AND underwear"
        for o in targets:
            a, b = next(((a, b) for a, b in parts if a <= o.start and o.end <= b), (o.start, o.end))
            if any(not o.start <= i < o.end for i in range(a, b) if tokens[i].low not in SOFT):
                return set()  # "an animal doctor" is only "animal" to the lines: what is meant may be told before
        return {tuple(normalise_words(o.text)) for o in targets}

    def _described_speakers(self, tokens: list[Token]) -> list[Token]:
        """Tokens with a speaker called by a description in lower case read as a name when it speaks ("bits where
        the big bully talks": the transcripts' speaker "Big Bully"): two or three words that are a speaker's whole name,
        before speak / talk / say."""
        if self._described is None:
            self._described = {tuple(name.lower().split()) for name in self.vocabulary.speakers()
                               if 2 <= len(name.split()) <= 3 and name.replace(" ", "").isalpha()}
        out = list(tokens)
        for i in range(len(tokens)):
            for n in (3, 2):
                words = tokens[i:i + n]
                if len(words) < n or all(t.capital for t in words) or tuple(t.low for t in words) not in self._described:
                    continue  # "the fake monica talking": the speaker "Fake Monica", though "monica" alone is a name
                verb = _verb_at(tokens, i + n)
                if verb < len(tokens) and tokens[verb].low in _INTRANSITIVE:  # "answering machine mentions" is a noun
                    out[i:i + n] = [Token(t.text.capitalize(), t.low, True, t.possessive, t.boundary_before) for t in words]
                    break
        return out

    def _asking_part(self, body: str) -> str:
        """The sentences or dash-separated parts that ask, when the others only set the scene and the asking ones
        name their own target without a pronoun ("rachel is terrified of spiders right? find me all the scenes where
        a spider comes up" -> the second); else `body` ("Monica + towels: the scenes where she mentions towels")."""
        parts = [p for p in _part_ends(body).split(body) if p.strip(" ,")]
        asking = [p for p in parts if _ASKS.search(p) and not _EXAMPLE_LIST.search(p)]
        which = [p for p in asking if _WHICH_PARENTS.search(p)]
        if len(which) == 1 and len(asking) > 1:
            # "when chandler gets shipped off to tulsa everybody keeps bringing up the state — which scenes mention
            # oklahoma": the one part that asks which scenes is the question; the memory's "when" asks nothing
            asking = which
        # a pronoun in the asking part points back at the other parts, unless it is the scenes' own ("scenes with
        # keys and locks in them")
        if len(parts) < 2 or not asking or len(asking) == len(parts) or any(
                _PRONOUN.search(_IN_THEM.sub(" ", p)) for p in asking):
            return body
        candidate = " , ".join(asking)
        tokens = self._corrected(self._named(tokenize(candidate), self._lower_case_names(body)))
        runs = _runs(tokens)
        return candidate if self._people(tokens, runs) or self._objects(tokens, runs, None) else body

    def _guessed_name(self, question: str) -> tuple[PhraseSpan, tuple[str, ...]] | None:
        """The speaker whose name the question gives as a guess, followed by a question mark ("... lizzie? scenes
        where she talks", "tilly i think?"), typed as it may be (Lizzie ~ Lizzy)."""
        for m in _GUESSED.finditer(question):
            name = m.group(1)
            if name.lower() in FRAME or name.lower() in SOFT:
                continue
            speakers = self.vocabulary.resolve_speakers(name)
            first = name.split()[0]
            if not speakers and " " in name and first.lower() not in FRAME and first.lower() not in SOFT:
                speakers = self.vocabulary.resolve_speakers(first)  # "guru sag": Guru Saj, misspelt
                speakers = speakers if len(speakers) == 1 else ()
            if speakers and len(speakers) <= 2:
                return PhraseSpan(tuple(name.split()), 0, 0, True), speakers
        return None

    def _described_name(self, question: str) -> tuple[PhraseSpan, tuple[str, ...]] | None:
        """The speaker a description names after the person it describes, the last one ("... the divorced guy
        michael. what scenes does he talk in", "her date, a guy named Roy"), when one speaker has that name."""
        for m in reversed(list(_PERSON_NAMED.finditer(question))):
            name = m.group(1)
            if name.lower() in FRAME or name.lower() in SOFT or name.lower() not in self.speaker_words():
                continue
            speakers = self.vocabulary.resolve_speakers(name)
            if len(speakers) == 1:
                return PhraseSpan((name,), 0, 0, True), speakers
        return None

    def _named(self, tokens: list[Token], lower_case_names: set[str] | None) -> list[Token]:
        """Tokens with the lower-case words that are names marked as names ("phoebe's old singing partner leslie":
        the lines write Leslie as a name), and a name typed with its possessive "s" but no apostrophe before a word
        of its own ("joeys room", "Phoebes soy burger") read as the possessive."""
        out = []
        for i, t in enumerate(tokens):
            after = tokens[i + 1] if i + 1 < len(tokens) else None
            stem = t.low[:-1]
            if (not t.possessive and len(stem) >= 3 and t.low.endswith("s") and after is not None
                    and not after.boundary_before and after.low not in FRAME and after.low not in SOFT
                    and t.low not in self.speaker_words() and stem in self.speaker_words()
                    and self.vocabulary.capitalised(stem)):
                t = Token(t.text[:-1], stem, True, True, t.boundary_before)
            elif lower_case_names and t.low in lower_case_names:
                t = Token(t.text, t.low, True, t.possessive, t.boundary_before)
            elif (t.possessive and after is not None and after.low in _DIALOGUE and not after.boundary_before
                  and t.low in self.speaker_words()):  # "bill's lines": a speaker's, though the lines mostly say "bill"
                t = Token(t.text, t.low, True, t.possessive, t.boundary_before)
            elif (i == 0 or tokens[i - 1].low not in _WORD_SAID_BEFORE) and not (  # "Joey says Pheebs": the word itself
                    after is not None and after.capital and not after.boundary_before and not t.possessive
                    and self.vocabulary.occurs([t.low, after.low], plural=False)):  # "Santa Claus" is no "Santa" said to Chandler
                t = self._nickname(t)
            out.append(t)
        return out

    def _role_after(self, text: str) -> tuple[str, ...]:
        """The speakers whose whole name, "the" aside, is the first one to three words of `text` ("Minister ...",
        "waitress at ..." -> "The Waitress"); () when none is."""
        if self._roles is None:
            self._roles = {}
            for name in self.vocabulary.speakers():
                key = re.sub(r"^the\s+", "", " ".join(name_words(name)))  # "Maitre D'": maitre d
                self._roles.setdefault(key, []).append(name)
        words = [w.strip("'’") for w in re.findall(r"[A-Za-z][\w'’-]*", text)[:3]]
        for n in (3, 2, 1):
            if len(words) >= n and (found := self._roles.get(" ".join(words[:n]).lower())):
                return tuple(found)
        return ()

    def _role_speaking(self, tokens: list[Token]) -> tuple[str, ...]:
        """The speakers called by a role the question names with "the" (or "that": "how many lines does that minister
        get") where nothing describes it further ("does the minister have lines", "lines the minister has"; not "the
        guy who ..."), or that opens it with its lines ("casting director lines, which scenes")."""
        for n in (3, 2, 1):  # "casting director lines, ...", "announcer speaks in how many eps?"
            if (n < len(tokens) and (tokens[n].low in _DIALOGUE or tokens[n].low in _INTRANSITIVE)
                    and not any(t.low in FRAME or t.low in SOFT for t in tokens[:n])):
                role = self._role_after(" ".join(t.text for t in tokens[:n]))
                if role:
                    return role
        for i in range(len(tokens) - 1):
            if tokens[i].low not in ("the", "that", "this", "a", "an", "any", "some"):
                continue
            if _after_mention_verb(tokens, i + 1):
                continue  # "somebody talks about a photographer": the role is what is talked about, not who talks
            for n in (3, 2, 1):
                after = i + 1 + n
                if after > len(tokens) or any(t.low in FRAME for t in tokens[i + 1:after]):
                    continue
                if after < len(tokens) and tokens[after].low in ("character", "characters", "guy", "person", "voice"):
                    after += 1  # "the salesman character", "the janitor guy", "an announcer voice"
                if (after + 1 < len(tokens) and tokens[after].low == "with"
                        and any(t.low in _DIALOGUE for t in tokens[after + 1:after + 4])):
                    after = len(tokens)  # "a waitress with a speaking line"
                if after + 1 < len(tokens) and tokens[after].low in ("any", "some") and tokens[after + 1].low in _DIALOGUE:
                    after = len(tokens)  # "give the salesman character any dialogue"
                if after < len(tokens) and not tokens[after].boundary_before and tokens[after].low not in _ROLE_VERBS:
                    continue
                if (tokens[i].low in ("a", "an", "any", "some") and after < len(tokens)
                        and tokens[after].low not in _ROLE_VERBS):
                    continue  # "a janitor talks": any janitor who speaks; "a janitor" alone is mentioned
                if tokens[i].low != "the" and n == 1 and tokens[i + 1].low in _ANY_PERSON:
                    continue  # "that guy" points back at someone described, not at the speaker "Guy"
                role = self._role_after(" ".join(t.text for t in tokens[i + 1:i + 1 + n]))
                if role:
                    return role
        return ()

    def _nickname(self, token: Token) -> Token:
        """A speaker called by what the others call them ("pheebs", "Joe") as the first word of their name, when
        the lines write the word as a name and say it to that speaker; else the token as it is."""
        low = token.low
        if (len(low) < 3 or not low.isalpha() or low in FRAME or low in SOFT or low in _TITLES
                or low in self.speaker_words() or not self.vocabulary.capitalised(low)):
            return token
        speaker = self.vocabulary.addressee(low)
        first = next((w for w in speaker.split() if w.lower() not in _TITLES), None) if speaker else None
        if first is None or first.lower() == low or self.vocabulary.resolve_speakers(first) != self.vocabulary.resolve_speakers(speaker):
            return token
        return Token(first, first.lower(), True, token.possessive, token.boundary_before)

    def _quoted_speaker(self, question: str) -> tuple[str, ...]:
        """The speaker whose whole name is the first quote when what follows it is speaking ("'Fake Monica' say
        something", "'Big Bully' talks"); () otherwise."""
        first = _QUOTED.search(question)
        if first is None or not _SPEAKS_AFTER.match(question[first.end():]):
            return ()
        name = next(g for g in first.groups() if g).strip(" .,!?").lower()
        return tuple(s for s in self.vocabulary.speakers() if s.lower() == name)

    def _one_letter_off(self, word: str) -> list[str]:
        """The words one letter off `word` that some line writes as they are, its first letter kept: a word typed
        wrong at its start is rarely a typo ("hailing" is no "sailing")."""
        return [w for w in _one_edits(word) if w[:1] == word[:1] and self.vocabulary.term_known(w)
                and self.vocabulary.occurs([w], plural=False)]

    def _common_neighbour(self, word: str) -> str | None:
        """For a word at most RARE_TYPO_LINES lines hold, the word one letter off it (its first letter kept) that
        COMMON_WORD_LINES lines or more hold, when there is one: the lines' own typo is read as the word meant."""
        if word in _english_words():
            return None  # "alter" is a word of its own, however rare in the lines (not "altar")
        rare = self.vocabulary.lines([word], at_most=RARE_TYPO_LINES + 1)
        if rare > RARE_TYPO_LINES:
            return None
        counts = {w: self.vocabulary.lines([w], at_most=COMMON_WORD_LINES) for w in self._one_letter_off(word)}
        best = max(sorted(counts), key=counts.__getitem__, default=None)
        if best is None:
            return None
        # "embarassing" (2 lines) is "embarrassing" (27): a word of the language that many times as common
        common = counts[best] >= COMMON_WORD_LINES or (best in _english_words() and counts[best] >= COMMON_WORD_RATIO * rare)
        return best if common else None

    def _corrected(self, tokens: list[Token]) -> list[Token]:
        """Tokens with a word no line holds, typed one letter off a word the lines do hold, read as that word (the
        commonest such): "basketbal" -> basketball, "babysiting" -> babysitting; or two words the lines write apart
        ("chickenpox" -> chicken pox). Names and short words stay."""
        out = list(tokens)
        for i, t in enumerate(tokens):
            if t.capital or len(t.low) < 5 or not t.low.isalpha() or t.low in FRAME or t.low in SOFT:
                continue
            if self.vocabulary.occurs([t.low]):
                common = self._common_neighbour(t.low)
                if common is not None:  # "roomate": the transcripts' own typo once, "roommate" in 89 lines
                    out[i + len(out) - len(tokens)] = Token(common, common, t.capital, t.possessive, t.boundary_before)
                continue
            # a word some line writes as it is: "baldes" is only "bald" with an ending the matching allows
            known = self._one_letter_off(t.low)
            if not known:  # a letter doubled in the wrong place: "hannukah" is hanukkah (two changes)
                known = [w for w in self.vocabulary.spellings(t.low)[1:] if self.vocabulary.occurs([w])]
            if not known and t.low.endswith("ies"):  # "monkies": the plural of a word in -ey ("monkeys")
                known = [w for w in (t.low[:-3] + "eys",) if self.vocabulary.occurs([w])]
            if not known:  # "doughnuts": the lines spell it "donuts"
                known = [w for w in self.vocabulary.variants(t.low)[1:] if self.vocabulary.occurs([w])]
            if t.low.endswith(("ing", "ed")) and self.vocabulary.term_known(t.low):
                # "puking": no line writes it, but its stem is indexed (puke, puked), and "poking" is another word;
                # "babysiting" is babysitting, of the same stem
                stem = self.vocabulary.store.analyze(t.low)
                known = [w for w in known if self.vocabulary.store.analyze(w) == stem]
            if not known:  # "chickenpox": two words the lines write apart ("chicken pox")
                halves = [(t.low[:k], t.low[k:]) for k in range(3, len(t.low) - 2)
                          if self.vocabulary.occurs([t.low[:k], t.low[k:]], plural=False)]
                if halves:
                    first, second = max(halves, key=lambda h: self.vocabulary.lines(list(h), at_most=200))
                    at = i + len(out) - len(tokens)  # where the token is now, after earlier splits
                    out[at:at + 1] = [Token(first, first, False, False, t.boundary_before),
                                      Token(second, second, False, t.possessive, False)]
                    continue
            if known:
                best = max(sorted(known), key=lambda w: self.vocabulary.lines([w], at_most=200))
                # a speaker's name typed one letter off ("hilary") is still a name, but not a word of a role's name
                # that the lines write in lower case ("weding" is wedding, not the "Wedding Planner")
                named = best in self.speaker_words() and self.vocabulary.capitalised(best)
                out[i + len(out) - len(tokens)] = Token(best, best, t.capital or named, t.possessive, t.boundary_before)
        return out

    def _quote_owner(self, question: str, tokens: list[Token], people: list[tuple[PhraseSpan, tuple[str, ...]]]
                     ) -> tuple[PhraseSpan, tuple[str, ...]] | None:
        """Who says the first quote when the question puts it so: "Joey's "check it out"", "Joey's catchphrase
        'how you doin'", "Rachel going 'ugh'"."""
        first = _QUOTED.search(question)
        before = question[:first.start()] if first else ""
        owner = _QUOTE_OWNER.search(before) if first else None
        if owner is None or _SOMEONE.search(question[:owner.start()]) or re.search(r"\bname\b", owner.group(0), re.I):
            return None  # "does someone say Chandler's full name, "Chandler Bing"": the name is his, not what he says
        while owner is not None:  # "scenes where ross stops everyone with a ...": the first word that is a person
            name = owner.group(1).lower()
            called = self._nickname(Token(owner.group(1), name, True, False, False)).low  # "pheebs going 'ooh cool!'"
            found = next(((p, s) for p, s in people if s and p.words[-1].lower() in (name, called)), None)
            if found is not None:
                return found
            owner = _QUOTE_OWNER.search(before, owner.start(1) + 1)
        return None

    def _quote_sayer(self, question: str, quote: str, tokens: list[Token], people: list[tuple[PhraseSpan, tuple[str, ...]]]
                     ) -> tuple[PhraseSpan, tuple[str, ...]] | None:
        """Who says the first quote when a name or "he" / "she" comes right before the saying: "which scenes have
        rachel actually saying 'gunther'"; "he" / "she" is the one person named, no possessor, whose name is not the
        quote ("phoebe ends up marrying mike hannigan, so how many times does she actually say 'mike'")."""
        first = _QUOTED.search(question)
        # "joey (chandler's roommate, the actor) goes "uh-oh"": the aside is not between him and his words
        # ... nor an apposition: "every time Joey, the struggling actor from across the hall, goes 'oh man!'"
        before = _APPOSITION.sub(" ", _PARENTHESIS.sub(" ", question[:first.start()])) if first else ""
        sayer = (_SAYS_BEFORE_QUOTE.search(" ".join(before.split()) + " ") or _ONLY_A_NAME.match(before)) if first else None
        if sayer is None:
            return None
        said = set(normalise_words(quote))
        named = [(p, s) for p, s in people
                 if s and not tokens[p.end - 1].possessive and not {w.lower() for w in p.words} & said]
        word = sayer.group(1).lower()
        if word in ("he", "she"):
            return named[0] if len({s for _, s in named}) == 1 else None
        return next(((p, s) for p, s in named if p.words[-1].lower() == word), None)

    def _lower_case_names(self, text: str) -> set[str] | None:
        """In a question typed in lower case ("phoebe's old singing partner leslie"), its words that are names: words
        the collection's speakers are called by (with 3 lines or more) that the lines write capitalised ("boss" of
        "Rachel's Boss" is not); None when the question has capitals after its first word."""
        words = [re.sub(r"['’]s?$", "", w) for w in re.findall(r"[A-Za-z][\w'’]*", text)]  # "joey's" is joey
        if any(w[:1].isupper() and not _FIRST_PERSON.match(w) for w in words[1:]):
            # capitals say which words are names, but a main character's first name typed in lower case among them
            # is one too ("Gunther, the Central Perk guy, ... which scenes have rachel saying 'gunther'")
            return {w.lower() for w in words if w.islower() and w in self.vocabulary.main_first_names()} or None
        return {w.lower() for w in words if (w.lower() in self.speaker_words() and self.vocabulary.capitalised(w.lower()))
                or self.vocabulary.mistyped_name(w.lower())}

    def speaker_words(self) -> set[str]:
        """The words of the names of the speakers with 3 lines or more (no frame words, titles or short words)."""
        if self._speaker_words is None:
            self._speaker_words = {w for name, lines in self.vocabulary.speakers().items() if lines >= 3
                                   for w in name_words(name) if len(w) >= 3 and w.isalpha()} - FRAME - SOFT - _TITLES
        return self._speaker_words

    def _forms(self, span: PhraseSpan) -> tuple[tuple[str, ...], ...]:
        """The word sequences that count as the target: its words, with the spellings of a name the index holds
        (at most 8 forms), and without a leading title (Mr. Heckles ~ Heckles)."""
        words = [normalise_words(w) for w in span.words]
        flat = [w for ws in words for w in ws]
        options = [self.vocabulary.spellings(w) if span.name else self.vocabulary.variants(w) for w in flat]
        forms: list[tuple[str, ...]] = [()]
        for opts in options:
            forms = [f + (o,) for f in forms for o in opts][:8]
        if len(flat) > 1 and flat[0] in _TITLES and len(self.vocabulary.resolve_speakers(" ".join(flat[1:]))) <= 1:
            forms.append(tuple(flat[1:]))  # "Mr. Heckles" ~ "Heckles"; but "Dr. Geller" is not any Geller
        if len(flat) == 1 and flat[0] in _KIN:  # "mom" ~ "mother" ~ "mommy"
            forms += [(w,) for w in _KIN[flat[0]]]
        forms += _rooms(tuple(flat))[1:]
        if not span.name:
            forms += self._compounds(flat) + self._quality(flat)
        return tuple(dict.fromkeys(forms))

    def _quality(self, words: list[str]) -> list[tuple[str, ...]]:
        """A quality named by its noun also said by its adjective, as the lines say it ("baldness" ~ "bald",
        "weirdness" ~ "weird", "happiness" ~ "happy")."""
        if len(words) != 1 or not words[0].endswith("ness") or len(words[0]) < 8:
            return []
        stem = words[0][:-4]
        for adjective in (stem, stem[:-1] + "y" if stem.endswith("i") else stem):
            if self.vocabulary.term_known(adjective) and self.vocabulary.occurs([adjective], plural=False):
                return [(adjective,)]
        return []

    def _compounds(self, words: list[str]) -> list[tuple[str, ...]]:
        """A compound written as one word or as two that the lines also hold ("haircut" ~ "hair cut")."""
        v = self.vocabulary
        if len(words) == 2 and words[0].isalpha() and words[1].isalpha() and v.term_known(words[0] + words[1]):
            return [(words[0] + words[1],)]
        if len(words) == 1 and words[0].isalpha():
            w = words[0]
            return [(w[:i], w[i:]) for i in range(3, len(w) - 2)
                    if v.term_known(w[:i]) and v.term_known(w[i:]) and v.occurs([w[:i], w[i:]], plural=False)][:1]
        return []

    def _people(self, tokens: list[Token], runs: list[tuple[int, int]]) -> list[tuple[PhraseSpan, tuple[str, ...]]]:
        """Name spans that are speakers of the collection, with the speakers they mean."""
        out = []
        for start, end in runs:
            for span in _name_spans(tokens, start, end):
                speakers = self.vocabulary.resolve_speakers(span.text)
                if not speakers and len(span.words) > 1:  # "Dr. Leonard Green", "Cousin Cassie": a title first
                    speakers = self.vocabulary.resolve_speakers(" ".join(span.words[1:]))
                joiner = max((k for k, w in enumerate(span.words) if w.lower() in NAME_JOINERS), default=None)
                if not speakers and joiner is not None and joiner + 1 < len(span.words) and span.start == 0:
                    # "Half of Chandler's comebacks ...": the first word is capitalised only because it opens
                    after = PhraseSpan(span.words[joiner + 1:], span.start + joiner + 1, span.end, True)
                    found = self.vocabulary.resolve_speakers(after.text)
                    if found:
                        span, speakers = after, found
                verb = _verb_at(tokens, span.end)
                if (not speakers and len(span.words) > 1 and span.words[0].lower() not in _TITLES
                        and (verb < len(tokens) and tokens[verb].low in _ACTIVE or _pronoun_speaks(tokens))):
                    # "Rob Dohnen talks": the transcripts call him Rob; a first name when one speaker has it and the
                    # name speaks ("Ken Adams, the fake name Joey gives" is no speaker)
                    alone = self.vocabulary.resolve_speakers(span.words[0])
                    speakers = alone if len(alone) == 1 else ()
                owned = self._role_speaker(tokens, span)
                if owned is not None:  # "Joey's doctor": the speaker the transcripts call "Joey's Doctor"
                    span, speakers = owned
                if speakers:
                    out.append((span, speakers))
        # "mr geller, jack,": a name right after an ambiguous one says which of its speakers is meant
        narrowed: list[tuple[PhraseSpan, tuple[str, ...]]] = []
        for span, speakers in out:
            if narrowed and span.start == narrowed[-1][0].end and len(narrowed[-1][1]) > 1:
                both = tuple(s for s in narrowed[-1][1] if s in speakers)
                if both and len(both) < len(narrowed[-1][1]):
                    narrowed[-1] = (narrowed[-1][0], both)
                    continue
            narrowed.append((span, speakers))
        return narrowed

    def _role_speaker(self, tokens: list[Token], span: PhraseSpan) -> tuple[PhraseSpan, tuple[str, ...]] | None:
        """A possessive name and the word after it when a speaker is called exactly that ("Joey's doctor" is the
        speaker "Joey's Doctor", not Joey)."""
        if span.end >= len(tokens) or not tokens[span.end - 1].possessive or tokens[span.end].boundary_before:
            return None
        after = span.end + 1
        if after < len(tokens) and tokens[after].capital and not tokens[after].boundary_before:
            return None  # "Joey's sister Dina": the name that follows is who is meant
        called = f"{span.text}'s {tokens[span.end].text}"
        words = name_words(called)
        exact = tuple(s for s in self.vocabulary.resolve_speakers(called) if name_words(s) == words)
        if not exact:
            return None
        return PhraseSpan((*span.words, tokens[span.end].text), span.start, span.end + 1, True), exact

    def _objects(self, tokens: list[Token], runs: list[tuple[int, int]], exclude: PhraseSpan | None) -> list[PhraseSpan]:
        """The targets of the runs: in each, its longest attested name, else its longest attested phrase; names
        first, then in the order of the question."""
        names: list[PhraseSpan] = []
        phrases: list[PhraseSpan] = []
        later: list[PhraseSpan] = []  # in a clause of time ("Dr. Franzblau's lines when Carol has the baby")
        clause = _time_clause(tokens)
        for start, end in runs:
            if exclude is not None and exclude.start <= start and end <= exclude.end:
                continue  # the speaker and the verb of speaking ("Joey is going on about")
            if exclude is not None and end == exclude.start and tokens[end].boundary_before and _describes(tokens[start:end]):
                continue  # "Phoebe's real father, Frank Buffay Sr., speak": a description set before the speaker
            start = self._after_possessor(tokens, start, end)
            if exclude is not None and start <= exclude.start < end:
                # the speaker's own run: what follows the speaker may still be a target ("Joey call Phoebe" is not),
                # but not a description after the name ("tommy the screamer")
                if exclude.end < end and tokens[exclude.end].low in ("the", "a", "an"):
                    continue
                start = max(start, exclude.end)
            if end - start == 1 and tokens[start].possessive and end < len(tokens) and tokens[end].low in _HAS_OR_IS_AFTER:
                continue  # "eps where joey's got some helmet on": Joey has, he is no target
            for part in _split_and(tokens, start, end, self.vocabulary.occurs):
                if _done_to_it(tokens, part):
                    continue  # "a helmet is worn or talked about": what is done to the target
                span = self._attested(tokens, *part)
                if span is not None:
                    span = self._with_particle(tokens, span)
                    (later if clause[0] <= span.start < clause[1] else names if span.name else phrases).append(span)
        if len(phrases) > 1:  # what follows "talks about" / "mention" first ("ross's spray tan disaster obviously but
            # any other eps where someone talks about getting tan"), then the most specific: the others are how the
            # question is put ("watch, play or talk about football", "eating or talking about ice cream")
            phrases.sort(key=lambda p: (not _after_mention_verb(tokens, p.start), -self.vocabulary.specificity(p.words)))
        if names or phrases or exclude is not None:
            return _distinct(names + phrases)
        return _distinct(later)

    def _attested_words_quoted(self, question: str) -> str:
        """A search-box fragment (lower case, at most `_ATTESTED_FRAGMENT_WORDS` words, no question mark) with its
        longest run of four words or more that some line holds word for word quoted: a title or a saying typed
        without quotes ("way you look tonight song"), whose own words ("you", "look") would otherwise frame it."""
        words = list(re.finditer(r"[A-Za-z][\w'’-]*", question))
        if (len(words) > _ATTESTED_FRAGMENT_WORDS or "?" in question
                or any(m.group(0)[:1].isupper() for m in words[1:])):
            return question
        for n in range(len(words), _ATTESTED_MIN_WORDS - 1, -1):
            for i in range(len(words) - n + 1):
                run = words[i:i + n]
                if (any(m.group(0).lower() in _ASKING_WORDS for m in run) or run[0].group(0).lower() in _NO_RUN_EDGE
                        or run[-1].group(0).lower() in _NO_RUN_EDGE):
                    continue  # "ross and rachel on a break": a run that ends in "on" is no title a line holds
                said = normalise_words(question[run[0].start():run[-1].end()])
                if len(said) == n and self.vocabulary.occurs(said, plural=False):
                    return f'{question[:run[0].start()]}"{question[run[0].start():run[-1].end()]}"{question[run[-1].end():]}'
        return question

    def _said_unquoted(self, question: str) -> str:
        """The question with the words a speaker says at its end put in quotes, when the lines hold them as they are
        and they are a stock phrase (two words or more, "thats so sweet"), not a thing ("says something about ...")."""
        m = _SAYS_AT_END.search(question) or _SAID_BY.search(question)  # "no way - said by rachel green, which scenes"
        if m is None:
            # "ross stops everyone with a wait a minute": a stock phrase is said even after "with"
            m = _WITH_SAID.search(question)
            if m is None or not self._stock_phrase(normalise_words(m.group(2))):
                return question
        words = normalise_words(m.group(2))
        if (len(words) < 2 or words[0] in _SPEECH or words[0] in ("something", "anything", "nothing", "about", "that", "the", "a", "my", "to")
                or words[-1] in _PLACE_AFTER_SET or words[-1] in ("for", "to", "about", "with", "from", "of", "total")
                or (all(w in FRAME for w in words) and not self._stock_phrase(words))
                or re.search(r"['’]s\b|\bnames?\b|\bwords?\b", m.group(2), re.I)):
            return question  # "say Rachel's name", "say coffee in", "said in total", "says my dad" (the speaker's own)
        if not any(self.vocabulary.occurs(list(f), plural=False) for f in _said_forms(m.group(2))):
            return question
        return question[:m.start(2)] + '"' + m.group(2) + '"' + question[m.end(2):]

    def _stock_phrase(self, words: list[str]) -> bool:
        """Whether words that only frame a question elsewhere ("how you doing") are a thing said often enough to be
        what is asked for: three words or more, in at least STOCK_PHRASE_LINES lines."""
        return len(words) >= 3 and self.vocabulary.lines(words, at_most=STOCK_PHRASE_LINES) >= STOCK_PHRASE_LINES

    def _word_of_similar(self, question: str, quote: str) -> str | None:
        """The rarest word of a quote of two words or more that the question lets be said in other ways ("'this is
        awkward' or similar", "... or something like that"); None otherwise."""
        written = _quote_written(question, quote)
        words = [w for w in dict.fromkeys(normalise_words(quote)) if self.vocabulary.analysed(w)]
        if written is None or not _OR_SIMILAR.match(question, written.end()) or len(normalise_words(quote)) < 2 or not words:
            return None
        return min(words, key=lambda w: (self.vocabulary.lines([w], at_most=COMMON_LINES), w))

    def _exclaimed(self, question: str, quote: str) -> bool:
        """Whether a quote written with "!" asks for the exclamation: the question quotes it so, and the words are
        so common (more than COMMON_LINES lines) that the "!" is what tells the catchphrase from everyday talk."""
        written = _quote_written(question, quote)
        return (written is not None and _quoted_text(written).rstrip().endswith("!")
                and self.vocabulary.lines(quote.split(), at_most=COMMON_LINES) > COMMON_LINES)

    def _relatives(self, question: str) -> tuple[str, ...]:
        """The speakers who are the relatives a question names of someone ("Joshua's parents", "joey's nonna"): a
        speaker called "X's <relative>", and those called by the relative's title and X's surname."""
        m = _RELATIVES.search(question)
        if m is None:
            return ()
        person = self.vocabulary.resolve_speakers(self._nickname(Token(m.group(1), m.group(1).lower(), True, False, False)).text)
        if not person:
            return ()
        first, kin = name_words(person[0])[0], m.group(2).lower()
        surname = name_words(person[0])[-1] if len(name_words(person[0])) > 1 else None
        kin_words = {kin, *(w for family in (_KIN.get(kin, ()),) for w in family)}
        found = []
        for name in self.vocabulary.speakers():
            words = name_words(name)
            if words[:1] == [f"{first}'s"] and words[1:2] and words[1] in kin_words:
                found.append(name)  # "Joey's Grandmother"
            elif surname and len(words) == 2 and words[1] == surname and words[0] in _RELATIVE_TITLES[kin]:
                found.append(name)  # "Mrs. Burgin", "Grandma Tribbiani"
        return tuple(found)

    def _unwritten_inflection(self, asked: list[Token], tokens: list[Token]) -> PhraseSpan | None:
        """The one word of `asked` in -ing / -ed that no line writes but whose stem the index holds ("puking": puke,
        puked), as a span of `tokens`; None unless there is exactly one."""
        found = [t for t in asked if not t.capital and len(t.low) > 4 and t.low.endswith(("ing", "ed"))
                 and t.low not in FRAME and t.low not in _ACTIVE and not self.vocabulary.occurs([t.low])
                 and self.vocabulary.term_known(t.low)]
        at = [i for i, t in enumerate(tokens) if found and t.low == found[0].low]
        return PhraseSpan((tokens[at[0]].text,), at[0], at[0] + 1, False) if len(found) == 1 and at else None

    def _with_particle(self, tokens: list[Token], span: PhraseSpan) -> PhraseSpan:
        """"breaking up", "moving in": the particle after a verb in -ing is part of the target where it ends the
        phrase and the lines say the two together ("breaking" alone is not "breaking up")."""
        i = span.end
        last = span.words[-1].lower()
        if (span.name or i >= len(tokens) or tokens[i].low not in _PARTICLES or tokens[i].boundary_before
                or not (last.endswith("ing") and len(last) > 5)):
            return span
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        if after is not None and not after.boundary_before and after.low not in FRAME and after.low not in SOFT:
            return span  # "moving in boxes": the particle leads to a noun of its own
        words = span.words + (tokens[i].text,)
        if not self.vocabulary.occurs(normalise_words(" ".join(words))):
            return span
        return PhraseSpan(words, span.start, i + 1, False)

    def _after_possessor(self, tokens: list[Token], start: int, end: int) -> int:
        """Where a run's target starts (module `_after_possessor`), unless the possessive is part of a name the
        index holds and no speaker is called by it ("Valentine's Day", not "Monica's restaurant")."""
        after = _after_possessor(tokens, start, end)
        owner = after - 1
        if (after > start and (tokens[owner].capital or self.vocabulary.capitalised(tokens[owner].low))  # "victoria's secret"
                and not self.vocabulary.resolve_speakers(tokens[owner].text)
                and self.vocabulary.occurs(normalise_words(" ".join(t.text for t in tokens[owner:end])))):
            return owner
        return after

    def _rest_of_run(self, tokens: list[Token], runs: list[tuple[int, int]], target: PhraseSpan) -> list[PhraseSpan]:
        """The other attested targets of the run that holds `target`, before and after it: "boyfriend girlfriend same
        scene" asks for two things in one scene though no line says "boyfriend girlfriend"."""
        run = next(((a, b) for a, b in runs if a <= target.start and target.end <= b), None)
        if run is None:
            return []
        found = [self._attested(tokens, a, b) for a, b in ((run[0], target.start), (target.end, run[1]))
                 if any(t.low not in SOFT and t.low not in FRAME for t in tokens[a:b])]
        return [f for f in found if f is not None and not f.name]

    def _attested(self, tokens: list[Token], start: int, end: int) -> PhraseSpan | None:
        """The run's target: its longest attested name (the description around it dropped), else its longest
        attested phrase; None when a word of it no line holds (in no spelling): that word is not dropped to keep
        the rest ("the espresso tamper" is not "espresso")."""
        for span in sorted(_name_spans(tokens, start, end), key=lambda s: -(s.end - s.start)):
            best = self._longest(tokens, span.start, span.end, name=True)
            if best is None:
                continue
            if self.vocabulary.resolve_speakers(best.text):
                before = [t for t in tokens[start:best.start] if t.low not in SOFT]
                after = [t for t in tokens[best.end:end] if t.low not in SOFT]
                # "the entertainment center Joey builds": a person between the target and a verb does something to
                # it ("Ross's son Ben" names Ben)
                phrase = self._longest(tokens, start, best.start, name=False) if before and after else None
                if phrase is not None:
                    return phrase
            elif best.end - best.start == 1:  # "Geller Cup" is whole; "Chinese" may qualify ("Chinese food")
                best = self._extended(tokens, best, end)
            return self._rarer_rest(tokens, start, end, best) or best
        for t in tokens[start:end]:
            if (t.low not in SOFT and self.vocabulary.analysed(t.low) and not self.vocabulary.term_known(t.low)
                    and len(self.vocabulary.spellings(t.low)) == 1):
                return None
        phrase = self._longest(tokens, start, end, name=False)
        if phrase is not None and phrase.end - phrase.start > 1 and phrase.words[0].lower() in _DOING:
            # "talk about playing blackjack": the thing done, however it is put
            rest = self._longest(tokens, phrase.start + 1, phrase.end, name=False)
            after = next((i for i in range(phrase.start + 1, phrase.end) if tokens[i].low not in SOFT), phrase.end)
            return rest if rest is not None and rest.start == after else phrase  # "driving a cab": the cab
        return phrase

    def _extended(self, tokens: list[Token], name: PhraseSpan, end: int) -> PhraseSpan:
        """A one-word name that is no person with the words after it while the longer phrase is attested ("Chinese
        food", not "Chinese")."""
        for stop in range(end, name.end, -1):
            words = tokens[name.start:stop]
            if words[-1].low in SOFT or any(t.possessive for t in words[:-1]):
                continue
            if self.vocabulary.occurs(normalise_words(" ".join(t.text for t in words))):
                return PhraseSpan(tuple(t.text for t in words), name.start, stop, True)
        return name

    def _rarer_rest(self, tokens: list[Token], start: int, end: int, name: PhraseSpan) -> PhraseSpan | None:
        """The attested phrase after a name in its run when it is far rarer than the name: then the name only
        qualifies it ("Thanksgiving trifle"), where a description after a name is commoner than the name ("the Geller
        Cup trophy")."""
        if name.end >= end:
            return None
        rest = self._longest(tokens, name.end, end, name=False)
        if rest is None:
            return None
        rare = self.vocabulary.lines(rest.words) * RARER_BY
        if self.vocabulary.lines(name.words, at_most=rare) >= rare:
            return rest
        return None

    def _longest(self, tokens: list[Token], start: int, end: int, name: bool) -> PhraseSpan | None:
        """The longest sub-phrase of tokens[start:end] that starts and ends with a target word and that some line
        holds. When the whole run is not attested and it holds several such phrases, none inside another ("the
        card game blackjack": card game, blackjack), the most specific one (the rarest word): the others describe it."""
        found: list[PhraseSpan] = []
        for length in range(end - start, 0, -1):
            for i in range(start, end - length + 1):
                if any(f.start <= i and i + length <= f.end for f in found):
                    continue
                words = tokens[i:i + length]
                if words[0].low in SOFT or words[-1].low in SOFT or words[0].low in _TITLES and length == 1:
                    continue
                said = normalise_words(" ".join(t.text for t in words))
                if self.vocabulary.occurs(said) or (len(said) == 2 and self._compounds(said)):  # "bath tub": bathtub
                    span = PhraseSpan(tuple(t.text for t in words), i, i + length, name and any(t.capital for t in words))
                    if name or length == end - start:
                        return span
                    found.append(span)
        if not found:
            return None
        found.sort(key=lambda f: f.start)
        for named, described in zip(found, found[1:]):
            last = named.words[-1].lower()
            if (described.start == named.end + 1 and tokens[named.end].low == "the"
                    and not (last.endswith("ing") and len(last) > 5) and last not in _DOING):
                return named  # "sting the musician", "Marcel the monkey": the thing named, then what it is
        return max(found, key=lambda f: (self.vocabulary.specificity(f.words), f.end - f.start, -f.start))


_CONTRACTED = IS_CONTRACTIONS  # "that's" ~ "that is" (normalise_words writes "that's" as "thats")
_UNCONTRACTED = {v: k for k, v in _CONTRACTED.items()}


def _said_forms(quote: str) -> tuple[tuple[str, ...], ...]:
    """A quote's words and the same with one "that's" / "it's" ... written out or contracted ("that's so sweet",
    "that is so sweet")."""
    words = tuple(normalise_words(quote))
    forms = [words]
    for i, w in enumerate(words):
        if w in _CONTRACTED:
            forms.append(words[:i] + (_CONTRACTED[w], "is") + words[i + 1:])
        elif w in _UNCONTRACTED and i + 1 < len(words) and words[i + 1] == "is":
            forms.append(words[:i] + (_UNCONTRACTED[w],) + words[i + 2:])
    return tuple(dict.fromkeys(forms))


# the words said at the end of the question, or before a dash that asks ("ross saying i love you - list the scenes")
STOCK_PHRASE_LINES = 10
_SAID_BY = re.compile(r"^(\W*)((?:[a-z][a-z']*\s+){0,4}[a-z][a-z']*)\s*[-–—,:]?\s+(?:said|spoken|yelled|shouted|screamed)\s+by\b", re.I)
_SHOUTED_PHRASE = re.compile(r"(?<![\w\"“‘'])(?:[A-Z][A-Z'’]*\s+){2,7}[A-Z][A-Z'’]*(?![\w\"”’'])")
_SHOUTED_WORDS = re.compile(r"(?<![\w\"“‘'])(?:[A-Z]+[.!]+\s+){1,5}[A-Z]+[.!]*(?![\w\"”’'])")
# where words said unquoted end a question's telling part: at its end, before a dash, or before a comma that asks
_SAID_PHRASE_END = (r"\s*(?:[?.!]*\s*$|\s[-–—]\s|"
                    r",\s*(?=(?:every|each|which|what|any|all|list|how|where|when|show|give|find|count)\b))")
_WITH_SAID = re.compile(r"\b(with)\s+(?:a\s+|an\s+|the\s+)?((?:[a-z][a-z']*\s+){2,4}[a-z][a-z']*)" + _SAID_PHRASE_END, re.I)
# "goes after Ross", "going to vegas": going somewhere, not the quotative go
_GOING_SOMEWHERE = r"(?!\s+(?:after|to|into|out|back|on|up|down|through|off|away|home|with|for|over|around|in|about|by|from|ahead|along|there|here)\b)"
_SAYS_AT_END = re.compile(r"\b(says?|saying|said|goes" + _GOING_SOMEWHERE + r"|going" + _GOING_SOMEWHERE
                          + r"|(?:famous|signature|big)\s+line|catch\s*phrase|"
                          r"(?:tells?|telling|told)\s+(?:someone|somebody|people|everyone|"
                          r"everybody|anyone|her|him|them))\s+(?!by\s)((?:[a-z][a-z']*\s+){1,4}[a-z][a-z']*)" + _SAID_PHRASE_END,
                          re.I)
# "season 8, mona mentions, which scenes?", "gunther mentions?": the mentions of someone, not what they mention
_NAME_MENTIONS = re.compile(r"(?:^|(?<=[,;:.!?])\s*)((?:[A-Za-z][\w'’.-]*\s+){0,2}[A-Za-z][\w'’.-]*)\s+(mentions|references)"
                            r"(?=\s*(?:[,?.!;:]|\s[-–—]\s|$))", re.I)
_OR_SIMILAR = re.compile(r"\W*(?:or|and)\s+(?:similar|something\s+(?:similar|like\s+(?:that|it))|the\s+like|variations?|"
                         r"anything\s+(?:similar|like\s+(?:that|it)))\b", re.I)
_DRAWN_WORD = re.compile(r"(?<![\w'’\"“‘])([A-Za-z]{1,2}?([A-Za-z])\2{2,})(?![\w'’\"”’])")  # "nooo", "ewww"
_POINTS_TO_THING = re.compile(r"\b(?:mentions?|mentioning|mentioned|brings?\s+up|bringing\s+up|talks?\s+about)\s+it\b|"
                              r"\bit\s+(?:comes?\s+up|gets?\s+mentioned|is\s+mentioned)\b", re.I)
_TEXTED_YOU = re.compile(r"(?<![\w'’])u(?![\w'’])")  # "i love u"
_PLACEHOLDER = re.compile(r"(?<![\w'])(?:[XYZ]|_{1,}|blank|\[[^\]]*\])(?![\w'])")


def _template_form(quote: str) -> tuple[str, ...] | None:
    """A quote with a placeholder for any words ("Could X be any more...", "could ___ be more ___") as its words
    with "*" where the placeholder stands (`aggregate.WILDCARD`); None for a quote without one."""
    if not _PLACEHOLDER.search(quote):
        return None
    words = [w for part in _PLACEHOLDER.split(quote) for w in ([*normalise_words(part), "*"])][:-1]
    words = [w for i, w in enumerate(words) if not (w == "*" and i > 0 and words[i - 1] == "*")]
    return tuple(words) if any(w != "*" for w in words) else None


def _quoted_alternatives(question: str, quotes: list[str]) -> list[str]:
    """The first quote and those joined to it by "or" or "/" ("'whats the big deal' or 'no big deal'")."""
    found = [m for m in _QUOTED.finditer(question) if next(g for g in m.groups() if g).strip(" .,!?") in quotes]
    out = [quotes[0]]
    for a, b in zip(found, found[1:]):
        if not re.fullmatch(r"\s*(?:,\s*)?(?:or|/|\|)\s*", question[a.end():b.start()], re.I):
            break
        out.append(next(g for g in b.groups() if g).strip(" .,!?"))
    return list(dict.fromkeys(out))


def _without_exclusions(question: str) -> str:
    """The question without what it leaves out: a quote after "not" / "leaving out" / "except" ..., from that word to
    the end of its clause ("pickles? I mean the food, not being 'in a pickle'." -> "pickles? I mean the food, ."), and a
    clause that skips something ("List the scenes, but skip the Scotch tape joke")."""
    question = _INCLUDING.sub(" ", _NOT_COUNTED.sub(" . ", _POINT_ME.sub(" ", question)))
    question = _SKIPS.sub(" , ", _SKIP_SENTENCE.sub(" ", _EXCLUDED_AFTER.sub(" , ", _WHETHER.sub(" , ", question))))
    for m in reversed(list(_QUOTED.finditer(question))):
        # "..., leaving out the Brown Bird scouts and figures of speech like 'early bird'": a quote anywhere in what
        # is left out, from its cue on
        cue = next((e for e in _EXCLUSION.finditer(question) if e.start() < m.start() < e.end()), None)
        if cue is not None:
            question = question[:cue.start()] + " , " + question[cue.end():]
            continue
        excluded = _EXCLUDED_BEFORE.search(question[:m.start()])
        if excluded is not None:
            end = _CLAUSE_END.search(question, m.end())
            question = question[:excluded.start()] + " , " + question[end.start() if end else len(question):]
    return question


DESCRIBED_SCENES = 10  # scenes a description retrieves, whose speakers may be the one it describes
RANK_OFFSET = 3  # a scene's weight is 1 / (rank + 3): a speaker in several of the retrieved scenes beats one in the first


def described_speaker(scene_speakers: Sequence[Sequence[str]], line_counts: dict[str, int],
                      named: set[str]) -> str | None:
    """The speaker a description most likely means ("the brown bird girl whose leg ross breaks"), from the speakers of
    the scenes the description retrieves, best first (`scene_speakers`: each scene's speaker of every line): each
    scene adds log(1 + the speaker's lines in it) / (rank + RANK_OFFSET), weighted by how rare the speaker is in the
    collection (log of all lines over theirs), so that the main people, who are in every scene, a waitress's one line
    and the people the description names do not win. None without scenes."""
    total = sum(line_counts.values()) or 1
    scores: dict[str, float] = {}
    main = MAIN_SHARE * max(line_counts.values(), default=0)
    for rank, speakers in enumerate(scene_speakers):
        for speaker, said in Counter(speakers).items():
            if speaker in named or not speaker[:1].isalpha():
                continue  # "#ALL#": everyone at once is nobody described
            lines = line_counts.get(speaker, 0)
            if lines and lines < main:
                scores[speaker] = scores.get(speaker, 0.0) + math.log1p(said) * math.log(total / lines) / (rank + RANK_OFFSET)
    return max(sorted(scores), key=scores.__getitem__) if scores else None


def _distinct(spans: list[PhraseSpan]) -> list[PhraseSpan]:
    """The targets without a repeat ("Concert + tickets: ... a concert and also tickets": concert once)."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for span in spans:
        key = tuple(normalise_words(span.text))
        if key not in seen:
            seen.add(key)
            out.append(span)
    return out


def _rooms(words: tuple[str, ...], owned: bool = False) -> list[tuple[str, ...]]:
    """`words`, and for someone's bedroom also their room: "Rachel's bedroom" is mostly "Rachel's room" in the
    scene headings and the lines; with `owned` (someone's room) also their bedroom."""
    if len(words) >= 2 and words[-1] == "bedroom":
        return [words, (*words[:-1], "room")]
    if owned and len(words) >= 2 and words[-1] == "room":
        return [words, (*words[:-1], "bedroom")]
    return [words]


# a noun and the adjective (or the person) made from the same root: sarcasm ~ sarcastic, optimism ~ optimist,
# loneliness ~ lonely
_SIBLING_ENDINGS = (("asm", "astic"), ("astic", "asm"), ("ism", "ist"), ("ist", "ism"), ("ism", "istic"),
                    ("iness", "y"), ("ness", ""), ("ity", "e"), ("ity", "ous"), ("ous", "ity"))


def sibling_words(word: str) -> list[str]:
    """Words of the same root with a sibling ending (`_SIBLING_ENDINGS`): "sarcasm" -> ["sarcastic"]; a stem of at
    least four letters."""
    return [word[: len(word) - len(a)] + b for a, b in _SIBLING_ENDINGS
            if word.endswith(a) and len(word) - len(a) >= 4]


@functools.cache
def _english_words() -> frozenset[str]:
    """The whole words of the bundled MiniLM's WordPiece vocabulary (~20k common English words): a word in it is no
    typo, however few lines hold it."""
    vocab = json.loads((bundled_minilm_dir() / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    return frozenset(w for w in vocab if w.isalpha() and w.islower())


def _one_edits(word: str) -> set[str]:
    """The words one letter changed, left out, added or two swapped away from `word`."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = {word[:i] + word[i + 1:] for i in range(len(word))}
    out |= {word[:i] + c + word[i + 1:] for i in range(len(word)) for c in letters}
    out |= {word[:i] + c + word[i:] for i in range(len(word) + 1) for c in letters}
    out |= {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1)}
    out |= other_name_ending(word)
    return out - {word}


def _within(small: PhraseSpan, large: PhraseSpan) -> bool:
    """Whether `small`'s words are among `large`'s, plurals aside ("rats" in "rat babies")."""
    def stems(span: PhraseSpan) -> set[str]:
        return {w.lower().rstrip("s") for w in span.words}
    return small.words != large.words and stems(small) <= stems(large)


def _runs(tokens: list[Token]) -> list[tuple[int, int]]:
    """Maximal stretches of non-frame words not broken by punctuation."""
    runs, start = [], None
    for i, t in enumerate(tokens):
        frame = t.low in FRAME and not (t.capital and t.low not in _FRAME_EVEN_CAPITALISED) and not _framed_noun(tokens, i)
        if frame or t.boundary_before:
            if start is not None:
                runs.append((start, i))
            start = None if frame else i
        elif start is None:
            start = i
    if start is not None:
        runs.append((start, len(tokens)))
    return [(s, e) for s, e in runs if any(tokens[j].low not in SOFT for j in range(s, e))]


def _framed_noun(tokens: list[Token], i: int) -> bool:
    """Whether a frame word is a thing named here: "a list" or "his list" (not "list the scenes"), "a set", "thank"
    in "thank god"."""
    low, before = tokens[i].low, tokens[i - 1].low if i > 0 and not tokens[i].boundary_before else ""
    if low in ("list", "lists"):  # "a list of the episodes" asks for them
        if i + 1 < len(tokens) and tokens[i + 1].low == "of":
            return False
        return before in ("a", "the", "his", "her", "their", "my", "our", "your") or (i > 0 and tokens[i - 1].possessive)
    if low == "set":  # "take place on a set", "a movie set or the dool set"; not "the scenes set in", "episodes set at"
        placed = i + 1 < len(tokens) and not tokens[i + 1].boundary_before and tokens[i + 1].low in _PLACE_AFTER_SET
        return not placed and (before in ("a", "the", "that", "this") or (before != "" and before not in FRAME and before not in SOFT))
    if low in ("show", "shows"):  # "a game show", "talk shows": a kind of show, not "show me"
        return before in _SHOW_KINDS
    if low == "talk" and i + 1 < len(tokens) and not tokens[i + 1].boundary_before and tokens[i + 1].low in ("show", "shows"):
        return True  # "a talk show"
    if low in _SOUND_ACTIVITIES and before in ("and", "&") and i >= 2 and tokens[i - 2].low not in FRAME and (
            before == "&" or any(t.low == "both" for t in tokens[:i - 2])
            or any(t.low in ("together", "same") for t in tokens[i + 1:i + 4])):
        return True  # "both a voice and singing", "voice & sing": the singing is the second thing, not how it is said
    return low == "thank" and i + 1 < len(tokens) and tokens[i + 1].low in ("god", "goodness", "heavens")


_SOUND_ACTIVITIES = set("""sing sings singing yell yells yelling scream screams screaming shout shouts shouting whine whines
whining complain complains complaining brag brags bragging""".split())
# "voice + sing", "voice + singing": a base or -ing form after a plus is the second thing
_PLUS_SOUND = re.compile(r"\s*\+\s*(?=(?:" + "|".join(sorted(w for w in _SOUND_ACTIVITIES if not w.endswith("s")))
                         + r")\b)", re.I)


_SHOW_KINDS = set("""game talk tv cooking fashion quiz puppet news morning slide trade dog car art variety reality magic horse
boat comedy radio cable road kids children's""".split())


# frame words that stay frame words when capitalised mid-question ("Which Scenes ..."); others may be names ("Will")
_FRAME_EVEN_CAPITALISED = {"which", "what", "where", "when", "who", "how", "scene", "scenes", "episode", "episodes",
                           "season", "line", "lines", "in", "at", "on", "the", "is", "are", "does", "did", "do"}


def _name_spans(tokens: list[Token], start: int, end: int) -> list[PhraseSpan]:
    """Capitalised words in a row (joined by of / the / de: Days of Our Lives), with a title (Mr. Treeger)."""
    spans, i = [], start
    while i < end:
        if tokens[i].capital or (tokens[i].low in _TITLES and i + 1 < end and tokens[i + 1].capital):
            j = i + 1
            while j < end and (tokens[j].capital or (tokens[j].low in NAME_JOINERS and j + 1 < end and tokens[j + 1].capital)):
                if tokens[j - 1].possessive:
                    break
                j += 1
            spans.append(PhraseSpan(tuple(t.text for t in tokens[i:j]), i, j, True))
            i = j
        else:
            i += 1
    return spans


def _after_possessor(tokens: list[Token], start: int, end: int) -> int:
    """Where a run's target starts: after its last possessor that other words of the run follow ("Monica's
    restaurant Alessandro's" -> restaurant Alessandro's; "Frank Jr.'s triplets" -> triplets)."""
    for i in range(end - 2, start - 1, -1):
        if tokens[i].possessive and any(t.low not in SOFT for t in tokens[i + 1:end]):
            return i + 1
    return start


_OR_FILLER = {"to", "at", "in", "on", "going", "doing", "being", "having", "getting",  # "laundry or going to the laundromat"
              "anything", "something", "any", "other", "else",  # "Russia or anything Russian"
              "someone", "somebody", "anyone", "anybody", "people", "person"}  # "Jews or someone being Jewish"


def _alternative(tokens: list[Token], objects: list[PhraseSpan]) -> tuple[int, ...] | None:
    """The first target and those joined to it by "or" ("X or Y", "X or the Y", "laundry or going to the laundromat"),
    with a list before the "or" ("the recliners, the Barcaloungers or La-Z-Boys", "a latte, a cappuccino or an
    espresso", whichever of them is the first target), as indexes into `objects`."""
    return next((chain for chain in _alternatives(tokens, objects) if 0 in chain), None)


def _alternatives(tokens: list[Token], objects: list[PhraseSpan]) -> list[tuple[int, ...]]:
    """Every list of targets joined by "or" ("A or B", "A, B or C"), as sorted indexes into `objects`."""
    order = sorted(range(len(objects)), key=lambda i: objects[i].start)
    chains = []
    for k, (a, b) in enumerate(zip(order, order[1:])):
        between = [t.low for t in tokens[objects[a].end:objects[b].start]]
        if not ("or" in between and all(w == "or" or w in SOFT or w in _OR_FILLER for w in between)):
            continue
        chain = {a, b}
        for j in range(k, 0, -1):  # "A, B or C": a comma list before the "or"
            after = objects[order[j - 1]].end
            gap = tokens[after:objects[order[j]].start]
            if after >= len(tokens) or not tokens[after].boundary_before or any(t.low not in SOFT for t in gap):
                break
            chain.add(order[j - 1])
        chains.append(tuple(sorted(chain)))
    return chains


def _word_before(tokens: list[Token], start: int) -> str | None:
    """The word before the target at `start`, articles, possessive pronouns and "of" aside (SOFT)."""
    i = start - 1
    while i >= 0 and tokens[i].low in SOFT:
        i -= 1
    return tokens[i].low if i >= 0 else None


def _after_place_word(tokens: list[Token], start: int) -> bool:
    """Whether the target at `start` follows a word of place ("in a waiting room", "at the hospital")."""
    return _word_before(tokens, start) in ("in", "at", "inside", "outside", "into")


def _named_as_place(tokens: list[Token], start: int) -> bool:
    """Whether the target at `start` is named as a place: after a word of place ("on the beach", "to a house") or
    as what a place is ("the place is Delmonico's", "a bar called Cheers")."""
    return _word_before(tokens, start) in ("in", "at", "on", "inside", "outside", "into", "to", "is", "called", "named")


def _describes(run: list[Token]) -> bool:
    """Whether a run of words describes someone rather than names them: it holds a possessive ("Phoebe's real
    father") or opens with a determiner ("the girl from the copy place")."""
    return any(t.possessive for t in run) or (bool(run) and run[0].low in ("the", "a", "an", "his", "her", "their"))


def _split_and(tokens: list[Token], start: int, end: int, occurs: Callable[[list[str]], bool]) -> list[tuple[int, int]]:
    """The run's parts between "and" / "&", but for a name with "&" that the lines hold ("Law & Order")."""
    parts, s = [], start
    for i in range(start, end):
        if tokens[i].low == "&" and 0 < i < end - 1 and tokens[i - 1].capital and tokens[i + 1].capital and occurs(
                normalise_words(f"{tokens[i - 1].text} {tokens[i + 1].text}")):
            continue
        if tokens[i].low in ("and", "&"):
            if s < i:
                parts.append((s, i))
            s = i + 1
    if s < end:
        parts.append((s, end))
    return parts


def _named_speaker(tokens: list[Token], people: list[tuple[PhraseSpan, tuple[str, ...]]]) -> tuple[PhraseSpan, tuple[str, ...]] | None:
    """The first person named who is a speaker and not a possessor ("Chandler's mom Nora Bing" -> Nora Bing)."""
    return next(((p, s) for p, s in people if s and not tokens[p.end - 1].possessive), None)


_ROLE_VERBS = {"have", "has", "had", "get", "gets", "got", "speak", "speaks", "spoke", "talk", "talks", "talked", "say", "says",
               "said", "appear", "appears", "show", "shows", "speaking", "talking", "saying"}
_INTRANSITIVE = {"speak", "speaks", "speaking", "talk", "talks", "talking", "say", "says", "saying"}


# "where the physician treating Joey has dialogue", "does the guy who sells hats talk in": someone described speaks
_DESCRIBED_SPEAKS = re.compile(r"(?<![,(:–—-]\s)(?<![,(:])\bthe\s+([a-z][\w-]*)\s+(?:\w+ing|who|whom|that|from|at|with|of)\b[^.?!;,:()–—-]*?\s"
                               r"(?:(?:has|have|had|gets?|got)"
                               r"\s+(?:any\s+)?(?:lines|dialogue|dialog)|speaks?|talks?|says?\s+(?:something|anything))"
                               r"(?=\s*(?:in\b|[?.!,;]|$))")
_DIALOGUE_OF_DESCRIBED = re.compile(r"\b(?:lines|dialogue|dialog)\s+(?:from|by|of|spoken\s+by)\s+(?:the|that|this|a|an)\s", re.I)
_CLAUSE_OPENERS = {"after", "before", "when", "while", "once", "until", "since", "if"}
_SPEECH = {"stuff", "things", "anything", "something", "lot"}  # "when does she say stuff"
_GET_TO = {"get", "gets", "got", "getting"}
_PROGRESSIVE = {"is", "was", "are", "were", "s"}


def _verb_at(tokens: list[Token], at: int) -> int:
    """Where the verb after a subject is: past adverbs ("actually", "ever") and "get to" ("does Ginger get to say
    anything")."""
    while at < len(tokens):
        if tokens[at].low in _SKIP_BEFORE_VERB:
            at += 1
        elif (tokens[at].low in _PROGRESSIVE and at + 1 < len(tokens) and tokens[at + 1].low.endswith("ing")
              and tokens[at + 1].low in _ACTIVE):
            at += 1  # "Precious is talking"
        elif tokens[at].low in _GET_TO and at + 1 < len(tokens) and tokens[at + 1].low == "to":
            at += 2
        else:
            break
    return at


def _time_clause(tokens: list[Token]) -> tuple[int, int]:
    """[start, end) of a clause of time inside the question ("... lines when Carol has the baby - which scenes"):
    from a "when" / "while" that does not open it to the next punctuation; (0, 0) when there is none."""
    for i, t in enumerate(tokens):
        if i > 0 and t.low in ("when", "while") and not t.boundary_before:
            end = next((j for j in range(i + 1, len(tokens)) if tokens[j].boundary_before), len(tokens))
            return i + 1, end
    return 0, 0


def _pronoun_says(tokens: list[Token]) -> bool:
    """Whether "she" / "he" does something of speaking ("the scenes where she says kid"), or "his" / "her" lines hold
    it ("how many of his lines contain the word hello")."""
    for i, t in enumerate(tokens):
        if t.low in ("his", "her") and i + 1 < len(tokens) and tokens[i + 1].low in ("lines", "dialogue"):
            return True
        if t.low in ("she", "he") or (t.low in ("her", "him") and i > 0 and tokens[i - 1].low in ("have", "has", "with")):
            j = _verb_at(tokens, i + 1)  # "which scenes have her saying the word 'win'"
            if j < len(tokens) and tokens[j].low in _ACTIVE and not _passive(tokens, i, j):
                return True
    return False


def _passive(tokens: list[Token], subject: int, verb: int) -> bool:
    """Whether "he's mentioned" says he is mentioned (a participle after "he's" / "she's", nothing asked after it),
    not that he mentions something."""
    return (tokens[subject].possessive and tokens[verb].low.endswith(("ed", "brought", "up"))
            and all(w.low in FRAME or w.low in SOFT for w in tokens[verb + 1:]))


def _pronoun_speaks(tokens: list[Token]) -> bool:
    """Whether "she" / "he" speaks with no object ("does she speak in", "he says something", "she has lines")."""
    for i, t in enumerate(tokens):
        if t.low in ("her", "him") and i + 1 < len(tokens) and tokens[i + 1].low in _INTRANSITIVE \
                and tokens[i + 1].low.endswith("ing") and all(w.low in FRAME or w.low in SOFT for w in tokens[i + 2:]) \
                and not {"it", "that", "this", "them", "those"} & {w.low for w in tokens[i + 2:i + 4]}:
            return True  # "scenes with her talking"; not "have her saying it" (what she says is told before)
        if t.low not in ("she", "he"):
            continue
        j = _verb_at(tokens, i + 1)
        if j >= len(tokens):
            continue
        verb = tokens[j].low
        rest = [x.low for x in tokens[j + 1:]]
        cut = next((n for n, w in enumerate(rest) if w in _CLAUSE_OPENERS), len(rest))
        rest = rest[:cut]  # "any scenes where he actually talks after he wakes up"
        if verb in ("has", "have", "gets", "get", "got") and rest[:1] in (["lines"], ["dialogue"], ["any"]):  # "he's got lines"
            return True
        if verb in ("has", "have", "gets", "get") and not rest and any(x.low in ("lines", "dialogue") for x in tokens[:i]):
            return True  # "how many lines does she get"
        if verb in _INTRANSITIVE and all(w in FRAME or w in SOFT or w in _SPEECH for w in rest) and not {"about", "it", "that", "this"} & set(rest[:1] + rest[:2]):
            return True
    return False


def _subject(tokens: list[Token], people: list[tuple[PhraseSpan, tuple[str, ...]]]) -> tuple[PhraseSpan, tuple[str, ...]] | None:
    """The person who speaks the lines asked about: a name followed by a verb of speaking ("does Ross talk about",
    "Ross says", "have Ross bringing up"), "Ross's lines", or "lines from / spoken by Ross"; not a name that is
    mentioned ("is Ben mentioned", "say Richard's name")."""
    for span, speakers in people:
        after = _verb_at(tokens, span.end)
        if after < len(tokens) and tokens[after].low == "the" and not tokens[span.end - 1].possessive:
            # "Paul the wine guy speaking": a description without commas between the name and its verb
            verb = next((j for j in range(after + 1, min(after + 5, len(tokens)))
                         if tokens[j].low in _ACTIVE and not tokens[j].boundary_before), None)
            if verb is not None and not any(t.boundary_before for t in tokens[after:verb]):
                return PhraseSpan(span.words, span.start, verb, span.name), speakers
        before = tokens[span.start - 1].low if span.start > 0 else ""
        nxt = tokens[after].low if after < len(tokens) else ""
        if tokens[span.end - 1].possessive and nxt in ("lines", "line", "dialogue", "dialog", "scenes"):  # "roy's scenes"
            return span, speakers
        if nxt in ("lines", "dialogue", "dialog") and after == span.end and after + 1 < len(tokens) and tokens[
                after + 1].low in ("with", "containing", "that", "where", "saying", "using", "mentioning"):
            return span, speakers  # "phoebe buffay lines with the word crazy": her lines, the apostrophe left out
        if before in ("from", "by") and not tokens[span.end - 1].possessive and span.start >= 2 and tokens[span.start - 2].low in (
                "lines", "line", "dialogue", "dialog", "spoken", "said", "uttered", "words"):
            return span, speakers
        if tokens[span.end - 1].possessive:
            continue
        if nxt in _ACTIVE and not (before in _PASSIVE_BEFORE and nxt in ("mentioned", "said")):
            return span, speakers
        if _about_after(tokens, span.end) is not None:  # "Joey is going on about pizza", "Ross rambling about"
            return span, speakers
    return None


_MENTION_VERBS = {"about", "mention", "mentions", "mentioning", "mentioned", "discuss", "discusses", "discussing",
                  "reference", "references", "referencing"}
_TOGETHER_CUE = re.compile(r"\b(?:same\s+(?:scene|episode|ep)|both|together)\b", re.I)  # said outright, not guessed
_FRAGMENT_MAX_TOKENS = 5
# a name given after "his / her name" set off by commas: the name is the target, "her name" only points at it
_NAME_GIVEN = re.compile(r"\b(?:his|her|their)\s+name\s*,\s*([A-Z][\w'’-]*)\s*,")
_ATTESTED_FRAGMENT_WORDS, _ATTESTED_MIN_WORDS = 8, 4
_NUMBER_WORD = re.compile(rf"{_NUMBER}|\d+", re.I)
# the words that ask for a list, never part of a run of words a fragment names as if quoted
_ASKING_WORDS = {"scene", "scenes", "episode", "episodes", "eps", "ep", "line", "lines", "mention", "mentions",
                 "mentioned", "count", "how", "many", "which", "what", "times", "number", "list", "find", "every",
                 "season", "all", "any", "where", "when", "who", "says", "say", "said", "saying"}
_NO_RUN_EDGE = SOFT | {"in", "at", "on", "by", "from", "with", "about", "to", "into", "for", "or", "as", "like"}
RARE_TYPO_LINES = 2  # a word this few lines hold may be their typo ("roomate", "apparantly": one line each)
COMMON_WORD_RATIO = 10  # ... or this many times the lines of the rare one, when it is a word of the language
COMMON_WORD_LINES = 30  # ... of a word one letter off that this many lines hold (roommate: 89, apparently: 75)
_GOING = {"going", "goes"}  # "chandler going wow": how a fan writes that someone says it
_NOT_SAID_IN_A_FRAGMENT = _ACTIVE | _MENTION_VERBS | _PASSIVE_BEFORE | {
    "which", "what", "where", "when", "who", "whom", "how", "why", "whose", "in", "at", "on", "with", "and", "or",
    "set", "takes", "take", "place", "has", "have", "about", "same", "both", "together", "mentioned", "named"}


def _possessed(tokens: list[Token], span: PhraseSpan) -> bool:
    """Whether a word of the span is a possessive ("Rachel's boss"): it names whose, not who."""
    return any(tokens[i].possessive for i in range(span.start, span.end))


def _fragment_speaker(tokens: list[Token], people: list[tuple[PhraseSpan, tuple[str, ...]]]) -> tuple[PhraseSpan, tuple[str, ...]] | None:
    """A search-box fragment that starts with a speaker and then gives only the words ("joey buddy", "monica rules",
    "chandler going wow", "rach excuse me count"): no verb, no question word, no other person, no place or second
    target: the speaker says them."""
    if len(people) != 1 or len(tokens) > _FRAGMENT_MAX_TOKENS:
        return None
    span, speakers = people[0]
    if span.start != 0 or tokens[span.end - 1].possessive or span.end >= len(tokens):
        return None
    if len(speakers) != 1 or (len(span.words) > 1 and not set(name_words(span.text)) <= set(name_words(speakers[0]))):
        return None  # "monica rachel fight": two people run together, not one who speaks
    end = span.end + (tokens[span.end].low in _GOING)  # the speaker with "going", when it follows
    rest = tokens[end:]
    said = [t for t in rest if t.low not in FRAME or t.low in ("me", "you", "it")]
    # "rachel oops / whoops": either of two words
    either = [i for i, t in enumerate(rest) if t.low == "or" and 0 < i < len(rest) - 1]
    if not said or any((t.low in _NOT_SAID_IN_A_FRAGMENT and i not in either) or t.boundary_before
                       for i, t in enumerate(rest)):
        return None
    return PhraseSpan(span.words, span.start, end, span.name), speakers


def _done_to_it(tokens: list[Token], part: tuple[int, int]) -> bool:
    """Whether a one-word part is a participle said of the target, joined to a verb of mentioning: "a helmet is worn
    or talked about" (not "is Yemen brought up", where the word after "is" is the target)."""
    i = part[0]
    return (part[1] - i == 1 and i > 0 and tokens[i - 1].low in _PASSIVE_BEFORE | {"being", "been"}
            and not tokens[i].capital and bool(_PARTICIPLE.search(tokens[i].low))
            and i + 2 < len(tokens) and tokens[i + 1].low in ("or", "and") and tokens[i + 2].low in FRAME)


_SAY_WORDS = {"say", "says", "said", "saying"}
_WORD_SAID_BEFORE = _SAY_WORDS | {"call", "calls", "called", "calling", "word", "name", "mention", "mentions", "mentioned",
                                  "mentioning", "yell", "yells", "shout", "shouts", "about"}


def _says_my(tokens: list[Token], span: PhraseSpan) -> bool:
    """Whether the target follows "says my" ("Monica says my brother"): the speaker's own words, "my" included."""
    return span.start >= 2 and tokens[span.start - 1].low == "my" and tokens[span.start - 2].low in _SAY_WORDS


def _after_mention_verb(tokens: list[Token], at: int) -> bool:
    """Whether the words before `at` are a verb of mentioning ("talks about", "mentions", "brings up"), the
    question's articles and one gerund aside ("talks about getting tan")."""
    i = at - 1
    while i >= 0 and (tokens[i].low in SOFT or tokens[i].low in _DOING):
        i -= 1
    return i >= 0 and (tokens[i].low in _MENTION_VERBS or (tokens[i].low == "up" and i > 0 and tokens[i - 1].low.startswith(("bring", "brought"))))


def _about_after(tokens: list[Token], at: int) -> int | None:
    """The index of "about" within three words after `at` ("is going on about", "keeps ranting about"), else None."""
    for j in range(at, min(at + 4, len(tokens))):
        if tokens[j].low == "about":
            before = tokens[j - 1].low if j > at else ""
            if before.endswith("ed") or before in ("spoken", "brought", "thought", "heard", "told"):
                return None  # "Carol talked about", "are both talked about": passive, the name is the target
            return j
        if tokens[j].capital:
            return None
    return None


def _with_verb(tokens: list[Token], subject: PhraseSpan) -> PhraseSpan:
    """The subject with what it does up to "about", when that is how it speaks of the target."""
    about = _about_after(tokens, subject.end)
    return subject if about is None else PhraseSpan(subject.words, subject.start, about + 1, subject.name)


def unread_words(question: str, query: AggregateQuery, vocabulary: Vocabulary) -> list[str]:
    """The question's own words that its reading leaves out, held by some line: not words that frame a question, nor
    the target's, the other targets', the speakers' (a name they are called by) or a number's ("ross: interesting"
    read as Ross's lines leaves "interesting"). What tells a list too broad to answer the question from one a user
    asked for (`Pipeline.search`)."""
    read: set[str] = set()
    for text in (query.phrase or "", *query.others):
        read.update(normalise_words(text))
    for forms in query.forms:
        for form in forms:
            read.update(form)
    for name in query.speakers:
        read.update(name_words(name))
    read_stems = {w.rstrip("s") for w in read}  # "dinosaur" is read where "dinosaurs" is
    left = []
    for word in dict.fromkeys(normalise_words(_QUOTED.sub(" ", spelled_out(question)))):
        if (len(word) < 3 or word in FRAME or word in SOFT or word in _TITLES or _NUMBER_WORD.fullmatch(word)
                or word.rstrip("s") in read_stems):
            continue
        if query.speakers and set(vocabulary.resolve_speakers(word)) & set(query.speakers):
            continue  # "rach": Rachel Green, whose lines are read
        if vocabulary.occurs([word]):
            left.append(word)
    return left

"""Write src/ragfunnel/query/list_relation_examples.tsv, the training phrasings of the list path's relation
classifier (query/list_question.py): label<TAB>question, the label being what is asked of the target:

- speaks: the person's lines ("does X have lines", "X talks", "lines from X", "X appears");
- mentions: lines that name the target or say the words ("mention X", "bring up X", "talk about X", 'say "…"');
- setting: scenes that take place there ("set at X", "take place in X", "happen at X");
- together: two targets in one scene ("X and Y mentioned together", "both X and Y").

Each label has many ways of asking, combined with ways of naming what is listed (scenes, episodes, documents, files,
times, a count) and with fillers of every kind (people, things, places, quotes). Written from general English, not
from the evaluation sets: a phrasing whose masked form equals a question of bench/query/aggregate_*.jsonl is left
out, so the classifier never sees an evaluation question.

    python bench/query/list_relation_examples.py
"""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

from ragfunnel.query.list_question import mask

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OUT = ROOT / "src" / "ragfunnel" / "query" / "list_relation_examples.tsv"

PEOPLE = ["Ross", "Kim", "Professor Spafford", "Mrs. Potter", "Dr. Green", "Nick", "Lucy Smith", "Aunt Iris",
          "the doorman", "Joanna", "Steve", "Uncle Nathan", "Carl", "Ms. Lee", "Bernard", "Lowell",
          # people described: appositions and possessive descriptions
          "Kim's lawyer Lucy", "Nick, the mailman,", "Lucy Smith, Kim's lawyer,", "Steve's brother Carl",
          "her neighbour Bernard", "Dr. Green, the dentist who moved upstairs,", "the landlord Mr. Potter"]
THINGS = ["the wedding", "coffee", "dinosaurs", "the apartment", "pizza", "the ring", "karate", "the lottery", "a baby",
          "the cat", "Rome", "Nebraska", "the Super Bowl", "the blue sweater", "Mrs. Potter", "the jacket", "bagels",
          "a turtle", "the chair", "the fire station", "Boston", "sushi", "the meeting", "tax returns", "the budget",
          "the installer", "Kubernetes", "invoices", "the warranty", "Project Falcon", "a canoe", "Grandma's recipe",
          # things described: possessive descriptions, appositions, qualifiers
          "Kim's band Firelight", "Nick's dog Rufus", "Aunt Iris's shop, Petals,", "Steve's car", "the bakery Crumbs",
          "his novel, The Long Road,", "Carl's restaurant Luigi's", "the Potter Prize by name", "Rufus (any spelling)"]
PLACES = ["the coffee shop", "the office", "Boston", "the train station", "a bar", "the bakery", "the park", "Paris",
          "the hotel lobby", "the laundry room", "the roof", "the gym", "Mario's", "a church", "the library",
          "the pier", "Greenwich Village", "the dentist's office", "Kim's bar Rosie's", "the diner, Lou's,",
          "the gym Steve owns"]
QUOTES = ['"see you later"', '"no way"', '"I love you"', '"what\'s up"', '"hello there"', '"get out"', '"cheers"',
          '"it\'s over"', '"come on"', '"happy birthday"']
UNITS = ["scenes", "episodes", "documents", "files", "pages"]
UNIT = ["scene", "episode", "document", "file", "page"]

SPEAKS = [
    "Which {U} does {P} have lines in?", "In which {U} does {P} speak?", "{Uc} where {P} talks",
    "List the {U} in which {P} says something.", "Every {u} with dialogue from {P}", "How many lines does {P} have?",
    "How many times does {P} speak?", "In how many {U} does {P} appear?", "Which {U} does {P} show up in?",
    "{Uc} with lines from {P}",
    "Which {U} is {P} in?", "Show every {u} where {P} gets a line.",
    "Give me all the {U} where {P} has something to say.", "In what {U} can we hear {P}?",
    "Does {P} speak in any {U}? List them.", "{Uc} in which {P} has a speaking part", "Lines said by {P}",
    "How often does {P} talk?", "How many {U} does {P} speak in?", "Find the {U} where {P} opens their mouth.",
    "Which {U} include lines by {P}?", "In which {U} is {P} heard?", "Where does {P} actually talk?",
    "List {P}'s lines.", "Every line {P} says", "How many lines are spoken by {P}?", "Which {U} give {P} dialogue?",
    "In which {U} do we hear from {P}?", "Which {U} does {P} appear in?",
    "Which {U} have {P} in them?", "All {U} where {P} has a line", "{Uc} where {P} has any dialogue at all",
    "Tell me the {U} where {P} says a word.", "How many times does {P} have a line?", "Which {U} does {P} talk in?",
]
MENTIONS = [
    "Which {U} mention {X}?", "In which {U} is {X} mentioned?", "Where does {X} come up?",
    "{Uc} where {P} talks about {X}", "Every {u} in which {P} speaks about {X}", "All the {U} where {P} talks of {X}",
    "List the {U} where {P} brings {X} up.", "Which {U} does {P} talk about {X} in?", "How often does {P} talk about {X}?",
    "List every {u} in which {X} is brought up.", "How many times is {X} mentioned?",
    "Which {U} does {P} mention {X} in?", "In which {U} does {P} talk about {X}?",
    "Where does {P} bring up {X}?", "When does {P} say {Q}?", "Where does someone say {Q}?",
    "Which {U} contain the word {X}?", "How many times does {P} say {Q}?", "Which {U} contain the line {Q}?",
    "In which {U} does anyone refer to {X}?", "Find the {U} that reference {X}.", "Which {U} have {P} saying {X}'s name?",
    "Where is {Q} said?", "In which {U} is {Q} yelled?", "When is {Q} said out loud?",
    "Which {U} talk about {X}?", "{Uc} that mention {X}", "Every mention of {X}",
    "How many {U} mention {X}?", "In how many {U} is {X} discussed?", "Where do people discuss {X}?",
    "Which {U} have someone mentioning {X}?", "Show me every {u} where {X} gets a mention.", "When does {X} get brought up?",
    "Which {U} include the phrase {Q}?", "How often does {P} mention {X}?", "How many times does {P} bring up {X}?",
    "Which {U} does {X} come up in?", "List the {U} where {P} says {X}.", "Where does {P} call someone {Q}?",
    "When does {P} yell {Q}?", "How many {U} contain {Q}?", "Where is {X} named?",
    "Which {U} have a reference to {X}?", "In which {U} does {P} refer to {X}?",
    "Which {U} mention {X} by name?", "Which {U} mention {X} in the dialogue?", "Where does the word {X} appear?",
    "How many lines mention {X}?", "Which {U} have {P} talking about {X}?",
    "Which {U} bring up {X}?", "When does anyone mention {X}?",
    "Give me the {U} that mention {X} or show it.", "In which {U} does {P} say {X}'s name?",
    "Which {U} quote {Q}?", "Where does somebody shout {Q}?", "Who says {Q}, and in which {U}?",
]
SETTING = [
    "Which {U} take place in {L}?", "Which {U} are set at {L}?", "{Uc} set in {L}", "How many {U} happen at {L}?",
    "Which {U} are shown at {L}?",
    "In which {U} do we see {L}?",
    "Which {U} are staged in {L}?", "Every {u} that takes place at {L}", "Where are the {U} set at {L}?",
    "How many {U} are set in {L}?", "Show the {U} set inside {L}.", "Which {U} play out at {L}?",
    "List {U} happening in {L}.", "Which {U} open at {L}?",
    "Give me every {u} set at {L}.", "How many {U} take place at {L}?",
    "Which {U} does the action happen in {L}?", "Count the {U} set at {L}.",
    "Where do {U} take place in {L}?", "Which {U} are filmed at {L}?",
    "In how many {U} is the location {L}?", "Which {U} are located at {L}?", "{Uc} whose location is {L}",
    "Which {U} have {L} as the location?",
]
TOGETHER = [
    "Which {U} mention both {X} and {Y}?", "In which {U} do {X} and {Y} come up together?",
    "Which {U} bring up {X} as well as {Y}?",
    "List the {U} mentioning {X} along with {Y}.", "How many {U} mention {X} and {Y} together?",
    "Where are {X} and {Y} talked about in the same scene?",
    "{Uc} in which {X} and {Y} are mentioned together",
    "Which {U} have both {X} and {Y} in them?", "In how many {U} are {X} and {Y} both brought up?",
    "Which {U} contain mentions of {X} and of {Y}?", "Show {U} that mention {X} together with {Y}.",
    "Where are {X} and {Y} mentioned in one scene?", "{Uc} mentioning {X} and also {Y}",
]


def fill(template: str, rng: random.Random) -> str:
    i = rng.randrange(len(UNITS))
    x, y = rng.sample(THINGS, 2)
    return template.format(U=UNITS[i], u=UNIT[i], Uc=UNITS[i].capitalize(), P=rng.choice(PEOPLE), X=x, Y=y,
                           L=rng.choice(PLACES), Q=rng.choice(QUOTES))


def main() -> None:
    rng = random.Random(34)
    held = set()
    for path in sorted(HERE.glob("aggregate_*.jsonl")):
        if not path.stem.endswith("_gold"):
            held.update(mask(json.loads(s)["question"]).lower() for s in path.read_text().splitlines() if s.strip())
    rows: list[tuple[str, str]] = []
    for label, templates in (("speaks", SPEAKS), ("mentions", MENTIONS), ("setting", SETTING), ("together", TOGETHER)):
        per = max(6, 480 // len(templates))
        for template, _ in itertools.product(templates, range(per)):
            rows.append((label, fill(template, rng)))
    seen: set[str] = set()
    body, dropped = [], 0
    for label, q in rows:
        if mask(q).lower() in held:
            dropped += 1
            continue
        if q.lower() not in seen:
            seen.add(q.lower())
            body.append(f"{label}\t{q}")
    head = ("# The list path's relation classifier's training phrasings, label<TAB>question; written by "
            "bench/query/list_relation_examples.py (do not edit by hand).\n")
    OUT.write_text(head + "\n".join(body) + "\n")
    counts = {lab: sum(1 for r in body if r.startswith(lab + "\t")) for lab in ("speaks", "mentions", "setting", "together")}
    print(f"{OUT.relative_to(ROOT)}: {counts}; {dropped} left out (an evaluation question's masked form)")


if __name__ == "__main__":
    main()

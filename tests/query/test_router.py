"""The router: rules for aggregation, the classifier trained on the Friends examples, overrides, scoped routes."""

from __future__ import annotations

import pytest

from ragfunnel.corpus.friends import FriendsCorpus, parse_season_episode
from ragfunnel.errors import QueryError
from ragfunnel.query.router import Router, read_examples


@pytest.fixture(scope="module")
def router() -> Router:
    return Router(FriendsCorpus.route_examples)


@pytest.mark.parametrize("question, count", [
    ('In which scenes does Ross say "we were on a break"?', False),
    ("How many times does Joey say 'How you doin''?", True),
    ("Name every episode where Ugly Naked Guy is mentioned.", False),
    ("List all the scenes where Monica says 'I know'", False),
    ("How many episodes mention Gunther?", True),
    ("# of scenes w/ a coin in them", True),
])
def test_aggregation_questions_go_to_aggregate_by_rule(router, question, count):
    route = router.route(question)
    assert (route.name, route.source, route.count) == ("aggregate", "rule", count)
    assert route.reason


@pytest.mark.parametrize("question", [
    "Who did Rachel dump at the altar?", "When does Joey say a blind man doesn't walk around a certain way?",
    "Who used to say check all the time?", "How many kids does Ross have?", "Which episode is it where Ross gets a monkey?",
])
def test_lookups_stay_lookups(router, question):
    route = router.route(question)
    assert route.path == "lookup", route
    assert route.source == "classifier" and set(route.scores) == {"lookup", "aggregate", "out_of_scope"}


def test_an_off_topic_question_is_out_of_scope(router):
    route = router.route("What is the capital of France?")
    assert route.name == "out_of_scope" and route.scores["out_of_scope"] >= 0.9


def test_a_named_season_makes_a_lookup_scoped(router):
    question = "In season 8, who is the father of Rachel's baby?"
    route = router.route(question, named_filter=parse_season_episode(question))
    assert route.name == "scoped" and route.path == "lookup" and route.filter == {"season": 8}
    assert "season 8" in route.reason


def test_overrides(router):
    assert router.route("Who did Rachel dump at the altar?", "aggregate").name == "aggregate"
    route = router.route("In which scenes does Ross say 'hi'?", "lookup")
    assert (route.name, route.source) == ("lookup", "override")
    with pytest.raises(QueryError, match="unknown route 'both'"):
        router.route("x", "both")


@pytest.mark.parametrize("question", [
    'Where does someone say "we were on a break"?', 'When does Ross say "I do" out loud?',
    'When is "Joey doesn\'t share food" said?', "Where is the Geller Cup brought up?", "Where does Doug say something?",
    "List the scenes set in the museum.", "Scenes where Gunther has lines",
    # a base verb of mentioning after do-support, "talk of", someone's lines to count
    "Where does Monica mention her grandmother?", "When do they bring up the Geller Cup?",
    "Where is there talk of the beach house?", "Count Joey's lines in season 2.",
    "When does Monica say something about her mom?", 'Which episode has the words "pivot, pivot"?',
    "When do we hear about the beach house?", "Where do we hear Gunther talking?",
    # a thing's moments; the scenes asked for after a comma
    "umbrella moments please (ross in the rain, the broken one)", "the waiter who hates chandler, scenes w his lines",
])
def test_list_questions_in_lookup_shapes_go_to_aggregate_by_rule(router, question):
    route = router.route(question)
    assert (route.name, route.source) == ("aggregate", "rule"), route


@pytest.mark.parametrize("question", [
    'Who says "we were on a break" first?', 'Why does Ross say "we were on a break"?',
    "When does Phoebe first speak?", "When did the director come up to Joey?", "Where does the party take place?",
    "Where did the incident Ross was talking about happen?", "Where does Monica first mention her restaurant?",
    "Where does Ross go after talking to Rachel?", "When do we hear that Rachel is pregnant?",
])
def test_quoted_and_where_lookups_that_want_one_fact_stay_lookups(router, question):
    assert router.route(question).path == "lookup"


def test_a_description_the_classifier_reads_as_a_list_stays_a_lookup_without_a_list_cue(router):
    route = router.route("Ross is angry in season 5 episode 16", named_filter={"season": 5, "episode": 16})
    assert route.name == "scoped", route


def test_without_examples_only_rules_run():
    bare = Router(None)
    assert bare.route("What is the capital of France?").name == "lookup"  # never out of scope without a classifier
    assert bare.route("Which scenes mention the budget?").name == "aggregate"
    assert bare.route("Which documents mention the warranty?").name == "aggregate"  # a folder's questions
    assert bare.route("How many files talk about descaling?").name == "aggregate"
    assert bare.model is None


def test_examples_file_has_the_three_labels():
    texts, labels = read_examples(FriendsCorpus.route_examples)
    assert set(labels) == {"lookup", "aggregate", "out_of_scope"} and len(texts) == len(labels) > 600


def test_the_fitted_classifier_is_cached_and_loads_the_same(tmp_path):
    question = "Who did Rachel dump at the altar?"
    first = Router(FriendsCorpus.route_examples, cache_dir=tmp_path)
    scores = first.route(question).scores
    (cached,) = tmp_path.glob("router-*.npz")
    second = Router(FriendsCorpus.route_examples, cache_dir=tmp_path)
    assert second.route(question).scores == pytest.approx(scores, abs=1e-6)
    cached.write_bytes(b"damaged")
    assert Router(FriendsCorpus.route_examples, cache_dir=tmp_path).route(question).scores == pytest.approx(scores, abs=1e-6)


def test_which_bits_and_a_season_before_the_scenes_ask_for_lists(router):
    for question in ("pheebs shortening rachel's name... which bits have her saying 'rach'",
                     "season 10 scenes set at monica & chandler's apt",
                     "last season - which s10 scenes are set in monica and chandler's apartment?"):
        assert router.route(question).name == "aggregate", question
    assert router.route("At what moments does the fashion-focused character cry?").name != "aggregate"


def test_where_else_anything_about_and_a_question_after_a_comma_ask_for_lists(router):
    for question in ("Where does Joey's sister Dina get lines?", "In the final season, where does adopting come up?",
                     "joey falling off a horse, any other bits with horses in them",
                     "joey snoring and chandler rolling him over lol, where else is snoring a thing",
                     "anything about ballet? ballerina mentions etc",
                     "joey's 'whoa whoa whoa' when he wants everyone to slow down, show me those scenes"):
        assert router.route(question).name == "aggregate", question
    assert router.route("Where does Ross live?").name != "aggregate"

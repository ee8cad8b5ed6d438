"""The router's text classifier: it learns, it is deterministic, its probabilities are probabilities."""

from __future__ import annotations

import numpy as np

from ragfunnel.query.classifier import TextClassifier, features

TEXTS = ["how many times does he say hi", "how many scenes mention the dog", "which episodes mention the cat",
         "in which scenes does she say yes", "who is at the door", "why is he sad", "where does she live",
         "what did he buy", "what is the capital of peru", "who wrote hamlet", "what is two plus two", "who painted this"]
LABELS = ["agg"] * 4 + ["look"] * 4 + ["oos"] * 4


def test_features_hold_words_bigrams_and_character_grams():
    f = features("How many TIMES?")
    assert {"w:how", "w:times", "b:how many", "b:<s> how", "b:times </s>", "c: ho", "c:many "} <= set(f)


def test_it_fits_its_training_data_and_probabilities_sum_to_one():
    model = TextClassifier(min_count=1).fit(TEXTS * 2, LABELS * 2)
    p = model.predict_proba(TEXTS)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-5)
    assert [model.labels[i] for i in p.argmax(axis=1)] == LABELS
    assert max(model.scores("how many episodes mention the bird"), key=model.scores("how many episodes mention the bird").get) == "agg"


def test_training_is_deterministic():
    a = TextClassifier(min_count=1).fit(TEXTS, LABELS).predict_proba(["why does he say hi"])
    b = TextClassifier(min_count=1).fit(TEXTS, LABELS).predict_proba(["why does he say hi"])
    np.testing.assert_array_equal(a, b)

"""Metadata filters: reading them from the command line and from JSON (bad ones are one-line errors), and what each
operator matches. How stores apply them is checked by the conformance suite (tests/store/contract.py)."""

from __future__ import annotations

import datetime as dt

import pytest

from ragfunnel.errors import QueryError
from ragfunnel.store.filters import Condition, Filter, FilterError, literal
from ragfunnel.types import Unit

FOLDER_META = {"path": "reviews/cardio/med-10.pdf", "format": "pdf", "year": 2019, "date": "2020-03-01",
               "tags": ["heart", "Review"], "author": {"name": "Ada"}, "draft": False, "score": "4.5"}


def matches(expression: str | list[str], metadata=FOLDER_META, doc_id="reviews/cardio/med-10.pdf") -> bool:
    where = Filter.parse(expression)
    assert where is not None
    return where.matches_document(doc_id, metadata)


@pytest.mark.parametrize("text, value", [
    ("8", 8), ("-3", -3), ("4.5", 4.5), ("1e3", 1000.0), ("2020-01-01", dt.date(2020, 1, 1)),
    ("2020-01-01T10:30", dt.datetime(2020, 1, 1, 10, 30)), ("true", True), ("False", False), ("pdf", "pdf"),
    ("'8'", "8"), ('"2020-01-01"', "2020-01-01"), ("  spaced out ", "spaced out"),
])
def test_values_are_read_as_numbers_dates_booleans_or_text(text, value):
    assert literal(text) == value and type(literal(text)) is type(value)


@pytest.mark.parametrize("expression, field, op, value", [
    ("format=pdf", "format", "eq", "pdf"),
    ("format == pdf", "format", "eq", "pdf"),
    ("year>=2019", "year", "gte", 2019),
    ("year > 2019", "year", "gt", 2019),
    ("page<=3", "page", "lte", 3),
    ("page<3", "page", "lt", 3),
    ("format!=pdf", "format", "ne", "pdf"),
    ("season in 8,9", "season", "in", (8, 9)),
    ("season IN 8, 9", "season", "in", (8, 9)),
    ("format not in pdf,docx", "format", "nin", ("pdf", "docx")),
    ("path=reviews/**", "path", "glob", "reviews/**"),
    ("title=Made in Heaven", "title", "eq", "Made in Heaven"),
    ("date>=2020-01-01", "date", "gte", dt.date(2020, 1, 1)),
    ("author.name=Ada", "author.name", "eq", "Ada"),
])
def test_command_line_expressions(expression, field, op, value):
    assert Filter.parse(expression) == Filter((Condition(field, op, value),))


def test_json_form():
    where = Filter.from_json({"format": "pdf", "year": {"gte": 2019, "lt": 2022}, "path": {"glob": "reviews/*"},
                              "season": [8, 9], "title": "Notes*"})
    assert where.conditions == (
        Condition("format", "eq", "pdf"), Condition("year", "gte", 2019), Condition("year", "lt", 2022),
        Condition("path", "glob", "reviews/*"), Condition("season", "in", (8, 9)), Condition("title", "glob", "notes*"),
    )
    assert Filter.from_json(where.to_json()) == where  # the JSON form reads back
    assert Filter.from_json({}) is None and Filter.from_json(None) is None
    assert Filter.parse([]) is None and Filter.parse(None) is None


@pytest.mark.parametrize("expression, expected", [
    ("format=pdf", True), ("format=PDF", True), ("format=docx", False),
    ("year=2019", True), ("year>=2019", True), ("year>2019", False), ("year<2020", True), ("year in 2018,2019", True),
    ("score>4", True), ("score<=4.5", True),  # a numeric string in the metadata compares as a number
    ("date>=2020-01-01", True), ("date<2020-03-01", False), ("date<=2020-03-01", True), ("date>2020-02-29T23:00", True),
    ("tags=review", True), ("tags=lungs", False), ("tags!=lungs", True), ("tags!=heart", False),  # any element
    ("path=reviews/*", True), ("path=reviews/**/*.pdf", True), ("path=*.pdf", True), ("path=notes/*", False),
    ("id=reviews/cardio/*", True),
    ("author.name=ada", True), ("author.name=Bob", False),
    ("draft=false", True), ("draft=true", False),
    ("missing=1", False), ("missing!=1", True), ("missing>0", False),  # a missing field matches only !=
    ("format not in docx,html", True), ("format not in pdf", False),
    ("year>=2020-01-01", False),  # a date range on a number: not comparable, no match
    ("title<m", False),  # no title: missing
])
def test_what_each_operator_matches(expression, expected):
    assert matches(expression) is expected


def test_every_condition_must_hold():
    assert matches(["format=pdf", "year>=2019"])
    assert not matches(["format=pdf", "year>=2020"])


def test_dates_compare_at_the_precision_asked():
    meta = {"updated": "2019-12-31T23:00:00"}
    assert matches("updated<=2019-12-31", meta) and matches("updated>=2019-12-31", meta)
    assert not matches("updated<2019-12-31", meta)
    assert matches("updated<2019-12-31T23:30", meta) and not matches("updated<2019-12-31T22:00", meta)
    assert matches("updated>=2019-12-31T23:00:00Z", {"updated": "2019-12-31T23:00:00+00:00"})


def test_unit_conditions_read_sections_and_pages():
    where = Filter.parse(["section=Methods", "page>=2"])
    assert where.on_units == where.conditions and where.on_documents == ()
    methods_p3 = Unit("u1", "x", section=("Study", "Methods"), page=3)
    methods_p1 = Unit("u2", "x", section=("Methods",), page=1)
    results_p3 = Unit("u3", "x", section=("Results",), page=3)
    assert where.matches_unit(methods_p3) and not where.matches_unit(methods_p1) and not where.matches_unit(results_p3)
    # a chunk spanning units matches when one unit satisfies every unit condition, not when they are split
    assert where.matches_units([methods_p1, methods_p3]) and not where.matches_units([methods_p1, results_p3])
    assert Filter.parse("section=Stud*").matches_unit(methods_p3)
    assert Filter.parse("format=pdf").matches_units([])  # no unit conditions: nothing to ask of the units


def test_friends_query_filter_is_equality():
    where = Filter.equal({"season": 8, "episode": None})
    assert where == Filter.parse("season=8") and where.describe() == "season=8"
    assert Filter.equal({"season": None}) is None and Filter.equal(None) is None
    assert where.matches_document("s08_e01_c01", {"season": 8, "episode": 1})
    assert not where.matches_document("s09_e01_c01", {"season": 9})


def test_combine_and_describe():
    user, named = Filter.parse(["format=pdf", "season in 8,9"]), Filter.parse("season=8")
    both = Filter.combine(user, named, None)
    assert both.describe() == "format=pdf, season in 8,9, season=8"
    assert Filter.combine(user, user) == user and Filter.combine(None, None) is None
    assert Filter.parse("path=a/*").describe() == "path=a/*"
    assert Filter.parse("date>=2020-01-01").to_json() == {"date": {"gte": "2020-01-01"}}


@pytest.mark.parametrize("bad, message", [
    ("format", "cannot read the filter"),
    ("=pdf", "cannot read the filter"),
    ("format=", "cannot read the filter"),
    ("season in ,", "at least one value"),
    ("page=abc", "page is a page number"),
    ("date>=2020-13-45", "not a valid date"),
    ("draft>true", "a range needs"),
    ("fo rmat=pdf", "cannot read the filter"),
])
def test_bad_expressions_are_one_line_errors(bad, message):
    with pytest.raises(FilterError, match=message) as caught:
        Filter.parse(bad)
    assert isinstance(caught.value, QueryError) and "\n" not in str(caught.value)


@pytest.mark.parametrize("bad, message", [
    ([1, 2], "must be an object"),
    ({"year": {"between": [1, 2]}}, "unknown filter operator 'between'"),
    ({"author": {"name": "Ada"}}, "author.name"),  # a nested object is not an operator: say how to write it
    ({"year": None}, "is null"),
    ({"year": {}}, "an empty object"),
    ({"tags": [["a"]]}, "not a list"),
    ({"bad field": 1}, "filter field"),
    ({"page": {"glob": ""}}, "non-empty"),
])
def test_bad_json_filters_are_one_line_errors(bad, message):
    with pytest.raises(FilterError, match=message):
        Filter.from_json(bad)

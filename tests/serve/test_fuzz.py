"""Fuzz tests (issue 21, done-when): random request bodies for /search and /ask, and random corpus records. A body
gets a 2xx or a JSON error with a 4xx/503 status, never a 500, a traceback or a filesystem path; a record is read
or refused with a CorpusError, never another exception. Few examples each, so CI stays fast (HYPOTHESIS_EXAMPLES
raises it for a longer run)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragfunnel.corpus.friends import load_friends
from ragfunnel.errors import CorpusError

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("HYPOTHESIS_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# text with everything a hostile client sends: markup, control characters, lone surrogates, long runs
texts = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF), max_size=30),
    st.sampled_from(["[/red]", "[bold]x", "\udcff", "\x00", "Rachel altar", "../../etc/passwd", "*", "a" * 2500,
                     "CITATION [1]: ignore previous", "<script>alert(1)</script>", "season 8"]),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False), texts)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(texts, inner, max_size=4)), max_leaves=12)
filters = st.one_of(values, st.dictionaries(st.sampled_from(["season", "episode", "id", "format", "path", "x.y"]),
                                            st.one_of(scalars, st.lists(scalars, max_size=3),
                                                      st.dictionaries(st.sampled_from(["eq", "ne", "in", "gt", "lte", "glob", "bad"]),
                                                                      values, max_size=2)), max_size=3))
bodies = st.one_of(
    values,
    st.fixed_dictionaries({"question": st.one_of(texts, values)},
                          optional={"mode": st.one_of(st.sampled_from(["fast", "bm25", "vector", "hybrid", "accurate", "turbo"]), values),
                                    "k": st.one_of(st.integers(-5, 80), values), "filter": filters,
                                    "reader": st.one_of(st.sampled_from(["llm", "evidence"]), values)}),
)


@pytest.fixture(scope="module")
def fuzz_client(small_index, small_pipeline):
    from ragfunnel.generate.llm import FakeLLM
    from ragfunnel.serve.app import create_app

    settings_ = small_index.settings.model_copy(update={"limits": small_index.settings.limits.model_copy(update={"rate_per_minute": 0})})
    with TestClient(create_app(settings_, small_pipeline, FakeLLM(), token=""), raise_server_exceptions=False) as c:
        yield c


def check(r, paths: list[str]) -> None:
    assert r.status_code != 500 and r.status_code in (200, 400, 413, 422, 503), (r.status_code, r.text[:500])
    assert "Traceback" not in r.text
    for path in paths:
        assert path not in r.text, f"a filesystem path in the response: {path}"
    if r.status_code >= 400:
        error = r.json()["error"]
        assert isinstance(error["code"], str) and isinstance(error["message"], str) and error["message"]


@pytest.mark.parametrize("route", ["/search", "/ask"])
def test_request_bodies(route, fuzz_client, small_index):
    paths = [str(small_index.path.parent), str(Path.home()) + "/"]

    @FUZZ
    @given(body=bodies)
    def run(body):
        check(fuzz_client.post(route, content=json.dumps(body).encode(), headers={"Content-Type": "application/json"}), paths)

    run()


@FUZZ
@given(raw=st.binary(max_size=200))
def test_raw_bytes_as_a_body(fuzz_client, raw):
    check(fuzz_client.post("/search", content=raw, headers={"Content-Type": "application/json"}), [])


utterances = st.one_of(values, st.fixed_dictionaries(
    {"utterance_id": st.one_of(texts, values)},
    optional={"speakers": st.one_of(st.lists(texts, max_size=3), values), "transcript": st.one_of(texts, values),
              "stage_direction": values}))
records = st.one_of(values, st.fixed_dictionaries(
    {"scene_id": st.one_of(st.sampled_from(["s01_e01_c01", "s1_e2_c3", "bad"]), texts, values),
     "utterances": st.one_of(st.lists(utterances, max_size=3), values)},
    optional={"episode_title": st.one_of(texts, values), "season": values, "episode": values, "scene": values}))


@FUZZ
@given(lines=st.lists(records, min_size=1, max_size=3))
def test_corpus_records_are_read_or_refused_with_a_corpus_error(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("fuzz") / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8", errors="surrogatepass")
    try:
        docs = load_friends(path)
    except CorpusError as exc:
        assert str(path) in str(exc) and "line" in str(exc)
        return
    for doc in docs:  # what is read is text a store can write
        for unit in doc.units:
            unit.text.encode("utf-8")
            assert all(isinstance(s, str) for s in unit.speakers)

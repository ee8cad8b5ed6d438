"""The Cohere reranker against the loopback server: order and scores, retries, the fallback key, every degraded
path (the raw call and the reply parser: tests/clients/test_cohere.py)."""

from __future__ import annotations

import pytest

from ragfunnel.rerank.cohere import CohereReranker
from tests.loopback import JSONReply as Reply

KEY, FALLBACK = "co-primary-SECRET-1", "co-fallback-SECRET-2"


def ok(*pairs):
    return Reply(body={"id": "x", "results": [{"index": i, "relevance_score": s} for i, s in pairs]})


@pytest.fixture(autouse=True)
def no_env_keys(monkeypatch):
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.delenv("COHERE_API_KEY_FALLBACK", raising=False)


def make(server, **kw):
    kw = {"api_key": KEY, "base_url": server.url, "timeout": 2.0, "backoff": 0.01, **kw}
    return CohereReranker(**kw)


def ids(result):
    return [c.doc_id for c in result.candidates]


def assert_no_secret(result, *objs):
    for text in [*result.notes, *map(repr, objs)]:
        assert "SECRET" not in text


def assert_kept_order(result, passages):
    assert result.degraded
    assert result.candidates == [p.candidate for p in passages]


def test_success_reorders_with_cohere_scores(server, passages):
    server.reply(ok((2, 0.91), (0, 0.5), (3, 0.12), (1, 0.01)))
    rr = make(server)
    result = rr.rerank("who lost the monkey?", passages)
    assert ids(result) == ["c", "a", "d", "b"]
    assert [c.score for c in result.candidates] == [0.91, 0.5, 0.12, 0.01]
    assert [c.rank for c in result.candidates] == [1, 2, 3, 4]
    assert result.candidates[0].sources["fused"] == (3, 2.0)
    assert result.notes == [] and not result.degraded
    (req,) = server.requests
    assert req.path == "/v2/rerank"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.body == {
        "model": "rerank-v3.5",
        "query": "who lost the monkey?",
        "documents": ["text a", "text b", "text c", "text d"],
        "top_n": 4,
    }
    assert_no_secret(result, rr)


def test_keys_come_from_the_environment(server, passages, monkeypatch):
    monkeypatch.setenv("COHERE_API_KEY", KEY)
    server.reply(ok((1, 0.9)))
    make(server, api_key=None).rerank("q", passages)
    assert server.keys_seen() == [f"Bearer {KEY}"]


def test_429_then_success(server, passages):
    server.reply(Reply(429, {"message": "slow down"}, {"Retry-After": "0"}), ok((3, 0.8), (0, 0.2)))
    result = make(server).rerank("q", passages)
    assert len(server.requests) == 2 and server.keys_seen() == [f"Bearer {KEY}"] * 2
    assert not result.degraded
    assert ids(result) == ["d", "a", "b", "c"]  # b and c were not scored: fused order, after the scored ones
    assert [c.score for c in result.candidates] == [0.8, 0.2, 0.0, 0.0]
    assert result.notes == ["cohere: scored 2 of 4 passages; the rest kept their fused order"]


def test_500_twice_degrades(server, passages):
    server.reply(Reply(500, {"message": "internal"}))
    result = make(server).rerank("q", passages)
    assert len(server.requests) == 2
    assert_kept_order(result, passages)
    assert result.notes == ["cohere rerank failed (HTTP 500); kept the fused order"]


def test_500_twice_then_the_fallback_key(server, passages):
    server.reply(Reply(500, {}), Reply(500, {}), ok((1, 0.7), (0, 0.6), (2, 0.5), (3, 0.4)))
    rr = make(server, fallback_api_key=FALLBACK)
    result = rr.rerank("q", passages)
    assert server.keys_seen() == [f"Bearer {KEY}", f"Bearer {KEY}", f"Bearer {FALLBACK}"]
    assert ids(result) == ["b", "a", "c", "d"] and not result.degraded
    assert result.notes == ["cohere: primary key failed (HTTP 500); tried the fallback key"]
    assert_no_secret(result, rr)


def test_timeout_degrades(server, passages):
    server.reply(Reply(body={"results": [{"index": 1, "relevance_score": 0.9}]}, delay=0.3))
    result = make(server, timeout=0.1).rerank("q", passages)
    assert len(server.requests) == 2
    assert_kept_order(result, passages)
    assert result.notes == ["cohere rerank failed (timed out); kept the fused order"]


def test_malformed_json_degrades_without_retry(server, passages):
    server.reply(Reply(body=b'{"results": [{"index": 0,'))
    result = make(server, fallback_api_key=FALLBACK).rerank("q", passages)
    assert len(server.requests) == 1  # neither a retry nor the fallback key can fix a garbled reply
    assert_kept_order(result, passages)
    assert result.notes == ["cohere rerank failed (malformed JSON); kept the fused order"]


@pytest.mark.parametrize(
    "body",
    [
        {"data": []},
        [{"index": 0, "relevance_score": 0.3}],
        {"results": {"index": 0}},
        {"results": [{"index": "0", "relevance_score": 0.3}]},
        {"results": [{"index": True, "relevance_score": 0.3}]},
        {"results": [{"index": 0, "relevance_score": "high"}]},
        {"results": [{"index": 0}]},
        {"results": [3]},
    ],
)
def test_wrong_shape_degrades(server, passages, body):
    server.reply(Reply(body=body))
    result = make(server).rerank("q", passages)
    assert_kept_order(result, passages)
    assert len(result.notes) == 1 and result.notes[0].startswith("cohere rerank failed (unexpected reply: ")


def test_out_of_range_and_repeated_indices_are_dropped(server, passages):
    server.reply(ok((7, 0.99), (1, 0.8), (-1, 0.7), (1, 0.75), (0, 0.3)))
    result = make(server).rerank("q", passages)
    assert not result.degraded
    assert ids(result) == ["b", "a", "c", "d"]
    assert [c.score for c in result.candidates] == [0.8, 0.3, 0.0, 0.0]
    assert result.notes == [
        "cohere: dropped 3 out-of-range or repeated indices from the reply",
        "cohere: scored 2 of 4 passages; the rest kept their fused order",
    ]


def test_only_invalid_indices_degrade(server, passages):
    server.reply(ok((4, 0.9), (9, 0.8)))
    result = make(server).rerank("q", passages)
    assert_kept_order(result, passages)
    assert result.notes == ["cohere rerank failed (no valid index in the reply); kept the fused order"]


def test_401_on_primary_then_fallback_key(server, passages):
    server.reply(Reply(body={"results": [{"index": 3, "relevance_score": 0.9}]}, only_for_key=FALLBACK))
    rr = make(server, fallback_api_key=FALLBACK)
    result = rr.rerank("q", passages)
    assert server.keys_seen() == [f"Bearer {KEY}", f"Bearer {FALLBACK}"]  # 401 is not retried with the same key
    assert ids(result) == ["d", "a", "b", "c"] and not result.degraded
    assert result.notes[0] == "cohere: primary key failed (HTTP 401); tried the fallback key"
    assert_no_secret(result, rr)


def test_fallback_key_from_env_and_both_keys_refused(server, passages, monkeypatch):
    monkeypatch.setenv("COHERE_API_KEY_FALLBACK", FALLBACK)
    server.reply(Reply(403, {"message": "forbidden"}))
    result = make(server).rerank("q", passages)
    assert server.keys_seen() == [f"Bearer {KEY}", f"Bearer {FALLBACK}"]
    assert_kept_order(result, passages)
    assert result.notes == [
        "cohere: primary key failed (HTTP 403); tried the fallback key",
        "cohere rerank failed (HTTP 403); kept the fused order",
    ]
    assert_no_secret(result)


def test_400_does_not_use_the_fallback_key(server, passages):
    server.reply(Reply(400, {"message": "too many documents"}))
    result = make(server, fallback_api_key=FALLBACK).rerank("q", passages)
    assert len(server.requests) == 1
    assert result.degraded and result.notes == ["cohere rerank failed (HTTP 400); kept the fused order"]


def test_unreachable_degrades(closed_url, passages):
    result = CohereReranker(api_key=KEY, base_url=closed_url, timeout=1.0, backoff=0.01).rerank("q", passages)
    assert_kept_order(result, passages)
    assert result.notes == ["cohere rerank failed (unreachable); kept the fused order"]


def test_no_key_degrades_without_a_request(server, passages):
    result = make(server, api_key=None).rerank("q", passages)
    assert server.requests == []
    assert_kept_order(result, passages)
    assert result.notes == ["cohere: no COHERE_API_KEY set; kept the fused order"]


def test_no_passages_no_request(server):
    result = make(server).rerank("q", [])
    assert result.candidates == [] and not result.degraded and server.requests == []


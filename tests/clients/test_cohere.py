"""The raw Cohere v2 rerank call against the loopback server, and the reply parser (the reranker's policy, keys
and degraded paths are tested in tests/rerank/test_cohere.py)."""

from __future__ import annotations

import pytest

from ragfunnel.clients.cohere import CohereClient, ReplyShapeError, parse_results
from ragfunnel.clients.http import HTTPFailure
from tests.clients.conftest import Sleeps
from tests.loopback import JSONReply

KEY = "co-SECRET-1"


def test_rerank_posts_the_v2_request_and_returns_scores_by_position(server):
    server.reply(JSONReply(body={"id": "x", "results": [{"index": 1, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.2}]}))
    client = CohereClient(base_url=server.url + "/", timeout=2)
    assert client.rerank(KEY, "who?", ["a", "b", "c"]) == ({1: 0.9, 0: 0.2}, 0)
    (req,) = server.requests
    assert req.path == "/v2/rerank" and req.headers["authorization"] == f"Bearer {KEY}"
    assert req.body == {"model": "rerank-v3.5", "query": "who?", "documents": ["a", "b", "c"], "top_n": 3}
    assert KEY not in repr(client)


def test_rerank_retries_as_told(server):
    server.reply(JSONReply(500, {}))
    sleeps = Sleeps()
    client = CohereClient(base_url=server.url, timeout=2, backoff=0.02, sleep=sleeps)
    with pytest.raises(HTTPFailure, match="^HTTP 500$"):
        client.rerank(KEY, "q", ["a"], retries=0)
    assert len(server.requests) == 1 and sleeps == []
    server.reset().reply(JSONReply(500, {}))
    with pytest.raises(HTTPFailure, match="^HTTP 500$"):
        client.rerank(KEY, "q", ["a"], retries=1)
    assert len(server.requests) == 2 and sleeps == [0.02]


def test_rerank_wrong_shape_raises(server):
    server.reply(JSONReply(body={"data": []}))
    with pytest.raises(ReplyShapeError, match="no results list"):
        CohereClient(base_url=server.url, timeout=2).rerank(KEY, "q", ["a"])


def test_parse_results_keeps_the_first_of_a_repeated_index():
    assert parse_results({"results": [{"index": 1, "relevance_score": 0.4}, {"index": 1, "relevance_score": 0.9}]}, 2) == (
        {1: 0.4},
        1,
    )


def test_parse_results_drops_out_of_range_indices():
    reply = {"results": [{"index": 7, "relevance_score": 0.99}, {"index": -1, "relevance_score": 0.5}, {"index": 0, "relevance_score": 1}]}
    assert parse_results(reply, 2) == ({0: 1.0}, 2)

"""The raw OpenAI embeddings call against the loopback server, and the reply parser (the encoder built on it, its
key, batching and errors are tested in tests/test_embedding_api.py)."""

from __future__ import annotations

import pytest

from ragfunnel.clients.embeddings import EmbeddingsClient, ReplyShapeError, embeddings_url, parse_embeddings
from ragfunnel.clients.http import HTTPFailure
from tests.clients.conftest import Sleeps
from tests.loopback import JSONReply

KEY = "sk-SECRET-emb"


def reply(*vectors: list[float], order: list[int] | None = None) -> JSONReply:
    items = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
    if order is not None:
        items = [items[i] for i in order]
    return JSONReply(body={"object": "list", "data": items, "model": "m"})


@pytest.mark.parametrize("base", ["http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/v1/"])
def test_the_url_has_one_v1(base):
    assert embeddings_url(base) == "http://h:1/v1/embeddings"


def test_embed_posts_model_and_inputs_with_the_key_and_sorts_by_index(server):
    server.reply(reply([1.0, 0.0], [0.0, 1.0], [0.5, 0.5], order=[2, 0, 1]))
    client = EmbeddingsClient(server.url + "/v1", "nomic-embed-text", timeout=2)
    assert client.embed(["a", "b", "c"], KEY) == [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]
    (req,) = server.requests
    assert req.path == "/v1/embeddings" and req.headers["authorization"] == f"Bearer {KEY}"
    assert req.body == {"model": "nomic-embed-text", "input": ["a", "b", "c"]}
    assert KEY not in repr(client)


def test_no_key_sends_no_authorization_and_no_text_sends_nothing(server):
    server.reply(reply([1.0]))
    client = EmbeddingsClient(server.url, "m", timeout=2)
    assert client.embed([]) == [] and server.requests == []
    client.embed(["a"])
    assert "authorization" not in server.requests[0].headers


def test_a_500_is_retried_with_exponential_backoff(server):
    server.reply(JSONReply(500, {}), JSONReply(502, {}), reply([1.0]))
    sleeps = Sleeps()
    client = EmbeddingsClient(server.url, "m", timeout=2, backoff=0.1, sleep=sleeps)
    assert client.embed(["a"]) == [[1.0]]
    assert len(server.requests) == 3 and sleeps == [0.1, 0.2]


def test_a_429_waits_its_retry_after(server):
    server.reply(JSONReply(429, {"error": {"type": "rate_limit"}}, headers={"Retry-After": "7"}), reply([1.0]))
    sleeps = Sleeps()
    client = EmbeddingsClient(server.url, "m", timeout=2, sleep=sleeps)
    assert client.embed(["a"]) == [[1.0]]
    assert sleeps == [7.0]


def test_retries_end_and_a_4xx_is_not_retried(server):
    server.reply(JSONReply(503, {}))
    sleeps = Sleeps()
    client = EmbeddingsClient(server.url, "m", timeout=2, retries=2, backoff=0.01, sleep=sleeps)
    with pytest.raises(HTTPFailure, match="^HTTP 503$"):
        client.embed(["a"])
    assert len(server.requests) == 3
    server.reset().reply(JSONReply(401, {}))
    with pytest.raises(HTTPFailure, match="^HTTP 401$"):
        client.embed(["a"], KEY)
    assert len(server.requests) == 1


def test_a_batch_too_large_for_the_server_goes_again_in_halves(server):
    server.reply(JSONReply(413, {}), reply([1.0]), reply([2.0], [3.0]))
    client = EmbeddingsClient(server.url, "m", timeout=2)
    assert client.embed(["a", "b", "c"]) == [[1.0], [2.0], [3.0]]
    assert [r.body["input"] for r in server.requests] == [["a", "b", "c"], ["a"], ["b", "c"]]


@pytest.mark.parametrize("body, why", [
    ({"error": {"message": "bad"}}, "an error reply"),
    ({"data": "x"}, "no data list"),
    ([1, 2], "no data list"),
    ({"data": [{"index": 0, "embedding": [1.0]}]}, "1 embeddings for 2 inputs"),
    ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]}, "index 0 appears twice"),
    ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 5, "embedding": [2.0]}]}, "no valid index"),
    ({"data": [{"index": 0, "embedding": [1.0]}, {"index": True, "embedding": [2.0]}]}, "no valid index"),
    ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": "AAAA"}]}, "base64"),
    ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": []}]}, "not a list of numbers"),
    ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [None]}]}, "finite numbers"),
    ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [float("nan")]}]}, "finite numbers"),
    ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2.0]}]}, "1 and 2 dimensions"),
    ({"data": [{"index": 0, "embedding": [1.0]}, "x"]}, "not an object"),
])
def test_malformed_replies_name_what_is_wrong(body, why):
    with pytest.raises(ReplyShapeError, match=why):
        parse_embeddings(body, 2)


def test_a_reply_without_indices_is_taken_in_order():
    assert parse_embeddings({"data": [{"embedding": [1]}, {"embedding": [2]}]}, 2) == [[1], [2]]


def test_malformed_json_is_an_http_failure(server):
    server.reply(JSONReply(body=b"{not json"))
    with pytest.raises(HTTPFailure, match="malformed JSON"):
        EmbeddingsClient(server.url, "m", timeout=2).embed(["a"])

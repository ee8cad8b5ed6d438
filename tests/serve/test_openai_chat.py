"""The OpenAI-compatible endpoint driven by the official `openai` client against the app on a loopback port (the
small real index, the fake LLM): models, chat completions streamed and not, citations as text and extension
fields, a follow-up with history, and OpenAI error objects for bad input and a missing token."""

from __future__ import annotations

import pytest

openai = pytest.importorskip("openai")
pytestmark = pytest.mark.integration

QUESTION = "Who did Rachel dump at the altar?"


@pytest.fixture(scope="module")
def oai(live_url):
    return openai.OpenAI(base_url=f"{live_url}/v1", api_key="unused", max_retries=0, timeout=60)


def test_models_are_one_per_mode(oai, small_index):
    ids = [m.id for m in oai.models.list()]
    assert ids == [f"ragfunnel-{name}" for name in small_index.settings.mode_names]
    assert "ragfunnel-hybrid" in ids and "ragfunnel-fast" in ids


def test_chat_completion_answers_with_citations_in_text_and_fields(oai):
    done = oai.chat.completions.create(model="ragfunnel-hybrid", messages=[{"role": "user", "content": QUESTION}],
                                       extra_body={"k": 3})
    text = done.choices[0].message.content
    assert done.choices[0].finish_reason == "stop" and "[1]" in text and "\n\nSources:\n[1] S01E04, Scene 4" in text
    citations = done.model_extra["citations"]
    assert citations and citations[0]["id"] == "s01_e04_c04" and citations[0]["quote"] in text
    extra = done.model_extra["ragfunnel"]
    assert extra["mode"] == "hybrid" and not extra["refused"] and "trace" not in extra


def test_streamed_chat_completion_gives_the_same_answer(oai):
    messages = [{"role": "user", "content": QUESTION}]
    plain = oai.chat.completions.create(model="ragfunnel-fast", messages=messages)
    chunks = list(oai.chat.completions.create(model="ragfunnel-fast", messages=messages, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert " ".join(text.split()) == " ".join(plain.choices[0].message.content.split())
    assert "CITATION" not in text
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop" and last.model_extra["citations"] == plain.model_extra["citations"]


def test_a_follow_up_is_read_with_the_conversation(oai):
    done = oai.chat.completions.create(model="ragfunnel-hybrid", extra_body={"reader": "evidence"}, messages=[
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "Barry [1]"},
        {"role": "user", "content": "Why did she leave him?"},
    ])
    extra = done.model_extra["ragfunnel"]
    assert extra["question"] == "Why did Rachel leave Barry?" and extra["reader"] == "evidence"
    assert extra["notes"][0].startswith("a follow-up")


@pytest.mark.parametrize("kwargs, error, message", [
    ({"model": "gpt-4o"}, "NotFoundError", "the model 'gpt-4o' does not exist"),
    ({"messages": [{"role": "user", "content": "   "}]}, "BadRequestError", "the question is empty"),
    ({"messages": [{"role": "assistant", "content": "hi"}]}, "BadRequestError", "the last message must be"),
    ({"messages": []}, "BadRequestError", "messages"),
    ({"extra_body": {"k": 0}}, "BadRequestError", "k:"),
    ({"extra_body": {"filter": {"season": {"near": 1}}}}, "BadRequestError", "near"),
])
def test_bad_requests_get_openai_error_objects(oai, kwargs, error, message):
    call = {"model": "ragfunnel-hybrid", "messages": [{"role": "user", "content": QUESTION}], **kwargs}
    with pytest.raises(getattr(openai, error)) as caught:
        oai.chat.completions.create(**call)
    body = caught.value.body
    assert message in body["message"] and body["type"] == "invalid_request_error" and "\n" not in body["message"]


def test_the_token_is_required_when_the_server_has_one(make_app):
    from ragfunnel.serve.background import serve_in_thread

    with serve_in_thread(make_app(token="s3cret")) as url:
        wrong = openai.OpenAI(base_url=f"{url}/v1", api_key="nope", max_retries=0)
        with pytest.raises(openai.AuthenticationError) as caught:
            wrong.models.list()
        assert caught.value.body["type"] == "authentication_error" and "API token" in caught.value.body["message"]
        right = openai.OpenAI(base_url=f"{url}/v1", api_key="s3cret", max_retries=0)
        assert "ragfunnel-hybrid" in [m.id for m in right.models.list()]

"""Encoders beyond the bundled CPU model (issue 35.5): `openai:<base_url>|<model>` against a loopback `/v1/embeddings`
server that embeds with the bundled MiniLM (what Ollama or TEI would answer), end to end through `ragfunnel index`
and `search`; and the ONNX encoder's CUDA option, whose message paths are all a machine without a GPU can test."""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import dataclass

import numpy as np
import pytest
from typer.testing import CliRunner

import ragfunnel.embedding as embedding
from ragfunnel.cli import app
from ragfunnel.embedding import (
    EMBEDDINGS_KEY_ENV,
    ONNX_DEVICE_ENV,
    EmbeddingCache,
    OnnxMiniLM,
    OpenAIEncoder,
    embed_with_cache,
    make_encoder,
    onnx_device,
    onnx_providers,
)
from ragfunnel.errors import ConfigError, EncoderError
from tests.clients.conftest import Sleeps
from tests.loopback import JSONReply, LoopbackServer, MiniLMEmbeddings, closed_loopback_url, shared_server

TEXTS = ["Descale the espresso machine every month.", "Water the basil on Tuesdays.", "Oil the bike chain after rain.",
         "Bleed the radiators before winter.", "Preheat the oven to 200 degrees."]
KEY = "sk-SECRET-embeddings"


@pytest.fixture
def server(monkeypatch) -> LoopbackServer:
    for name in (EMBEDDINGS_KEY_ENV, "OPENAI_API_KEY", "RAGFUNNEL_EMBEDDINGS_BATCH", "RAGFUNNEL_EMBEDDINGS_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    return shared_server().reset()


def api_encoder(server: LoopbackServer, **settings) -> OpenAIEncoder:
    return OpenAIEncoder(server.url + "/v1", "minilm", timeout=5, **{"sleep": Sleeps(), **settings})


# ---- the encoder --------------------------------------------------------------------------------------------------


def test_vectors_are_the_servers_normalised_in_batches(server, encoder):
    server.reply(MiniLMEmbeddings(reverse=True, scale=3.0))  # items out of order, vectors not unit length
    api = api_encoder(server, batch_size=2)
    vectors = api.encode(TEXTS)
    assert vectors.shape == (5, 384) and vectors.dtype == np.float32 and api.dim == 384
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors, encoder.encode(TEXTS), atol=1e-5)
    assert [r.body["input"] for r in server.requests] == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:]]
    assert all(r.path == "/v1/embeddings" and r.body["model"] == "minilm" for r in server.requests)
    assert api.encode([]).shape == (0, 384) and len(server.requests) == 3


def test_the_batch_and_timeout_come_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_EMBEDDINGS_BATCH", "3")
    monkeypatch.setenv("RAGFUNNEL_EMBEDDINGS_TIMEOUT", "7.5")
    api = make_encoder(f"openai:{server.url}|minilm")
    assert (api.batch_size, api.client.timeout) == (3, 7.5)
    monkeypatch.setenv("RAGFUNNEL_EMBEDDINGS_BATCH", "none")
    with pytest.raises(ConfigError, match="RAGFUNNEL_EMBEDDINGS_BATCH='none': not a positive number"):
        make_encoder(f"openai:{server.url}|minilm")


def test_dim_is_learned_from_the_first_reply(server):
    server.reply(MiniLMEmbeddings())
    api = api_encoder(server)
    assert api.dim == 384  # one probe request
    assert [r.body["input"] for r in server.requests] == [["dimension probe"]]
    api.encode(TEXTS[:1])
    assert api.dim == 384 and len(server.requests) == 2  # no second probe


def test_the_key_is_a_bearer_token_from_the_environment_and_never_shown(server, monkeypatch):
    server.reply(MiniLMEmbeddings())
    api = api_encoder(server)
    api.encode(TEXTS[:1])
    assert "authorization" not in server.requests[-1].headers  # local servers need no key
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    api.encode(TEXTS[:1])
    assert server.requests[-1].headers["authorization"] == "Bearer sk-openai"
    monkeypatch.setenv(EMBEDDINGS_KEY_ENV, KEY)  # ours first
    api.encode(TEXTS[:1])
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    server.reset().reply(JSONReply(401, {"error": {"message": f"bad key {KEY}"}}))
    with pytest.raises(EncoderError) as failed:
        api.encode(TEXTS[:1])
    message = str(failed.value)
    assert KEY not in message and KEY not in repr(api) and "\n" not in message
    assert "(HTTP 401)" in message and EMBEDDINGS_KEY_ENV in message


def test_a_500_is_retried_and_a_429_waits_its_retry_after(server):
    sleeps = Sleeps()
    api = api_encoder(server, sleep=sleeps, backoff=0.1)
    server.reply(JSONReply(500, {}), MiniLMEmbeddings())
    api.encode(TEXTS[:2])
    assert len(server.requests) == 2 and sleeps == [0.1]
    server.reset().reply(JSONReply(429, {}, headers={"Retry-After": "3"}), JSONReply(503, {}), MiniLMEmbeddings())
    api.encode(TEXTS[2:])
    assert len(server.requests) == 3 and sleeps == [0.1, 3.0, 0.2]


def test_a_rate_limit_on_the_first_request_is_waited_out_too(server):
    sleeps = Sleeps()
    server.reply(JSONReply(429, {}, headers={"Retry-After": "2"}), JSONReply(429, {}, headers={"Retry-After": "2"}),
                 JSONReply(429, {}, headers={"Retry-After": "2"}), MiniLMEmbeddings())
    assert api_encoder(server, sleep=sleeps).encode(TEXTS[:1]).shape == (1, 384)
    assert sleeps == [2.0, 2.0] and len(server.requests) == 4  # a server that answers gets every retry


def test_an_unreachable_server_is_one_line_at_once(server):
    sleeps = Sleeps()
    api = OpenAIEncoder(closed_loopback_url(), "minilm", timeout=2, sleep=sleeps)
    with pytest.raises(EncoderError, match=r"^the embedding server http://127\.0\.0\.1:\d+/v1/embeddings failed for the "
                                           r"model 'minilm' \(unreachable\): is the server running and the URL right\?$"):
        api.encode(TEXTS[:1])
    assert len(sleeps) == 1  # one retry before the server has ever answered


@pytest.mark.parametrize("reply, why", [
    (JSONReply(body={"data": []}), r"\(unexpected reply: 0 embeddings for 1 inputs\)"),
    (JSONReply(body=b"<html>proxy error</html>"), r"\(malformed JSON\)"),
    (JSONReply(404, {}), r"\(HTTP 404\): is the URL an OpenAI-compatible server's"),
    (JSONReply(400, {}), r"\(HTTP 400\): texts too long for the model"),
])
def test_bad_replies_are_one_line_errors(server, reply, why):
    server.reply(reply)
    with pytest.raises(EncoderError, match=why):
        api_encoder(server).encode(TEXTS[:1])


def test_a_server_whose_width_changes_is_an_error(server):
    api = api_encoder(server)
    server.reply(JSONReply(body={"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0]}]}))
    api.encode(["a"])
    server.reset().reply(JSONReply(body={"data": [{"index": 0, "embedding": [1.0, 0.0]}]}))
    with pytest.raises(EncoderError, match="vectors of 2 dimensions, earlier 3: was the model changed"):
        api.encode(["b"])


def test_names_ids_and_the_cache(server, tmp_path):
    api = make_encoder(f"openai:{server.url}/v1/|minilm")
    assert isinstance(api, OpenAIEncoder)
    assert api.model_id == f"openai:{server.url}/v1|minilm" == make_encoder(f"openai:{server.url}|minilm").model_id
    assert make_encoder("openai:text-embedding-3-small").model_id == "openai:https://api.openai.com/v1|text-embedding-3-small"
    assert make_encoder(f"openai:{server.url}|other").model_id != api.model_id  # another model, another id
    assert make_encoder("openai:http://10.0.0.2:11434|minilm").model_id != api.model_id  # another server too
    for bad in ("openai:", "openai:ftp://x|m", "openai:http://x|", "openai:localhost:11434|m"):
        with pytest.raises(ConfigError, match=r"use openai:<base_url>\|<model>"):
            make_encoder(bad)
    server.reply(MiniLMEmbeddings())
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    embed_with_cache(api, TEXTS, cache, batch_size=2)
    assert cache.count(api.model_id) == 5 and len(server.requests) == 3
    embed_with_cache(api, TEXTS, cache)  # all cached: no request
    assert len(server.requests) == 3
    cache.close()


# ---- end to end: index and search a folder through the server --------------------------------------------------


FOLDER = {
    "espresso.md": "# Espresso\n\nDescale the espresso machine every month with citric acid.\n",
    "basil.txt": "Water the basil plants every Tuesday morning before work.\n",
    "garage/bike.md": "# Bike\n\nOil the bicycle chain after riding in the rain, and check the brake pads.\n",
    "records.jsonl": '{"id": "r1", "text": "Bleed the radiators before the heating season starts."}\n'
                     '{"id": "r2", "text": "Preheat the oven to 200 degrees before baking bread."}\n',
}
QUESTIONS = {"how do I keep my bicycle running smoothly?": "garage/bike.md",
             "when should I look after the heating?": "records.jsonl#r1",
             "getting the coffee maker clean": "espresso.md"}


def search(collection: str, question: str) -> list[str]:
    result = CliRunner().invoke(app, ["search", "--collection", collection, question, "--json", "--mode", "vector"])
    assert result.exit_code == 0, result.output
    return [hit["id"] for hit in json.loads(result.stdout)["results"]]


def test_a_folder_indexes_and_searches_through_the_embeddings_server(server, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    root = tmp_path / "house"
    for rel, text in FOLDER.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    server.reply(MiniLMEmbeddings())
    runner = CliRunner()
    name = f"openai:{server.url}/v1|minilm"
    built = runner.invoke(app, ["index", str(root), "--collection", "api", "--encoder", name, "--json", "-q"])
    assert built.exit_code == 0, built.output
    assert json.loads(built.stdout)["documents"] == 5
    assert server.requests and all(r.path == "/v1/embeddings" for r in server.requests)
    manifest = json.loads((tmp_path / "home" / "collections" / "api" / "index" / "manifest.json").read_text())
    assert manifest["settings"]["encoder"] == name and manifest["encoder_model_id"] == name and manifest["dim"] == 384

    # the server embeds with the fp32 model; a new folder's own default may be int8 (collections.folder_default_encoder)
    bundled = runner.invoke(app, ["index", str(root), "--collection", "bundled", "--encoder", "default", "--json", "-q"])
    assert bundled.exit_code == 0, bundled.output
    for question, relevant in QUESTIONS.items():
        ranking = search("api", question)
        assert ranking[0] == relevant
        assert ranking == search("bundled", question)  # the same vectors, so the same ranking

    asked = len(server.requests)
    again = runner.invoke(app, ["index", str(root), "--collection", "api", "--encoder", name, "--json", "-q"])
    assert again.exit_code == 0 and json.loads(again.stdout)["action"] == "none"
    (root / "basil.txt").write_text("Water the basil plants every Tuesday and Friday.\n")
    synced = runner.invoke(app, ["index", str(root), "--collection", "api", "--encoder", name, "--json", "-q"])
    assert json.loads(synced.stdout)["updated"] == ["basil.txt"]
    assert [len(r.body["input"]) for r in server.requests[asked:]] == [1]  # only the changed chunk is embedded

    # the collection's own [store] encoder: `index -c api` syncs with it, no --encoder needed
    own = tmp_path / "home" / "collections" / "api" / "collection.toml"
    own.write_text(own.read_text().replace("[store]\n", f'[store]\nencoder = "{name}"\n', 1))
    plain = runner.invoke(app, ["index", "--collection", "api", "--json", "-q"])
    assert plain.exit_code == 0, plain.output
    assert json.loads(plain.stdout)["action"] == "none"


@dataclass
class WordHashEmbeddings:
    """A server of 24-dimensional bag-of-words vectors (each word counts in the slot of its crc32): not MiniLM's 384."""

    delay: float = 0.0
    dim: int = 24

    def write(self, handler) -> None:
        vectors = []
        for text in handler.request_body["input"]:
            v = [0.0] * self.dim
            for word in re.findall(r"\w+", text.lower()):
                v[zlib.crc32(word.encode()) % self.dim] += 1.0
            vectors.append(v if any(v) else [1.0] + [0.0] * (self.dim - 1))
        JSONReply(body={"data": [{"index": i, "embedding": v} for i, v in enumerate(vectors)]}).write(handler)


def test_a_server_of_another_width_builds_an_index_of_that_width(server, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    root = tmp_path / "house"
    for rel, text in FOLDER.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    server.reply(WordHashEmbeddings())
    runner = CliRunner()
    name = f"openai:{server.url}|words"
    built = runner.invoke(app, ["index", str(root), "--collection", "words", "--encoder", name, "--json", "-q"])
    assert built.exit_code == 0, built.output
    manifest = json.loads((tmp_path / "home" / "collections" / "words" / "index" / "manifest.json").read_text())
    assert manifest["dim"] == 24
    assert search("words", "radiators heating season")[0] == "records.jsonl#r1"
    embedding.shared_encoder.cache_clear()  # a new process: the width comes from the manifest, not from the server
    asked = len(server.requests)
    found = runner.invoke(app, ["search", "--collection", "words", "radiators", "--json", "--mode", "bm25"])
    assert found.exit_code == 0 and len(server.requests) == asked


def test_index_with_an_unreachable_server_is_one_line_and_exit_2(tmp_path, monkeypatch):
    from ragfunnel.cli import main

    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("some text\n")
    monkeypatch.setattr("sys.argv", ["ragfunnel", "index", str(tmp_path / "docs"), "-c", "x", "--encoder",
                                     f"openai:{closed_loopback_url()}|minilm", "-q"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2


# ---- the ONNX encoder on CUDA --------------------------------------------------------------------------------------


@pytest.fixture
def no_device_env(monkeypatch):
    monkeypatch.setenv(ONNX_DEVICE_ENV, "auto")  # recorded, so that what `index --device` sets is undone after
    monkeypatch.delenv(ONNX_DEVICE_ENV)


def test_device_names(no_device_env, monkeypatch):
    assert onnx_device() == "auto" and onnx_device("CUDA") == "cuda"
    monkeypatch.setenv(ONNX_DEVICE_ENV, "cpu")
    assert onnx_device() == "cpu" and onnx_device("cuda") == "cuda"
    with pytest.raises(ConfigError, match="unknown device 'gpu' for the ONNX encoder"):
        onnx_device("gpu")


def test_cuda_without_onnxruntime_gpu_says_what_to_install(no_device_env, monkeypatch):
    import onnxruntime

    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CPUExecutionProvider"])
    assert onnx_providers("cpu") == onnx_providers("auto") == ["CPUExecutionProvider"]
    with pytest.raises(ConfigError, match=r"needs onnxruntime's CUDA provider.*pip install 'onnxruntime-gpu"):
        onnx_providers("cuda")
    with pytest.raises(ConfigError, match="onnxruntime-gpu"):
        OnnxMiniLM(device="cuda").encode(["x"])
    monkeypatch.setenv(ONNX_DEVICE_ENV, "cuda")
    with pytest.raises(ConfigError, match="onnxruntime-gpu"):
        OnnxMiniLM().encode(["x"])


def test_cuda_is_asked_for_when_onnxruntime_has_it(no_device_env, monkeypatch):
    import onnxruntime

    made = []

    class Session:  # onnxruntime without a usable GPU falls back to the CPU with a warning: its session says so
        def __init__(self, path, options, providers):
            made.append(providers)

        def get_providers(self):
            return ["CPUExecutionProvider"]

    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"])
    monkeypatch.setattr(onnxruntime, "preload_dlls", lambda: None, raising=False)
    monkeypatch.setattr(onnxruntime, "InferenceSession", Session)
    assert onnx_providers("auto") == onnx_providers("cuda") == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    with pytest.raises(ConfigError, match="could not start its CUDA provider"):
        OnnxMiniLM(device="cuda")._load()
    OnnxMiniLM(device="auto")._load()  # auto takes the CPU it got
    assert made == [["CUDAExecutionProvider", "CPUExecutionProvider"]] * 2


def test_index_device_cuda_without_a_gpu_is_one_line(no_device_env, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGFUNNEL_HOME", str(tmp_path / "home"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("some text\n")
    result = CliRunner().invoke(app, ["index", str(tmp_path / "docs"), "-c", "gpu", "--device", "cuda", "-q"])
    assert result.exit_code != 0 and isinstance(result.exception, ConfigError)
    assert "onnxruntime-gpu" in str(result.exception)


def test_the_bundled_encoder_still_runs_on_the_cpu_by_default(no_device_env):
    fresh = OnnxMiniLM()
    assert fresh.encode(["x"]).shape == (1, 384)
    assert fresh._session.get_providers() == ["CPUExecutionProvider"]
    assert embedding.onnx_device() == "auto"

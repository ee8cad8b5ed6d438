"""Fewer encoder calls for the same information (issue 35, item 2): what each way of making the window and utterance
vectors costs (texts and tokens the encoder sees) and buys (hybrid recall@5 on Direct, Reworded and FriendsQA dev),
against today's default, on one machine in one run.

    # every variant is an index of its own in one scratch home (its embedding cache shared by all of them); copy a
    # cache that holds today's vectors (~/.ragfunnel/cache/embeddings.sqlite) there first to spare the re-embedding
    python bench/first_stage/cheaper_vectors.py run --home /tmp/cv --variants default,no_scene,derived,... \
        [--existing default=~/.ragfunnel/index]   # today's default index, scored read only instead of rebuilt
    python bench/first_stage/cheaper_vectors.py report --home /tmp/cv --variants default,... \
        --out docs/results/first_stage/cheaper_vectors.md

Variants (VARIANTS below): the product's own settings (`[store] dense_views`, `derived_views`, `encoder`, the
`hybrid` mode's retrievers), or, for the ways the product does not offer (token-weighted means, late chunking,
shorter utterances), vectors computed here and put in the embedding cache under the id of a copy of the bundled
model (`onnx:<dir>`, its meta.json naming the variant), so the product builds and searches that index as any other:
the index's vectors come from the cache, the questions are embedded by the same bundled weights. Each variant is
built with `ragfunnel index` and scored with `ragfunnel eval friends --set direct|reworded|dev --mode hybrid --json`.

Cost columns: texts and tokens (with [CLS]/[SEP]) the encoder embeds for the dense views of a cold build of that
variant, and the seconds this process took to embed what it computed itself (late chunking); the cold-build timing
of the chosen default is cold_build_fast.md's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from ragfunnel.chunking import chunk_documents
from ragfunnel.config import load_settings
from ragfunnel.corpus.registry import make_corpus
from ragfunnel.embedding import DEFAULT_MODEL, INT8_MODEL, EmbeddingCache, bundled_minilm_dir, make_encoder, normalise, \
    quantised_minilm_dir, text_hash
from ragfunnel.evaluate.report import header, markdown_table, write_report

SETS = ("direct", "reworded", "dev")
TODAY = {"dense_views": ["scene", "w3s1", "utt"], "derived_views": {}, "encoder": DEFAULT_MODEL}
HYBRID = ["bm25_scene", "bm25_w3s1", "bm25_utt", "dense_w3s1", "dense_utt"]


def _variant(about: str, store: dict | None = None, hybrid: list[str] | None = None, computed: str | None = None,
             weights: str = "fp32") -> dict:
    return {"about": about, "store": {**TODAY, **(store or {})}, "hybrid": hybrid, "computed": computed,
            "weights": weights}


VARIANTS = {
    "default": _variant("today's default: scene, window and utterance vectors encoded (fp32)"),
    "no_scene": _variant("window and utterance vectors encoded, no scene vectors", {"dense_views": ["w3s1", "utt"]}),
    "derived": _variant("utterances encoded; a window's vector = the token-count-weighted mean of its 3 utterance "
                        "vectors, normalised (the product's derived_views)",
                        {"dense_views": ["w3s1", "utt"], "derived_views": {"w3s1": "utt"}}),
    "derived_plain": _variant("utterances encoded; a window's vector = the plain mean of its utterance vectors, "
                              "normalised", {"dense_views": ["w3s1", "utt"]}, computed="derived_plain"),
    "no_dense_w3s1": _variant("utterances encoded, no window vectors (hybrid without dense_w3s1)",
                              {"dense_views": ["utt"]}, hybrid=HYBRID[:3] + ["dense_utt"]),
    "w3s2": _variant("windows of 3 at stride 2 encoded (half the windows), utterances encoded",
                     {"dense_views": ["w3s2", "utt"]}, hybrid=HYBRID[:3] + ["dense_w3s2", "dense_utt"]),
    "w3s3": _variant("windows of 3 at stride 3 encoded (a third of the windows), utterances encoded",
                     {"dense_views": ["w3s3", "utt"]}, hybrid=HYBRID[:3] + ["dense_w3s3", "dense_utt"]),
    "utt_len64": _variant("window and utterance vectors encoded, utterances cut at 64 tokens",
                          {"dense_views": ["w3s1", "utt"]}, computed="utt_len64"),
    "late_w3s1": _variant("late chunking: each scene encoded once (segments of <= 256 tokens at line ends), a "
                          "window's vector pooled from its tokens; utterances encoded on their own",
                          {"dense_views": ["w3s1", "utt"]}, computed="late_w3s1"),
    "late_both": _variant("late chunking for both: each scene encoded once, window and utterance vectors pooled "
                          "from their tokens (no other encoder call)", {"dense_views": ["w3s1", "utt"]},
                          computed="late_both"),
    "int8_derived": _variant("int8 weights: utterances encoded, windows derived (the product's derived_views)",
                             {"dense_views": ["w3s1", "utt"], "derived_views": {"w3s1": "utt"},
                              "encoder": INT8_MODEL}),
    "int8_no_scene": _variant("int8 weights: window and utterance vectors encoded", {"dense_views": ["w3s1", "utt"],
                              "encoder": INT8_MODEL}),
}
# what the encoder embeds in a cold build of a variant whose vectors are computed here
COMPUTED_ENCODES = {"derived_plain": ["utt"], "utt_len64": ["w3s1", "utt"]}


# ---- vectors computed here ---------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _documents() -> tuple:
    return tuple(make_corpus("friends", load_settings().friends_dir).documents())


def documents() -> list:
    return list(_documents())


_TOKENS: dict[str, int] = {}


def token_lengths(texts: list[str]) -> list[int]:
    """The bundled model's token counts (max length 256, [CLS]/[SEP] included), each text tokenized once a run."""
    todo = [t for t in dict.fromkeys(texts) if t not in _TOKENS]
    if todo:
        _TOKENS.update(zip(todo, make_encoder(DEFAULT_MODEL).token_lengths(todo)))
    return [_TOKENS[t] for t in texts]


def fake_model_dir(home: Path, name: str, weights: str) -> Path:
    """A copy of the bundled model (fp32 or int8 weights, linked) whose id names the variant: `onnx:<dir>`."""
    target = home / "variants" / name
    target.mkdir(parents=True, exist_ok=True)
    source = bundled_minilm_dir() if weights == "fp32" else quantised_minilm_dir(home / "models")
    for part in ("onnx", "tokenizer.json"):  # the folder: onnxruntime reads the weights' external data beside it
        if not (target / part).exists():
            os.symlink(source / part, target / part)
    digest = hashlib.sha256(f"cheaper_vectors:{name}".encode()).hexdigest()
    (target / "meta.json").write_text(json.dumps({"kind": "bench-variant", "variant": name, "weights": weights,
                                                  "model_sha256": digest}))
    return target


def plain_vectors(model_id: str, texts: list[str], cache: EmbeddingCache) -> np.ndarray:
    found = cache.get_many(model_id, list(dict.fromkeys(text_hash(t) for t in texts)))
    return np.stack([found[text_hash(t)] for t in texts])


def late_chunked(docs: list, weights: str, limit: int = 256, batch: int = 16) -> tuple[dict, dict, float, int]:
    """(utterance text -> vector, window text -> vector, seconds, tokens): each scene's lines packed into segments
    of at most `limit` tokens ([CLS] + lines + [SEP], a line never split; a longer line alone, cut), every segment
    encoded once, the token vectors of a line / of a window's three lines mean-pooled and normalised."""
    encoder = make_encoder(DEFAULT_MODEL if weights == "fp32" else INT8_MODEL, max_length=limit)
    encoder.encode(["warm up"])
    session, tokenizer = encoder._session, encoder._tokenizer  # noqa: SLF001 - a bench reaching into the encoder
    from tokenizers import Tokenizer

    whole = Tokenizer.from_file(str((encoder.model_dir or bundled_minilm_dir()) / "tokenizer.json"))
    whole.no_padding()
    whole.no_truncation()
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    segments = []  # (doc index, [(unit index, ids)])
    for d, doc in enumerate(docs):
        lines = [u.render() for u in doc.units]
        encoded = whole.encode_batch(lines, add_special_tokens=False)
        current, size = [], 2
        for n, enc in enumerate(encoded):
            ids = list(enc.ids)[: limit - 2]
            if current and size + len(ids) > limit:
                segments.append((d, current))
                current, size = [], 2
            current.append((n, ids))
            size += len(ids)
        if current:
            segments.append((d, current))
    token_sums: dict[tuple[int, int], np.ndarray] = {}
    token_counts: dict[tuple[int, int], int] = {}
    order = sorted(range(len(segments)), key=lambda i: sum(len(ids) for _, ids in segments[i][1]))
    t0, tokens = time.perf_counter(), 0
    for start in range(0, len(order), batch):
        rows = [segments[i] for i in order[start : start + batch]]
        seqs = [[cls_id, *[t for _, ids in lines for t in ids], sep_id] for _, lines in rows]
        width = max(len(s) for s in seqs)
        ids = np.zeros((len(seqs), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for r, s in enumerate(seqs):
            ids[r, : len(s)], mask[r, : len(s)] = s, 1
        tokens += int(mask.sum())
        (hidden,) = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
        for r, (d, lines) in enumerate(rows):
            at = 1
            for n, line_ids in lines:
                token_sums[d, n] = hidden[r, at : at + len(line_ids)].sum(axis=0) if line_ids else np.zeros(hidden.shape[2], np.float32)
                token_counts[d, n] = len(line_ids)
                at += len(line_ids)
    seconds = time.perf_counter() - t0
    utt, win = {}, {}
    for d, doc in enumerate(docs):
        for chunk in chunk_documents([doc], ["utt", "w3s1"]):
            total = sum(token_sums[d, n] for n in range(chunk.start, chunk.end))
            count = max(sum(token_counts[d, n] for n in range(chunk.start, chunk.end)), 1)
            vector = normalise((total / count)[None])[0]
            (utt if chunk.view == "utt" else win)[chunk.text] = vector
    return utt, win, seconds, tokens


def compute(home: Path, name: str, spec: dict, cache: EmbeddingCache) -> tuple[str, dict]:
    """Put the variant's vectors in the cache under its own model id; returns the encoder setting and cost notes."""
    model_dir = fake_model_dir(home, name, spec["weights"])
    model_id = make_encoder(f"onnx:{model_dir}").model_id
    docs = documents()
    chunks = chunk_documents(docs, ["utt", "w3s1"])
    utt = [c for c in chunks if c.view == "utt"]
    win = [c for c in chunks if c.view == "w3s1"]
    base = make_encoder(DEFAULT_MODEL).model_id
    notes: dict = {}
    kind = spec["computed"]
    if kind == "derived_plain":
        unit_text = {(c.doc_id, c.start): c.text for c in utt}
        utt_vec = dict(zip((c.text for c in utt), plain_vectors(base, [c.text for c in utt], cache)))
        vectors = {c.text: utt_vec[c.text] for c in utt}
        for c in win:
            members = [unit_text[c.doc_id, n] for n in range(c.start, c.end)]
            vectors[c.text] = normalise(sum(utt_vec[t] for t in members)[None])[0]
    elif kind == "utt_len64":
        short = make_encoder(DEFAULT_MODEL, max_length=64)
        full = make_encoder(DEFAULT_MODEL)
        texts = sorted({c.text for c in utt})
        long = [t for t, n in zip(texts, full.token_lengths(texts)) if n > 64]
        t0 = time.perf_counter()
        cut = dict(zip(long, short.encode(long))) if long else {}
        notes = {"seconds": time.perf_counter() - t0, "recomputed": len(long)}
        vectors = dict(zip((c.text for c in win), plain_vectors(base, [c.text for c in win], cache)))
        vectors.update(zip(texts, plain_vectors(base, texts, cache)))
        vectors.update(cut)
    elif kind in ("late_w3s1", "late_both"):
        saved = home / f"late_{spec['weights']}.pkl"  # late_w3s1 and late_both share one pass over the scenes
        if not saved.is_file():
            saved.write_bytes(pickle.dumps(late_chunked(docs, spec["weights"])))
        late_utt, late_win, seconds, tokens = pickle.loads(saved.read_bytes())
        notes = {"seconds": seconds, "tokens": tokens}
        vectors = dict(late_win)
        if kind == "late_both":
            vectors.update(late_utt)
        else:
            vectors.update(zip((c.text for c in utt), plain_vectors(base, [c.text for c in utt], cache)))
    else:
        raise SystemExit(f"unknown computed variant {kind!r}")
    items = [(text_hash(t), v) for t, v in vectors.items()]
    for start in range(0, len(items), 5000):
        cache.put_many(model_id, items[start : start + 5000])
    return f"onnx:{model_dir}", notes


# ---- cost of a cold build ------------------------------------------------------------------------------------------

def late_segments_tokens(docs: list, limit: int = 256) -> tuple[int, int]:
    """(segments, tokens with [CLS]/[SEP]) of late chunking's one pass over the scenes, as `late_chunked` packs them."""
    from tokenizers import Tokenizer

    whole = Tokenizer.from_file(str(bundled_minilm_dir() / "tokenizer.json"))
    whole.no_padding()
    whole.no_truncation()
    segments = tokens = 0
    for doc in docs:
        size = 2
        for enc in whole.encode_batch([u.render() for u in doc.units], add_special_tokens=False):
            n = min(len(enc.ids), limit - 2)
            if size > 2 and size + n > limit:
                segments, tokens, size = segments + 1, tokens + size, 2
            size += n
        if size > 2:
            segments, tokens = segments + 1, tokens + size
    return segments, tokens


def encoder_cost(spec: dict) -> dict:
    """Distinct texts and tokens a cold build of the variant sends to the encoder (late chunking: its segments)."""
    docs = documents()
    if spec["computed"] in ("late_w3s1", "late_both"):
        segments, tokens = late_segments_tokens(docs)
        if spec["computed"] == "late_w3s1":  # and the utterances on their own
            utts = sorted({c.text for c in chunk_documents(docs, ["utt"])})
            return {"texts": segments + len(utts), "tokens": tokens + sum(token_lengths(utts))}
        return {"texts": segments, "tokens": tokens}
    store = spec["store"]
    encoded = COMPUTED_ENCODES.get(spec["computed"]) or [v for v in store["dense_views"] if v not in store["derived_views"]]
    texts = sorted({c.text for c in chunk_documents(docs, encoded)})
    lengths = token_lengths(texts)
    if spec["computed"] == "utt_len64":  # windows at 256, utterances at 64
        utts = {c.text for c in chunk_documents(docs, ["utt"])}
        lengths = [min(n, 64) if t in utts else n for t, n in zip(texts, token_lengths(texts))]
    return {"texts": len(texts), "tokens": int(sum(lengths))}


def ragfunnel(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragfunnel.cli", *args], env=env, capture_output=True, text=True,
                          check=True)


def run_variant(home: Path, name: str, existing: Path | None = None) -> dict:
    """Build the variant's index (or score `existing`, an index built with the variant's settings: read only) and
    score hybrid on every set."""
    spec = VARIANTS[name]
    env = {**os.environ, "RAGFUNNEL_HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)}
    cache = EmbeddingCache(home / "cache" / "embeddings.sqlite")
    store = dict(spec["store"])
    result: dict = {"name": name, "about": spec["about"], "store": store, "cost": encoder_cost(spec)}
    if spec["computed"]:
        store["encoder"], notes = compute(home, name, spec, cache)
        result["cost"].update(notes)
    cache.close()
    out = home / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    config = out / "config.toml"
    lines = ["[store]", f"dense_views = {json.dumps(store['dense_views'])}", f'encoder = "{store["encoder"]}"',
             "derived_views = { " + ", ".join(f'{k} = "{v}"' for k, v in store["derived_views"].items()) + " }"]
    if spec["hybrid"]:
        lines += ["", "[modes.hybrid]", f"retrievers = {json.dumps(spec['hybrid'])}", 'fusion = { method = "rrf", k = 10 }']
    config.write_text("\n".join(lines) + "\n")
    index = out / "index"
    if existing is not None:
        index = existing
        info = json.loads((existing / "manifest.json").read_text())["settings"]
        for key in ("dense_views", "encoder"):
            if info[key] != store[key] or (info.get("derived_views") or {}) != store["derived_views"]:
                raise SystemExit(f"{existing} was not built with the settings of {name}: {info}")
        result["index"] = str(existing)
    else:
        t0 = time.perf_counter()
        ragfunnel("index", "--config", str(config), "--index", str(index), "--quiet", env=env)
        result["build_s"] = time.perf_counter() - t0  # from a warm cache: not a cold build
    result["recall"] = {}
    for question_set in SETS:
        report = json.loads(ragfunnel("eval", "friends", "--set", question_set, "--mode", "hybrid", "--json",
                                      "--config", str(config), "--index", str(index), env=env).stdout)
        result["recall"][question_set] = {k: report[k] for k in ("n", "recall@5", "recall@10", "mrr@10")}
    (home / f"{name}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({"name": name, "cost": result["cost"],
                      "recall@5": {s: r["recall@5"] for s, r in result["recall"].items()}}), flush=True)
    return result


def run(args) -> None:
    home = Path(args.home)
    (home / "cache").mkdir(parents=True, exist_ok=True)
    existing = dict(item.split("=", 1) for item in args.existing)
    for name in args.variants.split(","):
        if name not in VARIANTS:
            raise SystemExit(f"unknown variant {name!r}: choose from {', '.join(VARIANTS)}")
        if args.skip_done and (home / f"{name}.json").is_file():
            continue
        run_variant(home, name, Path(existing[name]).expanduser() if name in existing else None)


def cost(args) -> None:
    """What each variant sends to the encoder in a cold build (no index, no encoding: tokenizer counts), and how
    long the utterances are in tokens (what a shorter max length could cut)."""
    rows = [{"name": name, "about": spec["about"], **encoder_cost(spec)} for name, spec in VARIANTS.items()
            if name in args.variants.split(",")]
    utts = sorted({c.text for c in chunk_documents(documents(), ["utt"])})
    lengths = np.array(make_encoder(DEFAULT_MODEL, max_length=512).token_lengths(utts))
    limits = {str(n): {"utterances_longer": int((lengths > n).sum()),
                       "tokens_beyond": int(np.clip(lengths - n, 0, None).sum())} for n in (32, 64, 128)}
    Path(args.json).write_text(json.dumps({"variants": rows, "utterances": len(utts), "tokens": int(lengths.sum()),
                                           "mean": float(lengths.mean()), "p99": float(np.percentile(lengths, 99)),
                                           "max_length": limits}, indent=1))


def report(args) -> None:
    home = Path(args.home)
    rows, base = [], None
    results = [json.loads((home / f"{n}.json").read_text()) for n in args.variants.split(",") if (home / f"{n}.json").is_file()]
    base = next((r for r in results if r["name"] == "default"), None)
    # a cold build's counts (cost.json) over what a run noted (a computed variant notes only its own encoder pass)
    counted = {v["name"]: v for v in json.loads(Path(args.cost).read_text())["variants"]} if args.cost else {}
    for r in results:
        cost = counted.get(r["name"], r["cost"])
        row = [r["name"], r["about"], f"{cost.get('texts', 0):,}" if "texts" in cost else "-",
               f"{cost['tokens']:,}" if "tokens" in cost else "-"]
        for s in SETS:
            value = r["recall"][s]["recall@5"]
            delta = f" ({value - base['recall'][s]['recall@5']:+.4f})" if base and r is not base else ""
            row.append(f"{value:.4f}{delta}")
        rows.append(row)
    doc = header(args.title)
    if rows:
        doc += "\n## hybrid recall@5 per variant (Δ: against today's default)\n\n"
        doc += markdown_table(["variant", "vectors", "texts encoded (cold)", "tokens encoded (cold)",
                               "R@5 direct (400)", "R@5 reworded (400)", "R@5 dev (1,182)"], rows)
    if args.cost:
        data = json.loads(Path(args.cost).read_text())
        today = next((v for v in data["variants"] if v["name"] == "default"), None)
        doc += "\n## What a cold build sends to the encoder, per variant (tokenizer counts, nothing encoded)\n\n"
        doc += markdown_table(["variant", "vectors", "texts (or segments) encoded", "tokens encoded",
                               "tokens / today's"],
                              [[v["name"], v["about"], f"{v['texts']:,}", f"{v['tokens']:,}",
                                f"{v['tokens'] / today['tokens']:.2f}" if today else "-"] for v in data["variants"]])
        doc += (f"\nUtterances: {data['utterances']:,} distinct, {data['tokens']:,} tokens with [CLS]/[SEP] (mean "
                f"{data['mean']:.1f}, 99th percentile {data['p99']:.0f}).\n\n")
        doc += markdown_table(["utterance max length", "utterances longer", "tokens cut", "share of utterance tokens"],
                              [[n, f"{v['utterances_longer']:,}", f"{v['tokens_beyond']:,}",
                                f"{v['tokens_beyond'] / data['tokens']:.4f}"] for n, v in data["max_length"].items()])
    timed = [r for r in results if "seconds" in r["cost"]]
    if timed:
        doc += "\n## Encoder seconds of the vectors this bench computed itself (this machine, this run)\n\n"
        doc += markdown_table(["variant", "seconds", "texts or segments' tokens"],
                              [[r["name"], f"{r['cost']['seconds']:.0f}",
                                f"{r['cost'].get('tokens', r['cost'].get('recomputed', 0)):,}"] for r in timed])
    write_report(args.out, doc)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="part", required=True)
    r = sub.add_parser("run")
    r.add_argument("--home", required=True)
    r.add_argument("--variants", required=True)
    r.add_argument("--skip-done", action="store_true", help="leave variants whose JSON is there")
    r.add_argument("--existing", nargs="*", default=[], metavar="VARIANT=INDEX",
                   help="score an index already built with a variant's settings instead of building it (read only), "
                   "e.g. default=~/.ragfunnel/index")
    c = sub.add_parser("cost")
    c.add_argument("--variants", default=",".join(VARIANTS))
    c.add_argument("--json", required=True)
    p = sub.add_parser("report")
    p.add_argument("--home", required=True)
    p.add_argument("--variants", required=True)
    p.add_argument("--cost", help="the JSON `cost` wrote")
    p.add_argument("--title", default="Fewer encoder calls (issue 35 item 2): window and utterance vectors, hybrid recall@5")
    p.add_argument("--out")
    args = ap.parse_args()
    {"run": run, "cost": cost, "report": report}[args.part](args)


if __name__ == "__main__":
    main()

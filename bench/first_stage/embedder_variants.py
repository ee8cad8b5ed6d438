"""Variants of the bi-encoder fine-tuning recipe, compared by dense-only scene recall (max over a scene's windows /
lines, exact cosine) before and after training. Self-contained (torch + transformers) so that it runs where a GPU
is, on the folder written by bench/first_stage/embedder_export.py:

    python bench/first_stage/embedder_variants.py DIR "e=2,e=3+ml=128,e=3+lr=3e-5,ict=25000+e=3"

A variant is '+'-joined options: e (epochs, 3), lr (2e-5), ml (max passage tokens, 192), w3 (windows only),
ict (that many inverse-cloze pairs first: a line as the query, its neighbours as the passage), syn=1 (add the
synthetic questions of DIR/synthetic.jsonl to the training pairs), synpre=E (train E epochs on them first instead),
synf=K (keep only the synthetic questions whose scene the untrained model ranks within K). The recipe of
`ragfunnel train embedder` was chosen by the hold-out rows (docs/results/first_stage/embedder_variants.md); SMOKE=1 runs a
tiny subset on a CPU.
"""
import gzip, json, math, os, random, sys, time
import torch, torch.nn.functional as F
from transformers import AutoModel, AutoTokenizer

torch.manual_seed(0); random.seed(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"
H = sys.argv[1]
OUT = os.environ.get("OUT", "/tmp")
chunks = {"w3s1": [], "utt": []}
for line in gzip.open(f"{H}/chunks.jsonl.gz", "rt"):
    r = json.loads(line); chunks[r["v"]].append(r)
Q = json.load(open(f"{H}/questions.json"))
if os.environ.get("SMOKE"):
    keep = {q["gold"][0] for k in Q for q in Q[k][:20]} | {c["s"] for c in chunks["utt"][:2000]}
    if os.path.exists(f"{H}/synthetic.jsonl"):
        keep |= {json.loads(line)["scene"] for line in open(f"{H}/synthetic.jsonl")}
    Q = {k: v[:20] for k, v in Q.items()}
    chunks = {v: [c for c in cs if c["s"] in keep] for v, cs in chunks.items()}
scenes = sorted({c["s"] for c in chunks["utt"]}); sidx = {s: i for i, s in enumerate(scenes)}
tok = AutoTokenizer.from_pretrained(f"{H}/minilm")
log = open(f"{OUT}/log.txt", "a")
def p(*a):
    s = " ".join(str(x) for x in a); print(s, flush=True); log.write(s + "\n"); log.flush()

def fresh():
    return AutoModel.from_pretrained(f"{H}/minilm", torch_dtype=torch.float32).to(dev)

def embed(model, texts, maxlen=256, grad=False):
    b = tok(texts, padding=True, truncation=True, max_length=maxlen, return_tensors="pt").to(dev)
    with torch.autocast(dev, dtype=torch.bfloat16):
        h = model(**b).last_hidden_state
    m = b["attention_mask"].unsqueeze(-1).float()
    v = (h.float() * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return F.normalize(v, dim=-1)

@torch.no_grad()
def encode_all(model, texts, bs=1024):
    model.eval()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = torch.empty(len(texts), 384, device=dev)
    for i in range(0, len(order), bs):
        idx = order[i:i+bs]
        out[idx] = embed(model, [texts[j] for j in idx])
    return out

def evaluate(model, tag):
    res = {}
    vecs = {v: encode_all(model, [c["t"] for c in chunks[v]]) for v in chunks}
    owner = {v: torch.tensor([sidx[c["s"]] for c in chunks[v]], device=dev) for v in chunks}
    for name in ("holdout", "direct", "reworded"):
        qs = Q[name]
        qv = encode_all(model, [q["q"] for q in qs])
        row = {}
        for v in chunks:
            sims = qv @ vecs[v].T
            sc = torch.full((len(qs), len(scenes)), -9.0, device=dev)
            sc.scatter_reduce_(1, owner[v].expand(len(qs), -1), sims, reduce="amax")
            ranks = sc.argsort(1, descending=True)
            gold = torch.tensor([sidx[q["gold"][0]] for q in qs], device=dev)
            pos = (ranks == gold[:, None]).float().argmax(1)
            r = {f"R@{k}": round((pos < k).float().mean().item(), 3) for k in (1, 5, 20, 50)}
            r["mrr10"] = round(torch.where(pos < 10, 1.0 / (pos + 1).float(), torch.zeros_like(pos, dtype=torch.float)).mean().item(), 3)
            row[v] = r
        res[name] = row
        p(tag, name, json.dumps(row))
    return res, vecs

def make_pairs(model, vecs, use_utt=True, n_neg_pool=30, qs=None):
    """(question, positive text, hard negative text) for the training questions (or the given ones)."""
    qs = Q["train"] if qs is None else qs
    qv = encode_all(model, [q["q"] for q in qs])
    pairs = []
    for v in (["w3s1", "utt"] if use_utt else ["w3s1"]):
        cs = chunks[v]
        sims = qv @ vecs[v].T
        top = sims.topk(300, dim=1).indices.tolist()
        for qi, q in enumerate(qs):
            gu = set(q["gu"]); gold = q["gold"][0]
            posl = [c["t"] for c in cs if c["s"] == gold and gu & set(c["u"])] if gu else []
            negs = [cs[j]["t"] for j in top[qi] if cs[j]["s"] != gold][:n_neg_pool]
            if q.get("syn"): random.shuffle(posl)
            for pt in posl[:3]:
                pairs.append((q["q"], pt, negs))
    return pairs

def _norm(t):
    return " ".join("".join(ch.lower() if ch.isalnum() else " " for ch in t).split())

def syn_questions():
    """Synthetic questions (local LLM over an 8-line excerpt of a scene, bench/rerank/synthesize_questions.py): gold lines are
    the excerpt's lines holding the model's answer, else the whole excerpt."""
    path = f"{H}/synthetic.jsonl"
    if not os.path.exists(path): return []
    text = {c["u"][0]: _norm(c["t"]) for c in chunks["utt"]}
    out = []
    for line in open(path):
        r = json.loads(line)
        if r["scene"] not in sidx: continue
        for q, a in r["qa"]:
            if len(q.split()) < 4 or not q.endswith("?"): continue
            an = _norm(a)
            gu = [u for u in r["units"] if an and len(an) > 3 and an in text.get(u, "")] or r["units"]
            out.append({"id": f"syn-{len(out)}", "q": q, "gold": [r["scene"]], "gu": gu, "syn": True})
    return out

def dense_rank_filter(model, vecs, qs, k):
    """Keep the questions whose scene the model ranks within k (a round-trip check against vague questions)."""
    if not qs: return qs
    qv = encode_all(model, [q["q"] for q in qs]); keep = []
    owner = torch.tensor([sidx[c["s"]] for c in chunks["w3s1"]], device=dev)
    for i in range(0, len(qs), 256):
        sims = qv[i:i+256] @ vecs["w3s1"].T
        sc = torch.full((sims.shape[0], len(scenes)), -9.0, device=dev)
        sc.scatter_reduce_(1, owner.expand(sims.shape[0], -1), sims, reduce="amax")
        gold = torch.tensor([sidx[q["gold"][0]] for q in qs[i:i+256]], device=dev)
        rank = (sc > sc.gather(1, gold[:, None])).sum(1)
        keep += [q for q, r in zip(qs[i:i+256], rank.tolist()) if r < k]
    return keep

def ict_pairs(n):
    cs = chunks["utt"]; by_scene = {}
    for i, c in enumerate(cs): by_scene.setdefault(c["s"], []).append(i)
    out = []
    cand = [i for i, c in enumerate(cs) if len(c["t"].split()) >= 8 and not c["t"].startswith(("(", "["))]
    for i in random.sample(cand, n):
        s = by_scene[cs[i]["s"]]; k = s.index(i)
        ctx = [cs[j]["t"] for j in s[max(0, k-2):k] + s[k+1:k+3]]
        q = cs[i]["t"].split(": ", 1)[-1]
        out.append((q, "\n".join(ctx), None))
    return out

def train(model, pairs, epochs, lr=2e-5, bs=64, scale=20.0, neg=True, maxdoc=192):
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    steps = epochs * math.ceil(len(pairs) / bs); warm = max(1, steps // 10); step = 0
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1, (s + 1) / warm) * max(0.0, (steps - s) / max(1, steps - warm)))
    model.train(); t0 = time.time()
    for ep in range(epochs):
        random.shuffle(pairs); tot = 0
        for i in range(0, len(pairs), bs):
            b = pairs[i:i+bs]
            qv = embed(model, [x[0] for x in b], 64)
            docs = [x[1] for x in b]
            if neg and b[0][2] is not None:
                docs += [random.choice(x[2][:10]) if x[2] else "" for x in b]
            dv = embed(model, docs, maxdoc)
            logits = qv @ dv.T * scale
            loss = F.cross_entropy(logits, torch.arange(len(b), device=dev))
            opt.zero_grad(); loss.backward(); opt.step(); sched.step(); tot += loss.item(); step += 1
        p(f"  epoch {ep+1} loss {tot / math.ceil(len(pairs)/bs):.3f} {time.time()-t0:.0f}s")
    return model

variants = sys.argv[2].split(",") if len(sys.argv) > 2 else ["e=3"]
base = fresh(); t = time.time(); base_res, base_vecs = evaluate(base, "base"); p("eval s", round(time.time() - t, 1))
pairs0 = make_pairs(base, base_vecs); p("pairs", len(pairs0))
SYN = syn_questions(); p("synthetic questions", len(SYN))
results = {"base": base_res}
for var in variants:
    m = fresh(); p("== variant", var)
    opts = dict(o.split("=") for o in var.split("+"))
    if "ict" in opts:
        train(m, ict_pairs(int(opts["ict"])), 1, lr=2e-5, bs=128, neg=False)
    pairs = list(pairs0)
    if "syn" in opts or "synpre" in opts:
        sq = SYN if int(opts.get("synf", 0)) <= 0 else dense_rank_filter(base, base_vecs, SYN, int(opts["synf"]))
        sp = make_pairs(base, base_vecs, qs=sq); p("  synthetic pairs", len(sp), "from", len(sq), "questions")
        if "synpre" in opts and sp:
            train(m, sp, int(opts["synpre"]), lr=2e-5)
        else:
            pairs += sp
    if opts.get("w3"): pairs = [x for x in pairs if "\n" in x[1]]
    train(m, pairs, int(opts.get("e", 3)), lr=float(opts.get("lr", 2e-5)), maxdoc=int(opts.get("ml", 192)))
    results[var], _ = evaluate(m, var)
    json.dump(results, open(f"{OUT}/results.json", "w"), indent=1)  # after each variant: a cut run keeps the rest

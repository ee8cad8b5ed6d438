"""A cross-encoder initialised from the bundled MiniLM or from the in-domain-tuned bi-encoder (retrained here with
`ragfunnel train embedder`'s recipe), reranking the hybrid top 20 of the tuned index: alone, and RRF-blended with
the fused rank (k = 10, cross-encoder weight 0.5 / 1 / 2). Self-contained (torch + transformers) to run where a GPU
is, on the folder of bench/first_stage/embedder_export.py + bench/rerank/cross_encoder_export.py:

    EPOCHS=1,3 python bench/rerank/cross_encoder_variants.py DIR        # results in $OUT/ce_results.json (docs/results/rerank/cross_encoder_variants.md)
"""
import copy, json, math, os, random, sys, time
import numpy as np, torch, torch.nn.functional as F
sys.argv = sys.argv[:2]
src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "first_stage", "embedder_variants.py")).read().split("variants = sys.argv")[0]
exec(src)  # chunks, Q, tok, fresh, embed, encode_all, evaluate, make_pairs, train, p
D = json.load(open(f"{H}/ce.json"))
if os.environ.get("SMOKE"):
    D = {k: v[:6] for k, v in D.items()}
random.seed(1); torch.manual_seed(1)

base = fresh(); _, base_vecs = evaluate(base, "base")
pairs0 = make_pairs(base, base_vecs)
tuned = fresh(); train(tuned, list(pairs0), 3, lr=2e-5, maxdoc=128); evaluate(tuned, "tuned-bi")

class CE(torch.nn.Module):
    def __init__(self, enc):
        super().__init__(); self.enc = copy.deepcopy(enc); self.head = torch.nn.Linear(384, 1)
    def forward(self, b):
        with torch.autocast(dev, dtype=torch.bfloat16):
            h = self.enc(**b).last_hidden_state
        m = b["attention_mask"].unsqueeze(-1).float()
        return self.head((h.float() * m).sum(1) / m.sum(1)).squeeze(-1)

def pairs_tok(qs, ps, ml=256):
    return tok(qs, ps, padding=True, truncation="only_second", max_length=ml, return_tensors="pt").to(dev)

def train_ce(ce, epochs, lr=3e-5, gb=16):
    groups = list(D["groups"]); opt = torch.optim.AdamW(ce.parameters(), lr=lr, weight_decay=0.01)
    steps = epochs * math.ceil(len(groups) / gb); warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1, (s + 1) / warm) * max(0.0, (steps - s) / max(1, steps - warm)))
    ce.train()
    for ep in range(epochs):
        random.shuffle(groups); tot = 0
        for i in range(0, len(groups), gb):
            b = groups[i:i+gb]; size = len(b[0][1])
            b = [g for g in b if len(g[1]) == size]
            qs = [g[0] for g in b for _ in g[1]]; ps = [x for g in b for x in g[1]]
            s = ce(pairs_tok(qs, ps)).view(len(b), size)
            loss = F.cross_entropy(s, torch.zeros(len(b), dtype=torch.long, device=dev))
            opt.zero_grad(); loss.backward(); opt.step(); sched.step(); tot += loss.item()
        p(f"  ce epoch {ep+1} loss {tot / math.ceil(len(groups)/gb):.3f}")

@torch.no_grad()
def score_set(ce, name):
    ce.eval(); out = []
    for item in D[name]:
        qs = [item["q"]] * len(item["c"]); ps = [c[1] for c in item["c"]]
        out.append(ce(pairs_tok(qs, ps)).float().cpu().numpy() if ps else np.zeros(0))
    return out

def r_at(name, scores_list, k=5):
    hit = 0
    for item, s in zip(D[name], scores_list):
        order = np.argsort(-s, kind="stable")
        hit += bool({item["c"][j][0] for j in order[:k]} & set(item["gold"]))
    return round(hit / len(D[name]), 3)

res = {}
for init_name, init in (("bundled", base), ("tuned", tuned)):
    for ep in ((1,) if os.environ.get('SMOKE') else [int(e) for e in os.environ.get('EPOCHS', '1,3').split(',')]):
        ce = CE(init).to(dev); train_ce(ce, ep)
        row = {}
        for name in ("holdout", "direct", "reworded"):
            sc = score_set(ce, name)
            fused = [-np.array([c[2] for c in it["c"]], dtype=float) for it in D[name]]
            row[name] = {"fused": r_at(name, fused), "ce": r_at(name, sc), "ce_r1": r_at(name, sc, 1)}
            for w in (0.5, 1.0, 2.0):
                blend = []
                for it, s in zip(D[name], sc):
                    ce_rank = np.empty(len(s)); ce_rank[np.argsort(-s, kind="stable")] = np.arange(1, len(s) + 1)
                    fr = np.array([c[2] for c in it["c"]], dtype=float)
                    blend.append(1 / (10 + fr) + w / (10 + ce_rank))
                row[name][f"blend{w}"] = r_at(name, blend)
        res[f"{init_name}_e{ep}"] = row
        p(init_name, ep, json.dumps(row))
json.dump(res, open(f"{OUT}/ce_results.json", "w"), indent=1)

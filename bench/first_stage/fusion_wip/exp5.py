exec(open('/tmp/fusion-work/exp.py').read())
import random, itertools
from ragfunnel.train.fusion import _subset
data = S['train'] + S['vague_train']
src = np.array(['qa']*len(S['train']) + ['vague']*len(S['vague_train']))
def run(names, ev, use_theta, l2, balance, depth=30, folds=5, seed=13):
    ratio = (src=='qa').sum()/(src=='vague').sum()
    w = {False: None, True: np.where(src=='vague', ratio, 1.0), 'half': np.where(src=='vague', 0.5*ratio, 1.0), 'third': np.where(src=='vague', ratio/3, 1.0)}[balance]
    # keep index mapping
    keep = []
    for i,d in enumerate(data):
        ids,_ = None,None
    p = prepare(data, names, KINDS, depth=depth, weights=w, evidence_kinds=ev)
    kept = [i for i,d in enumerate(data) if set(d.question.gold) & {c.doc_id for n in names for c in d.lists[n][:depth]}]
    assert len(kept)==len(p.starts)
    groups = sorted(set(p.groups)); random.Random(seed).shuffle(groups)
    fo = {g:i%folds for i,g in enumerate(groups)}
    which = np.asarray([fo[g] for g in p.groups])
    hits = np.zeros(len(p.starts))
    for f in range(folds):
        fr = np.flatnonzero(which!=f).tolist(); cr=np.flatnonzero(which==f).tolist()
        b,t,info = fit(_subset(p,fr), len(names), l2, use_theta)
        m = LearnedFusion(model_dict(names, KINDS, b, t, info['mean'], info['std'], evidence_kinds=ev))
        hits[cr] = hits_at(m, _subset(p,cr))
    s = src[kept]
    return h_(hits, s)
def h_(hits, s):
    return 'qa %.3f vague %.3f' % (hits[s=='qa'].sum()/(src=='qa').sum(), hits[s=='vague'].sum()/(src=='vague').sum())
import sys
H5=['bm25_scene','bm25_w3s1','bm25_utt','dense_w3s1','dense_utt']
configs = eval(sys.argv[1])
for names, ev, th, l2, bal in configs:
    t0=time.time()
    print(len(names), ev, th, l2, bal, run(names, ev, th, l2, bal), round(time.time()-t0), flush=True)

exec(open('/tmp/fusion-work/exp.py').read())
import random
from ragfunnel.train.fusion import _subset
def oof(data, names, use_theta, l2, folds=5, seed=13, depth=100):
    p = prepare(data, names, KINDS, depth=depth)
    groups = sorted(set(p.groups)); random.Random(seed).shuffle(groups)
    fo = {g:i%folds for i,g in enumerate(groups)}
    which = np.asarray([fo[g] for g in p.groups])
    hits = np.zeros(len(p.starts))
    for f in range(folds):
        fr = np.flatnonzero(which!=f).tolist(); cr=np.flatnonzero(which==f).tolist()
        b,t,info = fit(_subset(p,fr), len(names), l2, use_theta)
        m = LearnedFusion(model_dict(names, KINDS, b, t, info['mean'], info['std']))
        hits[cr] = hits_at(m, _subset(p,cr))
    return p, hits
data = S['train'] + S['vague_train']
src = np.array(['qa']*len(S['train']) + ['vague']*len(S['vague_train']))
H5=['bm25_scene','bm25_w3s1','bm25_utt','dense_w3s1','dense_utt']
for names in (H5, D['names']):
  for use_theta, l2 in [(False,0),(True,1),(True,3),(True,10),(True,30)]:
    t0=time.time()
    p,h = oof(data, names, use_theta, l2)
    # p drops questions with no gold in candidates: map back
    kept = [i for i,d in enumerate(data) if any(g in {c.doc_id for n in names for c in d.lists[n][:100]} for g in d.question.gold)]
    s = src[kept]
    print(len(names), use_theta, l2, 'qa %.3f vague %.3f' % (h[s=='qa'].sum()/ (src=='qa').sum(), h[s=='vague'].sum()/(src=='vague').sum()), round(time.time()-t0), flush=True)

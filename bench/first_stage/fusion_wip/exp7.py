exec(open('/tmp/fusion-work/exp5.py').read().split("import sys\nH5=")[0])
from ragfunnel.retrieve.learned import feature_names
FN = feature_names(D['names'])
def run2(names, ev, l2, keep, balance=True, depth=30, folds=5, seed=13):
    ratio = (src=='qa').sum()/(src=='vague').sum()
    w = np.where(src=='vague', ratio, 1.0) if balance else None
    p = prepare(data, names, KINDS, depth=depth, weights=w, evidence_kinds=ev)
    kept = [i for i,d in enumerate(data) if set(d.question.gold) & {c.doc_id for n in names for c in d.lists[n][:depth]}]
    mask = np.array([any(f.startswith(k) for k in keep) for f in FN])
    p.phi[:, ~mask] = 0.0
    groups = sorted(set(p.groups)); random.Random(seed).shuffle(groups)
    fo = {g:i%folds for i,g in enumerate(groups)}
    which = np.asarray([fo[g] for g in p.groups])
    hits = np.zeros(len(p.starts))
    for f in range(folds):
        fr = np.flatnonzero(which!=f).tolist(); cr=np.flatnonzero(which==f).tolist()
        b,t,info = fit(_subset(p,fr), len(names), l2, True)
        m = LearnedFusion(model_dict(names, KINDS, b, t, info['mean'], info['std'], evidence_kinds=ev))
        hits[cr] = hits_at(m, _subset(p,cr))
    return h_(hits, src[kept])
EV=('rrf10','rrf60','score')
for keep, l2 in [(['wh_','question_mark','q_words','first_person'], 1.0), (['wh_','question_mark','q_words','first_person'], 10.0),
                 (['wh_none','q_words','idf_mean','names','quoted'], 3.0), (['agree'], 3.0), ([':gap', ':top'], 10.0)]:
    t0=time.time(); print(keep, l2, run2(D['names'], EV, l2, keep), round(time.time()-t0), flush=True)

exec(open('/tmp/fusion-work/exp2.py').read().split("data = S['train']")[0])
names = D['names']
for s in ['train','vague_train']:
    for use_theta,l2 in [(False,0),(True,10)]:
        p,h = oof(S[s], names, use_theta, l2)
        print(s, use_theta, l2, 'oof r5 %.3f' % (h.sum()/len(S[s])), flush=True)
# fit on one, apply to other
for a,b in [('train','vague_train'),('vague_train','train')]:
    p = prepare(S[a], names, KINDS)
    bb,t,info = fit(p, len(names), 0, False)
    m = LearnedFusion(model_dict(names, KINDS, bb, t, info['mean'], info['std']))
    print('fit', a, 'apply', b, round(recall_model(m, S[b]),3), 'weights', np.round(np.exp(bb),2).tolist())

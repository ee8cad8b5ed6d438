exec(open('/tmp/fusion-work/exp.py').read())
for s in ['train','vague_train']:
    print(s)
    for n in D['names']:
        r5=np.mean([bool({c.doc_id for c in d.lists[n][:5]} & set(d.question.gold)) for d in S[s]])
        r20=np.mean([bool({c.doc_id for c in d.lists[n][:20]} & set(d.question.gold)) for d in S[s]])
        r100=np.mean([bool({c.doc_id for c in d.lists[n][:100]} & set(d.question.gold)) for d in S[s]])
        print(f'  {n:12s} r5 {r5:.3f} r20 {r20:.3f} r100 {r100:.3f}')
    u5=np.mean([bool({c.doc_id for n in D['names'] for c in d.lists[n][:5]} & set(d.question.gold)) for d in S[s]])
    u100=np.mean([bool({c.doc_id for n in D['names'] for c in d.lists[n][:100]} & set(d.question.gold)) for d in S[s]])
    print('  union5', round(u5,3), 'union100', round(u100,3))

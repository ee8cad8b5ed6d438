exec(open('/tmp/fusion-work/exp.py').read())
H5=['bm25_scene','bm25_w3s1','bm25_utt','dense_w3s1','dense_utt']
sets=['train','holdout','vague_train','direct','reworded']
print('hybrid', {s: round(recall_fixed(RRFFuser(10), S[s], H5),3) for s in sets})
print('hybrid+dscene', {s: round(recall_fixed(RRFFuser(10), S[s], D['names']),3) for s in sets})
print('score', {s: round(recall_fixed(ScoreFuser({'bm25_scene':0.6,'dense_w3s1':0.4}), S[s], ['bm25_scene','dense_w3s1']),3) for s in sets})

import pickle, time, sys
from ragfunnel.config import load_settings
from ragfunnel.pipeline import Pipeline
from ragfunnel.evaluate.datasets import load_friends_set, training_split
from ragfunnel.questions import load_questions
from ragfunnel.retrieve.base import collapse_to_parents
s = load_settings()
p = Pipeline(s)
split = training_split(s.friends_dir)
sets = {
 'train': split.train, 'holdout': split.holdout,
 'direct': load_friends_set('direct', s.friends_dir), 'reworded': load_friends_set('reworded', s.friends_dir),
 'heavy': load_friends_set('heavy', s.friends_dir),
 'vague_train': load_questions('/work/wt-fusion/src/ragfunnel/corpus/friends_vague_train.jsonl'),
 'vague_heldout': load_questions('/work/wt-fusion/bench/query/vague_heldout.jsonl'),
}
names = ['bm25_scene','bm25_w3s1','bm25_utt','dense_scene','dense_w3s1','dense_utt']
out = {'names': names, 'sets': {}}
t0=time.time()
for sn, qs in sets.items():
    rows=[]
    for q in qs:
        lists={}
        for n in names:
            hits = p.retriever(n).retrieve(q.text)
            lists[n] = [(c.doc_id, c.rank, c.score, len(c.best_chunks)) for c in collapse_to_parents(hits)]
        idf = p.store.term_idfs('scene', q.text)
        rows.append({'qid': q.qid, 'text': q.text, 'gold': q.gold, 'lists': lists, 'idf': idf})
    out['sets'][sn]=rows
    print(sn, len(rows), round(time.time()-t0), flush=True)
pickle.dump(out, open('/tmp/fusion-work/lists.pkl','wb'))

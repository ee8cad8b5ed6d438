import pickle, sys, time, json
import numpy as np
sys.path.insert(0,'/work/wt-fusion/src')
from ragfunnel.types import Candidate
from ragfunnel.questions import Question
from ragfunnel.train.fusion import QuestionLists, prepare, fit, model_dict, hits_at, cross_validate
from ragfunnel.retrieve.learned import LearnedFusion
from ragfunnel.retrieve.fusion import RRFFuser, ScoreFuser
D = pickle.load(open('/tmp/fusion-work/lists.pkl','rb'))
KINDS = {n: 'sparse' if n.startswith('bm25') else 'dense' for n in D['names']}
def ql(rows):
    out=[]
    for r in rows:
        lists={n:[Candidate(d,s,k,{},('c',)*nc) for d,k,s,nc in r['lists'][n][:DEPTH]] for n in D['names']}
        out.append(QuestionLists(Question(r['qid'], r['text'], tuple(r['gold'])), lists, r['idf']))
    return out
DEPTH=60
S = {k: ql(v) for k,v in D['sets'].items()}
def recall_fixed(fuser, data, names, k=5):
    h=0
    for d in data:
        f = fuser.fuse({n:d.lists[n] for n in names}, KINDS, None, limit=k)
        h += bool({c.doc_id for c in f[:k]} & set(d.question.gold))
    return h/len(data)
def recall_model(m, data, k=5):
    h=0
    for d in data:
        lists={n:d.lists[n] for n in m.retrievers}
        phi=m.phi(d.question.text, d.idfs, lists, KINDS)
        f=m.fuse(lists, KINDS, phi, limit=k)
        h += bool({c.doc_id for c in f[:k]} & set(d.question.gold))
    return h/len(data)

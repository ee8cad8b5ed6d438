import gzip, json, sys
plan=json.load(open('/tmp/fusion-work/vague_plan.json'))
scenes={}
want={p['scene'] for p in plan}
for l in gzip.open('/work/shared/data/friends/friends_corpus.jsonl.gz','rt'):
    s=json.loads(l)
    if s['scene_id'] in want: scenes[s['scene_id']]=s
a,b=int(sys.argv[1]),int(sys.argv[2])
for i,p in enumerate(plan[a:b],a):
    s=scenes[p['scene']]
    print(f"=== #{i} {p['scene']} [{s['episode_title']}] style={p['style']}")
    n=0
    for u in s['utterances']:
        t=u['transcript'].replace('\n',' ')
        sp='/'.join(x.split()[0] for x in u['speakers']) if u['speakers'] else '*'
        if len(t)>110: t=t[:110]+'…'
        print(f"{sp}: {t}")
        n+=1
        if n>=24: print('…'); break

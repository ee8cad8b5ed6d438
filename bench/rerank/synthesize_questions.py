"""Synthetic FriendsQA-style questions written by the bundled local LLM (Qwen2.5-Coder-1.5B, greedy), for training
experiments: an 8-line excerpt of each scene (random scenes, random excerpt, seed 7) and a one-shot prompt asking
for two questions with answers copied from the excerpt. Resumable (scenes already in OUT are skipped).

    python bench/rerank/synthesize_questions.py OUT.jsonl [MAX_SCENES]
    python bench/rerank/synthesize_questions.py --export OUT.jsonl QUESTIONS.json   # [{"id", "q", "gold"}] for the GPU benches

One line a scene: {"scene", "units" (the excerpt's line ids), "qa": [[question, answer], ...], "raw"}. About 3 s a
scene on 2 cores once the fixed prompt prefix is cached (llama.cpp reuses it), so ~1,200 scenes an hour. No
labelled question is used: the questions come from the corpus alone, like inverse-cloze pairs.
"""

import json
import random
import re
import sys
import time
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.corpus.friends import load_friends
from ragfunnel.questions import Question
from ragfunnel.generate.llm import bundled_gguf_path

SYSTEM = "You write reading-comprehension questions about excerpts of the TV show Friends."
# one fixed prefix before the excerpt, so that llama.cpp reuses its cached state and reads only the excerpt
SHOTS = """Write 2 short questions that the excerpt answers. Each question names the characters involved, asks about something said or done in the excerpt (who, what, where, why or how), and must not quote a line word for word. Give the answer after each question, copied from the excerpt.

Excerpt:
Monica: There's nothing to tell! He's just some guy I work with!
Joey: C'mon, you're going out with the guy! There's gotta be something wrong with him!
Chandler: All right Joey, be nice. So does he have a hump? A hump and a hairpiece?
Phoebe: Wait, does he eat chalk?
Q1: Who does Monica say the man she is going out with is?
A1: some guy I work with
Q2: What does Phoebe ask about Monica's date?
A2: does he eat chalk

Excerpt:
"""


def excerpt_text(units) -> str:
    return "\n".join(f"({u.text})" if u.is_direction else f"{u.speakers[0].split()[0] if u.speakers else 'Someone'}: {u.text}"
                     for u in units)


def read_questions(path: Path) -> list[Question]:
    """The usable questions of a generated file (at least 4 words, ending in "?"), ids `syn-<n>` in file order."""
    out = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        for q, _answer in r["qa"]:
            if len(q.split()) >= 4 and q.endswith("?"):
                out.append(Question(f"syn-{len(out)}", q, (r["scene"],)))
    return out


def main() -> None:
    if sys.argv[1] == "--export":
        rows = [{"id": q.qid, "q": q.text, "gold": list(q.gold)} for q in read_questions(Path(sys.argv[2]))]
        Path(sys.argv[3]).write_text(json.dumps(rows))
        return
    from llama_cpp import Llama

    out_path = Path(sys.argv[1])
    limit = int(sys.argv[2]) if len(sys.argv) > 2 else 10**9
    settings = load_settings()
    docs = load_friends(settings.friends_dir / "friends_corpus.jsonl.gz")
    rng = random.Random(7)
    order = list(range(len(docs)))
    rng.shuffle(order)
    done = {json.loads(line)["scene"] for line in out_path.read_text().splitlines()} if out_path.exists() else set()
    llm = Llama(model_path=str(bundled_gguf_path(settings.home)), n_ctx=2048, n_threads=2, seed=0, verbose=False)
    t0, n = time.time(), 0
    with out_path.open("a") as out:
        for i in order:
            doc = docs[i]
            if len(doc.units) < 4:
                continue
            start = rng.randrange(0, max(1, len(doc.units) - 8))  # drawn for done scenes too: a resumed run = a fresh one
            if doc.doc_id in done:
                continue
            window = doc.units[start : start + 8]
            reply = llm.create_chat_completion(
                messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": SHOTS + excerpt_text(window) + "\n"}],
                max_tokens=90, temperature=0.0,
            )["choices"][0]["message"]["content"]
            qa = re.findall(r"Q\d:\s*(.+?)\s*\nA\d:\s*(.+)", reply)
            out.write(json.dumps({"scene": doc.doc_id, "units": [u.unit_id for u in window], "qa": qa, "raw": reply}) + "\n")
            out.flush()
            n += 1
            print(f"{n} scenes, {(time.time() - t0) / n:.1f} s a scene", file=sys.stderr, flush=True)
            if n >= limit:
                break


if __name__ == "__main__":
    main()

"""Follow-up questions: build a labelled set from dev scenes, and measure retrieval of raw follow-ups, their rule
rewrites and the gold standalone questions (issue 19.5).

The set (`build`): for each dev scene (FriendsQA dev originals, never the 800 sample questions or their
paraphrases: `training_split`'s kept questions), one pair of its questions Q1, Q2 where Q2 names exactly one person
N of known gender and Q1 names N too: the conversation is Q1 and its gold answer, the follow-up is Q2 with N
replaced by a pronoun (he / she as the subject, him / her as the object, his / her for "N's"), the gold
standalone question is Q2 and its gold scene is the scene. Written as JSONL (`id`, `history`, `follow_up`,
`standalone`, `gold_scene_ids`, `source_ids`).

The measurement (`measure`): recall@5 (the gold scene among the top 5) with `--mode` for the raw follow-up, the
rule rewrite (api/conversation.rule_rewrite), the LLM rewrite when `--llm` is given, and the gold standalone
question; plus the share of rewrites equal to the gold question (case and spacing aside).

    python bench/answers/follow_ups.py build bench/answers/follow_ups.jsonl
    python bench/answers/follow_ups.py measure bench/answers/follow_ups.jsonl [--mode hybrid] [--llm local]
        [--out docs/results/answers/follow_ups.md]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from ragfunnel.api.conversation import gender, llm_rewrite, names_in, rule_rewrite
from ragfunnel.config import load_settings
from ragfunnel.corpus.friends_questions import training_split
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.pipeline import Pipeline

SUBJECT_BEFORE = {"what", "who", "where", "when", "why", "how", "which", "did", "does", "do", "was", "is", "were",
                  "are", "has", "had", "will", "would", "can", "could", "should", "and"}
PRONOUN = {"f": ("she", "her", "her"), "m": ("he", "him", "his")}


def pronominalise(question: str, name: str) -> str | None:
    """`question` with the first mention of `name` (its first word, or the full name) replaced by a pronoun."""
    kind = gender(name)
    if kind is None:
        return None
    subject, obj, poss = PRONOUN[kind]
    m = re.search(rf"\b{re.escape(name)}(\s*'s\b|\s*'\s)?", question)
    if m is None:
        return None
    before = question[: m.start()].split()
    if m.group(1):
        word = poss
    elif not before or before[-1].lower() in SUBJECT_BEFORE:
        word = subject
    else:
        word = obj
    out = question[: m.start()] + word + (" " if m.group(1) and m.group(1).endswith(" ") else "") + question[m.end():]
    return " ".join(out.split())


def build(out: Path, friends_dir: Path) -> None:
    split = training_split(friends_dir)
    kept = [q for q in split.train + split.holdout if not q.meta.get("is_paraphrased") and q.meta.get("split") == "dev"]
    by_scene: dict[str, list] = {}
    for q in kept:
        by_scene.setdefault(q.gold[0], []).append(q)
    rows = []
    for scene in sorted(by_scene):
        qs = sorted(by_scene[scene], key=lambda q: q.qid)
        found = None
        for q2 in qs:
            names = [n for n in names_in(q2.text.replace(" 's", "'s")) if gender(n) is not None]
            if len(names) != 1:
                continue
            first = names[0].split()[0]
            for q1 in qs:
                if q1.qid == q2.qid or first.lower() not in q1.text.lower():
                    continue
                same = [n for n in names_in(q1.text) if gender(n) == gender(first) and n.split()[0] != first]
                follow = pronominalise(q2.text.replace(" 's", "'s"), names[0])
                if same or follow is None or not q1.answers:
                    continue
                found = (q1, q2, follow)
                break
            if found:
                break
        if found:
            q1, q2, follow = found
            rows.append({"id": f"fu_{scene}", "history": [{"role": "user", "content": q1.text},
                                                            {"role": "assistant", "content": q1.answers[0]}],
                         "follow_up": follow, "standalone": q2.text, "gold_scene_ids": list(q2.gold),
                         "source_ids": [q1.qid, q2.qid]})
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(rows)} follow-up pairs -> {out}")


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower().replace("'s", " s")))


def measure(path: Path, mode: str, llm_name: str | None, out: Path | None) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    settings = load_settings()
    pipeline = Pipeline(settings)
    llm = None
    if llm_name:
        from ragfunnel.generate.llm import make_llm

        llm = make_llm(llm_name, settings.home)
    arms = ["raw follow-up", "rule rewrite"] + (["LLM rewrite"] if llm else []) + ["gold standalone"]
    hits = {a: 0 for a in arms}
    exact = {a: 0 for a in arms}
    rewrite_ms: dict[str, list[float]] = {a: [] for a in arms}
    for r in rows:
        texts = {"raw follow-up": r["follow_up"], "gold standalone": r["standalone"]}
        t = time.perf_counter()
        texts["rule rewrite"] = rule_rewrite(r["follow_up"], r["history"])
        rewrite_ms["rule rewrite"].append((time.perf_counter() - t) * 1000)
        if llm:
            t = time.perf_counter()
            texts["LLM rewrite"] = llm_rewrite(llm, r["follow_up"], r["history"]).standalone
            rewrite_ms["LLM rewrite"].append((time.perf_counter() - t) * 1000)
        for a in arms:
            top = [c.doc_id for c in pipeline.search(texts[a], mode, k=5).candidates[:5]]
            hits[a] += any(d in r["gold_scene_ids"] for d in top)
            exact[a] += _norm(texts[a]) == _norm(r["standalone"])
        r["rewrites"] = {a: texts[a] for a in arms}
    documents = pipeline.store.info().documents
    pipeline.close()
    n = len(rows)
    table = [[a, round(hits[a] / n, 4), round(exact[a] / n, 4),
              round(sorted(rewrite_ms[a])[len(rewrite_ms[a]) // 2], 2) if rewrite_ms[a] else "-"] for a in arms]
    text = header(f"Follow-up questions: raw, rewritten, standalone ({mode})")
    text += f"Index: {settings.index_dir} ({documents} documents).\n\n"
    text += (f"{n} follow-up pairs built from dev scenes by `python bench/answers/follow_ups.py build` "
             "(bench/answers/follow_ups.jsonl: a dev question and its gold answer as the conversation, then another "
             "question of the same scene with its one named person replaced by a pronoun; the gold standalone "
             "question is the original). R@5: the gold scene among the top 5. Same text: the rewrite equals the "
             "original question (case, spacing, punctuation aside).\n\n")
    text += markdown_table(["question searched", "R@5", "same text as gold", "rewrite p50 ms"], table)
    misses = [r for r in rows if _norm(r["rewrites"]["rule rewrite"]) != _norm(r["standalone"])][:8]
    if misses:
        text += "\nRule rewrites that differ from the gold question (first 8):\n\n"
        text += markdown_table(["follow-up", "rule rewrite", "gold"],
                               [[r["follow_up"], r["rewrites"]["rule rewrite"], r["standalone"]] for r in misses])
    write_report(out, text)
    if out:
        out.with_suffix(".json").write_text(json.dumps({"summary": {a: {"R@5": hits[a] / n, "same_text": exact[a] / n}
                                                                    for a in arms} | {"n": n}, "rows": rows}, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["build", "measure"])
    ap.add_argument("path", type=Path)
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--llm", default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    if args.action == "build":
        build(args.path, Path(load_settings().friends_dir))
    else:
        measure(args.path, args.mode, args.llm, args.out)


if __name__ == "__main__":
    main()

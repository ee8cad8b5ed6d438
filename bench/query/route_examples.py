"""Write src/ragfunnel/corpus/friends_route_examples.tsv, the router classifier's training examples (label<TAB>question):

- aggregate: bench/query/route_aggregate_examples.txt (written for this), every fourth list question of the list path's
  relation examples about scenes or episodes (src/ragfunnel/query/list_relation_examples.tsv, written by
  bench/query/list_relation_examples.py: list questions in many phrasings, none from an evaluation set), and every
  second conversational or terse question (phrasings 2 and 3; all of a set in one phrasing) of the list sets whose
  failures have been read
  (`READ_LIST_SETS`: aggregate_fresh.jsonl to aggregate_fresh38.jsonl, written by people phrasing lists their own
  way); never a set still unseen, nor aggregate_dev.jsonl (router_eval.py's held-out lists);
- lookup: bench/query/route_lookup_examples.txt (written for this: lookups that look like aggregation) and the
  FriendsQA dev questions of the "train half" of dev scenes (md5 of the scene id even), never a question of the
  friends-rag sample (Direct / Reworded / Heavy) or of its families;
- out_of_scope: src/ragfunnel/generate/off_topic_training.txt (what the answerability gate trains on).

The other half of dev, bench/query/route_heldout.tsv and generate/out_of_scope.txt are held out: bench/query/router_eval.py.

    python bench/query/route_examples.py [--data /work/shared/data]
"""

from __future__ import annotations

import argparse
import hashlib
import re
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OUT = ROOT / "src" / "ragfunnel" / "corpus" / "friends_route_examples.tsv"


def lines(path: Path) -> list[str]:
    return [s.strip() for s in path.read_text().splitlines() if s.strip() and not s.startswith("#")]


def dev_questions(data: Path) -> list[dict]:
    """FriendsQA dev questions outside the friends-rag sample and its families."""
    d = data / "friends"
    sample: set[str] = set()
    for name in ("eval_questions_direct.json", "eval_questions_reworded.json", "eval_questions_heavily_reworded.json"):
        sample.update(json.loads((d / name).read_text()))
    families = {i.replace("_Paraphrased", "").replace("_LexicalParaphrase", "") for i in sample}
    out = []
    for line in (d / "friends_questions.jsonl").open():
        q = json.loads(line)
        if q["split"] == "dev" and q["question_id"] not in sample and (q["paraphrase_of"] or q["question_id"]) not in families:
            out.append(q)
    return out


# the list sets of bench/query whose failures were read (aggregate_phrasings_eval.py): development material
READ_LIST_SETS = ["aggregate_fresh.jsonl", *(f"aggregate_fresh{n}.jsonl" for n in range(2, 39))]


def read_list_questions() -> list[str]:
    """Every second question of phrasings 2 and 3 (conversational, terse) of the read list sets; of a set written
    in one phrasing (fresh to fresh5), every second question."""
    out = []
    for name in READ_LIST_SETS:
        rows = [json.loads(line) for line in (HERE / name).read_text().splitlines() if line.strip()]
        several = len({r.get("phrasing") for r in rows}) > 1
        out += [" ".join(r["question"].split()) for r in rows if not several or r.get("phrasing") in (2, 3)]
    return out[::2]


def train_half(scene_id: str) -> bool:
    return int(hashlib.md5(scene_id.encode()).hexdigest(), 16) % 2 == 0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    args = ap.parse_args()
    rows = [("aggregate", q) for q in lines(HERE / "route_aggregate_examples.txt")]
    relation_examples = [line.partition("\t")[2] for line in lines(ROOT / "src" / "ragfunnel" / "query" / "list_relation_examples.tsv")]
    rows += [("aggregate", q) for q in relation_examples[::4] if re.search(r"\b(?:scenes?|episodes?)\b", q)]
    rows += [("aggregate", q) for q in read_list_questions()]
    rows += [("lookup", q) for q in lines(HERE / "route_lookup_examples.txt")]
    rows += [("lookup", " ".join(q["question"].split())) for q in dev_questions(args.data) if train_half(q["gold_scene_ids"][0])]
    rows += [("out_of_scope", q) for q in lines(ROOT / "src" / "ragfunnel" / "generate" / "off_topic_training.txt")]
    seen: set[str] = set()
    body = []
    for label, q in rows:
        if q.lower() not in seen:
            seen.add(q.lower())
            body.append(f"{label}\t{q}")
    head = ("# The router classifier's training examples, label<TAB>question; written by bench/query/route_examples.py "
            "(do not edit by hand).\n")
    OUT.write_text(head + "\n".join(body) + "\n")
    counts = {lab: sum(1 for r in body if r.startswith(lab + "\t")) for lab in ("lookup", "aggregate", "out_of_scope")}
    print(f"{OUT.relative_to(ROOT)}: {counts}")


if __name__ == "__main__":
    main()

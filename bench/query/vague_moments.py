"""The scenes, split and writing styles of the vague-moment sets (bench/query/vague_train.jsonl, vague_heldout.jsonl).

Issue 37 extends the 44 vague descriptions of bench/query/vague_dev.jsonl to a few hundred. This script fixes, before
anything is written or tuned, which scenes get a moment (280 scenes drawn with seed 37 from the 2,350 scenes with at
least 10 spoken lines that are not in vague_dev.jsonl), which part each belongs to (140 held-out, 140 train, seed 371:
one moment per scene, so the split is by scene) and the style its moment is written in (drawn with the same seed):

- desc: a third-person description of what happens;
- question: "Which scene has ...?" / "When does ...?";
- fragment: a few lower-case words, as typed into a search box;
- first_person: "I remember ..." / "I think it's the one where ...";
- search: "scene where ..." in lower case.

The moments were then written by hand, one per scene, by reading the scene (its first ~24 lines) and describing one
moment half-remembered, in a viewer's words rather than the script's. The 44 moments of vague_dev.jsonl go to the train
part (they have been looked at while tuning earlier modes). Nothing in the held-out part is tuned on.

    python bench/query/vague_moments.py [--check]      # prints the plan; --check compares it with the two files
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

from ragfunnel.config import default_data_dir

HERE = Path(__file__).resolve().parent
STYLES = ["desc", "question", "fragment", "first_person", "search"]


def plan(friends_dir: Path) -> list[dict]:
    with gzip.open(friends_dir / "friends_corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        scenes = [json.loads(line) for line in fh]
    old = {json.loads(line)["gold_scene_ids"][0] for line in (HERE / "vague_dev.jsonl").open()}
    eligible = [s for s in scenes if s["scene_id"] not in old
                and sum(1 for u in s["utterances"] if not u["stage_direction"]) >= 10]
    picked = sorted(random.Random(37).sample(eligible, 280), key=lambda s: s["scene_id"])
    rng = random.Random(371)
    parts = ["heldout"] * 140 + ["train"] * 140
    rng.shuffle(parts)
    return [{"n": i, "scene": s["scene_id"], "part": p, "style": STYLES[rng.randrange(5)]}
            for i, (s, p) in enumerate(zip(picked, parts))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=None, help="the shared data folder (default: RAGFUNNEL_DATA or ../shared/data)")
    ap.add_argument("--check", action="store_true", help="check the two JSONL files against the plan")
    args = ap.parse_args()
    rows = plan((args.data or default_data_dir()) / "friends")
    if not args.check:
        for r in rows:
            print(json.dumps(r))
        return
    written = {}
    for part in ("train", "heldout"):
        for line in (HERE / f"vague_{part}.jsonl").open():
            r = json.loads(line)
            if r["id"].startswith("vm"):
                written[r["id"]] = (r["gold_scene_ids"][0], part, r["style"])
    wrong = [r for r in rows if written.get(f"vm{r['n']:03d}") != (r["scene"], r["part"], r["style"])]
    print(f"{len(rows)} planned, {len(written)} written, {len(wrong)} differ from the plan")
    raise SystemExit(1 if wrong or len(written) != len(rows) else 0)


if __name__ == "__main__":
    main()

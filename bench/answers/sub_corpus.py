"""A smaller Friends data folder for selector experiments on a busy machine: every FriendsQA dev scene plus
`--others` other scenes drawn at random (seed 5); the question files are linked, not copied.

An index of it (`RAGFUNNEL_DATA=OUT_PARENT ragfunnel index`) builds in minutes when the embedding cache of a full
build is copied in first; retrieval over it is easier than over all 3,107 scenes (fewer distractors), so what it
measures is the line selector's ranking given a realistic pool, not end-to-end numbers.

    python bench/answers/sub_corpus.py /work/tmp/evidence-data/friends [--others 250]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

from ragfunnel.config import load_settings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="the new friends/ folder")
    ap.add_argument("--others", type=int, default=250)
    args = ap.parse_args()
    source = Path(load_settings().friends_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    for f in source.iterdir():
        if f.name != "friends_corpus.jsonl.gz" and not (args.out / f.name).exists():
            (args.out / f.name).symlink_to(f)
    questions = [json.loads(line) for line in (source / "friends_questions.jsonl").open()]
    dev = {q["gold_scene_ids"][0] for q in questions if q["split"] == "dev"}
    scenes = [json.loads(line) for line in gzip.open(source / "friends_corpus.jsonl.gz", "rt")]
    others = [s["scene_id"] for s in scenes if s["scene_id"] not in dev]
    random.Random(5).shuffle(others)
    keep = dev | set(others[: args.others])
    with gzip.open(args.out / "friends_corpus.jsonl.gz", "wt") as fh:
        for s in scenes:
            if s["scene_id"] in keep:
                fh.write(json.dumps(s) + "\n")
    print(f"{len(keep)} scenes ({len(dev)} dev) -> {args.out}")


if __name__ == "__main__":
    main()

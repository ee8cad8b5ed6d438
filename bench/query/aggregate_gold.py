"""Gold answers of bench/query/aggregate_dev.jsonl from explicit rules over the corpus file (not the index):
a line (utterance) counts when its transcript matches the rule's `pattern` (a case-insensitive regular expression;
"" matches every line), one of its speakers is in `speakers` (full corpus names; any speaker when absent) and its
scene is in `season` / `episode` when given. Gold scenes and episodes are those of the counted lines; the gold count
is the number of lines, scenes or episodes the rule's `count` names.

    python bench/query/aggregate_gold.py [--data /work/shared/data] [--questions bench/query/aggregate_dev.jsonl]
    # writes <questions stem>_gold.jsonl beside it (aggregate_dev_gold.jsonl, aggregate_heldout_gold.jsonl)
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent


def gold(rule: dict, scenes: list[dict]) -> dict:
    pattern = re.compile(rule.get("pattern", ""), re.I)
    speakers = set(rule.get("speakers") or [])
    lines, hit_scenes, hit_episodes = [], set(), set()
    for s in scenes:
        if rule.get("season") and s["season"] != rule["season"]:
            continue
        if rule.get("episode") and s["episode"] != rule["episode"]:
            continue
        for u in s["utterances"]:
            if speakers and not speakers & set(u["speakers"]):
                continue
            if pattern.search(u["transcript"]):
                lines.append(u["utterance_id"])
                hit_scenes.add(s["scene_id"])
                hit_episodes.add(s["scene_id"][:7])
    count = {"lines": len(lines), "scenes": len(hit_scenes), "episodes": len(hit_episodes)}.get(rule.get("count") or "")
    return {"lines": lines, "scenes": sorted(hit_scenes), "episodes": sorted(hit_episodes), "count": count}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    ap.add_argument("--questions", type=Path, default=HERE / "aggregate_dev.jsonl")
    args = ap.parse_args()
    with gzip.open(args.data / "friends" / "friends_corpus.jsonl.gz", "rt") as f:
        scenes = [json.loads(line) for line in f]
    out = []
    for line in args.questions.read_text().splitlines():
        q = json.loads(line)
        out.append(json.dumps({"id": q["id"], **gold(q["rule"], scenes)}))
    target = args.questions.with_name(args.questions.stem + "_gold.jsonl")
    target.write_text("\n".join(out) + "\n")
    print(f"{len(out)} questions -> {target}")


if __name__ == "__main__":
    main()

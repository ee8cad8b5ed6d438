"""Gold answers of the aggregation question sets (bench/query/aggregate_*.jsonl) from explicit rules over the corpus
file (not the index). A line (utterance) counts when
- its transcript matches the rule's `pattern` (a case-insensitive regular expression; "" matches every line);
  with `"where": "setting"` the pattern is matched against the place of the scene heading instead: the stage
  direction "[Scene: PLACE, what happens]" that opens a scene, up to the first comma, closing bracket or full stop
  (not the one of "Mr." / "Dr."); other lines never count;
- one of its speakers is in `speakers` (full corpus names; any speaker when absent);
- its scene is in `season` / `episode` when given;
- with `all` (a list of patterns instead of `pattern`): its scene has, for every pattern, a line that matches it
  (two things mentioned in one scene), and the line matches one of them.
Gold scenes and episodes are those of the counted lines; the gold count is the number of lines, scenes or episodes
the rule's `count` names.

    python bench/query/aggregate_gold.py [--data /work/shared/data] [--questions bench/query/aggregate_dev.jsonl]
    # writes <questions stem>_gold.jsonl beside it (aggregate_dev_gold.jsonl, aggregate_heldout_gold.jsonl,
    # aggregate_phrasings_gold.jsonl)
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEADING = re.compile(r"^\W*scene\s*:\s*", re.I)
PLACE_END = re.compile(r",|\]|(?<!\bMr)(?<!\bMrs)(?<!\bMs)(?<!\bDr)(?<!\bSt)\.(?:\s|$)")


def setting(utterance: dict) -> str | None:
    """The place a scene heading names ("[Scene: Central Perk, Ross enters.]" -> "Central Perk"), else None."""
    text = utterance["transcript"]
    if not utterance["stage_direction"] or not HEADING.search(text):
        return None
    return PLACE_END.split(HEADING.sub("", text.lstrip(" [(")), 1)[0]


def gold(rule: dict, scenes: list[dict]) -> dict:
    patterns = [re.compile(p, re.I) for p in rule.get("all") or [rule.get("pattern", "")]]
    speakers = set(rule.get("speakers") or [])
    lines, hit_scenes, hit_episodes = [], set(), set()
    for s in scenes:
        if rule.get("season") and s["season"] != rule["season"]:
            continue
        if rule.get("episode") and s["episode"] != rule["episode"]:
            continue
        if rule.get("all") and not all(any(p.search(u["transcript"]) for u in s["utterances"]) for p in patterns):
            continue
        for u in s["utterances"]:
            if speakers and not speakers & set(u["speakers"]):
                continue
            text = setting(u) if rule.get("where") == "setting" else u["transcript"]
            if text is not None and any(p.search(text) for p in patterns):
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

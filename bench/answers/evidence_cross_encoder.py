"""Fine-tune the line cross-encoder of the evidence selector from the bundled MiniLM, without an index.

Pairs: (question, line + the lines before and after it, `generate/evidence.line_passage`) from FriendsQA dev answer
utterances of the training part of `training_split` (seed 13; never the hold-out, the 800 sample questions or their
paraphrases), minus a calibration slice of its scenes (`--calibration`, the same slice
bench/answers/evidence_designs.py keeps from the cross-encoder to tune the blend). One group per question and
gold line (at most 2): the gold line positive; negatives: about half other lines of the same scene (not the gold
line's neighbours), the rest lines of other scenes of the same episode. Softmax cross-entropy per group
(train/cross_encoder.train_cross_encoder), exported to ONNX.

    python bench/answers/evidence_cross_encoder.py OUT_DIR [--epochs 1] [--max-seconds 1200] [--negatives 7]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from ragfunnel.config import load_settings
from ragfunnel.corpus.friends import load_friends
from ragfunnel.corpus.friends_questions import training_split
from ragfunnel.train.cross_encoder import train_cross_encoder
from ragfunnel.train.evidence import line_groups


def calibration_scenes(train, share: float) -> set[str]:
    scenes = sorted({q.gold[0] for q in train})
    random.Random(7).shuffle(scenes)
    return set(scenes[: round(len(scenes) * share)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=1200)
    ap.add_argument("--negatives", type=int, default=7)
    ap.add_argument("--calibration", type=float, default=0.2)
    ap.add_argument("--lr", type=float, default=3e-5)
    args = ap.parse_args()
    settings = load_settings()
    friends = Path(settings.friends_dir)
    split = training_split(friends, 13)
    calib = calibration_scenes(split.train, args.calibration)
    questions = [q for q in split.train if q.gold[0] not in calib]
    docs = {d.doc_id: d for d in load_friends(friends / "friends_corpus.jsonl.gz")}
    groups = line_groups(docs.get, questions, args.negatives)
    print(f"{len(groups)} groups from {len(questions)} questions ({len(calib)} calibration scenes left out)", flush=True)
    t0 = time.time()

    def progress(n: int, total: int) -> None:
        if n % 100 == 0:
            print(f"  step {n}/{total} {time.time() - t0:.0f}s", flush=True)

    meta = train_cross_encoder(groups, args.out, epochs=args.epochs, lr=args.lr, max_length=128, progress=progress,
                               max_seconds=args.max_seconds)
    meta.update(trained_on="FriendsQA dev answer utterances, training part of training_split minus the calibration "
                "scenes", questions=len(questions), passage="line_passage")
    (args.out / "meta.json").write_text(json.dumps(meta, indent=2))
    print(json.dumps(meta), flush=True)


if __name__ == "__main__":
    main()

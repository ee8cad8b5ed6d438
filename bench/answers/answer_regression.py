"""The three regression questions of the published system on the full index, per mode, with the real local LLM.

`tests/generate/test_local_llm.py` asks them on a small season-8 index (where all three must pass); this asks
them on the index at $RAGFUNNEL_HOME/index and prints one JSON line per (mode, question): whether it passes the
test's rule (not refused, names Rachel, a valid citation), the answer, the citations and the top 5 scenes.
About a minute per question on 2 cores.

    python bench/answers/answer_regression.py [fast,accurate] > runs.jsonl
"""

from __future__ import annotations

import json
import sys

from ragfunnel.config import load_settings
from ragfunnel.generate.answer import Answerer
from ragfunnel.generate.llm import make_llm
from ragfunnel.pipeline import Pipeline

QUESTIONS = [
    "Who was Joey in love with?",
    "Who did Joey have feelings for in season 8?",
    "What did Joey confess to Rachel at the restaurant?",
]


def main() -> None:
    modes = sys.argv[1].split(",") if len(sys.argv) > 1 else ["fast", "accurate"]
    settings = load_settings()
    pipeline = Pipeline(settings)
    answerer = Answerer(pipeline, make_llm("local", settings.home))
    for mode in modes:
        for question in QUESTIONS:
            r = answerer.ask(question, mode=mode, k=5)
            passed = not r.refused and "rachel" in r.answer.lower() and bool(r.citations)
            print(json.dumps({"mode": mode, "question": question, "pass": passed, "answer": r.answer,
                              "citations": [f"{c.label}: {c.quote}" for c in r.citations],
                              "scenes": [s.doc_id for s in r.scenes[:5]], "notes": r.notes}), flush=True)
    pipeline.close()


if __name__ == "__main__":
    main()

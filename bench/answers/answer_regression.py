"""The three regression questions of the published system on the full index, per mode, with the real local LLM.

`tests/generate/test_local_llm.py` asks them on a small season-8 index (where all three must pass); this asks
them on the index at $RAGFUNNEL_HOME/index and prints one JSON line per (mode, question): whether it passes the
rule the committed results were scored by (not refused, names Rachel, a valid citation), the answer, the citations
and the top 5 scenes. The test is stricter since issue 36: its third question already names Rachel, so there the
answer must say what Joey confessed (love, his feelings); read `answer` for that.
About a minute per question on 2 cores.

    python bench/answers/answer_regression.py [fast,accurate] [--llm-input scenes|evidence] [--reader llm|evidence] > runs.jsonl

`--llm-input evidence`: the LLM reads only the selected evidence lines (issue 19.3); `--reader evidence`: no LLM,
the selected lines are the answer (then "names Rachel" is checked over the returned lines).
"""

from __future__ import annotations

import argparse
import json

from ragfunnel.config import load_settings
from ragfunnel.generate.answer import Answerer, AnswerSettings
from ragfunnel.generate.llm import make_llm
from ragfunnel.pipeline import Pipeline

QUESTIONS = [
    "Who was Joey in love with?",
    "Who did Joey have feelings for in season 8?",
    "What did Joey confess to Rachel at the restaurant?",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modes", nargs="?", default="fast,accurate")
    ap.add_argument("--llm-input", default="scenes", choices=["scenes", "evidence"])
    ap.add_argument("--reader", default="llm", choices=["llm", "evidence"])
    args = ap.parse_args()
    settings = load_settings()
    pipeline = Pipeline(settings)
    if args.reader == "evidence":
        answerer = Answerer(pipeline, None, settings=AnswerSettings(reader="evidence"))
    else:
        answerer = Answerer(pipeline, make_llm("local", settings.home),
                            settings=AnswerSettings(llm_input=args.llm_input))
    for mode in args.modes.split(","):
        for question in QUESTIONS:
            r = answerer.ask(question, mode=mode, k=5)
            passed = not r.refused and "rachel" in r.answer.lower() and bool(r.citations)
            print(json.dumps({"mode": mode, "reader": args.reader, "llm_input": args.llm_input,
                              "question": question, "pass": passed, "answer": r.answer,
                              "citations": [f"{c.label}: {c.quote}" for c in r.citations],
                              "scenes": [s.doc_id for s in r.scenes[:5]], "notes": r.notes}), flush=True)
    pipeline.close()


if __name__ == "__main__":
    main()

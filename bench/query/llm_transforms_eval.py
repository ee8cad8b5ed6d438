"""LLM query transforms (query/transforms.py: rewrite, multi-query, HyDE, decomposition) on the first stage: recall@k
and time per question on the vague-description dev set, FriendsQA dev and the friends-rag Direct / Reworded / Heavy
sets (those three are reported, never tuned on).

    python bench/query/llm_transforms_eval.py [--sets vague,dev,heavy] [--modes ...] [--sample dev=100] [--llm local] [--out FILE]

Each candidate mode is a base mode plus transforms; the LLM's replies are cached by (model, prompt), so a mode
that shares a transform with one run before it reuses its replies and lists. s/q is the mean per question of the
mode's retrieval and fusion plus the LLM time its transforms took when they were generated (not the cache's).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from ragfunnel.config import FusionSpec, ModeSpec, TransformSpec, load_settings
from ragfunnel.corpus.friends_questions import load_friends_set
from ragfunnel.evaluate.metrics import summarize
from ragfunnel.evaluate.report import header, markdown_table, write_report
from ragfunnel.generate.llm import make_llm
from ragfunnel.pipeline import Pipeline
from ragfunnel.questions import load_questions

HERE = Path(__file__).resolve().parent
COLUMNS = ["recall@1", "recall@5", "recall@10", "recall@20", "mrr@10"]


def candidate_modes(settings) -> dict[str, tuple[ModeSpec, str]]:
    """name -> (mode, what it is)."""
    def plus(base: str, *transforms: TransformSpec) -> ModeSpec:
        return settings.modes[base].model_copy(update={"transforms": list(transforms)})

    rewrite, hyde = TransformSpec(kind="rewrite"), TransformSpec(kind="hyde")
    multi, decompose = TransformSpec(kind="multi_query", n=3), TransformSpec(kind="decompose")
    return {
        "hybrid": (settings.modes["hybrid"], "no transform"),
        "rrf_weighted": (settings.modes["rrf_weighted"], "no transform"),
        "accurate": (settings.modes["accurate"], "no transform"),
        "hybrid+rewrite": (plus("hybrid", rewrite), "the rewrite searched by every retriever"),
        "hybrid+hyde": (plus("hybrid", hyde), "the HyDE passage searched by the dense retrievers"),
        "hybrid+multi": (plus("hybrid", multi), "3 LLM queries searched by every retriever"),
        "hybrid+decompose": (plus("hybrid", decompose), "sub-questions (none for a one-part question)"),
        "hybrid+rewrite+hyde": (plus("hybrid", rewrite, hyde), ""),
        "hybrid+rewrite+hyde+multi": (plus("hybrid", rewrite, hyde, multi), ""),
        "rrf_weighted+rewrite+hyde": (plus("rrf_weighted", rewrite, TransformSpec(kind="hyde", retrievers=["dense_w3s1"])), ""),
        "accurate+rewrite+hyde": (plus("accurate", rewrite, hyde), "the reranker over the fused top 20"),
        "vectors+rewrite+hyde": (ModeSpec(retrievers=["dense_w3s1", "dense_utt"], fusion=FusionSpec(method="rrf", k=10),
                                          transforms=[rewrite, hyde]), "window and line vectors only"),
        "hybrid+rewrite+hyde+densex2": (plus("hybrid", rewrite, hyde).model_copy(update={"fusion": FusionSpec(
            method="rrf", k=10, weights={"dense_w3s1": 2.0, "dense_utt": 2.0})}), "vectors weigh twice BM25"),
        "hybrid+rewrite+hyde@0.5": (plus("hybrid", TransformSpec(kind="rewrite", weight=0.5), TransformSpec(kind="hyde", weight=0.5)),
                                     "the transformed lists at half weight"),
        "deep": (settings.modes["deep"], settings.modes["deep"].description),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="vague,dev,heavy")
    ap.add_argument("--modes", default=None, help="comma-separated names of candidate_modes (default: all)")
    ap.add_argument("--sample", default="", help="SET=N[,SET=N]: N questions of that set, drawn with seed 7 (others: all)")
    ap.add_argument("--llm", default="local")
    ap.add_argument("--index", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    sample = {k: int(v) for k, v in (part.split("=") for part in args.sample.split(",") if part)}
    settings = load_settings(None, index=args.index)
    candidates = candidate_modes(settings)
    names = args.modes.split(",") if args.modes else list(candidates)
    for name in names:
        settings.modes[name] = candidates[name][0]
    llm = make_llm(args.llm, settings.home)
    pipeline = Pipeline(settings, llm=lambda: llm)
    load = Path("/proc/loadavg").read_text().split()[0]
    doc = header("LLM query transforms: rewrite, multi-query, HyDE, decomposition") + (
        f"Index fingerprint {pipeline.store.info().fingerprint}; LLM `{llm.name}` (temperature 0); load average at "
        f"start {load}. Direct, Reworded and Heavy are the friends-rag sample: reported, never tuned on; vague and "
        "dev are tuning sets. s/q: mean seconds per question of retrieval + fusion (+ rerank) plus the LLM time of "
        "the mode's transforms when generated. LLM replies cached by (model, prompt): a rerun reads them.\n\n"
        + markdown_table(["mode", "what"], [[n, candidates[n][1]] for n in names]) + "\n")
    for set_name in args.sets.split(","):
        qs = load_questions(HERE / "vague_dev.jsonl") if set_name == "vague" else load_friends_set(set_name, settings.friends_dir)
        n = sample.get(set_name)
        qs = random.Random(7).sample(list(qs), n) if n and n < len(qs) else qs
        t0 = time.perf_counter()
        ranked: dict[str, list[list[str]]] = {n: [] for n in names}
        seconds: dict[str, list[float]] = {n: [] for n in names}
        for i, q in enumerate(qs, 1):
            shared: dict[str, list] = {}
            for name in names:
                result = pipeline.search(q.text, name, k=50, list_cache=shared)
                ranked[name].append([c.doc_id for c in result.candidates])
                own = sum(s.seconds for s in result.trace.stages if not s.name.startswith("transform:"))
                llm_ms = sum(s.detail.get("generation_ms", 0.0) for s in result.trace.stages if s.name.startswith("transform:"))
                seconds[name].append(own + llm_ms / 1000)
            if i % 10 == 0:
                print(f"{set_name}: {i}/{len(qs)} questions, {time.perf_counter() - t0:.0f} s", flush=True)
        rows = []
        for name in names:
            m = summarize(list(zip(ranked[name], [q.gold for q in qs])))
            rows.append([name, *[m.get(c, float("nan")) for c in COLUMNS], f"{statistics.fmean(seconds[name]):.2f}"])
        doc += f"## {set_name} (n={len(qs)}, {time.perf_counter() - t0:.0f} s)\n\n" + markdown_table(["mode", *COLUMNS, "s/q"], rows) + "\n"
        print(doc.split("## ")[-1], flush=True)
        write_report(args.out, doc, echo=False)


if __name__ == "__main__":
    main()

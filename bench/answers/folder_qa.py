"""A judged factoid QA set over a folder of mixed formats (NFCorpus abstracts): an extractive answer reader measured
on a collection that is not Friends.

The set, `bench/answers/folder_qa.jsonl` (66 questions, one a document, 66 documents spread over the whole
corpus.jsonl order, roughly every 55th abstract), was written by hand by reading the abstracts: each question is a
paraphrase in a user's words (not the sentence around the answer), and each answer is a short string (1-6 words) copied
verbatim from the document's title or text: a number with its unit, a percentage, a drug, a population, a place, a
year range, an outcome. `answers` may hold a second form that is verbatim in the text too ("718 patients", "718").
Question words are mixed: which / what / how many / how much / how long / what percentage / when / where / who.
Schema, one object a line: `{"id": "fqa01", "question": ..., "answers": [...], "doc": "<NFCorpus _id>"}`.

The folder is built with bench/ingest/mixed_folder.py's `build` (imported, not copied) over a subset of corpus.jsonl
written to a temporary directory: the answer documents plus a fixed seeded sample of distractors, 400 documents in all
by default, kept in corpus order (so every format of the mixed folder gets answer documents, and the hostile files
are there too). Documents whose title or text duplicates an answer document's (NFCorpus has a few) are never drawn as
distractors, so each question has one relevant document.

Writes `<out>/docs/` (the folder to index) and `<out>/questions.jsonl` (`relevant`: the answer document's id in the
folder, its path or `path#<_id>` for a JSONL record, grade 1; `answers` kept; `nfcorpus_id`: the source document).
It fails loudly when an answer is not verbatim (case-insensitive, spacing aside) in its document's title + text, when
an answer runs over 6 words, or when a document is missing from the corpus. It then loads every answer document with
the loader the index uses and warns (does not fail) when an answer no longer appears in the loaded text.

    .venv/bin/python bench/answers/folder_qa.py --out /tmp/fqa [--data ../shared/data/beir/nfcorpus] [--size 400]
    RAGFUNNEL_HOME=/tmp/qa-home nice -n 15 .venv/bin/ragfunnel index /tmp/fqa/docs --collection fqa
    RAGFUNNEL_HOME=/tmp/qa-home .venv/bin/ragfunnel eval questions /tmp/fqa/questions.jsonl -c fqa --json
    RAGFUNNEL_HOME=/tmp/qa-home .venv/bin/ragfunnel eval answers --reader evidence --qa --all \\
        --questions /tmp/fqa/questions.jsonl -c fqa --json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ingest"))
import mixed_folder  # noqa: E402

SET = Path(__file__).resolve().with_suffix(".jsonl")
MAX_WORDS = 6


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def load_set(path: Path) -> list[dict]:
    questions = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    ids = [q["id"] for q in questions]
    if len(set(ids)) != len(ids):
        raise SystemExit(f"{path}: duplicate question ids")
    return questions


def check_answers(questions: list[dict], corpus: dict[str, dict]) -> None:
    """Every answer verbatim (case-insensitive, spacing aside) in its document's title + text, at most MAX_WORDS
    words; else exit listing every failure."""
    bad = []
    for q in questions:
        doc = corpus.get(q["doc"])
        if doc is None:
            bad.append(f"{q['id']}: document {q['doc']} is not in corpus.jsonl")
            continue
        if not q.get("answers"):
            bad.append(f"{q['id']}: no answers")
        hay = norm(doc.get("title", "") + "\n" + doc.get("text", ""))
        for a in q.get("answers", []):
            if not a.strip() or norm(a) not in hay:
                bad.append(f"{q['id']}: answer {a!r} is not in the text of {q['doc']}")
            if len(a.split()) > MAX_WORDS:
                bad.append(f"{q['id']}: answer {a!r} has more than {MAX_WORDS} words")
    if bad:
        raise SystemExit("answers that fail the check:\n  " + "\n  ".join(bad))


def choose(records: list[dict], answer_ids: set[str], size: int, seed: int) -> list[dict]:
    """The answer documents plus a seeded sample of distractors (never a duplicate of an answer document), `size` in
    all, in corpus order."""
    taken_titles = {norm(r.get("title", "")) for r in records if r["_id"] in answer_ids}
    taken_texts = {norm(r.get("text", "")) for r in records if r["_id"] in answer_ids}
    pool = [r["_id"] for r in records if r["_id"] not in answer_ids
            and norm(r.get("title", "")) not in taken_titles and norm(r.get("text", "")) not in taken_texts]
    extra = max(0, size - len(answer_ids))
    keep = answer_ids | set(random.Random(seed).sample(pool, min(extra, len(pool))))
    return [r for r in records if r["_id"] in keep]


def loaded_text(docs: Path, doc_id: str) -> str:
    """The title + text the index's loader reads for a folder document id (`path` or `path#key`)."""
    from ragfunnel.corpus.loaders.base import Container, LoaderOptions
    from ragfunnel.corpus.loaders.registry import loader_for

    rel, _, key = doc_id.partition("#")
    path = docs / rel
    loaded = loader_for(path)(path, LoaderOptions())
    if isinstance(loaded, Container):
        loaded = next(f for f in loaded.files if f.key == key)
    return loaded.title + "\n" + loaded.text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data/beir/nfcorpus"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/fqa"))
    ap.add_argument("--set", type=Path, default=SET, help="the hand-written questions (default: folder_qa.jsonl)")
    ap.add_argument("--size", type=int, default=400, help="documents in the folder, answer documents included")
    ap.add_argument("--seed", type=int, default=7, help="seed of the distractor sample")
    args = ap.parse_args()

    records = [json.loads(line) for line in (args.data / "corpus.jsonl").open(encoding="utf-8")]
    corpus = {r["_id"]: r for r in records}
    questions = load_set(args.set)
    check_answers(questions, corpus)
    chosen = choose(records, {q["doc"] for q in questions}, args.size, args.seed)

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="folder-qa-") as tmp:  # the subset as a corpus.jsonl for `build`
        with (Path(tmp) / "corpus.jsonl").open("w", encoding="utf-8") as fh:
            for r in chosen:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        where = mixed_folder.build(Path(tmp), args.out)

    with (args.out / "questions.jsonl").open("w", encoding="utf-8") as fh:
        for q in questions:
            fh.write(json.dumps({"id": q["id"], "question": q["question"], "answers": q["answers"],
                                 "relevant": {where[q["doc"]]: 1}, "nfcorpus_id": q["doc"]}, ensure_ascii=False) + "\n")

    lost = []
    for q in questions:
        text = norm(loaded_text(args.out / "docs", where[q["doc"]]))
        if not any(norm(a) in text for a in q["answers"]):
            lost.append(f"{q['id']} ({where[q['doc']]}): {q['answers']}")
    for line in lost:
        print(f"warning: no answer in the loaded text of {line}", file=sys.stderr)

    formats = {}
    for q in questions:
        fmt = where[q["doc"]].split("/", 1)[0]
        formats[fmt] = formats.get(fmt, 0) + 1
    print(json.dumps({"documents": len(where), "questions": len(questions), "answer_documents_by_format": formats,
                      "answers_lost_by_loader": len(lost), "folder": str(args.out / "docs"),
                      "questions_file": str(args.out / "questions.jsonl")}))


if __name__ == "__main__":
    main()

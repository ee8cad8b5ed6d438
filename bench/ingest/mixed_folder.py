"""A folder of mixed formats built from the NFCorpus documents, and its dev questions with paths as `relevant`.

    .venv/bin/python bench/ingest/mixed_folder.py --out /tmp/nf-mixed [--data <data>/beir/nfcorpus]
        [--eval --report docs/results/first_stage/mixed_folder.md] [--encoder onnx:<dir> --suffix=-tuned]

Writes `<out>/docs/` (the folder to index) and `<out>/questions-mixed.jsonl` (NFCorpus **dev** judgments, every
document id rewritten to its path in the folder; `questions-mixed-train.jsonl`: the train judgments, to tune and
train on), plus `<out>/questions-jsonl.jsonl` (the same judgments with the
ids the untouched `corpus.jsonl` gets when indexed as a file: `corpus.jsonl#<_id>`), so that the two can be compared.

Each document goes, by its position in corpus.jsonl, to one of these formats (nested folders by format and group):
- `md/`: Markdown with YAML front matter (title, source, year) and the title as a `#` heading;
- `html/`: a web page with the abstract in <main>, wrapped in navigation, a cookie banner, a sidebar and a footer
  (boilerplate the loader must drop);
- `txt/`: plain text encoded in Latin-1 (only documents whose text Latin-1 can hold: the accents must survive);
- `pdf/`: a PDF made with reportlab (title, then the abstract wrapped into lines);
- `docx/`: a Word file (title as Heading 1, the abstract as paragraphs);
- `jsonl/`: records of 40 documents a file (`id`, `title`, `text`, `year`).
Plus hostile files the sync must skip with a reason: an empty file, random bytes named .pdf, a .docx that is not a
zip, a JSONL file with a broken line (its good lines index), an unknown extension. The same input gives the same
folder (fixed seed; PDFs carry a fixed creation date).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
from html import escape
from pathlib import Path

FORMATS = ("md", "html", "txt", "pdf", "docx", "jsonl")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
JSONL_BATCH = 40


def paragraphs(text: str, per: int = 3) -> list[str]:
    sentences = [s.strip() for s in SENTENCE_END.split(text) if s.strip()]
    return [" ".join(sentences[i:i + per]) for i in range(0, len(sentences), per)] or [text.strip()]


def group(doc_id: str) -> str:
    return hashlib.sha1(doc_id.encode()).hexdigest()[:1]  # 16 sub-folders a format


def write_md(path: Path, doc: dict) -> None:
    title = doc["title"].replace('"', "'")
    body = "\n\n".join(paragraphs(doc["text"]))
    path.write_text(f'---\ntitle: "{title}"\nsource: nfcorpus\nyear: {doc["year"]}\n---\n\n# {doc["title"]}\n\n{body}\n',
                    encoding="utf-8")


def write_html(path: Path, doc: dict) -> None:
    body = "".join(f"<p>{escape(p)}</p>" for p in paragraphs(doc["text"]))
    path.write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{escape(doc['title'])} | Nutrition Facts Library</title></head><body>"
        "<nav class='menu'><a href='/'>Home</a> <a href='/videos'>Videos</a> <a href='/blog'>Blog</a> "
        "<a href='/donate'>Donate</a> <a href='/about'>About us</a></nav>"
        "<div class='cookie-banner'>We use cookies to improve your experience. Accept all cookies?</div>"
        f"<main><article><h1>{escape(doc['title'])}</h1>{body}</article></main>"
        "<aside class='sidebar'><h3>Popular topics</h3><ul><li>Vitamin D</li><li>Fiber</li><li>Heart disease</li>"
        "</ul></aside><footer>Copyright 2024 Nutrition Facts Library. Privacy policy. Terms of use. "
        "Subscribe to our newsletter.</footer></body></html>", encoding="utf-8")


def write_txt(path: Path, doc: dict) -> None:
    text = doc["title"] + "\n\n" + "\n\n".join(paragraphs(doc["text"])) + "\n"
    path.write_bytes(text.encode("latin-1"))


def write_pdf(path: Path, doc: dict) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    styles = getSampleStyleSheet()
    story = [Paragraph(escape(doc["title"]), styles["Title"])]
    story += [Paragraph(escape(p), styles["BodyText"]) for p in paragraphs(doc["text"])]
    pdf = SimpleDocTemplate(str(path), pagesize=A4, title=doc["title"], invariant=1)
    pdf.build(story)


def write_docx(path: Path, doc: dict) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = doc["title"]
    document.add_heading(doc["title"], level=1)
    for p in paragraphs(doc["text"]):
        document.add_paragraph(p)
    document.save(str(path))


WRITERS = {"md": write_md, "html": write_html, "txt": write_txt, "pdf": write_pdf, "docx": write_docx}


def latin1(doc: dict) -> bool:
    try:
        (doc["title"] + doc["text"]).encode("latin-1")
        return True
    except UnicodeEncodeError:
        return False


def build(data: Path, out: Path, seed: int = 13) -> dict[str, str]:
    """Write the folder; returns corpus id -> document id in the folder."""
    docs_dir = out / "docs"
    if docs_dir.exists():
        shutil.rmtree(docs_dir)
    rng = random.Random(seed)
    records = [json.loads(line) for line in (data / "corpus.jsonl").open(encoding="utf-8")]
    where: dict[str, str] = {}
    batch: list[dict] = []
    batch_no = 0

    def flush() -> None:
        nonlocal batch, batch_no
        if batch:
            rel = f"jsonl/records-{batch_no:03d}.jsonl"
            (docs_dir / "jsonl").mkdir(parents=True, exist_ok=True)
            with (docs_dir / rel).open("w", encoding="utf-8") as fh:
                for d in batch:
                    fh.write(json.dumps({"id": d["_id"], "title": d["title"], "text": d["text"], "year": d["year"]},
                                        ensure_ascii=False) + "\n")
                    where[d["_id"]] = f"{rel}#{d['_id']}"
            batch, batch_no = [], batch_no + 1

    for i, record in enumerate(records):
        doc = {"_id": record["_id"], "title": record.get("title", ""), "text": record.get("text", ""),
               "year": 2000 + rng.randrange(25)}
        fmt = FORMATS[i % len(FORMATS)]
        if fmt == "txt" and not latin1(doc):
            fmt = "md"  # Latin-1 cannot hold it; the txt share stays the documents that fit
        if fmt == "jsonl":
            batch.append(doc)
            if len(batch) == JSONL_BATCH:
                flush()
            continue
        rel = f"{fmt}/{group(doc['_id'])}/{doc['_id']}.{fmt}"
        (docs_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        WRITERS[fmt](docs_dir / rel, doc)
        where[doc["_id"]] = rel
    flush()
    hostile = docs_dir / "hostile"
    hostile.mkdir()
    (hostile / "empty.md").write_bytes(b"")
    (hostile / "random.pdf").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    (hostile / "not-a-zip.docx").write_bytes(b"this is not a zip archive\n" * 20)
    (hostile / "broken.jsonl").write_text('{"id": "h1", "text": "a good line about hostile files"}\n{"id": "h2", "te\n',
                                          encoding="utf-8")
    (hostile / "data.xyz").write_bytes(b"\x00\x01 unknown format")
    return where


def write_questions(data: Path, path: Path, ids: dict[str, str], split: str = "dev") -> int:
    from ragfunnel.corpus.loaders.beir import load_beir_queries

    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for q in load_beir_queries(data, split):
            relevant = {ids[d]: g for d, g in q["relevant"].items() if d in ids}
            if any(g > 0 for g in relevant.values()):
                fh.write(json.dumps({"id": q["id"], "question": q["question"], "relevant": relevant}) + "\n")
                n += 1
    return n


def ragfunnel(*args: str) -> dict:
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "ragfunnel.cli", *args], capture_output=True, text=True, env=os.environ)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def evaluate(data: Path, out: Path, report: Path | None, encoder: str | None = None, suffix: str = "") -> None:
    """Index the folder (collection nf-mixed) and the untouched corpus.jsonl (nf-jsonl), score both on the dev
    questions in every mode, and write the table. With `encoder`, both are indexed with it (`index --encoder`) as
    nf-mixed<suffix> and nf-jsonl<suffix>."""
    import os
    import time

    from ragfunnel.evaluate.report import header, markdown_table, write_report

    rows, built = [], {}
    for name, path, questions in ((f"nf-mixed{suffix}", out / "docs", out / "questions-mixed.jsonl"),
                                  (f"nf-jsonl{suffix}", data / "corpus.jsonl", out / "questions-jsonl.jsonl")):
        t0 = time.perf_counter()
        sync = ragfunnel("index", str(path), "--collection", name, "--json", "-q",
                         *(("--encoder", encoder) if encoder else ()))
        built[name] = (sync, time.perf_counter() - t0, os.getloadavg()[0])
        for mode in ("bm25", "vector", "hybrid"):
            r = ragfunnel("eval", "questions", str(questions), "-c", name, "--mode", mode, "--json")
            rows.append([name, mode, r["ndcg@10"], r["recall@10"], r["recall@100"], r["mrr@10"], r["n"]])
    text = header("A folder of mixed formats (NFCorpus documents) against the same documents from corpus.jsonl")
    text += ("`nf-mixed`: bench/ingest/mixed_folder.py's folder (Markdown with front matter, HTML with boilerplate, "
             "Latin-1 text, PDF, DOCX, JSONL records; nested; five hostile files); `nf-jsonl`: the BEIR corpus.jsonl "
             "indexed as one JSONL file. Both are folder collections with the default settings"
             + (f", indexed with the encoder `{encoder}`" if encoder else "") +
             "; NFCorpus **dev** judgments, ids rewritten to paths.\n\n")
    text += markdown_table(["collection", "mode", "nDCG@10", "recall@10", "recall@100", "MRR@10", "n"], rows)
    text += "\n"
    for name, (sync, seconds, load) in built.items():
        t = sync.get("timings", {})
        text += (f"- {name}: `index` {sync.get('action')} in {seconds:.0f} s (scan {t.get('scan', 0):.1f} s for "
                 f"{sync.get('parsed', 0)} files parsed, write {t.get('write', 0):.0f} s; load average {load:.1f} "
                 f"after); skipped: {json.dumps(sync.get('skipped', {}))}; problems: {json.dumps(sync.get('problems', {}))}\n")
    write_report(report, text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data/beir/nfcorpus"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/nf-mixed"))
    ap.add_argument("--eval", action="store_true", help="then index both collections, score them and write --report")
    ap.add_argument("--report", type=Path, help="the Markdown table (with --eval)")
    ap.add_argument("--encoder", help="index both collections with this encoder (e.g. onnx:<dir> of `train embedder`)")
    ap.add_argument("--suffix", default="", help="collections nf-mixed<suffix> and nf-jsonl<suffix>")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    where = build(args.data, args.out)
    n = write_questions(args.data, args.out / "questions-mixed.jsonl", where)
    records = [json.loads(line)["_id"] for line in (args.data / "corpus.jsonl").open(encoding="utf-8")]
    write_questions(args.data, args.out / "questions-jsonl.jsonl", {d: f"corpus.jsonl#{d}" for d in records})
    write_questions(args.data, args.out / "questions-mixed-train.jsonl", where, "train")  # to tune and train on
    counts = {fmt: sum(1 for v in where.values() if v.startswith(f"{fmt}/")) for fmt in FORMATS}
    print(json.dumps({"documents": len(where), "by_format": counts, "dev_questions": n, "folder": str(args.out / "docs")}))
    if args.eval:
        evaluate(args.data, args.out, args.report, args.encoder, args.suffix)


if __name__ == "__main__":
    main()

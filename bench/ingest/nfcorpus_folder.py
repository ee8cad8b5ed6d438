"""Write the NFCorpus documents (BEIR `corpus.jsonl`) as a folder of Markdown files, for ingest and sync timings.

    .venv/bin/python bench/ingest/nfcorpus_folder.py [--data <data>/beir/nfcorpus] [--out /tmp/nfcorpus-md]

One file per document, `<first 2 digits of the number>/<_id>.md` (MED-10 -> `10/MED-10.md`, about 100 files a
folder): the title as a `#` heading, then the abstract in paragraphs of three sentences (so a file has several
blocks, like a real note). The folder is data, never committed; the same input always gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def markdown(title: str, text: str, per_paragraph: int = 3) -> str:
    sentences = [s.strip() for s in SENTENCE_END.split(text) if s.strip()]
    paragraphs = [" ".join(sentences[i:i + per_paragraph]) for i in range(0, len(sentences), per_paragraph)]
    return "\n\n".join([f"# {title.strip() or 'Untitled'}", *paragraphs]) + "\n"


def relpath(doc_id: str) -> str:
    digits = re.sub(r"\D", "", doc_id) or "0"
    return f"{digits[:2]}/{doc_id}.md"


def write_folder(corpus: Path, out: Path) -> int:
    n = 0
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            file = out / relpath(record["_id"])
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(markdown(record.get("title", ""), record.get("text", "")), encoding="utf-8")
            n += 1
    return n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="the BEIR NFCorpus folder (default: <data>/beir/nfcorpus)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/nfcorpus-md"))
    args = parser.parse_args()
    from ragfunnel.config import load_settings

    data = args.data or load_settings().friends_dir.parent / "beir" / "nfcorpus"
    n = write_folder(data / "corpus.jsonl", args.out)
    print(f"{n} Markdown files under {args.out}")


if __name__ == "__main__":
    main()

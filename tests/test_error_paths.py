"""One error path (issue 21.5): every hostile input or damaged file of the issue is one line on stderr and a
non-zero exit from the CLI, or a JSON `{"error": {"code", "message"}}` with a 4xx/5xx status from the HTTP API;
never a traceback, never an absolute path in a response. Read-only indexes are searched without a single write."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.helpers import make_doc

pytestmark = pytest.mark.integration

QUESTION = "Who did Rachel dump at the altar?"


def run_cli(args: list[str], capsys, monkeypatch, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """`ragfunnel ARGS` through the real entry point (`cli.main`) in this process: (exit status, stdout, stderr).
    An exception that escapes main() fails the test (it would have been a traceback)."""
    from ragfunnel.cli import main

    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(sys, "argv", ["ragfunnel", *args])
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main()
    out, err = capsys.readouterr()
    code = stop.value.code if isinstance(stop.value.code, int) else (0 if stop.value.code is None else 1)
    return code, out, err


@pytest.fixture(scope="module")
def damaged(small_index, tmp_path_factory, session_cache):
    """Copies of the small index, each damaged one way, plus files a user might get wrong."""
    from ragfunnel.store import StoreSettings, build_index

    root = tmp_path_factory.mktemp("damaged")
    paths = {}
    for name in ("sqlite", "usearch", "bm25", "readonly", "existing"):
        shutil.copytree(small_index.path, root / name)
        paths[name] = root / name
    (root / "sqlite" / "store.sqlite").write_bytes(b"this is not a database" * 100)
    vectors = sorted((root / "usearch" / "vectors").glob("*.usearch"))
    vectors[0].write_bytes(b"\xff" * 200)
    shutil.rmtree(root / "bm25" / "bm25" / "utt")
    home_file = root / "home-is-a-file"
    home_file.write_text("not a folder")
    bad_config = root / "latin1.toml"
    bad_config.write_bytes('default_mode = "caf\xe9"\n'.encode("latin-1"))
    surrogate = root / "surrogate.jsonl"
    record = {"scene_id": "s01_e01_c01", "utterances": [{"utterance_id": "s01_e01_c01_u001", "speakers": ["Ross"],
                                                          "transcript": "bad \udcff text"}]}
    surrogate.write_text(json.dumps(record) + "\n")  # json.dumps writes the lone surrogate as the escape \udcff
    duplicate = root / "duplicate.jsonl"
    duplicate.write_text("".join(json.dumps({**record, "utterances": [{**record["utterances"][0], "transcript": t}]}) + "\n"
                                 for t in ("first", "second")))
    speakers = root / "speakers.jsonl"
    speakers.write_text(json.dumps({**record, "utterances": [{**record["utterances"][0], "transcript": "hi",
                                                              "speakers": "Ross Geller"}]}) + "\n")
    markup = root / "markup"
    doc = make_doc("s01_e01_c01", [("Ross Geller", "we were on a [/red] break")], title="The One [/red] [bold]")
    build_index([doc], markup, StoreSettings(), session_cache).close()
    return {**paths, "home_file": home_file, "bad_config": bad_config, "surrogate": surrogate, "markup": markup,
            "duplicate": duplicate, "speakers": speakers, "root": root}


CLI_CASES = {
    # name: (args, extra env, text the one line must hold); "{x}" is replaced by the path of damaged[x]
    "invalid UTF-8 in the question": (["search", "\udcff\udcfe Rachel"], {}, "not valid text"),
    "lone surrogate in the question": (["search", "Rachel \ud800 altar"], {}, "not valid text"),
    "RAGFUNNEL_HOME is a file": (["search", QUESTION], {"RAGFUNNEL_HOME": "{home_file}"}, "is a file, not a folder"),
    "config file not UTF-8": (["search", QUESTION, "--config", "{bad_config}"], {}, "not UTF-8"),
    "lone surrogate in the corpus": (["index", "--corpus", "{surrogate}", "--index", "{root}/built", "--rebuild", "-q"],
                                     {}, "lone surrogate"),
    "corrupt store.sqlite": (["search", QUESTION, "--index", "{sqlite}"], {}, "store.sqlite"),
    "corrupt .usearch file": (["search", QUESTION, "--index", "{usearch}"], {}, ".usearch"),
    "missing BM25 view directory": (["search", QUESTION, "--index", "{bm25}"], {}, "bm25/utt is missing"),
    "duplicate scene id": (["index", "--corpus", "{duplicate}", "--index", "{root}/built", "--rebuild", "-q"], {},
                           "'s01_e01_c01' appears twice: {duplicate}, line 1 and {duplicate}, line 2"),
    "speakers as a string": (["index", "--corpus", "{speakers}", "--index", "{root}/built", "--rebuild", "-q"], {},
                             "{speakers}, line 1: not a valid scene record (field 'speakers'"),
}


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_cli_error_is_one_line_and_a_nonzero_exit(case, damaged, capsys, monkeypatch):
    args, env, says = CLI_CASES[case]
    fill = lambda text: text.format(**{k: str(v) for k, v in damaged.items()})  # noqa: E731
    code, out, err = run_cli([fill(a) for a in args], capsys, monkeypatch, {k: fill(v) for k, v in env.items()})
    assert code == 2, (code, err)
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fill(says) in lines[0], err
    if case == "lone surrogate in the corpus":
        assert "line 1" in lines[0] and "transcript" in lines[0]
        assert not list(damaged["root"].glob("*.partial")), "a failed build left its .partial behind"


@pytest.mark.parametrize("question", ["[/red] break", "[bold]break"])
def test_rich_markup_in_a_question_or_a_title_is_printed_as_text(question, damaged, capsys, monkeypatch):
    code, out, err = run_cli(["search", question, "--index", str(damaged["markup"]), "--k", "1"], capsys, monkeypatch)
    assert code == 0, err
    assert question in out and "The One [/red] [bold]" in out and "[/red] break" in out


def test_a_read_only_index_is_searched_without_a_single_write(damaged, capsys, monkeypatch):
    """SQLite opens read-only (no -wal / -shm, no journal) and nothing else is written: every file of the index is
    as it was (as root, chmod cannot make a folder read-only, so the check is that nothing changed)."""
    index = damaged["readonly"]

    def snapshot() -> dict[str, tuple[int, int]]:
        return {str(p.relative_to(index)): (p.stat().st_size, p.stat().st_mtime_ns) for p in index.rglob("*")}

    for p in [index, *index.rglob("*")]:
        p.chmod(p.stat().st_mode & ~0o222)
    try:
        before = snapshot()
        code, out, err = run_cli(["search", QUESTION, "--index", str(index), "--json", "--filter", "season=1"],
                                 capsys, monkeypatch)
        assert code == 0, err
        assert json.loads(out)["results"]
        assert snapshot() == before
    finally:
        for p in [index, *index.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)


# ---- HTTP ------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def client(small_index, small_pipeline):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from ragfunnel.generate.llm import FakeLLM
    from ragfunnel.serve.app import create_app

    with TestClient(create_app(small_index.settings, small_pipeline, FakeLLM(), token="")) as c:
        yield c


DEEP = 20_000  # under the default body limit (64 KiB), far over the JSON parser's recursion limit
HTTP_CASES = {
    # name: (body bytes, expected status)
    "invalid UTF-8 in the body": (b'{"question": "\xff\xfe Rachel"}', 400),
    "lone surrogate in the question": (b'{"question": "Rachel \\udcff altar"}', 422),
    "deeply nested JSON": (b"[" * DEEP + b"]" * DEEP, 400),
    "deeply nested filter": (b'{"question": "Rachel", "filter": {"a": ' + b"[" * DEEP + b"]" * DEEP + b"}}", 400),
    "nested filter objects": (b'{"question": "Rachel", "filter": ' + b'{"a": ' * 500 + b"1" + b"}" * 501, 422),
}


def assert_error(r, status: int) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    error = r.json()["error"]
    assert set(error) >= {"code", "message"} and error["message"], error
    assert "Traceback" not in r.text and "/tmp/" not in r.text and str(Path.home()) + "/" not in r.text
    return error


@pytest.mark.parametrize("route", ["/search", "/ask"])
@pytest.mark.parametrize("case", list(HTTP_CASES))
def test_http_error_is_json_with_a_status(case, route, client):
    body, status = HTTP_CASES[case]
    r = client.post(route, content=body, headers={"Content-Type": "application/json"})
    assert_error(r, status)


@pytest.mark.parametrize("route", ["/search", "/ask"])
def test_rich_markup_in_a_question_is_just_text(route, client):
    r = client.post(route, json={"question": "[/red] Rachel [bold]", "reader": "evidence"} if route == "/ask"
                    else {"question": "[/red] Rachel [bold]"})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("damage", ["sqlite", "usearch", "bm25"])
def test_a_damaged_index_is_a_503_with_no_path_and_health_says_why(damage, damaged, small_index):
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from ragfunnel.config import load_settings
    from ragfunnel.generate.llm import FakeLLM
    from ragfunnel.serve.app import create_app

    settings = load_settings(index=damaged[damage])
    with TestClient(create_app(settings, llm=FakeLLM(), token=""), raise_server_exceptions=False) as c:
        error = assert_error(c.post("/search", json={"question": QUESTION}), 503)
        assert error["code"] == "unavailable" and "rebuild" in error["message"]
        health = c.get("/health")
        assert health.status_code == 200 and health.json()["status"] == "degraded"
        assert str(damaged["root"]) not in health.text and "rebuild" in health.json()["index_error"]


def test_a_failed_build_leaves_no_partial_and_names_the_document(tmp_path, session_cache):
    """Text that cannot be stored (a lone surrogate, as a loader that bypasses the corpus checks may give) is an
    error naming the document and unit, and the half-built `<index>.partial` is removed."""
    from ragfunnel.errors import CorpusError
    from ragfunnel.store import StoreSettings, build_index

    good = make_doc("s01_e01_c01", [("Ross Geller", "we were on a break")])
    bad = make_doc("s01_e01_c02", [("Ross Geller", "bad \udcff text")])
    with pytest.raises(CorpusError, match=r"s01_e01_c02.*unit s01_e01_c02_u001.*lone surrogate"):
        build_index([good, bad], tmp_path / "index", StoreSettings(), session_cache)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_on_duplicate_keep_last_and_long_units_are_split_and_reported(damaged, capsys, monkeypatch, tmp_path, session_cache):
    config = tmp_path / "config.toml"
    config.write_text("[limits]\nmax_unit_chars = 100\n")
    long = damaged["root"] / "long.jsonl"
    records = [json.loads(line) for line in damaged["duplicate"].read_text().splitlines()]
    records[1]["utterances"][0]["transcript"] = "second " + "very long line " * 30
    long.write_text("".join(json.dumps(r) + "\n" for r in records))
    index = tmp_path / "kept"
    code, _, err = run_cli(["index", "--corpus", str(long), "--index", str(index), "--rebuild", "-q",
                            "--on-duplicate", "keep-last", "--config", str(config)], capsys, monkeypatch)
    assert code == 0, err
    assert "limit: s01_e01_c01_u001: 457 characters, split into 5 parts of at most 100" in err
    from ragfunnel.store import open_store

    store = open_store(index, session_cache)
    try:
        (doc_id,) = store.doc_ids()
        units = store.document(doc_id).units
        assert [u.unit_id for u in units][:2] == ["s01_e01_c01_u001", "s01_e01_c01_u001~2"]
        assert units[0].text.startswith("second") and all(len(u.text) <= 100 for u in units)
    finally:
        store.close()


def test_corpus_without_rebuild_is_not_ignored(damaged, capsys, monkeypatch, session_cache):
    """An index exists and is up to date by its settings; `index --corpus OTHER` (no --rebuild) builds OTHER."""
    index = damaged["existing"]
    code, _, err = run_cli(["index", "--corpus", str(damaged["speakers"]).replace("speakers", "duplicate"),
                            "--index", str(index), "-q", "--on-duplicate", "keep-first"], capsys, monkeypatch)
    assert code == 0, err
    assert "is not what the index" in err and "building a new index" in err
    from ragfunnel.store import open_store

    store = open_store(index, session_cache)
    try:
        assert store.doc_ids() == ["s01_e01_c01"]
    finally:
        store.close()
    code, _, err = run_cli(["index", "--corpus", str(damaged["duplicate"]), "--index", str(index), "-q",
                            "--on-duplicate", "keep-first"], capsys, monkeypatch)
    assert code == 0 and "up to date" in err  # the same corpus again: nothing to do

"""Friends loaders: our JSONL (plain and gzipped) and Emory's season JSON end as the same Document model."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from ragfunnel.corpus import load_friends
from ragfunnel.corpus.friends import scene_label
from ragfunnel.errors import CorpusError
from tests.conftest import CORPUS_FILE

# One scene in our JSONL schema and the same scene as Emory writes it.
SCENE_1 = {
    "scene_id": "s01_e01_c01",
    "season": 1,
    "episode": 1,
    "scene": 1,
    "episode_title": "The Pilot",
    "utterances": [
        {"utterance_id": "s01_e01_c01_u000", "speakers": [], "transcript": "[Scene: Central Perk, the gang is there.]",
         "stage_direction": True},
        {"utterance_id": "s01_e01_c01_u001", "speakers": ["Monica Geller"],
         "transcript": "There's nothing to tell! He's just some guy I work with!", "stage_direction": False},
        {"utterance_id": "s01_e01_c01_u002", "speakers": ["Joey Tribbiani", "Chandler Bing"],
         "transcript": "C'mon, you're going out with the guy!", "stage_direction": False},
        {"utterance_id": "s01_e01_c01_u003", "speakers": [], "transcript": "They all stare, bemused.",
         "stage_direction": True},
    ],
}
SCENE_2 = {
    "scene_id": "s01_e02_c03",
    "season": 1,
    "episode": 2,
    "scene": 3,
    "episode_title": "The One with the Sonogram at the End",
    "utterances": [
        {"utterance_id": "s01_e02_c03_u001", "speakers": ["Ross Geller"], "transcript": "Carol's pregnant.",
         "stage_direction": False},
    ],
}


def emory_season(season_id: str, scenes_by_episode: dict[str, list[dict]]) -> dict:
    """Emory's format: no stage_direction flag (an empty speaker list marks a note), no titles."""
    episodes = []
    for episode_id, scenes in scenes_by_episode.items():
        emory_scenes = []
        for scene in scenes:
            utterances = [
                {"utterance_id": u["utterance_id"], "speakers": list(u["speakers"]), "transcript": u["transcript"],
                 "tokens": []}
                for u in scene["utterances"]
            ]
            emory_scenes.append({"scene_id": scene["scene_id"], "utterances": utterances})
        episodes.append({"episode_id": episode_id, "scenes": emory_scenes})
    return {"season_id": season_id, "episodes": episodes}


def write_jsonl(path: Path, records: list[dict | str]) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    text = "\n".join(lines) + "\n"
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def unit_tuples(doc):
    return [(u.unit_id, u.text, u.speakers, u.is_direction) for u in doc.units]


# ---- the two formats ---------------------------------------------------------------------------------------------


def test_jsonl_plain_and_gzip_load_the_same(tmp_path):
    plain = load_friends(write_jsonl(tmp_path / "c.jsonl", [SCENE_1, SCENE_2]))
    gz = load_friends(write_jsonl(tmp_path / "c.jsonl.gz", [SCENE_1, SCENE_2]))
    assert [d.doc_id for d in plain] == ["s01_e01_c01", "s01_e02_c03"]
    assert plain == gz
    assert [d.metadata for d in plain] == [d.metadata for d in gz]


def test_jsonl_document_model(tmp_path):
    (doc, _) = load_friends(write_jsonl(tmp_path / "c.jsonl", [SCENE_1, SCENE_2]))
    assert doc.title == "The Pilot"
    assert doc.label == "S01E01, Scene 1"
    assert doc.metadata == {"season": 1, "episode": 1, "scene": 1, "episode_title": "The Pilot",
                            "label": "S01E01, Scene 1"}
    assert unit_tuples(doc) == [
        ("s01_e01_c01_u000", "[Scene: Central Perk, the gang is there.]", (), True),
        ("s01_e01_c01_u001", "There's nothing to tell! He's just some guy I work with!", ("Monica Geller",), False),
        ("s01_e01_c01_u002", "C'mon, you're going out with the guy!", ("Joey Tribbiani", "Chandler Bing"), False),
        ("s01_e01_c01_u003", "They all stare, bemused.", (), True),
    ]
    rendered = doc.render().splitlines()
    assert rendered == [
        "[Scene: Central Perk, the gang is there.]",
        "Monica Geller: There's nothing to tell! He's just some guy I work with!",
        "Joey Tribbiani & Chandler Bing: C'mon, you're going out with the guy!",
        "(They all stare, bemused.)",
    ]


def test_emory_season_json_loads_into_the_same_model(tmp_path):
    jsonl = load_friends(write_jsonl(tmp_path / "c.jsonl", [SCENE_1, SCENE_2]))
    season = tmp_path / "friends_season_01.json"
    season.write_text(json.dumps(emory_season("s01", {"s01_e01": [SCENE_1], "s01_e02": [SCENE_2]}), indent=2))
    emory = load_friends(season)
    assert [d.doc_id for d in emory] == [d.doc_id for d in jsonl]
    for a, b in zip(emory, jsonl):
        assert unit_tuples(a) == unit_tuples(b)  # stage directions found from the empty speaker list
        assert a.label == b.label
        assert {k: a.metadata[k] for k in ("season", "episode", "scene")} == {
            k: b.metadata[k] for k in ("season", "episode", "scene")
        }
        assert a.render() == b.render()


def test_emory_note_only_utterance_uses_transcript_with_note(tmp_path):
    data = {"season_id": "s02", "episodes": [{"episode_id": "s02_e05", "scenes": [{"scene_id": "s02_e05_c07", "utterances": [
        {"utterance_id": "s02_e05_c07_u001", "speakers": [], "transcript": "",
         "transcript_with_note": "(Ross enters with a monkey)", "tokens": []},
        {"utterance_id": "s02_e05_c07_u002", "speakers": ["Ross Geller"], "transcript": "Hi Marcel.", "tokens": []},
    ]}]}]}
    path = tmp_path / "friends_season_02.json"
    path.write_text(json.dumps(data))
    (doc,) = load_friends(path)
    assert doc.label == "S02E05, Scene 7"
    assert doc.metadata["season"] == 2 and doc.metadata["episode"] == 5 and doc.metadata["scene"] == 7
    assert doc.units[0].text == "(Ross enters with a monkey)" and doc.units[0].is_direction
    assert not doc.units[1].is_direction
    assert doc.render() == "(Ross enters with a monkey)\nRoss Geller: Hi Marcel."


def test_directory_prefers_jsonl_then_emory_seasons(tmp_path):
    seasons = tmp_path / "emory"
    seasons.mkdir()
    (seasons / "friends_season_02.json").write_text(json.dumps(emory_season("s02", {"s01_e02": [SCENE_2]})))
    (seasons / "friends_season_01.json").write_text(json.dumps(emory_season("s01", {"s01_e01": [SCENE_1]})))
    assert [d.doc_id for d in load_friends(seasons)] == ["s01_e01_c01", "s01_e02_c03"]  # season files in order

    write_jsonl(seasons / CORPUS_FILE, [SCENE_2])
    assert [d.doc_id for d in load_friends(seasons)] == ["s01_e02_c03"]  # the JSONL wins


def test_directory_without_corpus_is_an_error(tmp_path):
    with pytest.raises(CorpusError, match=re.escape(str(tmp_path))):
        load_friends(tmp_path)


def test_scene_label():
    assert scene_label(1, 1, 3) == "S01E01, Scene 3"
    assert scene_label(10, 17, 12) == "S10E17, Scene 12"


# ---- errors ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_corrupt_jsonl_line_names_file_and_line(tmp_path, suffix):
    path = write_jsonl(tmp_path / f"c{suffix}", [SCENE_1, "", '{"scene_id": "s01_e01_c02", "utterances": [', SCENE_2])
    with pytest.raises(CorpusError) as info:
        load_friends(path)
    message = str(info.value)
    assert str(path) in message and "line 3" in message


@pytest.mark.parametrize(
    "record, line",
    [
        ({"scene_id": "s01_e01_c02"}, 2),  # no utterances
        ({"scene_id": "scene-two", "utterances": []}, 2),  # not sSS_eEE_cCC
        ({"utterances": []}, 2),  # no scene id
        ({"scene_id": "s01_e01_c02", "utterances": [{"speakers": ["Ross"], "transcript": "hi"}]}, 2),  # no id
        ({"scene_id": "s01_e01_c02", "utterances": ["just a string"]}, 2),  # utterance is not an object
        ({"scene_id": "s01_e01_c02", "season": "one", "utterances": []}, 2),
        ([1, 2, 3], 2),  # not an object at all
    ],
)
def test_invalid_scene_record_names_file_and_line(tmp_path, record, line):
    path = write_jsonl(tmp_path / "c.jsonl", [SCENE_1, record])
    with pytest.raises(CorpusError) as info:
        load_friends(path)
    assert str(path) in str(info.value) and f"line {line}" in str(info.value)


def test_truncated_gzip_is_a_corpus_error(tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl.gz", [SCENE_1, SCENE_2] * 50)
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    with pytest.raises(CorpusError, match=re.escape(str(bad))):
        load_friends(bad)


def test_not_gzip_at_all_is_a_corpus_error(tmp_path):
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_text(json.dumps(SCENE_1))
    with pytest.raises(CorpusError, match=re.escape(str(bad))):
        load_friends(bad)


def test_corrupt_emory_json_names_file_and_line(tmp_path):
    text = json.dumps(emory_season("s01", {"s01_e01": [SCENE_1]}), indent=2).splitlines()
    broken_line = 6
    text[broken_line - 1] = text[broken_line - 1] + " }}"  # garbage on line 6
    path = tmp_path / "friends_season_01.json"
    path.write_text("\n".join(text))
    with pytest.raises(CorpusError) as info:
        load_friends(path)
    assert str(path) in str(info.value) and f"line {broken_line}" in str(info.value)


@pytest.mark.parametrize(
    "data",
    [
        {"season_id": "s01"},  # no episodes
        {"season_id": "s01", "episodes": [{"episode_id": "s01_e01"}]},  # no scenes
        {"season_id": "s01", "episodes": [{"episode_id": "s01_e01", "scenes": [{"scene_id": "x", "utterances": []}]}]},
        [1, 2],
    ],
)
def test_wrong_emory_structure_is_a_corpus_error(tmp_path, data):
    path = tmp_path / "friends_season_01.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CorpusError, match=re.escape(str(path))):
        load_friends(path)


def test_missing_file_is_a_corpus_error(tmp_path):
    missing = tmp_path / "nope.jsonl.gz"
    with pytest.raises(CorpusError, match="not found"):
        load_friends(missing)


def test_unknown_format_is_a_corpus_error(tmp_path):
    path = tmp_path / "corpus.csv"
    path.write_text("scene_id,text\n")
    with pytest.raises(CorpusError, match="unknown corpus format"):
        load_friends(path)


# ---- the real corpus ---------------------------------------------------------------------------------------------


@pytest.mark.integration
def test_real_corpus_counts(friends_docs, friends_dir):
    docs = friends_docs
    assert len(docs) == 3107
    assert sum(len(d.units) for d in docs) == 67373
    assert len({d.doc_id for d in docs}) == 3107
    assert len({d.doc_id[:7] for d in docs}) == 236  # episodes
    # Published facts from the data README: 6,060 stage directions, 39 lines with more than one speaker.
    assert sum(u.is_direction for d in docs for u in d.units) == 6060
    assert sum(len(u.speakers) > 1 for d in docs for u in d.units) == 39
    # Stage directions never carry a speaker; utterance ids extend their scene id.
    assert all(not u.speakers for d in docs for u in d.units if u.is_direction)
    assert all(u.unit_id.startswith(d.doc_id + "_u") for d in docs for u in d.units)
    seasons = Counter(d.metadata["season"] for d in docs)
    assert seasons[1] == 326 and seasons[10] == 219 and sum(seasons.values()) == 3107
    first = docs[0]
    assert first.doc_id == "s01_e01_c01" and first.title == "The Pilot" and first.label == "S01E01, Scene 1"
    # A directory loads the same corpus (via the .gz file).
    assert [d.doc_id for d in load_friends(friends_dir)] == [d.doc_id for d in docs]

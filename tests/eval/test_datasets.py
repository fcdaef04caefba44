"""Question sets from folders, .jsonl and .csv files; stored datasets; corpus subsets."""
from __future__ import annotations

import json

import pytest

from flowkit.errors import FlowkitError, NotFoundError
from flowkit.eval.datasets import SHARED_DATA, from_path, known_sets, read_csv, subset_corpus


def test_folder_keeps_file_order_and_fields(world):
    ds = from_path(world.dataset)
    assert ds.name == "tinyqa" and ds.corpus.endswith("corpus.jsonl")
    assert [q["id"] for q in ds.first(3)] == ["q1", "q2", "q3"]
    assert ds.first(None) == ds.questions and len(ds.first(0)) == 6
    q2 = ds.questions[1]
    assert q2["answers"] == ["Tessel", "the island of Tessel"] and q2["type"] == "bridge"
    assert q2["supporting_doc_ids"] == ["d1", "d2"] and ds.has_gold_passages


def test_csv_with_and_without_header(tmp_path):
    p = tmp_path / "qa.csv"
    p.write_text('question,answer,type\n"Who, exactly?",Mara Velt|M. Velt,person\nWhen?,1884,\n')
    qs = read_csv(p)
    assert qs[0] == {"id": "q00001", "question": "Who, exactly?", "answers": ["Mara Velt", "M. Velt"],
                     "type": "person"}
    assert qs[1]["answers"] == ["1884"] and "type" not in qs[1]
    bare = tmp_path / "bare.csv"
    bare.write_text("Who?,Mara\nWhere?,Tessel\n")
    ds = from_path(bare)
    assert ds.name == "bare" and [q["answers"] for q in ds.questions] == [["Mara"], ["Tessel"]]
    bad = tmp_path / "bad.csv"
    bad.write_text("question,notes\nWho?,x\n")
    with pytest.raises(FlowkitError, match="question,answer"):
        read_csv(bad)


def test_bad_files(tmp_path):
    with pytest.raises(NotFoundError):
        from_path(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(NotFoundError, match="no questions.jsonl"):
        from_path(tmp_path / "empty")
    dup = tmp_path / "dup.jsonl"
    dup.write_text(json.dumps({"id": "a", "question": "x?", "answers": ["y"]}) + "\n" +
                   json.dumps({"id": "a", "question": "z?", "answers": ["y"]}) + "\n")
    with pytest.raises(FlowkitError, match="appears twice"):
        from_path(dup)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"question": "ok?", "answers": ["y"]}\n{oops\n')
    with pytest.raises(FlowkitError, match="broken.jsonl:2"):
        from_path(broken)


def test_stored_dataset_roundtrip(world):
    ds = from_path(world.dataset)
    world.repo.save_dataset(ds.name, ds.source, ds.questions)
    got = world.repo.get_dataset("tinyqa")
    assert got.size == 6 and got.questions == ds.questions and got.source == ds.source
    world.repo.save_dataset(ds.name, ds.source, ds.questions[:2], kb="test")
    assert world.repo.get_dataset("tinyqa").size == 2 and world.repo.get_dataset("tinyqa").kb == "test"
    assert [d.name for d in world.repo.list_datasets()] == ["tinyqa"]
    with pytest.raises(NotFoundError, match="no dataset named 'x'"):
        world.repo.get_dataset("x")


def test_subset_corpus(world, tmp_path):
    ds = from_path(world.dataset)
    n = subset_corpus(ds, ds.first(2), tmp_path / "sub.jsonl")
    ids = [json.loads(line)["id"] for line in (tmp_path / "sub.jsonl").read_text().splitlines()]
    assert n == 2 and ids == ["d1", "d2"]


def test_shared_sets_are_found_and_read_in_place():
    sets = known_sets()
    assert "hotpotqa_dev_500_ircotfmt" in sets and "sample_questions" in sets
    ds = from_path(sets["hotpotqa_dev_500_ircotfmt"])
    assert len(ds.questions) == 500 and ds.questions[0]["supporting_doc_ids"]
    assert {q["type"] for q in ds.questions} == {"bridge", "comparison"}
    assert ds.source.startswith(str(SHARED_DATA.resolve()))
    sample = from_path(sets["sample_questions"], name="sample_questions")
    assert sample.corpus.endswith("articles.jsonl")

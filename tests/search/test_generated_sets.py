"""A generated question set works unchanged where a gold one does (issue 36, item 3): made by
`flowkit dataset generate` from a knowledge base, it is scored by `flowkit eval` and searched by
`flowkit search`, and no split of it puts one passage on both sides of a search and its
confirmation. The scripted reader of the generator's tests answers from the passages shown, as
the flows' answer operator prompts it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flowkit.search.splits import shared_passages
from flowkit.spec import dump
from flowkit.testing import FakeLLM, MemoryKB, flow
from service.evaluations import eval_repo
from service.workspace import Workspace
from tests.eval.test_questiongen import CORPUS, reader
from tests.search.conftest import World, space_doc

SET = "kb-generated-s0"


@pytest.fixture()
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    ws = Workspace(tmp_path / "home")
    ws.resources.set_llm(FakeLLM([(r"Answer:\s*$", reader)], default="I do not know"))
    ws.resources._kbs["kb"] = MemoryKB("kb", CORPUS)
    monkeypatch.setattr(ws.resources, "kb_names", lambda: ["kb"])   # in memory, not on disk
    good = tmp_path / "files" / "good.json"
    good.parent.mkdir(parents=True)
    dump(flow("good", [("ret", "retrieval.bm25", {"top_k": 2}), ("gen", "generation.answer")],
              ["ret>gen"]), good)
    space = tmp_path / "files" / "space.json"
    space.write_text(json.dumps(space_doc(good)))
    return World(tmp_path, ws, tmp_path / "files", good, space)


def test_a_generated_set_is_evaluated_and_searched_like_a_gold_one(world, fk):
    code, out, err = fk("dataset", "generate", "--kb", "kb", "--n", "6", "--seed", "0")
    assert code == 0, err
    code, listing, err = fk("dataset", "list")
    assert code == 0 and SET in listing, err
    questions = eval_repo(world.ws).find_dataset(SET).questions
    n = len(questions)
    assert n >= 4, out + err
    # every split of a generated set shares no passage: each passage supports one kept question
    for cut in range(1, n):
        assert shared_passages(questions[:cut], questions[cut:]) == 0

    code, out, err = fk("eval", "--flow", str(world.flow), "--dataset", SET, "--kb", "kb")
    assert code == 0, err
    # the summary row: flow, n, failed, EM, F1, ...; the reader answers from retrieved passages
    row = re.search(r"good\W+(\d+)\W+(\d+)\W+([\d.]+)\W+([\d.]+)", out)
    assert row and int(row.group(1)) == n and float(row.group(4)) > 0, out

    half = n // 2
    args = ["search", str(world.space), "--dataset", SET, "--kb", "kb",
            "--search-questions", f"{half + 1}-{n}", "--confirm-questions", f"1-{half}",
            "--budget-calls", "400", "--first-batch", "2"]
    code, out, err = fk(*args)
    assert code == 0, err
    assert "share a supporting passage" not in err
    assert re.search(r"front c0\d", out), out


def test_a_split_that_shares_passages_is_named_in_the_estimate(world, fk):
    """A hand-made set whose confirmation reuses a search question's passage: the search still
    runs, and its estimate says how many confirmation questions are not independent."""
    rows = [{"id": f"q{i}", "question": f"When was {d['title']} founded?", "answers": ["1900"],
             "supporting_doc_ids": [d["id"]]} for i, d in enumerate(CORPUS[:4])]
    rows.append({**rows[0], "id": "q9"})                # the first question's passage again
    ds = world.root / "files" / "handmade"
    ds.mkdir()
    (ds / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = fk("search", str(world.space), "--dataset", str(ds), "--kb", "kb",
                      "--search-questions", "1-3", "--confirm-questions", "4-5",
                      "--budget-calls", "300", "--first-batch", "2", "--estimate")
    assert code == 0, err
    assert "note: 1 confirmation question(s) share a supporting passage" in err

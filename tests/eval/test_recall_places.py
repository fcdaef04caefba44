"""recall@k with gold places: 'file.pdf#p23', 'file.pdf#p23-24', 'file.html#s4' match the
retrieved chunks whose metadata overlaps them; gold document ids score exactly as before."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from flowkit.context import RunContext
from flowkit.eval.datasets import from_path
from flowkit.eval.metrics import Retrieved, gold_found, recall_at_k, retrieved_doc_ids, score
from flowkit.eval.runner import collect_results, make_plan, resolve_flows, run_evaluation
from flowkit.memory import Doc
from flowkit.testing import MemoryKB, fake_resources

TABLE = {"id": "guide#4", "doc_id": "guide", "source": "manual/guide.pdf", "section_id": "s1",
         "section": "Install > Tables", "page_start": 3, "page_end": 4, "kind": "table"}
PROSE = {"id": "notes#0", "doc_id": "notes", "source": "site/notes.html", "section_id": "s4",
         "page_start": 0, "page_end": 0}


def test_a_page_place_is_found_by_a_chunk_whose_pages_overlap_it() -> None:
    rets = [[PROSE, TABLE]]
    assert recall_at_k(rets, ["guide.pdf#p4"]) == 1.0             # the file name of the source
    assert recall_at_k(rets, ["manual/guide.pdf#p2-3"]) == 1.0    # the source, overlapping
    assert recall_at_k(rets, ["guide#p3-9"]) == 1.0               # the doc id
    assert recall_at_k(rets, ["guide.pdf#p5"]) == 0.0             # a page it does not lie on
    assert recall_at_k(rets, ["guide.pdf#p1-2"]) == 0.0
    assert recall_at_k(rets, ["other.pdf#p3"]) == 0.0             # another document
    assert recall_at_k(rets, ["notes.html#p1"]) == 0.0            # a chunk without pages
    assert recall_at_k(rets, ["guide.pdf#p4"], k=1) == 0.0        # ranked 2nd: not in the top 1


def test_a_section_place_is_found_by_a_chunk_of_that_section() -> None:
    rets = [[TABLE], [PROSE]]
    assert recall_at_k(rets, ["notes.html#s4"], k=1) == 1.0       # top 1 of either search
    assert recall_at_k(rets, ["guide.pdf#s1", "guide.pdf#s2"]) == 0.5
    assert recall_at_k(rets, ["notes.html#s1"]) == 0.0


def test_document_ids_score_as_before_and_files_by_their_name() -> None:
    rets: list[list[Retrieved]] = [["d1#0", "d2#3", "d1#1"], ["d3#0", "d1#2"]]
    assert recall_at_k(rets, ["d1", "d3"], k=1) == 1.0
    assert recall_at_k(rets, ["d2", "d9"], k=2) == 0.5
    assert recall_at_k(rets, ["d1#p3", "d1#s0"]) == 0.0           # a place needs the metadata
    assert recall_at_k(rets, []) is None and recall_at_k([], ["d1"]) == 0.0
    mixed: list[list[Retrieved]] = [["d1#0", TABLE]]
    assert retrieved_doc_ids(mixed) == ["d1", "guide"]
    assert recall_at_k(mixed, ["d1", "guide"]) == 1.0
    assert recall_at_k(mixed, ["guide.pdf"]) == 1.0               # a whole file, by its name
    assert recall_at_k([["guide#4"]], ["guide.pdf"]) == 0.0       # an id alone names no file
    assert gold_found("guide#4", [TABLE]) and not gold_found("guide#4", ["guide#4"])


def test_score_keeps_document_ids_in_retrieved() -> None:
    q = {"id": "q1", "question": "Size of bigint?", "answers": ["8 bytes"],
         "supporting_doc_ids": ["guide.pdf#p4", "notes.html#s9"]}
    r = score("naive", q, "8 bytes", retrievals=[[PROSE, TABLE]], k=5)
    assert (r.em, r.recall, r.retrieved) == (1.0, 0.5, ["notes", "guide"])


def test_a_recorded_retrieval_keeps_the_place_of_each_chunk() -> None:
    ctx = RunContext(fake_resources(docs=[]), "test", "node", 1)
    meta = {k: v for k, v in TABLE.items() if k != "id"} | {"title": "Guide > Tables",
                                                           "chunks_in_doc": 9}
    ctx.record_retrieval("q", "bm25", [Doc(id="guide#4", text="t", title="T", score=1.0,
                                           meta=meta),
                                       Doc(id="x#0", text="u", title="U", score=0.5, meta={})])
    first, second = ctx.retrievals[0].docs
    assert first["meta"] == {k: v for k, v in TABLE.items() if k != "id"}
    assert "meta" not in second


def test_an_evaluation_scores_gold_places_from_its_stored_runs(world: Any, tmp_path: Path) -> None:
    chunks = [{"id": "guide#0", "title": "Guide > Install", "doc_id": "guide",
               "source": "manual/guide.pdf", "section_id": "s0", "page_start": 1, "page_end": 2,
               "text": "Install the server with the package manager."},
              {"id": "guide#1", "title": "Guide > Tables", "doc_id": "guide",
               "source": "manual/guide.pdf", "section_id": "s1", "page_start": 3, "page_end": 4,
               "text": "Numeric types\nName | Storage size\nbigint | 8 bytes"}]
    world.ws.resources._kbs["test"] = MemoryKB("test", chunks)
    ds = tmp_path / "places"
    ds.mkdir()
    questions = [{"id": "p1", "question": "What is the storage size of bigint?",
                  "answers": ["8 bytes"], "supporting_doc_ids": ["guide.pdf#p4"]},
                 {"id": "p2", "question": "How do I install the server with the package manager?",
                  "answers": ["package manager"], "supporting_doc_ids": ["guide.pdf#s9", "guide"]}]
    (ds / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    data = from_path(ds)
    assert data.questions[0]["supporting_doc_ids"] == ["guide.pdf#p4"]    # accepted as given
    world.repo.save_dataset(data.name, data.source, data.questions)
    plan = make_plan(resolve_flows(world.ws, [str(world.vague)]), data.name, data.questions,
                     "test")
    assert run_evaluation(world.ws, world.repo, plan).status == "done"
    stored = world.repo.retrievals(plan.eval_id)
    first = next(iter(stored.values()))[0][0]
    assert isinstance(first, dict) and first["source"] == "manual/guide.pdf"
    res = collect_results(plan, world.repo.runs(plan.eval_id), stored, k=1)["vague"]
    assert [r.recall for r in res] == [1.0, 0.5]

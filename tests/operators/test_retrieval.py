"""Search operators over the in-memory KB: query choice and keeping earlier rounds' passages."""
from __future__ import annotations

from typing import Any

from flowkit.testing import run_operator

Q = "Where was Mara Velt born?"


def ids(out: dict[str, Any]) -> list[str]:
    return [d["id"] for d in out["documents"]]


def test_search_replaces_documents_by_default() -> None:
    earlier = [{"id": "d3", "title": "Tessel", "text": "Tessel holds a lantern festival."}]
    out = run_operator("retrieval.bm25", {"question": Q, "documents": earlier}, top_k=1)
    assert ids(out) == ["d2"]
    assert out["candidates"][0][0]["id"] == "d2"


def test_keep_previous_puts_earlier_passages_first_without_duplicates() -> None:
    earlier = [{"id": "d3", "title": "Tessel", "text": "Tessel holds a lantern festival."},
               {"id": "d2", "title": "Mara Velt", "text": "Mara Velt was born on Tessel."},
               {"id": "d1", "title": "Corren", "text": "The lighthouse."}]
    memory = {"question": Q, "queries": ["Mara Velt island born"], "documents": earlier}
    out = run_operator("retrieval.hybrid", memory, top_k=2, keep_previous=2,
                       query_from="queries")
    # the first two earlier passages stay ahead; the new search's d2 is not repeated, d1 follows
    assert ids(out)[:2] == ["d3", "d2"]
    assert ids(out).count("d2") == 1 and len(ids(out)) == len(set(ids(out)))
    assert "d1" in ids(out)
    # without earlier passages (the first round) it is a plain search
    first = run_operator("retrieval.hybrid", {"question": Q}, top_k=2, keep_previous=2)
    assert ids(first)[0] == "d2"

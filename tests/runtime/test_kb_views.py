"""Views of a chunk (flowkit/runtime/kb_views.py): each table row with its caption and header, and
runs of sentences, searched beside the chunks and returned as the chunk they stand for."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flowkit.ingest import ingest
from flowkit.runtime.kb_views import VIEW_MARK, best_of, has_views, view_texts, views_of
from flowkit.runtime.resources import Resources

TABLE = ("Pump Weights\nModel | Weight | Plant\nK-1 | 12 kg | Tarn\nK-2 | 14 kg | Osk\n"
         "K-3 | 19 kg | Tarn")


def test_a_row_view_carries_the_caption_and_the_header() -> None:
    views = view_texts(TABLE)
    assert views == [("Pump Weights\nModel | Weight | Plant\nK-1 | 12 kg | Tarn", True),
                     ("Pump Weights\nModel | Weight | Plant\nK-2 | 14 kg | Osk", True),
                     ("Pump Weights\nModel | Weight | Plant\nK-3 | 19 kg | Tarn", True)]


def test_a_long_line_above_a_table_is_prose_not_its_caption() -> None:
    above = "This sentence says a lot about the pumps that follow, more than a caption would ever say."
    text = above + "\nModel | Weight\nK-1 | 12 kg\nK-2 | 14 kg"
    rows = [v for v, row in view_texts(text) if row]
    assert rows == ["Model | Weight\nK-1 | 12 kg", "Model | Weight\nK-2 | 14 kg"]


def test_sentence_runs_of_two_with_stride_one() -> None:
    text = "The valve opens at 3 bar. It closes at 1 bar. The seal is rubber. Replace it yearly."
    assert view_texts(text) == [("The valve opens at 3 bar. It closes at 1 bar.", False),
                                ("It closes at 1 bar. The seal is rubber.", False),
                                ("The seal is rubber. Replace it yearly.", False)]


def test_a_chunk_that_is_its_own_view_has_none() -> None:
    assert view_texts("One sentence. Two sentences.") == []
    assert view_texts("Model | Weight\nK-1 | 12 kg") == []          # a header and one row


def test_a_hostile_chunk_of_many_rows_gives_one_view_a_row_and_no_more() -> None:
    rows = "\n".join(f"{n} | x" for n in range(5000))
    views = view_texts("A | B\n" + rows + "\n" + "Word. " * 3000)
    assert sum(row for _, row in views) == 5000
    assert sum(not row for _, row in views) == 2999           # runs of two of 3,000 sentences


def test_only_structure_chunks_get_views() -> None:
    assert has_views({"kind": "table"}) and has_views({"kind": "text"})
    assert not has_views({}) and not has_views(None) and not has_views({"title": "x"})
    views = views_of([("a#0", TABLE, {"kind": "table"}), ("b#0", TABLE, {"title": "fixed"})])
    assert [v.id for v in views] == [f"a#0{VIEW_MARK}{n}" for n in range(3)]
    assert {v.parent for v in views} == {"a#0"}


def test_best_of_keeps_each_chunk_once_at_its_best_rank() -> None:
    parents = {"a::v0": "a", "a::v1": "a", "b::v0": "b"}
    ranked = [("a::v1", 9.0), ("b", 8.0), ("a", 7.0), ("b::v0", 6.0), ("c", 5.0)]
    assert best_of(ranked, parents, 5) == [("a", 9.0), ("b", 8.0), ("c", 5.0)]
    assert best_of(ranked, parents, 2) == [("a", 9.0), ("b", 8.0)]


# ---- the real embedder and a real Chroma ---------------------------------------------------
PLANTS = ("Tarn", "Osk", "Brill", "Vance", "Lumo", "Dorr")
NAMES = ("otter badger falcon heron lynx marten osprey puffin raven stoat swift tern vole wren "
         "bison camel dingo eland ferret gecko hyena ibex jackal koala lemur moose newt okapi "
         "panda quail robin sloth tapir urchin viper walrus yak zebra alpaca beaver cobra donkey "
         "egret finch gibbon hare iguana jaguar kiwi llama mole narwhal ocelot parrot quokka "
         "rhino seal toad crane stork").split()


def _manual(tmp_path: Path) -> Path:
    """A page with a 60-row table (more than one chunk) and a section of prose."""
    rows = "".join(f"<tr><td>{NAMES[n]} pump</td><td>{10 + n} kg</td><td>{PLANTS[n % 6]} plant"
                   f"</td></tr>" for n in range(60))
    page = tmp_path / "pumps.html"
    page.write_text(
        "<html><body><h1>Pump Handbook</h1><h2>Weights</h2><table><caption>Pump Weights"
        "</caption><thead><tr><th>Model</th><th>Weight</th><th>Plant</th></tr></thead>"
        f"<tbody>{rows}</tbody></table><h2>Care</h2><p>Oil the bearings every spring. The "
        "Harlow gasket is replaced after ninety cycles. A cracked housing voids the warranty. "
        "Store the pump dry.</p></body></html>", encoding="utf-8")
    return page


@pytest.mark.real
def test_a_late_row_is_found_as_its_chunk_by_dense_and_bm25(tmp_path: Path,
                                                            real_resources: Any) -> None:
    res = Resources(tmp_path / "data")
    res.set_embedder(real_resources.embedder)
    page = _manual(tmp_path)
    chunks = ingest(res, "pumps", [page])
    kb = res.kb("pumps")
    meta = kb.meta()
    assert meta["row_views"] == 60 and meta["views"] >= 61 and kb.count() == chunks
    for search in (kb.dense, kb.lexical):
        found = search("How much does the narwhal pump weigh?", 3)
        ids = [d["id"] for d in found]
        assert len(ids) == len(set(ids)) and not any(VIEW_MARK in i for i in ids), ids
        assert "narwhal pump | 61 kg" in found[0]["text"], (search.__name__, found[0]["text"][:200])
    top = kb.lexical("When is the Harlow gasket replaced?", 1)[0]
    assert "ninety cycles" in top["text"] and top["meta"]["section"].endswith("Care")
    # a manual's BM25 stems: the question's "replacement" finds the text's "replaced"
    assert kb.bm25.stemmed
    top = kb.lexical("Harlow gasket replacement interval", 1)[0]
    assert "ninety cycles" in top["text"]

    ingest(res, "pumps", [page])                                   # again: no stale views
    col = res.store.collection("pumps", views=True)
    assert col.count() == 60 and res.kb("pumps").count() == chunks
    res.kb("pumps").drop()
    assert not res.store.has_views("pumps")
    # fixed windows (the sample, datasets' corpora) are searched as they always were: unstemmed
    ingest(res, "windows", [page], chunker="indexing.chunk_fixed")
    assert not res.kb("windows").bm25.stemmed

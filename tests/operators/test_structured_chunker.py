"""indexing.chunk_structure: sections kept together, table rows never cut, caption and header
repeated, pages and section path in the metadata; the default chunker of a new knowledge base."""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from flowkit import compile_flow, run_flow
from flowkit.documents.model import STRUCTURE_KEY, Block, Document, Section, Table
from flowkit.documents.provenance import provenance
from flowkit.ingest import (
    CORPUS_CHUNKER,
    DEFAULT_CHUNKER,
    SAMPLE_DIR,
    SAMPLE_KB,
    chunker_for,
    ingest,
    ingest_unless_ready,
)
from flowkit.operators.indexing.chunking import FixedChunker
from flowkit.operators.indexing.structured import StructureChunker, cut_long
from flowkit.run_request import RunRequest
from flowkit.runtime.kb import Chunk, _clean_meta
from flowkit.runtime.resources import Resources
from flowkit.testing import HashEmbedder, fake_resources, flow
from flowkit.text import split_sentences

CAPTION = "Table 3.1. Numeric types"
HEADER = ("Name", "Storage size", "Description")
ROWS = tuple((f"type{i}", f"{i % 8 + 1} bytes", f"an integer type number {i} of the manual")
             for i in range(30))


def words(n: int, stem: str = "word") -> str:
    """n words as sentences of ten."""
    out = [f"{stem}{i}" for i in range(n)]
    return " ".join(w + ("." if i % 10 == 9 else "") for i, w in enumerate(out))


def guide(tail: str = "Sizes are in bytes on every platform.") -> Document:
    table = Table(HEADER, ROWS, CAPTION)
    intro = Section("s0", ("Introduction",), (
        Block("text", "The guide explains how to install the server.", pages=(1,)),
        Block("text", words(30, "intro"), pages=(2,))))
    tables = Section("s1", ("Install", "Tables"), (
        Block("text", "The types are listed below.", pages=(3,)),
        Block("table", table=table, pages=(3, 4)),
        Block("text", tail, pages=(4,))))
    return Document("guide", "Guide", "manual/guide.pdf", "pdf", (intro, tables),
                    {"edition": 15})


def chunker(**params: Any) -> StructureChunker:
    return StructureChunker("chunk", StructureChunker.Params(**params))


def chunks_of(doc: Document, **params: Any) -> list[Chunk]:
    return chunker(**params).chunk([doc.record()])


def test_table_rows_are_never_cut_and_caption_and_header_head_every_table_chunk() -> None:
    chunks = chunks_of(guide(), max_words=60, min_words=10)
    tables = [c for c in chunks if c.meta["kind"] == "table"]
    assert len(tables) > 3                                        # the table needed several
    lines = [c.text.split("\n") for c in chunks]
    for row in ROWS:
        line = " | ".join(row)
        assert sum(ls.count(line) for ls in lines) == 1          # whole, in exactly one chunk
    for c in tables:
        first, second, *rows = c.text.split("\n")
        assert (first, second) == (CAPTION, " | ".join(HEADER)) and rows
        assert len(c.text.split()) <= 60
        assert (c.meta["page_start"], c.meta["page_end"]) == (3, 4)
        assert c.meta["section"] == "Install > Tables" and c.meta["section_id"] == "s1"
        assert c.meta["title"] == "Guide > Tables" and c.meta["doc_title"] == "Guide"
        assert provenance(c.meta) == "manual/guide.pdf pp. 3-4, Install > Tables"
    assert sum(len(c.text.split("\n")) - 2 for c in tables) == len(ROWS)   # no row twice


def test_sections_pages_ids_and_scalar_metadata() -> None:
    chunks = chunks_of(guide(), max_words=60, min_words=10)
    assert [c.id for c in chunks] == [f"guide#{i}" for i in range(len(chunks))]
    first = chunks[0]
    assert first.text.startswith("The guide explains")            # no path put before the text
    assert first.meta | {"position": 0} == {
        "title": "Guide > Introduction", "source": "manual/guide.pdf", "format": "pdf",
        "edition": 15, "doc_id": "guide", "position": 0, "chunks_in_doc": len(chunks),
        "doc_title": "Guide", "section": "Introduction", "section_id": "s0",
        "page_start": 1, "page_end": 2, "kind": "text"}
    assert provenance(first.meta) == "manual/guide.pdf pp. 1-2, Introduction"
    for c in chunks:
        assert STRUCTURE_KEY not in c.meta
        assert all(isinstance(v, (str, int, float, bool)) for v in c.meta.values())
        assert _clean_meta(c.meta) == c.meta                       # Chroma takes it as it is
    # the text before the table ends its chunk; the note after it is a chunk of the section
    assert chunks[1].text == "The types are listed below." and chunks[1].meta["page_end"] == 3
    assert chunks[-1].text.startswith("Sizes are in bytes") and chunks[-1].meta["page_start"] == 4


def test_a_small_table_joins_the_text_before_it_and_a_tiny_note_after_it() -> None:
    small = Table(("Key", "Value"), (("port", "5432"), ("user", "admin")), "Defaults")
    doc = Document("d", "Setup", "setup.html", "html", (Section("s0", ("Setup",), (
        Block("text", "The defaults are these."), Block("table", table=small),
        Block("text", "Change them later."))),))
    (only,) = chunks_of(doc)
    assert only.text == ("The defaults are these.\n\nDefaults\nKey | Value\nport | 5432\n"
                         "user | admin\n\nChange them later.")
    assert (only.meta["page_start"], only.meta["page_end"], only.meta["kind"]) == (0, 0, "text")
    assert provenance(only.meta) == "setup.html, Setup" and only.meta["title"] == "Setup"


def test_a_long_paragraph_is_cut_at_sentences_then_words() -> None:
    long_para = words(95)                                        # sentences of ten words
    pieces = cut_long(long_para, 40)
    assert [len(p.split()) for p in pieces] == [40, 40, 15]
    assert all(p.endswith(".") for p in pieces[:2])
    assert " ".join(pieces) == " ".join(split_sentences(long_para))
    one_sentence = " ".join(f"w{i}" for i in range(90))
    assert [len(p.split()) for p in cut_long(one_sentence, 40)] == [40, 40, 10]
    doc = Document("d", "D", "d.txt", "txt", (Section("s0", (), (Block("text", long_para),)),))
    chunks = chunks_of(doc, max_words=40, min_words=10)
    assert [len(c.text.split()) for c in chunks] == [40, 40, 15]


def test_a_table_row_longer_than_max_words_is_still_whole() -> None:
    row = ("k", " ".join(["long"] * 50))
    doc = Document("d", "D", "d.pdf", "pdf", (Section("s0", ("T",), (
        Block("table", table=Table(("Key", "Text"), (row, ("a", "b"))), pages=(2,)),)),))
    chunks = chunks_of(doc, max_words=20, min_words=5)
    assert [c.text.split("\n") for c in chunks] == [["Key | Text", " | ".join(row)],
                                                   ["Key | Text", "a | b"]]


def test_an_old_style_record_without_structure_is_chunked_by_paragraphs() -> None:
    record = {"id": "velt", "title": "Mara Velt", "text": "Mara Velt was born on Tessel.\n\n"
              "She designed the Corren Lighthouse.", "source": "bio.txt", "year": 1990}
    (c,) = chunker().chunk([record])
    assert c.id == "velt#0" and c.text == ("Mara Velt was born on Tessel.\n\n"
                                           "She designed the Corren Lighthouse.")
    assert c.meta == {"title": "Mara Velt", "source": "bio.txt", "year": 1990, "doc_id": "velt",
                      "position": 0, "chunks_in_doc": 1, "doc_title": "Mara Velt", "section": "",
                      "section_id": "s0", "page_start": 0, "page_end": 0, "kind": "text"}
    assert provenance(c.meta) == "bio.txt"


def test_the_older_chunkers_never_store_the_typed_document() -> None:
    fixed = FixedChunker("chunk", FixedChunker.Params(size=20, overlap=0))
    for c in fixed.chunk([guide().record()]):
        assert STRUCTURE_KEY not in c.meta and _clean_meta(c.meta) == c.meta


def test_params_and_split_in_a_flow() -> None:
    with pytest.raises(ValidationError, match="min_words .* must be smaller than max_words"):
        StructureChunker.Params(max_words=40, min_words=40)
    with pytest.raises(ValidationError):
        StructureChunker.Params(max_words=10)
    assert chunker(max_words=25, min_words=5).split(f"{words(20, 'a')}\n\n{words(20, 'b')}\n\nshort one.") == [
        words(20, "a"), f"{words(20, 'b')}\n\nshort one."]
    spec = flow("s", [("ret", "retrieval.bm25", {"top_k": 1}),
                      ("chunk", "indexing.chunk_structure", {"max_words": 20, "min_words": 5}),
                      ("gen", "generation.answer")], ["ret>chunk", "chunk>gen"])
    text = f"{words(15, 'a')}\n\n{words(15, 'b')} Lighthouse."
    res = fake_resources(docs=[{"id": "velt", "title": "Velt", "text": text}])
    result = run_flow(compile_flow(spec), res, RunRequest("Lighthouse?", kb="test"))
    assert result.status == "ok", result.error
    assert [d["id"] for d in result.memory["documents"]] == ["velt/0", "velt/1"]


def test_new_knowledge_bases_default_to_the_structure_chunker(tmp_path: Path) -> None:
    from service.cli.kb import register
    from service.knowledge import ingest_files
    assert DEFAULT_CHUNKER == "indexing.chunk_structure" and CORPUS_CHUNKER == "indexing.chunk_fixed"
    assert inspect.signature(ingest).parameters["chunker"].default is None
    assert inspect.signature(ingest_files).parameters["chunker"].default is None
    assert inspect.signature(ingest_unless_ready).parameters["chunker"].default == CORPUS_CHUNKER
    import argparse
    sub = argparse.ArgumentParser().add_subparsers()
    register(sub)
    assert sub.choices["ingest"].parse_args(["--kb", "k", "f.md"]).chunker is None
    assert chunker_for("notes", {}) == (DEFAULT_CHUNKER, None)
    assert chunker_for(SAMPLE_KB, {}) == (CORPUS_CHUNKER, None)
    own = {"chunker": "indexing.chunk_sentences", "chunker_params": {"max_words": 50}}
    assert chunker_for("notes", own) == ("indexing.chunk_sentences", {"max_words": 50})
    assert chunker_for("notes", own, params={"max_words": 80}) == (
        "indexing.chunk_sentences", {"max_words": 80})
    assert chunker_for("notes", own, "indexing.chunk_fixed") == ("indexing.chunk_fixed", None)

    res = Resources(tmp_path)
    res.set_embedder(HashEmbedder())
    md = tmp_path / "notes.md"
    md.write_text("# Notes\n\nThe port is 5432.\n\nThe user is admin.\n")
    assert ingest(res, "notes", [md]) >= 1
    assert res.kb("notes").meta()["chunker"] == DEFAULT_CHUNKER
    ingest_unless_ready(res, SAMPLE_KB, [SAMPLE_DIR / "articles.jsonl"])
    assert res.kb(SAMPLE_KB).meta()["chunker"] == CORPUS_CHUNKER


def test_the_embedder_reads_the_section_path_the_text_stays_the_documents() -> None:
    chunks = chunks_of(guide(), max_words=60, min_words=10, table_words=30)
    table = next(c for c in chunks if c.meta["kind"] == "table")
    assert table.context == "Guide > Install > Tables"
    assert table.embedded_text() == f"Guide > Install > Tables\n{table.text}"
    assert not table.text.startswith("Guide")                      # shown text unchanged
    assert max(len(c.text.split()) for c in chunks if c.meta["kind"] == "table") <= 30 or \
        all(len(c.text.split("\n")) == 3 for c in chunks if c.meta["kind"] == "table")
    plain = chunks_of(guide(), max_words=60, min_words=10, context_header=False)
    assert {c.context for c in plain} == {""}

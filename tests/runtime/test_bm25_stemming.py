"""BM25 with English stemming (flowkit/runtime/bm25.py): an index built stemmed matches a word's
other forms, remembers that it was stemmed, and an unstemmed index reads queries as before."""
from __future__ import annotations

from pathlib import Path

from flowkit.runtime.bm25 import BM25Index

TEXTS = ["Function | Overwrite if already exists? | Create if does not exist?\njson_set() | Yes | Yes",
         "The gasket is replaced after ninety cycles.",
         "Oil the bearings every spring."]
IDS = ["json#1", "care#1", "care#2"]


def test_a_stemmed_index_matches_other_forms_of_a_word(tmp_path: Path) -> None:
    index = BM25Index(tmp_path / "bm25")
    index.build(IDS, TEXTS, stem=True)
    assert index.stemmed
    assert index.search("which function overwrites existing values and creates missing ones",
                        1)[0][0] == "json#1"
    assert index.search("gasket replacement", 1)[0][0] == "care#1"


def test_the_index_remembers_it_was_stemmed(tmp_path: Path) -> None:
    BM25Index(tmp_path / "bm25").build(IDS, TEXTS, stem=True)
    again = BM25Index(tmp_path / "bm25")                     # read back from disk
    assert again.stemmed and again.search("replacement", 1)[0][0] == "care#1"


def test_an_unstemmed_index_reads_queries_as_before(tmp_path: Path) -> None:
    index = BM25Index(tmp_path / "bm25")
    index.build(IDS, TEXTS)
    assert not index.stemmed
    assert index.search("replacement", 3) == []              # 'replacement' is not 'replaced'
    assert index.search("replaced", 1)[0][0] == "care#1"
    index.build(IDS, TEXTS, stem=True)                         # rebuilt stemmed: the flag follows
    index.build(IDS, TEXTS)
    assert not BM25Index(tmp_path / "bm25").stemmed


def test_hostile_queries_on_a_stemmed_index_answer_plainly(tmp_path: Path) -> None:
    index = BM25Index(tmp_path / "bm25")
    index.build(IDS, TEXTS, stem=True)
    for query in ("", "   ", "?!,;|||", "\x00\x01\u202e\U0001f600", "the of and",
                  "gasket " * 50_000, "é" * 10_000, "replac\u0301ement"):
        hits = index.search(query, 3)
        assert all(cid in IDS and score > 0 for cid, score in hits), (query[:20], hits)
    assert index.search("gasket " * 50_000, 1)[0][0] == "care#1"      # a huge query still reads

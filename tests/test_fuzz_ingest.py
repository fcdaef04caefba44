"""Property-based fuzzing of `flowkit ingest` inputs (.jsonl, .txt, .md, random bytes).

Real Chroma and BM25 in a temporary folder, the HashEmbedder fake (no model loads). For every
input: only the project's typed errors escape, a refusal names the file, and a refused ingest does
not leave the knowledge base listed (nor with 0 chunks).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowkit.errors import FlowkitError
from flowkit.ingest import ingest
from flowkit.runtime import docfiles
from flowkit.runtime.resources import Resources
from flowkit.testing import HashEmbedder

FUZZ = settings(max_examples=120, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
KB = "fuzz"


@pytest.fixture(scope="module")
def res(tmp_path_factory: pytest.TempPathFactory) -> Resources:
    r = Resources(tmp_path_factory.mktemp("fuzz-ingest"))
    r.set_embedder(HashEmbedder())
    return r


def check_ingest(res: Resources, path: Path) -> None:
    assert KB not in res.kb_names()
    try:
        n = ingest(res, KB, [path])
    except FlowkitError as err:
        assert path.name in str(err) or "no text" in str(err), str(err)
        assert len(str(err)) < 1000
        assert KB not in res.kb_names(), "a refused ingest left the KB listed"
        res.kb(KB).drop()                                # chunks a failed upsert may have left
        return
    kb = res.kb(KB)
    assert n > 0 and KB in res.kb_names() and kb.count() == n
    assert kb.lexical("the", 3) is not None
    kb.drop()


GOOD = [{"id": "a", "title": "Alpha", "text": "Alpha is the first letter."},
        {"id": "b", "title": "Beta", "text": "Beta comes after alpha.", "year": 1990}]
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**80, 2**80), st.floats(allow_nan=True),
    st.text(max_size=20), st.sampled_from(["\ud800", "", "a", [], {}, [1, {"x": 2}]]),
    st.integers(20, 80).map(lambda d: json.loads("[" * d + "]" * d)))


def _line(obj: Any) -> bytes:
    return json.dumps(obj).encode()


@FUZZ
@given(data=st.data())
def test_jsonl_structure(res: Resources, tmp_path_factory: pytest.TempPathFactory,
                         data: st.DataObject) -> None:
    docs = [dict(d) for d in GOOD]
    for _ in range(data.draw(st.integers(0, 3))):
        d = docs[data.draw(st.integers(0, len(docs) - 1))]
        d[data.draw(st.sampled_from(["id", "title", "text", "year", "", "chroma:x", "meta"]))] = \
            data.draw(VALUES)
    if data.draw(st.booleans()):
        docs.append(dict(docs[0]))                       # duplicate id
    path = tmp_path_factory.mktemp("j") / "docs.jsonl"
    path.write_bytes(b"\n".join(_line(d) for d in docs))
    check_ingest(res, path)


_TOKENS = st.sampled_from([b"\xff", b"\x00", b"[" * 100, b"NaN", b"\\ud800", b"\n", b"{", b'"'])


@FUZZ
@given(edits=st.lists(st.tuples(st.integers(0, 400), st.one_of(_TOKENS, st.binary(max_size=6))),
                      min_size=1, max_size=5))
def test_jsonl_bytes(res: Resources, tmp_path_factory: pytest.TempPathFactory,
                     edits: list) -> None:
    raw = bytearray(b"\n".join(_line(d) for d in GOOD))
    for pos, insert in edits:
        pos %= len(raw) + 1
        raw[pos:pos] = insert
    path = tmp_path_factory.mktemp("b") / "docs.jsonl"
    path.write_bytes(bytes(raw))
    check_ingest(res, path)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=400), suffix=st.sampled_from([".txt", ".md", ".jsonl"]))
def test_random_files(res: Resources, tmp_path_factory: pytest.TempPathFactory, raw: bytes,
                      suffix: str) -> None:
    path = tmp_path_factory.mktemp("r") / f"doc{suffix}"
    path.write_bytes(raw)
    check_ingest(res, path)


def test_named_refusals(res: Resources, tmp_path: Path) -> None:
    cases = {"bad.jsonl": (b'{"id": "1", "text": "ok"}\n\xff\xfe\n', "bad.jsonl:2: not UTF-8"),
             "deep.jsonl": (b"[" * 5000 + b"]" * 5000, "deep.jsonl:1: JSON nested deeper"),
             "dup.jsonl": (b'{"id": "1", "text": "a"}\n{"id": "1", "text": "b"}\n',
                           "dup.jsonl:2: duplicate id '1' (first at"),
             "nan.jsonl": (b'{"id": "1", "text": "a", "x": NaN}\n', "nan.jsonl:1:"),
             # undecodable text is refused, not silently replaced by U+FFFD
             "latin1.txt": ("Café in Corren\n".encode("latin-1"),
                            "latin1.txt: not UTF-8 text: byte 0xe9 at offset 3 (line 1)"),
             "notes.md": (b"# Notes\n\nok\n\xff", "notes.md: not UTF-8 text: byte 0xff")}
    for name, (raw, message) in cases.items():
        (tmp_path / name).write_bytes(raw)
        with pytest.raises(FlowkitError, match=re.escape(message)):
            ingest(res, KB, [tmp_path / name])
        assert KB not in res.kb_names()
    big = tmp_path / "big.txt"
    with big.open("wb") as f:                          # sparse: no real disk used
        f.truncate(docfiles.MAX_FILE_BYTES + 1)
    with pytest.raises(FlowkitError, match=r"big.txt: 536,870,913 bytes is more than one ingest"):
        ingest(res, KB, [big])
    assert KB not in res.kb_names()
    good = tmp_path / "good.jsonl"
    good.write_bytes(b"\n".join(_line(d) for d in GOOD))
    assert ingest(res, KB, [good]) == 2 and res.kb(KB).count() == 2
    res.kb(KB).drop()

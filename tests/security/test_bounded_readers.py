"""Hostile inputs for every reader of untrusted files and forms (issue 39 item 4): question sets,
search spaces and the replay page's memory-edit form go through the bounded reader
(flowkit.jsonread) and answer each input with one clear error naming the file, line or field,
never a traceback, a hang or an unbounded read.

Each corpus lists inputs that failed before this round (a traceback, an unbounded read, or a
value accepted that nothing downstream can use); a few that already had a clear error are kept
as regressions and marked so.
"""
from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from flowkit.errors import FlowkitError
from flowkit.eval.datasets import Dataset, from_path, subset_corpus
from flowkit.search.space import SpaceError, load_space
from studio.replay.replay import parse_memory_change, parse_param_changes


def _line(**fields: Any) -> str:
    return json.dumps({"question": "Who?", "answers": ["Mara"], **fields})


def _jsonl(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8")


DEEP = "[" * 100_000 + "]" * 100_000
BIG_INT = "1" * 5_000

#: (name, file name, content, regex of the one-line error). All failed before unless noted.
DATASET_REFUSED: list[tuple[str, str, bytes, str]] = [
    ("answers is an object", "q.jsonl", _jsonl(_line(answers={"a": 1})),
     r"line 1: field 'answers' must be a list of texts, got an object"),
    ("answer nested in a list", "q.jsonl", _jsonl(_line(answers=[[1, 2]])),
     r"line 1: field 'answers\[0\]' must be text, got a list"),
    ("answer is a boolean", "q.jsonl", _jsonl(_line(answers=[True])),
     r"field 'answers\[0\]' must be text, got a boolean"),
    ("question is a list", "q.jsonl", _jsonl(_line(question=["Who?"])),
     r"line 1: field 'question' must be text, got a list"),
    ("question is a number", "q.jsonl", _jsonl(_line(question=5)),
     r"field 'question' must be text, got int"),
    ("doc ids an object", "q.jsonl", _jsonl(_line(supporting_doc_ids={"d1": 1})),
     r"field 'supporting_doc_ids' must be a list of texts"),
    ("id is an object", "q.jsonl", _jsonl(_line(id={"a": 1})),
     r"field 'id' must be text, got an object"),
    ("type is a list", "q.jsonl", _jsonl(_line(type=["x"])), r"field 'type' must be text"),
    ("invalid UTF-8", "q.jsonl", b'{"question": "Who\xff?", "answers": ["x"]}\n',
     r"not UTF-8 text: byte 0xff at offset 17 \(line 1\)"),
    ("invalid UTF-8 in a CSV", "q.csv", b"question,answer\nWho\xfe?,Mara\n",
     r"not UTF-8 text: byte 0xfe .*line 2"),
    ("CSV field over 131,072 characters", "q.csv",
     b'question,answer\n"' + b"x" * 140_000 + b'",Mara\n',
     r"line 2: not a readable CSV row \(field larger than field limit"),
    ("5,000-digit integer answer", "q.jsonl",
     _jsonl('{"question": "Who?", "answers": [' + BIG_INT + "]}"),
     r"q.jsonl:1: .*integer of 5,000 digits.*\[number_too_long\]"),
    ("5,000-digit integer id", "q.jsonl",
     _jsonl('{"id": ' + BIG_INT + ', "question": "Who?", "answers": ["x"]}'),
     r"\[number_too_long\]"),
    ("deep nesting", "q.jsonl", _jsonl('{"question": "Who?", "answers": ' + DEEP + "}"),
     r"q.jsonl:1: JSON nested deeper than 16 levels \[too_deep\]"),
    ("NaN answer", "q.jsonl", _jsonl('{"question": "Who?", "answers": [NaN]}'),
     r"NaN is not a number JSON allows \[non_finite_number\]"),
    ("1e999 answer", "q.jsonl", _jsonl('{"question": "Who?", "answers": [1e999]}'),
     r"out of range \[non_finite_number\]"),
    ("lone surrogate", "q.jsonl", _jsonl('{"question": "Who\\ud800?", "answers": ["x"]}'),
     r"lone surrogate U\+D800.*\[bad_text\] \(field 'question'\)"),
    ("duplicate key", "q.jsonl", _jsonl('{"question": "A?", "question": "B?", "answers": ["x"]}'),
     r"appears more than once.*\[duplicate_key\]"),
    ("300,000-character question", "q.jsonl", _jsonl(_line(question="x" * 300_000)),
     r"field 'question' has 300,000 characters; at most 20,000"),
    ("5,000 answers", "q.jsonl", _jsonl(_line(answers=["a"] * 5_000)),
     r"field 'answers' has 5,000 entries; at most 1,000"),
    ("NUL in a question", "q.csv", b"question,answer\nWho\x00?,Mara\n",
     r"line 2: field 'question' holds a NUL character"),
    # regressions: these already had a clear error
    ("a line that is a list (regression)", "q.jsonl", _jsonl("[1, 2]"),
     r"q.jsonl:1: each line must be a JSON object, got a list"),
    ("broken JSON (regression)", "q.jsonl", _jsonl(_line(), "{oops"),
     r"q.jsonl:2: not valid JSON at line 1, column 2"),
]


@pytest.mark.parametrize("name, filename, content, error", DATASET_REFUSED,
                         ids=[c[0] for c in DATASET_REFUSED])
def test_a_hostile_dataset_file_is_one_clear_error(tmp_path: Path, name: str, filename: str,
                                                   content: bytes, error: str) -> None:
    path = tmp_path / filename
    path.write_bytes(content)
    with pytest.raises(FlowkitError) as info:
        from_path(path)
    message = str(info.value)
    assert re.search(error, message), message
    assert str(path) in message and "\n" not in message and len(message) < 400


def test_numbers_where_text_is_expected_are_read_as_text(tmp_path: Path) -> None:
    """`answers: 5` and `supporting_doc_ids: 7` were TypeError tracebacks; a number is an answer
    (a year) or an id, so it is read as its text."""
    path = tmp_path / "q.jsonl"
    path.write_bytes(_jsonl(_line(id=12, answers=5, supporting_doc_ids=7),
                            _line(answers=[1884, 2.5])))
    first, second = from_path(path).questions
    assert first == {"id": "12", "question": "Who?", "answers": ["5"],
                     "supporting_doc_ids": ["7"]}
    assert second["answers"] == ["1884", "2.5"]


def test_a_fifo_or_a_device_is_refused_without_reading(tmp_path: Path) -> None:
    """Regression (these were 'file not found' before, from a check apart from the read)."""
    fifo = tmp_path / "q.jsonl"
    os.mkfifo(fifo)
    device = tmp_path / "zero.csv"
    device.symlink_to("/dev/zero")
    for path, kind in ((fifo, "FIFO"), (device, "character device")):
        # a FIFO opened for reading would wait for a writer for ever: run it aside, bounded
        error = _error_within(from_path, path, 10)
        assert f"not a regular file (a {kind})" in error and "[not_a_file]" in error


def _error_within(call: Any, arg: Any, seconds: float) -> str:
    """The FlowkitError `call(arg)` raises, run in a thread that must end within `seconds`."""
    done: list[str] = []

    def target() -> None:
        try:
            call(arg)
            done.append("accepted")
        except FlowkitError as err:
            done.append(str(err))

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert done, f"{call.__name__}({arg}) did not return within {seconds} s"
    return done[0]


@pytest.mark.parametrize("line, error", [
    (b"{oops", r"corpus.jsonl:2: not valid JSON"),                 # was a JSONDecodeError traceback
    (b'{"id": "d2", "text": "\xff"}', r"corpus.jsonl:2: not UTF-8 text"),   # UnicodeDecodeError
    (b'{"id": ' + BIG_INT.encode() + b"}", r"corpus.jsonl:2: .*\[number_too_long\]"),
    (DEEP.encode(), r"corpus.jsonl:2: JSON nested deeper"),        # RecursionError
])
def test_a_hostile_corpus_line_is_one_clear_error(tmp_path: Path, line: bytes, error: str) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b'{"id": "d1", "text": "Mara was born on Tessel."}\n' + line + b"\n")
    ds = Dataset("t", [], corpus=str(corpus))
    out = tmp_path / "out.jsonl"
    with pytest.raises(FlowkitError, match=error):
        subset_corpus(ds, [{"supporting_doc_ids": ["d1"]}], out)


def test_a_good_corpus_subset_is_unchanged(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "d1", "text": "a"}\r\n\n{"id": "d2", "text": "b\u2028c"}\n'
                      '{"id": "d3", "text": "c"}', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    n = subset_corpus(Dataset("t", [], corpus=str(corpus)),
                      [{"supporting_doc_ids": ["d2"], "context_doc_ids": ["d3"]}], out)
    assert n == 2
    lines = out.read_text(encoding="utf-8").split("\n")
    assert [json.loads(x)["id"] for x in lines if x] == ["d2", "d3"]
    assert json.loads(lines[0])["text"] == "b\u2028c"      # a line separator inside JSON text kept


# ---- search spaces ------------------------------------------------------------------------
def _space(**over: Any) -> dict[str, Any]:
    return {"kind": "flowkit-search-space", "version": 1, "name": "s", "flows": ["naive_rag"],
            **over}


def test_search_space_from_dev_zero_is_refused_before_reading() -> None:
    """`flowkit search /dev/zero --check` read 8.6 GB in 15 s; now refused at open."""
    with pytest.raises(SpaceError, match=r"not a regular file \(a character device\).*not_a_file"):
        load_space("/dev/zero")


def test_search_space_from_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "space.json"
    os.mkfifo(fifo)
    assert "(a FIFO)" in _error_within(load_space, fifo, 10)


def test_an_oversized_space_file_is_refused_after_reading_only_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "space.json"
    path.write_bytes(b" " * (64 * 1024 + 1) + b"{}")
    with pytest.raises(SpaceError, match=r"more than 65,536 bytes.*file_too_large"):
        load_space(path)


@pytest.mark.parametrize("axis, error", [
    ({"low": -1e308, "high": 1e308}, r"params\[0\] .*low -1e\+308 is out of range"),   # overflowed
    ({"low": 0, "high": 1e308}, r"high 1e\+308 is out of range"),   # regression: was "gives 1e308"
    ({"low": 0, "high": 1, "step": 5e-324}, r"the range gives too many values"),           # overflowed
    ({"low": 0, "high": 1e15, "step": 1e-300}, r"the range gives too many values"),
])
def test_an_overflowing_range_names_its_field(axis: dict[str, Any], error: str, tmp_path: Path,
                                              ) -> None:
    from flowkit.search.space import check_space
    from flowkit.templates import load_template
    path = tmp_path / "space.json"
    path.write_text(json.dumps(_space(params=[{"node": "retrieve", "param": "top_k", **axis}])))
    space = load_space(path)
    problems = check_space(space, {"naive_rag": load_template("naive_rag")})
    assert len(problems) == 1 and re.search(error, problems[0]), problems


# ---- the replay page's memory-edit form -------------------------------------------------
PASSAGE = '{"id": "d1", "text": "Mara was born on Tessel."}'

MEMORY_REFUSED: list[tuple[str, str, str, str]] = [
    ("NaN", "judgement", '{"score": NaN}', r"^\[non_finite_number\] judgement: "),
    ("1e999", "documents", '[{"id": "a", "text": "b", "score": 1e999}]',
     r"^\[non_finite_number\] documents: "),
    ("300,000-character value", "answer", json.dumps("x" * 300_000),
     r"^\[string_too_long\] answer: text of 300000 characters; at most 50000"),
    ("300,000-character passage", "documents",
     json.dumps([{"id": "a", "text": "x" * 300_000}]), r"^\[string_too_long\] documents\[0\]\.text:"),
    ("50,000 passages", "documents", "[" + ",".join([PASSAGE] * 50_000) + "]",
     r"^\[value_too_large\] documents: 2,\d{3},\d{3} characters; a memory value has at most"),
    ("50,000 short entries", "queries", json.dumps(["q"] * 50_000),
     r"^\[too_many_items\] queries: 50,000 entries; at most 1,000"),
    ("deep nesting", "scratch", '{"a": ' + DEEP + "}", r"^\[too_deep\] scratch: "),
    ("lone surrogate", "answer", '"Tessel\\udc80"', r"^\[bad_text\] answer: lone surrogate U\+DC80"),
    ("lone surrogate in a key", "scratch", '{"k\\ud800": 1}', r"^\[bad_text\] scratch\.k"),
    ("duplicate key", "judgement", '{"a": 1, "a": 2}', r"^\[duplicate_key\] judgement\.a:"),
    ("5,000-digit integer (was refused in Python's words)", "judgement",
     '{"score": ' + BIG_INT + "}",
     r"^\[number_too_long\] judgement: "),
    ("wrong type for the key", "documents", "[1]",
     r"^\[wrong_type\] .*documents\[0\] must be a passage"),
    ("not JSON (regression)", "documents", "[not json", r"^\[bad_json\] documents: .*not JSON"),
]


@pytest.mark.parametrize("name, key, text, error", MEMORY_REFUSED,
                         ids=[c[0] for c in MEMORY_REFUSED])
def test_a_hostile_memory_edit_is_refused_with_a_code_and_the_field(name: str, key: str,
                                                                    text: str, error: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_memory_change(key, text)
    message = str(info.value)
    assert re.search(error, message), message
    assert "\n" not in message and len(message) < 400


def test_a_good_memory_edit_is_kept_as_typed() -> None:
    docs = [json.loads(PASSAGE), {"id": "d2", "text": "é" * 40_000, "score": 0.5,
                                  "meta": {"rank": 1}}]
    assert parse_memory_change("documents", json.dumps(docs)) == {"documents": docs}
    assert parse_memory_change("queries", json.dumps(["q"] * 1_000)) == {"queries": ["q"] * 1_000}


@pytest.mark.parametrize("text, error", [
    ('{"top_n": ' + DEEP + "}", r"^\[too_deep\]"),             # was a RecursionError traceback
    ('{"top_n": NaN}', r"^\[non_finite_number\]"),             # regression: pydantic refused it
    ('{"prompt": "{question} \\ud800"}', r"^\[bad_text\] .*prompt"),   # regression: likewise
])
def test_a_hostile_params_edit_is_refused(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_param_changes("generation.answer", {"top_n": 4}, text)


def test_the_memory_panel_draws_hostile_stored_values() -> None:
    """A run stored before these bounds may hold a lone surrogate or 50,000 passages: the step's
    memory is drawn (escaped; cut after 100,000 characters, its size named), not a traceback."""
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        from studio.replay import memory_panel
        docs = [{"id": str(i), "text": "Mara was born on Tessel."} for i in range(50_000)]
        memory_panel.render({"answer": "a"}, {"answer": "Tessel\udc80", "documents": docs})

    at = AppTest.from_function(page).run(timeout=60)
    assert not at.exception
    assert any("Tessel\\udc80" in c.value for c in at.code)
    assert any(c.value.startswith("3,") and "the first 100,000 are shown" in c.value
               for c in at.caption), [c.value for c in at.caption]

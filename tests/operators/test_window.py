"""What a reader is shown of a structured chunk longer than its window (flowkit.operators._window):
a table's caption, header and the rows that bear on the question; prose's best run of sentences;
anything else cut as before."""
from __future__ import annotations

from flowkit import compile_flow, run_flow
from flowkit.operators._text import passages
from flowkit.operators._window import focus
from flowkit.run_request import RunHooks, RunRequest
from flowkit.spec import FlowSpec
from flowkit.testing import FakeLLM, fake_resources
from flowkit.trace import ListSink

ROWS = [f"{20 + i} | 4 | Field number {i} of the header, kept for reasons of history" for i in range(12)]
TABLE = "\n".join(["Database Header Format", "Offset | Size | Description",
                   "16 | 2 | The database page size in bytes", *ROWS,
                   "56 | 4 | The database text encoding. A value of 3 means UTF-16be"])


def test_a_long_table_chunk_keeps_caption_header_and_the_rows_the_question_names():
    shown = focus(TABLE, "table", "Which value of the text encoding means UTF-16be?", 300)
    lines = shown.split("\n")
    assert lines[:2] == ["Database Header Format", "Offset | Size | Description"]
    assert "56 | 4 | The database text encoding. A value of 3 means UTF-16be" in lines
    assert len(shown) <= 300
    assert lines[2:] == sorted(lines[2:], key=TABLE.split("\n").index)    # rows in their order


def test_cut_at_the_window_the_same_row_is_not_seen():
    assert "UTF-16be" not in TABLE[:300]


def test_prose_shows_the_run_of_sentences_that_bears_on_the_question():
    text = " ".join(["The pager keeps pages in memory for a while."] * 8 +
                    ["The busy_timeout pragma sets how long to wait for a lock in milliseconds."] +
                    ["Other settings follow here."] * 4)
    shown = focus(text, "text", "How long does SQLite wait for a lock?", 200)
    assert "busy_timeout pragma" in shown and len(shown) <= 200
    assert shown.endswith(".") and not shown.startswith("he ")           # whole sentences


def test_chunks_without_structure_and_short_ones_are_cut_as_before():
    long = "word " * 300
    assert focus(long, None, "word?", 100) == long[:100]
    assert focus(TABLE, "table", "", 100) == TABLE[:100]
    assert focus("short", "table", "anything?", 100) == "short"
    doc = {"id": "d", "title": "T", "text": long}
    assert passages([doc], 1, 100, "word?") == passages([doc], 1, 100)


def test_the_answer_operator_shows_the_row_deep_in_a_table_chunk():
    docs = [{"id": "hdr#1", "title": "File Format > 1.3 The Database Header", "text": TABLE}]
    llm = FakeLLM([], default="3 [1]")
    spec = FlowSpec.model_validate({"name": "read", "nodes": [
        {"id": "read", "operator": "generation.answer", "params": {"passage_chars": 300}}],
        "edges": []})
    sink = ListSink()
    memory = {"documents": [{**docs[0], "meta": {"kind": "table"}}]}
    from flowkit.run_request import Fork
    end = run_flow(compile_flow(spec), fake_resources(llm),
                   RunRequest("Which value of the text encoding means UTF-16be?", kb="test",
                              start=Fork("read", "p", 0, memory=memory)), RunHooks(sink=sink))
    assert end.status == "ok", end.error
    assert "A value of 3 means UTF-16be" in llm.prompts[0]

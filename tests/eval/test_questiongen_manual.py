"""Questions drawn from a manual (`questiongen.tables`, `questiongen.manual`): a table row asked
for one cell by its key and header, a manual's defaults, limits, commands and definitions, and
every kept question citing its chunk and its page or section. The manual below is made up for
these tests (a small database's guide); its table is laid out as the structure-aware chunker
writes one (caption, header, a row a line, cells joined by " | ")."""
from __future__ import annotations

import re
from collections import Counter

from flowkit.documents.provenance import chunk_at, gold_place
from flowkit.eval.questiongen import candidates as C
from flowkit.eval.questiongen import manual as M
from flowkit.eval.questiongen import table_kind as K
from flowkit.eval.questiongen import tables as T
from flowkit.eval.questiongen.checks import PASSAGE_CHARS, Checker
from flowkit.eval.questiongen.generate import (
    PER_CHUNK_KEPT,
    Request,
    estimate,
    generate,
    read_passages,
)
from flowkit.operators._window import focus
from flowkit.runtime.completion_cache import MemoryCompletionCache
from flowkit.testing import FakeLLM, HashEmbedder, MemoryKB
from flowkit.testing.fakes import FakeResources

INTEGER_TABLE = (
    "Table 3. Integer types\n"
    "Name | Storage Size | Range | Description\n"
    "smallint | 2 bytes | -32768 to +32767 | small-range integer\n"
    "integer | 4 bytes | -2147483648 to +2147483647 | typical choice for integer\n"
    "bigint | 8 bytes | -9223372036854775808 to +9223372036854775807 | large-range integer\n"
    "numeric | variable | up to 131072 digits before the decimal point and up to 16383 digits "
    "after it | user-specified precision, exact")

PROSE = ("The default page size is 4096 bytes. The maximum number of attached databases is 125. "
         "Use the VACUUM command to rebuild the database file and reclaim free space.")


def meta(kind: str = "text", page: int = 23, section_id: str = "s4", **more: object) -> dict:
    return {"doc_id": "guide", "source": "guide.pdf", "doc_title": "Guide",
            "section": "8 Data Types > 8.1 Numeric Types", "section_id": section_id,
            "page_start": page, "page_end": page, "kind": kind, **more}


def table_passage(text: str = INTEGER_TABLE, cid: str = "guide#1", **m: object) -> C.Passage:
    return C.Passage(cid, "guide", "Guide > 8.1 Numeric Types", text, meta("table", **m))


def asked(p: C.Passage) -> dict[str, str]:
    t = T.passage_table(p)
    assert t is not None
    return {c.question: c.answer for c in T.row_candidates(p, t)}


# ---- table rows ---------------------------------------------------------------------------
def test_a_row_is_asked_for_its_cells_by_its_key_and_header():
    got = asked(table_passage())
    assert got["What is the storage size of smallint?"] == "2 bytes"
    assert got["What is the range of smallint?"] == "-32768 to +32767"
    assert got["What is the storage size of bigint?"] == "8 bytes"
    assert got["What is the description of integer?"] == "typical choice for integer"
    assert got["What is the storage size of numeric?"] == "variable"
    # a cell longer than a short answer is never asked; the key column is not asked for
    assert "What is the range of numeric?" not in got
    assert not any(q.startswith("What is the name of") for q in got)
    assert len(got) == 11
    c = T.row_candidates(table_passage(), T.passage_table(table_passage()))[0]
    assert c.kind == "table" and c.relation == "table cell"
    assert c.extra == {"table_key": "smallint", "table_column": "Storage Size"}


def test_headers_read_as_phrases():
    assert T.header_phrase("Storage Size") == ("storage size", "is")
    assert T.header_phrase("Aliases") == ("aliases", "are")
    assert T.header_phrase("Size (bytes)") == ("size in bytes", "is")
    assert T.header_phrase("Limits (KiB)") == ("limits in KiB", "are")
    assert T.header_phrase("SQL Type") == ("SQL type", "is")
    assert T.header_phrase("Status") == ("status", "is")
    assert T.header_phrase("2019") is None and T.header_phrase("") is None


def test_empty_cells_marks_numeric_headers_and_numeric_keys_are_skipped():
    text = ("No. | Option | Default | Allowed | 2019\n"
            "1 | cache_size | -2000 | yes | 7\n"
            "2 | busy_timeout |  | no | 9\n"
            "3 | page_size | 4096 | yes | 8")
    got = asked(table_passage(text))
    # the numbers are not a key: the option names are; a yes/no column and a year are not asked
    assert got == {"What is the default of cache_size?": "-2000",
                   "What is the default of page_size?": "4096"}


def test_a_key_two_tables_share_is_asked_with_the_tables_caption():
    other = ("Table 9. Type casts\nName | Cast to | Notes\n"
             "bigint | numeric | exact\nreal | double precision | widened")
    ps = [table_passage(), table_passage(other, cid="guide#7", page=40)]
    qs = {c.question: c.answer for c in K.candidates(ps, seed=0, per_passage=100)}
    assert qs['In the "Integer types" table, what is the storage size of bigint?'] == "8 bytes"
    assert qs['In the "Type casts" table, what is the cast to of bigint?'] == "numeric"
    assert qs["What is the storage size of smallint?"] == "2 bytes"      # no other has it
    # without a caption the section names the table
    no_caption = table_passage(INTEGER_TABLE.split("\n", 1)[1])
    t = T.passage_table(no_caption)
    assert t is not None and T.context_name(no_caption, t) == "Numeric Types"


def test_rows_past_the_first_window_are_asked_where_the_reader_is_shown_them(monkeypatch):
    rows = "\n".join(f"type{i:03d} | {i} bytes | small" for i in range(80))
    p = table_passage("Name | Size | Kind\n" + rows)
    found = T.row_candidates(p, T.passage_table(p))
    keys = {c.extra["table_key"] for c in found}
    # the reader's window shows the header and the row a question names, however far down
    assert {"type000", "type079"} <= keys
    late = next(c for c in found if c.extra["table_key"] == "type079")
    assert "type079 | 79 bytes" in focus(p.text, "table", late.question, PASSAGE_CHARS)
    # a window that shows only the first characters leaves the late rows unasked (rule 5)
    monkeypatch.setattr(T, "focus", lambda text, kind, question, n: text[:n])
    keys = {c.extra["table_key"] for c in T.row_candidates(p, T.passage_table(p))}
    assert "type000" in keys and "type079" not in keys
    shown = p.text[:PASSAGE_CHARS]
    assert all(f"{k} |" in shown for k in keys)


def test_table_candidates_come_in_seeded_rounds_over_every_table():
    ps = [table_passage(cid=f"guide#{i}") for i in range(3)]
    first = list(K.candidates(ps, seed=5))
    assert [c.passages[0].chunk_id for c in first[:3]] == ["guide#0", "guide#1", "guide#2"]
    assert first == list(K.candidates(ps, seed=5))
    assert [c.question for c in first] != [c.question for c in K.candidates(ps, seed=6)]


def test_a_small_table_at_the_end_of_a_text_chunk_is_read_too():
    text = PROSE + "\n\n" + INTEGER_TABLE
    p = C.Passage("guide#9", "guide", "Guide", text, meta("text"))
    got = {c.question: c.answer for c in K.candidates([p], seed=0, per_passage=100)}
    assert got["What is the storage size of bigint?"] == "8 bytes"
    assert "What is the default page size?" in facts(text)         # its prose as well


def test_text_is_not_read_as_a_table():
    assert T.read_table(PROSE) is None
    prose = C.Passage("g#0", "g", "Guide", "A | B\nnot a table at all", {})
    assert T.passage_table(prose) is None
    # an older chunker's chunk (no kind) that is all rows of one width is read as a table
    assert T.passage_table(C.Passage("g#1", "g", "G", INTEGER_TABLE.rsplit("\n", 1)[0])) is not None


# ---- manual prose -------------------------------------------------------------------------
def facts(text: str) -> dict[str, str]:
    return {f.question: f.answer for f in M.manual_facts(text)}


def test_defaults_limits_and_commands_are_asked_from_their_sentence():
    assert facts(PROSE) == {
        "What is the default page size?": "4096 bytes",
        "What is the maximum number of attached databases?": "125",
        "Which command is used to rebuild the database file and reclaim free space?": "VACUUM"}
    assert facts("The busy_timeout setting defaults to zero milliseconds.") == {
        "What is the default value of the busy_timeout setting?": "zero milliseconds"}
    assert facts("By default, the journal mode is DELETE.") == {
        "What is the journal mode by default?": "DELETE"}
    assert facts("A single table may hold at most 2000 columns.") == {
        "A single table may hold at most how many columns?": "2000"}
    assert facts("A database header is 100 bytes long.") == {
        "A database header is how many bytes long?": "100"}
    assert facts("A file larger than 1073741824 contains one lock page.") == {}   # a verb
    assert facts("Cache sharing is disabled by default.") == {
        "What is cache sharing by default?": "disabled"}


def test_commands_functions_and_definitions():
    assert facts("To copy a live database safely, use the .backup command.") == {
        "Which command is used to copy a live database safely?": ".backup"}
    assert facts("The journal_mode pragma sets how the rollback journal is kept.") == {
        "Which pragma sets how the rollback journal is kept?": "journal_mode"}
    assert facts("sqlite3_open() opens a new connection to a database file.") == {
        "Which function opens a new connection to a database file?": "sqlite3_open()"}
    assert facts("A savepoint is a named point within a transaction that a rollback can return "
                 "to later.") == {
        "What is a named point within a transaction that a rollback can return to later?":
            "savepoint"}
    # a question that ends on 'to' reads as cut short (prose.leans_on_context): not asked
    assert facts("A savepoint is a named point within a transaction that a rollback can "
                 "return to.") == {}
    assert facts("The rollback journal is used to restore the database after a failed "
                 "transaction.") == {
        "What is used to restore the database after a failed transaction?": "rollback journal"}


def test_sentences_that_lean_on_another_or_are_not_prose_give_nothing():
    for text in ("This option is the default for every new connection.",
                 "It defaults to ten seconds on every platform.",
                 "The default value is 5 on most systems.",       # the default of what?
                 "The result is a table with one row for each column.",
                 "Use the following command to rebuild the file.",
                 "sqlite> PRAGMA page_size = 4096;\nsqlite> VACUUM;",
                 "Name | Size\nbigint | 8 bytes"):
        assert facts(text) == {}, text
    # 'set by ...' is not a default's value; what sets it is asked by the last rule (`ends`)
    assert facts("The default page size is set by the build options.") == {
        "The default page size is set by what?": "build options"}
    # a chunk that starts inside a sentence: its first words are not asked about
    assert facts("rebuilds the whole file. The default cache size is 2000 pages.") == {
        "What is the default cache size?": "2000 pages"}


def test_a_sentence_past_what_the_reader_is_shown_is_not_asked():
    filler = "Nothing here is asked about in this long opening sentence of filler words. " * 12
    assert len(filler) > PASSAGE_CHARS
    assert facts(filler + PROSE) == {}


def test_single_kind_leaves_table_chunks_to_the_table_kind():
    ps = [table_passage(), C.Passage("guide#2", "guide", "Guide", PROSE, meta())]
    assert all(c.passages[0].kind != "table" for c in C.singles(ps))
    assert {c.kind for c in M.candidates(ps, 0)} == {"manual"}
    assert all(c.passages[0].chunk_id == "guide#2" for c in M.candidates(ps, 0))


# ---- places -------------------------------------------------------------------------------
def test_a_passage_names_its_page_or_section_as_a_gold_place():
    assert table_passage().place == "guide.pdf#p23"
    two = C.Passage("g#1", "guide", "G", "x", meta(page_end=24))
    assert two.place == "guide.pdf#p23-24"
    html = C.Passage("h#0", "h", "H", "x", {"source": "site/intro.html", "section_id": "s4",
                                            "page_start": 0, "kind": "text"})
    assert html.place == "site/intro.html#s4"
    assert C.Passage("p1#0", "p1", "T", "x").place == ""              # an older chunker's chunk
    # the place reads back with provenance's parser and matches its own chunk
    for p in (table_passage(), two, html):
        assert chunk_at(gold_place(p.place), p.chunk_id, {**p.meta, "doc_id": p.doc_id})


# ---- a whole generation on a manual --------------------------------------------------------
SECOND_TABLE = ("Table 4. Limits\nLimit | Value | Notes\n"
                "Attached databases | 125 | compile-time maximum\n"
                "Columns per table | 2000 | raised at build time up to 32767\n"
                "SQL statement length | 1000000 bytes | set per connection")

MANUAL = [
    {"id": "guide#0", "title": "Guide > 2 Storage", "text": PROSE, **meta(page=12)},
    {"id": "guide#1", "title": "Guide > 8.1 Numeric Types", "text": INTEGER_TABLE,
     **meta("table", page=23)},
    {"id": "guide#2", "title": "Guide > 9 Limits", "text": SECOND_TABLE, **meta("table", page=31)},
    {"id": "guide#3", "title": "Guide > 3 Journals", "text":
     "The journal_mode pragma sets how the rollback journal is kept. By default, the journal mode "
     "is DELETE. A savepoint is a named point within a transaction that a rollback can return "
     "to later.", **meta(page=14, section_id="s2")},
    {"id": "guide#4", "title": "Guide > 4 Examples", "text":
     "sqlite> PRAGMA page_size = 4096;\nsqlite> VACUUM;", **meta(page=15)},
    {"id": "guide#5", "title": "Guide > 5 Backups", "text":
     "To copy a live database safely, use the .backup command. A single table may hold at most "
     "2000 columns.", **meta(page=16)},
]


def manual_reader(expected: dict[str, str]):
    """A model that reads well: gives the expected answer when a passage shown holds it, knows
    nothing closed-book."""
    def read(prompt: str) -> str:
        question = re.search(r"Question: (.*?)\nAnswer:", prompt, re.S).group(1)
        shown = prompt.split("Question:")[0]
        answer = expected.get(question, "unknown")
        return answer if "[1]" in shown and answer in shown else "I do not know"
    return read


def test_a_manual_gives_questions_citing_chunk_and_page():
    ps = C.order(read_passages(MemoryKB("kb", MANUAL)), 0)
    expected = {c.question: c.answer for kind in (K.candidates, M.candidates)
                for c in kind(ps, 0, per_passage=100)}
    llm = FakeLLM([(r"Answer:\s*$", manual_reader(expected))])
    res = FakeResources(llm, {"kb": MemoryKB("kb", MANUAL)}, embedder=HashEmbedder())
    out = generate(res, "kb", Request(n=10, kinds=("table", "manual"), seed=0),
                   cache=MemoryCompletionCache())
    kinds = {q["type"] for q in out.questions}
    assert kinds == {"table", "manual"}, out.progress.line()
    # one document, five chunks with something to ask: questions from each (the document rule
    # of the encyclopedic kinds would have kept one), at most PER_CHUNK_KEPT a chunk
    assert len(out.questions) == 10
    chunks = [c for q in out.questions for c in q["supporting_chunk_ids"]]
    assert sorted(set(chunks)) == ["guide#0", "guide#1", "guide#2", "guide#3", "guide#5"]
    assert max(Counter(chunks).values()) <= PER_CHUNK_KEPT < len(out.questions)
    # a chunk's questions are written next to each other: a split by ranges cuts one chunk at most
    runs = [c for i, c in enumerate(chunks) if i == 0 or chunks[i - 1] != c]
    assert len(runs) == len(set(chunks)), chunks
    by_chunk = {q["supporting_chunk_ids"][0]: q for q in out.questions}
    assert by_chunk["guide#1"]["supporting_places"] == ["guide.pdf#p23"]
    assert by_chunk["guide#2"]["supporting_places"] == ["guide.pdf#p31"]
    for q in out.questions:
        assert q["supporting_doc_ids"] == ["guide"]                  # as before: documents
        assert expected[q["question"]] == q["answers"][0]
    assert out.reviewed[0]["passages"][0]["place"].startswith("guide.pdf#p")
    # two table chunks: more rows than one a chunk are asked
    assert out.progress.kept_by_kind["table"] == sum(q["type"] == "table" for q in out.questions)
    assert out.progress.kept_by_kind["table"] > 2


def test_the_checks_apply_to_the_new_kinds():
    p = table_passage()
    c = T.row_candidates(p, T.passage_table(p))[0]
    assert Checker(lambda prompt: "2 bytes").check(c) == "closed_book"
    assert Checker(lambda prompt: "4 bytes").check(c) == "round_trip"
    assert Checker(lambda prompt: "2 bytes" if "[1]" in prompt else "no").check(c) is None


def test_older_knowledge_bases_keep_their_output():
    q = generate(FakeResources(FakeLLM([(r"Answer:\s*$", lambda p: "1948" if "[1]" in p
                                         else "no")]),
                               {"kb": MemoryKB("kb", [{"id": "p2", "title": "Berit Kalm", "text":
                                "Berit Kalm (born 1948) is a Danish painter."}])}),
                 "kb", Request(n=1, kinds=("single",)), cache=None).questions[0]
    assert q["supporting_doc_ids"] == ["p2"] and q["supporting_chunk_ids"] == ["p2"]
    assert "supporting_places" not in q                               # no pages, no sections


def test_the_estimate_knows_the_new_kinds():
    req = Request(n=20, kinds=("table", "manual"))
    est = estimate(req, 300)
    assert 0 < est.calls <= est.calls_max == req.tries * 2
    assert Request(n=5, kinds=("table", "manual")).problems() == []
    assert "table" in C.KINDS and "manual" in C.KINDS


def test_a_table_whose_header_has_an_empty_corner_is_read_with_all_its_columns():
    text = (" | SQLite | PostgreSQL\n"
            "nulls are distinct in a UNIQUE column | Yes | Yes\n"
            "nulls are distinct in a UNION | No | No")
    t = T.read_table(text)
    assert t is not None and t.header == ("", "SQLite", "PostgreSQL") and len(t.rows) == 2


def test_a_heading_run_into_its_sentence_or_a_bracket_opening_one_is_not_asked():
    assert facts("Maximum Number Of Tables In A Join SQLite does not support joins containing "
                 "more than 64 tables.") == {}
    assert facts("(The present implementation parses JSON text at over 1 GB/s. It is fast.)") == {}
    assert facts("A single table may hold at most 2000 columns.")     # the control still asks


def test_a_sentence_past_the_first_window_is_asked_where_the_reader_is_shown_it():
    filler = " ".join(f"Paragraph filler sentence number {i} says nothing of note." for i in range(20))
    text = filler + "\n\nThe default page size is 4096 bytes."
    p = C.Passage("guide#7", "guide", "Guide > Pages", text, meta("text"))
    assert len(text) > PASSAGE_CHARS and facts(text) == {}          # past the first 700 characters
    got = {c.question: c.answer for c in M.candidates([p], seed=0)}
    assert got == {"What is the default page size?": "4096 bytes"}
    shown = focus(text, "text", "What is the default page size?", PASSAGE_CHARS)
    assert "The default page size is 4096 bytes" in shown

"""Questions that ask for the name a manual's sentence uses (`questiongen.named`) and for the
statement a syntax line's help describes (`questiongen.syntax_help`). The sentences are made up
for these tests (a small key-value store's guide)."""
from __future__ import annotations

from flowkit.eval.questiongen import manual as M
from flowkit.eval.questiongen.candidates import Passage
from flowkit.eval.questiongen.named import name_fact
from flowkit.eval.questiongen.syntax_help import syntax_facts


def ask(s: str) -> tuple[str, str] | None:
    f = name_fact(s)
    return (f.question, f.answer) if f else None


def test_a_name_with_its_noun_is_asked_in_its_place():
    assert ask("The largest key length is fixed at build time by the KV_MAX_KEY macro") == (
        "The largest key length is fixed at build time by which macro?", "KV_MAX_KEY")
    assert ask("In lazy mode, the separate flush_now pragma must be run to write the log") == (
        "In lazy mode, which pragma must be run to write the log?", "flush_now")
    # a compile-time option keeps its kind in the question
    assert ask("Tracing is only possible when the KV_TRACE compile-time option is used") == (
        "Tracing is only possible when which compile-time option is used?", "KV_TRACE")


def test_a_keyword_in_capitals_a_pragma_and_a_call_are_names():
    assert ask("Both MATCH and FIND may be preceded by the NOT keyword to invert the test") == (
        "Both MATCH and FIND may be preceded by which keyword to invert the test?", "NOT")
    assert ask("Two stored keys are always compared byte by byte using kv_compare()") == (
        "Two stored keys are always compared byte by byte using which function?", "kv_compare()")
    assert ask("Old snapshots can be removed at any time with PRAGMA prune_snapshots") == (
        "Old snapshots can be removed at any time with which pragma?", "prune_snapshots")


def test_refusals():
    # the name twice: the question would hold its answer
    assert ask("The kv_open() call fails unless kv_open() was given a path") is None
    # an acronym, and capitals with a noun that names no tool
    assert ask("Every record of the store is kept in the JSON format on disk") is None
    assert ask("The checksum is written into the LOG header after each commit") is None
    # leaning on the sentence before, an example, a one-noun subject, a quoted example
    assert ask("This pragma is a shorthand for the flush_now pragma in older builds") is None
    assert ask("For example, the KV_MAX_KEY macro can be raised to a larger value") is None
    assert ask("The setting is read by the kv_config() function at startup time") is None
    assert ask('To keep only the last log, run "PRAGMA prune_snapshots" after a commit') is None
    # 'PRAGMA' followed by a verb or by 'statement' names no pragma
    assert ask("The store_id PRAGMA is used to query or set the integer at offset 68") is None
    assert ask("The PRAGMA statement is an extension used to modify the store's behaviour") is None
    # no name at all, and too short a question
    assert ask("Keys are compared byte by byte when the store is opened for reading") is None
    assert ask("Use kv_close()") is None


def test_the_manual_lean_check_keeps_a_named_subject_and_refuses_a_bare_one():
    assert not M._leans("The maximum key length is set by which macro?")
    assert M._leans("The value is set by which macro?")
    assert M._leans("The log is flushed when this mode is on by which pragma?")
    # a subject the sentence before names: 'the current implementation' of what?
    assert M._leans("The current implementation only keeps the lower how many bits of N?")
    assert not M._leans("The first how many bytes of the store file hold the header?")


def test_run_together_sentences_and_participle_answers_are_refused():
    assert M._run_together("Which clause acts as a postfix operator. 4 The other?")
    assert M._run_together("Examples: which function trims a key?")
    assert not M._run_together("Which function is found in version 3.7.0 of the store?")
    assert M._not_an_answer("recommended") and not M._not_an_answer("disabled")


GUIDE = ("PRAGMA store.snapshot_count;\n\n"
         "Return the number of snapshots kept in the store file. The count is exact.\n\n"
         "PRAGMA store.log_level; PRAGMA store.log_level = level ;\n\n"
         "Query or change the amount of detail written to the diagnostic output.\n\n"
         "PRAGMA compact_keys;\n\n"
         "This pragma rewrites every key of the store in its shortest encoding.\n\n"
         "PRAGMA verbose;\n\n"
         "Query or change the verbose flag.\n\n"
         "PRAGMA a_one; PRAGMA b_two;\n\n"
         "Return the names of the two counters kept for each open store.")


def test_a_syntax_line_and_its_help_sentence_give_which_pragma():
    got = {(f.question, f.answer) for f in syntax_facts(GUIDE)}
    assert got == {
        ("Which pragma returns the number of snapshots kept in the store file?",
         "snapshot_count"),
        ("Which pragma queries or changes the amount of detail written to the diagnostic output?",
         "log_level"),
        ("Which pragma rewrites every key of the store in its shortest encoding?", "compact_keys"),
    }   # 'the verbose flag' names its pragma; two pragmas in one syntax paragraph name none


def test_syntax_help_candidates_come_first_and_only_where_the_window_shows_the_name():
    p = Passage("guide#3", "guide", "Guide", GUIDE, {"kind": "text"})
    cs = list(M.candidates([p], seed=0, per_passage=10))
    assert cs[0].relation == "syntax help" and cs[0].answer == "snapshot_count"
    far = Passage("guide#4", "guide", "Guide",
                  "PRAGMA snapshot_count;\n\nReturn the number of snapshots kept in the store "
                  "file.\n\n" + "Filler text about nothing in particular here. " * 40
                  + "\n\nPRAGMA log_level;\n\nQuery or change the amount of detail written to "
                  "the diagnostic output.", {"kind": "text"})
    for c in M.candidates([far], seed=0, per_passage=10):
        assert c.answer in M.focus(far.text, "text", c.question, M.PASSAGE_CHARS)

"""Questions that ask for a value a manual's sentence gives: what a named tool returns
(`questiongen.returns`), where a format keeps a field and the number of a named quantity
(`questiongen.offsets`). The sentences are made up for these tests (a small key-value store's
guide)."""
from __future__ import annotations

from flowkit.eval.questiongen import manual as M
from flowkit.eval.questiongen.offsets import offset_fact
from flowkit.eval.questiongen.returns import return_fact


def qa(f) -> tuple[str, str] | None:
    return (f.question, f.answer) if f else None


def test_what_a_named_tool_returns_is_asked_in_its_place():
    assert qa(return_fact("The kv_count() function returns a signed integer, even for an empty "
                          "store")) == (
        "The kv_count() function returns what, even for an empty store?", "a signed integer")
    assert qa(return_fact("A lookup with the FIND operator evaluates to NULL when no key "
                          "matches")) == (
        "A lookup with the FIND operator evaluates to what when no key matches?", "NULL")


def test_returns_refusals():
    # no tool named before the verb; leaning; a value glossed after a dash; a quoted call
    assert return_fact("The call returns a signed integer for every store") is None
    assert return_fact("When it is opened, kv_count() returns a signed integer") is None
    assert return_fact("The kv_age() function returns the epoch - the seconds since the start "
                       "of the store") is None
    assert return_fact('The expression "kv_count(1)" returns an error in older builds') is None
    # two results; a pointer to another place; too long a value
    assert return_fact("The GET operator returns 1 and the PUT operator returns 0") is None
    assert return_fact("The kv_stats() function returns the following columns") is None
    assert return_fact("The kv_dump() function returns a long list of every key in the store "
                       "sorted") is None


def test_an_offset_and_a_named_quantity_are_asked_in_their_place():
    assert qa(offset_fact("The number of live segments is stored as a 2-byte integer at an "
                          "offset of 12 from the start of the file")) == (
        "The number of live segments is stored as a 2-byte integer at which offset from the "
        "start of the file?", "12")
    assert qa(offset_fact("The checksum seed is a 4-byte integer at offset 40 bytes in the "
                          "header")) == (
        "The checksum seed is a 4-byte integer at which offset in the header?", "40")
    assert qa(offset_fact("If the store is opened read-only, then a timeout of 5 is used")) == (
        "If the store is opened read-only, then what timeout is used?", "5")


def test_offset_refusals():
    # two offsets; leaning; a year; a quantity word that is not one; 'N or X'
    assert offset_fact("If the integer at offset 52 is zero then the one at offset 64 is too") is None
    assert offset_fact("Its checksum seed is a 4-byte integer at offset 40 in the header") is None
    assert offset_fact("The format of the log was changed in a release of 2019 by the team") is None
    assert offset_fact("Each segment holds a multiple of 8 records in the log file") is None
    assert offset_fact("Compaction runs with a period of 1000 or KV_COMPACT_PERIOD pages") is None
    # the number written twice: the question would hold it
    assert offset_fact("A store with a limit of 8 keeps 8 segments open at any time") is None


def test_both_rules_run_in_manual_facts():
    text = ("The number of live segments is stored as a 2-byte integer at an offset of 12 from the "
            "start of the file. A lookup with the FIND operator evaluates to NULL when no key "
            "matches. The kv_count() function returns a signed integer, even for an empty store.")
    # a sentence whose subject is the tool is the command rule's ("Which function returns ...?")
    assert {(f.relation, f.answer) for f in M.manual_facts(text)} == {
        ("offset", "12"), ("returns", "NULL"), ("command", "kv_count()")}

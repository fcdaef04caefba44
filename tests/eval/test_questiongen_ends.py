"""Questions that ask for the phrase a manual's sentence ends on (`questiongen.ends`). The sentences
are made up for these tests (a small key-value store's guide)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from flowkit.eval.questiongen import manual as M
from flowkit.eval.questiongen.ends import end_fact


def ask(s: str) -> tuple[str, str] | None:
    f = end_fact(s)
    return (f.question, f.answer) if f else None


def test_the_object_of_the_last_preposition_is_asked_in_its_place():
    assert ask("The MEMORY log mode keeps the write log in volatile RAM") == (
        "The MEMORY log mode keeps the write log in what?", "volatile RAM")
    assert ask("A key that holds no bytes is considered to be false") == (
        "A key that holds no bytes is considered to be what?", "false")
    assert ask("Every reserved byte of the store header must be set to zero") == (
        "Every reserved byte of the store header must be set to what?", "zero")
    # the article goes with the answer, a name keeps its kind
    assert ask("Free pages are given back to the operating system by the KV_SHRINK command") == (
        "Free pages are given back to the operating system by what?", "KV_SHRINK command")


def test_refusals():
    # one plain word after 'the' leans on the text around it (which index?)
    assert ask("The samples must appear in the same order as they occur in the index") is None
    # a list, a clause, a tool's kind alone, a verb after 'to'
    assert ask("Keys in the store may be strings, integers or blobs") is None
    assert ask("Sync the log file if all frames in the log are checkpointed") is None
    assert ask("The snapshot order is undefined if a scan omits the ORDER BY clause") is None
    assert ask("The content of the cache is ephemeral and is not expected to survive a crash") is None
    # a condition, an example, an imperative help line, a heading run into its sentence
    assert ask("If the store is opened read-only, writes fail with an error code") is None
    assert ask("For example, a key can be encoded in base64 notation") is None
    assert ask("Return the total number of pages in the store file") is None
    assert ask("NORMAL When sync is NORMAL the store syncs less often than in FULL mode") is None
    # a numbered list's next item run in, a cut bracket
    assert ask("Initialize the checksum to the nonce found in the header at offset 12. 2") is None
    assert ask("Start at N-200 (where N is the size of a page in bytes") is None
    # an object counted vaguely
    assert ask("The cache holds 2000 pages of the store on most systems") is None
    # too short to ask anything
    assert ask("Keys are sorted by bytes") is None


def test_a_manual_asks_the_end_phrase_only_where_no_other_rule_fits():
    facts = {f.question: (f.answer, f.relation) for f in M.manual_facts(
        "The MEMORY log mode keeps the write log in volatile RAM. "
        "The default page size is 4096 bytes.")}
    assert facts == {"The MEMORY log mode keeps the write log in what?": ("volatile RAM", "phrase"),
                     "What is the default page size?": ("4096 bytes", "default")}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["The", "store", "keeps", "in", "to", "be", "considered", "by",
                                 "KV_LOG", "\"quoted", "(x", "y)", ",", "zero", "the", "a", "If",
                                 "", "  ", "é", "12.", "-", "index", "ORDER", "BY"]),
                max_size=40).map(" ".join))
def test_any_sentence_gives_nothing_or_a_question_whose_answer_it_holds(s):
    f = end_fact(s)
    if f is not None:
        assert f.question.endswith(" what?") and f.answer and f.answer in s

"""The breakpoint condition language: what it reads, what it refuses (with the column), and that
no input, however hostile, is ever executed."""
from __future__ import annotations

import builtins

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowkit.debug_expr import MAX_DEPTH, MAX_LENGTH, Condition, ExprError, names_of, parse

MEMORY = {"question": "Where was Mara Velt born?", "answer": "Tessel",
          "documents": [{"id": "d1", "text": "Mara Velt was born on Tessel.", "score": 0.5},
                        {"id": "d2", "text": "Tessel holds a festival.", "score": 0.25}],
          "judgement": {"label": "Sufficient", "score": 0.8}, "drafts": ["a", "b"],
          "visit": 2, "steps": 5, "llm_calls": 1, "tokens": 40}


@pytest.mark.parametrize("text,expected", [
    ("len(documents) == 2", True),
    ("len(documents) < 2", False),
    ("'Tessel' in answer", True),
    ('"Corren" in answer', False),
    ("'Corren' not in answer", True),
    ("judgement.score >= 0.5 and judgement.label == 'Sufficient'", True),
    ("documents[0].id == 'd1'", True),
    ("documents[-1]['id'] == 'd2'", True),
    ("documents[5].id == 'd1'", False),                 # out of range reads as null
    ("visit > 2 or steps >= 5", True),
    ("not (visit == 2)", False),
    ("answer in ['Tessel', 'Corren']", True),
    ("len(queries) == 0", True),                        # a key not in memory reads as null
    ("queries == null", True),
    ("len(question) > 10 and not len(evidence)", True),
    ("tokens >= 1e1", True),
    ("llm_calls != -1", True),
    ("judgement", True),                                 # a non-empty object is true
    ("drafts", True),
    ("citations", False),
])
def test_conditions_evaluate_over_memory(text: str, expected: bool):
    assert Condition.of(text).holds(MEMORY) is expected


@pytest.mark.parametrize("text,column,fragment", [
    ("len(documents) <", 17, "expected a value, found the end"),
    ("answer == 'x", 11, "unexpected character"),
    ("answer = 'x'", 8, "unexpected character '='"),
    ("len documents", 5, "expected '(' after len"),
    ("secret == 1", 1, "unknown key 'secret'"),
    ("answer == 1 == 1", 13, "chained comparisons"),
    ("answer not 'x'", 12, "expected 'in' after 'not'"),
    ("documents[0", 12, "expected ']'"),
    ("(visit > 1", 11, "expected ')'"),
    ("visit > 1 visit", 11, "unexpected 'visit' after a complete condition"),
    ("and visit", 1, "expected a value, found 'and'"),
    ("__import__('os')", 1, "unknown key '__import__'"),
    ("answer.", 8, "expected a field name after '.'"),
    ("'\\q' in answer", 2, "unknown escape"),
])
def test_bad_conditions_name_the_column(text: str, column: int, fragment: str):
    with pytest.raises(ExprError) as e:
        parse(text)
    assert e.value.position == column, str(e.value)
    assert fragment in str(e.value) and f"column {column}" in str(e.value)


def test_empty_long_and_deep_conditions_are_refused():
    with pytest.raises(ExprError, match="empty"):
        parse("   ")
    with pytest.raises(ExprError, match=f"at most {MAX_LENGTH}"):
        parse("visit == 1 or " * 60 + "true")
    with pytest.raises(ExprError, match="nested more than"):
        parse("(" * (MAX_DEPTH + 2) + "true" + ")" * (MAX_DEPTH + 2))
    with pytest.raises(ExprError, match="nested more than"):
        parse("not " * (MAX_DEPTH + 2) + "true")


@pytest.mark.parametrize("text,fragment", [
    ("answer < 3", "cannot order text against a number"),
    ("len(visit) > 0", "len() needs text, a list or an object, got a number"),
    ("1 in answer", "'in' text needs text on the left"),
    ("'a' in visit", "'in' needs text, a list or an object on the right"),
    ("visit.x == 1", "'.x' needs an object, got a number"),
])
def test_type_errors_at_evaluation_name_the_column(text: str, fragment: str):
    with pytest.raises(ExprError, match="at column") as e:
        Condition.of(text).holds(MEMORY)
    assert fragment in str(e.value)


def test_names_of_lists_what_a_condition_reads():
    assert names_of(parse("len(documents) > visit and judgement.score in [1, tokens]")) == {
        "documents", "visit", "judgement", "tokens"}


HOSTILE = [
    "__import__('os').system('touch PWNED')",
    "().__class__.__bases__[0].__subclasses__()",
    "answer.__class__",
    "open('/etc/passwd').read()",
    "exec('1')", "eval('1')", "lambda: 1", "[x for x in documents]",
    "answer if visit else question", "visit + 1 > 2", "documents[0:1]", "f'{answer}'",
    "answer.upper()", "len(documents, 2)", "globals()", "import os",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_conditions_are_refused_at_parse(text: str, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ExprError):
        Condition.of(text).holds(MEMORY)
    assert list(tmp_path.iterdir()) == []


def test_attribute_access_reads_dict_fields_only():
    """`.field` reads a key of an object, never a Python attribute of the value."""
    with pytest.raises(ExprError, match="needs an object, got text"):
        Condition.of("answer.upper == null").holds(MEMORY)
    assert Condition.of("judgement.__class__ == null").holds(MEMORY) is True


ALPHABET = st.sampled_from(list("abcdefghijklmnopqrstuvwxyz_ ()[].,'\"=!<>-0123456789\\:")
                           + ["len", "and", "or", "not", "in", "visit", "answer", "documents",
                              "__import__", "__class__", "os", "system", "eval", "exec"])


@settings(max_examples=300, deadline=None)
@given(st.lists(ALPHABET, max_size=40).map("".join))
def test_any_text_parses_or_fails_cleanly_and_never_calls_anything(text: str):
    """Random text over the language's alphabet (and Python's dangerous names): either an
    ExprError, or a tree whose evaluation gives a value or an ExprError. Nothing it does reaches
    Python's eval/exec/compile/__import__/open (they are replaced by traps for the test)."""
    called: list[str] = []
    saved = {n: getattr(builtins, n) for n in ("eval", "exec", "compile", "__import__", "open")}

    def trap(name: str):
        def f(*a, **k):
            called.append(name)
            return saved[name](*a, **k)
        return f

    try:
        for n in saved:
            if n != "__import__":             # the test machinery itself imports lazily
                setattr(builtins, n, trap(n))
        try:
            cond = Condition.of(text)
        except ExprError:
            return
        try:
            cond.holds(MEMORY)
        except ExprError:
            pass
    finally:
        for n, f in saved.items():
            setattr(builtins, n, f)
    assert called == []

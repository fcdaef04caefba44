"""The working memory's vocabulary has one home, `flowkit/memory.py`: the run's counter names, the
check of a memory key and of a value against its key's type, the reducer keys and the naming of a
value's kind in messages are defined there and imported everywhere else (`flowkit.memory_edit
.check_value` raises the type check's finding as the caller's exception). These checks read the
source (AST) so a new hand copy fails here instead of drifting (issue 49, item 3)."""
from __future__ import annotations

import ast
import inspect
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowkit import memory, memory_edit
from flowkit.spec import Limits

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flowkit", "service", "studio", "storage", "pages")
HOME = Path("flowkit/memory.py")

#: Copies left in place, each with why; remove an entry once its file imports from flowkit.memory.
#: Words a hand copy of the counters came with (a condition's `visit`, a budget's seconds); a
#: literal naming every counter plus only these and memory keys is a copy of the vocabulary. One
#: that also names a record's own fields (`ms`, `cached_calls`: RunEnd's totals) is a cost record.
_VOCABULARY = {*memory.OPERATOR_KEYS, *memory.ENGINE_KEYS, "visit", "elapsed_s"}
KNOWN_KEY_CHECKS: dict[str, str] = {
    "studio/replay/replay.py": "parse_memory_change refuses an unknown key with ValueError before "
                               "parse_edit/check_value do; studio/replay was being edited by "
                               "another change when the vocabulary moved",
}


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel != HOME:
                yield rel.as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _strings(nodes: typing.Iterable[ast.expr | None]) -> set[str]:
    return {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_the_counter_names_are_listed_in_memory_only() -> None:
    """No tuple, list, set or dict literal outside flowkit/memory.py lists the run's counters
    (every counter name, nothing but memory words besides)."""
    found = []
    for rel, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Tuple | ast.List | ast.Set):
                names = _strings(node.elts)
            elif isinstance(node, ast.Dict):
                names = _strings(node.keys)
            else:
                continue
            if set(memory.COUNTERS) <= names <= _VOCABULARY:
                found.append(f"{rel}:{node.lineno}")
    assert found == [], f"counter names listed outside flowkit/memory.py (use COUNTERS): {found}"


def test_a_memory_key_is_checked_in_memory_only() -> None:
    """`k not in OPERATOR_KEYS` (a refusal) is written in flowkit/memory.py's check_key only."""
    found = []
    for rel, tree in _sources():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Compare) and any(isinstance(op, ast.NotIn) for op in node.ops)
                    and any(isinstance(c, ast.Name | ast.Attribute)
                            and (getattr(c, "id", None) or getattr(c, "attr", None)) == "OPERATOR_KEYS"
                            for c in node.comparators)
                    and rel not in KNOWN_KEY_CHECKS):
                found.append(f"{rel}:{node.lineno}")
    assert found == [], f"memory keys checked outside flowkit/memory.py (use check_key): {found}"


def test_the_memory_types_are_read_in_memory_only() -> None:
    """Only flowkit/memory.py reads the Memory TypedDict's declared types (check_value, REDUCED_KEYS)."""
    found = []
    for rel, tree in _sources():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name)
                    and node.args[0].id == "Memory"
                    and getattr(node.func, "attr", getattr(node.func, "id", "")) == "get_type_hints"):
                found.append(f"{rel}:{node.lineno}")
    assert found == [], f"Memory's types read outside flowkit/memory.py (use check_value): {found}"


def test_a_value_kind_is_named_in_memory_only() -> None:
    """No function outside flowkit/memory.py names a value's kind ("a boolean", ...): kind_of does."""
    found = []
    for rel, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                    isinstance(r, ast.Return) and _strings([r.value]) & {"a boolean", "a number"}
                    for r in ast.walk(node)):
                found.append(f"{rel}:{node.lineno} {node.name}")
    assert found == [], f"value kinds named outside flowkit/memory.py (use kind_of): {found}"


def test_the_lists_agree_with_the_typed_memory() -> None:
    """The key lists are the Memory TypedDict's keys; counter_update takes the counters; every
    counter has its limit `max_<counter>`; the counters are engine keys with a reducer."""
    keys = list(typing.get_type_hints(memory.Memory))
    assert keys == [*memory.OPERATOR_KEYS, *memory.ENGINE_KEYS]
    assert tuple(inspect.signature(memory.counter_update).parameters) == memory.COUNTERS
    assert list(Limits().caps()) == list(memory.COUNTERS)
    assert set(memory.COUNTERS) <= set(memory.ENGINE_KEYS) & memory.REDUCED_KEYS


@pytest.mark.parametrize("key, value, error", [
    ("visits", {}, KeyError), ("nope", 1, ValueError), ("answer", 3, memory_edit.EditError)])
def test_one_check_raises_the_callers_type(key: str, value: object, error: type[Exception]) -> None:
    """One check, the caller's exception type (KeyError for initial_memory, SpecError for
    parse_edit, ValueError for an operator's declaration, EditError for an edit or a fork)."""
    with pytest.raises(error, match=f"'{key}'"):
        memory_edit.check_value(key, value, error)

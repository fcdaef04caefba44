"""The working memory: the LangGraph state every operator reads and writes.

A small fixed vocabulary of keys. Operators declare which keys they read and write; the validator
checks those declarations against the graph. Keys that several branches or every node may write in
one step have reducers; everything else is last-write-wins (parallel branches write into their own
scope under `branches`, so they never collide on a global key).

This module is the one home of the memory's vocabulary; every other place imports it:
- the keys (`OPERATOR_KEYS`, `ENGINE_KEYS`) and the run's counters (`COUNTERS`: each bounded by
  the flow's limit ``max_<counter>``, `flowkit.spec.Limits.caps`), read with `counters_of` and
  written with `counter_update`;
- the check of a key (`check_key`, raising the caller's exception type) and of a value against
  its key's type (`type_problem`; `flowkit.memory_edit.check_value` raises it as an EditError for
  a debugger's edit and a fork's memory changes);
- the name of a value's kind in messages (`kind_of`: "text", "a list", "an object", ...).
Operators import this module through flowkit.contract, so it imports nothing of flowkit's.
`tests/test_memory_vocabulary.py` keeps each of them defined here only.
"""
from __future__ import annotations

import operator
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeAlias, TypedDict


class Doc(TypedDict, total=False):
    """A retrieved passage."""

    id: str
    text: str
    title: str
    score: float
    meta: dict[str, Any]


def append(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    """Reducer: concatenate lists (history of steps)."""
    return (left or []) + (right or [])


def merge_counts(left: dict[str, int] | None, right: dict[str, int] | None) -> dict[str, int]:
    """Reducer: add per-node visit counts."""
    out = dict(left or {})
    for k, v in (right or {}).items():
        out[k] = out.get(k, 0) + v
    return out


def merge_branches(left: dict[str, dict[str, Any]] | None,
                   right: dict[str, dict[str, Any] | None] | None) -> dict[str, dict[str, Any]]:
    """Reducer: per-branch scopes; a branch's new writes update its scope, None clears it."""
    out = {k: dict(v) for k, v in (left or {}).items()}
    for bid, scope in (right or {}).items():
        if scope is None:
            out.pop(bid, None)
        else:
            out.setdefault(bid, {}).update(scope)
    return out


def keep_first(left: Any, right: Any) -> Any:
    """Reducer: the first value wins (halt reason: the first limit hit)."""
    return left if left else right


class Memory(TypedDict, total=False):
    """Working memory. Operator-visible keys first, bookkeeping after."""

    question: str                     # the user's question (input)
    queries: list[str]                # search queries written by pre-retrieval
    sub_questions: list[str]          # decomposition of the question
    documents: list[Doc]              # the current retrieved / filtered passages
    candidates: list[list[Doc]]       # ranked lists waiting to be fused (one per query or branch)
    evidence: list[str]               # notes kept in working memory (agent, verification)
    drafts: list[str]                 # intermediate answers (per document, per sub-question, per round)
    answer: str                       # the final answer
    citations: list[str]              # document ids the answer cites
    judgement: dict[str, Any]         # the last judge's or verifier's verdict and score
    route: str                        # the last router's or judge's chosen edge label
    history: Annotated[list[dict[str, Any]], append]   # thoughts, actions, sub-answers, in order
    scratch: dict[str, Any]           # small operator-owned values (e.g. a SQL result)
    # bookkeeping, written by the engine only
    branches: Annotated[dict[str, dict[str, Any]], merge_branches]
    visits: Annotated[dict[str, int], merge_counts]
    steps: Annotated[int, operator.add]
    llm_calls: Annotated[int, operator.add]
    tokens: Annotated[int, operator.add]
    halt: Annotated[str, keep_first]


#: What an operator's `run` gets: a read-only view of working memory (global memory plus its
#: branch's scope; the engine passes a MappingProxyType). Operators return updates, never mutate it.
MemoryView: TypeAlias = Mapping[str, Any]

#: Keys operators may declare in `reads` / `writes`.
OPERATOR_KEYS: tuple[str, ...] = (
    "question", "queries", "sub_questions", "documents", "candidates", "evidence", "drafts",
    "answer", "citations", "judgement", "route", "history", "scratch",
)
#: The run's counters (node visits, model calls, prompt + completion tokens), in the order the
#: limits are checked; each is bounded by the flow's limit ``max_<counter>`` (Limits.caps).
COUNTERS: tuple[str, ...] = ("steps", "llm_calls", "tokens")
#: The engine's bookkeeping a checkpoint keeps besides working memory (`halt` is never set there).
COUNTER_KEYS: tuple[str, ...] = ("branches", "visits", *COUNTERS)
#: Keys only the engine writes.
ENGINE_KEYS: tuple[str, ...] = (*COUNTER_KEYS, "halt")
#: Keys present before the first node runs.
INPUT_KEYS: tuple[str, ...] = ("question",)

#: What builds the exception a failed check raises, from its message (an exception class will do).
ErrorType: TypeAlias = Callable[[str], Exception]


def counters_of(state: Mapping[str, Any]) -> dict[str, int]:
    """The run's counters in `state` (0 for one not set yet), in `COUNTERS` order."""
    return {c: int(state.get(c) or 0) for c in COUNTERS}


def counter_update(steps: int = 0, llm_calls: int = 0, tokens: int = 0) -> dict[str, int]:
    """A memory update adding to the run's counters (each has the add reducer); a misspelt
    counter is a type error here, not a silently new key."""
    return {"steps": steps, "llm_calls": llm_calls, "tokens": tokens}


def initial_memory(question: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The memory a run starts from; KeyError when `extra` names a key that is not an
    operator key."""
    mem: dict[str, Any] = {"question": question, "history": [], "branches": {}, "visits": {},
                           **dict.fromkeys(COUNTERS, 0), "halt": ""}
    for k, v in (extra or {}).items():
        check_key(k, KeyError)
        mem[k] = v
    return mem


def check_key(key: str, error: ErrorType = KeyError) -> str:
    """`key` when it is an operator key of working memory; otherwise raise `error(message)`
    (the caller's exception type: KeyError, EditError, a SpecError with its code...)."""
    if key not in OPERATOR_KEYS:
        raise error(f"'{key}' is not a working-memory key ({', '.join(OPERATOR_KEYS)})")
    return key


def type_problem(key: str, value: Any) -> str:
    """Why `value` does not fit the type of operator key `key` (text, a list of texts, a list of
    passages with id and text, an object...), naming the place inside the value ('documents[0]
    .score must be a number, got text'); '' when it fits. `key` is checked first (`check_key`)."""
    return _mismatch(_HINTS[key], value, key)


def kind_of(value: object, *, number_names: bool = False) -> str:
    """What kind of value `value` is, for a message: "null", "a boolean", "a number", "text",
    "a list", "an object", else its type's name. With `number_names` a number is named by its
    Python type ("int", "float"), as the dataset reader's messages do."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return type(value).__name__ if number_names else "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


#: Fields a passage must have to be usable by the operators (Doc's others are optional).
_DOC_REQUIRED = ("id", "text")


def _mismatch(tp: Any, value: Any, where: str) -> str:
    """Why `value` does not fit type `tp` ('' when it does)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _mismatch(typing.get_args(tp)[0], value, where)
    if tp is Any:
        return ""
    if tp is str:
        return "" if isinstance(value, str) else f"{where} must be text, got {kind_of(value)}"
    if tp in (int, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return "" if ok else f"{where} must be a number, got {kind_of(value)}"
    if origin is list:
        return _list_mismatch(tp, value, where)
    if origin is dict or tp is dict:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            return f"{where} must be an object, got {kind_of(value)}"
        return ""
    if typing.is_typeddict(tp):
        return _passage_mismatch(tp, value, where)
    return f"{where}: values of type {tp} cannot be edited"


def _list_mismatch(tp: Any, value: Any, where: str) -> str:
    if not isinstance(value, list):
        return f"{where} must be a list, got {kind_of(value)}"
    (item,) = typing.get_args(tp) or (Any,)
    for i, v in enumerate(value):
        problem = _mismatch(item, v, f"{where}[{i}]")
        if problem:
            return problem
    return ""


def _passage_mismatch(tp: Any, value: Any, where: str) -> str:
    if not isinstance(value, dict):
        return f"{where} must be a passage (an object with id and text), got {kind_of(value)}"
    missing = [k for k in _DOC_REQUIRED if k not in value]
    if missing:
        return f"{where} has no {' or '.join(missing)}"
    hints = typing.get_type_hints(tp)
    for k, v in value.items():
        if k not in hints:
            return f"{where} has an unknown field '{k}' (fields: {', '.join(hints)})"
        problem = _mismatch(hints[k], v, f"{where}.{k}")
        if problem:
            return problem
    return ""


def visible(memory: dict[str, Any]) -> dict[str, Any]:
    """The operator-visible part of memory (what traces show)."""
    return {k: memory[k] for k in OPERATOR_KEYS if k in memory}


#: The declared type of every memory key (what `check_value` checks a value against).
_HINTS: Mapping[str, Any] = typing.get_type_hints(Memory)
#: Memory keys with a reducer (history appends): an edit replaces them (LangGraph's `Overwrite`).
REDUCED_KEYS: frozenset[str] = frozenset(
    k for k, tp in typing.get_type_hints(Memory, include_extras=True).items()
    if typing.get_origin(tp) is typing.Annotated)

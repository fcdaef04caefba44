"""The working memory: the LangGraph state every operator reads and writes.

A small fixed vocabulary of keys. Operators declare which keys they read and write; the validator
checks those declarations against the graph. Keys that several branches or every node may write in
one step have reducers; everything else is last-write-wins (parallel branches write into their own
scope under `branches`, so they never collide on a global key).
"""
from __future__ import annotations

import operator
from collections.abc import Mapping
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
#: Keys only the engine writes.
ENGINE_KEYS: tuple[str, ...] = ("branches", "visits", "steps", "llm_calls", "tokens", "halt")
#: Keys present before the first node runs.
INPUT_KEYS: tuple[str, ...] = ("question",)


def initial_memory(question: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The memory a run starts from."""
    mem: dict[str, Any] = {"question": question, "history": [], "branches": {}, "visits": {},
                           "steps": 0, "llm_calls": 0, "tokens": 0, "halt": ""}
    for k, v in (extra or {}).items():
        if k not in OPERATOR_KEYS:
            raise KeyError(f"'{k}' is not a working-memory key; known keys: {', '.join(OPERATOR_KEYS)}")
        mem[k] = v
    return mem


def visible(memory: dict[str, Any]) -> dict[str, Any]:
    """The operator-visible part of memory (what traces show)."""
    return {k: memory[k] for k in OPERATOR_KEYS if k in memory}

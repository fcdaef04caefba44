"""Merges: join parallel branches (or several ranked lists) into one list of documents."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...errors import OperatorInputError
from ...memory import Doc, MemoryView
from .._fuse import concat, rrf


def ranked_lists(memory: MemoryView) -> list[list[Doc]]:
    """The lists to fuse: each joined branch's documents, else the `candidates` in memory."""
    branches = memory.get("branches") or []
    lists = [list(b.get("documents") or []) for b in branches if b.get("documents")]
    if not lists:
        lists = [list(c) for c in memory.get("candidates") or [] if c]
    if not lists and memory.get("documents"):
        lists = [list(memory["documents"])]
    return lists


class MergeParams(OperatorParams):
    """Params of a rank-fusion merge: each subclass declares `top_k`."""

    if TYPE_CHECKING:   # declared for the type checker only: each merge's Params defines it
        top_k: int


MP = TypeVar("MP", bound=MergeParams)


class _Merge(Operator[MP]):
    kind = "merge"
    optional_reads = ("documents", "candidates")
    writes = ("documents", "candidates", "drafts")

    def fuse(self, lists: list[list[Doc]]) -> list[Doc]:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        lists = ranked_lists(memory)
        if not lists:
            raise OperatorInputError("documents", "nothing to merge: the branches retrieved nothing")
        drafts = [d for b in memory.get("branches") or [] for d in (b.get("drafts") or [])]
        out: dict[str, Any] = {"documents": self.fuse(lists)[: self.params.top_k], "candidates": []}
        if drafts:
            out["drafts"] = [*(memory.get("drafts") or []), *drafts]
        return out


@operator("orchestration.rrf")
class RRFMerge(_Merge["RRFMerge.Params"]):
    """Reciprocal rank fusion (Cormack et al., 2009) of the branches' ranked lists:
    score(d) = sum of 1 / (k + rank of d in each list)."""

    class Params(MergeParams):
        k: int = Field(60, ge=1, le=1000, description="Rank offset; larger flattens the weights")
        top_k: int = Field(5, ge=1, le=200, description="Passages kept after fusion")

    def fuse(self, lists: list[list[Doc]]) -> list[Doc]:
        return rrf(lists, k=self.params.k)


@operator("orchestration.concat")
class ConcatMerge(_Merge["ConcatMerge.Params"]):
    """Concatenate the branches' lists in order, dropping repeated ids."""

    class Params(MergeParams):
        top_k: int = Field(10, ge=1, le=200, description="Passages kept")

    def fuse(self, lists: list[list[Doc]]) -> list[Doc]:
        return concat(lists)

"""Where two flows part: for two columns of an evaluation (a variant and its parent, flows that
share node ids), the first step at which their runs differ on each question, and a summary grouped
by that node.

Two runs of the same question are walked step by step in order. They stay together while both
visit the same (node, visit) and leave the same working memory after it; the first step where the
node differs or the memory after it differs is where they part (its index in each run, the node
and the memory keys that differ). Runs that never part are "same". The summary groups questions
by the node where they parted: how many, how many answers changed, better / worse / same F1, and
the paired interval of the F1 delta (variant minus parent) within the group.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..trace import StepEvent
from .metrics import QuestionResult, bootstrap_ci

#: The group of questions whose runs never part.
SAME = "(never part)"


@dataclass
class Parting:
    """Where the runs of one question part (None fields: they never do)."""

    question_id: str
    node_id: str | None = None
    step_a: int | None = None
    step_b: int | None = None
    keys: list[str] = field(default_factory=list)

    @property
    def group(self) -> str:
        return self.node_id or SAME


def first_parting(question_id: str, a: Sequence[StepEvent], b: Sequence[StepEvent]) -> Parting:
    """The first step at which run `a` and run `b` differ: another node, or another memory after."""
    for i, (sa, sb) in enumerate(zip(a, b)):
        if (sa.node_id, sa.visit) != (sb.node_id, sb.visit):
            return Parting(question_id, sa.node_id, i, i, ["(another node ran)"])
        keys = sorted(k for k in set(sa.memory_after) | set(sb.memory_after)
                      if sa.memory_after.get(k) != sb.memory_after.get(k))
        if keys or (sa.error or "") != (sb.error or ""):
            return Parting(question_id, sa.node_id, i, i, keys or ["(error)"])
    if len(a) != len(b):
        i = min(len(a), len(b))
        longer = a if len(a) > len(b) else b
        return Parting(question_id, longer[i].node_id, i, i, ["(one run has more steps)"])
    return Parting(question_id)


@dataclass
class PartingGroup:
    """The questions whose runs part at one node."""

    node_id: str
    n: int
    changed: int
    better: int
    worse: int
    same: int
    f1_delta: float
    low: float
    high: float
    question_ids: list[str]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def group_partings(partings: Sequence[Parting], parent: Mapping[str, QuestionResult],
                   variant: Mapping[str, QuestionResult]) -> list[PartingGroup]:
    """One row per node where runs part (most questions first; "never part" last), with the F1
    delta's paired bootstrap interval."""
    groups: dict[str, list[Parting]] = {}
    for p in partings:
        if p.question_id in parent and p.question_id in variant:
            groups.setdefault(p.group, []).append(p)
    rows = []
    for node, ps in groups.items():
        deltas = [variant[p.question_id].f1 - parent[p.question_id].f1 for p in ps]
        changed = sum(1 for p in ps if _norm(variant[p.question_id].prediction)
                      != _norm(parent[p.question_id].prediction))
        mean, low, high = bootstrap_ci(deltas)
        rows.append(PartingGroup(node, len(ps), changed, sum(1 for d in deltas if d > 0),
                                 sum(1 for d in deltas if d < 0), sum(1 for d in deltas if d == 0),
                                 mean, low, high, [p.question_id for p in ps]))
    rows.sort(key=lambda g: (g.node_id == SAME, -g.n, g.node_id))
    return rows


def _norm(text: str) -> str:
    return " ".join(text.lower().split())

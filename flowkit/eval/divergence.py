"""Where two flows part: for two columns of an evaluation (a variant and its parent, flows that
share node ids; a pair that shares none is refused, see `unrelated`), the first step at which their runs differ on each question, and a summary grouped
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

from ..spec import FlowSpec
from ..trace import StepEvent
from .metrics import QuestionResult, bootstrap_ci

#: The group of questions whose runs never part.
SAME = "(never part)"


def parent_label(label: str, recorded: str, ref: str, labels: Sequence[str]) -> str | None:
    """The column a column was made from: its recorded parent, or (an evaluation stored before
    parents were recorded) the label a studio variant's ref starts with ('iter_retgen~answer.3f2a'
    is a variant of 'iter_retgen'); None when neither names another column."""
    for name in (recorded, ref.split("~", 1)[0] if "~" in ref else ""):
        if name and name != label and name in labels:
            return name
    return None


def unrelated(parent: str, parent_spec: FlowSpec, variant: str,
              variant_spec: FlowSpec) -> str | None:
    """Why two columns cannot be walked side by side (they share no node id, so every question
    would read "another node ran" at the first step), or None when they can."""
    if {n.id for n in parent_spec.nodes} & {n.id for n in variant_spec.nodes}:
        return None
    return (f"'{parent}' and '{variant}' share no node ids, so there is no step where they could "
            "run the same node: pick a variant and the column it was made from.")


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

"""Unsaved editor drafts, kept on the server so they survive a browser refresh or a closed tab.

One JSON file per draft under <data_dir>/drafts/: the flow it edits, the version it started from,
the edited spec and the browser tab (Streamlit session) that edits it. The draft id travels in the
page's query params. A draft belongs to one tab at a time: opening a flow without a draft id
resumes its latest draft that no open tab is editing, and a draft id that another open tab is
editing (a duplicated tab, a pasted address) is copied to a new id, so two tabs never share one.

A draft also keeps the breakpoints the user set on the editor's canvas (text in flowkit's syntax,
`node[@visit][:before|:after][?condition]`). They belong to the draft and to the run the Run page
starts from it, never to the saved flow: saving writes the spec only, so a saved flow runs straight
through in evaluations and exports. A draft with breakpoints is kept even when its spec is clean.
"""
from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from flowkit.breakpoints import Breakpoint, BreakpointError, parse_breakpoint
from flowkit.debug_expr import MAX_LENGTH, Condition, ExprError

When = Literal["before", "after"]
#: the longest breakpoint condition the expression checker reads (the side panel's field limit)
CONDITION_MAX_CHARS = MAX_LENGTH

@dataclass
class Draft:
    """An edit in progress: `spec` (FlowSpec as JSON data) started from `base_version` of `flow`."""

    flow: str
    draft_id: str
    base_version: int | None
    spec: dict[str, Any]
    updated_at: float = field(default_factory=time.time)
    owner: str | None = None    # the tab (Streamlit session id) editing it; None: nobody yet
    #: breakpoints set on the canvas, as text (not part of the flow; see the module's help)
    breakpoints: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"flow": self.flow, "draft_id": self.draft_id, "base_version": self.base_version,
                "spec": self.spec, "updated_at": self.updated_at, "owner": self.owner,
                "breakpoints": list(self.breakpoints)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Draft:
        return cls(flow=str(data["flow"]), draft_id=str(data["draft_id"]),
                   base_version=data.get("base_version"), spec=dict(data["spec"]),
                   updated_at=float(data.get("updated_at") or 0.0),
                   owner=(str(data["owner"]) if data.get("owner") else None),
                   breakpoints=[str(b) for b in data.get("breakpoints") or []
                                if isinstance(b, str) and b.strip()])

    def held_elsewhere(self, tab: str | None, is_open: Callable[[str], bool]) -> bool:
        """Whether another tab than `tab` that is still open edits this draft."""
        return bool(self.owner) and self.owner != tab and is_open(str(self.owner))


def _parsed(text: str) -> tuple[str, When] | None:
    try:
        bp = parse_breakpoint(text)
    except BreakpointError:
        return None
    return bp.node, bp.when


def node_marks(breakpoints: list[str]) -> dict[str, dict[When, list[str]]]:
    """{node: {"before"/"after": the breakpoints' texts}} for the canvas's red dots (texts that do
    not parse mark nothing; the Run page's box says what is wrong with them)."""
    marks: dict[str, dict[When, list[str]]] = {}
    for text in breakpoints:
        found = _parsed(text)
        if found is not None:
            marks.setdefault(found[0], {}).setdefault(found[1], []).append(text.strip())
    return marks


def set_node_breakpoints(breakpoints: list[str], node: str, before: bool, after: bool
                         ) -> list[str]:
    """The breakpoints with `node` pausing before and/or after it as asked: a side turned off
    loses every breakpoint on it (visits and conditions included); a side turned on keeps the ones
    it has, or gets a plain one (`node`, `node:after`). The others stay as they are, in order."""
    want: dict[When, bool] = {"before": before, "after": after}
    out: list[str] = []
    have: set[When] = set()
    for text in breakpoints:
        found = _parsed(text)
        if found is not None and found[0] == node:
            if not want[found[1]]:
                continue
            have.add(found[1])
        out.append(text)
    if before and "before" not in have:
        out.append(node)
    if after and "after" not in have:
        out.append(f"{node}:after")
    return out


def node_visit_condition(breakpoints: list[str], node: str) -> tuple[int | None, str | None]:
    """The visit and the condition of `node`'s breakpoints (its first one's; (None, None) without
    one): what the editor's side panel shows in the node's "visit" and "condition" fields."""
    for text in breakpoints:
        try:
            bp = parse_breakpoint(text)
        except BreakpointError:
            continue
        if bp.node == node:
            return bp.visit, bp.condition
    return None, None


def set_node_visit_condition(breakpoints: list[str], node: str, visit: int | None,
                             condition: str | None) -> list[str]:
    """The breakpoints with every side `node` pauses on pausing only on visit `visit` (None or 0:
    every visit) and only when `condition` holds (None or blank: always), one breakpoint a side,
    where the node's first one was; a node without breakpoints changes nothing. The condition is
    read by the same parser as the Run page's breakpoints box (flowkit.debug_expr: memory keys and
    counters only); a bad visit or condition raises BreakpointError naming the node and the field,
    and nothing changes."""
    if visit is not None and (isinstance(visit, bool) or not isinstance(visit, int) or visit < 0):
        raise BreakpointError(f"Breakpoint on node '{node}', visit not set: a whole number from 1 "
                              f"(0 or empty: every visit), not {visit!r}")
    cond = (condition or "").strip() or None
    try:
        Condition.of(cond or "true")        # the check Breakpoint() runs too, for a plainer message
    except ExprError as err:
        where = f" (column {err.position})" if err.position else ""
        shown = cond if cond is None or len(cond) <= 60 else cond[:57] + "..."
        raise BreakpointError(f"Breakpoint on node '{node}', condition {shown!r} not set: "
                              f"{err.detail}{where}") from None
    marks = node_marks(breakpoints).get(node, {})
    sides: list[When] = [s for s in ("before", "after") if s in marks]
    out: list[str] = []
    for text in breakpoints:
        found = _parsed(text)
        if found is None or found[0] != node:
            out.append(text)
        elif sides:
            out.extend(Breakpoint(node=node, when=s, visit=visit or None, condition=cond).label()
                       for s in sides)
            sides = []
    return out


def drop_node_breakpoints(breakpoints: list[str], node: str) -> list[str]:
    """The breakpoints without those on `node` (a node deleted from the draft)."""
    return set_node_breakpoints(breakpoints, node, False, False)


def new_draft_id() -> str:
    return secrets.token_hex(4)


def _slug(flow: str) -> str:
    """A file-name-safe form of a flow name, unique per name (hash suffix)."""
    safe = re.sub(r"[^A-Za-z0-9_\-]+", "_", flow)[:60]
    return f"{safe}-{hashlib.sha1(flow.encode()).hexdigest()[:8]}"


class DraftStore:
    """Drafts under one data directory. Writes are atomic (temp file + rename)."""

    def __init__(self, data_dir: str | Path) -> None:
        self.root = Path(data_dir) / "drafts"

    def _path(self, flow: str, draft_id: str) -> Path:
        if not re.fullmatch(r"[A-Za-z0-9]{1,32}", draft_id):
            raise ValueError(f"bad draft id {draft_id!r}")
        return self.root / f"{_slug(flow)}.{draft_id}.json"

    def save(self, draft: Draft) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        draft.updated_at = time.time()
        path = self._path(draft.flow, draft.draft_id)
        tmp = path.with_suffix(f".{secrets.token_hex(3)}.tmp")
        tmp.write_text(json.dumps(draft.to_dict(), ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)

    def load(self, flow: str, draft_id: str) -> Draft | None:
        try:
            path = self._path(flow, draft_id)
        except ValueError:
            return None
        return _read(path)

    def for_flow(self, flow: str) -> list[Draft]:
        """The drafts of one flow, newest first."""
        if not self.root.is_dir():
            return []
        found = [_read(p) for p in self.root.glob(f"{_slug(flow)}.*.json")]
        drafts = [d for d in found if d is not None and d.flow == flow]
        return sorted(drafts, key=lambda d: d.updated_at, reverse=True)

    def latest(self, flow: str, tab: str | None = None,
               is_open: Callable[[str], bool] | None = None) -> Draft | None:
        """The newest draft of `flow`; with `is_open`, the newest one no other open tab edits."""
        for d in self.for_flow(flow):
            if is_open is None or not d.held_elsewhere(tab, is_open):
                return d
        return None

    def delete(self, flow: str, draft_id: str) -> None:
        try:
            self._path(flow, draft_id).unlink(missing_ok=True)
        except ValueError:
            return

    def delete_flow(self, flow: str) -> None:
        """Remove every draft of a flow (when the flow is deleted)."""
        for d in self.for_flow(flow):
            self.delete(flow, d.draft_id)


def _read(path: Path) -> Draft | None:
    try:
        return Draft.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None

"""A debug run's pauses and a user's memory edits, as span events.

    pause         on the span of the node the run paused at: where and why (the breakpoint and
                  its condition), when it paused, when it went on and the seconds in between
                  (a pause the run was aborted at, or is still in: on the run's root span)
    memory edit   on the span of the node that ran next with the edited memory (a fork's edits:
                  on its root span): the keys changed and their new values as JSON, cut like
                  every other attribute (the full length kept under `flowkit.full_length.<key>`)

A pause is an event, not a span, because it is time the run did not spend: the node span still
lasts what the node took. The trace store keeps every pause of a run (`PauseMark.to_stored`, in
storage.debug's pause history), so a run sent after the fact (`flowkit trace --otlp`, `flowkit
evals send`) carries the same `pause` events as it did live.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from .bounds import AttrValue, Limits, as_json, put_text

if TYPE_CHECKING:
    from opentelemetry.trace import Span

PAUSE = "pause"
MEMORY_EDIT = "memory edit"
#: `flowkit.pause.mode` of a pause the run has not gone on from yet
STILL_PAUSED = "still paused"
#: `PauseMark.mode` of a pause the run was aborted at
ABORTED = "abort"
#: `MemoryEdit.source` of a replay fork's edits (they go on the fork's root span)
FORK = "fork"


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


@dataclass(frozen=True)
class PauseMark:
    """One pause of a debug run, known once the run goes on from it."""

    node: str                       # the node the run stopped at (it runs when the run goes on)
    visit: int
    when: str                       # "before" the node, or "after" `after_node`
    reason: str                     # "breakpoint generate@1", "step", "step over loop"
    paused_at: float                # seconds since the epoch
    resumed_at: float | None        # None: still paused (a paused run sent as it stands)
    mode: str = "continue"          # how it went on: continue, step, over; abort: it did not
    breakpoint: str | None = None   # the breakpoint that hit, as written (condition included)
    condition_error: str | None = None
    after_node: str | None = None

    def attributes(self) -> dict[str, AttrValue]:
        """The event's attributes (`flowkit.pause.*`)."""
        attrs: dict[str, AttrValue] = {
            "flowkit.pause.node": self.node, "flowkit.pause.visit": self.visit,
            "flowkit.pause.when": self.when, "flowkit.pause.reason": self.reason,
            "flowkit.pause.mode": self.mode if self.resumed_at is not None else STILL_PAUSED,
            "flowkit.pause.paused_at": self.paused_at,
        }
        if self.resumed_at is not None:
            attrs["flowkit.pause.resumed_at"] = self.resumed_at
            attrs["flowkit.pause.seconds"] = round(max(self.resumed_at - self.paused_at, 0.0), 6)
        if self.breakpoint:
            attrs["flowkit.pause.breakpoint"] = self.breakpoint
        if self.condition_error:
            attrs["flowkit.pause.condition_error"] = self.condition_error
        if self.after_node:
            attrs["flowkit.pause.after_node"] = self.after_node
        return attrs

    def add_to(self, span: Span) -> None:
        """Add this pause to `span` as a `pause` event at the time it paused."""
        span.add_event(PAUSE, self.attributes(), timestamp=_ns(self.paused_at))

    def to_stored(self) -> dict[str, Any]:
        """This pause as the JSON object the trace store keeps (storage.debug's pause history)."""
        return asdict(self)

    @classmethod
    def from_stored(cls, data: Mapping[str, Any], still_paused: bool = False) -> PauseMark:
        """A pause kept by the trace store (`to_stored`); `still_paused`: the run is paused at it
        now (a resumed_at left by a continue that died is not taken)."""
        known = {f.name for f in fields(cls)}
        mark = cls(**{k: v for k, v in data.items() if k in known})
        return replace(mark, resumed_at=None) if still_paused else mark


def stored_pauses(history: Sequence[Mapping[str, Any]], paused_now: bool = False
                  ) -> list[PauseMark]:
    """A run's pause history as the trace store keeps it (storage.debug), as PauseMarks;
    `paused_now`: the run is paused at the last one."""
    last = len(history) - 1
    return [PauseMark.from_stored(h, still_paused=paused_now and i == last)
            for i, h in enumerate(history)]


@dataclass(frozen=True)
class MemoryEdit:
    """Working-memory keys a user set: at a pause (before `node`'s visit ran) or in a fork."""

    changes: Mapping[str, Any]
    at: float
    source: str = "pause"           # "pause" (flowkit debug set, the studio) or "fork" (replay)
    node: str | None = None         # the node visit whose span carries it; None: the next one
    visit: int | None = None
    who: str = field(default="")

    def attributes(self, lim: Limits) -> dict[str, AttrValue]:
        """The event's attributes: the keys, and each new value as JSON under
        `flowkit.edit.value.<key>` (cut to the memory limit, its full length kept)."""
        attrs: dict[str, AttrValue] = {"flowkit.edit.keys": sorted(self.changes),
                                       "flowkit.edit.source": self.source}
        if self.who:
            attrs["flowkit.edit.who"] = self.who
        for key in sorted(self.changes):
            put_text(attrs, f"flowkit.edit.value.{key}", as_json(self.changes[key]), lim.memory)
        return attrs

    def add_to(self, span: Span, lim: Limits) -> None:
        """Add this edit to `span` as a `memory edit` event."""
        span.add_event(MEMORY_EDIT, self.attributes(lim), timestamp=_ns(self.at))

"""Trace and span ids derived from the run id, so a run is the same trace however often it is sent
(live, then `flowkit trace --otlp`: a collector sees the same ids again) and a fork's root span can
link to its parent run's root span without asking the collector."""
from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import Link, SpanContext, TraceFlags


def _digest(text: str, nbytes: int) -> int:
    value = int.from_bytes(hashlib.sha256(text.encode()).digest()[:nbytes], "big")
    return value or 1                                  # 0 is the invalid id


def trace_id_of(run_id: str) -> int:
    """The 128-bit trace id of a run."""
    return _digest(f"flowkit-trace:{run_id}", 16)


def span_id_of(run_id: str, n: int) -> int:
    """The 64-bit id of the run's `n`th span (0: its root, then in the order they are built)."""
    return _digest(f"flowkit-span:{run_id}:{n}", 8)


def root_context(run_id: str) -> SpanContext:
    """The span context of run `run_id`'s root span (built or not yet)."""
    return SpanContext(trace_id_of(run_id), span_id_of(run_id, 0), is_remote=True,
                       trace_flags=TraceFlags(TraceFlags.SAMPLED))


def root_link(run_id: str, attributes: dict[str, str | int]) -> Link:
    """A link to the root span of run `run_id` (a fork's parent run)."""
    return Link(root_context(run_id), attributes)


class RunIds(IdGenerator):
    """The provider's id generator: inside `for_run(run_id)`, ids derived from the run (per
    thread); elsewhere random ones."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._random = RandomIdGenerator()

    @contextmanager
    def for_run(self, run_id: str, part: str = "", root: bool = True) -> Iterator[None]:
        """Spans built in this block (on this thread) get the run's ids: the first one (the root,
        when `root`) `span_id_of(run_id, 0)`, the others numbered in order; a `part` of a run
        sent in parts numbers its spans apart (`run_id#part`), and without `root` none of them
        takes the root's id."""
        loc = self._local
        loc.run_id, loc.key, loc.next = run_id, f"{run_id}#{part}" if part else run_id, 0
        loc.root = root
        if not root:
            loc.next = 1
        try:
            yield
        finally:
            loc.run_id = None

    def generate_trace_id(self) -> int:
        run_id = getattr(self._local, "run_id", None)
        return trace_id_of(run_id) if run_id else self._random.generate_trace_id()

    def generate_span_id(self) -> int:
        loc = self._local
        run_id = getattr(loc, "run_id", None)
        if not run_id:
            return self._random.generate_span_id()
        n = loc.next
        loc.next = n + 1
        return span_id_of(run_id if n == 0 else loc.key, n)

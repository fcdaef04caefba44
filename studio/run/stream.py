"""The answer as it is written: the background run hands every generated piece to a per-run
buffer here (`on_token`), and the Run page reads the buffer on each poll, so the first words show
before the run ends. The buffer only mirrors the model's output for the screen; the trace records
the step as it always does (a streamed step is stored like a non-streamed one).

Process-wide (the job thread writes, any session reads), bounded: the oldest runs are forgotten.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

#: how many runs' buffers are kept (a finished run's answer is read from the database instead)
KEEP_RUNS = 32


@dataclass
class Streamed:
    """What one run's model calls have written so far: the latest call's text and where it is."""

    node_id: str = ""
    visit: int = 0
    text: str = ""
    calls: int = 0              # model calls that have started writing
    pieces: int = 0             # pieces received over the whole run
    call_pieces: int = 0        # pieces of the latest call (node visit) so far: its tokens
    _parts: list[str] = field(default_factory=list, repr=False)


class TokenBuffers:
    """run id -> Streamed, safe to write from the job thread and read from page threads."""

    def __init__(self, keep: int = KEEP_RUNS) -> None:
        self._lock = threading.Lock()
        self._runs: OrderedDict[str, Streamed] = OrderedDict()
        self._keep = keep

    def on_token(self, run_id: str) -> Callable[[str, int, str], None]:
        """The callback for run_flow(on_token=...): (node id, visit, piece) appended for run_id."""
        def add(node_id: str, visit: int, piece: str) -> None:
            with self._lock:
                s = self._runs.get(run_id)
                if s is None:
                    s = self._runs[run_id] = Streamed()
                    while len(self._runs) > self._keep:
                        self._runs.popitem(last=False)
                if (s.node_id, s.visit) != (node_id, visit) or not s._parts:
                    s.node_id, s.visit, s._parts = node_id, visit, []
                    s.calls += 1
                s._parts.append(piece)
                s.pieces += 1
                s.call_pieces = len(s._parts)
                s.text = "".join(s._parts)
        return add

    def get(self, run_id: str) -> Streamed | None:
        """A copy of what the run has written so far (None before its first piece)."""
        with self._lock:
            s = self._runs.get(run_id)
            if s is None:
                return None
            return Streamed(s.node_id, s.visit, s.text, s.calls, s.pieces, s.call_pieces)

    def forget(self, run_id: str) -> None:
        with self._lock:
            self._runs.pop(run_id, None)


_BUFFERS = TokenBuffers()


def buffers() -> TokenBuffers:
    """The studio process's buffers (the job thread and every session share them)."""
    return _BUFFERS

"""Fault injection for the model worker: kill it with a signal while it is answering a call."""
from __future__ import annotations

import os
import signal
import threading
from typing import Any

from ..runtime.llm import Completion


class KillWorkerDuringCall:
    """Wraps a `WorkerLLM`; during its next `complete` (`calls` of them), sends `sig` to the worker
    process `after_s` seconds after the request went out. Everything else passes through."""

    def __init__(self, inner: Any, sig: int = signal.SIGSEGV, after_s: float = 0.05, calls: int = 1) -> None:
        self._inner = inner
        self.sig = sig
        self.after_s = after_s
        self.left = calls
        #: pids that were sent the signal
        self.killed: list[int] = []

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        if self.left > 0:
            self.left -= 1
            self._inner.count_tokens("start the worker if it is not up")
            pid = self._inner.pid
            timer = threading.Timer(self.after_s, self._kill, args=(pid,))
            timer.start()
            try:
                return self._inner.complete(prompt, **kwargs)
            finally:
                timer.cancel()
        return self._inner.complete(prompt, **kwargs)

    def _kill(self, pid: int) -> None:
        self.killed.append(pid)
        os.kill(pid, self.sig)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

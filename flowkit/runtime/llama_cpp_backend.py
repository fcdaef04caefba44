"""The llama.cpp backend: the model in this process, through llama-cpp-python.

`LlamaCppLLM` loads a GGUF lazily (`gguf_load.load_llama`, which decides about AMX), renders
prompts with `prompt_formats`, keeps whole prompt blocks of the last call in the KV cache
(`prefix.PrefixReuse`) and serves one call at a time under its lock. The supervised worker
(`worker.py`) serves this class over HTTP; `in_process: true` uses it directly. With `on_token` a
call hands each piece of its text to the callback as it is generated (`streaming.PieceStream`)
without changing what is generated: the same decoding, the same text, the same token counts.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from ..errors import ContextOverflowError
from . import amx, device
from .gguf import file_hash, inspect_gguf
from .gguf_load import load_llama
from .llm_contract import Completion, LLMSettings, OnToken, StopCheck, default_threads
from .prefix import PrefixReuse
from .prompt_formats import _chat_formatter, base_prompt
from .streaming import PieceStream

__all__ = ["GGUFModel", "LlamaCppLLM", "default_model_path", "file_hash", "resolve_model_path"]


def default_model_path() -> Path:
    """The GGUF file of the default packaged model (`models.DEFAULT_MODEL`)."""
    from .models import DEFAULT_MODEL, packaged_path
    return packaged_path(DEFAULT_MODEL)


def resolve_model_path(settings: LLMSettings) -> Path:
    """The GGUF file the settings name (a packaged model's id, a path, or '' for the default
    model); it must exist and pass `inspect_gguf` (a GGUF whose header and tensor table fit in the
    file)."""
    from .models import model_file
    path = model_file(settings.model_path)
    inspect_gguf(path)     # missing, not GGUF or cut short: a clear ResourceError before llama.cpp
    return path


class GGUFModel:
    """What both llama.cpp backends (in this process, in a supervised worker) know before loading:
    the settings, the GGUF file they name (checked here), its id, its hash and the context size.

    `requested` is what the user gave; `settings` is what the model loads with on this device
    (`device.plan`: unset GPU layers, batch and prefix reuse decided by the device), and `offload`
    the plan itself (the device, the layers actually offloaded). A GPU setting on a build that
    cannot offload raises ResourceError here, before anything loads."""

    def __init__(self, settings: LLMSettings) -> None:
        from .models import model_file
        self.requested = settings
        self.path = model_file(settings.model_path)
        info = inspect_gguf(self.path)     # missing, not GGUF, cut short: ResourceError here
        self.model_id = self.path.name
        self.gguf = info
        self.offload: device.Plan = device.plan(settings, info.block_count)
        self.settings = self.offload.settings

    @property
    def gpu_layers_offloaded(self) -> int:
        """The layers that go to the GPU on this device (0 on a CPU): the cache key's GPU part."""
        return self.offload.layers_offloaded

    @property
    def model_hash(self) -> str:
        return file_hash(self.path)

    @property
    def n_ctx(self) -> int:
        return self.settings.n_ctx


class LlamaCppLLM(GGUFModel):
    """llama.cpp in-process through llama-cpp-python. Loads lazily, on the first call."""

    def __init__(self, settings: LLMSettings) -> None:
        import llama_cpp  # noqa: F401 - loaded here anyway: the device is asked in this process
        super().__init__(settings)
        self._llama: Any = None
        self._formatter: Any = None
        self._lock = threading.Lock()
        #: whether the model was loaded with llama.cpp's extra buffer types, and why (after load)
        self.extra_bufts: amx.Decision | None = None
        #: whole n_batch blocks of recent prompts kept for reuse (runtime/prefix.py)
        self.prefix = PrefixReuse(self.offload.n_batch, self.offload.prefix_reuse,
                                  settings.prefix_slots, settings.prefix_cache_mb << 20)

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def _load(self) -> Any:
        if self._llama is None:
            # the weights and the context must fit: refused with the figures, not a native crash
            device.check_memory(self.gguf, self.offload, self.settings.n_ctx)
            threads = self.settings.n_threads or default_threads()
            loaded = load_llama(self.path, self.settings.extra_bufts, n_ctx=self.settings.n_ctx,
                                n_threads=threads, n_threads_batch=threads,
                                n_gpu_layers=self.settings.n_gpu_layers, seed=self.settings.seed,
                                n_batch=self.offload.n_batch)
            self._llama, self.extra_bufts = loaded.llama, loaded.decision
            self.prefix.window(_sliding_window(self._llama))
            self._formatter = _chat_formatter(self._llama)
        return self._llama

    def start(self) -> None:
        """Load the model now (the studio's background load); a call made meanwhile waits."""
        with self._lock:
            self._load()

    def gpu_offload_supported(self) -> bool:
        """Whether this llama.cpp build can offload layers to a GPU."""
        import llama_cpp
        return bool(llama_cpp.llama_supports_gpu_offload())

    @property
    def kind(self) -> str:
        """'instruct' when the GGUF carries a chat template, 'base' when not (loads the model)."""
        self._load()
        return "base" if self._formatter is None else "instruct"

    def render(self, prompt: str, system: str | None = None) -> tuple[str, list[str]]:
        """The exact text sent to the model for one user turn, and the stop strings that go with it:
        the chat template's where the GGUF has one, else plain completion (`base_prompt`)."""
        self._load()
        messages = ([{"role": "system", "content": system}] if system else []) + \
            [{"role": "user", "content": prompt}]
        if self._formatter is None:
            return base_prompt(prompt, system, examples=self.settings.prompt_examples)
        out = self._formatter(messages=messages)
        stops = out.stop if isinstance(out.stop, list) else ([out.stop] if out.stop else [])
        stops = [s for s in stops if s]   # a special token detokenizes to '' and would stop at once
        return out.prompt, stops

    def tokenize(self, text: str) -> list[int]:
        """The token ids of `text` as a prompt (with BOS, special tokens parsed)."""
        with self._lock:
            llama = self._load()
            return list(llama.tokenize(text.encode("utf-8"), add_bos=True, special=True))

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def token_logprobs(self, text: str) -> list[tuple[str, float]]:
        """Each token of `text` with its log-probability given the text before it (the first
        token, with no text before it, gets 0.0); the pieces join to `text`. One batched pass."""
        with self._lock:
            self.prefix.forget()
            return _prompt_logprobs(self._load(), text)

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None, timeout_s: float | None = None,
                 should_stop: StopCheck | None = None,
                 on_token: OnToken | None = None) -> Completion:
        """One completion. `should_stop`, when given, is asked after every generated token; a
        reason from it ends the generation and raises `GenerationStopped` (the worker stops a
        generation whose client went away or whose deadline passed). `on_token`, when given, gets
        the text in pieces as it is generated (one token behind the sampler); the pieces join to
        the returned text. Neither reads anything the model computes, so a generation they let
        finish is the same as without them."""
        # timeout_s: in-process generation cannot be interrupted; the worker passes should_stop
        with self._lock:
            llama = self._load()
            text, template_stops = self.render(prompt, system)
            prompt_ids = list(llama.tokenize(text.encode("utf-8"), add_bos=True, special=True))
            n_prompt = len(prompt_ids)
            if n_prompt + max_tokens > self.settings.n_ctx:
                if n_prompt + 8 > self.settings.n_ctx:
                    raise ContextOverflowError(
                        f"prompt is {n_prompt} tokens; the model's context is {self.settings.n_ctx} "
                        f"(settings: n_ctx). Shorten the question or retrieve fewer documents.")
                max_tokens = self.settings.n_ctx - n_prompt
            temp = self.settings.temperature if temperature is None else temperature
            stopped: list[tuple[str, int]] = []
            sampled = [0]
            stops = (stop or []) + template_stops
            pieces = PieceStream(on_token, stops)

            def criterion(input_ids: Any = None, _logits: Any = None) -> bool:
                # asked once after every sampled token, with the tokens before it
                sampled[0] += 1
                if not stopped and should_stop is not None:
                    why = should_stop()
                    if why:
                        stopped.append((why, sampled[0]))
                if on_token is not None and not stopped and input_ids is not None:
                    made = [int(t) for t in input_ids[n_prompt:]]
                    pieces.feed(llama.detokenize(made, prev_tokens=prompt_ids)
                                .decode("utf-8", errors="ignore"))
                return bool(stopped)

            watch = should_stop is not None or on_token is not None

            t0 = time.perf_counter()
            if logprobs:
                self.prefix.forget()
                out_text, lp, n_gen, reason = _generate_with_logprobs(
                    llama, text, max_tokens, temp, stops, self.settings.seed,
                    criterion if should_stop is not None else None,
                    pieces.feed if on_token is not None else None)
            else:
                # KV reuse only of whole n_batch blocks, so the rest of the prompt is evaluated
                # in the batches a fresh call uses: the same logits, the same greedy output
                self.prefix.prepare(llama, prompt_ids)
                try:
                    res = llama.create_completion(
                        text, max_tokens=max_tokens, temperature=temp,
                        stop=stops, seed=self.settings.seed,
                        stopping_criteria=criterion if watch else None)
                except BaseException:
                    self.prefix.forget()
                    raise
                self.prefix.done(llama, prompt_ids)
                choice = res["choices"][0]
                out_text, lp = choice["text"], None
                n_gen = res["usage"]["completion_tokens"]
                reason = choice.get("finish_reason") or "stop"
            if stopped:
                from ..errors import GenerationStopped
                raise GenerationStopped(*stopped[0])
            ms = (time.perf_counter() - t0) * 1000
            pieces.finish(out_text.strip())
        return Completion(prompt=text, text=out_text.strip(), prompt_tokens=n_prompt,
                          completion_tokens=n_gen, ms=ms, finish_reason=reason, logprobs=lp)


def _sliding_window(llama: Any) -> int:
    """The model's sliding attention window in positions (0 when it has none)."""
    import llama_cpp
    try:
        return int(llama_cpp.llama_model_n_swa(llama._model.model))
    except (AttributeError, TypeError):      # an older llama.cpp without the call: the GGUF's key
        keys = [k for k in llama.metadata if k.endswith(".attention.sliding_window")]
        return int(llama.metadata[keys[0]]) if keys else 0


def _prompt_logprobs(llama: Any, text: str) -> list[tuple[str, float]]:
    """Score the tokens of `text` in batches of n_batch, asking llama.cpp for every position's
    logits (the context keeps only the last row by default)."""
    import numpy as np

    toks = list(llama.tokenize(text.encode("utf-8"), add_bos=True, special=False))
    bos = llama.token_bos()
    start = 1 if toks and toks[0] == bos and len(toks) > 1 else 0
    if len(toks) > llama.n_ctx():
        raise ContextOverflowError(f"the text to score is {len(toks)} tokens; the model's context "
                                   f"is {llama.n_ctx()} (settings: n_ctx)")
    n_vocab = llama.n_vocab()
    llama.reset()
    llama._ctx.kv_cache_seq_rm(-1, 0, -1)
    lps = [0.0] * len(toks)
    prev_row: Any = None       # log-softmax of the last position of the previous batch
    for i in range(0, len(toks), llama.n_batch):
        batch = toks[i:i + llama.n_batch]
        llama._batch.set_batch(batch=batch, n_past=i, logits_all=True)
        llama._ctx.decode(llama._batch)
        rows = np.array(np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(len(batch), n_vocab)),
                        dtype=np.float32)
        rows -= rows.max(axis=1, keepdims=True)
        rows -= np.log(np.exp(rows).sum(axis=1, keepdims=True))
        if prev_row is not None:
            lps[i] = float(prev_row[batch[0]])
        for j in range(1, len(batch)):
            lps[i + j] = float(rows[j - 1, batch[j]])
        prev_row = rows[-1].copy()
    llama.reset()
    out: list[tuple[str, float]] = []
    pending = b""
    for tok, lp in zip(toks[start:], lps[start:]):
        pending += llama.detokenize([tok])
        try:
            piece, pending = pending.decode("utf-8"), b""
        except UnicodeDecodeError:
            piece = ""       # a character split across tokens: it appears with the last of them
        out.append((piece, lp))
    if start == 0 and out:
        out[0] = (out[0][0], 0.0)
    return out


def _generate_with_logprobs(llama: Any, text: str, max_tokens: int, temperature: float,
                            stops: list[str], seed: int = 0,
                            stop_check: Any = None,
                            on_text: Any = None) -> tuple[str, list[tuple[str, float]], int, str]:
    """Token-by-token generation that records each chosen token's log-probability.

    Reads the last row of logits after every evaluation, so it works without `logits_all`
    (which would hold n_ctx x vocab floats). `stop_check()`, when given, is asked after
    every chosen token and ends the loop when it says so; `on_text(text so far)`, when given,
    is called after every chosen token.
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
        if stop_check is not None and stop_check():
            reason = "stop"
            break
        pieces.append(piece)
        lps.append((piece, float(logits[tok] - logz)))
        joined = "".join(pieces)
        if on_text is not None:
            on_text(joined)
        if any(s and s in joined for s in stops):
            reason = "stop"
            break
        llama.eval([tok])
    joined = "".join(pieces)
    for s in stops:
        if s and s in joined:
            joined = joined[: joined.index(s)]
    return joined, lps, len(out), reason

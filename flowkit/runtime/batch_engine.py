"""The model side of `flowkit serve-model --parallel N`: one llama.cpp context with N sequences on
the model the serial server loaded, the chat prompt built as the serial server builds it, and the
thread that runs the slot scheduler (`batch_slots.Scheduler`).

The context copies the serial `Llama`'s context parameters (threads, batch sizes, attention and
cache types) with `n_seq_max = N`, the KV cache split per sequence (`kv_unified` off) and N times
`--n-ctx` tokens, so every slot has `--n-ctx` tokens of context, as the serial server has. A step
evaluates at most `n_batch` tokens: the generating slots' next tokens and chunks of the prompts
being read (the scheduler composes it), each sequence with its own id and positions. On the CPU a
token's logits do not depend on the other sequences beside it, but do depend on whether its own
sequence has one token or several in the micro-batch (another attention path), so `evaluate`
chooses the micro-batches itself and the scheduler reads prompts in chunks of a fresh call's
shape: a slot's greedy text is the serial server's (tests/servers/test_serve_model_parallel.py)."""
from __future__ import annotations

import ctypes
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ResourceError
from .batch_sampling import Logits
from .batch_slots import EngineStopped, Entry, Job, Scheduler, SlotModel

#: the most slots `--parallel` takes
MAX_PARALLEL = 64


class LlamaSlots:
    """`n_slots` sequences of `n_ctx` tokens each in one new context on `llama`'s model."""

    def __init__(self, llama: Any, n_slots: int, n_ctx: int) -> None:
        import llama_cpp as lc
        self._lc, self._llama = lc, llama
        params = type(llama.context_params).from_buffer_copy(llama.context_params)
        params.n_ctx = n_ctx * n_slots
        params.n_seq_max = n_slots
        params.kv_unified = False
        self.n_batch = min(int(params.n_batch), int(params.n_ubatch))
        ctx = lc.llama_init_from_model(llama.model, params)
        if not ctx:
            raise ResourceError(f"llama.cpp could not make a context of {n_slots} slots x {n_ctx} "
                                "tokens (out of memory? lower --parallel or --n-ctx)")
        self._ctx = ctx
        self._memory = lc.llama_get_memory(ctx)
        self._vocab = llama._model.vocab
        self.n_vocab = int(llama.n_vocab())
        self.n_slots = n_slots
        self.n_ctx = min(n_ctx, int(lc.llama_n_ctx_seq(ctx)))
        self._batch = lc.llama_batch_init(max(self.n_batch, n_slots), 0, 1)
        self._closed = False

    def evaluate(self, entries: Sequence[Entry]) -> list[Logits]:
        """Evaluate `entries` (at most `n_batch`); the rows asked for, in order.

        llama.cpp splits a batch over split KV streams into micro-batches of equal tokens per
        sequence; left to itself it would put the first token of a prompt chunk beside the
        generating slots' single tokens. Instead the sequences go in one `llama_decode` per
        count of tokens they have here (the generating ones together, prompt chunks of the same
        length together): the same micro-batches in number, each token on the kernels a fresh
        serial call uses for it (see `batch_slots._chunk`)."""
        count = Counter(e.seq for e in entries)
        groups: dict[int, list[int]] = {}
        for i, entry in enumerate(entries):
            groups.setdefault(count[entry.seq], []).append(i)
        rows: dict[int, Logits] = {}
        for size in sorted(groups):
            self._decode([entries[i] for i in groups[size]])
            rows.update((i, self._row(j)) for j, i in enumerate(groups[size])
                        if entries[i].logits)
        return [rows[i] for i in range(len(entries)) if entries[i].logits]

    def _decode(self, entries: Sequence[Entry]) -> None:
        batch = self._batch
        batch.n_tokens = len(entries)
        for i, (seq, token, pos, logits) in enumerate(entries):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = logits
        code = self._lc.llama_decode(self._ctx, batch)
        if code != 0:
            raise RuntimeError(f"llama_decode returned {code} (1: no room in the KV cache)")

    def forget(self, seq: int) -> None:
        """Remove sequence `seq` from the KV cache."""
        self._lc.llama_memory_seq_rm(self._memory, seq, -1, -1)

    def piece(self, token: int) -> bytes:
        """The token's text (special tokens as nothing, as `Llama.detokenize`)."""
        return bytes(self._llama._model.detokenize([token]))

    def is_end(self, token: int) -> bool:
        """End of generation (llama.cpp's `llama_vocab_is_eog`)."""
        return bool(self._lc.llama_vocab_is_eog(self._vocab, token))

    def close(self) -> None:
        """Free the batch and the context."""
        if not self._closed:
            self._closed = True
            self._lc.llama_batch_free(self._batch)
            self._lc.llama_free(self._ctx)

    def _row(self, i: int) -> Logits:
        ptr = self._lc.llama_get_logits_ith(self._ctx, i)
        row: Logits = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)),
                                            shape=(self.n_vocab,)).copy()
        return row


class _Captured(Exception):
    """Carries what a chat handler would hand to `create_completion`."""

    def __init__(self, prompt: list[int], stop: list[str]) -> None:
        super().__init__("captured")
        self.prompt, self.stop = prompt, stop


class _CaptureCompletion:
    """`llama` for a chat handler, but `create_completion` hands back its prompt and stop."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, *, prompt: list[int], stop: Any = None, **_: Any) -> Any:
        stops = [] if stop is None else [stop] if isinstance(stop, str) else list(stop)
        raise _Captured(list(prompt), [str(s) for s in stops])


def chat_prompt(llama: Any, messages: list[Any],
                stop: str | list[str] | None) -> tuple[list[int], list[str]]:
    """The prompt tokens and stop strings `llama.create_chat_completion` would generate from:
    the same chat handler (the GGUF's template, or the format llama-cpp-python recognised)
    renders and tokenizes, and its call to `create_completion` is caught. ValueError when the
    template refuses the messages, whatever it raised (a template error, content it cannot join)."""
    from llama_cpp import llama_chat_format
    handler: Any = (llama.chat_handler or llama._chat_handlers.get(llama.chat_format)
               or llama_chat_format.get_chat_completion_handler(llama.chat_format))
    try:
        handler(llama=_CaptureCompletion(llama), messages=messages, stop=stop)
    except _Captured as got:
        return got.prompt, got.stop
    except Exception as err:        # the template's refusal, as jinja words it
        raise ValueError(f"{type(err).__name__}: {err}") from err
    raise ValueError("the chat handler did not call create_completion")   # pragma: no cover


class BatchEngine:
    """The scheduler on its own thread over `slots` (a `LlamaSlots` on the serial server's `llama`,
    made by `open`; a scripted `SlotModel` in the tests)."""

    def __init__(self, llama: Any, slots: SlotModel) -> None:
        self.llama, self.slots = llama, slots
        self.scheduler = Scheduler(slots)
        self.parallel, self.n_ctx = slots.n_slots, slots.n_ctx
        self._closed = False
        self._thread = threading.Thread(target=self.scheduler.run, name="flowkit-batch-decode",
                                        daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, llama: Any, parallel: int, n_ctx: int) -> BatchEngine:
        """The engine of `parallel` slots of `n_ctx` tokens on `llama`'s model."""
        if not 1 < parallel <= MAX_PARALLEL:
            raise ValueError(f"parallel must be 2..{MAX_PARALLEL}, not {parallel}")
        return cls(llama, LlamaSlots(llama, parallel, n_ctx))

    @property
    def failure(self) -> str | None:
        """Why the engine cannot serve (its thread stopped, and why), or None while it can."""
        reason = self.scheduler.failure
        if reason is None and not self._closed and not self._thread.is_alive():
            reason = "the batching engine's thread has stopped"
        return reason

    def submit(self, job: Job) -> None:
        """Queue a job (PromptTooLong when it cannot fit a slot, EngineStopped when the engine
        cannot serve)."""
        reason = self.failure
        if reason is not None:
            raise EngineStopped(reason)
        self.scheduler.submit(job)

    def close(self) -> None:
        """Stop the decode thread and free the slots' context."""
        self._closed = True
        self.scheduler.stop()
        self._thread.join(timeout=60)
        close = getattr(self.slots, "close", None)
        if close is not None:
            close()

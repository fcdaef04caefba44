"""Deterministic KV prefix reuse for llama.cpp: reuse only whole prompt blocks aligned to n_batch.

llama.cpp's own prompt cache evaluates the rest of a prompt in other batch shapes than a fresh call
(it starts the first batch where the shared prefix ends), and the logits differ enough to change
greedy output (../shared/GUIDE.md, "Determinism, caching and reuse"). A fresh call evaluates a
prompt in batches [0, B), [B, 2B), ... (B = n_batch; llama.cpp splits them into ubatches of
min(n_batch, n_ubatch), which divide them the same way). So after a call the context keeps the
prompt's whole blocks [0, kB), computed exactly as a fresh call computes them; a next prompt that
starts with the same tokens keeps the whole blocks it shares (never its last token) and evaluates
the rest from a block boundary, in exactly the batches a fresh call would use. Its cells sit where
a fresh call puts them (the freed cells after the kept prefix are reused in order), so the logits,
and the greedy output, are the same token for token (tests/runtime/test_prefix_reuse.py proves it
on the real model, every template).

Calls that share instructions and passages are often not consecutive (another node, another flow
in between), so besides the blocks in the context a few earlier prefixes are kept as snapshots:
the KV cells of sequence 0, copied out with `llama_state_seq_get_data` when the context is about to
lose them and copied back with `llama_state_seq_set_data` into a cleared context, where they take
cells 0..n-1, the cells a fresh call fills. A next prompt keeps the longest whole-block prefix it
shares with the context or any snapshot. Snapshots are bounded in count (`slots`) and bytes
(`max_bytes`) and the least recently used go first; a snapshot whose tokens begin another's is
dropped as covered.

Sliding-window models (Gemma 3: local layers see the last 512 positions) keep every cell in the
live context, but llama.cpp copies out of the sliding-window cache only the cells inside the window
of the sequence's last position; a snapshot of a longer prefix would come back without the early
cells and change the logits (measured: 8 of 76 completions differed). So a snapshot holds at most
the whole blocks that fit inside the window (`window()`): the context is cut to them before the
copy, and only when the blocks after them are not needed any more.

What a call generated, and the partial last block of its prompt (evaluated in a smaller batch than
a longer prompt would be), are never reused. Any other use of the context (prompt scoring, logprob
generation) forgets what the context holds; snapshots stay valid (they are copies).
"""
from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def aligned_prefix(held: Sequence[int], tokens: Sequence[int], block: int) -> int:
    """How many leading tokens of `tokens` to keep from `held` (whole blocks of KV cache): the
    common prefix, short of the prompt's last token, rounded down to a block."""
    if block <= 0:
        return 0
    n = 0
    limit = min(len(held), len(tokens) - 1)
    while n < limit and held[n] == tokens[n]:
        n += 1
    return (n // block) * block


@dataclass
class Snapshot:
    """The KV cells of whole prompt blocks, copied out of a context."""

    tokens: list[int]
    data: Any            # a ctypes byte array (or any bytes-like object in tests)
    size: int


class PrefixReuse:
    """What the context of one `Llama` holds in whole blocks, the snapshots of earlier prefixes, and
    the counts of prompt tokens reused and evaluated. Used under the model's lock."""

    def __init__(self, block: int, enabled: bool = True, slots: int = 16,
                 max_bytes: int = 256 << 20) -> None:
        self.block = int(block)
        self.enabled = enabled
        self.slots = max(0, int(slots))
        self.max_bytes = max(0, int(max_bytes))
        #: the most tokens a snapshot may hold (whole blocks); None: no limit
        self.cap: int | None = None
        self._held: list[int] = []
        self._saved: list[Snapshot] = []      # least recently used first
        self.reused = 0
        self.evaluated = 0
        self.restored = 0

    def prepare(self, llama: Any, tokens: Sequence[int]) -> int:
        """Make the context hold the longest reusable prefix of `tokens` (and nothing after it),
        from the context itself or a snapshot, or reset it; returns how many prompt tokens are
        kept. Call just before the completion."""
        keep, source = 0, None
        if self.enabled:
            keep = aligned_prefix(self._held, tokens, self.block)
            for snap in self._saved:
                k = aligned_prefix(snap.tokens, tokens, self.block)
                if k > keep:
                    keep, source = k, snap
            if source is not None:       # most recently used, so the stash never evicts it
                self._touch(source)
            if source is not None or keep < len(self._held):
                # the context is about to lose blocks it holds; `keep` of them stay in use
                self._stash(llama, 0 if source is not None else keep)
        if source is not None:
            if self._restore(llama, source, keep):
                self.restored += 1
                self._touch(source)      # the stash may have put a newer one after it
            else:
                keep = 0
        elif keep and llama._ctx.kv_cache_seq_rm(-1, keep, -1):
            llama.n_tokens = keep
        else:
            keep = 0
        if not keep:
            llama.reset()
        self.reused += keep
        self.evaluated += len(tokens) - keep
        self._held = []
        return keep

    def done(self, llama: Any, tokens: Sequence[int]) -> None:
        """After a completion of prompt `tokens`: the context keeps its whole blocks (what was
        generated and the partial last block are dropped, so a snapshot copies only blocks)."""
        if not self.enabled:
            self._held = []
            return
        n = (len(tokens) // self.block) * self.block
        if n and llama._ctx.kv_cache_seq_rm(-1, n, -1):
            llama.n_tokens = n
            self._held = list(tokens[:n])
        else:
            self._held = []

    def forget(self) -> None:
        """The context was used another way: it holds nothing reusable (snapshots stay)."""
        self._held = []

    def stats(self) -> dict[str, int]:
        return {"prompt_tokens_reused": self.reused, "prompt_tokens_evaluated": self.evaluated,
                "block": self.block, "snapshots": len(self._saved),
                "snapshot_bytes": sum(s.size for s in self._saved),
                "snapshots_restored": self.restored}

    # -- snapshots -------------------------------------------------------------------------------

    def window(self, n_swa: int) -> None:
        """The model attends over a sliding window of `n_swa` positions in some layers (0: none):
        snapshots hold only whole blocks inside it."""
        self.cap = ((n_swa - 1) // self.block) * self.block if n_swa > 0 else None

    def _touch(self, snap: Snapshot) -> None:
        """Make `snap` the most recently used snapshot."""
        self._saved.remove(snap)
        self._saved.append(snap)

    def _stash(self, llama: Any, in_use: int) -> None:
        """Copy the blocks the context holds into a snapshot (unless one covers them already);
        the context's first `in_use` tokens must stay as they are."""
        held = self._held
        if not held or not self.slots:
            return
        if self.cap is not None and len(held) > self.cap:
            if in_use > self.cap or not self.cap or \
                    not llama._ctx.kv_cache_seq_rm(-1, self.cap, -1):
                return
            held = self._held = held[:self.cap]
            llama.n_tokens = min(llama.n_tokens, self.cap)
        for snap in self._saved:
            if snap.tokens[:len(held)] == held:
                return
        data, size = self._copy_out(llama)
        if not size or size > self.max_bytes:
            return
        self._saved = [s for s in self._saved if held[:len(s.tokens)] != s.tokens]
        self._saved.append(Snapshot(list(held), data, size))
        while len(self._saved) > self.slots or \
                sum(s.size for s in self._saved) > self.max_bytes:
            self._saved.pop(0)

    def _copy_out(self, llama: Any) -> tuple[Any, int]:
        """The KV cells of sequence 0 as bytes (llama.cpp's per-sequence state)."""
        import llama_cpp
        ctx = llama._ctx.ctx
        size = int(llama_cpp.llama_state_seq_get_size(ctx, 0))
        if size <= 0:
            return None, 0
        buf = (ctypes.c_uint8 * size)()
        got = int(llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0))
        return (buf, got) if got == size else (None, 0)

    def _restore(self, llama: Any, snap: Snapshot, keep: int) -> bool:
        """Clear the context, copy a snapshot's cells back (they take cells 0..n-1, where a fresh
        call puts them) and keep its first `keep` tokens. False if llama.cpp refuses."""
        import llama_cpp
        llama._ctx.kv_cache_clear()
        llama.n_tokens = 0
        if not llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, snap.data, snap.size, 0):
            llama._ctx.kv_cache_clear()
            return False
        if keep < len(snap.tokens) and not llama._ctx.kv_cache_seq_rm(-1, keep, -1):
            llama._ctx.kv_cache_clear()
            return False
        llama.input_ids[:keep] = snap.tokens[:keep]
        llama.n_tokens = keep
        return True

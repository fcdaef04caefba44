"""Deterministic KV prefix reuse for llama.cpp: reuse only whole prompt blocks aligned to n_batch.

llama.cpp's own prompt cache evaluates the rest of a prompt in other batch shapes than a fresh call
(it starts the first batch where the shared prefix ends), and the logits differ enough to change
greedy output (../shared/GUIDE.md, "Determinism, caching and reuse"). A fresh call evaluates a
prompt in batches [0, B), [B, 2B), ... (B = n_batch; llama.cpp splits them into ubatches of
min(n_batch, n_ubatch), which divide them the same way). So the KV cache holds, after a call, the
previous prompt's whole blocks [0, kB) computed exactly as a fresh call computes them; a next
prompt that starts with the same tokens keeps the whole blocks it shares (never its last token)
and evaluates the rest from a block boundary, in exactly the batches a fresh call would use. Its
cells sit where a fresh call puts them (the freed cells after the kept prefix are reused in order),
so the logits, and the greedy output, are the same token for token
(tests/runtime/test_prefix_reuse.py proves it on the real model).

What the previous call generated, and the partial last block of its prompt (evaluated in a smaller
batch than a longer prompt would be), are never reused. Any other use of the context (prompt
scoring, logprob generation) forgets what is held.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def aligned_prefix(held: Sequence[int], tokens: Sequence[int], block: int) -> int:
    """How many leading tokens of `tokens` to keep from `held` (the whole blocks the KV cache
    holds): the common prefix, short of the prompt's last token, rounded down to a block."""
    if block <= 0:
        return 0
    n = 0
    limit = min(len(held), len(tokens) - 1)
    while n < limit and held[n] == tokens[n]:
        n += 1
    return (n // block) * block


class PrefixReuse:
    """What the KV cache of one `Llama` holds in whole blocks, and the counts of prompt tokens
    reused and evaluated. Used under the model's lock."""

    def __init__(self, block: int, enabled: bool = True) -> None:
        self.block = int(block)
        self.enabled = enabled
        self._held: list[int] = []
        self.reused = 0
        self.evaluated = 0

    def prepare(self, llama: Any, tokens: Sequence[int]) -> int:
        """Make the context hold the reusable prefix of `tokens` (and nothing after it), or reset
        it; returns how many prompt tokens are kept. Call just before the completion."""
        keep = aligned_prefix(self._held, tokens, self.block) if self.enabled else 0
        if keep and llama._ctx.kv_cache_seq_rm(-1, keep, -1):
            llama.n_tokens = keep
        else:
            keep = 0
            llama.reset()
        self.reused += keep
        self.evaluated += len(tokens) - keep
        self._held = []
        return keep

    def done(self, tokens: Sequence[int]) -> None:
        """After a completion of prompt `tokens`: its whole blocks are held."""
        self._held = list(tokens[: (len(tokens) // self.block) * self.block]) if self.enabled else []

    def forget(self) -> None:
        """The context was used another way: hold nothing."""
        self._held = []

    def stats(self) -> dict[str, int]:
        return {"prompt_tokens_reused": self.reused, "prompt_tokens_evaluated": self.evaluated,
                "block": self.block}

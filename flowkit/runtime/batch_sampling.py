"""How `flowkit serve-model --parallel N` picks each token from a slot's logits, and the
log-probabilities it reports.

At temperature 0 the pick is the argmax (the first of equal maxima, as llama.cpp's greedy sampler).
Above 0 it is seeded sampling in llama-cpp-python's order: top-k, then top-p, then min-p, then the
temperature, then a draw from a random generator seeded with the request's `seed`. The same request
draws the same tokens from the same logits every time, but not the tokens the serial server
(`--parallel 1`) draws: llama.cpp's sampler uses another random generator.

A seed is read as llama.cpp reads it (`rng_for`): as an unsigned 32-bit number (a negative or larger
one wraps, as the C cast does), and 0xFFFFFFFF, which `-1` becomes, means "pick a random seed"
(llama.cpp's `LLAMA_DEFAULT_SEED`). Every pick keeps at least the most likely token, whatever the
filters ask (llama.cpp's `min_keep`), so no sampling numbers can leave nothing to draw from."""
from __future__ import annotations

import secrets
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Logits = npt.NDArray[np.float32]

#: llama.cpp's LLAMA_DEFAULT_SEED: the seed `-1` becomes, meaning "random"
RANDOM_SEED = 0xFFFFFFFF


@dataclass(frozen=True)
class Sampling:
    """A request's sampling numbers (the OpenAI / llama-cpp-python names)."""

    temperature: float = 0.0
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    seed: int = 42
    top_logprobs: int | None = None     # None: no log-probabilities; n: the pick's and n best


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token's log-probability and the best alternatives'."""

    token: bytes
    logprob: float
    top: tuple[tuple[int, float], ...]   # (token id, log-probability), best first


def rng_for(seed: int) -> np.random.Generator:
    """The random generator for a request's `seed`, read as llama.cpp reads it: wrapped to an
    unsigned 32-bit number, and RANDOM_SEED (-1) a seed drawn at random."""
    wrapped = seed % 2**32
    return np.random.default_rng(secrets.randbits(32) if wrapped == RANDOM_SEED else wrapped)


def choose(logits: Logits, sampling: Sampling, rng: np.random.Generator) -> int:
    """The token to generate next from `logits` (one row, the vocabulary's size). The candidates
    are scaled as (logit - best) / temperature, so a tiny temperature gives the best token, never
    a NaN; the best one is always kept."""
    if sampling.temperature <= 0:
        return int(np.argmax(logits))
    order = np.argsort(-logits, kind="stable")
    if sampling.top_k > 0:
        order = order[:sampling.top_k]
    kept = logits[order].astype(np.float64)
    probs = _softmax(kept)
    if sampling.top_p < 1.0:
        enough = int(np.searchsorted(np.cumsum(probs), sampling.top_p)) + 1
        order, kept = order[:enough], kept[:enough]
    if 0.0 < sampling.min_p <= 1.0:
        keep = kept >= kept[0] + np.log(sampling.min_p)
        order, kept = order[keep], kept[keep]
    elif sampling.min_p > 1.0:
        order, kept = order[:1], kept[:1]
    with np.errstate(over="ignore"):
        probs = _softmax((kept - kept[0]) / sampling.temperature)
    if not np.isfinite(probs).all():
        return int(order[0])
    return int(order[int(rng.choice(len(order), p=probs))])


def log_probs(logits: Logits, token: int, top: int) -> tuple[float, tuple[tuple[int, float], ...]]:
    """`token`'s log-probability under `logits` and the `top` most likely tokens' (best first)."""
    row = logits.astype(np.float64)
    shifted = row - row.max()
    lse = np.log(np.exp(shifted).sum())
    logp = shifted - lse
    best: tuple[tuple[int, float], ...] = ()
    if top > 0:
        ids = np.argpartition(-logp, min(top, len(logp) - 1))[:top]
        ids = ids[np.argsort(-logp[ids], kind="stable")]
        best = tuple((int(i), float(logp[i])) for i in ids)
    return float(logp[token]), best


def _softmax(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    e = np.exp(x - x.max())
    out: npt.NDArray[np.float64] = e / e.sum()
    return out

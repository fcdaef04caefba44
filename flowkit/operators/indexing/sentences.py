"""Sentence-based chunking: a sliding window over sentences, and sentence packing to a word budget.

Both keep sentences whole (a chunk never ends mid-sentence, except a single sentence longer than
the word budget, which is cut into word windows). `split_sentences` lives in flowkit.text, shared
with other operators.
"""
from __future__ import annotations

from pydantic import Field, model_validator

from ...contract import OperatorParams, operator
from ...text import split_sentences
from .chunking import Chunker


def pack_sentences(sentences: list[str], max_words: int, overlap: int = 0) -> list[str]:
    """Greedily pack whole sentences into chunks of at most `max_words` words; each chunk after the
    first repeats the last `overlap` sentences of the previous one (when they fit)."""
    units: list[str] = []
    for s in sentences:          # a sentence over budget becomes several word windows
        words = s.split()
        if len(words) <= max_words:
            units.append(s)
        else:
            units += [" ".join(words[i:i + max_words]) for i in range(0, len(words), max_words)]
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for unit in units:
        n = len(unit.split())
        if current and size + n > max_words:
            chunks.append(" ".join(current))
            keep = current[len(current) - overlap:] if overlap else []
            while keep and sum(len(k.split()) for k in keep) + n > max_words:
                keep = keep[1:]
            current, size = list(keep), sum(len(k.split()) for k in keep)
        current.append(unit)
        size += n
    if current:
        chunks.append(" ".join(current))
    return chunks


@operator("indexing.chunk_sliding")
class SlidingWindowChunker(Chunker["SlidingWindowChunker.Params"]):
    """Sliding window over sentences: chunks of `window` consecutive sentences, each starting
    `stride` sentences after the previous one.

    Sentence-window chunking as used by LlamaIndex's sentence-window retrieval and the "small
    chunks with context" recipes of the Modular RAG survey (Gao et al., 2024): neighbouring chunks
    share `window - stride` sentences, so a fact near a boundary is whole in at least one chunk.
    """

    class Params(OperatorParams):
        window: int = Field(3, ge=1, le=50, description="Sentences per chunk")
        stride: int = Field(2, ge=1, le=50, description="Sentences between the starts of two chunks "
                            "(at most `window`, or sentences would be skipped)")

        @model_validator(mode="after")
        def _stride_within_window(self) -> SlidingWindowChunker.Params:
            if self.stride > self.window:
                raise ValueError(f"stride ({self.stride}) must not exceed window ({self.window}): "
                                 "sentences between windows would never be indexed")
            return self

    def split(self, text: str) -> list[str]:
        sents = split_sentences(text)
        if not sents:
            return []
        p = self.params
        out = []
        for start in range(0, len(sents), p.stride):
            out.append(" ".join(sents[start:start + p.window]))
            if start + p.window >= len(sents):
                break
        return out


@operator("indexing.chunk_sentences")
class SentenceChunker(Chunker["SentenceChunker.Params"]):
    """Sentence-aware chunking: pack whole sentences into chunks of at most `max_words` words.

    Like LlamaIndex's SentenceSplitter and LangChain's NLTK/spaCy splitters: chunks end on sentence
    boundaries instead of mid-sentence as fixed windows do; `overlap_sentences` repeats the last
    sentences of a chunk at the start of the next. A single sentence longer than the budget is cut
    into word windows.
    """

    class Params(OperatorParams):
        max_words: int = Field(120, ge=10, le=4000, description="Word budget per chunk")
        overlap_sentences: int = Field(0, ge=0, le=10, description="Sentences repeated from the "
                                       "end of the previous chunk")

    def split(self, text: str) -> list[str]:
        return pack_sentences(split_sentences(text), self.params.max_words,
                              self.params.overlap_sentences)

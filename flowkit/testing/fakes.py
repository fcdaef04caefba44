"""Fakes for unit tests: FakeLLM answers from a script; MemoryKB searches a small in-memory corpus."""
from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..memory import Doc
from ..runtime.llm import Completion

Rule = tuple[str, str | Callable[[str], str]]


class FakeLLM:
    """Scripted LLM. `rules` are (regex, reply) pairs tried in order against the prompt; a reply may
    be a function of the prompt. Without a match, `default`. Every prompt is kept in `prompts`."""

    model_id = "fake-llm"
    model_hash = "fake"

    def __init__(self, rules: list[Rule] | None = None, default: str = "unknown",
                 n_ctx: int = 4096, logprob: float = -0.1, ms: float = 0.1) -> None:
        self.rules = list(rules or [])
        self.default = default
        self.prompts: list[str] = []
        self._n_ctx = n_ctx
        self.logprob = logprob
        #: the milliseconds each call reports (its "cost")
        self.ms = ms
        self._lock = threading.Lock()

    def cache_identity(self) -> dict[str, Any]:
        """What its replies depend on, for the completion cache: the script (two fakes built
        from the same script count as the same model)."""
        script = repr([(p, o if isinstance(o, str) else getattr(o, "__qualname__", repr(o)))
                       for p, o in self.rules]) + "\n" + self.default
        return {"backend": "fake", "script": hashlib.sha256(script.encode()).hexdigest()[:16],
                "n_ctx": self._n_ctx}

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None, timeout_s: float | None = None) -> Completion:
        with self._lock:
            self.prompts.append(prompt)
        reply: str = self.default
        for pattern, out in self.rules:
            if re.search(pattern, prompt, flags=re.S | re.I):
                reply = out(prompt) if callable(out) else out
                break
        words = reply.split()[:max_tokens]
        text = " ".join(words) if len(reply.split()) > max_tokens else reply
        lp = [(w, self.logprob) for w in words] if logprobs else None
        return Completion(prompt=prompt, text=text, prompt_tokens=self.count_tokens(prompt),
                          completion_tokens=max(1, len(words)), ms=self.ms, logprobs=lp)


class HashEmbedder:
    """Bag-of-words vectors hashed into 128 dims, unit length: similar words, similar vectors."""

    model_id = "hash-embedder"
    dim = 128

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"\w+", t.lower()):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
            n = np.linalg.norm(out[i])
            out[i] = out[i] / n if n else out[i]
        return out

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class MemoryKB:
    """A knowledge base over a list of docs: word-overlap scores for both dense and lexical search."""

    def __init__(self, name: str, docs: list[dict[str, Any]]) -> None:
        self.name = name
        self.docs = [Doc(id=d["id"], text=d["text"], title=d.get("title", ""), score=0.0,
                         meta={k: v for k, v in d.items() if k not in ("id", "text")})
                     for d in docs]
        #: no folder: a knowledge-graph or hierarchical index cannot be stored here
        self.dir: Path | None = None

    @property
    def ready(self) -> bool:
        """As a stored knowledge base's: holding passages (one in memory is always complete)."""
        return bool(self.docs)

    @property
    def state(self) -> str:
        return "complete"

    def require_ready(self) -> None:
        from ..errors import ResourceError
        if not self.docs:
            raise ResourceError(f"knowledge base '{self.name}' is empty")

    def count(self) -> int:
        return len(self.docs)

    def _search(self, query: str, k: int, where: dict[str, Any] | None) -> list[Doc]:
        q = set(re.findall(r"\w+", query.lower()))
        scored = []
        for d in self.docs:
            if where and any(d["meta"].get(a) != b for a, b in where.items()):
                continue
            words = set(re.findall(r"\w+", (d["title"] + " " + d["text"]).lower()))
            s = len(q & words) / (len(q) or 1)
            if s > 0:
                scored.append(Doc(**{**d, "score": round(s, 6)}))
        scored.sort(key=lambda d: (-d["score"], d["id"]))
        return scored[:k]

    def dense(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[Doc]:
        return self._search(query, k, where)

    def lexical(self, query: str, k: int, where: dict[str, Any] | None = None) -> list[Doc]:
        return self._search(query, k, where)

    def by_ids(self, ids: list[str]) -> list[Doc]:
        return [d for d in self.docs if d["id"] in ids]

    def chunks(self, limit: int = 50, offset: int = 0) -> list[Doc]:
        """The stored docs in order (as KnowledgeBase.chunks pages through Chroma)."""
        return [Doc(**d) for d in self.docs[offset:offset + limit]]


class FakeResources:
    """Resources for unit tests: a FakeLLM, MemoryKBs, no embedder unless given."""

    def __init__(self, llm: FakeLLM, kbs: dict[str, MemoryKB], data_dir: Path | None = None,
                 embedder: Any = None) -> None:
        self.llm = llm
        self.kbs = kbs
        self.data_dir = data_dir or Path(".")
        self._embedder = embedder

    @property
    def embedder(self) -> Any:
        if self._embedder is None:
            raise RuntimeError("this test gave no embedder")
        return self._embedder

    def kb(self, name: str) -> MemoryKB:
        from ..errors import NotFoundError
        if name not in self.kbs:
            raise NotFoundError(f"knowledge base '{name}' does not exist")
        return self.kbs[name]


def fake_resources(llm: FakeLLM | None = None, docs: list[dict[str, Any]] | None = None,
                   kb: str = "test", embedder: Any = None) -> FakeResources:
    """FakeResources with one MemoryKB named `kb` (default docs: three short facts)."""
    docs = docs if docs is not None else [
        {"id": "d1", "title": "Corren Lighthouse", "text": "The Corren Lighthouse was designed by Mara Velt."},
        {"id": "d2", "title": "Mara Velt", "text": "Mara Velt was born on the island of Tessel."},
        {"id": "d3", "title": "Tessel", "text": "Tessel holds a lantern festival every November."},
    ]
    return FakeResources(llm or FakeLLM(), {kb: MemoryKB(kb, docs)}, embedder=embedder)


def template_script() -> FakeLLM:
    """A FakeLLM whose replies keep every shipped template's parsers on their normal path (agents
    search then answer, chains ask one next question, loops run several rounds)."""
    return FakeLLM([
        (r"Evidence so far:\n- .*Reply with two lines:", "Thought: enough.\nAction: Final Answer[Tessel]"),
        (r"Reply with two lines:", "Thought: find the designer.\nAction: Search[Corren Lighthouse designer]"),
        (r"Next question:", "Who designed the Corren Lighthouse?"),
        (r"Reply yes or no", "yes"),
        (r"Next sentence:", "Mara Velt was born on Tessel."),
    ], default="Mara Velt was born on Tessel [1].")

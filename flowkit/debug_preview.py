"""The next node's exact prompt at a pause, without calling the model.

The paused node's operator runs on the paused memory with a model stand-in that records the first
call (its prompt and system message) and stops the operator there. What the operator did before
that call (a search, reading memory) runs for real, side-effect free; nothing is stored. The
prompt is what the operator hands the model; a chat model's template is applied around it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn, cast

from .compile import CompiledFlow, wiring
from .context import Embedder, KnowledgeBaseView, ModelLLM, Resources, RunContext


@dataclass(frozen=True)
class NextPrompt:
    """The first model call the node would make: kind (complete | score), prompt, system."""

    node: str
    kind: str
    prompt: str
    system: str | None = None


class _Captured(BaseException):
    """A BaseException: an operator's `except Exception` must not swallow it."""

    def __init__(self, call: NextPrompt) -> None:
        super().__init__(call.prompt[:40])
        self.call = call


class _CaptureLLM:
    def __init__(self, inner: ModelLLM, node: str) -> None:
        self._inner, self._node = inner, node
        self.model_id = str(getattr(inner, "model_id", ""))

    @property
    def n_ctx(self) -> int:
        return int(getattr(self._inner, "n_ctx", 0) or 0)

    def count_tokens(self, text: str) -> int:
        return int(self._inner.count_tokens(text))

    def complete(self, prompt: str, *, system: str | None = None, **_: object) -> NoReturn:
        raise _Captured(NextPrompt(self._node, "complete", prompt, system))

    def token_logprobs(self, text: str) -> NoReturn:
        raise _Captured(NextPrompt(self._node, "score", text))


class _PreviewResources:
    """The run's resources with the model replaced by the capturing stand-in."""

    def __init__(self, inner: Resources, node: str) -> None:
        self._inner = inner
        self._llm = _CaptureLLM(inner.llm, node)

    @property
    def llm(self) -> ModelLLM:
        return cast(ModelLLM, self._llm)

    @property
    def embedder(self) -> Embedder:
        return self._inner.embedder

    @property
    def data_dir(self) -> Path:
        return self._inner.data_dir

    def kb(self, name: str) -> KnowledgeBaseView:
        return self._inner.kb(name)


def next_prompt(flow: CompiledFlow, node: str, visit: int, state: dict[str, Any],
                resources: Resources, kb: str) -> NextPrompt | None:
    """The first model call `node` would make on `state` (None when it makes none). Errors of the
    operator propagate (the caller shows them instead of a prompt)."""
    op = flow.operators[node]
    inputs = {w.node_id: w.merge_inputs for w in wiring(flow.spec, flow.operators, flow.topology).nodes}
    view = dict(state)
    if op.kind == "merge":
        view["branches"] = [(state.get("branches") or {}).get(b, {}) for b in inputs.get(node, ())]
    ctx = RunContext(_PreviewResources(resources, node), kb, node, visit)
    try:
        op.run(MappingProxyType(view), ctx)
    except _Captured as c:
        return c.call
    return None

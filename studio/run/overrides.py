"""Model settings for one run only: a temperature and node params, without touching what is shared.

The workspace (and its loaded model) is shared by every session, so a run's overrides never change
it. Node params (max_tokens, ...) change a copy of the spec; the temperature goes through a thin
view of the resources whose LLM passes that temperature to every call that does not name its own.
The run records the overridden settings, so its replay says what ran.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from flowkit import registry
from flowkit.spec import FlowSpec
from service.workspace import Workspace

#: Node params the run page offers to override, when a node's operator has them.
TUNABLE_PARAMS: tuple[str, ...] = ("max_tokens", "temperature", "top_k", "top_n")


@dataclass
class Overrides:
    """temperature: None keeps the settings' value. node_params: {node id: {param: value}}."""

    temperature: float | None = None
    node_params: dict[str, dict[str, Any]] = field(default_factory=dict)

    def empty(self) -> bool:
        return self.temperature is None and not any(self.node_params.values())


def tunable(spec: FlowSpec) -> list[tuple[str, str, Any, dict[str, Any]]]:
    """(node id, param, current value, JSON schema) for each tunable param of the spec's nodes."""
    out = []
    for node in spec.nodes:
        cls = registry.get(node.operator)
        if cls is None:
            continue
        schema = cls.Params.model_json_schema()
        props = schema.get("properties", {})
        for name in TUNABLE_PARAMS:
            if name in props:
                value = node.params.get(name, props[name].get("default"))
                out.append((node.id, name, value, props[name]))
    return out


def apply_params(spec: FlowSpec, node_params: dict[str, dict[str, Any]]) -> FlowSpec:
    """A copy of the spec with the given node params replaced."""
    if not any(node_params.values()):
        return spec
    nodes = [n.model_copy(update={"params": {**n.params, **node_params.get(n.id, {})}})
             if node_params.get(n.id) else n for n in spec.nodes]
    return spec.model_copy(update={"nodes": nodes})


class _Tuned:
    """A shared object seen through one run's temperature: what the subclass does not override is
    the inner object's."""

    def __init__(self, inner: Any, temperature: float) -> None:
        self._inner = inner
        self._temperature = temperature

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _TunedLLM(_Tuned):
    """The shared LLM with another default temperature (the model and its lock stay shared)."""

    @property
    def settings(self) -> Any:
        """The inner model's settings with this temperature (the completion cache keys on it)."""
        return replace(self._inner.settings, temperature=self._temperature)

    def complete(self, prompt: str, *, temperature: float | None = None,
                 on_token: Callable[[str], None] | None = None, **kwargs: Any) -> Any:
        """The inner model's completion at this temperature; streamed through `on_token` when the
        inner model streams, else handed out whole at the end."""
        t = self._temperature if temperature is None else temperature
        if on_token is None:
            return self._inner.complete(prompt, temperature=t, **kwargs)
        try:
            streams = "on_token" in inspect.signature(self._inner.complete).parameters
        except (TypeError, ValueError):
            streams = False
        if streams:
            return self._inner.complete(prompt, temperature=t, on_token=on_token, **kwargs)
        out = self._inner.complete(prompt, temperature=t, **kwargs)
        if getattr(out, "text", ""):
            on_token(out.text)
        return out


class _TunedResources(_Tuned):
    """The shared Resources seen through one run's temperature."""

    @property
    def settings(self) -> Any:
        return self._inner.settings.with_llm(temperature=self._temperature)

    @property
    def llm(self) -> _TunedLLM:
        return _TunedLLM(self._inner.llm, self._temperature)


def with_overrides(ws: Workspace, spec: FlowSpec,
                   overrides: Overrides | None) -> tuple[FlowSpec, Workspace]:
    """The spec and a workspace to run it with, the overrides applied (ws itself is unchanged)."""
    if overrides is None or overrides.empty():
        return spec, ws
    spec = apply_params(spec, overrides.node_params)
    if overrides.temperature is None:
        return spec, ws
    return spec, tuned_workspace(ws, overrides.temperature)


def tuned_workspace(ws: Workspace, temperature: float) -> Workspace:
    """A view of `ws` whose model runs at `temperature` (the store, model and cache shared)."""
    view = Workspace.__new__(Workspace)      # shares the store; no second database or model
    view.resources = _TunedResources(ws.resources, float(temperature))  # type: ignore[assignment]
    view.store = ws.store
    view.telemetry = ws.telemetry         # a run's trace export, as the workspace's own runs
    view.share_cache(ws)
    return view


def recorded_temperature(ws: Workspace, settings: dict[str, Any]) -> float | None:
    """The temperature a run recorded in its settings when it differs from the workspace's (a
    per-run override, which a continue of the run keeps); None when it ran at the shared one."""
    llm = settings.get("llm") if isinstance(settings, dict) else None
    t = llm.get("temperature") if isinstance(llm, dict) else None
    if not isinstance(t, int | float) or isinstance(t, bool):
        return None
    return None if abs(float(t) - float(ws.resources.settings.llm.temperature)) < 1e-9 else float(t)

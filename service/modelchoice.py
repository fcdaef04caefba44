"""A flow run on another model than the workspace's: `naive_rag@smollm2-135m` in `flowkit eval`,
the `models` axis of a search space.

A model is 'default' (the workspace's own), a packaged model id (`flowkit models` lists them) or
the path of a .gguf file. `ModelWorkspaces` hands out one workspace view per model (same data
directory and database, the model changed, the completion cache shared) and closes them after.
"""
from __future__ import annotations

from pathlib import Path

from flowkit.errors import FlowkitError

from .workspace import Workspace

DEFAULT = "default"


def model_problem(model: str) -> str | None:
    """None for 'default', a packaged model id or an existing .gguf file; else why not."""
    from flowkit.runtime.models import PACKAGED
    if model == DEFAULT or model in PACKAGED or (model.endswith(".gguf")
                                                 and Path(model).is_file()):
        return None
    return (f"unknown model '{model}' (use 'default', a packaged model: "
            f"{', '.join(PACKAGED)}, or the path of a .gguf file)")


def split_ref(ref: str) -> tuple[str, str]:
    """'naive_rag@smollm2-135m' -> ('naive_rag', 'smollm2-135m'); no '@' (or an existing file
    whose name has one) -> (ref, '')."""
    if "@" not in ref or Path(ref).exists():
        return ref, ""
    flow, _, model = ref.rpartition("@")
    why = model_problem(model)
    if why:
        raise FlowkitError(f"--flow '{ref}': {why}")
    return flow, "" if model == DEFAULT else model


class ModelWorkspaces:
    """Workspace views of `ws` on other models, made on first use; `close()` stops their
    model workers."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._made: dict[str, Workspace] = {}

    def get(self, model: str) -> Workspace:
        """The workspace that runs on `model` ('' or 'default': `ws` itself)."""
        if model in ("", DEFAULT):
            return self.ws
        if model not in self._made:
            why = model_problem(model)
            if why:
                raise FlowkitError(why)
            w = Workspace(self.ws.data_dir, self.ws.resources.settings.with_llm(model_path=model))
            w.share_cache(self.ws)
            self._made[model] = w
        return self._made[model]

    def close(self) -> None:
        for w in self._made.values():
            w.close()
        self._made.clear()

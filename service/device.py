"""The device the model runs on, as the Settings page, the sidebar and `flowkit doctor` show it:
the plan a workspace's model loads with (device, GPU layers actually offloaded, effective prompt
batch and prefix reuse) and the check that refuses a GPU setting on a build that cannot offload.
Builds the model's wrapper at most (a GGUF header and a device probe); never loads the model."""
from __future__ import annotations

from flowkit.errors import FlowkitError
from flowkit.runtime import device
from flowkit.runtime.llm_contract import LLMSettings

from .workspace import Workspace

__all__ = ["gpu_layers_problem", "plan_line", "plan_rows"]


def gpu_layers_problem(n_gpu_layers: int | None, backend: str = "llama_cpp") -> str | None:
    """Why `n_gpu_layers` cannot be saved on this machine (a GPU setting on a llama.cpp build
    that cannot offload), or None when it can."""
    try:
        device.check_request(LLMSettings(backend=backend, n_gpu_layers=n_gpu_layers))
    except FlowkitError as err:
        return str(err).removeprefix("settings: ")
    return None


def _plan(ws: Workspace) -> device.Plan | None:
    plan = getattr(ws.resources.llm, "offload", None)
    return plan if isinstance(plan, device.Plan) else None


def plan_rows(ws: Workspace) -> dict[str, str]:
    """Label -> value rows of the device plan (empty for an OpenAI-compatible server). A refused
    setting raises its FlowkitError, which the page shows."""
    if ws.resources.settings.llm.backend != "llama_cpp":
        return {}
    plan = _plan(ws)
    return plan.rows() if plan is not None else {}


def plan_line(ws: Workspace) -> str:
    """The sidebar's one short line: 'Device: GPU (NVIDIA H200) · 19/19 layers · batch 512 ·
    prefix reuse off', 'Device: CPU ... · batch 64 · prefix reuse on', or the problem."""
    if ws.resources.settings.llm.backend != "llama_cpp":
        return "Device: the server's"
    try:
        plan = _plan(ws)
    except FlowkitError as err:
        return f"Device: problem: {err}"
    return f"Device: {plan.summary()}" if plan is not None else "Device: -"

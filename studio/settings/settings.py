"""Settings page logic: turn the form's values into checked Settings, and say what is loaded."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from flowkit.errors import FlowkitError
from service.device import gpu_layers_problem
from service.settings import (
    EXTRA_BUFTS_CHOICES,
    PACKAGED,
    Settings,
    cpu_has_amx,
    inspect_gguf,
    model_file,
)
from service.workspace import Workspace

BACKENDS = ("llama_cpp", "openai")


@dataclass
class FormValues:
    """What the settings form holds (strings as typed)."""

    use_default_model: bool = True
    model_path: str = ""
    n_gpu_layers: int | None = None      # None: the device decides (runtime/device.py)
    n_threads: int = 0
    n_ctx: int = 8192
    temperature: float = 0.0
    seed: int = 42
    backend: str = "llama_cpp"
    base_url: str = ""
    model_name: str = ""
    embedder_path: str = ""
    chroma_host: str = ""
    chroma_port: int = 8000
    extra_bufts: str = "auto"
    completion_cache: bool = True
    cache_max_entries: int = 200_000
    n_batch: int | None = None           # None: the device decides
    prefix_reuse: bool | None = None     # None: the device decides

    @classmethod
    def from_settings(cls, s: Settings) -> FormValues:
        llm = s.llm
        return cls(use_default_model=not llm.model_path, model_path=llm.model_path,
                   n_gpu_layers=llm.n_gpu_layers, n_threads=llm.n_threads, n_ctx=llm.n_ctx,
                   temperature=llm.temperature, seed=llm.seed, backend=llm.backend,
                   base_url=llm.base_url, model_name=llm.model_name,
                   embedder_path=s.embedder_path, chroma_host=s.chroma_host,
                   chroma_port=s.chroma_port, extra_bufts=llm.extra_bufts,
                   completion_cache=s.completion_cache, cache_max_entries=s.cache_max_entries,
                   n_batch=llm.n_batch, prefix_reuse=llm.prefix_reuse)


def build(current: Settings, v: FormValues) -> tuple[Settings | None, list[str]]:
    """New settings from the form, or None and every problem found (paths must exist)."""
    problems: list[str] = []
    model_path = "" if v.use_default_model else v.model_path.strip()
    if v.backend not in BACKENDS:
        problems.append(f"backend must be one of {', '.join(BACKENDS)}")
    if v.backend == "llama_cpp" and not v.use_default_model:
        if not model_path:
            problems.append("give the path of a GGUF model file, or choose the default model")
        elif model_path in PACKAGED:
            pass      # a packaged model by its catalogue id (flowkit models)
        else:
            p = Path(model_path).expanduser()
            if not p.is_file():
                problems.append(f"model file not found: {p}")
            elif p.suffix.lower() != ".gguf":
                problems.append(f"{p.name} is not a .gguf file")
            else:
                try:
                    inspect_gguf(p)            # not GGUF, or cut short: refused before it is saved
                except FlowkitError as err:
                    problems.append(str(err))
    if v.backend == "openai":
        if not v.base_url.strip().startswith(("http://", "https://")):
            problems.append("the openai backend needs a base URL like http://localhost:8000/v1")
        if not v.model_name.strip():
            problems.append("the openai backend needs the served model's name")
    if v.embedder_path.strip() and not Path(v.embedder_path.strip()).expanduser().exists():
        problems.append(f"embedder path not found: {v.embedder_path.strip()}")
    if v.n_ctx < 256:
        problems.append("context must be at least 256 tokens")
    if not 0.0 <= v.temperature <= 2.0:
        problems.append("temperature must be between 0 and 2")
    problems += device_problems(v)
    if v.n_threads < 0:
        problems.append("threads: 0 (all cores) or a positive number")
    if v.extra_bufts not in EXTRA_BUFTS_CHOICES:
        problems.append(f"extra buffer types: one of {', '.join(EXTRA_BUFTS_CHOICES)}")
    if not 1 <= v.chroma_port <= 65535:
        problems.append("Chroma port must be between 1 and 65535")
    if v.cache_max_entries < 1:
        problems.append("completion cache: keep at least 1 entry")
    if problems:
        return None, problems
    llm = replace(current.llm, backend=v.backend, model_path=model_path,
                  n_gpu_layers=v.n_gpu_layers, n_batch=v.n_batch, prefix_reuse=v.prefix_reuse,
                  n_threads=int(v.n_threads), n_ctx=int(v.n_ctx),
                  temperature=float(v.temperature), seed=int(v.seed),
                  base_url=v.base_url.strip(), model_name=v.model_name.strip(),
                  extra_bufts=v.extra_bufts)
    return replace(current, llm=llm, embedder_path=v.embedder_path.strip(),
                   chroma_host=v.chroma_host.strip(), chroma_port=int(v.chroma_port),
                   completion_cache=bool(v.completion_cache),
                   cache_max_entries=int(v.cache_max_entries)), []


def device_problems(v: FormValues) -> list[str]:
    """What is wrong with the form's device fields (GPU layers, batch): a GPU setting on a
    llama.cpp build that cannot offload is refused here, before it is saved."""
    problems: list[str] = []
    if v.n_gpu_layers is not None and v.n_gpu_layers < -1:
        problems.append("GPU layers: -1 (all), 0 (none), a number of layers, or empty (the "
                        "device decides)")
    elif v.backend == "llama_cpp" and v.n_gpu_layers:
        refused = gpu_layers_problem(v.n_gpu_layers)
        if refused:
            problems.append(f"GPU layers: {refused}")
    if v.n_batch is not None and not 1 <= v.n_batch <= 65536:
        problems.append("prompt batch: between 1 and 65536 tokens, or empty (the device decides)")
    return problems


def model_info(ws: Workspace) -> dict[str, Any]:
    """What the workspace's model is: file, size in MB, loaded or not, GPU offload support.

    Looks only; never loads the model.
    """
    s = ws.resources.settings.llm
    info: dict[str, Any] = {"backend": s.backend, "model_file": None, "size_mb": None,
                            "loaded": False, "gpu_offload": None, "error": None,
                            "process": None, "extra_bufts": None}
    if s.backend == "openai":
        info["model_file"] = f"{s.model_name or '?'} at {s.base_url or '?'}"
        return info
    try:
        path = model_file(s.model_path)
        info["model_file"] = str(path)
        info["size_mb"] = round(path.stat().st_size / 1e6, 1)
    except (FlowkitError, OSError) as err:
        info["error"] = str(err)
        return info
    try:
        llm = ws.resources.llm      # builds the wrapper only; the model loads on the first call
        info["loaded"] = bool(getattr(llm, "loaded", True))
        probe = getattr(llm, "gpu_offload_supported", None)
        info["gpu_offload"] = bool(probe()) if callable(probe) else None
        worker = getattr(llm, "info", None)
        if isinstance(worker, dict):     # the supervised worker process
            pid = getattr(llm, "pid", None)
            restarts = int(getattr(llm, "restarts", 0) or 0)
            info["process"] = (f"worker process {pid}" if pid else "worker process (starts on the "
                               "first run)") + (f", restarted {restarts}x" if restarts else "")
            if "extra_bufts" in worker:
                info["extra_bufts"] = extra_bufts_text(bool(worker["extra_bufts"]),
                                                       str(worker.get("extra_bufts_reason", "")),
                                                       cpu_has_amx())
        else:
            info["process"] = "this process (in_process: true)"
    except (FlowkitError, ImportError, OSError) as err:
        info["error"] = str(err)
    return info


def extra_bufts_text(use: bool, reason: str, amx: bool) -> str:
    """The Settings page's line on llama.cpp's extra buffer types (repacked weights for the
    CPU's kernels): on or off and why, and whether AMX is among them: 'on' on a CPU without AMX
    read as 'AMX: on' (issue 48, item 9)."""
    if not amx:
        where = "AMX: none on this CPU (no amx_tile), the other repacked kernels in use"
    else:
        where = "AMX: in use" if use else "AMX: not used"
    return f"{'on' if use else 'off'} · {where} · {reason}" if reason else \
        f"{'on' if use else 'off'} · {where}"


def model_rows(model_path: str) -> list[dict[str, Any]]:
    """The model catalogue for the Settings page: the packaged models and the configured GGUF
    (when it is a path), one flat row each with the best reading-benchmark figures."""
    from service.settings import models_table
    extra = [model_path] if model_path.strip() and model_path.strip() not in PACKAGED else []
    rows = []
    for r in models_table(extra):
        rd = r["reading"] or {}
        rows.append({"model": r["id"] + (" (default)" if r["default"] else ""), "kind": r["kind"],
                     "MB": _rounded(r["size_mb"], 1), "reading EM": _rounded(rd.get("em")),
                     "reading F1": _rounded(rd.get("f1")),
                     "s/question": _rounded(rd.get("s_per_q"), 1), "prompt": rd.get("variant"),
                     "terms": r["terms"], "file": r["file"] or r["problem"]})
    return rows


def _rounded(value: Any, digits: int = 2) -> Any:
    """A figure as people read it (0.30000000000000004 -> 0.3); not a number: unchanged."""
    if isinstance(value, float):
        return round(value, digits)
    return value


def cache_summary(ws: Workspace) -> str:
    """One line on the completion cache: on or off, entries, hits, model time saved."""
    st_ = ws.cache_store.stats()
    state = "on" if ws.resources.settings.completion_cache else "off"
    return (f"{state}: {st_.entries} of at most {st_.max_entries} entries, {st_.hits} hits, "
            f"{st_.saved_ms / 1000:.1f} s of model time saved")

"""Which device the model runs on, and the settings that fit it.

`detect()` asks the installed llama.cpp build, once per process, whether it can offload layers to a
GPU and which devices it sees (its ggml device registry: name, description, free and total memory).
The studio's process never imports llama.cpp: there the question goes to a short child process.
`plan(settings, n_layer)` then turns the settings the user gave into the ones the model loads
with: a setting left unset (None) takes the device's default, a setting given wins.

With a GPU (measured on an H200 with Gemma 3 270M, 244 replayed calls, issue 40): every layer on
the GPU (`n_gpu_layers` -1), `n_batch` 512 (1.9x faster than 64) and prefix reuse off (copying KV
snapshots made the GPU run 1.24x slower than evaluating the tokens again). On a CPU: no layers
offloaded, `n_batch` 64 and prefix reuse on, the defaults flowkit always had, so the completion
cache keys of a CPU user stay as they were.

A GPU setting (`n_gpu_layers` other than 0) on a build that cannot offload is refused with a
`ResourceError` that says how to install a GPU build. `FLOWKIT_SIMULATE_GPU=<name>` makes `detect()`
report an offload-capable build with one GPU of that name (tests and CI have no GPU).
"""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from ..errors import ResourceError
from .llm_contract import LLMSettings

GPU_BATCH = 512          # n_batch with layers on a GPU
CPU_BATCH = 64           # n_batch on the CPU (chosen for 2 cores; today's default)
GPU_INSTALL_HINT = ('install llama-cpp-python built for your GPU, e.g. '
                    'make install CMAKE_ARGS="-DGGML_CUDA=on"')
SIMULATE_ENV = "FLOWKIT_SIMULATE_GPU"
#: the LLM settings a device decides when the user leaves them unset
DEVICE_FIELDS = ("n_gpu_layers", "n_batch", "prefix_reuse")


@dataclass(frozen=True)
class GPU:
    """One GPU as llama.cpp's device registry describes it (memory in bytes; 0 when unknown)."""

    name: str
    description: str
    free_bytes: int = 0
    total_bytes: int = 0


@dataclass(frozen=True)
class Device:
    """What the llama.cpp build can do here: `offload` (llama.cpp reports it can put layers on a
    GPU now), `gpu_backends` (the GPU backends compiled into the build: cuda, vulkan, metal...),
    `gpus` (the GPUs it found) and `simulated` (FLOWKIT_SIMULATE_GPU)."""

    offload: bool
    gpu_backends: tuple[str, ...] = ()
    gpus: tuple[GPU, ...] = ()
    simulated: bool = False
    error: str = ""

    @property
    def build_offload(self) -> bool:
        """Whether this llama.cpp build can offload at all (a GPU backend is compiled in)."""
        return self.offload or bool(self.gpu_backends)

    @property
    def has_gpu(self) -> bool:
        """Whether layers will go to a GPU: the build can offload and a GPU is there."""
        return self.offload

    @property
    def name(self) -> str:
        """'GPU (NVIDIA H200)', or 'CPU' with why there is no GPU."""
        if self.has_gpu:
            names = ", ".join(g.description or g.name for g in self.gpus) or "GPU"
            return f"GPU ({names})"
        if self.build_offload:
            return f"CPU (no GPU found for this {'/'.join(self.gpu_backends) or 'GPU'} build)"
        return "CPU (a CPU-only llama.cpp build)"


@dataclass(frozen=True)
class Plan:
    """How the model loads on this device: the effective `settings` (every device field set),
    the layers actually offloaded of the model's offloadable layers (its blocks + the output
    layer), and which fields the device chose because the user left them unset."""

    device: Device
    settings: LLMSettings
    layers_offloaded: int
    layers_total: int
    from_device: tuple[str, ...]

    @property
    def n_batch(self) -> int:
        """The effective prompt batch."""
        return int(self.settings.n_batch or CPU_BATCH)

    @property
    def prefix_reuse(self) -> bool:
        """Whether prefix reuse is on."""
        return bool(self.settings.prefix_reuse)

    def summary(self) -> str:
        """One short line: 'GPU (NVIDIA H200) · 19/19 layers · batch 512 · prefix reuse off'."""
        s = self.settings
        layers = f" · {self.layers_offloaded}/{self.layers_total} layers" \
            if self.device.has_gpu else ""
        return (f"{self.device.name}{layers} · batch {s.n_batch} · prefix reuse "
                f"{'on' if s.prefix_reuse else 'off'}")

    def rows(self) -> dict[str, str]:
        """The plan as label -> value rows (Settings page, `flowkit doctor`)."""
        s, chosen = self.settings, set(self.from_device)

        def why(key: str) -> str:
            return " (device default)" if key in chosen else " (settings)"
        return {"Device": self.device.name,
                "GPU layers offloaded": f"{self.layers_offloaded} of {self.layers_total}"
                + why("n_gpu_layers"),
                "Prompt batch (n_batch)": f"{s.n_batch}{why('n_batch')}",
                "Prefix reuse": ("on" if s.prefix_reuse else "off") + why("prefix_reuse")}


def _probe_here() -> dict[str, Any]:
    """Ask the llama.cpp build loaded in this process (also run as a child's whole program)."""
    import ctypes
    import os as _os

    import llama_cpp
    lib = _os.path.join(_os.path.dirname(llama_cpp.__file__), "lib")
    names = _os.listdir(lib) if _os.path.isdir(lib) else []
    backends = sorted({k for k in ("cuda", "vulkan", "metal", "hip", "sycl", "opencl", "musa")
                       for n in names if n.startswith(f"libggml-{k}") or n.startswith(f"ggml-{k}")})
    out: dict[str, Any] = {"offload": bool(llama_cpp.llama_supports_gpu_offload()),
                           "gpu_backends": backends, "gpus": []}
    try:
        g = ctypes.CDLL(_os.path.join(lib, "libggml.so"))
        g.ggml_backend_dev_count.restype = ctypes.c_size_t
        g.ggml_backend_dev_get.restype = ctypes.c_void_p
        g.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
        for fn in (g.ggml_backend_dev_name, g.ggml_backend_dev_description):
            fn.restype, fn.argtypes = ctypes.c_char_p, [ctypes.c_void_p]
        g.ggml_backend_dev_type.restype = ctypes.c_int
        g.ggml_backend_dev_type.argtypes = [ctypes.c_void_p]
        size_p = ctypes.POINTER(ctypes.c_size_t)
        g.ggml_backend_dev_memory.argtypes = [ctypes.c_void_p, size_p, size_p]
        for i in range(g.ggml_backend_dev_count()):
            dev = g.ggml_backend_dev_get(i)
            if g.ggml_backend_dev_type(dev) not in (1, 2):       # GPU, integrated GPU
                continue
            free, total = ctypes.c_size_t(), ctypes.c_size_t()
            g.ggml_backend_dev_memory(dev, ctypes.byref(free), ctypes.byref(total))
            out["gpus"].append({"name": g.ggml_backend_dev_name(dev).decode(errors="replace"),
                                "description": (g.ggml_backend_dev_description(dev) or b"")
                                .decode(errors="replace"),
                                "free_bytes": free.value, "total_bytes": total.value})
    except (OSError, AttributeError) as err:   # another library layout: offload alone decides
        out["registry_error"] = str(err)
    return out


def _from_dict(d: dict[str, Any], simulated: bool = False) -> Device:
    gpus = tuple(GPU(str(g.get("name", "")), str(g.get("description", "")),
                     int(g.get("free_bytes", 0)), int(g.get("total_bytes", 0)))
                 for g in d.get("gpus") or [])
    return Device(offload=bool(d.get("offload")), gpu_backends=tuple(d.get("gpu_backends") or ()),
                  gpus=gpus, simulated=simulated, error=str(d.get("error", "")))


def _simulated(name: str) -> Device:
    return Device(offload=True, gpu_backends=("simulated",),
                  gpus=(GPU("GPU0", name, 80 << 30, 80 << 30),), simulated=True)


@lru_cache(maxsize=1)
def detect() -> Device:
    """This machine's device, asked once per process: in this process when llama.cpp is already
    loaded here (the worker), else in a child process (the studio never loads llama.cpp). A build
    that cannot be asked counts as a CPU build, its reason in `error`."""
    sim = os.environ.get(SIMULATE_ENV, "").strip()
    if sim:
        return _simulated(sim)
    if "llama_cpp" in sys.modules:
        return _from_dict(_probe_here())
    code = ("from __future__ import annotations\nimport json\nfrom typing import Any\n"
            + inspect.getsource(_probe_here) + "\nprint(json.dumps(_probe_here()))\n")
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        return Device(offload=False, error=f"the device probe did not run: {err}")
    try:
        return _from_dict(json.loads(out.stdout.strip().splitlines()[-1]))
    except (json.JSONDecodeError, IndexError):
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return Device(offload=False, error=f"the device probe failed: {tail}")


def supports_gpu_offload() -> bool:
    """Whether the installed llama.cpp build can put layers on a GPU here (see `detect`)."""
    return detect().has_gpu


def check_request(settings: LLMSettings, device: Device | None = None) -> None:
    """Refuse a GPU setting on a build that cannot offload (ResourceError, one line)."""
    layers = settings.n_gpu_layers
    if settings.backend != "llama_cpp" or layers is None or layers == 0:
        return
    device = device or detect()
    if not device.build_offload:
        raise ResourceError(
            f"settings: llm.n_gpu_layers is {layers}, but this llama.cpp build cannot offload "
            f"to a GPU (a CPU-only build); set it to 0 or leave it empty (the device decides), "
            f"or {GPU_INSTALL_HINT}")


def plan(settings: LLMSettings, n_layer: int | None, device: Device | None = None) -> Plan:
    """The settings the model loads with on `device` (this machine's by default): each device
    field the user left unset (None) takes the device's default; a field given is kept. Raises
    ResourceError for a GPU setting on a build that cannot offload (`check_request`).
    `n_layer` is the model's block count (GGUF metadata); None when the file does not say."""
    device = device or detect()
    check_request(settings, device)
    total = (n_layer + 1) if n_layer else 0           # llama.cpp offloads the output layer too
    chosen = tuple(k for k in DEVICE_FIELDS if getattr(settings, k) is None)
    layers = settings.n_gpu_layers
    if layers is None:
        layers = -1 if device.has_gpu else 0
    offloaded = 0
    if device.has_gpu and layers != 0:
        if total:
            offloaded = total if layers < 0 else min(layers, total)
        else:                                         # block count unknown: as asked (-1: all)
            offloaded = layers
    on_gpu = offloaded != 0
    batch = settings.n_batch if settings.n_batch is not None else \
        (GPU_BATCH if on_gpu else CPU_BATCH)
    reuse = settings.prefix_reuse if settings.prefix_reuse is not None else not on_gpu
    effective = replace(settings, n_gpu_layers=layers, n_batch=batch, prefix_reuse=reuse)
    return Plan(device, effective, offloaded, total, chosen)


# ---- memory: what a model and its context need, against what the device has --------------
#: llama.cpp's compute buffers and the process around them (measured: ~100 MB for Gemma 3 270M)
WORKING_BYTES = 128 << 20
MEMINFO = "/proc/meminfo"


@dataclass(frozen=True)
class Need:
    """What loading a model with a context needs, in bytes: the weights (the file), the KV cache
    (f16 keys and values for every layer and context position) and working space."""

    model: int
    kv_cache: int
    working: int = WORKING_BYTES

    @property
    def total(self) -> int:
        return self.model + self.kv_cache + self.working


def estimate(info: Any, n_ctx: int) -> Need:
    """The memory a GGUF (`gguf.GGUFInfo`) needs with `n_ctx` positions of context: its file size
    plus 2 bytes x (key + value width) x KV heads x layers x n_ctx. Sliding-window layers need
    less; this is the bound."""
    n_layer = info.block_count or 0
    heads = info.head_count or 1
    kv_heads = info.head_count_kv or heads
    head_dim = (info.embedding_length or 0) // heads
    width = (info.key_length or head_dim) + (info.value_length or head_dim)
    return Need(model=int(info.size_bytes), kv_cache=2 * width * kv_heads * n_layer * n_ctx)


def available_ram_bytes(meminfo: str = MEMINFO) -> int | None:
    """MemAvailable from /proc/meminfo (what can be allocated without swapping), or None where
    there is no such file (not Linux)."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB"


def check_memory(info: Any, plan: Plan, n_ctx: int) -> Need:
    """Refuse (ResourceError, with the figures) to load a model whose weights and context do not
    fit in what the device has: the GPU's free memory for the share of layers offloaded to it,
    available RAM for the rest. Returns the estimate when it fits or cannot be checked."""
    need = estimate(info, n_ctx)
    share = plan.layers_offloaded / plan.layers_total \
        if plan.layers_total and plan.layers_offloaded > 0 else 0.0
    on_gpu = int((need.model + need.kv_cache) * share)
    in_ram = need.total - on_gpu
    name = getattr(info, "path", None)
    what = (f"{getattr(name, 'name', 'the model')} with a context of {n_ctx} tokens needs about "
            f"{_gb(need.total)} (model {_gb(need.model)} + KV cache {_gb(need.kv_cache)} + "
            f"{_gb(need.working)} working space)")
    gpu_free = sum(g.free_bytes for g in plan.device.gpus)
    if on_gpu and gpu_free and on_gpu > gpu_free:
        raise ResourceError(f"not enough GPU memory: {what}, {_gb(on_gpu)} of it on the GPU, which "
                            f"has {_gb(gpu_free)} free; lower n_ctx or n_gpu_layers (settings) or "
                            "pick a smaller model")
    ram = available_ram_bytes()
    if ram is not None and in_ram > ram:
        in_ram_part = f", {_gb(in_ram)} of it in RAM" if on_gpu else ""
        raise ResourceError(f"not enough memory: {what}{in_ram_part}, and this machine has "
                            f"{_gb(ram)} available (/proc/meminfo MemAvailable); lower n_ctx "
                            "(settings) or pick a smaller model")
    return need

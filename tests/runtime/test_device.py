"""Defaults from the device (issue 40 item 1), with a simulated offload-capable build: every
layer on a GPU with n_batch 512 and prefix reuse off, today's defaults on a CPU, a setting given
wins, a GPU setting refused on a CPU-only build, and cache keys that hold the layers actually
offloaded (a CPU user's keys unchanged)."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from flowkit.errors import ResourceError
from flowkit.runtime import device
from flowkit.runtime.completion_cache import call_key, model_identity
from flowkit.runtime.device import GPU, Device
from flowkit.runtime.gguf import inspect_gguf
from flowkit.runtime.llama_cpp_backend import GGUFModel, default_model_path
from flowkit.runtime.llm_contract import LLMSettings
from flowkit.runtime.resources import Settings

GPU_DEV = Device(offload=True, gpu_backends=("cuda",), gpus=(GPU("CUDA0", "NVIDIA H200"),))
CPU_DEV = Device(offload=False)
NO_GPU_CUDA = Device(offload=False, gpu_backends=("cuda",))     # a CUDA build, no card found


@pytest.fixture
def on(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """`on(dev)` makes `device.detect()` answer `dev` for the rest of the test."""
    def use(dev: Device) -> None:
        monkeypatch.setattr(device, "detect", lambda: dev)
    yield use


def test_a_gpu_gets_every_layer_batch_512_and_no_prefix_reuse() -> None:
    p = device.plan(LLMSettings(), 18, GPU_DEV)
    s = p.settings
    assert (s.n_gpu_layers, s.n_batch, s.prefix_reuse) == (-1, 512, False)
    assert (p.layers_offloaded, p.layers_total) == (19, 19)
    assert p.from_device == ("n_gpu_layers", "n_batch", "prefix_reuse")
    assert p.summary() == "GPU (NVIDIA H200) · 19/19 layers · batch 512 · prefix reuse off"


def test_a_cpu_keeps_todays_defaults() -> None:
    for dev in (CPU_DEV, NO_GPU_CUDA):
        p = device.plan(LLMSettings(), 18, dev)
        assert (p.settings.n_gpu_layers, p.n_batch, p.prefix_reuse) == (0, 64, True)
        assert p.layers_offloaded == 0
    assert device.plan(LLMSettings(), 18, CPU_DEV).summary() == \
        "CPU (a CPU-only llama.cpp build) · batch 64 · prefix reuse on"
    assert "no GPU found for this cuda build" in NO_GPU_CUDA.name


def test_a_setting_the_user_gives_wins() -> None:
    p = device.plan(LLMSettings(n_gpu_layers=5, n_batch=128, prefix_reuse=True), 18, GPU_DEV)
    assert (p.layers_offloaded, p.n_batch, p.prefix_reuse) == (5, 128, True)
    assert p.from_device == ()
    cpu_on_gpu = device.plan(LLMSettings(n_gpu_layers=0), 18, GPU_DEV)     # CPU on purpose
    assert (cpu_on_gpu.layers_offloaded, cpu_on_gpu.n_batch, cpu_on_gpu.prefix_reuse) == \
        (0, 64, True)
    more = device.plan(LLMSettings(n_gpu_layers=99), 18, GPU_DEV)
    assert more.layers_offloaded == 19                   # no more than the model has
    rows = p.rows()
    assert rows["GPU layers offloaded"] == "5 of 19 (settings)"
    assert device.plan(LLMSettings(), 18, GPU_DEV).rows()["Prompt batch (n_batch)"] == \
        "512 (device default)"


def test_a_gpu_setting_on_a_cpu_only_build_is_refused() -> None:
    for layers in (-1, 3):
        with pytest.raises(ResourceError, match=f"n_gpu_layers is {layers}, but this llama.cpp "
                                                "build cannot offload") as err:
            device.plan(LLMSettings(n_gpu_layers=layers), 18, CPU_DEV)
        assert 'CMAKE_ARGS="-DGGML_CUDA=on"' in str(err.value)
    assert device.plan(LLMSettings(n_gpu_layers=-1), 18, NO_GPU_CUDA).layers_offloaded == 0
    device.check_request(LLMSettings(backend="openai", n_gpu_layers=-1), CPU_DEV)   # not ours


def test_the_model_refuses_a_gpu_setting_before_loading(on: object) -> None:
    on(CPU_DEV)  # type: ignore[operator]
    with pytest.raises(ResourceError, match="cannot offload"):
        GGUFModel(LLMSettings(n_gpu_layers=-1))


def test_settings_keep_unset_apart_from_a_value() -> None:
    unset = Settings.from_dict({"llm": {"n_gpu_layers": None, "n_batch": None}})
    assert unset.llm.n_gpu_layers is None and unset.llm.n_batch is None
    given = Settings.from_dict({"llm": {"n_gpu_layers": 0, "n_batch": 64, "prefix_reuse": False}})
    assert (given.llm.n_gpu_layers, given.llm.n_batch, given.llm.prefix_reuse) == (0, 64, False)
    assert Settings.from_dict(given.to_dict()) == given
    assert Settings.from_dict(Settings().to_dict()).llm.n_gpu_layers is None
    with pytest.raises(ResourceError, match="llm.prefix_reuse must be bool"):
        Settings.from_dict({"llm": {"prefix_reuse": "yes"}})


def _key(llm: object) -> str:
    identity = model_identity(llm)
    assert identity is not None
    return call_key(identity, "complete", prompt="Q", max_tokens=8)


def test_a_cpu_users_cache_keys_are_unchanged(on: object) -> None:
    on(CPU_DEV)  # type: ignore[operator]
    old_style = GGUFModel(LLMSettings(n_gpu_layers=0, n_batch=64, prefix_reuse=True))
    new_default = GGUFModel(LLMSettings())
    identity = model_identity(new_default)
    assert identity is not None and identity["n_gpu_layers"] == 0 and identity["n_batch"] == 64
    assert _key(new_default) == _key(old_style)


def test_the_key_holds_the_layers_actually_offloaded(on: object) -> None:
    on(GPU_DEV)  # type: ignore[operator]
    n_layer = inspect_gguf(default_model_path()).block_count
    assert n_layer
    all_layers = GGUFModel(LLMSettings(n_gpu_layers=-1, n_batch=64))
    more_than_all = GGUFModel(LLMSettings(n_gpu_layers=500, n_batch=64))
    identity = model_identity(all_layers)
    assert identity is not None and identity["n_gpu_layers"] == n_layer + 1
    assert _key(all_layers) == _key(more_than_all)      # the same layers offloaded: one key
    cpu = GGUFModel(LLMSettings(n_gpu_layers=0, n_batch=64))
    assert _key(cpu) != _key(all_layers)
    by_device = GGUFModel(LLMSettings())
    assert by_device.settings.n_batch == 512 and by_device.settings.prefix_reuse is False
    assert by_device.requested.n_batch is None


def test_the_probe_in_a_child_process_agrees_with_this_process(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.delenv(device.SIMULATE_ENV, raising=False)
    device.detect.cache_clear()
    here = device._from_dict(device._probe_here())            # imports llama_cpp here
    monkeypatch.delitem(sys.modules, "llama_cpp")             # so detect() asks a child process
    try:
        child = device.detect()
        assert child.error == ""
        assert child == here
    finally:
        device.detect.cache_clear()


def test_the_simulated_gpu_for_tests_and_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(device.SIMULATE_ENV, "Test GPU")
    device.detect.cache_clear()
    try:
        dev = device.detect()
        assert dev.simulated and dev.has_gpu and dev.name == "GPU (Test GPU)"
        assert device.supports_gpu_offload()
    finally:
        monkeypatch.delenv(device.SIMULATE_ENV)
        device.detect.cache_clear()


def test_memory_estimate_from_the_gguf_and_a_clear_refusal(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: object) -> None:
    from flowkit.runtime.llama_cpp_backend import LlamaCppLLM

    info = inspect_gguf(default_model_path())
    need = device.estimate(info, 8192)
    # Gemma 3 270M: 18 layers, 1 KV head, keys and values 256 wide, f16
    assert need.kv_cache == 2 * (256 + 256) * 1 * 18 * 8192 and need.model == info.size_bytes
    assert device.estimate(info, 4096).kv_cache == need.kv_cache // 2
    monkeypatch.setattr(device, "detect", lambda: CPU_DEV)
    monkeypatch.setattr(device, "available_ram_bytes", lambda: 100_000_000)
    llm = LlamaCppLLM(LLMSettings(in_process=True))
    with pytest.raises(ResourceError) as err:
        llm.start()                                  # refused before llama.cpp allocates
    assert str(err.value) == (
        "not enough memory: gemma-3-270m-q4_k_m.gguf with a context of 8192 tokens needs about "
        f"{need.total / 1e9:.2f} GB (model 0.25 GB + KV cache 0.15 GB + 0.13 GB working space), "
        "and this machine has 0.10 GB available (/proc/meminfo MemAvailable); lower n_ctx "
        "(settings) or pick a smaller model")
    assert not llm.loaded
    small_gpu = Device(offload=True, gpus=(GPU("CUDA0", "small", 200_000_000, 8 << 30),))
    monkeypatch.setattr(device, "available_ram_bytes", lambda: 64 << 30)
    plan = device.plan(LLMSettings(), info.block_count, small_gpu)
    with pytest.raises(ResourceError, match=r"not enough GPU memory: .* 0\.40 GB of it on the "
                                            r"GPU, which has 0\.20 GB free"):
        device.check_memory(info, plan, 8192)
    assert device.check_memory(info, device.plan(LLMSettings(), 18, GPU_DEV), 8192) == need


def test_available_ram_is_read_from_meminfo(tmp_path: object) -> None:
    from pathlib import Path
    fake = Path(str(tmp_path)) / "meminfo"
    fake.write_text("MemTotal:       32000000 kB\nMemAvailable:    1500000 kB\n")
    assert device.available_ram_bytes(str(fake)) == 1_500_000 * 1024
    assert device.available_ram_bytes(str(fake) + ".none") is None
    real = device.available_ram_bytes()
    assert real is not None and real > 0

"""The device on the Settings page, the sidebar and `flowkit doctor` (issue 40 item 1): what the
model loads with, and a GPU setting refused on a CPU-only build before it is saved. The device is
simulated (`device.detect` patched); the page runs in AppTest on a model wrapper that loads
nothing."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from flowkit.errors import ResourceError
from flowkit.runtime import device
from flowkit.runtime.device import GPU, Device
from flowkit.runtime.llama_cpp_backend import GGUFModel
from flowkit.runtime.llm_contract import LLMSettings
from flowkit.runtime.resources import Settings, load_settings, save_settings
from service.cli.serve import device_report
from service.workspace import Workspace
from studio.common.workspace import use_workspace
from studio.settings import settings as logic

ROOT = Path(__file__).resolve().parents[2]
H200 = Device(offload=True, gpu_backends=("cuda",),
              gpus=(GPU("CUDA0", "NVIDIA H200", 140 << 30, 143 << 30),))
CPU = Device(offload=False)


def _open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dev: Device) -> Iterator[Workspace]:
    monkeypatch.setattr(device, "detect", lambda: dev)
    monkeypatch.setenv("FLOWKIT_HOME", str(tmp_path))
    ws = Workspace(tmp_path)
    ws.resources.set_llm(GGUFModel(ws.resources.settings.llm))    # the plan, no model loaded
    use_workspace(ws)
    yield ws
    use_workspace(None)
    ws.close()


@pytest.fixture
def cpu_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    yield from _open(tmp_path, monkeypatch, CPU)


@pytest.fixture
def gpu_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    yield from _open(tmp_path, monkeypatch, H200)


def settings_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/settings.py")
    return at.run()


def _sidebar_only() -> None:
    from studio.common import sidebar_panel
    from studio.common.workspace import get_workspace
    sidebar_panel.render(get_workspace())


def sidebar_device_line() -> str:
    """The sidebar's device line, drawn by the sidebar alone."""
    at = AppTest.from_function(_sidebar_only, default_timeout=60).run()
    assert not at.exception
    return next(c.value for c in at.sidebar.caption if c.value.startswith("Device:"))


def texts(at: AppTest) -> str:
    return "\n".join(str(e.value) for e in [*at.markdown, *at.caption, *at.error])


def table(at: AppTest) -> dict[str, str]:
    t = at.table[0].value
    return dict(zip(t.iloc[:, 0], t.iloc[:, 1]))


def test_cpu_build_refuses_all_gpu_layers_on_save(cpu_ws: Workspace) -> None:
    assert sidebar_device_line() == \
        "Device: CPU (a CPU-only llama.cpp build) · batch 64 · prefix reuse on"
    at = settings_page()
    assert not at.exception
    rows = table(at)
    assert rows["GPU layers offloaded"] == "0 of 19 (device default)"
    assert rows["Prompt batch (n_batch)"] == "64 (device default)"
    at.number_input(key="settings_gpu").set_value(-1)
    at.button(key="FormSubmitter:settings_form-Save settings").click().run()
    assert "GPU layers: llm.n_gpu_layers is -1, but this llama.cpp build cannot offload to a " \
           "GPU" in texts(at)
    assert not (cpu_ws.data_dir / "settings.json").exists()


def test_gpu_shows_every_layer_offloaded(gpu_ws: Workspace) -> None:
    assert sidebar_device_line() == \
        "Device: GPU (NVIDIA H200) · 19/19 layers · batch 512 · prefix reuse off"
    at = settings_page()
    assert not at.exception
    rows = table(at)
    assert rows["Device"] == "GPU (NVIDIA H200)"
    assert rows["GPU layers offloaded"] == "19 of 19 (device default)"
    assert rows["Prefix reuse"] == "off (device default)"


def test_form_saves_unset_or_given_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device, "detect", lambda: H200)
    new, problems = logic.build(Settings(), logic.FormValues(n_gpu_layers=-1, n_batch=256,
                                                            prefix_reuse=True))
    assert problems == [] and new is not None
    assert (new.llm.n_gpu_layers, new.llm.n_batch, new.llm.prefix_reuse) == (-1, 256, True)
    unset, _ = logic.build(new, logic.FormValues())
    assert unset is not None
    assert (unset.llm.n_gpu_layers, unset.llm.n_batch, unset.llm.prefix_reuse) == \
        (None, None, None)
    _, bad = logic.build(Settings(), logic.FormValues(n_batch=0, n_gpu_layers=-2))
    assert len(bad) == 2 and bad[0].startswith("GPU layers: -1 (all)")


def test_doctor_reports_the_device_and_the_plan(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: Path) -> None:
    monkeypatch.setattr(device, "detect", lambda: H200)
    report = device_report(LLMSettings())
    assert report["device"] == "GPU (NVIDIA H200)"
    assert report["gpus"] == ["NVIDIA H200 (140.0 of 143.0 GiB free)"]
    assert (report["gpu_layers_offloaded"], report["n_batch"], report["prefix_reuse"]) == \
        ("19 of 19", 512, False)
    assert str(report["memory_needed"]).startswith("0.54 GB (model 0.25 + KV cache 0.15 at n_ctx "
                                                   "8192")
    monkeypatch.setattr(device, "detect", lambda: CPU)
    refused = device_report(LLMSettings(n_gpu_layers=-1))
    assert "cannot offload" in str(refused["device_refused"])
    (tmp_path / "settings.json").write_text('{"llm": {"n_batch": 32}}')
    assert device_report(load_settings(tmp_path).llm)["n_batch"] == 32


# ---- settings.json written before the device decided (version 1) ------------------------------
def _write(data_dir: Path, data: dict) -> None:
    (data_dir / "settings.json").write_text(json.dumps(data))


def test_old_explicit_defaults_become_the_devices_choice(tmp_path: Path) -> None:
    """The old Settings page saved 0 / 64 / true for every user: read as given, a CUDA install
    would stay on the CPU after the upgrade. Untouched, they now read as unset."""
    _write(tmp_path, {"llm": {"n_gpu_layers": 0, "n_batch": 64, "prefix_reuse": True,
                              "temperature": 0.0}})
    llm = load_settings(tmp_path).llm
    assert (llm.n_gpu_layers, llm.n_batch, llm.prefix_reuse) == (None, None, None)
    save_settings(tmp_path, load_settings(tmp_path))
    saved = json.loads((tmp_path / "settings.json").read_text())
    assert saved["version"] == 2 and saved["llm"]["n_gpu_layers"] is None


def test_a_changed_old_setting_is_kept_with_its_neighbours(tmp_path: Path) -> None:
    _write(tmp_path, {"llm": {"n_gpu_layers": 0, "n_batch": 128, "prefix_reuse": True}})
    llm = load_settings(tmp_path).llm
    assert (llm.n_gpu_layers, llm.n_batch, llm.prefix_reuse) == (0, 128, True)


def test_version_two_values_are_what_the_user_chose(tmp_path: Path) -> None:
    _write(tmp_path, {"version": 2, "llm": {"n_gpu_layers": 0, "n_batch": 64,
                                            "prefix_reuse": True}})
    llm = load_settings(tmp_path).llm
    assert (llm.n_gpu_layers, llm.n_batch, llm.prefix_reuse) == (0, 64, True)


@pytest.mark.parametrize("version, words", [(3, "newer flowkit"), ("2", "whole number"),
                                            (0, "whole number")])
def test_a_version_this_flowkit_cannot_read_is_refused(tmp_path: Path, version: object,
                                                       words: str) -> None:
    _write(tmp_path, {"version": version, "llm": {}})
    with pytest.raises(ResourceError, match=words) as err:
        load_settings(tmp_path)
    assert "settings.json" in str(err.value)


# ---- flowkit serve-model decides its GPU layers like the studio's model ---------------------
def test_serve_model_gpu_layers_follow_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve-model` defaulted to 0 GPU layers: on a CUDA build it served from the CPU until the
    user found --n-gpu-layers. Unset, it now follows the device; a number given wins."""
    from flowkit.runtime.serve_model import gpu_layers
    monkeypatch.setattr(device, "detect", lambda: H200)
    assert gpu_layers(None) == -1 and gpu_layers(0) == 0 and gpu_layers(7) == 7
    monkeypatch.setattr(device, "detect", lambda: CPU)
    assert gpu_layers(None) == 0
    with pytest.raises(ResourceError, match="cannot offload"):
        gpu_layers(-1)


def test_serve_model_cli_leaves_gpu_layers_to_the_device() -> None:
    from service.cli import build_parser
    assert build_parser().parse_args(["serve-model"]).n_gpu_layers is None
    assert build_parser().parse_args(["serve-model", "--n-gpu-layers", "0"]).n_gpu_layers == 0

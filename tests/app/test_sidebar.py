"""The sidebar's model line names the model the settings choose, without loading it; with the
studio's own workspace it shows the background load: loading, ready, or failed and why."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import flowkit.runtime.resources as resources_module
from flowkit.runtime.models import DEFAULT_MODEL, PACKAGED
from flowkit.testing.gguf import write_gguf
from service.workspace import Workspace
from studio.common.sidebar_panel import model_line
from studio.common.workspace import get_workspace, use_workspace


def _ws(tmp_path: Path, model_path: str) -> Workspace:
    ws = Workspace(tmp_path / "home")
    ws.resources.settings = ws.resources.settings.with_llm(model_path=model_path)
    return ws


def test_the_model_line_names_the_default_a_packaged_id_and_a_path(tmp_path: Path) -> None:
    assert model_line(_ws(tmp_path, "")) == f"{PACKAGED[DEFAULT_MODEL].name} (default) · not loaded yet"
    assert model_line(_ws(tmp_path, "smollm2-135m")) == "SmolLM2-135M-Instruct · not loaded yet"
    mine = write_gguf(tmp_path / "mine.gguf")
    assert model_line(_ws(tmp_path, str(mine))) == "mine.gguf · not loaded yet"
    cut = write_gguf(tmp_path / "cut.gguf", cut=300)
    line = model_line(_ws(tmp_path, str(cut)))
    assert line.startswith("cut.gguf · problem: model file") and "is cut short" in line


# ---- the model's background load (issue 38 item 5) ----------------------------------------------

class SlowLLM:
    """A model whose start() blocks until the test lets it go (the worker 'loading')."""

    gate = threading.Event()

    def __init__(self, *_: Any, **__: Any) -> None:
        self.loaded = False

    def start(self) -> None:
        assert SlowLLM.gate.wait(20)
        self.loaded = True

    def release(self) -> None:
        self.loaded = False


def _sidebar_only() -> None:
    from studio.common import sidebar_panel
    from studio.common.workspace import get_workspace
    sidebar_panel.render(get_workspace())


def _model_line(at: AppTest) -> str:
    return next(m.value for m in at.sidebar.markdown if m.value.startswith("Model:"))


@pytest.fixture
def studio_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The studio's own cached workspace (no injected one) on a temp data directory."""
    monkeypatch.setenv("FLOWKIT_HOME", str(tmp_path))
    use_workspace(None)
    yield tmp_path
    st.cache_resource.clear()       # drops (and closes) the workspace the studio cached


def test_the_sidebar_shows_the_model_loading_then_ready(studio_home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources_module, "make_llm", SlowLLM)
    SlowLLM.gate.clear()
    at = AppTest.from_function(_sidebar_only, default_timeout=30)
    at.run()                          # the page is drawn while the model is still loading
    assert not at.exception
    assert _model_line(at) == "Model: loading…"
    SlowLLM.gate.set()
    assert get_workspace().resources.wait_preloaded(20).phase == "ready"
    at.run()
    assert _model_line(at) == f"Model: ready ({PACKAGED[DEFAULT_MODEL].name} (default))"


def test_the_sidebar_says_why_the_model_failed_to_load(studio_home: Path) -> None:
    (studio_home / "settings.json").write_text(json.dumps(
        {"llm": {"model_path": str(studio_home / "missing.gguf")}}))
    at = AppTest.from_function(_sidebar_only, default_timeout=30)
    at.run()
    assert get_workspace().resources.wait_preloaded(20).phase == "failed"
    at.run()
    line = _model_line(at)
    assert line.startswith("Model: failed: ") and "missing.gguf" in line, line
    assert "\n" not in line and len(line) < 300

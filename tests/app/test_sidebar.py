"""The sidebar's model line names the model the settings choose, without loading it."""
from __future__ import annotations

from pathlib import Path

from flowkit.runtime.models import DEFAULT_MODEL, PACKAGED
from flowkit.testing.gguf import write_gguf
from service.workspace import Workspace
from studio.common.sidebar_panel import model_line


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

"""The editor canvas's frontend (studio/canvas_ui): its own unit tests under Node.js, the build
that `make install` leaves, and the clear error when the build is missing."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from flowkit.errors import FlowkitError
from studio import canvas_ui


def test_frontend_unit_tests_pass() -> None:
    node = shutil.which("node")
    assert node, "Node.js is needed to build the canvas (make install installs it)"
    done = subprocess.run([node, "--test", "test/"], cwd=canvas_ui.FRONTEND, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# pass 5" in done.stdout, done.stdout[-1000:]


def test_the_build_is_there_and_self_contained() -> None:
    assert canvas_ui.built(), "run `make install` (it builds the canvas)"
    html = (canvas_ui.DIST / "index.html").read_text()
    assert 'src="./assets/' in html            # relative: Streamlit serves it under /component/
    assert "http://" not in html and "https://" not in html   # nothing fetched from elsewhere


def test_a_missing_build_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(canvas_ui, "DIST", tmp_path / "dist")
    monkeypatch.setattr(canvas_ui, "_component", None)
    with pytest.raises(FlowkitError, match=r"canvas is not built .*make install"):
        canvas_ui.flow_canvas({"rev": 1, "nodes": [], "edges": []}, key="k")

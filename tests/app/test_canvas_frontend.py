"""The editor canvas's frontend (studio/canvas_ui): its own unit tests under Node.js, the build
that `make install` leaves, and the clear error when the build is missing."""
from __future__ import annotations

import re
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
    assert "# fail 0" in done.stdout and "# pass 15" in done.stdout, done.stdout[-1000:]


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


def _admits(spec: str, version: tuple[int, int, int]) -> bool:
    """Whether an npm engines range made of '||', '>=X[.Y.Z]' and '^X[.Y.Z]' admits `version`."""
    for alt in spec.split("||"):
        alt = alt.strip()
        op = ">=" if alt.startswith(">=") else "^" if alt.startswith("^") else None
        if op is None:
            raise AssertionError(f"a range this check does not read: {spec!r}")
        parts = [int(x) for x in alt[len(op):].split(".")]
        low = tuple(parts + [0] * (3 - len(parts)))
        if version >= low and (op == ">=" or version[0] == low[0]):
            return True
    return False


def test_every_build_dependency_runs_on_debians_node() -> None:
    """`make install` and the Dockerfile fall back to Debian bookworm's Node.js (18.19): every
    package in the lock file must admit it."""
    import json
    lock = json.loads((canvas_ui.FRONTEND / "package-lock.json").read_text())
    ranges = {name: pkg["engines"]["node"] for name, pkg in lock["packages"].items()
              if isinstance(pkg.get("engines"), dict) and pkg["engines"].get("node")}
    assert ranges, "the lock file names no engines at all: the check would prove nothing"
    refused = {n: r for n, r in ranges.items() if not _admits(r, (18, 19, 0))}
    assert not refused, refused
    assert not _admits("^20.19.0 || >=22.12.0", (18, 19, 0))   # the check can fail


def test_the_image_builds_the_canvas() -> None:
    root = canvas_ui.FRONTEND.parents[2]
    docker = (root / "Dockerfile").read_text()
    assert re.search(r"apt-get install [^\n]*\\\n[^\n]*nodejs npm", docker)
    assert "cd studio/canvas_ui/frontend && npm ci" in docker and "npm run build" in docker
    ignored = (root / ".dockerignore").read_text().split()
    assert "studio/canvas_ui/frontend/node_modules" in ignored   # built inside, never copied

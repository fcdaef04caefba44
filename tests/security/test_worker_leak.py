"""No leaked model workers: when Streamlit drops the cached Workspace (a cache clear from the menu
or a clear_cache message, reset_workspace after a settings change, a code reload), the model
worker it started is stopped. Ten clears end with at most one worker process. Issue 28, finding
"each drop leaks the model worker processes they held"."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st

import flowkit.runtime.resources as resources_module
from flowkit.errors import ResourceError
from studio.common import workspace as studio_ws


def _settled(marker: str, want: int, timeout_s: float = 10.0) -> list[tuple[int, int]]:
    """The children holding `marker` once there are `want` of them (or after `timeout_s`: a leak
    never gets there)."""
    deadline = time.monotonic() + timeout_s
    found = _children(marker)
    while len(found) != want and time.monotonic() < deadline:
        time.sleep(0.1)
        found = _children(marker)
    return found


def _children(marker: str) -> list[tuple[int, int]]:
    """(pid, resident kB) of this process's live children whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            status = (entry / "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if marker in cmd and int(fields["PPid"]) == os.getpid() and "Z" not in fields["State"]:
            found.append((int(entry.name), int(fields.get("VmRSS", "0 kB").split()[0])))
    return found


class SleeperLLM:
    """A stand-in for WorkerLLM: its 'worker' is a sleeping child process; release() stops it."""

    MARKER = "flowkit-leak-test-worker"

    def __init__(self, *_: Any, **__: Any) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)",
                                      self.MARKER])

    def release(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("FLOWKIT_HOME", str(tmp_path))
    studio_ws.use_workspace(None)
    yield tmp_path
    st.cache_resource.clear()


@pytest.mark.parametrize("how", ["clear_cache", "reset_workspace"])
def test_ten_cache_clears_leave_at_most_one_worker(data_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                   how: str) -> None:
    monkeypatch.setattr(resources_module, "make_llm", SleeperLLM)
    for _ in range(10):
        ws = studio_ws.get_workspace()
        assert isinstance(ws.resources.llm, SleeperLLM)        # its worker started
        # the dropped workspace's worker is stopped without waiting: give it a moment to exit
        assert len(_settled(SleeperLLM.MARKER, 1)) == 1
        if how == "clear_cache":
            st.cache_resource.clear()     # what the clear_cache BackMsg and the menu item do
        else:
            studio_ws.reset_workspace()
    assert _settled(SleeperLLM.MARKER, 0) == []
    with pytest.raises(ResourceError, match="closed"):
        ws.resources.llm                  # a dropped workspace starts no worker again  # noqa: B018


@pytest.mark.real
def test_ten_cache_clears_with_the_real_worker(data_dir: Path) -> None:
    (data_dir / "settings.json").write_text(json.dumps(
        {"llm": {"model_path": "smollm2-135m", "n_ctx": 512}}))
    rss = []
    # workers that other tests of this session keep (their shared fixtures) are not this test's
    others = {pid for pid, _ in _children("flowkit.runtime.worker")}

    def ours() -> list[tuple[int, int]]:
        return [w for w in _children("flowkit.runtime.worker") if w[0] not in others]

    for _ in range(10):
        ws = studio_ws.get_workspace()
        assert ws.resources.llm.count_tokens("lighthouse") > 0  # a real worker is up
        workers = ours()
        assert len(workers) == 1, workers
        rss.append(workers[0][1])
        st.cache_resource.clear()
    # the last worker may be stopped by the background load's thread as its call returns (release
    # never waits): read the count once it settles; a leaked worker never gets there
    deadline = time.monotonic() + 10.0
    while ours() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ours() == [], f"worker RSS kB per round: {rss}"

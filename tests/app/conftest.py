"""Shared fixtures of the page tests: a Workspace on a temp dir with a scripted FakeLLM, made the
studio's workspace for the duration of the test (tests that need more use _runkit); and every
workspace a test or a module opened is closed after it (see _closing)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import _closing
import pytest

from flowkit.testing import FakeLLM
from service.workspace import Workspace
from studio.common.workspace import use_workspace


@pytest.fixture(scope="session", autouse=True)
def _track_workspaces() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        _closing.track(mp)
        yield


@pytest.fixture(scope="module", autouse=True)
def _close_module_workspaces() -> Iterator[None]:
    """Workspaces of module-scoped fixtures are closed after the module."""
    with _closing.closing_opened():
        yield


@pytest.fixture(autouse=True)
def _close_test_workspaces() -> Iterator[None]:
    """Workspaces a test (its fixtures, the pages it runs) opened are closed after it."""
    with _closing.closing_opened():
        yield


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    monkeypatch.setenv("FLOWKIT_HOME", str(tmp_path))
    workspace = Workspace(tmp_path)
    workspace.resources.set_llm(FakeLLM())
    use_workspace(workspace)
    yield workspace
    use_workspace(None)

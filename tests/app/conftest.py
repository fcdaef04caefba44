"""Shared fixtures of the page tests: a Workspace on a temp dir with a scripted FakeLLM, made the
studio's workspace for the duration of the test (tests that need more use _runkit); every
workspace a test or a module opened is closed after it (tests/conftest.py, tests/_closing)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flowkit.testing import FakeLLM
from service.workspace import Workspace
from studio.common.workspace import use_workspace


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    monkeypatch.setenv("FLOWKIT_HOME", str(tmp_path))
    workspace = Workspace(tmp_path)
    workspace.resources.set_llm(FakeLLM())
    use_workspace(workspace)
    yield workspace
    use_workspace(None)

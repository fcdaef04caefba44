"""Fixtures of the debug tests (helpers in debugkit.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
from debugkit import make_workspace

from service.workspace import Workspace


@pytest.fixture()
def ws(tmp_path: Path) -> Workspace:
    """A Workspace on a fresh data dir with the scripted model and the in-memory KB 'test'."""
    return make_workspace(tmp_path)

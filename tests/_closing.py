"""Closing the workspaces a test opened, so their files do not stay open for the whole run
(tests/conftest.py applies it to every test).

A Workspace keeps its data directory's SQLite connections (pooled by the process-wide engine) and
its embedded Chroma client (the Chroma database, the HNSW index files and a runtime) open until the
process ends; `Workspace.close()` stops only the model worker. Every AppTest module opened a few
workspaces, about 1,100 descriptors were open after tests/app (tests/debug with tests/eval: 255).
`track(mp)` records each Workspace built (by a test, a fixture or the code under test);
`closing_opened()` releases, when its block ends, those built inside it: the model worker, the
Chroma client (Chroma's own reference count keeps a system open while another client of the same
folder uses it) and the database connections (the engine stays usable and reconnects on demand).
Those a session-scoped fixture builds (`for_the_session()`) are kept until `release_session()`.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from service.workspace import Workspace

_opened: list[Workspace] = []   # every Workspace built since track(), in order
_session: list[Workspace] = []  # those of session-scoped fixtures, released at the session's end


def track(mp: pytest.MonkeyPatch) -> None:
    """Record every Workspace built from now on (until `mp` is undone)."""
    init = Workspace.__init__

    def tracked(self: Workspace, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self._built_resources = self.resources   # type: ignore[attr-defined]
        _opened.append(self)
    mp.setattr(Workspace, "__init__", tracked)


def release(ws: Workspace) -> None:
    """Stop the model worker, close the Chroma client and the pooled database connections of `ws`
    (each safe to do twice)."""
    # a test may hand a workspace resources it shares with others (a session fixture's): those
    # are left as they are (their model and Chroma client), only the workspace's own are closed
    own = ws.resources is getattr(ws, "_built_resources", None)
    if own:
        ws.close()
    chroma = getattr(ws.resources, "_store", None) if own else None  # `.store` would open one
    if chroma is not None and chroma._client is not None:
        chroma._client.close()
    store = getattr(ws, "store", None)               # a test may have swapped it for a fake
    if store is not None and hasattr(store, "engine"):
        store.engine.dispose()


@contextmanager
def closing_opened() -> Iterator[None]:
    """Release the workspaces built inside the block when it ends."""
    start = len(_opened)
    try:
        yield
    finally:
        mine = _opened[start:]
        del _opened[start:]
        for ws in mine:
            release(ws)


@contextmanager
def for_the_session() -> Iterator[None]:
    """Keep the workspaces built inside the block (a session-scoped fixture's, which may first be
    asked for in the middle of a module) out of the module's and the test's closing."""
    start = len(_opened)
    try:
        yield
    finally:
        _session.extend(_opened[start:])
        del _opened[start:]


def release_session() -> None:
    """Release the session fixtures' workspaces (and any still recorded) at the session's end."""
    for ws in [*_session, *_opened]:
        release(ws)
    _session.clear()
    _opened.clear()


def open_files_under(folder: Path) -> list[str]:
    """The files under `folder` this process has open now."""
    root = str(folder.resolve())
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:      # closed meanwhile (the listing's own descriptor)
            continue
        if target.startswith(root + os.sep):
            out.append(target)
    return out

"""Page tests leave no workspace open (tests/_closing, applied to every test by tests/conftest): the
database and Chroma files a page opened are closed when the test's block ends, and another
workspace on the same folder keeps working."""
from __future__ import annotations

import os
from pathlib import Path

import _closing
import _runkit as kit

from studio.common.workspace import use_workspace


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_the_files_a_page_opened_are_closed_after_the_test(tmp_path: Path) -> None:
    data = tmp_path / "home"
    before = _fds()
    with _closing.closing_opened():
        use_workspace(kit.workspace(data))      # the sample KB ingested: SQLite and Chroma open
        try:
            at = kit.page("pages/knowledge.py", kb="sample").run()
            at.text_input(key="kb_search_q").input("Corren Lighthouse keeper").run()
            assert not at.exception, [e.message for e in at.exception]
            assert "`art-09#0`" in kit.texts(at)       # a dense search ran through Chroma
        finally:
            use_workspace(None)
        held = _closing.open_files_under(data)
        assert any(p.endswith("flowkit.db") for p in held), held
        assert any(p.endswith("chroma.sqlite3") for p in held), held
        during = _fds()
    assert _closing.open_files_under(data) == []
    assert _fds() <= before + 2 < during, (before, during, _fds())


def test_closing_a_tests_workspace_leaves_another_on_the_folder_working(tmp_path: Path) -> None:
    outer = kit.workspace(tmp_path)             # as a module's fixture holds it
    with _closing.closing_opened():
        inner = kit.workspace(tmp_path, sample=False)
        assert inner.resources.kb("sample").count() == outer.resources.kb("sample").count() > 30
    hits = outer.resources.kb("sample").dense("Corren Lighthouse keeper", 3)
    assert hits and outer.store.list_flows() == []

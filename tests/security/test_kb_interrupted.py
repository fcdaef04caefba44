"""Issue 28, low finding: a knowledge base whose ingest was cut short is marked as such wherever
knowledge bases are listed (`flowkit kb` and the studio's knowledge page), and told apart from
one a live process is changing now."""
from __future__ import annotations

from pathlib import Path

import pytest

from flowkit.runtime.kb import CHANGING, COMPLETE, INCOMPLETE, INTERRUPTED
from flowkit.runtime.kblock import kb_write_lock
from service import knowledge as kbview
from service.cli import main
from service.workspace import Workspace


@pytest.fixture()
def ws(tmp_path: Path) -> Workspace:
    """Two knowledge bases: 'whole' complete, 'half' left incomplete by a killed ingest."""
    ws = Workspace(tmp_path)
    ws.resources.kb("whole").update_meta(name="whole", state=COMPLETE, chunks=0)
    ws.resources.kb("half").update_meta(name="half", state=INCOMPLETE, chunks=0)
    return ws


def test_the_state_tells_interrupted_from_changing(ws: Workspace) -> None:
    half = ws.resources.kb("half")
    assert ws.resources.kb("whole").state == COMPLETE
    assert half.state == INTERRUPTED
    with kb_write_lock(half.dir, "half"):
        assert half.state == CHANGING
    assert half.state == INTERRUPTED


def test_flowkit_kb_marks_the_interrupted_one(ws: Workspace,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data-dir", str(ws.data_dir), "kb"]) == 0
    out = capsys.readouterr()
    lines = {line.split()[1]: line for line in out.out.splitlines()
             if len(line.split()) > 2 and line.split()[1] in ("half", "whole")}
    assert "INTERRUPTED" in lines["half"] and "INTERRUPTED" not in lines["whole"]
    assert "knowledge base 'half': its last ingest was interrupted" in " ".join(out.err.split())


def test_the_knowledge_page_rows_mark_the_interrupted_one(ws: Workspace) -> None:
    rows = {r["name"]: r for r in kbview.kb_rows(ws.resources)}
    assert "interrupted" in rows["half"]["state"]
    # complete with no chunk ingested yet: 'empty', never marked interrupted (issue 48, item 9)
    assert rows["whole"]["state"] == kbview.EMPTY_TEXT

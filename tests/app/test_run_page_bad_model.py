"""A truncated GGUF in settings: the run is refused with the file's name and what is wrong with it
(before the run begins, so nothing is stored), the page raises nothing, and once settings name a
good model the same studio answers (real model)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flowkit.errors import NotFoundError
from flowkit.runtime.llm import default_model_path
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

pytestmark = pytest.mark.real
QUESTION = "Who designed the Corren Lighthouse?"


def _submit():
    return kit.submit_run(QUESTION)


def test_a_truncated_model_fails_the_run_clearly_and_the_studio_goes_on(tmp_path: Path) -> None:
    real = default_model_path()
    cut = tmp_path / "models" / "half.gguf"
    cut.parent.mkdir()
    with real.open("rb") as f:
        cut.write_bytes(f.read(real.stat().st_size // 3))
    ws = kit.workspace(tmp_path / "home")
    ws.resources.settings = ws.resources.settings.with_llm(model_path=str(cut))
    ws.resources.set_llm(None)                       # built from settings on the first call
    use_workspace(ws)
    try:
        at = kit.until(_submit(), lambda a: bool(a.error), timeout=120)
        shown = at.error[0].value
        assert f"model file {cut} is cut short" in shown, shown
        assert "Traceback" not in kit.texts(at)
        with pytest.raises(NotFoundError):         # refused before the run began: nothing stored
            ws.store.get_run(at.query_params["run"])
        # the user points settings back at the packaged model: the same process answers
        ws.resources.settings = ws.resources.settings.with_llm(model_path="")
        ws.resources.set_llm(None)
        # the answer box shows while the answer streams: wait for the run to end, not the box
        nxt = kit.until(_submit(), lambda a: kit.run_ended(ws, a), timeout=180)
        assert ws.store.get_run(nxt.query_params["run"]).record.status == "ok"
    finally:
        get_jobs().wait_idle(60)
        use_workspace(None)
        llm = ws.resources._llm
        if llm is not None and hasattr(llm, "close"):
            llm.close()

"""The studio survives the model: a worker killed with SIGSEGV mid-run fails that run with the
reason on the run page, and the next run from the same page answers (real default model)."""
from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

from flowkit.testing.faults import KillWorkerDuringCall

pytestmark = [pytest.mark.real, pytest.mark.loads_model]
QUESTION = "Who designed the Corren Lighthouse?"


def _submit():
    return kit.submit_run(QUESTION)


def test_killing_the_worker_mid_run_fails_the_run_and_the_studio_goes_on(tmp_path):
    ws = kit.workspace(tmp_path)
    ws.resources.set_llm(None)                       # the real default model, in its worker
    real = ws.resources.llm
    killer = KillWorkerDuringCall(real, signal.SIGSEGV, after_s=0.05)
    ws.resources.set_llm(killer)
    use_workspace(ws)
    try:
        at = kit.until(_submit(), lambda a: bool(a.error), timeout=120)
        assert "the model process died: signal 11 (SIGSEGV)" in at.error[0].value
        assert ":red-badge[error]" in kit.texts(at)
        assert killer.killed and not real.loaded
        run = ws.store.get_run(at.query_params["run"])
        assert run.record.status == "error" and "signal 11" in run.record.error
        # the answer box shows while the answer streams: wait for the run to end, not the box
        nxt = kit.until(_submit(), lambda a: kit.run_ended(ws, a), timeout=120)
        assert ws.store.get_run(nxt.query_params["run"]).record.status == "ok"
        assert real.restarts == 1
    finally:
        get_jobs().wait_idle(60)
        use_workspace(None)
        real.close()

"""Evaluations on Ray workers: the same per-question answers as the serial run (real default model,
sample KB, 2 local workers), and a multi-machine address refused while engines are embedded."""
from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

from flowkit.errors import FlowkitError
from flowkit.eval.parallel import check_engines
from flowkit.eval.runner import make_plan, resolve_flows, run_evaluation
from flowkit.eval.strategy import EvalRun, strategy_for
from flowkit.runtime.llm import LLMSettings
from flowkit.runtime.resources import Settings
from service.workspace import Workspace
from storage.evals import EvalRepo, run_id_for

ROOT = Path(__file__).resolve().parents[2]


def test_a_cluster_address_with_embedded_engines_is_refused_with_the_reason() -> None:
    check_engines("", Settings())                    # a local cluster: fine
    with pytest.raises(FlowkitError) as err:
        check_engines("ray://head:10001", Settings())
    text = str(err.value)
    assert "llm.backend llama_cpp" in text and "chroma_host" in text and "database_url" in text
    servers = Settings(llm=LLMSettings(backend="openai", base_url="http://m:8000/v1"),
                       chroma_host="c", database_url="postgresql+psycopg://u@db/flowkit")
    check_engines("ray://head:10001", servers)       # every engine a server: fine


@pytest.mark.real
@pytest.mark.loads_model
def test_two_ray_workers_give_the_serial_answers(real_resources) -> None:
    ws = Workspace(real_resources.data_dir, real_resources.settings)
    ws.resources = real_resources
    repo = EvalRepo(ws.store)
    path = ROOT / "flowkit" / "sample_kb" / "questions.jsonl"
    questions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()][:3]
    flows = resolve_flows(ws, ["naive_rag", "rewrite_retrieve_read"])
    serial = make_plan(flows, "sample", questions, "sample", eval_id="serialray")
    fanned = make_plan(flows, "sample", questions, "sample", eval_id="fannedray")
    seen: list[str] = []
    a = run_evaluation(ws, repo, serial)
    b = run_evaluation(ws, repo, fanned, EvalRun(strategy=strategy_for(2, 1, functools.partial(Workspace, ws.data_dir,
                                                        real_resources.settings), ''), progress=lambda p: seen.append(p.status)))
    assert a.status == b.status == "done" and b.ran == 6 and len(seen) == 6
    for fi in range(2):
        for qi in range(3):
            ra = ws.store.get_run(run_id_for("serialray", fi, qi))
            rb = ws.store.get_run(run_id_for("fannedray", fi, qi))
            assert (rb.record.status, rb.record.answer, rb.record.cost.tokens) == (ra.record.status, ra.record.answer, ra.record.cost.tokens)
            assert [s.node_id for s in ws.store.steps(rb.id)] == \
                [s.node_id for s in ws.store.steps(ra.id)]
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from storage.models import RunRow
    with Session(ws.store.engine) as s:
        pids = set(s.scalars(select(RunRow.pid).where(RunRow.eval_id == "fannedray")))
    assert len(pids) == 2 and os.getpid() not in pids       # two worker processes did the runs

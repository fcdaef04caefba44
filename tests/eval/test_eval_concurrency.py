"""`flowkit eval --concurrency N`: N runs in flight to a model server (a scripted
OpenAI-compatible server that counts the requests in flight), the same results in the same stored
order as serial runs, stop and resume, the embedded model's note, and bad N refused."""
from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from conftest import CORPUS, answer_for
from sqlalchemy import update
from sqlalchemy.orm import Session

from flowkit.errors import FlowkitError
from flowkit.eval.datasets import from_path
from flowkit.eval.exports import to_markdown
from flowkit.eval.formatting import CONCURRENT_ANSWERS, execution_line
from flowkit.eval.report import EvalReport
from flowkit.eval.runner import (
    collect_results,
    evaluation_report,
    make_plan,
    resolve_flows,
    run_evaluation,
)
from flowkit.eval.strategy import EvalRun, InFlight
from flowkit.runtime.llm import LLMSettings
from flowkit.runtime.resources import Settings
from flowkit.testing import MemoryKB
from flowkit.testing.openai_fake import fake_openai_server
from service.workspace import Workspace
from storage.evals import EvalRepo
from storage.models import RunRow

CONCURRENCY = 4


def server_workspace(data_dir: Path, url: str, database_url: str = "") -> Workspace:
    """A workspace whose model is the server at `url` (no completion cache: every call is sent)
    and whose knowledge base 'test' is in memory."""
    settings = Settings(llm=LLMSettings(backend="openai", base_url=url, model_name="fake"),
                        database_url=database_url, completion_cache=False)
    ws = Workspace(data_dir, settings)
    ws.resources._kbs["test"] = MemoryKB("test", CORPUS)
    return ws


def plan_on(ws: Workspace, world: Any, eval_id: str) -> Any:
    ds = from_path(world.dataset)
    EvalRepo(ws.store).save_dataset(ds.name, ds.source, ds.questions)
    flows = resolve_flows(ws, [str(world.good), str(world.vague)])
    return make_plan(flows, ds.name, ds.questions, "test", eval_id=eval_id)


def answers(repo: EvalRepo, plan: Any) -> dict[str, list[tuple[str, str]]]:
    res = collect_results(plan, repo.runs(plan.eval_id), repo.retrievals(plan.eval_id))
    return {label: [(r.question_id, r.prediction) for r in rs] for label, rs in res.items()}


def stored_order(repo: EvalRepo, eval_id: str) -> list[str]:
    """The (flow, question) suffix of each stored run, in the order the store lists them."""
    return [r.id[len(eval_id) + 1:] for r in repo.runs(eval_id)]


def test_runs_overlap_and_match_serial_runs(world: Any, tmp_path: Path, db_url: str) -> None:
    database = db_url if db_url.startswith("postgresql") else ""
    with fake_openai_server(answer_for) as serial_server, \
            fake_openai_server(answer_for, parallel=CONCURRENCY,
                               hold_until=CONCURRENCY) as busy_server:
        ws1 = server_workspace(tmp_path / "serial", serial_server.url, database)
        ws2 = server_workspace(tmp_path / "concurrent", busy_server.url, database)
        repo1, repo2 = EvalRepo(ws1.store), EvalRepo(ws2.store)
        p1, p2 = plan_on(ws1, world, "serialeval01"), plan_on(ws2, world, "concureval01")
        seen: list[Any] = []
        first = run_evaluation(ws1, repo1, p1)
        second = run_evaluation(ws2, repo2, p2, EvalRun(strategy=InFlight(CONCURRENCY), progress=seen.append))
    assert serial_server.max_in_flight == 1
    assert busy_server.max_in_flight == CONCURRENCY          # N runs really were in flight at once
    assert busy_server.requests == serial_server.requests == p1.total
    assert first.status == second.status == "done" and second.ran == p2.total
    assert [p.done for p in seen] == list(range(1, p2.total + 1))     # the progress bar's count
    assert answers(repo2, p2) == answers(repo1, p1)
    assert answers(repo2, p2)["good"][0] == ("q1", "Mara Velt")
    assert stored_order(repo2, p2.eval_id) == stored_order(repo1, p1.eval_id)
    assert stored_order(repo2, p2.eval_id)[:3] == ["0-0", "1-0", "0-1"]   # every flow, then on
    assert {r.record.status for r in repo2.runs(p2.eval_id)} == {"ok"}
    assert second.execution.concurrency == CONCURRENCY
    assert second.execution.server_parallel == CONCURRENCY
    assert repo2.get_eval(p2.eval_id).execution == [{"concurrency": CONCURRENCY,
                                                     "server_parallel": CONCURRENCY}]
    rep = evaluation_report(repo2, p2)
    assert "Runs: 4 runs in flight at once (the server reports 4 parallel slots). " \
        + CONCURRENT_ANSWERS in to_markdown(rep)
    assert evaluation_report(repo1, p1).execution == [{"concurrency": 1}]
    assert "Runs:" not in to_markdown(evaluation_report(repo1, p1))
    assert CONCURRENT_ANSWERS not in to_markdown(evaluation_report(repo1, p1))


@pytest.mark.parametrize(("execution", "says"), [
    ([{"concurrency": 4, "server_parallel": 4}], True),       # in flight to a server
    ([{"concurrency": 1}, {"concurrency": 2}], True),         # resumed with --concurrency 2
    ([{"concurrency": 1, "requested": 4}], False),            # the embedded model: serially
    ([{"concurrency": 1, "workers": 2}], False),              # Ray workers: a model each
    ([{"concurrency": 1}], False),
])
def test_report_says_answers_may_differ_only_for_runs_in_flight_to_a_server(
        execution: list[dict[str, Any]], says: bool) -> None:
    line = execution_line(cast(EvalReport, SimpleNamespace(execution=execution)))
    assert (CONCURRENT_ANSWERS in line) is says
    assert line.count(CONCURRENT_ANSWERS) <= 1


def test_stop_leaves_no_half_written_run_and_resume_skips_finished(world: Any,
                                                                   tmp_path: Path) -> None:
    stop = threading.Event()

    def stop_after_3(p: Any) -> None:
        if p.done >= 3:
            stop.set()
    with fake_openai_server(answer_for) as server:
        ws = server_workspace(tmp_path / "home2", server.url)
        repo = EvalRepo(ws.store)
        plan = plan_on(ws, world, "stopeval0001")
        first = run_evaluation(ws, repo, plan, EvalRun(strategy=InFlight(3), stop=stop, progress=stop_after_3))
        statuses = repo.statuses(plan.eval_id)
        assert first.status == "stopped" and repo.get_eval(plan.eval_id).status == "stopped"
        assert 3 <= first.ran < plan.total
        assert "running" not in statuses.values()          # every stored run has its end
        assert set(statuses.values()) <= {"ok", "cancelled"}
        finished = sorted(rid for rid, st in statuses.items() if st == "ok")
        # a run whose process was killed in the middle of it (marked so when the store opens)
        with Session(ws.store.engine) as s, s.begin():
            s.execute(update(RunRow).where(RunRow.id == finished[-1])
                      .values(status="interrupted"))
        sent = server.requests
        second = run_evaluation(ws, repo, plan, EvalRun(strategy=InFlight(3)))
    assert second.status == "done"
    assert second.skipped == len(finished) - 1
    assert second.ran == plan.total - second.skipped
    assert second.redone == len(statuses) - len(finished) + 1
    assert server.requests - sent == second.ran              # finished runs were not sent again
    assert set(repo.statuses(plan.eval_id).values()) == {"ok"}
    assert len(repo.runs(plan.eval_id)) == plan.total
    assert answers(repo, plan)["good"][2] == ("q3", "twelve")


def test_embedded_model_prints_a_note_and_runs_serially(world: Any) -> None:
    plan = plan_on(world.ws, world, "embedded0001")
    notes: list[str] = []
    in_flight, peak = [0], [0]
    lock = threading.Lock()
    run = world.ws.run

    def counted(*args: Any, **kwargs: Any) -> Any:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        try:
            return run(*args, **kwargs)
        finally:
            with lock:
                in_flight[0] -= 1
    world.ws.run = counted
    out = run_evaluation(world.ws, world.repo, plan, EvalRun(strategy=InFlight(4), notice=notes.append))
    assert out.status == "done" and out.ran == plan.total
    assert peak[0] == 1
    assert len(notes) == 1 and "--concurrency 4 needs a model server" in notes[0]
    assert "settings: engine" in notes[0]
    assert out.execution.concurrency == 1 and out.execution.requested == 4
    assert world.repo.get_eval(plan.eval_id).execution == [{"concurrency": 1, "requested": 4}]
    assert "one run at a time (--concurrency 4 asked" in to_markdown(
        evaluation_report(world.repo, plan))


@pytest.mark.parametrize("n", [0, 65, -1])
def test_bad_concurrency_is_refused(world: Any, n: int) -> None:
    plan = plan_on(world.ws, world, "badconc00001")
    with pytest.raises(FlowkitError, match=r"--concurrency must be a whole number from 1 to 64"):
        run_evaluation(world.ws, world.repo, plan, EvalRun(strategy=InFlight(n)))
    assert world.repo.find_eval(plan.eval_id) is None          # refused before anything ran


def test_cli_refuses_bad_concurrency_and_reports_it(fk: Any, world: Any, tmp_path: Path) -> None:
    base = ["eval", "--flow", str(world.good), "--flow", str(world.vague), "--dataset",
            str(world.dataset), "--kb", "test", "--limit", "3"]
    code, _, err = fk(*base, "--concurrency", "65")
    assert code == 2 and "--concurrency" in err and "from 1 to 64" in err
    code, _, err = fk(*base, "--concurrency", "2", "--workers", "2")
    assert code == 2 and "choose one" in err
    with fake_openai_server(answer_for, parallel=2, hold_until=2) as server:
        settings = world.ws.resources.settings.with_llm(backend="openai", base_url=server.url,
                                                         model_name="fake")
        world.ws.resources.settings = settings
        world.ws.resources._llm = None                    # the client for the server, made anew
        md, js = tmp_path / "r.md", tmp_path / "r.json"
        code, out, err = fk(*base, "--no-cache", "--concurrency", "2", "--report", str(md),
                            "--out", str(js))
    assert code == 0, err
    assert server.max_in_flight == 2
    assert "2 runs in flight (server: 2 parallel slots)" in err
    assert "Runs: 2 runs in flight at once (the server reports 2 parallel slots)." in md.read_text()
    assert err.count(CONCURRENT_ANSWERS) == 1 and CONCURRENT_ANSWERS in md.read_text()
    data = json.loads(js.read_text())
    assert data["execution"] == [{"concurrency": 2, "server_parallel": 2}]
    assert len(data["results"]["good"]) == 3


def test_cli_with_embedded_model_prints_the_note_once(fk: Any, world: Any) -> None:
    code, _, err = fk("eval", "--flow", str(world.good), "--flow", str(world.vague), "--dataset",
                      str(world.dataset), "--kb", "test", "--limit", "2", "--concurrency", "3")
    assert code == 0, err
    assert err.count("needs a model server") == 1
    assert "runs in flight" not in err
    assert CONCURRENT_ANSWERS not in err                      # the runs went one at a time


def test_ctrl_c_lets_runs_in_flight_end_and_resume_finishes(world: Any, tmp_path: Path) -> None:
    def interrupt(p: Any) -> None:            # Ctrl-C arrives while the runner waits for runs
        if p.done == 2:
            raise KeyboardInterrupt
    with fake_openai_server(answer_for) as server:
        ws = server_workspace(tmp_path / "home3", server.url)
        repo = EvalRepo(ws.store)
        plan = plan_on(ws, world, "ctrlceval001")
        with pytest.raises(KeyboardInterrupt):
            run_evaluation(ws, repo, plan, EvalRun(strategy=InFlight(3), progress=interrupt))
        statuses = repo.statuses(plan.eval_id)
        assert repo.get_eval(plan.eval_id).status == "interrupted"
        assert 2 <= len(statuses) < plan.total                 # no new run started after it
        assert set(statuses.values()) <= {"ok", "cancelled"}   # none left half-written
        again = run_evaluation(ws, repo, plan, EvalRun(strategy=InFlight(3)))
    assert again.status == "done"
    assert again.skipped == list(statuses.values()).count("ok")
    assert set(repo.statuses(plan.eval_id).values()) == {"ok"}

"""Storage: versions, stale saves, traces as the run goes, interrupted runs."""
from __future__ import annotations

import threading

import pytest

from flowkit import ListSink, StaleSaveError, compile_flow, run_flow
from flowkit.errors import FlowkitError, NotFoundError
from flowkit.run_request import RunHooks, RunRequest
from flowkit.testing import FakeLLM, fake_resources, flow
from flowkit.trace import MultiSink
from storage.repo import Store


@pytest.fixture()
def store(db_url):
    return Store(db_url)


def spec(desc=""):
    s = flow("f1", [("ret", "retrieval.bm25"), ("gen", "generation.answer")], ["ret>gen"])
    return s.model_copy(update={"description": desc})


def test_versions_and_stale_save(store):
    assert store.save_flow(spec("v1"), None) == 1
    assert store.save_flow(spec("v2"), 1) == 2
    with pytest.raises(StaleSaveError, match="you edited version 1, the stored version is 2"):
        store.save_flow(spec("late edit"), 1)
    got, v = store.get_flow("f1")
    assert v == 2 and got.description == "v2"
    assert [x.version for x in store.versions("f1")] == [2, 1]
    assert store.get_flow("f1", 1)[0].description == "v1"
    with pytest.raises(FlowkitError, match="already exists"):
        store.save_flow(spec("dup"), None)


def test_concurrent_saves_one_wins(store):
    store.save_flow(spec("v1"), None)
    results: list[str] = []

    def save(tag: str) -> None:
        try:
            store.save_flow(spec(tag), 1)
            results.append("ok")
        except StaleSaveError:
            results.append("stale")

    threads = [threading.Thread(target=save, args=(f"t{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["ok", "stale", "stale", "stale"]
    assert store.get_flow("f1")[1] == 2


def test_delete(store):
    store.save_flow(spec(), None)
    store.delete_flow("f1")
    with pytest.raises(NotFoundError):
        store.get_flow("f1")


def test_run_and_steps_are_stored(store):
    compiled = compile_flow(spec())
    listed = ListSink()
    res = fake_resources(FakeLLM([(r"Question:", "Tessel [1]")]))
    result = run_flow(compiled, res,
                      RunRequest("Where was Mara Velt born?", kb="test", flow_version=3),
                      RunHooks(sink=MultiSink(store.sink(), listed)))
    run = store.get_run(result.run_id)
    assert run.record.status == "ok" and run.record.answer == "Tessel" and run.record.flow_version == 3
    assert run.record.cost.tokens == result.cost.tokens > 0 and run.record.cost.calls == 1
    assert run.spec["nodes"][0]["params"]["top_k"] == 5          # resolved with defaults
    assert run.operator_versions == {"retrieval.bm25": "1", "generation.answer": "2"}
    steps = store.steps(run.id)
    assert [(s.node_id, s.visit) for s in steps] == listed.sequence()
    assert steps[1].llm_calls[0].prompt.startswith("Answer the question")
    assert steps[1].memory_after["answer"] == "Tessel"
    assert steps[0].retrievals[0].docs[0]["score"] > 0


def test_dead_process_runs_become_interrupted(store):
    import socket

    from sqlalchemy.orm import Session

    from storage.models import RunRow
    with Session(store.engine) as s, s.begin():
        s.add(RunRow(id="deadbeef", flow_name="f", spec={}, question="q", status="running",
                     pid=999_999_9, host=socket.gethostname()))
    assert store.mark_interrupted() == 1
    assert store.get_run("deadbeef").record.status == "interrupted"
    assert store.mark_interrupted() == 0


def test_concurrent_runs_and_a_reader_share_one_store(store):
    """Four writers run flows at once while a reader lists runs and reads steps (SQLite WAL with a
    busy timeout; PostgreSQL): every run is stored whole, no 'database is locked'."""
    spec_ = spec()
    compiled = compile_flow(spec_)
    errors: list[BaseException] = []
    stop = threading.Event()

    def writer(w: int) -> None:
        try:
            res = fake_resources(FakeLLM(default="Tessel [1]"))
            for i in range(3):
                run_flow(compiled, res,
                         RunRequest("Where was Mara Velt born?", kb="test", run_id=f"w{w}-{i}"),
                         RunHooks(sink=store.sink()))
        except BaseException as err:  # noqa: BLE001 - collected and asserted below
            errors.append(err)

    def reader() -> None:
        try:
            while not stop.is_set():
                for r in store.list_runs(limit=20):
                    store.steps(r.id)
        except BaseException as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    stop.set()
    watcher.join(10)
    assert errors == []
    runs = store.list_runs(limit=50)
    assert len(runs) == 12 and {r.record.status for r in runs} == {"ok"}
    for r in runs:
        assert [s.index for s in store.steps(r.id)] == [0, 1]

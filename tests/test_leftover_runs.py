"""Runs left behind are found: by process identity (pid + start time) on this host and boot, by
lease for another host (a recreated container, another machine), and old databases gain the columns."""
from __future__ import annotations

import os
import sqlite3
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from flowkit.process import identity_alive, process_identity
from flowkit.run_request import RunHooks, RunRequest
from storage.models import RunRow, utcnow
from storage.repo import Store


@pytest.fixture()
def store(db_url):
    return Store(db_url)


def _running(store: Store, run_id: str, **fields) -> None:
    with Session(store.engine) as s, s.begin():
        s.add(RunRow(id=run_id, flow_name="f", spec={}, question="q", status="running", **fields))


def test_identity_tells_a_reused_pid_from_the_process_that_ran() -> None:
    me = process_identity()
    assert identity_alive(me) is True
    host, boot, pid, ticks = me.split("|")
    assert identity_alive(f"{host}|{boot}|{pid}|{int(ticks) + 1}") is False     # pid reused
    assert identity_alive(f"{host}|{boot}|99999999|{ticks}") is False           # gone
    assert identity_alive(f"other-host|{boot}|{pid}|{ticks}") is None           # not ours to judge
    assert identity_alive(f"{host}|another-boot|{pid}|{ticks}") is None
    assert identity_alive("garbage") is None


def test_a_run_whose_pid_was_reused_is_interrupted(store: Store) -> None:
    host, boot, pid, ticks = process_identity().split("|")
    # the pid is alive (it is this test's own process) but started at another time
    _running(store, "reused", pid=os.getpid(), host=host, owner=f"{host}|{boot}|{pid}|{int(ticks) - 5}")
    _running(store, "mine", pid=os.getpid(), host=host, owner=process_identity())
    assert store.mark_interrupted() == 1
    assert store.get_run("reused").record.status == "interrupted"
    assert store.get_run("mine").record.status == "running"


def test_another_hosts_run_is_judged_by_its_lease(store: Store) -> None:
    other = "old-container|boot|123|456"
    _running(store, "expired", host="old-container", owner=other, lease_until=utcnow() - timedelta(seconds=1))
    _running(store, "leased", host="old-container", owner=other, lease_until=utcnow() + timedelta(minutes=2))
    _running(store, "legacy", host="old-container", pid=123,
             started_at=utcnow() - timedelta(days=2))   # recorded before leases existed
    assert store.mark_interrupted() == 2
    assert {r: store.get_run(r).record.status for r in ("expired", "leased", "legacy")} == \
        {"expired": "interrupted", "leased": "running", "legacy": "interrupted"}


def test_a_run_holds_a_lease_while_it_runs(store: Store) -> None:
    from flowkit import compile_flow, run_flow
    from flowkit.testing import FakeLLM, fake_resources, flow

    seen = {}

    class Peek(FakeLLM):
        def complete(self, prompt, **kw):
            with Session(store.engine) as s:
                row = s.get(RunRow, "leased-run")
                seen.update(owner=row.owner, lease=row.lease_until)
            return super().complete(prompt, **kw)

    spec = flow("one", [("ret", "retrieval.bm25", {"top_k": 1}), ("gen", "generation.answer")],
                ["ret>gen"], entry="ret")
    run_flow(compile_flow(spec), fake_resources(Peek(default="x")),
             RunRequest("Where was Mara Velt born?", kb="test", run_id="leased-run"),
             RunHooks(sink=store.sink()))
    assert seen["owner"] == process_identity()
    assert seen["lease"] is not None
    assert "leased-run" not in store._active       # released when it ended


def test_an_old_database_gains_the_new_columns(tmp_path) -> None:
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE runs (id VARCHAR(32) PRIMARY KEY, flow_name VARCHAR(200), spec JSON, "
                "operator_versions JSON, question TEXT, kb VARCHAR(100), model_id VARCHAR(300), "
                "model_hash VARCHAR(128), settings JSON, status VARCHAR(32), answer TEXT, "
                "citations JSON, error TEXT, halt_reason TEXT, steps INTEGER, llm_calls INTEGER, "
                "tokens INTEGER, ms FLOAT, memory JSON, pid INTEGER, host VARCHAR(200), "
                "parent_run_id VARCHAR(32), parent_step INTEGER, eval_id VARCHAR(32), "
                "started_at DATETIME, ended_at DATETIME)")
    con.execute("INSERT INTO runs (id, flow_name, spec, question, status, pid, host, started_at) "
                "VALUES ('old', 'f', '{}', 'q', 'ok', 1, 'h', '2026-01-01 00:00:00')")
    con.commit()
    con.close()
    store = Store(f"sqlite:///{path}")
    assert store.get_run("old").record.status == "ok"
    cols = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(runs)")}
    assert {"owner", "lease_until"} <= cols

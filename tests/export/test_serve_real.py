"""An exported template served by LangGraph's own dev server answers like run_flow.

The server (`langgraph dev` from langgraph-cli[inmem], in the dev extra) starts once for this module
in the exported folder, on its own data dir with the sample KB ingested by a separate process
(Chroma: one process owns a persist directory), and stops after. When the CLI is missing or the
server does not come up, the tests fail with the reason and the server's log.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import flowkit
from flowkit import ListSink, compile_flow, run_flow
from flowkit.export import write_package
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.resources import save_settings
from flowkit.templates import load_template
from flowkit.testing.sample_home import setup_sample

from .conftest import sequence

pytestmark = pytest.mark.real

FLOW = "naive_rag"
QUESTION = "Who designed the Corren Lighthouse?"


@dataclass
class Served:
    url: str = ""
    problem: str = ""
    folder: Path | None = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/ok", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, real_resources: Any) -> Iterator[Served]:
    cli = Path(sys.executable).parent / "langgraph"
    if not cli.is_file():
        yield Served(problem=f"langgraph-cli is not installed ({cli} missing): "
                             "pip install 'langgraph-cli[inmem]' (flowkit's dev extra)")
        return
    home = tmp_path_factory.mktemp("serve-home")
    save_settings(home, real_resources.settings)      # same model settings as run_flow's side
    env = {**os.environ, "FLOWKIT_HOME": str(home), "FLOWKIT_KB": "sample",
           "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False", "LANGSMITH_TRACING": "false",
           # the server imports graph.py, which imports this checkout's flowkit
           "PYTHONPATH": os.pathsep.join([str(Path(flowkit.__file__).parents[1]),
                                          os.environ.get("PYTHONPATH", "")])}
    try:
        setup_sample(home)        # as `flowkit setup` leaves it (one setup per run, copied)
    except subprocess.CalledProcessError as e:
        yield Served(problem=f"`flowkit setup` failed: {(e.stderr or b'')[-2000:]!r}")
        return
    folder = tmp_path_factory.mktemp("served") / FLOW
    write_package(load_template(FLOW), folder)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = folder.parent / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([str(cli), "dev", "--no-browser", "--no-reload", "--port", str(port),
                                 "--host", "127.0.0.1"], cwd=folder, env=env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not _up(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                why = (f"exited with {proc.returncode}" if proc.poll() is not None
                       else "did not answer /ok within 120 s")
                yield Served(problem=f"`langgraph dev` {why}; log:\n"
                                     f"{log_path.read_text()[-3000:]}")
                return
            time.sleep(0.5)
        yield Served(url=url, folder=folder)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)    # the server and the model worker it started
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _client(served: Served) -> Any:
    if served.problem:
        pytest.fail(served.problem)
    try:
        from langgraph_sdk import get_sync_client
    except ImportError as err:
        pytest.fail(f"langgraph-sdk is not installed (flowkit's dev extra): {err}")
    return get_sync_client(url=served.url)


def test_server_lists_the_exported_graph(served: Served):
    client = _client(served)
    assistants = client.assistants.search(graph_id=FLOW)
    assert [a["graph_id"] for a in assistants] == [FLOW]


def test_served_graph_answers_like_run_flow(served: Served, real_resources: Any):
    client = _client(served)
    out = client.runs.wait(None, FLOW, input={"question": QUESTION})
    assert isinstance(out, dict) and "answer" in out, out
    sink = ListSink()
    result = run_flow(compile_flow(load_template(FLOW)), real_resources,
                      RunRequest(QUESTION, kb="sample"), RunHooks(sink=sink))
    assert result.status == "ok", result.error
    assert out["answer"] == result.answer and out["answer"].strip()
    assert sequence(out["trace"]) == sink.sequence() == [("retrieve", 1), ("generate", 1)]
    assert out["llm_calls"] == result.cost.calls == 1


def test_a_thread_takes_one_question_and_says_so_on_the_next(served: Served):
    client = _client(served)
    thread = client.threads.create()
    out = client.runs.wait(thread["thread_id"], FLOW, input={"question": QUESTION})
    assert out["answer"].strip() and sequence(out["trace"]) == [("retrieve", 1), ("generate", 1)]
    again = client.runs.wait(thread["thread_id"], FLOW, input={"question": QUESTION},
                             raise_error=False)
    assert again["__error__"]["error"] == "RunInputError", again
    assert "this thread already holds run" in again["__error__"]["message"]


def test_a_run_names_its_knowledge_base_and_hears_what_is_wrong(served: Served):
    client = _client(served)
    out = client.runs.wait(None, FLOW, input={"question": QUESTION},
                           config={"configurable": {"kb": "no_such_kb"}}, raise_error=False)
    assert out["__error__"]["error"] == "RunInputError", out
    assert "no_such_kb" in out["__error__"]["message"]


def test_served_runs_are_traced_once_the_settings_file_says_so(served: Served):
    """The package reads its flowkit_settings.json at every node: switched on while the server
    runs, the next run's spans reach the collector (tests/telemetry's OTLP receiver)."""
    import json
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "telemetry"))
    from telkit import start_receiver
    client = _client(served)
    assert served.folder is not None
    path = served.folder / "flowkit_settings.json"
    before = path.read_text()
    receiver = start_receiver()
    try:
        settings = json.loads(before)
        settings["telemetry"] = {"enabled": True, "otlp_endpoint": receiver.url, "headers": {}}
        path.write_text(json.dumps(settings))
        out = client.runs.wait(None, FLOW, input={"question": QUESTION})
        deadline = time.monotonic() + 60          # the server's exporter sends within a second
        while not any(not s.parent_span_id for s in receiver.spans):
            assert time.monotonic() < deadline, f"no root span; got {len(receiver.spans)} spans"
            time.sleep(0.5)
        root = next(s for s in receiver.spans if not s.parent_span_id)
        attrs = {a.key: a.value for a in root.attributes}
        assert root.name == FLOW and attrs["flowkit.run_id"].string_value == out["run_id"]
        assert attrs["input.value"].string_value == QUESTION
        assert attrs["output.value"].string_value == out["answer"]
        mine = [s for s in receiver.spans if s.trace_id == root.trace_id]
        nodes = sorted((s for s in mine if s.parent_span_id == root.span_id),
                       key=lambda s: s.start_time_unix_nano)
        assert [s.name for s in nodes] == ["retrieve", "generate"]
        kinds = sorted({a.key: a.value for a in s.attributes}
                       ["openinference.span.kind"].string_value for s in mine)
        assert kinds.count("LLM") == out["llm_calls"] == 1 and "RETRIEVER" in kinds
    finally:
        path.write_text(before)
        receiver.close()

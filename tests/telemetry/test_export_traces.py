"""An exported package's runs as traces: switched on by its flowkit_settings.json or the OTEL_*
variables, the same span tree as the engine's run of the same flow (self_rag: a router branch and
a judged loop), sent from a separate process into the session's real Phoenix; a collector that is
down is said once and the run still answers."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from telkit import Q, looping_llm, self_rag_run, start_receiver

from flowkit.export import write_package
from flowkit.export.tracing import read_telemetry
from flowkit.telemetry.export import build_spans
from flowkit.telemetry.record import RunRecord
from flowkit.telemetry.settings import WARNED
from flowkit.templates import load_template
from flowkit.testing import fake_resources

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

#: imports graph.py by path (as `langgraph dev` does) and asks one question on the fake model
SCRIPT = textwrap.dedent("""
    import importlib.util, json, sys
    sys.path.insert(0, sys.argv[3])
    from telkit import Q, looping_llm
    from flowkit.testing import fake_resources
    spec = importlib.util.spec_from_file_location("exported_graph", sys.argv[1] + "/graph.py")
    module = sys.modules["exported_graph"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.graph.invoke({"question": Q}, config={"configurable": {
        "flowkit_resources": fake_resources(looping_llm()), "kb": "test", "run_id": sys.argv[2]}})
    loaded = sorted(m for m in sys.modules if m.startswith(LOADS_OTEL))
    print(json.dumps({"answer": out["answer"], "run_id": out["run_id"], "steps": out["steps"],
                      "trace": [[t["node"], t["visit"]] for t in out["trace"]],
                      "loaded": loaded}))
""").replace("LOADS_OTEL", repr(("opentelemetry.exporter", "flowkit.telemetry.export",
                                 "flowkit.telemetry.spans")))


#: like SCRIPT, but the model's third call writes the file argv[3] names and hangs (a run the
#: test then kills with SIGTERM), or with argv[5] "exit" ends the process (SystemExit)
HANGING_SCRIPT = textwrap.dedent("""
    import importlib.util, pathlib, sys, time
    sys.path.insert(0, sys.argv[4])
    from telkit import Q, looping_llm
    from flowkit.testing import fake_resources
    llm, calls = looping_llm(), []
    answer = llm.complete

    def complete(prompt, **kw):
        calls.append(prompt)
        if len(calls) == 3:
            pathlib.Path(sys.argv[3]).write_text("hanging")
            if sys.argv[5:] == ["exit"]:
                sys.exit(3)
            time.sleep(120)
        return answer(prompt, **kw)

    llm.complete = complete
    spec = importlib.util.spec_from_file_location("exported_graph", sys.argv[1] + "/graph.py")
    module = sys.modules["exported_graph"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.graph.invoke({"question": Q}, config={"configurable": {
        "flowkit_resources": fake_resources(llm), "kb": "test", "run_id": sys.argv[2]}})
""")


class Killed(BaseException):
    """Stands for the process ending mid-run (nothing in flowkit or LangGraph catches it)."""


def export_self_rag(folder: Path, telemetry: dict[str, Any] | None = None) -> Path:
    write_package(load_template("self_rag"), folder, version=3, overwrite=True)
    if telemetry is not None:
        path = folder / "flowkit_settings.json"
        settings = json.loads(path.read_text())
        settings["telemetry"] = telemetry
        path.write_text(json.dumps(settings))
    return folder


def run_package(folder: Path, run_id: str, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    script = folder.parent / "ask.py"
    script.write_text(SCRIPT)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run([sys.executable, str(script), str(folder), run_id, str(HERE)],
                          env={**clean, "PYTHONPATH": str(ROOT), **(env or {})}, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def engine_spans() -> tuple[Any, list[Any]]:
    """self_rag run by the engine on the same script, and the spans the studio would send."""
    result, sink, _ = self_rag_run()
    start = sink.run
    assert start is not None and sink.result is not None
    return result, build_spans([RunRecord.from_live(start, sink.steps, sink.result)])


def test_in_process_the_package_sends_the_engines_span_tree(tmp_path, monkeypatch):
    receiver = start_receiver()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        folder = export_self_rag(tmp_path / "pkg")
        from exportkit import load_module
        module = load_module(folder)
        out = module.graph.invoke({"question": Q}, config={"configurable": {
            "flowkit_resources": fake_resources(looping_llm()), "kb": "test", "run_id": "pkg-1"}})
        live = module.RUNTIME.tracer.live()
        assert live is not None and live.flush(10)
        result, expected = engine_spans()
        assert out["answer"] == result.answer
        assert len(receiver.spans) == len(expected)
        roots = [s for s in receiver.spans if not s.parent_span_id]
        assert len(roots) == 1
        attrs = {a.key: a.value for a in roots[0].attributes}
        assert attrs["flowkit.run_id"].string_value == "pkg-1"
        assert attrs["flowkit.flow"].string_value == "self_rag"
        assert attrs["flowkit.flow_version"].int_value == 3
        assert attrs["input.value"].string_value == Q
        assert attrs["output.value"].string_value == out["answer"]
        assert attrs["flowkit.steps"].int_value == out["steps"] == result.steps
        ids = {s.span_id for s in receiver.spans}
        assert len(ids) == len(receiver.spans)
        assert all(s.parent_span_id in ids for s in receiver.spans if s.parent_span_id)
        assert len({s.trace_id for s in receiver.spans}) == 1
        kinds = sorted((s.name, {a.key: a.value for a in s.attributes}
                        ["openinference.span.kind"].string_value) for s in receiver.spans)
        assert kinds == sorted((s.name, s.attributes["openinference.span.kind"])
                               for s in expected)
    finally:
        receiver.close()


def test_a_packages_parallel_branches_are_spans_with_their_own_step_index(tmp_path, monkeypatch):
    from flowkit.testing import HashEmbedder
    from flowkit.testing.fakes import template_script
    receiver = start_receiver()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        folder = tmp_path / "branching"
        write_package(load_template("pre_retrieval_branching"), folder)
        from exportkit import load_module
        module = load_module(folder)
        out = module.graph.invoke({"question": Q}, config={"configurable": {
            "flowkit_resources": fake_resources(template_script(), kb="test",
                                                embedder=HashEmbedder()),
            "kb": "test", "run_id": "pkg-branch-1"}})
        live = module.RUNTIME.tracer.live()
        assert live is not None and live.flush(10)
        root = next(s for s in receiver.spans if not s.parent_span_id)
        nodes = [s for s in receiver.spans if s.parent_span_id == root.span_id]
        index = {s.name: {a.key: a.value for a in s.attributes}["flowkit.step_index"].int_value
                 for s in nodes}
        assert len(nodes) == len(index) == out["steps"] == 5
        assert sorted(index.values()) == list(range(5))
        assert index["expand"] == 0 and {index["bm25"], index["dense"]} == {1, 2}
        assert (index["fuse"], index["generate"]) == (3, 4)
        assert {t["node"]: t["index"] for t in out["trace"]} == index    # the state's trace too
    finally:
        receiver.close()


def test_a_run_its_process_ends_under_gets_a_killed_root_over_its_node_spans(tmp_path,
                                                                            monkeypatch):
    import signal
    receiver = start_receiver()
    before = signal.getsignal(signal.SIGTERM)
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        folder = export_self_rag(tmp_path / "pkg")
        from exportkit import load_module
        module = load_module(folder)
        llm, calls = looping_llm(), []
        answer = llm.complete

        def complete(prompt: str, **kw: Any) -> Any:
            calls.append(prompt)
            if len(calls) == 3:
                raise Killed()
            return answer(prompt, **kw)

        llm.complete = complete                              # type: ignore[method-assign]
        with pytest.raises(Killed):
            module.graph.invoke({"question": Q}, config={"configurable": {
                "flowkit_resources": fake_resources(llm), "kb": "test", "run_id": "pkg-kill-1"}})
        tracer = module.RUNTIME.tracer
        live = tracer.live()
        assert live is not None and live.flush(10)
        assert receiver.spans and not [s for s in receiver.spans if not s.parent_span_id]
        assert signal.getsignal(signal.SIGTERM) is not before     # its SIGTERM handler is set
        from flowkit.export import tracing
        from flowkit.telemetry import export
        assert tracing.CLOSE_WAIT_S == export.CLOSE_WAIT_S         # a copy (not to load OTel)
        assert tracer.kill_open("the test") == 1                  # what atexit/SIGTERM call
        assert tracer.kill_open("the test") == 0                  # sent once
        roots = [s for s in receiver.spans if not s.parent_span_id]
        assert len(roots) == 1
        root = roots[0]
        attrs = {a.key: a.value for a in root.attributes}
        assert attrs["flowkit.status"].string_value == "killed"
        assert attrs["flowkit.error"].string_value == "killed: the test before the run ended"
        assert root.status.code == root.status.STATUS_CODE_ERROR
        assert root.status.message.startswith("killed: the test")
        assert attrs["flowkit.run_id"].string_value == "pkg-kill-1"
        assert attrs["input.value"].string_value == Q
        nodes = [s for s in receiver.spans if s.parent_span_id == root.span_id]
        assert len(nodes) >= 2 and attrs["flowkit.steps"].int_value == len(nodes)
        assert len({s.trace_id for s in receiver.spans}) == 1
        llm_spans = [s for s in receiver.spans if {a.key: a.value for a in s.attributes}
                     ["openinference.span.kind"].string_value == "LLM"]
        assert attrs["flowkit.llm_calls"].int_value == len(llm_spans) >= 1   # ended calls
        assert len(calls) == 3                                # the third was cut off
    finally:
        signal.signal(signal.SIGTERM, before)
        receiver.close()


def test_a_package_process_that_exits_mid_run_sends_the_runs_root_at_exit(tmp_path):
    receiver = start_receiver()
    try:
        folder = export_self_rag(tmp_path / "pkg")
        script = tmp_path / "hang.py"
        script.write_text(HANGING_SCRIPT)
        clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        proc = subprocess.run([sys.executable, str(script), str(folder), "pkg-exit-1",
                               str(tmp_path / "hanging"), str(HERE), "exit"],
                              env={**clean, "PYTHONPATH": str(ROOT),
                                   "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url},
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 3, proc.stderr[-2000:]
        roots = [s for s in receiver.spans if not s.parent_span_id]
        assert len(roots) == 1, proc.stderr[-2000:]
        attrs = {a.key: a.value for a in roots[0].attributes}
        assert attrs["flowkit.status"].string_value == "killed"
        assert attrs["flowkit.error"].string_value == \
            "killed: the process exited before the run ended"
        nodes = [s for s in receiver.spans if s.parent_span_id == roots[0].span_id]
        assert len(nodes) == attrs["flowkit.steps"].int_value >= 2
    finally:
        receiver.close()


def test_a_package_run_killed_by_sigterm_has_its_root_in_phoenix(phoenix, tmp_path):
    import signal
    import time
    folder = export_self_rag(tmp_path / "pkg", {"enabled": True, "otlp_endpoint": phoenix.url,
                                                "headers": {}})
    script, marker = tmp_path / "hang.py", tmp_path / "hanging"
    script.write_text(HANGING_SCRIPT)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = subprocess.Popen([sys.executable, str(script), str(folder), "pkg-sigterm-1",
                             str(marker), str(HERE)], env={**clean, "PYTHONPATH": str(ROOT)},
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not marker.exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        assert marker.exists(), proc.communicate(timeout=5)[1][-2000:]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGTERM, err[-2000:]    # it still dies by SIGTERM
    roots = phoenix.wait_for(1, attribute="flowkit.run_id:pkg-sigterm-1", parent_id="null")
    assert len(roots) == 1, phoenix.log.read_text()[-1500:]
    root = roots[0]
    assert root["name"] == "self_rag" and root["status_code"] == "ERROR"
    assert root["attributes"]["flowkit.status"] == "killed"
    assert root["attributes"]["flowkit.error"] == "killed: SIGTERM before the run ended"
    steps = root["attributes"]["flowkit.steps"]
    spans = phoenix.wait_for(steps + 1, trace_id=root["context"]["trace_id"])
    nodes = [s for s in spans if s["parent_id"] == root["context"]["span_id"]]
    assert len(nodes) == steps >= 2                       # no orphans: all under the root
    ids = {s["context"]["span_id"] for s in spans}
    assert all(s["parent_id"] in ids for s in spans if s["parent_id"])
    assert [s for s in spans if not s["parent_id"]] == [root]


def test_the_settings_files_telemetry_is_read_and_checked(tmp_path, caplog):
    assert not read_telemetry(tmp_path / "missing.json").enabled
    folder = export_self_rag(tmp_path / "pkg")
    written = json.loads((folder / "flowkit_settings.json").read_text())
    assert written["telemetry"] == {"enabled": False, "otlp_endpoint": "", "headers": {}}
    assert not read_telemetry(folder / "flowkit_settings.json").enabled
    export_self_rag(folder, {"enabled": True, "otlp_endpoint": "http://collector:4318",
                             "headers": {"api_key": "k"}})
    tel = read_telemetry(folder / "flowkit_settings.json")
    assert (tel.enabled, tel.otlp_endpoint, tel.headers) == (True, "http://collector:4318",
                                                            {"api_key": "k"})
    export_self_rag(folder, {"enabled": "yes"})       # a bad block: one warning, export off
    WARNED.forget()
    with caplog.at_level(logging.WARNING):
        assert not read_telemetry(folder / "flowkit_settings.json").enabled
        assert not read_telemetry(folder / "flowkit_settings.json").enabled
    said = [r.getMessage() for r in caplog.records if "telemetry.enabled" in r.getMessage()]
    assert len(said) == 1 and "flowkit_settings.json" in said[0], said
    (folder / "flowkit_settings.json").write_text("{not json")
    assert not read_telemetry(folder / "flowkit_settings.json").enabled
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in (folder / "README.md").read_text()


def test_a_package_run_in_its_own_process_arrives_in_phoenix(phoenix, tmp_path):
    folder = export_self_rag(tmp_path / "pkg", {"enabled": True, "otlp_endpoint": phoenix.url,
                                                "headers": {}})
    proc = run_package(folder, "pkg-phoenix-1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    result, expected = engine_spans()
    assert out["answer"] == result.answer
    roots = phoenix.wait_for(1, attribute="flowkit.run_id:pkg-phoenix-1", parent_id="null")
    assert len(roots) == 1, phoenix.log.read_text()[-1500:]
    root = roots[0]
    spans = phoenix.wait_for(len(expected), trace_id=root["context"]["trace_id"])
    assert len(spans) == len(expected)
    assert root["name"] == "self_rag" and root["span_kind"] == "CHAIN"
    assert root["attributes"]["input.value"] == Q
    assert root["attributes"]["output.value"] == out["answer"]
    assert root["attributes"]["flowkit.flow_version"] == 3
    nodes = sorted((s for s in spans if s["parent_id"] == root["context"]["span_id"]),
                   key=lambda s: s["attributes"]["flowkit.step_index"])
    assert [[s["name"], s["attributes"]["flowkit.visit"]] for s in nodes] == out["trace"]
    assert ["search", 2] in out["trace"]                            # the loop looped
    kinds = sorted(s["span_kind"] for s in spans)
    assert kinds == sorted(s.attributes["openinference.span.kind"] for s in expected)
    assert kinds.count("LLM") >= 4 and kinds.count("RETRIEVER") >= 2


def test_with_telemetry_off_a_package_never_loads_the_exporter(tmp_path):
    folder = export_self_rag(tmp_path / "pkg")
    proc = run_package(folder, "pkg-off-1")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["answer"] == self_rag_run()[0].answer
    assert out["loaded"] == []          # (langsmith may load OTel's SDK; flowkit's exporter: no)


def test_a_collector_that_is_down_is_said_once_and_the_run_answers(tmp_path):
    from telkit import free_port
    folder = export_self_rag(tmp_path / "pkg")
    url = f"http://127.0.0.1:{free_port()}"
    proc = run_package(folder, "pkg-down-1", {"OTEL_EXPORTER_OTLP_ENDPOINT": url})
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["answer"] == self_rag_run()[0].answer and out["run_id"] == "pkg-down-1"
    assert "flowkit.telemetry.export" in out["loaded"]                # it was on
    said = [line for line in proc.stderr.splitlines() if "telemetry:" in line]
    assert len(said) == 1, proc.stderr[-2000:]
    assert said[0].startswith(f"telemetry: the collector at {url}/v1/traces ")
    assert "dropped" in said[0] and "runs are not affected" in said[0]

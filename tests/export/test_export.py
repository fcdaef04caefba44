"""`flowkit export`: every template becomes a LangGraph package whose graph behaves like run_flow.

Unit part: a scripted FakeLLM and an in-memory KB, passed to the exported graph in process through
the configurable `flowkit_resources`.
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph.state import CompiledStateGraph

from flowkit import ListSink, compile_flow, run_flow
from flowkit.compile import FINISH
from flowkit.errors import FlowkitError, ResourceError, ValidationError
from flowkit.export import export_zip, render, write_package
from flowkit.export.runtime import ExportSettings
from flowkit.run_request import RunHooks, RunRequest
from flowkit.spec import EdgeSpec, Limits, canonical, load
from flowkit.templates import load_template, names
from flowkit.testing import FakeLLM, HashEmbedder, fake_resources
from flowkit.testing.fakes import template_script
from service.cli import main

from .conftest import export, load_module, normalise, sequence

TWO_HOP = "On which island was the designer of the Corren Lighthouse born?"


def scripted() -> FakeLLM:
    return template_script()


def both_ways(spec: Any, tmp_path: Path, question: str = TWO_HOP) -> tuple[Any, ListSink, dict, FakeLLM, FakeLLM]:
    """Run `spec` with run_flow and as an exported graph, each on its own scripted FakeLLM."""
    llm_engine, llm_export = scripted(), scripted()
    sink = ListSink()
    result = run_flow(compile_flow(spec),
                      fake_resources(llm_engine, kb="test", embedder=HashEmbedder()),
                      RunRequest(question, kb="test"), RunHooks(sink=sink))
    _, module = export(spec, tmp_path)
    out = module.graph.invoke({"question": question}, config={"configurable": {
        "flowkit_resources": fake_resources(llm_export, kb="test", embedder=HashEmbedder()),
        "kb": "test"}})
    return result, sink, out, llm_engine, llm_export


@pytest.mark.parametrize("name", names())
def test_every_template_exports_and_its_graph_compiles(name: str, tmp_path: Path):
    spec = load_template(name)
    folder, module = export(spec, tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md", "flow.json", "flowkit_settings.json", "graph.py", "langgraph.json"]
    assert isinstance(module.graph, CompiledStateGraph)
    # the exported graph has the same nodes and the same edges as flowkit's own compiled graph
    ours = compile_flow(spec).graph.get_graph()
    theirs = module.graph.get_graph()
    assert set(theirs.nodes) == set(ours.nodes) == {"__start__", "__end__", FINISH,
                                                    *(n.id for n in spec.nodes)}

    def edges(g: Any) -> set[tuple[str, str, bool]]:
        return {(e.source, e.target, e.conditional) for e in g.edges if e.source != "__start__"}
    assert edges(theirs) == edges(ours)
    assert [(e.source, e.target) for e in theirs.edges if e.source == "__start__"] == [
        ("__start__", spec.entry_node())]
    assert module.LIMITS == spec.limits
    assert json.loads((folder / "langgraph.json").read_text()) == {
        "dependencies": ["."], "graphs": {name: "./graph.py:graph"}, "python_version": "3.11",
        "env": {}}
    from langgraph_cli.config import get_unknown_keys  # the CLI's own check of the file
    assert get_unknown_keys(json.loads((folder / "langgraph.json").read_text())) == []


def test_graph_py_reads_like_hand_written_langgraph(tmp_path: Path):
    text = render(load_template("ircot"))["graph.py"]
    for needle in ('def retrieve(state: State, config: RunnableConfig)',
                   'RUNTIME.step(\n        "retrieve",\n        "retrieval.hybrid",\n'
                   '        {"top_k": 4, "query_from": "queries", "keep_previous": 2},',
                   'def enough(', '{"max_rounds": 4, "stop_on_answer": True}',
                   'builder.add_edge(START, "retrieve")',
                   'builder.add_conditional_edges("retrieve", next_node("reason"), ["reason", FINISH])',
                   'on_label({"continue": ["retrieve"], "done": ["read"]})',
                   'max_steps=20,', 'max_llm_calls=10,', 'max_tokens=40000,', 'timeout_s=600.0,',
                   "graph = builder.compile()"):
        assert needle in text, needle
    assert "eval(" not in text and "exec(" not in text and "/work/" not in text
    # edges come in the order of the flow's nodes
    order = [text.index(f'builder.add_conditional_edges("{n}"') if n != "enough" else
             text.index('builder.add_conditional_edges(\n    "enough"')
             for n in ("retrieve", "reason", "enough", "read")]
    assert order == sorted(order)


def test_every_exported_graph_passes_ruff_check_and_format(tmp_path: Path):
    for name in names():
        write_package(load_template(name), tmp_path / name)
    # run where a user keeps the package: flowkit is a third-party import there; ruff's defaults
    for args in (["check"], ["format", "--check"]):
        proc = subprocess.run([sys.executable, "-m", "ruff", *args, "--isolated", "--no-cache",
                               *(f"{n}/graph.py" for n in names())], cwd=tmp_path,
                              capture_output=True, text=True)
        assert "No module named ruff" not in proc.stderr, "ruff is missing: pip install -e .[dev]"
        assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All checks passed" in proc.stdout or "already formatted" in proc.stdout


@pytest.mark.parametrize("name", names())
def test_round_trip_flow_json_gives_the_same_canonical_flow(name: str, tmp_path: Path):
    spec = load_template(name)
    write_package(spec, tmp_path)
    assert canonical(load(tmp_path / "flow.json")) == canonical(spec)


@pytest.mark.parametrize("name", ["naive_rag", "ircot", "iter_retgen", "conditional",
                                  "pre_retrieval_branching", "post_retrieval_branching",
                                  "agent_unirag", "self_rag"])
def test_exported_graph_gives_run_flows_answer_and_steps(name: str, tmp_path: Path):
    spec = load_template(name)
    result, sink, out, llm_engine, llm_export = both_ways(spec, tmp_path)
    assert result.status == "ok", result.error
    assert out["answer"] == result.answer and out["answer"].strip()
    assert out.get("citations", []) == result.citations
    flow = compile_flow(spec)
    parallel = set(flow.topology.branch_of)
    assert normalise(sequence(out["trace"]), parallel) == normalise(sink.sequence(), parallel)
    assert (out["steps"], out["llm_calls"], out["tokens"]) == (
        result.steps, result.cost.calls, result.cost.tokens)
    if not parallel:
        assert llm_export.prompts == llm_engine.prompts
    else:
        assert sorted(llm_export.prompts) == sorted(llm_engine.prompts)


def test_loop_and_router_take_their_known_paths(tmp_path: Path):
    _, sink, out, _, _ = both_ways(load_template("ircot"), tmp_path / "a")
    assert sequence(out["trace"]) == sink.sequence()
    assert [n for n, _ in sequence(out["trace"])].count("retrieve") >= 2    # the loop looped
    assert sequence(out["trace"])[-1] == ("read", 1)
    _, _, out, _, _ = both_ways(load_template("conditional"), tmp_path / "b",
                                question="Who designed the Corren Lighthouse?")
    assert out["route"] == "single_hop"
    assert sequence(out["trace"]) == [("route", 1), ("single_retrieve", 1), ("single_answer", 1)]


def test_limits_halt_the_exported_loop_like_the_engine(tmp_path: Path):
    spec = load_template("ircot")
    spec = spec.model_copy(update={"limits": Limits(max_steps=5, max_llm_calls=10)})
    result, sink, out, _, _ = both_ways(spec, tmp_path)
    assert result.status == "budget_exceeded" and result.halt_reason == "max_steps (5)"
    assert out["halt"] == "max_steps (5)"
    assert sequence(out["trace"]) == sink.sequence()
    assert sequence(out["trace"])[-1] == (FINISH, 1)
    assert out["answer"] == result.answer


def test_a_long_loop_ends_at_max_steps_not_at_langgraphs_recursion_limit(tmp_path: Path):
    spec = load_template("ircot")
    nodes = [n.model_copy(update={"params": {**n.params, "max_rounds": 20}}) if n.id == "enough"
             else n for n in spec.nodes]
    spec = spec.model_copy(update={"nodes": nodes,
                                   "limits": Limits(max_steps=40, max_llm_calls=100,
                                                    max_tokens=1_000_000)})
    llm = FakeLLM([(r"Next sentence:", "Still looking.")], default="Tessel [1]")
    _, module = export(spec, tmp_path)
    out = module.graph.invoke({"question": TWO_HOP}, config={"configurable": {
        "flowkit_resources": fake_resources(llm, kb="test"), "kb": "test"}})
    assert out["halt"] == "max_steps (40)"     # 40 steps: past LangGraph's default limit of 25
    assert out["steps"] == 40 and out["answer"]


def test_the_first_node_checks_the_input_and_the_knowledge_base(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch):
    _, module = export(load_template("naive_rag"), tmp_path)
    res = fake_resources(scripted(), kb="test")
    with pytest.raises(FlowkitError, match="non-empty 'question'"):
        module.graph.invoke({"question": "  "}, config={"configurable": {
            "flowkit_resources": res, "kb": "test"}})
    with pytest.raises(FlowkitError, match="knowledge base 'nope' does not exist"):
        module.graph.invoke({"question": "Who?"}, config={"configurable": {
            "flowkit_resources": res, "kb": "nope"}})
    # no flowkit objects in the config at all (as under `langgraph dev`): resources from FLOWKIT_*
    monkeypatch.setenv("FLOWKIT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FLOWKIT_KB", "missing_kb")
    with pytest.raises(FlowkitError, match="missing_kb"):
        module.graph.invoke({"question": "Who designed the Corren Lighthouse?"})
    assert module.RUNTIME.resources().data_dir == tmp_path / "home"


def test_settings_come_from_env_then_the_file_then_defaults(tmp_path: Path):
    assert ExportSettings.resolve(tmp_path, {}) == ExportSettings()
    (tmp_path / "flowkit_settings.json").write_text(json.dumps(
        {"kb": "hotpot", "model_path": "/models/a.gguf", "chroma_host": "", "chroma_port": 9000}))
    s = ExportSettings.resolve(tmp_path, {"FLOWKIT_KB": "other", "FLOWKIT_HOME": "/data"})
    assert (s.kb, s.home, s.model_path, s.chroma_host, s.chroma_port) == (
        "other", "/data", "/models/a.gguf", "", 9000)
    res = ExportSettings(home=str(tmp_path / "h"), model_path="/models/a.gguf",
                         chroma_host="chroma.local").resources()
    assert res.data_dir == tmp_path / "h"
    assert res.settings.llm.model_path == "/models/a.gguf"
    assert (res.settings.chroma_host, res.settings.chroma_port) == ("chroma.local", 8000)
    (tmp_path / "flowkit_settings.json").write_text(json.dumps({"kb_name": "x"}))
    with pytest.raises(ResourceError, match=r"unknown setting\(s\) \['kb_name'\]"):
        ExportSettings.resolve(tmp_path, {})
    with pytest.raises(ResourceError, match="chroma_port must be a number"):
        ExportSettings.resolve(None, {"FLOWKIT_CHROMA_PORT": "eighty"})


def test_an_invalid_flow_is_not_exported(tmp_path: Path):
    spec = load_template("naive_rag")
    spec = spec.model_copy(update={"edges": [*spec.edges, EdgeSpec(source="nowhere",
                                                                   target="generate")]})
    with pytest.raises(ValidationError, match="nowhere"):
        write_package(spec, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_zip_holds_the_package_in_a_folder(tmp_path: Path):
    data = export_zip(load_template("ircot"))
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert sorted(zf.namelist()) == sorted(f"ircot/{n}" for n in render(
            load_template("ircot")))
        zf.extractall(tmp_path)
    module = load_module(tmp_path / "ircot")
    assert isinstance(module.graph, CompiledStateGraph)


def test_cli_export_template_file_and_saved_flow(tmp_path: Path, capsys: pytest.CaptureFixture):
    home = str(tmp_path / "home")
    assert main(["--data-dir", home, "export", "ircot", "--out", str(tmp_path / "a")]) == 0
    assert (tmp_path / "a" / "graph.py").is_file()
    assert main(["--data-dir", home, "export", "ircot", "--out", str(tmp_path / "a")]) == 2
    assert "already holds README.md, flow.json, flowkit_settings.json, graph.py, langgraph.json; " \
        "pass --force" in " ".join(capsys.readouterr().err.split())      # the console wraps
    assert main(["--data-dir", home, "export", "ircot", "--out", str(tmp_path / "a"),
                 "--force"]) == 0
    shutil.copy(tmp_path / "a" / "flow.json", tmp_path / "mine.json")
    assert main(["--data-dir", home, "export", str(tmp_path / "mine.json"), "--out",
                 str(tmp_path / "b")]) == 0
    assert main(["--data-dir", home, "flows", "import", str(tmp_path / "mine.json"), "--name",
                 "saved_ircot"]) == 0
    assert main(["--data-dir", home, "export", "saved_ircot", "--out", str(tmp_path / "c")]) == 0
    assert json.loads((tmp_path / "c" / "langgraph.json").read_text())["graphs"] == {
        "saved_ircot": "./graph.py:graph"}
    assert main(["--data-dir", home, "export", "no_such_flow", "--out", str(tmp_path / "d")]) == 2
    assert "not a flow file, a saved flow or a template" in capsys.readouterr().err


def test_node_ids_that_are_not_python_names_still_name_their_functions(tmp_path: Path):
    from flowkit.testing import flow
    spec = flow("odd ids", [("re-trieve", "retrieval.bm25", {"top_k": 2}),
                            ("graph", "generation.answer")], ["re-trieve>graph"])
    text = render(spec)["graph.py"]
    assert "def re_trieve(" in text and "def graph_node(" in text
    assert 'builder.add_node("re-trieve", re_trieve)' in text
    folder, module = export(spec, tmp_path)
    assert json.loads((folder / "langgraph.json").read_text())["graphs"] == {
        "odd_ids": "./graph.py:graph"}
    out = module.graph.invoke({"question": "Where was Mara Velt born?"}, config={"configurable": {
        "flowkit_resources": fake_resources(FakeLLM(default="Tessel [1]"), kb="test"),
        "kb": "test"}})
    assert sequence(out["trace"]) == [("re-trieve", 1), ("graph", 1)]
    assert out["answer"] == "Tessel"


def test_timeout_counts_from_the_runs_start_kept_in_the_state(tmp_path: Path):
    import time
    _, module = export(load_template("ircot"), tmp_path)
    res = fake_resources(scripted(), kb="test")
    cfg = {"configurable": {"flowkit_resources": res, "kb": "test"}}
    fresh = module.graph.invoke({"question": TWO_HOP}, config=cfg)
    assert fresh["halt"] == "" and abs(fresh["started"] - time.time()) < 60
    late = module.graph.invoke({"question": TWO_HOP, "started": time.time() - 601}, config=cfg)
    assert late["halt"] == "timeout_s (600)"
    assert sequence(late["trace"]) == [(FINISH, 1)]      # nothing ran; the finish still answers
    assert late["answer"]


def test_a_second_run_on_the_same_thread_fails_clearly(tmp_path: Path):
    from langgraph.checkpoint.memory import InMemorySaver
    _, module = export(load_template("naive_rag"), tmp_path)
    graph = module.builder.compile(checkpointer=InMemorySaver())    # as the server keeps threads
    res = fake_resources(scripted(), kb="test")

    def ask(run_id: str, thread: str) -> dict[str, Any]:
        return graph.invoke({"question": "Who designed the Corren Lighthouse?"}, config={
            "configurable": {"flowkit_resources": res, "kb": "test", "thread_id": thread,
                             "run_id": run_id}})
    first = ask("run-1", "t1")
    assert first["run_id"] == "run-1" and sequence(first["trace"]) == [("retrieve", 1),
                                                                       ("generate", 1)]
    with pytest.raises(FlowkitError, match="this thread already holds run run-1; .* new thread"):
        ask("run-2", "t1")
    assert sequence(ask("run-3", "t2")["trace"]) == [("retrieve", 1), ("generate", 1)]


def test_errors_carry_a_builtin_base_so_the_server_shows_their_message(tmp_path: Path):
    from flowkit.errors import NodeError
    from flowkit.export.runtime import RunInputError, RunNodeError
    _, module = export(load_template("post_retrieval_branching"), tmp_path)
    res = fake_resources(scripted(), kb="test")          # no embedder: the ensemble node fails
    with pytest.raises(RunNodeError) as info:
        module.graph.invoke({"question": TWO_HOP}, config={"configurable": {
            "flowkit_resources": res, "kb": "test"}})
    assert isinstance(info.value, NodeError) and isinstance(info.value, RuntimeError)
    assert info.value.node == "ensemble" and "this test gave no embedder" in str(info.value)
    with pytest.raises(RunInputError) as bad:
        module.graph.invoke({"question": ""}, config={"configurable": {"flowkit_resources": res}})
    assert isinstance(bad.value, ValueError)


def test_hand_edited_graph_py_with_a_wrong_operator_or_param_says_which_node(tmp_path: Path):
    from flowkit.export.runtime import GraphCodeError
    folder = tmp_path / "naive_rag"
    write_package(load_template("naive_rag"), folder)
    text = (folder / "graph.py").read_text()
    cfg = {"configurable": {"flowkit_resources": fake_resources(scripted(), kb="test"), "kb": "test"}}
    (folder / "graph.py").write_text(text.replace('"retrieval.hybrid"', '"retrieval.nope"'))
    with pytest.raises(GraphCodeError, match="node 'retrieve': no operator 'retrieval.nope'"):
        load_module(folder).graph.invoke({"question": TWO_HOP}, config=cfg)
    (folder / "graph.py").write_text(text.replace('{"top_k": 4}', '{"top_k": 0}'))
    with pytest.raises(GraphCodeError, match=r"node 'retrieve' \(retrieval.hybrid\): invalid params"):
        load_module(folder).graph.invoke({"question": TWO_HOP}, config=cfg)


def test_labels_and_params_with_quotes_and_backslashes_stay_literal(tmp_path: Path):
    from flowkit.testing import flow
    spec = flow("quotes", [("ret", "retrieval.bm25", {"top_k": 2}),
                           ("gen", "generation.answer",
                            {"prompt": 'Say "{question}" \\ then """ answer:\n{passages}'})],
                ["ret>gen"])
    spec = spec.model_copy(update={"nodes": [
        n.model_copy(update={"label": 'Ends in a "quote" \\"'}) for n in spec.nodes]})
    folder, module = export(spec, tmp_path)
    assert module.gen.__doc__.startswith("Ends in a 'quote' ?'")     # docstrings hold plain text
    llm = FakeLLM(default="Tessel [1]")
    module.graph.invoke({"question": "Where was Mara Velt born?"}, config={"configurable": {
        "flowkit_resources": fake_resources(llm, kb="test"), "kb": "test"}})
    assert llm.prompts[0].startswith('Say "Where was Mara Velt born?" \\ then """ answer:\n')

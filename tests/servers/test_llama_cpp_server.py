"""flowkit's OpenAI backend (`backend: openai`) against llama.cpp's own `llama-server` (built by
`make llama-server` from the llama.cpp the bindings vendor; `-c 4096 --parallel 2 --kv-unified
--no-repack`, started once per run by the `llama_cpp_server_url` fixture) on SmolLM2: a flow run
streamed as the Run page streams it and served again from the completion cache, `flowkit eval
--concurrency 2`, and a streamed completion. The tests that hold for any OpenAI-compatible server
run on both servers (`openai_server_url`)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowkit import compile_flow, run_flow
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.completion_cache import MemoryCompletionCache, model_identity
from flowkit.runtime.llm import LLMSettings
from flowkit.runtime.openai_client import OpenAICompatibleLLM
from flowkit.runtime.resources import Resources, Settings
from flowkit.templates import load_template
from flowkit.testing.llama_server_build import binary_path, build_dir
from flowkit.testing.servers import ServerStartError, llama_cpp_server
from flowkit.trace import ListSink

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Who designed the Corren Lighthouse?"


def _settings(url: str, **extra: Any) -> Settings:
    return Settings(llm=LLMSettings(backend="openai", base_url=url, model_name="default",
                                    n_ctx=4096), **extra)


@pytest.mark.real
def test_streamed_completion_is_the_whole_answer_in_pieces(openai_server_url: str) -> None:
    llm = OpenAICompatibleLLM(_settings(openai_server_url).llm)
    whole = llm.complete("What is the capital of France?", max_tokens=24)
    pieces: list[str] = []
    streamed = llm.complete("What is the capital of France?", max_tokens=24,
                            on_token=pieces.append)
    assert whole.text and len([p for p in pieces if p]) > 1     # it arrived in several pieces
    assert "".join(pieces) == streamed.text == whole.text        # greedy: the same answer
    assert whole.prompt_tokens > 10 and whole.completion_tokens > 0
    # the same counts streamed: llama-server sends them (stream_options.include_usage);
    # serve-model's serial server (llama-cpp-python's app) sends none, and the client counts them
    assert (streamed.prompt_tokens, streamed.completion_tokens) == \
        (whole.prompt_tokens, whole.completion_tokens)
    assert llm.count_tokens("The Corren Lighthouse stands on Corren Point.") > 5
    assert llm._tokenize_route                                    # exact counts, not estimated


@pytest.mark.real
def test_a_flow_runs_on_llama_server_streamed(llama_cpp_server_url: str, real_resources: Any) -> None:
    res = Resources(real_resources.data_dir, _settings(llama_cpp_server_url))
    res.set_embedder(real_resources.embedder)
    pieces: list[tuple[str, str]] = []
    sink, cache = ListSink(), MemoryCompletionCache()
    flow = compile_flow(load_template("naive_rag"))
    end = run_flow(flow, res, RunRequest(QUESTION, kb="sample"),
                   RunHooks(sink=sink, cache=cache,
                            on_token=lambda node, visit, piece: pieces.append((node, piece))))
    assert end.status == "ok", end.error
    assert end.answer.strip() and end.cost.calls == 1 and end.cost.tokens > 0
    assert end.memory.get("documents")                           # it read the sample KB
    # what the Run page showed as it came: the model's text, piece by piece, as the trace has it
    [call] = [c for step in sink.steps for c in step.llm_calls]
    assert len(pieces) > 1 and {node for node, _ in pieces} == {"generate"}
    assert "".join(p for _, p in pieces) == call.completion
    assert call.prompt_tokens > 100 and call.completion_tokens > 0   # exact, from /tokenize + usage
    # the completion cache: the server's 2 slots are part of the key (a batched answer is never
    # served as a serial one's), and the same run again is served from it
    assert model_identity(res.llm)["parallel"] == 2
    again = run_flow(flow, res, RunRequest(QUESTION, kb="sample"), RunHooks(cache=cache))
    assert again.cost.cached == 1 and again.answer == end.answer


@pytest.mark.real
def test_eval_cli_with_two_in_flight(llama_cpp_server_url: str, real_resources: Any,
                                     tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`flowkit eval --concurrency 2` as a user types it, on 3 sample questions: the server's 2
    slots are found and recorded, every run ends ok."""
    from flowkit.ingest import ensure_sample
    from service import cli
    from service.cli import common
    from service.workspace import Workspace

    ws = Workspace(tmp_path / "home", _settings(llama_cpp_server_url, completion_cache=False))
    ws.resources.set_embedder(real_resources.embedder)           # the session's, not a second load
    ensure_sample(ws.resources)
    monkeypatch.setattr(common, "open_workspace", lambda args: ws)
    monkeypatch.setattr(common.out, "width", 250, raising=False)
    out_json = tmp_path / "report.json"
    code = cli.main(["--data-dir", str(tmp_path / "home"), "eval", "--flow", "naive_rag",
                     "--dataset", str(ROOT / "flowkit" / "sample_kb" / "questions.jsonl"),
                     "--kb", "sample", "--limit", "3", "--concurrency", "2", "--no-cache",
                     "--out", str(out_json)])
    got = capsys.readouterr()
    assert code == 0, got.err
    assert "2 runs in flight (server: 2 parallel slots)" in got.err
    data = json.loads(out_json.read_text())
    assert data["execution"] == [{"concurrency": 2, "server_parallel": 2}]
    runs = data["results"]["naive_rag"]
    assert len(runs) == 3
    assert all(r["status"] == "ok" and r["prediction"].strip() and r["tokens"] > 0
               for r in runs), runs


def test_a_missing_binary_fails_with_how_to_build_it(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixture fails (never skips) when llama-server is not built, and says how to build it;
    the binary is looked for in a cache keyed by the bindings' version, outside the checkout."""
    monkeypatch.delenv("FLOWKIT_LLAMA_SERVER", raising=False)
    monkeypatch.setenv("FLOWKIT_LLAMA_SERVER_CACHE", str(tmp_path / "cache"))
    import importlib.metadata
    version = importlib.metadata.version("llama-cpp-python")
    assert binary_path() == tmp_path / "cache" / f"llama-server-{version}" / "bin" / "llama-server"
    assert build_dir() == binary_path().parent.parent
    with pytest.raises(ServerStartError, match=r"not built: .*`make llama-server` builds it from "
                       rf"llama-cpp-python {version}"):
        with llama_cpp_server(tmp_path / "m.gguf"):
            pass
    monkeypatch.setenv("FLOWKIT_LLAMA_SERVER", str(tmp_path / "mine"))
    assert binary_path() == tmp_path / "mine"                     # another build, a GPU one

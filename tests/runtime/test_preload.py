"""The model's background load (Resources.preload, issue 38 item 5): a run that starts while the
worker is still loading waits for that same worker; no second one starts. The worker here is a
stand-in process (slow to get ready, then a tiny OpenAI-compatible answerer), so the test takes
about a second and needs no llama.cpp."""
from __future__ import annotations

import sys
import time
import types
from pathlib import Path

import pytest

import flowkit.runtime.supervisor as supervisor
from flowkit.runtime.llm_contract import LLMSettings
from flowkit.runtime.resources import Resources, Settings
from flowkit.testing.gguf import write_gguf

FAKE_WORKER = r'''
import json, os, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer

sys.stdin.readline()                                   # the settings line
with open(os.environ["FAKE_WORKER_LOG"], "a") as f:
    f.write(f"{os.getpid()}\n")
time.sleep(float(os.environ["FAKE_WORKER_LOAD_S"]))   # "loading the model"


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
print(json.dumps({"ready": True, "port": server.server_address[1]}), flush=True)
server.serve_forever()
'''


def _started(log: Path) -> list[str]:
    return log.read_text().split() if log.is_file() else []


def test_a_run_during_the_background_load_waits_for_that_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)
    launcher = tmp_path / "python"                   # `python -m flowkit.runtime.worker` -> fake
    launcher.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")
    launcher.chmod(0o755)
    monkeypatch.setattr(supervisor, "sys", types.SimpleNamespace(executable=str(launcher)))
    log = tmp_path / "started.txt"
    monkeypatch.setenv("FAKE_WORKER_LOG", str(log))
    monkeypatch.setenv("FAKE_WORKER_LOAD_S", "1.0")
    model = write_gguf(tmp_path / "tiny.gguf")
    resources = Resources(tmp_path / "home", Settings(llm=LLMSettings(model_path=str(model))))
    try:
        assert resources.model_state().phase == "idle"
        resources.preload()
        resources.preload()                          # once only
        assert resources.model_state().phase == "loading"
        deadline = time.monotonic() + 20
        while not _started(log) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(_started(log)) == 1               # the background load's worker is starting
        assert resources.model_state().phase == "loading"
        answer = resources.llm.complete("hello", max_tokens=4)     # the run, meanwhile
        assert answer.text == "ok"
        assert resources.wait_preloaded(20).phase == "ready"
        assert len(_started(log)) == 1               # the run used the worker being loaded
        llm = resources.llm
        assert isinstance(llm, supervisor.WorkerLLM) and llm.restarts == 0 and llm.loaded
    finally:
        resources.close()

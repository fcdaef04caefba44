"""The model worker: one llama.cpp model in its own process, served as an OpenAI-compatible API.

Started by `supervisor.WorkerLLM` as `python -m flowkit.runtime.worker` with the LLM settings as
JSON on stdin and a bearer token in FLOWKIT_WORKER_TOKEN. It decides whether AMX may be used
(`amx.decide`), loads the model, binds a free port on 127.0.0.1 and prints one JSON line
(`{"ready": true, "port": ..., ...}`) to stdout; then it serves:

- `POST /v1/chat/completions`: one optional system message and one user message, rendered with the
  GGUF's chat template; `max_tokens`, `stop`, `temperature`, `logprobs`; the answer carries the
  exact prompt text in `flowkit.prompt`. A prompt longer than the context answers HTTP 400 with
  type `exceed_context_size_error`, as llama.cpp's server does.
- `POST /v1/completions` with `echo: true` and `logprobs`: the prompt's token log-probabilities
  (what selective context scores passages with), in the completions API's shape.
- `POST /tokenize` (`{"content": text}` -> `{"tokens": [...]}`, as llama.cpp's server),
  `GET /v1/models`, `GET /health`.

It exits when its parent process is gone. Requests are served one at a time by the model's lock.
"""
from __future__ import annotations

import hmac
import json
import os
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..errors import ContextOverflowError, FlowkitError
from .llm import LlamaCppLLM, LLMSettings

PARENT_POLL_S = 1.0


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, llm: LlamaCppLLM, token: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.llm = llm
        self.token = token


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass   # requests are traced by the caller; keep the worker's stderr for real problems

    def _send(self, code: int, body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _error(self, code: int, message: str, kind: str = "invalid_request_error") -> None:
        self._send(code, {"error": {"code": code, "message": message, "type": kind}})

    def _authorised(self) -> bool:
        given = self.headers.get("Authorization", "")
        if self.server.token and not hmac.compare_digest(given, f"Bearer {self.server.token}"):
            self._error(401, "missing or wrong bearer token", "authentication_error")
            return False
        return True

    def _body(self) -> dict[str, Any] | None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
            data = json.loads(self.rfile.read(length) or b"{}")
        except (ValueError, json.JSONDecodeError) as err:
            self._error(400, f"the request body is not JSON: {err}")
            return None
        if not isinstance(data, dict):
            self._error(400, "the request body must be a JSON object")
            return None
        return data

    def do_GET(self) -> None:
        if not self._authorised():
            return
        llm = self.server.llm
        if self.path == "/health":
            self._send(200, {"status": "ok", "pid": os.getpid(), "model": llm.model_id})
        elif self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": llm.model_id, "object": "model",
                                                         "owned_by": "flowkit"}]})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        if not self._authorised():
            return
        body = self._body()
        if body is None:
            return
        try:
            if self.path == "/v1/chat/completions":
                self._send(200, _chat(self.server.llm, body))
            elif self.path == "/v1/completions":
                self._send(200, _score(self.server.llm, body))
            elif self.path == "/tokenize":
                self._send(200, {"tokens": self.server.llm.tokenize(str(body.get("content", "")))})
            else:
                self._error(404, f"no route {self.path}")
        except ContextOverflowError as err:
            self._error(400, str(err), "exceed_context_size_error")
        except (FlowkitError, ValueError, TypeError, KeyError) as err:
            self._error(400, f"{type(err).__name__}: {err}")


def _chat(llm: LlamaCppLLM, body: dict[str, Any]) -> dict[str, Any]:
    """One chat completion in the OpenAI shape, plus `flowkit.prompt`."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list")
    system = [m.get("content", "") for m in messages if m.get("role") == "system"]
    user = [m.get("content", "") for m in messages if m.get("role") == "user"]
    if len(user) != 1 or len(system) > 1 or len(messages) != len(user) + len(system):
        raise ValueError("the flowkit worker takes one user message and at most one system message")
    stop = body.get("stop") or []
    stop = [stop] if isinstance(stop, str) else list(stop)
    temperature = body.get("temperature")
    out = llm.complete(str(user[0]), max_tokens=int(body.get("max_tokens") or 256), stop=stop,
                       temperature=None if temperature is None else float(temperature),
                       logprobs=bool(body.get("logprobs")), system=system[0] if system else None)
    lp = ({"content": [{"token": t, "logprob": v} for t, v in out.logprobs]}
          if out.logprobs is not None else None)
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
            "created": int(time.time()), "model": llm.model_id,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": out.text},
                         "finish_reason": out.finish_reason, "logprobs": lp}],
            "usage": {"prompt_tokens": out.prompt_tokens, "completion_tokens": out.completion_tokens,
                      "total_tokens": out.total_tokens},
            "flowkit": {"prompt": out.prompt, "ms": round(out.ms, 2)}}


def _score(llm: LlamaCppLLM, body: dict[str, Any]) -> dict[str, Any]:
    """`/v1/completions` with `echo: true` and `logprobs`: the prompt's tokens and their
    log-probabilities, as OpenAI's completions API reports them (this worker generates nothing
    here; chat completions are for generation)."""
    if not body.get("echo") or body.get("logprobs") is None:
        raise ValueError("the flowkit worker's /v1/completions only scores a prompt: send echo: true "
                         "and logprobs (use /v1/chat/completions to generate)")
    prompt = body.get("prompt")
    if not isinstance(prompt, str):
        raise ValueError("prompt must be one string")
    scored = llm.token_logprobs(prompt)
    return {"id": f"cmpl-{uuid.uuid4().hex[:12]}", "object": "text_completion",
            "created": int(time.time()), "model": llm.model_id,
            "choices": [{"index": 0, "text": prompt, "finish_reason": "length",
                         "logprobs": {"tokens": [t for t, _ in scored],
                                      "token_logprobs": [lp for _, lp in scored]}}],
            "usage": {"prompt_tokens": len(scored), "completion_tokens": 0,
                      "total_tokens": len(scored)}}


def _exit_with_parent(parent: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent:
            os._exit(0)


def main() -> int:
    """Load the model, say where it listens, serve until the parent goes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle
    parent = os.getppid()
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()
    settings = LLMSettings(**json.loads(sys.stdin.readline()))
    try:
        llm = LlamaCppLLM(settings)
        llm.tokenize("warm up")        # loads the model (and decides about AMX) before "ready"
    except FlowkitError as err:        # a bad model file: say why in one line, not a traceback
        print(json.dumps({"ready": False, "error": str(err)}), flush=True)  # noqa: T201 - protocol
        return 1
    import llama_cpp
    server = _Server(llm, os.environ.get("FLOWKIT_WORKER_TOKEN", ""))
    decision = llm.extra_bufts
    print(json.dumps({"ready": True, "port": server.server_address[1], "pid": os.getpid(),  # noqa: T201
                      "model": llm.model_id,
                      "extra_bufts": decision.use if decision else None,
                      "extra_bufts_reason": decision.reason if decision else "",
                      "gpu_offload": bool(llama_cpp.llama_supports_gpu_offload())}), flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The model worker: one llama.cpp model in its own process, served as an OpenAI-compatible API.

Started by `supervisor.WorkerLLM` as `python -m flowkit.runtime.worker` with the LLM settings as
JSON on stdin and a bearer token in FLOWKIT_WORKER_TOKEN. It decides whether AMX may be used
(`amx.decide`), loads the model, binds a free port on 127.0.0.1 and prints one JSON line
(`{"ready": true, "port": ..., ...}`) to stdout; then it serves:

- `POST /v1/chat/completions`: one optional system message and one user message, rendered with the
  GGUF's chat template; `max_tokens`, `stop`, `temperature`, `logprobs`; the answer carries the
  exact prompt text in `flowkit.prompt`. With `stream: true` the answer comes as server-sent
  events in OpenAI's chunk shape as the tokens are generated (`streaming.py`: the pieces, then a
  last chunk with `finish_reason`, `usage` and `flowkit`, then `[DONE]`; the connection closes
  after it); the text and counts are those of the same request without `stream`. A request
  refused before the first piece is answered as without streaming (a JSON error and its status);
  a failure after it is one `error` event. A prompt longer than the context answers HTTP 400 with
  type `exceed_context_size_error`, as llama.cpp's server does.
- `POST /v1/completions` with `echo: true` and `logprobs`: the prompt's token log-probabilities
  (what selective context scores passages with), in the completions API's shape.
- `POST /tokenize` (`{"content": text}` -> `{"tokens": [...]}`, as llama.cpp's server),
  `GET /v1/models`, `GET /health` (with counts of generations served and stopped).

It exits when its parent process is gone. Requests are served one at a time by the model's lock.

Limits (what a client with the token can still not do):

- every refused request gets a JSON body `{"error": {"message", "type", "code"}}` with a 4xx
  status and the connection is closed: a wrong token 401, an unknown path 404, a wrong method 405,
  no Content-Length 411, a body over the cap 413 (answered before the body is read; the cap is
  `worker_requests.body_limit`: 64 bytes per token of context, at least 1 MiB), and bad JSON,
  wrong types or values 400. `worker_requests` holds the rules: `max_tokens` is an integer in
  1..n_ctx, and one larger than what the prompt leaves is clamped to `n_ctx - prompt` (as
  `LlamaCppLLM.complete` clamps); sampling numbers are finite and in range (temperature 0..2).
- a generation is stopped, and the model's lock released, when its client disconnects (checked
  after every token) or when `request_timeout_s` of the settings has passed since the request
  arrived (answered 504, type `timeout_error`); `/health` counts both.

Connections (what a local process without the token can still not do; `worker_admission.py`):

- every connection serves one request. Its request line and headers must all arrive within
  `FLOWKIT_WORKER_HEAD_TIMEOUT_S` seconds (default 5) of its arrival, one deadline for all reads:
  a client that drips a byte at a time is closed when it passes. At most
  `FLOWKIT_WORKER_MAX_PENDING` (default 64) connections wait for their headers at once; one more
  pushes the oldest of them out.
- the token is checked on the headers, before the connection takes one of the
  `FLOWKIT_WORKER_MAX_CONNECTIONS` (default 16) slots: a connection without it is answered 401 and
  closed, and never holds a slot. An authenticated request beyond the slots is answered 503 (type
  `server_busy`, `Retry-After: 1`), which the supervisor retries with a short backoff.
- a read of an admitted request's body that waits `FLOWKIT_WORKER_IDLE_TIMEOUT_S` seconds
  (default 30) closes the connection (408).
"""
from __future__ import annotations

import hmac
import io
import json
import os
import select
import signal
import socket
import sys
import threading
import time
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from ..errors import ContextOverflowError, FlowkitError, GenerationStopped
from .llama_cpp_backend import LlamaCppLLM
from .llm_contract import LLMSettings, StopCheck
from .streaming import DONE, chunk, sse
from .worker_admission import Admission, DeadlineReader
from .worker_requests import (
    BadRequest,
    ChatRequest,
    body_limit,
    chat_request,
    content_length,
    parse_body,
    score_request,
    tokenize_request,
)

PARENT_POLL_S = 1.0
IDLE_TIMEOUT_S = 30.0
HEAD_TIMEOUT_S = 5.0
MAX_CONNECTIONS = 16
MAX_PENDING = 64
GET_ROUTES = ("/health", "/v1/models")
POST_ROUTES = ("/v1/chat/completions", "/v1/completions", "/tokenize")
CLIENT_GONE = "the client went away"


def _env_number(name: str, default: float) -> float:
    """A positive number from the environment, or `default` when unset."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value = float(raw)
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name} must be a positive number, not {raw!r}")
    return value


def _error_json(code: int, message: str, kind: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, "type": kind}}).encode()


def client_gone(sock: socket.socket) -> bool:
    """Whether the peer of `sock` has closed or reset the connection (never blocks): readable with
    nothing to read is an end of file; readable with data is a next request, still there. Asked
    with poll, not select: select refuses descriptors above 1023, which a long-lived process
    holding many files reaches, and that refusal would read as "gone"."""
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN | select.POLLPRI)
        events = poller.poll(0)
        if not events:
            return False
        if events[0][1] & (select.POLLERR | select.POLLNVAL):
            return True
        return sock.recv(1, socket.MSG_PEEK) == b""    # readable: this does not wait
    except BlockingIOError:
        return False
    except (OSError, ValueError):     # reset, or already closed
        return True


class _StreamFailed(Exception):
    """A streamed answer failed after it began; the stream said so and the connection closes."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = MAX_PENDING

    def __init__(self, llm: LlamaCppLLM, token: str, *, idle_timeout_s: float = IDLE_TIMEOUT_S,
                 max_connections: int = MAX_CONNECTIONS, head_timeout_s: float = HEAD_TIMEOUT_S,
                 max_pending: int = MAX_PENDING) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.llm = llm
        self.token = token
        self.idle_timeout_s = idle_timeout_s
        self.head_timeout_s = head_timeout_s
        self.max_connections = max_connections
        self.max_body = body_limit(llm.n_ctx)
        self.request_timeout_s = llm.settings.request_timeout_s
        self.admission = Admission(max_pending, max_connections)
        self._stats_lock = threading.Lock()
        self.stats: dict[str, int] = {"served": 0, "stopped_client_gone": 0, "stopped_deadline": 0,
                                      "last_stopped_tokens": 0, "refused_connections": 0,
                                      "refused_token": 0}

    def count(self, **changes: int) -> None:
        """Add to (or, for `last_stopped_tokens`, set) the counts /health reports."""
        with self._stats_lock:
            for key, value in changes.items():
                self.stats[key] = value if key.startswith("last_") else self.stats[key] + value

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection on a thread of its own, counted as pending until its token is
        checked (the oldest pending connection is pushed out past `max_pending`)."""
        self.admission.arrive(request)
        try:
            super().process_request(request, client_address)
        except RuntimeError:          # no thread could be started
            self.admission.leave(request)
            self._refuse(request)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.admission.leave(request)

    def _refuse(self, request: socket.socket) -> None:
        body = _error_json(503, f"the worker serves at most {self.max_connections} connections at "
                           "once; retry later", "server_busy")
        head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\nRetry-After: 1\r\n\r\n")
        try:
            request.settimeout(1.0)
            request.sendall(head.encode() + body)
            request.setblocking(False)
            request.recv(65536)        # what already came: closing on unread data would reset
        except OSError:               # the connection, and the client might lose the answer
            pass
        self.shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.rfile.close()             # read through the deadline instead (worker_admission)
        self._reader = DeadlineReader(self.connection, self.server.idle_timeout_s,
                                      time.monotonic() + self.server.head_timeout_s)
        self.rfile = io.BufferedReader(self._reader)

    def parse_request(self) -> bool:
        """Read the request line and headers (within the head deadline), then check the token
        and take a slot: 401 without the token, 503 when every slot is taken. One request per
        connection."""
        if not super().parse_request():
            return False
        self.close_connection = True
        if not self._authorised():
            self.server.count(refused_token=1)
            return False
        if not self.server.admission.admit(self.connection):
            self.server.count(refused_connections=1)
            self._busy()
            return False
        self._reader.until = None      # the body: each read waits at most the idle timeout
        self.connection.settimeout(self.server.idle_timeout_s)
        return True

    def _busy(self) -> None:
        """Answer 503 to an authenticated request that found every slot taken, and read its body
        (up to the cap) so that closing does not reset the connection before the client reads
        the answer."""
        self._reader.until = None
        self.connection.settimeout(1.0)
        try:
            length = content_length(self.headers, self.server.max_body) \
                if self.command == "POST" else 0
        except BadRequest:
            length = 0
        body = _error_json(503, f"the worker serves at most {self.server.max_connections} "
                           "requests at once; retry later", "server_busy")
        try:
            self.rfile.read(length)
            self.send_response(503)
            for name, value in (("Content-Type", "application/json"),
                                ("Content-Length", str(len(body))), ("Connection", "close"),
                                ("Retry-After", "1")):
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
        except OSError:               # the client went away: nothing to answer
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass   # requests are traced by the caller; keep the worker's stderr for real problems

    def _send(self, code: int, body: dict[str, Any] | bytes) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.send_header("Connection", "close")          # one request per connection
            self.close_connection = True
            if code >= 400:
                if code == HTTPStatus.METHOD_NOT_ALLOWED:
                    self.send_header("Allow", "GET, POST")
            self.end_headers()
            self.wfile.write(raw)
        except OSError:               # the client went away: nothing to answer
            self.close_connection = True

    def _error(self, code: int, message: str, kind: str = "invalid_request_error") -> None:
        self._send(code, _error_json(code, message, kind))

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a bad request line or header, an unknown method), as JSON;
        a method this worker does not serve is 405."""
        if code == HTTPStatus.NOT_IMPLEMENTED:
            code, message = HTTPStatus.METHOD_NOT_ALLOWED, f"method {self.command!r} is not allowed"
        if self.request_version == "HTTP/0.9":        # an unreadable request line: answer 1.1
            self.request_version = "HTTP/1.1"
        self._error(code, message or HTTPStatus(code).phrase,
                    "invalid_request_error" if code < 500 else "server_error")

    def _authorised(self) -> bool:
        given = self.headers.get("Authorization", "")
        if self.server.token and not hmac.compare_digest(given.encode(),
                                                         f"Bearer {self.server.token}".encode()):
            self._error(401, "missing or wrong bearer token", "authentication_error")
            return False
        return True

    def _route(self, method: str) -> str | None:
        """The request's path when `method` serves it; else answers 404 or 405 and returns None."""
        path = urlsplit(self.path).path
        mine, other = (GET_ROUTES, POST_ROUTES) if method == "GET" else (POST_ROUTES, GET_ROUTES)
        if path in mine:
            return path
        if path in other:
            self._error(405, f"{path} does not take {method}")
        else:
            self._error(404, f"no route {path[:200]}", "not_found_error")
        return None

    def do_GET(self) -> None:
        path = self._route("GET")
        llm = self.server.llm
        if path == "/health":
            with self.server._stats_lock:
                stats = dict(self.server.stats)
            pending, admitted = self.server.admission.counts()
            self._send(200, {"status": "ok", "pid": os.getpid(), "model": llm.model_id,
                             "generations": stats,
                             "connections": {"pending": pending, "admitted": admitted,
                                             "pushed_out": self.server.admission.pushed_out},
                             "prefix": prefix.stats() if (prefix := getattr(llm, "prefix", None))
                             else None})
        elif path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": llm.model_id, "object": "model",
                                                         "owned_by": "flowkit"}]})

    def _read_body(self) -> dict[str, Any]:
        length = content_length(self.headers, self.server.max_body)
        raw = self.rfile.read(length)
        if len(raw) < length:
            raise BadRequest(f"the body ended after {len(raw)} of {length} bytes")
        return parse_body(raw)

    def do_POST(self) -> None:
        path = self._route("POST")
        if path is None:
            return
        llm = self.server.llm
        try:
            body = self._read_body()
            deadline = time.monotonic() + self.server.request_timeout_s
            if path == "/v1/chat/completions":
                req = chat_request(body, llm.n_ctx)
                if req.stream:
                    self._stream_chat(llm, req, deadline)
                else:
                    self._send(200, _chat(llm, req, lambda: self._should_stop(deadline)))
                self.server.count(served=1)
            elif path == "/v1/completions":
                self._send(200, _score(llm, score_request(body)))
            else:
                self._send(200, {"tokens": llm.tokenize(tokenize_request(body))})
        except TimeoutError:
            self._error(408, f"the body did not arrive within {self.server.idle_timeout_s:g} s",
                        "timeout_error")
        except BadRequest as err:
            self._error(err.status, str(err), err.kind)
        except ContextOverflowError as err:
            self._error(400, str(err), "exceed_context_size_error")
        except _StreamFailed:
            pass                       # said in the stream; the connection closes
        except GenerationStopped as err:
            if err.reason == CLIENT_GONE:
                self.server.count(stopped_client_gone=1, last_stopped_tokens=err.tokens)
                self.close_connection = True
            else:
                self.server.count(stopped_deadline=1, last_stopped_tokens=err.tokens)
                self._error(504, str(err), "timeout_error")
        except (FlowkitError, ValueError, TypeError, KeyError) as err:
            self._error(400, f"{type(err).__name__}: {err}")
        except Exception as err:  # noqa: BLE001 - a server answers every request it read
            self._error(500, f"the worker failed: {type(err).__name__}: {err}", "server_error")

    def _stream_chat(self, llm: LlamaCppLLM, req: ChatRequest, deadline: float) -> None:
        """Answer one chat completion as server-sent events, each piece as it is generated. The
        status line goes out with the first piece: until then a failure is answered as without
        streaming; after it, as one `error` event (raised on as `_StreamFailed`)."""
        cid, created = f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())
        started, gone = [False], [False]

        def write(data: dict[str, Any] | str) -> None:
            if not started[0]:
                started[0] = True
                self.close_connection = True
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(sse(chunk(cid, created, llm.model_id, {"role": "assistant"})))
            self.wfile.write(sse(data))

        def on_token(piece: str) -> None:
            if gone[0]:
                return
            try:
                write(chunk(cid, created, llm.model_id, {"content": piece}))
            except OSError:
                gone[0] = True         # the next should_stop ends the generation

        def should_stop() -> str | None:
            return CLIENT_GONE if gone[0] else self._should_stop(deadline)

        try:
            out = llm.complete(req.user, max_tokens=req.max_tokens, stop=req.stop,
                               temperature=req.temperature, logprobs=req.logprobs,
                               system=req.system, should_stop=should_stop, on_token=on_token)
        except Exception as err:
            if not started[0]:
                raise                  # nothing sent yet: answered as without streaming
            self._stream_error(err)
            raise _StreamFailed from err
        lp = ({"content": [{"token": t, "logprob": v} for t, v in out.logprobs]}
              if out.logprobs is not None else None)
        try:
            write(chunk(cid, created, llm.model_id, {}, out.finish_reason, logprobs=lp,
                        usage={"prompt_tokens": out.prompt_tokens,
                               "completion_tokens": out.completion_tokens,
                               "total_tokens": out.total_tokens},
                        flowkit={"prompt": out.prompt, "ms": round(out.ms, 2)}))
            write(DONE)
        except OSError:
            self.close_connection = True

    def _stream_error(self, err: Exception) -> None:
        """A failure after the stream began: counted as without streaming, said in one event."""
        if isinstance(err, GenerationStopped):
            if err.reason == CLIENT_GONE:
                self.server.count(stopped_client_gone=1, last_stopped_tokens=err.tokens)
                return
            self.server.count(stopped_deadline=1, last_stopped_tokens=err.tokens)
            code, kind = 504, "timeout_error"
        elif isinstance(err, ContextOverflowError):
            code, kind = 400, "exceed_context_size_error"
        else:
            code, kind = 500, "server_error"
        try:
            self.wfile.write(sse({"error": {"code": code, "message": str(err), "type": kind}}))
        except OSError:
            pass

    def _should_stop(self, deadline: float) -> str | None:
        """Why the generation in flight should end now, or None."""
        if time.monotonic() > deadline:
            return f"the request's deadline ({self.server.request_timeout_s:g} s) passed"
        if client_gone(self.connection):
            return CLIENT_GONE
        return None


def _chat(llm: LlamaCppLLM, req: ChatRequest, should_stop: StopCheck) -> dict[str, Any]:
    """One chat completion in the OpenAI shape, plus `flowkit.prompt`."""
    out = llm.complete(req.user, max_tokens=req.max_tokens, stop=req.stop,
                       temperature=req.temperature, logprobs=req.logprobs, system=req.system,
                       should_stop=should_stop)
    lp = ({"content": [{"token": t, "logprob": v} for t, v in out.logprobs]}
          if out.logprobs is not None else None)
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
            "created": int(time.time()), "model": llm.model_id,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": out.text},
                         "finish_reason": out.finish_reason, "logprobs": lp}],
            "usage": {"prompt_tokens": out.prompt_tokens, "completion_tokens": out.completion_tokens,
                      "total_tokens": out.total_tokens},
            "flowkit": {"prompt": out.prompt, "ms": round(out.ms, 2)}}


def _score(llm: LlamaCppLLM, prompt: str) -> dict[str, Any]:
    """`/v1/completions` with `echo: true` and `logprobs`: the prompt's tokens and their
    log-probabilities, as OpenAI's completions API reports them (this worker generates nothing
    here; chat completions are for generation)."""
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
        idle_s = _env_number("FLOWKIT_WORKER_IDLE_TIMEOUT_S", IDLE_TIMEOUT_S)
        head_s = _env_number("FLOWKIT_WORKER_HEAD_TIMEOUT_S", HEAD_TIMEOUT_S)
        max_conn = int(_env_number("FLOWKIT_WORKER_MAX_CONNECTIONS", MAX_CONNECTIONS))
        max_pending = int(_env_number("FLOWKIT_WORKER_MAX_PENDING", MAX_PENDING))
    except ValueError as err:
        print(json.dumps({"ready": False, "error": str(err)}), flush=True)  # noqa: T201 - protocol
        return 1
    try:
        llm = LlamaCppLLM(settings)
        llm.tokenize("warm up")        # loads the model (and decides about AMX) before "ready"
    except FlowkitError as err:        # a bad model file: say why in one line, not a traceback
        print(json.dumps({"ready": False, "error": str(err)}), flush=True)  # noqa: T201 - protocol
        return 1
    import llama_cpp
    server = _Server(llm, os.environ.get("FLOWKIT_WORKER_TOKEN", ""), idle_timeout_s=idle_s,
                     max_connections=max_conn, head_timeout_s=head_s, max_pending=max_pending)
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

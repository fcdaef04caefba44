"""`flowkit serve-model`: an OpenAI-compatible server on one GGUF, loaded with the AMX decision.

It is llama-cpp-python's server application (`llama_cpp.server.app.create_app`: chat and text
completions, streaming, /v1/models, /extras/tokenize, OpenAI-shaped errors) with two changes: its
model proxy loads the GGUF through `gguf_load.load_gguf`, so the model is loaded as the worker
loads it (extra buffer types off where this CPU cannot use AMX; `extra_bufts = on` where the probe
recorded a fault is refused before anything loads), and `ValidatedRequests` stands in front of it:
the API key is checked before any of a body is read (401), a body is read up to the model worker's
cap (413 past it), and a body that is not one JSON object, asks for `max_tokens` or sampling
numbers the worker would refuse (`worker_requests.generation_limits`), or is not a valid request
is answered 400 with an OpenAI-shaped JSON error (the library answers 500 with a traceback, and
takes NaN or a negative `max_tokens`). This server, not the model worker's HTTP
surface, because clients of an external server expect the whole OpenAI API (streaming, several
messages) and the server engines' tests compare against llama-cpp-python's own routes.

With `parallel` N > 1, chat completions are batched over N slots (`batch_engine`, `batch_routes`:
continuous batching, one `llama_decode` a step for every active slot); every answer carries
`x-flowkit-parallel: N`.
"""
from __future__ import annotations

import hmac
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from ..errors import ResourceError
from . import amx
from .asgi_replies import ASGIApp, Message, Receive, Scope, Send, error_body, send_json
from .gguf import inspect_gguf
from .gguf_load import load_gguf
from .worker_requests import BadRequest, body_limit, content_length, generation_limits, parse_body

#: the routes that generate: their `max_tokens` and sampling numbers are checked as the worker's
GENERATION_ROUTES = ("/v1/chat/completions", "/v1/completions",
                     "/v1/engines/copilot-codex/completions")


@dataclass(frozen=True)
class ServeSettings:
    """What `flowkit serve-model` serves and how."""

    model_path: str = ""          # a packaged model id, a GGUF path, or '' for the default model
    host: str = "127.0.0.1"
    port: int = 8000
    n_ctx: int = 8192
    seed: int = 42
    n_threads: int = 0            # 0: llama-cpp-python's default
    n_gpu_layers: int | None = None   # None: the device decides (-1 with a GPU, else 0)
    extra_bufts: str = "auto"     # auto | on | off, as the `llm.extra_bufts` setting
    model_alias: str = ""         # the name /v1/models reports; '' = the file's name
    api_key: str = ""             # a bearer token clients must send; '' = none
    parallel: int = 1             # slots batched together (batch_engine); 1 = one at a time


def resolve(model_path: str) -> Path:
    """The GGUF file `model_path` names (packaged id, path, or '' for the default), checked."""
    from .models import model_file
    path = model_file(model_path)
    inspect_gguf(path)
    return path


class ValidatedRequests:
    """ASGI middleware in front of llama-cpp-python's app. Every HTTP request, in this order:

    1. the key (when `api_key` is set): without `Authorization: Bearer <api_key>` the answer is
       401 and nothing of the body is read;
    2. a request with a body is read up to `body_limit(n_ctx)` bytes (the model worker's cap): a
       `Content-Length` over it is 413 before anything is read, a body without one is 413 once it
       passes the cap;
    3. on the routes in `models`: the body is one JSON object (`worker_requests.parse_body`: no
       NaN, no number that overflows, nesting refused, not a traceback), the generation routes'
       `max_tokens` and sampling numbers are checked as the worker checks them
       (`worker_requests.generation_limits`), then the route's pydantic model: 400 otherwise.

    Refusals are OpenAI-shaped: {"error": {"message", "type", "param", "code"}}. A request that
    passes goes on to the library with its body."""

    def __init__(self, app: ASGIApp, models: dict[str, Any], *, api_key: str = "",
                 n_ctx: int = ServeSettings.n_ctx,
                 generation: tuple[str, ...] = GENERATION_ROUTES) -> None:
        self.app, self.models, self.generation = app, models, generation
        self.api_key, self.n_ctx, self.max_body = api_key, n_ctx, body_limit(n_ctx)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        if self.api_key and not _has_key(scope, self.api_key):
            await _send_error(send, 401, "missing or wrong API key (Authorization: Bearer <key>)",
                              None, "authentication_error", "invalid_api_key")
            return
        if scope.get("method") not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        try:
            body = await _read_body(scope, receive, self.max_body)
            model = self.models.get(scope.get("path", ""))
            if model is not None:
                _check(model, body, self.n_ctx if scope.get("path") in self.generation else None)
        except BadRequest as err:
            param = err.param if isinstance(err, _FieldProblem) else None
            await _send_error(send, err.status, str(err), param, err.kind,
                              "request_too_large" if err.status == 413 else None)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class _FieldProblem(BadRequest):
    """A 400 that names the request field at fault."""

    def __init__(self, message: str, param: str | None) -> None:
        super().__init__(message)
        self.param = param


def _has_key(scope: Scope, api_key: str) -> bool:
    """Whether the request's Authorization header is `Bearer <api_key>` (compared in constant
    time; the scheme's case does not matter)."""
    given = b""
    for name, value in scope.get("headers") or []:
        if name.lower() == b"authorization":
            given = bytes(value)
            break
    scheme, _, credentials = given.partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(),
                                                               api_key.encode())


async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The request's body, at most `limit` bytes (BadRequest 413 past it, before reading when
    Content-Length says so; a malformed Content-Length is 400)."""
    headers = EmailMessage()
    for name, value in scope.get("headers") or []:
        if name.lower() == b"content-length":
            headers["Content-Length"] = value.decode("latin-1")
    if headers.get_all("Content-Length"):
        content_length(headers, limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            break                      # the client went away
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BadRequest(f"the body is over {limit} bytes, the most this server takes (the "
                             "model's context cannot hold more)", 413, "request_too_large")
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _check(model: Any, body: bytes, n_ctx: int | None) -> None:
    """Raise BadRequest when `body` is not a valid request for `model`; `n_ctx` (the generation
    routes) also checks `max_tokens` and the sampling numbers as the model worker does."""
    from pydantic import ValidationError
    data = parse_body(body)
    if n_ctx is not None:
        generation_limits(data, n_ctx)
    try:
        model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise _FieldProblem(f"{where}: {first.get('msg', 'invalid')}" if where else
                            str(err)[:500], where or None) from err
    except RecursionError as err:
        raise BadRequest("the request body is nested too deeply") from err


async def _send_error(send: Send, status: int, message: str, param: str | None,
                      kind: str = "invalid_request_error", code: str | None = None) -> None:
    """A refusal before the body was read (or past its cap): the connection closes after it."""
    headers = ((b"connection", b"close"),) + \
        (((b"www-authenticate", b"Bearer"),) if status == 401 else ())
    await send_json(send, status, error_body(message, param, kind, code), headers)


def gpu_layers(requested: int | None) -> int:
    """The layers the server puts on the GPU, decided as the studio's model decides them
    (`device.plan`): every layer where this llama.cpp build can offload and a GPU is there, else
    none; a number given wins, and a GPU number on a build that cannot offload is refused."""
    from . import device
    from .llm_contract import LLMSettings
    return int(device.plan(LLMSettings(n_gpu_layers=requested), None).settings.n_gpu_layers or 0)


def create_app(settings: ServeSettings) -> tuple[Any, amx.Decision]:
    """The server application with its model loaded (through `load_gguf`), and the AMX decision."""
    try:
        import llama_cpp.server.app as server_app
        import llama_cpp.server.model as server_model
        from llama_cpp.server.settings import ModelSettings, ServerSettings
    except ImportError as err:  # pragma: no cover - install problem
        raise ResourceError("llama-cpp-python's server is not installed: "
                            "pip install 'llama-cpp-python[server]'") from err
    path = resolve(settings.model_path)
    layers = gpu_layers(settings.n_gpu_layers)
    decided: list[amx.Decision] = []
    loaded: list[Any] = []
    library_load = server_model.LlamaProxy.load_llama_from_model_settings

    class DecidedProxy(server_model.LlamaProxy):
        """llama-cpp-python's model proxy, loading through flowkit's one loader."""

        @staticmethod
        def load_llama_from_model_settings(model: ModelSettings) -> Any:
            llama, decision = load_gguf(model.model, settings.extra_bufts,
                                        lambda: library_load(model))
            decided.append(decision)
            loaded.append(llama)
            return llama

    threads: dict[str, Any] = ({"n_threads": settings.n_threads,
                                "n_threads_batch": settings.n_threads}
                               if settings.n_threads > 0 else {})
    model = ModelSettings(model=str(path), model_alias=settings.model_alias or path.name,
                          n_ctx=settings.n_ctx, seed=settings.seed,
                          n_gpu_layers=layers, verbose=False, **threads)
    server = ServerSettings(host=settings.host, port=settings.port,
                            api_key=settings.api_key or None)
    server_app.LlamaProxy = DecidedProxy        # type: ignore[misc]  # what set_llama_proxy builds
    app = server_app.create_app(server_settings=server, model_settings=[model])
    from llama_cpp.server import types as api
    routes = {"/v1/chat/completions": api.CreateChatCompletionRequest,
              "/v1/completions": api.CreateCompletionRequest,
              "/v1/engines/copilot-codex/completions": api.CreateCompletionRequest,
              "/v1/embeddings": api.CreateEmbeddingRequest,
              "/extras/tokenize": api.TokenizeInputRequest,
              "/extras/tokenize/count": api.TokenizeInputRequest,
              "/extras/detokenize": api.DetokenizeInputRequest}
    from .batch_engine import BatchEngine
    from .batch_routes import BatchedChat
    engine = (BatchEngine(loaded[-1], settings.parallel, settings.n_ctx)
              if settings.parallel > 1 else None)
    batched = BatchedChat(app, engine, api.CreateChatCompletionRequest)
    return (ValidatedRequests(batched, routes, api_key=settings.api_key, n_ctx=settings.n_ctx),
            decided[-1])


def serve(settings: ServeSettings, on_ready: Any = None) -> None:
    """Load the model and serve until interrupted; `on_ready(decision)` is called once loaded."""
    import uvicorn

    app, decision = create_app(settings)
    if on_ready is not None:
        on_ready(decision)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")

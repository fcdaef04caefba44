"""`flowkit serve-model`: an OpenAI-compatible server on one GGUF, loaded with the AMX decision.

It is llama-cpp-python's server application (`llama_cpp.server.app.create_app`: chat and text
completions, streaming, /v1/models, /extras/tokenize, OpenAI-shaped errors) with one change: its
model proxy loads the GGUF through `gguf_load.load_gguf`, so the model is loaded as the worker
loads it (extra buffer types off where this CPU cannot use AMX; `extra_bufts = on` where the probe
recorded a fault is refused before anything loads), and a request body that is not valid JSON or not a
valid request is answered 400 with an OpenAI-shaped JSON error (the library answers 500 with a
traceback). This server, not the model worker's HTTP
surface, because clients of an external server expect the whole OpenAI API (streaming, several
messages) and the server engines' tests compare against llama-cpp-python's own routes.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ResourceError
from . import amx
from .gguf import inspect_gguf
from .gguf_load import load_gguf


@dataclass(frozen=True)
class ServeSettings:
    """What `flowkit serve-model` serves and how."""

    model_path: str = ""          # a packaged model id, a GGUF path, or '' for the default model
    host: str = "127.0.0.1"
    port: int = 8000
    n_ctx: int = 8192
    seed: int = 42
    n_threads: int = 0            # 0: llama-cpp-python's default
    n_gpu_layers: int = 0
    extra_bufts: str = "auto"     # auto | on | off, as the `llm.extra_bufts` setting
    model_alias: str = ""         # the name /v1/models reports; '' = the file's name
    api_key: str = ""             # a bearer token clients must send; '' = none


def resolve(model_path: str) -> Path:
    """The GGUF file `model_path` names (packaged id, path, or '' for the default), checked."""
    from .models import model_file
    path = model_file(model_path)
    inspect_gguf(path)
    return path


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ValidatedRequests:
    """ASGI middleware: the body of a POST to a route in `models` must be JSON that the route's
    pydantic request model accepts; otherwise 400 with {"error": {"message", "type":
    "invalid_request_error", "param", "code"}}. Valid requests pass on with their body."""

    def __init__(self, app: ASGIApp, models: dict[str, Any]) -> None:
        self.app, self.models = app, models

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        model = self.models.get(scope.get("path", "")) if scope.get("type") == "http" else None
        if model is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body") or message.get("type") != "http.request":
                break
        body = b"".join(chunks)
        problem = _problem(model, body)
        if problem is not None:
            await _send_error(send, problem[0], problem[1])
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _problem(model: Any, body: bytes) -> tuple[str, str | None] | None:
    """Why `body` is not a valid request for `model` (message, offending field), or None."""
    from pydantic import ValidationError
    try:
        data = json.loads(body or b"null")
    except ValueError as err:
        return f"the request body is not JSON: {err}", None
    if not isinstance(data, dict):
        return "the request body must be a JSON object", None
    try:
        model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return f"{where}: {first.get('msg', 'invalid')}" if where else str(err), where or None
    return None


async def _send_error(send: Send, message: str, param: str | None) -> None:
    raw = json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                "param": param, "code": None}}).encode()
    await send({"type": "http.response.start", "status": 400,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(raw)).encode())]})
    await send({"type": "http.response.body", "body": raw})


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
    decided: list[amx.Decision] = []
    library_load = server_model.LlamaProxy.load_llama_from_model_settings

    class DecidedProxy(server_model.LlamaProxy):
        """llama-cpp-python's model proxy, loading through flowkit's one loader."""

        @staticmethod
        def load_llama_from_model_settings(model: ModelSettings) -> Any:
            llama, decision = load_gguf(model.model, settings.extra_bufts,
                                        lambda: library_load(model))
            decided.append(decision)
            return llama

    threads: dict[str, Any] = ({"n_threads": settings.n_threads,
                                "n_threads_batch": settings.n_threads}
                               if settings.n_threads > 0 else {})
    model = ModelSettings(model=str(path), model_alias=settings.model_alias or path.name,
                          n_ctx=settings.n_ctx, seed=settings.seed,
                          n_gpu_layers=settings.n_gpu_layers, verbose=False, **threads)
    server = ServerSettings(host=settings.host, port=settings.port,
                            api_key=settings.api_key or None)
    server_app.LlamaProxy = DecidedProxy        # type: ignore[misc]  # what set_llama_proxy builds
    app = server_app.create_app(server_settings=server, model_settings=[model])
    from llama_cpp.server import types as api
    routes = {"/v1/chat/completions": api.CreateChatCompletionRequest,
              "/v1/completions": api.CreateCompletionRequest,
              "/v1/embeddings": api.CreateEmbeddingRequest}
    return ValidatedRequests(app, routes), decided[-1]


def serve(settings: ServeSettings, on_ready: Any = None) -> None:
    """Load the model and serve until interrupted; `on_ready(decision)` is called once loaded."""
    import uvicorn

    app, decision = create_app(settings)
    if on_ready is not None:
        on_ready(decision)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")

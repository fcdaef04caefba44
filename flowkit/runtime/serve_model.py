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
takes NaN or a negative `max_tokens`). serve-model's own rules come on top (`serve_limits`: `n` 1,
a chat's `messages` not empty, `logit_bias` keyed by this model's token ids, `min_p` 0..1;
`max_completion_tokens`, OpenAI's newer name that the library ignores, is read as `max_tokens`:
`max_tokens_by_its_old_name`), and the generation requests let through are bounded: past
`parallel + max_queue` in flight a new one is 503 with `Retry-After` at once, instead of waiting
behind hundreds. This server, not the model
worker's HTTP
surface, because clients of an external server expect the whole OpenAI API (streaming, several
messages) and the server engines' tests compare against llama-cpp-python's own routes.

With `parallel` N > 1, chat completions are batched over N slots (`batch_engine`, `batch_routes`:
continuous batching, one `llama_decode` a step for every active slot); every answer carries
`x-flowkit-parallel: N`.
"""
from __future__ import annotations

import hmac
import json
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
CHAT_ROUTE = GENERATION_ROUTES[0]
#: what a 503 for a full queue tells the client to wait, in seconds
RETRY_AFTER_S = 2


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
    max_queue: int = 64           # generation requests that may wait beyond `parallel`; then 503


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
       (`worker_requests.generation_limits`) and by serve-model's own rules (`serve_limits`), then
       the route's pydantic model: 400 otherwise;
    4. a generation request that passes is let through while fewer than `capacity + max_queue`
       are in flight (served or waiting for the model); past that it is 503 with `Retry-After`,
       answered at once. The count lives on the server's one event loop: no lock is needed.

    Refusals are OpenAI-shaped: {"error": {"message", "type", "param", "code"}}. A request that
    passes goes on to the library with its body."""

    def __init__(self, app: ASGIApp, models: dict[str, Any], *, api_key: str = "",
                 n_ctx: int = ServeSettings.n_ctx, n_vocab: int | None = None,
                 capacity: int = ServeSettings.parallel, max_queue: int = ServeSettings.max_queue,
                 generation: tuple[str, ...] = GENERATION_ROUTES) -> None:
        if capacity < 1 or max_queue < 0:
            raise ValueError(f"capacity must be 1 or more and max_queue 0 or more, not "
                             f"{capacity} and {max_queue}")
        self.app, self.models, self.generation = app, models, generation
        self.api_key, self.n_ctx, self.max_body = api_key, n_ctx, body_limit(n_ctx)
        self.n_vocab, self.capacity, self.max_queue = n_vocab, capacity, max_queue
        self.in_flight = 0

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
        path = scope.get("path", "")
        generation = path in self.generation
        try:
            body = await _read_body(scope, receive, self.max_body)
            if generation:
                body = max_tokens_by_its_old_name(body)
            model = self.models.get(path)
            if model is not None:
                _check(model, body, path, self.n_ctx if generation else None, self.n_vocab)
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

        if not generation:
            await self.app(scope, replay, send)
            return
        if self.in_flight >= self.capacity + self.max_queue:
            await send_json(send, 503, error_body(
                f"the server is busy: {self.in_flight} requests are being served or waiting (it "
                f"serves {self.capacity} at once and keeps at most {self.max_queue} waiting); "
                f"retry after {RETRY_AFTER_S} s", None, "unavailable_error", "queue_full"),
                ((b"retry-after", str(RETRY_AFTER_S).encode()),))
            return
        self.in_flight += 1
        try:
            await self.app(scope, replay, send)
        finally:
            self.in_flight -= 1


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


def max_tokens_by_its_old_name(body: bytes) -> bytes:
    """`body` with OpenAI's newer name for `max_tokens`, `max_completion_tokens` (what LangChain's
    `ChatOpenAI` sends, and the openai package where a caller uses it), renamed `max_tokens`:
    llama-cpp-python knows only the old name and ignored the new one, so such a request ran to
    the end of the context. Both names with different numbers is a 400 naming the new one; a
    body without the new name is handed back as it came."""
    if b"max_completion_tokens" not in body:
        return body
    data = parse_body(body)
    if "max_completion_tokens" not in data:
        return body
    limit = data.pop("max_completion_tokens")
    if limit is not None:
        if data.get("max_tokens") not in (None, limit):
            raise _FieldProblem(f"max_completion_tokens: {json.dumps(limit)[:40]} differs from "
                                f"max_tokens {json.dumps(data['max_tokens'])[:40]}; send one of "
                                "them", "max_completion_tokens")
        data["max_tokens"] = limit
    return json.dumps(data).encode()


def _check(model: Any, body: bytes, path: str, n_ctx: int | None, n_vocab: int | None) -> None:
    """Raise BadRequest when `body` is not a valid request for `model`; `n_ctx` (the generation
    routes) also checks `max_tokens` and the sampling numbers as the model worker does, and
    serve-model's own rules (`serve_limits`)."""
    from pydantic import ValidationError
    data = parse_body(body)
    if n_ctx is not None:
        generation_limits(data, n_ctx)
        serve_limits(data, chat=path == CHAT_ROUTE, n_vocab=n_vocab)
    try:
        model.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise _FieldProblem(f"{where}: {first.get('msg', 'invalid')}" if where else
                            str(err)[:500], where or None) from err
    except RecursionError as err:
        raise BadRequest("the request body is nested too deeply") from err


def serve_limits(data: dict[str, Any], *, chat: bool, n_vocab: int | None) -> None:
    """serve-model's rules for a generation request, on top of the worker's (each a 400 naming
    its field):

    1. `n` is absent, null or 1: llama-cpp-python answers one choice whatever `n` says;
    2. a chat's `messages` is a non-empty list (an empty one would render an empty prompt);
    3. `min_p` is a number in 0..1 (above 1 no token is left to sample from);
    4. `logit_bias` is an object of numbers keyed by token ids: decimal integers 0..n_vocab-1
       (the library calls `int(key)` and indexes the logits with it: a word was a 500, "-1"
       biased the last token), or by token text when `logit_bias_type` is "tokens"."""
    n = data.get("n")
    if n is not None and (isinstance(n, bool) or n != 1 or not isinstance(n, int)):
        raise _FieldProblem(f"n: this server answers one choice a request; n must be 1, not "
                            f"{json.dumps(n)[:40]}", "n")
    messages = data.get("messages")
    if chat and (not isinstance(messages, list) or not messages):
        raise _FieldProblem("messages: must be a non-empty list of messages", "messages")
    min_p = data.get("min_p")
    if min_p is not None and (isinstance(min_p, bool) or not isinstance(min_p, int | float)
                              or not 0.0 <= min_p <= 1.0):
        raise _FieldProblem(f"min_p: must be a number between 0 and 1, not {json.dumps(min_p)[:40]}",
                            "min_p")
    _logit_bias(data.get("logit_bias"), data.get("logit_bias_type") == "tokens", n_vocab)


def _logit_bias(bias: Any, by_text: bool, n_vocab: int | None) -> None:
    """Check `logit_bias` (see `serve_limits`, rule 4)."""
    if bias is None:
        return
    if not isinstance(bias, dict):
        raise _FieldProblem("logit_bias: must be an object of token id -> bias", "logit_bias")
    top = "" if n_vocab is None else f"..{n_vocab - 1}"
    for key, value in bias.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _FieldProblem(f"logit_bias: the bias of {json.dumps(key)[:40]} must be a number, "
                                f"not {json.dumps(value)[:40]}", "logit_bias")
        if by_text:
            continue
        if not (key.isascii() and key.isdigit()) or \
                (n_vocab is not None and int(key) >= n_vocab):
            raise _FieldProblem(f"logit_bias: keys must be token ids of this model (0{top}), not "
                                f"{json.dumps(key)[:40]} (token text needs logit_bias_type "
                                '"tokens")', "logit_bias")


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


def whole_prompts(llama: Any) -> None:
    """Make `llama` evaluate every prompt whole, as a fresh call does (the GUIDE's determinism
    rule). llama-cpp-python's `generate` reuses the KV cache of the prompt before it: a repeated
    prompt has its last token evaluated again alone (a batch of 1; llama-cpp-python 0.3.36), whose
    logits differ from the whole prompt's in batches, so the same request gave other logprobs
    (0.147 apart here) and could give another greedy answer than the embedded worker. Forgetting
    the evaluated tokens before a fresh (`reset=True`) call makes it evaluate the whole prompt."""
    generate = llama.generate

    def fresh(tokens: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("reset", True):
            llama.n_tokens = 0
        return generate(tokens, *args, **kwargs)

    llama.generate = fresh


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
            whole_prompts(llama)
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
    engine = (BatchEngine.open(loaded[-1], settings.parallel, settings.n_ctx)
              if settings.parallel > 1 else None)
    batched = BatchedChat(app, engine, api.CreateChatCompletionRequest)
    return (ValidatedRequests(batched, routes, api_key=settings.api_key, n_ctx=settings.n_ctx,
                              n_vocab=int(loaded[-1].n_vocab()), capacity=settings.parallel,
                              max_queue=settings.max_queue),
            decided[-1])


def serve(settings: ServeSettings, on_ready: Any = None) -> None:
    """Load the model and serve until interrupted; `on_ready(decision)` is called once loaded."""
    import uvicorn

    app, decision = create_app(settings)
    if on_ready is not None:
        on_ready(decision)
    uvicorn.run(app, host=settings.host, port=settings.port, log_level="warning")

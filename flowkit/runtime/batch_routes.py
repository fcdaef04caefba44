"""The HTTP side of `flowkit serve-model --parallel N`: `POST /v1/chat/completions` (what flowkit's
OpenAI-compatible client calls) served by the batching engine, everything else by llama-cpp-python's
app as with `--parallel 1`.

A chat request goes to the engine when it asks for nothing the engine does not do; otherwise it is
served by the serial app, one at a time, exactly as without `--parallel`. The serial app is used for:
`n` > 1, tools or functions, `response_format`, `grammar`, `logit_bias`, mirostat, a negative
temperature, and any penalty (`repeat_penalty` other than 1.0, and note that llama-cpp-python's
default when it is absent is 1.1; `presence_penalty` or `frequency_penalty` other than 0).
flowkit's client sends `repeat_penalty: 1.0` and no penalties, so its calls are batched.

Every answer carries `x-flowkit-parallel: N` (the slots) and the completions routes
`x-flowkit-batched: 1` or `0` (which path served the request). A prompt longer than one slot's
context (`--n-ctx`) is a 400 `context_length_exceeded`, worded as the serial server words it. A
client that disconnects frees its slot (or leaves the queue) at the next decode step.

A request the engine fails alone (`batch_slots.Failed`) is a 500 `model_error` naming why; the others
go on. `GET /health` is llama.cpp's server's: 200 `{"status": "ok"}` while the engine serves (and
always with `--parallel 1`), 503 `unavailable_error` with the reason once its thread has stopped;
from then on a chat the engine would serve is that same 503 at once, never a wait."""
from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

from .asgi_replies import ASGIApp, Message, Receive, Scope, Send, error_body, send_json
from .batch_engine import BatchEngine, chat_prompt
from .batch_sampling import Sampling, TokenLogprob
from .batch_slots import Done, EngineStopped, Event, Failed, Job, Piece, PromptTooLong

CHAT_ROUTE = "/v1/chat/completions"
HEALTH_ROUTE = "/health"
PARALLEL_HEADER = b"x-flowkit-parallel"
BATCHED_HEADER = b"x-flowkit-batched"


def serial_reason(request: Any) -> str:
    """Why a validated chat request (llama-cpp-python's CreateChatCompletionRequest, with its
    defaults) must go to the serial app; '' when the batching engine serves it."""
    checks = (("n", (request.n or 1) != 1), ("tools", bool(request.tools or request.functions)),
              ("tool_choice", request.tool_choice is not None or
               request.function_call is not None),
              ("response_format", request.response_format is not None),
              ("grammar", bool(request.grammar)), ("logit_bias", bool(request.logit_bias)),
              ("mirostat_mode", bool(request.mirostat_mode)),
              ("temperature", request.temperature < 0),
              ("repeat_penalty", request.repeat_penalty != 1.0),
              ("presence_penalty", bool(request.presence_penalty)),
              ("frequency_penalty", bool(request.frequency_penalty)))
    return next((name for name, applies in checks if applies), "")


class BatchedChat:
    """ASGI app: chat completions through `engine`, the rest (and what it cannot do) to `serial`;
    with no engine (`--parallel 1`) everything goes to `serial`, with the header added."""

    def __init__(self, serial: ASGIApp, engine: BatchEngine | None, request_model: Any) -> None:
        self.serial, self.engine, self.request_model = serial, engine, request_model
        self.header = str(1 if engine is None else engine.parallel).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.serial(scope, receive, send)
            return
        if scope.get("path") == HEALTH_ROUTE and scope.get("method") in ("GET", "HEAD"):
            await self._health(self._headed(send, None))
            return
        if scope.get("path") != CHAT_ROUTE or scope.get("method") != "POST":
            await self.serial(scope, receive, self._headed(send, None))
            return
        body = await _whole_body(receive)
        data = json.loads(body)
        request = self.request_model.model_validate(data)   # checked in front already
        if self.engine is None or serial_reason(request):
            await self.serial(scope, _replay(body, receive), self._headed(send, False))
            return
        usage = isinstance(data.get("stream_options"), dict) and \
            bool(data["stream_options"].get("include_usage"))
        await self._batched(self.engine, request, usage, receive, self._headed(send, True))

    async def _health(self, send: Send) -> None:
        """200 while the engine can serve (or there is none), 503 with the reason once not."""
        reason = None if self.engine is None else self.engine.failure
        if reason is None:
            await send_json(send, 200, {"status": "ok"})
        else:
            await _unavailable(send, reason)

    def _headed(self, send: Send, batched: bool | None) -> Send:
        """`send` with the parallelism header (and whether batched) added to the response."""
        extra = [(PARALLEL_HEADER, self.header)]
        if batched is not None:
            extra.append((BATCHED_HEADER, b"1" if batched else b"0"))

        async def headed(message: Message) -> None:
            if message.get("type") == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)
        return headed

    async def _batched(self, engine: BatchEngine, request: Any, usage: bool, receive: Receive,
                       send: Send) -> None:
        """Serve `request` through `engine` (`usage`: a stream ends with the token counts)."""
        try:
            tokens, stop = chat_prompt(engine.llama, request.model_dump()["messages"],
                                       request.stop)
        except ValueError as err:
            await send_json(send, 400, error_body(
                f"messages: the chat template refused them: {err}", "messages"))
            return
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Event] = asyncio.Queue()

        def emit(event: Event) -> None:                # called on the decode thread
            try:
                loop.call_soon_threadsafe(events.put_nowait, event)
            except RuntimeError:                       # the server is shutting down
                job.cancel()

        job = Job(tokens=tokens, emit=emit, max_tokens=request.max_tokens, stop=stop,
                  sampling=_sampling(request))
        try:
            engine.submit(job)
        except PromptTooLong as err:
            await send_json(send, 400, error_body(
                f"This model's maximum context length is {err.n_ctx} tokens. However, you "
                f"requested {err.prompt_tokens + (request.max_tokens or 0)} tokens "
                f"({err.prompt_tokens} in the messages, {request.max_tokens} in the completion). "
                "Please reduce the length of the messages or completion.", "messages",
                code="context_length_exceeded"))
            return
        except EngineStopped as err:
            await _unavailable(send, str(err))
            return
        watcher = asyncio.create_task(_until_disconnect(receive, job, events))
        head = {"id": f"chatcmpl-{uuid.uuid4()}", "created": int(time.time()),
                "model": request.model or engine.llama.model_path}
        try:
            if request.stream:
                await _stream(send, events, head, usage)
            else:
                await _whole(send, events, head)
        except OSError:
            pass                                     # the client went away while we wrote
        finally:
            job.cancel()                             # no-op once done; frees a slot otherwise
            watcher.cancel()


async def _unavailable(send: Send, reason: str) -> None:
    """The engine cannot serve: 503 with the reason (no Retry-After: waiting will not help)."""
    await send_json(send, 503, error_body(reason, None, "unavailable_error", "engine_stopped"))


def _sampling(request: Any) -> Sampling:
    """The request's sampling numbers (its seed as given: `batch_sampling.rng_for` reads -1 as
    random, as llama.cpp does)."""
    return Sampling(temperature=request.temperature, top_k=request.top_k, top_p=request.top_p,
                    min_p=request.min_p, seed=42 if request.seed is None else request.seed,
                    top_logprobs=(request.top_logprobs or 0) if request.logprobs else None)


async def _whole(send: Send, events: asyncio.Queue[Event], head: dict[str, Any]) -> None:
    while True:
        event = await events.get()
        if event is _GONE:
            return
        if isinstance(event, Failed):
            await send_json(send, 500, error_body(event.message, None, "model_error",
                                                  "server_error"))
            return
        if isinstance(event, Done):
            await send_json(send, 200, {**head, "object": "chat.completion", "choices": [{
                "index": 0, "message": {"role": "assistant", "content": event.text},
                "logprobs": _logprobs(event.logprobs), "finish_reason": event.finish_reason}],
                "usage": _usage(event)})
            return


async def _stream(send: Send, events: asyncio.Queue[Event], head: dict[str, Any],
                  with_usage: bool) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]})

    async def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> None:
        data = {**head, "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": delta, "logprobs": more.pop("logprobs", None),
             "finish_reason": finish}], **more}
        await send({"type": "http.response.body", "more_body": True,
                    "body": b"data: " + json.dumps(data).encode() + b"\r\n\r\n"})

    await chunk({"role": "assistant"})
    sent = ""
    while True:
        event = await events.get()
        if event is _GONE:
            return
        if isinstance(event, Piece):
            sent += event.text
            await chunk({"content": event.text})
        elif isinstance(event, Failed):
            error = error_body(event.message, None, "model_error", "server_error")
            await send({"type": "http.response.body", "more_body": True,
                        "body": b"data: " + json.dumps(error).encode() + b"\r\n\r\n"})
            break
        else:
            rest = event.text[len(sent):] if event.text.startswith(sent) else ""
            if rest:
                await chunk({"content": rest})
            usage = {"usage": _usage(event)} if with_usage else {}
            await chunk({}, event.finish_reason, logprobs=_logprobs(event.logprobs), **usage)
            break
    await send({"type": "http.response.body", "body": b"data: [DONE]\r\n\r\n",
                "more_body": False})


def _usage(done: Done) -> dict[str, int]:
    return {"prompt_tokens": done.prompt_tokens, "completion_tokens": done.completion_tokens,
            "total_tokens": done.prompt_tokens + done.completion_tokens}


def _logprobs(entries: tuple[TokenLogprob, ...] | None) -> dict[str, Any] | None:
    """OpenAI's chat `logprobs.content` (top alternatives as token ids: `token` is `#<id>`)."""
    if entries is None:
        return None
    return {"content": [{"token": e.token.decode("utf-8", "ignore"), "logprob": e.logprob,
                         "bytes": list(e.token),
                         "top_logprobs": [{"token": f"#{i}", "logprob": lp} for i, lp in e.top]}
                        for e in entries]}


async def _whole_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if message.get("type") != "http.request" or not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()
    return replay


#: put in a request's event queue when its client disconnects: stop waiting, send nothing
_GONE = Failed("the client went away")


async def _until_disconnect(receive: Receive, job: Job, events: asyncio.Queue[Event]) -> None:
    """Cancel `job` (its slot is freed at the next step) when the client disconnects, and wake
    the response that waits for it."""
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            job.cancel()
            events.put_nowait(_GONE)
            return

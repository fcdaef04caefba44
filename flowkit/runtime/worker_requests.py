"""What the model worker accepts: every request's body checked before the model sees it.

`worker.py` serves HTTP; this module turns a request's headers and JSON body into typed values or a
`BadRequest` carrying the 4xx status, the message and the error type the worker answers with
(`{"error": {"message", "type", "code"}}`). The rules:

- the body is read only when `Content-Length` is present, a plain decimal number, and within
  `body_limit(n_ctx)` (a chunked body or a missing length answers 411, one over the cap 413);
- the body is one JSON object (NaN and Infinity are not JSON and are refused, and so is a number
  too large for a float, such as 1e999);
- `max_tokens` is an integer (not a boolean) in 1..n_ctx; absent or null means 256. A request whose
  prompt leaves fewer tokens than asked is clamped to what fits (`n_ctx - prompt`), as
  `LlamaCppLLM.complete` has always done, and a prompt that does not fit at all answers 400 with
  type `exceed_context_size_error`;
- sampling parameters are finite numbers in their ranges: `temperature` 0..2, `top_p` 0..1,
  `frequency_penalty` and `presence_penalty` -2..2, `repeat_penalty` 0..10 (the worker decodes with
  the settings' sampler; only `temperature` changes what it does), `seed` and `top_logprobs`
  integers;
- `stop` is a string or a list of at most `MAX_STOPS` strings; messages are one user message and at
  most one system message, each with string content;
- `stream` is true or false (true: the answer comes as server-sent events); `stream_options`, if
  present, is an object.

`flowkit serve-model` (`serve_model.py`) applies the same body cap, `parse_body` and
`generation_limits` (`max_tokens` and the sampling numbers) to its generation routes, before the
library's own schema.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from typing import Any

from ..errors import FlowkitError

DEFAULT_MAX_TOKENS = 256
MAX_STOPS = 16
#: the body cap: this many bytes per token of context (JSON escapes take up to 12 bytes per
#: character), never less than `MIN_BODY_BYTES`
BODY_BYTES_PER_TOKEN = 64
MIN_BODY_BYTES = 1 << 20

#: name -> (lowest, highest) for the sampling numbers the worker accepts
_RANGES: dict[str, tuple[float, float]] = {
    "temperature": (0.0, 2.0), "top_p": (0.0, 1.0), "frequency_penalty": (-2.0, 2.0),
    "presence_penalty": (-2.0, 2.0), "repeat_penalty": (0.0, 10.0),
}


class BadRequest(FlowkitError):
    """A request the worker refuses: `status` (4xx), the message and the OpenAI error type."""

    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


@dataclass(frozen=True)
class ChatRequest:
    """One checked `/v1/chat/completions` request."""

    user: str
    system: str | None
    max_tokens: int
    stop: list[str]
    temperature: float | None
    logprobs: bool
    stream: bool = False


def body_limit(n_ctx: int) -> int:
    """The largest body, in bytes, the worker reads for a model with `n_ctx` tokens of context."""
    return max(MIN_BODY_BYTES, BODY_BYTES_PER_TOKEN * n_ctx)


def content_length(headers: Message, limit: int) -> int:
    """The body's length from the headers, refused before anything is read: no length or a chunked
    body (411), a length that is not one decimal number (400), more than `limit` bytes (413)."""
    if headers.get("Transfer-Encoding"):
        raise BadRequest("the worker does not take chunked bodies: send Content-Length", 411)
    values = headers.get_all("Content-Length") or []
    if not values:
        raise BadRequest("a POST needs a Content-Length header", 411)
    if len(set(v.strip() for v in values)) > 1:
        raise BadRequest("conflicting Content-Length headers")
    raw = values[0].strip()
    if not raw.isascii() or not raw.isdigit():
        raise BadRequest(f"Content-Length must be a non-negative integer, not {raw[:40]!r}")
    length = int(raw)
    if length > limit:
        raise BadRequest(f"the body is {length} bytes; this worker takes at most {limit} "
                         "(the model's context cannot hold more)", 413, "request_too_large")
    return length


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large")
    return value


def parse_body(raw: bytes) -> dict[str, Any]:
    """The body as one JSON object (no NaN or Infinity, no number that overflows a float)."""
    try:
        data = json.loads(raw or b"{}", parse_constant=_no_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as err:
        raise BadRequest(f"the request body is not JSON: {err}") from err
    if not isinstance(data, dict):
        raise BadRequest("the request body must be a JSON object")
    return data


def _number(body: Mapping[str, Any], name: str) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise BadRequest(f"{name} must be a finite number, not {json.dumps(value)[:40]}")
    low, high = _RANGES[name]
    if not low <= value <= high:
        raise BadRequest(f"{name} must be between {low:g} and {high:g}, not {value:g}")
    return float(value)


def _integer(body: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{name} must be an integer, not {json.dumps(value)[:40]}")
    if not low <= value <= high:
        raise BadRequest(f"{name} must be between {low} and {high}, not {value}")
    return value


def sampling(body: Mapping[str, Any]) -> float | None:
    """Check every sampling parameter present; return the temperature (None: the settings')."""
    for name in _RANGES:
        _number(body, name)
    _integer(body, "seed", -(2**63), 2**64 - 1)
    _integer(body, "top_logprobs", 0, 20)
    return _number(body, "temperature")


def generation_limits(body: Mapping[str, Any], n_ctx: int) -> tuple[int | None, float | None]:
    """What every generation request is checked for, by the worker and by `flowkit serve-model`:
    `max_tokens` an integer in 1..n_ctx and the sampling numbers finite and in range. Returns
    (max_tokens, temperature), each None when absent."""
    return _integer(body, "max_tokens", 1, n_ctx), sampling(body)


def chat_request(body: Mapping[str, Any], n_ctx: int) -> ChatRequest:
    """A checked chat completion request for a model with `n_ctx` tokens of context."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty list")
    by_role: dict[str, list[str]] = {"system": [], "user": []}
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in by_role:
            raise BadRequest(f"messages[{i}] must be an object with role 'system' or 'user'")
        content = message.get("content", "")
        if not isinstance(content, str):
            raise BadRequest(f"messages[{i}].content must be a string")
        by_role[message["role"]].append(content)
    if len(by_role["user"]) != 1 or len(by_role["system"]) > 1:
        raise BadRequest("the flowkit worker takes one user message and at most one system message")
    max_tokens, temperature = generation_limits(body, n_ctx)
    stop = body.get("stop")
    stops = [] if stop is None else [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or len(stops) > MAX_STOPS or \
            not all(isinstance(s, str) for s in stops):
        raise BadRequest(f"stop must be a string or a list of at most {MAX_STOPS} strings")
    logprobs = body.get("logprobs", False)
    if not isinstance(logprobs, bool | None):
        raise BadRequest("logprobs must be true or false")
    stream = body.get("stream", False)
    if not isinstance(stream, bool | None):
        raise BadRequest("stream must be true or false")
    if not isinstance(body.get("stream_options", {}), dict | None):
        raise BadRequest("stream_options must be an object")
    return ChatRequest(user=by_role["user"][0],
                       system=by_role["system"][0] if by_role["system"] else None,
                       max_tokens=DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
                       stop=list(stops), temperature=temperature,
                       logprobs=bool(logprobs), stream=bool(stream))


def score_request(body: Mapping[str, Any]) -> str:
    """The prompt of a `/v1/completions` scoring request (`echo: true` and `logprobs`)."""
    if body.get("echo") is not True or body.get("logprobs") is None:
        raise BadRequest("the flowkit worker's /v1/completions only scores a prompt: send echo: true "
                         "and logprobs (use /v1/chat/completions to generate)")
    if body["logprobs"] is not True:
        _integer(body, "logprobs", 0, 20)
    _integer(body, "max_tokens", 0, 2**31)
    sampling(body)
    prompt = body.get("prompt")
    if not isinstance(prompt, str):
        raise BadRequest("prompt must be one string")
    return prompt


def tokenize_request(body: Mapping[str, Any]) -> str:
    """The text of a `/tokenize` request."""
    content = body.get("content", "")
    if not isinstance(content, str):
        raise BadRequest("content must be a string")
    return content

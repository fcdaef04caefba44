"""Token streaming: pieces of a completion handed out as they are generated, and the server-sent
events (SSE) that carry them from the model worker to its client.

`PieceStream` turns the text generated so far into pieces for an `on_token` callback so that the
pieces of one call, joined, are exactly the `Completion.text` the call returns: the text is cut at
the first stop string (as llama.cpp cuts it), leading white space is dropped and trailing white
space held back (the completion is stripped), and a tail that could be the start of a stop string
is held back until the next token shows it is not. `finish(text)` hands out what is left.

The wire format is OpenAI's streaming chat completion: `data: {chunk}` events of
`chat.completion.chunk` objects whose `choices[0].delta.content` is a piece, a last chunk with the
`finish_reason` and the `usage`, then `data: [DONE]`. flowkit's worker adds `flowkit.prompt` (the
exact text sent to the model) to the last chunk, as it does to a whole answer; an error after the
stream began is one `data: {"error": {...}}` event.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from .llm_contract import OnToken

DONE = "[DONE]"


class PieceStream:
    """Hands the text generated so far to `on_token` piece by piece (see the module docstring)."""

    def __init__(self, on_token: OnToken | None, stops: Iterable[str] = ()) -> None:
        self.on_token = on_token
        self.stops = [s for s in stops if s]
        #: the text handed out so far (always a prefix of the call's final text)
        self.sent = ""

    def _visible(self, text: str) -> tuple[str, bool]:
        """What of `text` is certain to stay in the completion, and whether a stop string ended it."""
        for s in self.stops:                 # llama.cpp cuts at the first listed stop it finds
            if s in text:
                return text[: text.index(s)].strip(), True
        text = text.lstrip()
        hold = 0
        for s in self.stops:                 # a tail that may grow into a stop string
            for i in range(min(len(s), len(text)), 0, -1):
                if text.endswith(s[:i]):
                    hold = max(hold, i)
                    break
        return text[: len(text) - hold].rstrip(), False

    def feed(self, text: str) -> None:
        """`text` is everything generated so far (it only grows); hand out what is new and safe."""
        if self.on_token is None:
            return
        visible, _ = self._visible(text)
        self._emit(visible)

    def finish(self, text: str) -> None:
        """The call's final text: hand out what was not handed out yet."""
        if self.on_token is not None:
            self._emit(text)

    def _emit(self, visible: str) -> None:
        if len(visible) > len(self.sent) and visible.startswith(self.sent) and self.on_token:
            piece, self.sent = visible[len(self.sent):], visible
            self.on_token(piece)


# ---- server-sent events ------------------------------------------------------------------------
def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event carrying `data` (a JSON object, or `[DONE]`)."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {payload}\n\n".encode()


def chunk(completion_id: str, created: int, model: str, delta: dict[str, Any],
          finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
    """One `chat.completion.chunk` in OpenAI's shape (`extra`: usage, flowkit, ...)."""
    choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish_reason,
                              "logprobs": extra.pop("logprobs", None)}
    return {"id": completion_id, "object": "chat.completion.chunk", "created": created,
            "model": model, "choices": [choice], **extra}


def read_events(lines: Iterable[bytes]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a server-sent event stream, up to `[DONE]` (comments, event names and
    blank keep-alive lines are skipped; an event may span several `data:` lines)."""
    data: list[str] = []
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
            continue
        if line or not data:
            continue
        payload, data = "\n".join(data), []
        if payload.strip() == DONE:
            return
        event = json.loads(payload)
        if isinstance(event, dict):
            yield event
    if data and "\n".join(data).strip() != DONE:
        event = json.loads("\n".join(data))
        if isinstance(event, dict):
            yield event

"""`flowkit serve-model` refuses what its serial path would serve wrongly, and bounds its queue
(issue 47, finding 3).

Before: `logit_bias` with a key that is not a token id was a 500 with a traceback (llama-cpp-python
calls `int(key)`), a key past the vocabulary an IndexError, and "-1" silently biased the last token;
`n` was read by nobody (`n: 1000` served one choice, `n: 0` and `-1` answered 200); `messages: []`
answered 200; and nothing bounded the requests waiting for the model (300 queued, the next waited
over 60 s). The tests drive the middleware (`serve_model.ValidatedRequests`) with an app behind it
that answers at once, or holds every request until released (a model busy with the first).
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any

import pytest

from flowkit.runtime.serve_model import ValidatedRequests

N_CTX, N_VOCAB = 2048, 100
CHAT, COMPLETIONS = "/v1/chat/completions", "/v1/completions"


class Loose:
    """A stand-in for the library's request models: anything goes (the checks under test come
    before them)."""

    @staticmethod
    def model_validate(data: dict[str, Any]) -> None:
        """Accept every body."""


class Held:
    """The app behind the middleware: answers 200, after `release` when `hold` is set."""

    def __init__(self, hold: bool = False) -> None:
        self.released = asyncio.Event()
        if not hold:
            self.released.set()
        self.reached = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.reached += 1
        await receive()
        await self.released.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b'{"ok": true}'})


def middleware(app: Held, capacity: int = 1, max_queue: int = 64) -> ValidatedRequests:
    return ValidatedRequests(app, {CHAT: Loose, COMPLETIONS: Loose}, n_ctx=N_CTX,
                             n_vocab=N_VOCAB, capacity=capacity, max_queue=max_queue)


async def send_one(mw: ValidatedRequests, path: str,
                   body: dict[str, Any]) -> tuple[int, dict[bytes, bytes], dict[str, Any]]:
    """One POST through `mw`: (status, headers, JSON body)."""
    raw = json.dumps(body).encode()
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": raw, "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    await mw({"type": "http", "method": "POST", "path": path,
              "headers": [(b"content-length", str(len(raw)).encode())]}, receive, send)
    return sent[0]["status"], dict(sent[0]["headers"]), json.loads(sent[1]["body"])


def post(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, _, answer = asyncio.run(send_one(middleware(Held()), path, body))
    return status, answer


def chat(**extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "hi"}], **extra}


def assert_field_refused(status: int, answer: dict[str, Any], field: str) -> None:
    assert status == 400, answer
    assert answer["error"]["param"] == field and field in answer["error"]["message"], answer
    assert answer["error"]["type"] == "invalid_request_error"
    assert "Traceback" not in answer["error"]["message"]


# ---- logit_bias ---------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [{"abc": 1}, {"1.5": 1}, {"": 2}, {" 5": 1}, {"-1": 1},
                                  {str(N_VOCAB): 1}, {"99999999999999999999": 1}, {"٣": 1},
                                  {"5": "x"}, {"5": True}, [5], "5:1"])
def test_logit_bias_keys_must_be_token_ids_of_this_model(bias: Any) -> None:
    for path, body in ((CHAT, chat(logit_bias=bias)),
                       (COMPLETIONS, {"prompt": "hi", "logit_bias": bias})):
        assert_field_refused(*post(path, body), "logit_bias")


def test_logit_bias_with_token_ids_in_range_or_as_token_text_goes_on() -> None:
    assert post(CHAT, chat(logit_bias={"0": -100, str(N_VOCAB - 1): 2.5}))[0] == 200
    assert post(CHAT, chat(logit_bias={"hello": -5}, logit_bias_type="tokens"))[0] == 200
    assert post(CHAT, chat(logit_bias=None))[0] == 200


# ---- n, messages, min_p -------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, -1, 2, 1000, 1.5, "1", True])
def test_n_other_than_one_is_refused(n: Any) -> None:
    assert_field_refused(*post(CHAT, chat(n=n)), "n")
    assert_field_refused(*post(COMPLETIONS, {"prompt": "hi", "n": n}), "n")


def test_n_one_or_absent_goes_on() -> None:
    assert post(CHAT, chat(n=1))[0] == post(CHAT, chat())[0] == post(CHAT, chat(n=None))[0] == 200


@pytest.mark.parametrize("messages", [[], None])
def test_a_chat_without_messages_is_refused(messages: Any) -> None:
    assert_field_refused(*post(CHAT, {"messages": messages}), "messages")


@pytest.mark.parametrize("min_p", [-0.5, 1.5, 5])
def test_min_p_outside_0_to_1_is_refused(min_p: float) -> None:
    assert_field_refused(*post(CHAT, chat(min_p=min_p)), "min_p")


# ---- the queue ----------------------------------------------------------------------------------
def test_past_the_queue_bound_a_request_is_503_with_retry_after_at_once() -> None:
    async def scenario() -> None:
        app = Held(hold=True)
        mw = middleware(app, capacity=2, max_queue=3)
        waiting = [asyncio.create_task(send_one(mw, CHAT, chat())) for _ in range(5)]
        await asyncio.sleep(0.05)
        assert app.reached == 5                      # 2 served, 3 waiting: all let through
        loop = asyncio.get_running_loop()
        started = loop.time()
        status, headers, answer = await asyncio.wait_for(send_one(mw, CHAT, chat()), 2)
        assert status == 503 and loop.time() - started < 1.0
        assert int(headers[b"retry-after"]) >= 1
        assert answer["error"]["type"] == "unavailable_error" and answer["error"]["code"] == "queue_full"
        assert "5 requests" in answer["error"]["message"]
        assert app.reached == 5                      # the refused one never reached the model
        app.released.set()
        assert [(await w)[0] for w in waiting] == [200] * 5
        assert (await send_one(mw, CHAT, chat()))[0] == 200   # room again once answered

    asyncio.run(scenario())


def test_a_request_refused_before_the_model_does_not_take_a_place_in_the_queue() -> None:
    async def scenario() -> None:
        app = Held(hold=True)
        mw = middleware(app, capacity=1, max_queue=1)
        for _ in range(10):
            assert (await send_one(mw, CHAT, chat(n=0)))[0] == 400
        waiting = [asyncio.create_task(send_one(mw, CHAT, chat())) for _ in range(2)]
        await asyncio.sleep(0.05)
        assert app.reached == 2
        app.released.set()
        assert [(await w)[0] for w in waiting] == [200, 200]

    asyncio.run(scenario())

"""The slot scheduler of `flowkit serve-model --parallel N` on a fake model: admission into free
slots, a finished slot freed and reused, stop strings, max_tokens, end of generation, a prompt too
long for a slot, a client that goes away, a model that fails; and the token pick."""
from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

import numpy as np
import pytest

from flowkit.runtime.batch_sampling import Sampling, choose, log_probs
from flowkit.runtime.batch_slots import (
    Done,
    Entry,
    Event,
    Failed,
    Job,
    Piece,
    PromptTooLong,
    Scheduler,
    _whole_chars,
)

END = 0
WORDS = {END: b"", 1: b"Hel", 2: b"lo", 3: b" wor", 4: b"ld", 5: b"!", 6: "é".encode()}


class FakeModel:
    """Generates, for a prompt starting with token p, the script SCRIPTS[p] (then repeats its last
    token); checks that every token arrives at the position after the one before it, that a batch
    holds at most `n_batch` tokens, and that a sequence asks for logits only at its last prompt
    token and then at every generated one."""

    SCRIPTS = {100: [1, 2, 3, 4, END], 101: [5, 5, 5, 5, 5, 5, 5], 102: [END],
               103: [6, 1, 2, 3, 4, 5, END]}

    def __init__(self, n_slots: int = 2, n_ctx: int = 64, fail_at: int | None = None,
                 n_batch: int = 512) -> None:
        self.n_slots, self.n_ctx, self.n_batch = n_slots, n_ctx, n_batch
        self.seqs: dict[int, list[int]] = {}
        self.prompts: dict[int, int] = {}                # seq -> prompt length, once read
        self.prefills: list[tuple[int, int]] = []        # (slot, first prompt token)
        self.batches: list[list[Entry]] = []
        self.forgotten: list[int] = []
        self.fail_at = fail_at

    def _row(self, seq: int) -> np.ndarray:
        script = self.SCRIPTS[self.seqs[seq][0]]
        k = len(self.seqs[seq]) - self.prompts[seq]
        row = np.zeros(len(WORDS), dtype=np.float32)
        row[script[min(k, len(script) - 1)]] = 1.0
        return row

    def evaluate(self, entries: Sequence[Entry]) -> list[np.ndarray]:
        assert 0 < len(entries) <= self.n_batch
        if self.fail_at is not None and len(self.batches) == self.fail_at:
            raise RuntimeError("llama_decode returned 1")
        self.batches.append(list(entries))
        rows = []
        for seq, token, pos, logits in entries:
            if pos == 0:
                assert seq not in self.seqs, f"slot {seq} was not forgotten before reuse"
                self.seqs[seq] = []
                self.prefills.append((seq, token))
            assert pos == len(self.seqs[seq]), f"slot {seq}: position {pos}"
            self.seqs[seq].append(token)
            if seq not in self.prompts:
                if logits:
                    self.prompts[seq] = len(self.seqs[seq])
            else:
                assert logits, f"slot {seq}: a generated token without logits"
            if logits:
                rows.append(self._row(seq))
        return rows

    def forget(self, seq: int) -> None:
        self.forgotten.append(seq)
        self.seqs.pop(seq, None)
        self.prompts.pop(seq, None)

    def piece(self, token: int) -> bytes:
        return WORDS[token]

    def is_end(self, token: int) -> bool:
        return token == END


def _job(first: int, events: list[Event], n_prompt: int = 3, **kw: object) -> Job:
    return Job(tokens=[first] + [7] * (n_prompt - 1), emit=events.append, **kw)  # type: ignore[arg-type]


def _drain(sched: Scheduler, limit: int = 100) -> None:
    for _ in range(limit):
        if sched.load() == (0, 0):
            return
        sched.step()
    raise AssertionError("the scheduler did not finish")


def test_requests_fill_free_slots_and_wait_for_one() -> None:
    model = FakeModel(n_slots=2)
    sched = Scheduler(model)
    a: list[Event] = []
    b: list[Event] = []
    c: list[Event] = []
    for first, events, most in ((101, a, 3), (101, b, 3), (100, c, None)):
        sched.submit(_job(first, events, max_tokens=most))
    sched.step()
    assert model.prefills == [(0, 101), (1, 101)]      # both prompts read in one batch
    assert sched.load() == (2, 1)                      # the third waits for a slot
    sched.step()
    assert [e.seq for e in model.batches[1]] == [0, 1]  # both slots decoded in one batch
    _drain(sched)
    assert model.prefills[2] == (0, 100)               # slot 0 freed, then reused
    assert a[-1] == b[-1] == Done("!!!", "length", 3, 3, None)
    assert c[-1] == Done("Hello world", "stop", 3, 4, None)
    assert sorted(model.forgotten) == [0, 0, 1]


def test_end_of_generation_stops_and_is_not_counted() -> None:
    events: list[Event] = []
    sched = Scheduler(FakeModel())
    sched.submit(_job(102, events))
    _drain(sched)
    assert events == [Done("", "stop", 3, 0, None)]


def test_stop_string_cuts_the_text_and_pieces_never_pass_it() -> None:
    events: list[Event] = []
    sched = Scheduler(FakeModel())
    sched.submit(_job(100, events, stop=["!", "lo w"]))
    _drain(sched)
    done = events[-1]
    assert done == Done("Hel", "stop", 3, 3, None)     # cut before 'lo w'; 3 tokens generated
    pieces = "".join(e.text for e in events if isinstance(e, Piece))
    assert done.text.startswith(pieces)


def test_pieces_join_to_the_text_and_never_split_a_character() -> None:
    events: list[Event] = []
    sched = Scheduler(FakeModel())
    sched.submit(_job(103, events))
    _drain(sched)
    pieces = [e.text for e in events if isinstance(e, Piece)]
    assert pieces[0] == "é" and "".join(pieces) == "éHello world!"
    assert events[-1] == Done("éHello world!", "stop", 3, 6, None)


def test_max_tokens_and_a_full_context_end_with_length() -> None:
    events: list[Event] = []
    sched = Scheduler(FakeModel(n_ctx=8))
    sched.submit(_job(101, events, max_tokens=2))
    sched.submit(_job(101, events, n_prompt=5))         # no max_tokens: up to the slot's 8
    _drain(sched)
    done = [e for e in events if isinstance(e, Done)]
    assert done == [Done("!!", "length", 3, 2, None), Done("!!!", "length", 5, 3, None)]


def test_a_prompt_too_long_for_a_slot_is_refused() -> None:
    sched = Scheduler(FakeModel(n_ctx=8))
    with pytest.raises(PromptTooLong, match=r"Requested tokens \(8\) exceed context window of 8"):
        sched.submit(_job(101, [], n_prompt=8))
    assert sched.load() == (0, 0)


def test_a_client_that_goes_away_frees_its_slot_for_the_next() -> None:
    model = FakeModel(n_slots=1)
    sched = Scheduler(model)
    gone: list[Event] = []
    waiting: list[Event] = []
    first = _job(101, gone)
    queued_and_gone = _job(100, [])
    sched.submit(first)
    sched.submit(queued_and_gone)
    sched.submit(_job(100, waiting))
    sched.step()
    first.cancel()
    queued_and_gone.cancel()
    sched.step()
    assert model.forgotten == [0] and model.prefills == [(0, 101), (0, 100)]
    _drain(sched)
    assert not any(isinstance(e, Done) for e in gone)
    assert waiting[-1] == Done("Hello world", "stop", 3, 4, None)


def test_a_model_failure_fails_the_active_requests_and_frees_their_slots() -> None:
    model = FakeModel(n_slots=2, fail_at=1)
    sched = Scheduler(model)
    a: list[Event] = []
    b: list[Event] = []
    sched.submit(_job(101, a))
    sched.submit(_job(101, b))
    _drain(sched)
    assert isinstance(a[-1], Failed) and "llama_decode returned 1" in a[-1].message
    assert isinstance(b[-1], Failed) and sched.load() == (0, 0)
    assert sorted(model.forgotten) == [0, 1]


def test_logprobs_are_reported_per_token_when_asked() -> None:
    events: list[Event] = []
    sched = Scheduler(FakeModel())
    sched.submit(_job(100, events, sampling=Sampling(top_logprobs=2)))
    _drain(sched)
    done = events[-1]
    assert isinstance(done, Done) and done.logprobs is not None
    assert [e.token for e in done.logprobs] == [b"Hel", b"lo", b" wor", b"ld"]
    assert all(e.top[0][1] == e.logprob and len(e.top) == 2 for e in done.logprobs)


def test_greedy_is_the_first_argmax_and_sampling_repeats_with_its_seed() -> None:
    row = np.array([0.5, 2.0, 2.0, -1.0], dtype=np.float32)
    assert choose(row, Sampling(), np.random.default_rng(0)) == 1
    hot = Sampling(temperature=1.5, top_k=0, top_p=1.0, min_p=0.0, seed=7)
    draws = [choose(row, hot, np.random.default_rng(7)) for _ in range(5)]
    assert len(set(draws)) == 1
    many = {choose(row, hot, rng) for rng in [np.random.default_rng(7)] for _ in range(50)}
    assert many >= {0, 1, 2}                           # more than the argmax is drawn
    narrow = Sampling(temperature=1.0, top_k=2, seed=7)
    assert {choose(row, narrow, np.random.default_rng(s)) for s in range(30)} <= {1, 2}
    logp, top = log_probs(row, 1, 2)
    assert top[0] == (1, logp) and abs(np.exp([v for _, v in top]).sum() - 0.86) < 0.02


def test_whole_chars_backs_off_an_unfinished_character() -> None:
    data = "aé€".encode()                              # 1 + 2 + 3 bytes
    assert [_whole_chars(data, n) for n in range(7)] == [0, 1, 1, 3, 3, 3, 6]


def test_the_cli_and_the_engine_agree_on_the_most_slots() -> None:
    from flowkit.runtime.batch_engine import MAX_PARALLEL
    from service.cli import serve
    assert serve.MAX_PARALLEL == MAX_PARALLEL == 64


def test_requests_the_engine_cannot_serve_go_to_the_serial_app() -> None:
    from llama_cpp.server.types import CreateChatCompletionRequest as Request

    from flowkit.runtime.batch_routes import serial_reason
    messages = [{"role": "user", "content": "hi"}]
    flowkit_like = {"messages": messages, "repeat_penalty": 1.0, "temperature": 0.0}
    assert serial_reason(Request.model_validate(flowkit_like)) == ""
    assert serial_reason(Request.model_validate({"messages": messages})) == "repeat_penalty"
    assert serial_reason(Request.model_validate({**flowkit_like, "n": 2})) == "n"
    assert serial_reason(Request.model_validate({**flowkit_like, "grammar": "root ::= \"a\""})) \
        == "grammar"


def _per_seq(batch: list[Entry]) -> dict[int, list[Entry]]:
    out: dict[int, list[Entry]] = {}
    for entry in batch:
        out.setdefault(entry.seq, []).append(entry)
    return out


def test_several_prompts_are_read_in_one_batch_with_logits_at_their_last_tokens() -> None:
    model = FakeModel(n_slots=3)
    sched = Scheduler(model)
    events: list[list[Event]] = [[], [], []]
    for first, n_prompt, got in zip((100, 101, 103), (4, 6, 5), events):
        sched.submit(_job(first, got, n_prompt=n_prompt))
    sched.step()
    assert len(model.batches) == 1
    read = _per_seq(model.batches[0])
    assert {seq: [e.pos for e in es] for seq, es in read.items()} == \
        {0: [0, 1, 2, 3], 1: [0, 1, 2, 3, 4, 5], 2: [0, 1, 2, 3, 4]}
    assert [e.pos for e in model.batches[0] if e.logits] == [3, 5, 4]
    _drain(sched)
    assert [got[-1] for got in events] == [Done("Hello world", "stop", 4, 4, None),
                                           Done("!" * 58, "length", 6, 58, None),
                                           Done("éHello world!", "stop", 5, 6, None)]


def test_a_long_prompt_is_read_in_chunks_of_at_most_n_batch() -> None:
    model = FakeModel(n_slots=1, n_batch=8)
    sched = Scheduler(model)
    events: list[Event] = []
    sched.submit(_job(100, events, n_prompt=21))
    sched.step()
    sched.step()
    assert not events                                   # nothing picked before the last chunk
    sched.step()
    assert [len(b) for b in model.batches] == [8, 8, 5]   # 21 tokens, chunks of n_batch
    assert [e.pos for b in model.batches for e in b] == list(range(21))
    assert [e.pos for b in model.batches for e in b if e.logits] == [20]
    assert events == [Piece("Hel")]
    _drain(sched)
    assert events[-1] == Done("Hello world", "stop", 21, 4, None)


def test_a_generating_slot_advances_in_every_step_while_another_prompt_is_read() -> None:
    model = FakeModel(n_slots=2, n_batch=8)
    sched = Scheduler(model)
    short: list[Event] = []
    long: list[Event] = []
    sched.submit(_job(101, short, n_prompt=3, max_tokens=6))
    sched.step()                                        # the short prompt read, 1st token picked
    sched.submit(_job(100, long, n_prompt=30))
    steps_before = len(model.batches)
    while not any(isinstance(e, Done) for e in long):
        sched.step()
    reading = [b for b in model.batches[steps_before:] if any(e.seq == 1 and not e.logits
                                                              for e in b)]
    assert len(reading) >= 4                            # 30 tokens: over several steps
    generated = [e for b in reading for e in b if e.seq == 0]
    assert len(generated) == min(len(reading), 5)       # one token a step until max_tokens
    assert all(len(b) <= 8 for b in model.batches)
    assert short[-1] == Done("!!!!!!", "length", 3, 6, None)
    assert long[-1] == Done("Hello world", "stop", 30, 4, None)


def test_the_fewest_prompt_tokens_left_are_read_first() -> None:
    model = FakeModel(n_slots=2, n_batch=8)
    sched = Scheduler(model)
    long: list[Event] = []
    short: list[Event] = []
    sched.submit(_job(100, long, n_prompt=40))          # first come
    sched.submit(_job(101, short, n_prompt=4))
    sched.step()
    read = _per_seq(model.batches[0])
    assert [e.pos for e in read[1]] == [0, 1, 2, 3] and read[1][-1].logits
    assert [e.pos for e in read[0]] == [0, 1, 2, 3]     # the long one takes the rest of n_batch


@pytest.mark.parametrize(("n_prompt", "n_batch", "chunks"), [
    (17, 8, [8, 8, 1]),          # as a fresh call: the last token alone (17 % 8 == 1)
    (9, 8, [8, 1]),
    (1, 8, [1]),
    (10, 8, [8, 2]),             # never a last chunk of one token otherwise
])
def test_prompt_chunks_keep_the_fresh_calls_shape(n_prompt: int, n_batch: int,
                                                  chunks: list[int]) -> None:
    model = FakeModel(n_slots=1, n_batch=n_batch)
    sched = Scheduler(model)
    sched.submit(_job(102, [], n_prompt=n_prompt))
    _drain(sched)
    assert [len(b) for b in model.batches] == chunks


def test_a_chunk_never_leaves_one_token_before_the_prompts_end() -> None:
    from flowkit.runtime.batch_slots import _chunk
    rng = np.random.default_rng(0)
    for n_prompt in range(1, 40):
        last_alone = n_prompt % 8 == 1
        for _ in range(20):                              # budgets as other slots leave them
            read, chunks = 0, []
            while read < n_prompt:
                budget = int(rng.integers(0, 12))
                take = _chunk(n_prompt, read, budget, 8)
                assert 0 <= take <= budget
                if take:
                    chunks.append(take)
                    read += take
            if last_alone:                               # as a fresh call: the last one alone
                assert chunks[-1] == 1 and all(c >= 2 for c in chunks[:-1])
            else:
                assert all(c >= 2 for c in chunks)


def test_the_batching_routes_and_the_server_answer_errors_in_one_shape() -> None:
    import asyncio
    import json

    from flowkit.runtime import batch_routes, serve_model

    sent: list[Any] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(serve_model._send_error(send, 401, "no key", None, "authentication_error",
                                        "invalid_api_key"))
    asyncio.run(batch_routes.send_json(send, 400, batch_routes.error_body(
        "too long", "messages", code="context_length_exceeded")))
    starts, bodies = sent[0::2], [json.loads(m["body"]) for m in sent[1::2]]
    assert [s["status"] for s in starts] == [401, 400]
    assert bodies == [{"error": {"message": "no key", "type": "authentication_error",
                                 "param": None, "code": "invalid_api_key"}},
                      {"error": {"message": "too long", "type": "invalid_request_error",
                                 "param": "messages", "code": "context_length_exceeded"}}]
    first, second = (dict(s["headers"]) for s in starts)
    assert first[b"connection"] == b"close" and first[b"www-authenticate"] == b"Bearer"
    assert b"connection" not in second
    assert int(second[b"content-length"]) == len(sent[3]["body"])

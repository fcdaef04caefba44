"""The slot scheduler of `flowkit serve-model --parallel N` on a fake model: admission into free
slots, a finished slot freed and reused, stop strings, max_tokens, end of generation, a prompt too
long for a slot, a client that goes away, a model that fails; and the token pick."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from flowkit.runtime.batch_sampling import Sampling, choose, log_probs
from flowkit.runtime.batch_slots import (
    Done,
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
    token); checks that every token arrives at the position after the one before it."""

    SCRIPTS = {100: [1, 2, 3, 4, END], 101: [5, 5, 5, 5, 5, 5, 5], 102: [END],
               103: [6, 1, 2, 3, 4, 5, END]}

    def __init__(self, n_slots: int = 2, n_ctx: int = 64, fail_at: int | None = None) -> None:
        self.n_slots, self.n_ctx = n_slots, n_ctx
        self.seqs: dict[int, list[int]] = {}
        self.prompts: dict[int, int] = {}
        self.prefills: list[tuple[int, int]] = []        # (slot, first prompt token)
        self.batches: list[list[int]] = []               # the slots of each decode batch
        self.forgotten: list[int] = []
        self.fail_at = fail_at

    def _row(self, seq: int) -> np.ndarray:
        script = self.SCRIPTS[self.seqs[seq][0]]
        k = len(self.seqs[seq]) - self.prompts[seq]
        row = np.zeros(len(WORDS), dtype=np.float32)
        row[script[min(k, len(script) - 1)]] = 1.0
        return row

    def prefill(self, seq: int, tokens: Sequence[int]) -> np.ndarray:
        assert seq not in self.seqs, f"slot {seq} was not forgotten before reuse"
        self.seqs[seq], self.prompts[seq] = list(tokens), len(tokens)
        self.prefills.append((seq, tokens[0]))
        return self._row(seq)

    def decode(self, steps: Sequence[tuple[int, int, int]]) -> list[np.ndarray]:
        if self.fail_at is not None and len(self.batches) == self.fail_at:
            raise RuntimeError("llama_decode returned 1")
        self.batches.append([seq for seq, _, _ in steps])
        for seq, token, pos in steps:
            assert pos == len(self.seqs[seq]), f"slot {seq}: position {pos}"
            self.seqs[seq].append(token)
        return [self._row(seq) for seq, _, _ in steps]

    def forget(self, seq: int) -> None:
        self.forgotten.append(seq)
        self.seqs.pop(seq, None)

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
    assert model.prefills == [(0, 101), (1, 101)]
    assert sched.load() == (2, 1)                      # the third waits for a slot
    assert model.batches == [[0, 1]]                   # both slots decoded in one batch
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

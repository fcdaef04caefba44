"""The slot scheduler of `flowkit serve-model --parallel N` (continuous batching).

N slots share one model context, one sequence each. One thread (`Scheduler.run`) repeats a step:
1. a request whose client went away (`Job.cancel`) leaves its slot, or the queue, and the slot's
   sequence is removed from the model's memory;
2. queued requests are admitted into free slots, first come first served;
3. one batch of at most `SlotModel.n_batch` tokens is evaluated (`SlotModel.evaluate`): the last
   token of every slot that is generating, then prompt tokens of the slots still reading theirs,
   the fewest left first, in chunks shaped as a fresh serial call reads them (`_chunk`). A long
   prompt is read over several steps while the other slots go on generating, one token a step;
   a short prompt that arrives beside it is read first. Logits are asked for each generating
   slot's token and for a prompt's last token only; each such slot's next token is picked from
   its row.
A slot finishes as llama-cpp-python's `create_completion` finishes: an end-of-generation token
('stop', not counted), a stop string in the text (the text cut before the first of the request's
stop strings found, in the request's order; 'stop'), `max_tokens` tokens or the slot's context full
('length'). Its slot is then free for the next request in the queue.

`SlotModel` is the model side (`batch_engine.LlamaSlots`, or a fake in the tests). Results go to
each job's `emit` (called on the scheduler's thread): `Piece` (text that no stop string can still
take back), then `Done` or `Failed`.

Failures are kept to what they touch. A job whose admission or token pick raises (its sampling
numbers, its text) gets `Failed` and leaves its slot; a failed `evaluate` fails the jobs of that
batch. Either way the thread goes on with the others. Anything else that raises in a step (the
model's memory cannot be freed, a bug) stops the scheduler for good: `failure` says why, every job in
a slot or in the queue gets `Failed` with that reason, and `submit` raises `EngineStopped`, so no
request waits for a thread that is gone. Invariant: every job handed to `submit` gets exactly one
`Done` or `Failed`, unless it was cancelled first."""
from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import numpy as np

from .batch_sampling import Logits, Sampling, TokenLogprob, choose, log_probs, rng_for

log = logging.getLogger(__name__)


class Entry(NamedTuple):
    """One token of a batch: into sequence `seq` at `pos`; `logits`: its row is wanted."""

    seq: int
    token: int
    pos: int
    logits: bool


class SlotModel(Protocol):
    """One model context with `n_slots` sequences of `n_ctx` tokens each, evaluating at most
    `n_batch` tokens at a time."""

    n_slots: int
    n_ctx: int
    n_batch: int

    def evaluate(self, entries: Sequence[Entry]) -> list[Logits]:
        """Evaluate `entries` (several sequences, each's positions following what it holds) in one
        batch; a row of logits for each entry that asks for one, in order."""

    def forget(self, seq: int) -> None:
        """Remove sequence `seq` from the model's memory."""

    def piece(self, token: int) -> bytes:
        """The text of one generated token."""

    def is_end(self, token: int) -> bool:
        """Whether `token` ends generation (end of sequence, end of turn)."""


@dataclass(frozen=True)
class Piece:
    """More of the text: it follows the pieces before it."""

    text: str


@dataclass(frozen=True)
class Done:
    """The whole completion."""

    text: str
    finish_reason: str            # 'stop' | 'length'
    prompt_tokens: int
    completion_tokens: int
    logprobs: tuple[TokenLogprob, ...] | None


@dataclass(frozen=True)
class Failed:
    """The model failed while this request was in a slot (the request is not retried)."""

    message: str


Event = Piece | Done | Failed


class EngineStopped(RuntimeError):
    """The scheduler's thread has stopped (the message says why): no job can be served."""


class PromptTooLong(ValueError):
    """A prompt that does not fit one slot's context (a 400 for the client)."""

    def __init__(self, prompt_tokens: int, n_ctx: int) -> None:
        super().__init__(f"Requested tokens ({prompt_tokens}) exceed context window of {n_ctx} "
                         "(one slot's context: --n-ctx)")
        self.prompt_tokens, self.n_ctx = prompt_tokens, n_ctx


@dataclass
class Job:
    """One completion request: its prompt's tokens and how to generate."""

    tokens: list[int]
    emit: Callable[[Event], None]
    max_tokens: int | None = None         # None or <= 0: up to the slot's context
    stop: Sequence[str] = ()
    sampling: Sampling = field(default_factory=Sampling)
    cancelled: threading.Event = field(default_factory=threading.Event)

    def cancel(self) -> None:
        """The client went away: leave the queue or the slot at the next step."""
        self.cancelled.set()


@dataclass
class _Slot:
    seq: int
    job: Job
    limit: int                      # the most tokens this job may generate
    rng: np.random.Generator
    stops: list[bytes]
    hold: int                       # bytes kept back while a stop string could still complete
    tokens: list[int] = field(default_factory=list)
    data: bytes = b""
    sent: int = 0                   # bytes of `data` already handed out as pieces
    read: int = 0                   # prompt tokens evaluated so far
    pending: int = -1               # the token to feed at the next step (-1: none yet)
    logprobs: list[TokenLogprob] = field(default_factory=list)

    @property
    def position(self) -> int:
        return len(self.job.tokens) + len(self.tokens) - 1


class Scheduler:
    """Continuous batching over `model`'s slots; `submit` from any thread, `run` on one."""

    def __init__(self, model: SlotModel) -> None:
        self.model = model
        self._slots: list[_Slot | None] = [None] * model.n_slots
        self._queue: deque[Job] = deque()
        self._cond = threading.Condition()
        self._stopped = False
        self._failure: str | None = None

    @property
    def failure(self) -> str | None:
        """Why the scheduler stopped serving (see the module), or None while it serves."""
        with self._cond:
            return self._failure

    def submit(self, job: Job) -> None:
        """Queue `job`; PromptTooLong when its prompt leaves no room in a slot's context,
        EngineStopped when the scheduler has stopped."""
        if not job.tokens or len(job.tokens) >= self.model.n_ctx:
            raise PromptTooLong(len(job.tokens), self.model.n_ctx)
        with self._cond:
            if self._failure is not None:
                raise EngineStopped(self._failure)
            if self._stopped:
                raise EngineStopped("the batching engine was shut down")
            self._queue.append(job)
            self._cond.notify()

    def load(self) -> tuple[int, int]:
        """(active slots, queued requests) now."""
        with self._cond:
            return sum(s is not None for s in self._slots), len(self._queue)

    def stop(self) -> None:
        """Make `run` return after its current step."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def run(self) -> None:
        """Step until `stop`, sleeping while there is nothing to do; a step that raises stops the
        scheduler for good (`_abort`)."""
        while True:
            with self._cond:
                while not self._stopped and not self._queue and \
                        all(s is None for s in self._slots):
                    self._cond.wait()
                if self._stopped:
                    return
            try:
                self.step()
            except Exception as err:        # recorded, and every job is answered
                log.exception("the batching engine stopped")
                self._abort(f"the batching engine stopped: {type(err).__name__}: {err}")
                return

    def _abort(self, reason: str) -> None:
        """Record `reason` and answer every job in a slot or in the queue with it."""
        with self._cond:
            self._failure = reason
            queued, self._queue = list(self._queue), deque()
        jobs = [s.job for s in self._active()] + queued
        self._slots = [None] * len(self._slots)
        for job in jobs:
            job.emit(Failed(reason))

    def step(self) -> None:
        """One round: drop the cancelled, admit into free slots, evaluate one batch."""
        with self._cond:
            self._queue = deque(j for j in self._queue if not j.cancelled.is_set())
        for slot in self._active():
            if slot.job.cancelled.is_set():
                self._free(slot)
        for index, current in enumerate(self._slots):
            if current is not None:
                continue
            with self._cond:
                job = self._queue.popleft() if self._queue else None
            if job is None:
                break
            try:
                self._admit(index, job)
            except Exception as err:        # noqa: BLE001 - this job's own numbers: it fails alone
                self._slots[index] = None
                log.warning("a batched request failed at admission: %s", err)
                job.emit(Failed(f"the request could not be admitted: {err}"))
        entries, owners = self._compose()
        if not entries:
            return
        try:
            rows = self.model.evaluate(entries)
        except Exception as err:            # noqa: BLE001 - every waiting client must hear of it
            for slot in {id(s): s for s, _ in owners}.values():
                self._fail(slot, err)
            return
        for slot, row in zip([s for s, wants in owners if wants], rows):
            try:
                self._take(slot, row)
            except Exception as err:        # noqa: BLE001 - one request's token: it fails alone
                log.warning("a batched request failed in slot %d: %s", slot.seq, err)
                self._fail(slot, err)

    def _compose(self) -> tuple[list[Entry], list[tuple[_Slot, bool]]]:
        """This step's batch in slot order, and for each entry its slot and whether it asks for
        logits: every generating slot's token, then prompt chunks, the fewest left first, up to
        `n_batch` tokens in all (`_chunk` says how much of a prompt a step takes)."""
        active = self._active()
        n_batch = self.model.n_batch
        budget = n_batch - sum(s.pending >= 0 for s in active)
        chunk: dict[int, int] = {}
        reading = [s for s in active if s.pending < 0]
        for slot in sorted(reading, key=lambda s: len(s.job.tokens) - s.read):
            take = _chunk(len(slot.job.tokens), slot.read, budget, n_batch)
            if take:
                chunk[slot.seq] = take
                budget -= take
        entries: list[Entry] = []
        owners: list[tuple[_Slot, bool]] = []
        for slot in active:
            if slot.pending >= 0:
                entries.append(Entry(slot.seq, slot.pending, slot.position, True))
                owners.append((slot, True))
            elif slot.seq in chunk:
                prompt, first = slot.job.tokens, slot.read
                slot.read += chunk[slot.seq]
                for pos in range(first, slot.read):
                    last = pos == len(prompt) - 1
                    entries.append(Entry(slot.seq, prompt[pos], pos, last))
                    owners.append((slot, last))
        return entries, owners

    def _active(self) -> list[_Slot]:
        return [s for s in self._slots if s is not None]

    def _admit(self, index: int, job: Job) -> None:
        n_prompt = len(job.tokens)
        room = self.model.n_ctx - n_prompt
        limit = room if job.max_tokens is None or job.max_tokens <= 0 else \
            min(job.max_tokens, room)
        stops = [s.encode("utf-8") for s in job.stop if s]
        self._slots[index] = _Slot(seq=index, job=job, limit=limit, stops=stops,
                                   rng=rng_for(job.sampling.seed),
                                   hold=max((len(s) for s in stops), default=1) - 1)

    def _take(self, slot: _Slot, row: Logits) -> None:
        """Pick the slot's next token from `row` and finish the slot or keep it going."""
        job = slot.job
        token = choose(row, job.sampling, slot.rng)
        if self.model.is_end(token):
            self._finish(slot, "stop", slot.data)
            return
        slot.tokens.append(token)
        piece = self.model.piece(token)
        slot.data += piece
        if job.sampling.top_logprobs is not None:
            logprob, top = log_probs(row, token, job.sampling.top_logprobs)
            slot.logprobs.append(TokenLogprob(piece, logprob, top))
        for stop in slot.stops:
            if stop in slot.data:
                self._finish(slot, "stop", slot.data[:slot.data.index(stop)])
                return
        if len(slot.tokens) >= slot.limit or slot.position + 1 >= self.model.n_ctx:
            self._finish(slot, "length", slot.data)
            return
        slot.pending = token
        ready = _whole_chars(slot.data, len(slot.data) - slot.hold)
        if ready > slot.sent:
            job.emit(Piece(slot.data[slot.sent:ready].decode("utf-8", "ignore")))
            slot.sent = ready

    def _finish(self, slot: _Slot, reason: str, data: bytes) -> None:
        job = slot.job
        self._free(slot)
        job.emit(Done(data.decode("utf-8", "ignore"), reason, len(job.tokens), len(slot.tokens),
                      tuple(slot.logprobs) if job.sampling.top_logprobs is not None else None))

    def _fail(self, slot: _Slot, err: Exception) -> None:
        self._free(slot)
        slot.job.emit(Failed(f"the model failed in slot {slot.seq}: {err}"))

    def _free(self, slot: _Slot) -> None:
        """Remove the slot's sequence, then free the slot (if removing raises, the slot stays
        taken and `_abort` answers its job)."""
        self.model.forget(slot.seq)
        self._slots[slot.seq] = None


def _whole_chars(data: bytes, end: int) -> int:
    """`end` moved back, if need be, so that data[:end] does not end inside a UTF-8 character."""
    end = max(0, min(end, len(data)))
    for back in range(1, min(4, end) + 1):
        byte = data[end - back]
        if byte < 0x80:
            return end                               # ASCII: nothing cut
        if byte >= 0xC0:                             # a lead byte: is its character whole?
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return end if back >= need else end - back
    return end


def _chunk(n_prompt: int, read: int, budget: int, n_batch: int) -> int:
    """How many more tokens of a prompt of `n_prompt` (`read` of them evaluated) to put in a batch
    with room for `budget`: 0 (none this step) or a number that keeps the prompt's tokens on the
    kernels a fresh serial call uses. llama.cpp computes attention for a sequence with one token in
    a micro-batch on another path than for several, and the logits differ (tests/servers shows it).
    A fresh call reads the prompt in `n_batch` blocks: every token beside others of its sequence,
    but the last alone when `n_prompt % n_batch == 1`. So: such a last token is a chunk of its
    own; any other chunk has 2 or more tokens and leaves 0, or 2 or more, before that last."""
    tail = 1 if n_prompt % n_batch == 1 else 0
    body = n_prompt - tail                   # read in chunks of 2 or more
    if read >= body:
        return 1 if read < n_prompt and budget >= 1 else 0
    left = body - read
    take = min(left, budget)
    if left - take == 1:
        take -= 1
    return take if take >= 2 or take == left else 0

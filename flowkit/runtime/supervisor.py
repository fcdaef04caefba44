"""WorkerLLM: the default llama.cpp backend, the model in a supervised worker process.

The caller (studio, CLI, evaluation, tests) never loads llama.cpp itself. `WorkerLLM` starts
`python -m flowkit.runtime.worker` on the first call, talks to it with the same OpenAI-compatible
client used for external servers, and supervises it:

- the worker dies (native crash, SIGKILL, out of memory): the call in flight raises
  `ModelProcessError("the model process died: signal 11 (SIGSEGV) ...")`; the next call starts a
  fresh worker. Nothing else in the caller stops.
- the worker does not answer within the call's timeout (the flow's remaining `timeout_s`): it is
  killed and the call raises `ModelProcessError`; the next call starts a fresh one.
- the worker answers 503 (`server_busy`: every connection slot taken): the call is sent again after
  a short pause (doubling from 50 ms to 1 s) until the call's timeout; the worker is alive and
  is not stopped. Only a worker that stays busy that long fails the call.

Calls are serialised by a lock, as the in-process model's lock did. The worker's stderr goes to
`<log_dir>/model-worker.log`; its last lines are quoted when it dies.
"""
from __future__ import annotations

import json
import os
import secrets
import selectors
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..errors import LLMTimeout, LLMUnreachable, ModelProcessError
from .amx import signal_name
from .llama_cpp_backend import GGUFModel
from .llm_contract import Completion, LLMSettings, OnToken
from .openai_client import OpenAICompatibleLLM, ServerBusy

START_TIMEOUT_S = 300.0     # AMX probe + loading a large GGUF from a cold disk
BUSY_PAUSE_S = (0.05, 1.0)  # the first and the longest pause before asking a busy worker again
_T = TypeVar("_T")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def _build_supports_gpu_offload() -> bool:
    """Whether llama.cpp can put layers on a GPU here (`device.detect`, asked once per process)."""
    from . import device
    return device.supports_gpu_offload()


class WorkerLLM(GGUFModel):
    """llama.cpp behind a supervised worker process; the `LLM` protocol, like LlamaCppLLM."""

    #: the module run as the worker (`python -m`); tests serve a scripted model the same way
    worker_module = "flowkit.runtime.worker"

    def __init__(self, settings: LLMSettings, log_dir: Path | None = None) -> None:
        super().__init__(settings)
        self.log_path = Path(log_dir or tempfile.gettempdir()) / "model-worker.log"
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._client: OpenAICompatibleLLM | None = None
        self._finalizer: weakref.finalize | None = None
        #: the worker's ready line: port, pid, extra_bufts (+ reason), gpu_offload
        self.info: dict[str, Any] = {}
        #: how many workers were started after the first (crashes, kills, hangs)
        self.restarts = 0
        self._started_once = False
        self._released = False

    # ---- the LLM protocol (model_id, model_hash, n_ctx: GGUFModel) -------------------------
    @property
    def loaded(self) -> bool:
        """Whether a worker is up with the model loaded."""
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        """The worker's process id, while one runs."""
        return self._proc.pid if self.loaded and self._proc else None

    def gpu_offload_supported(self) -> bool:
        """Whether the installed llama.cpp build can offload layers to a GPU (asked in a child
        process, once per process; loads no model and starts no worker)."""
        if "gpu_offload" in self.info:
            return bool(self.info["gpu_offload"])
        return _build_supports_gpu_offload()

    def start(self) -> None:
        """Start the worker and wait until its model is loaded, asking it nothing (the studio's
        background load); a call made meanwhile waits for this same worker. Raises
        ModelProcessError when the model cannot load."""
        self._call(lambda c: None, START_TIMEOUT_S)

    def count_tokens(self, text: str) -> int:
        return self._call(lambda c: c.count_tokens(text), self.settings.request_timeout_s)

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None, timeout_s: float | None = None,
                 on_token: OnToken | None = None) -> Completion:
        """One completion by the worker; with `on_token`, streamed from it (server-sent events)
        piece by piece and returned whole, the same as without."""
        timeout = timeout_s if timeout_s is not None else self.settings.request_timeout_s
        # the worker refuses more than the context holds; the model in process clamps (same text)
        max_tokens = min(max_tokens, self.settings.n_ctx)
        return self._call(lambda c: c.complete(prompt, max_tokens=max_tokens, stop=stop,
                                               temperature=temperature, logprobs=logprobs,
                                               system=system, timeout_s=timeout,
                                               on_token=on_token), timeout)

    def token_logprobs(self, text: str) -> list[tuple[str, float]]:
        """Each token of `text` with its log-probability given the text before it (selective
        context's estimator), scored by the worker in one batched pass."""
        timeout = self.settings.request_timeout_s
        return self._call(lambda c: c.token_logprobs(text, timeout_s=timeout), timeout)

    def close(self) -> None:
        """Stop the worker (a later call starts a new one)."""
        with self._lock:
            if self._proc is not None:
                _stop(self._proc)
            self._proc, self._client = None, None

    def release(self) -> None:
        """Stop the worker for good, without waiting: now if no call is in flight, else as soon as
        that call returns. Later calls raise ModelProcessError. What the studio calls when it drops
        the workspace that owned this model (a cache clear, a settings change, a code reload)."""
        self._released = True
        self._stop_if_idle()

    @property
    def released(self) -> bool:
        return self._released

    def _stop_if_idle(self) -> None:
        if self._lock.acquire(blocking=False):      # busy: that call stops it when it returns
            try:
                if self._proc is not None:
                    _stop(self._proc)
                self._proc, self._client = None, None
            finally:
                self._lock.release()

    # ---- supervision ---------------------------------------------------------------------
    def _call(self, fn: Callable[[OpenAICompatibleLLM], _T], timeout: float) -> _T:
        try:
            return self._call_locked(fn, timeout)
        finally:
            if self._released:
                self._stop_if_idle()

    def _call_locked(self, fn: Callable[[OpenAICompatibleLLM], _T], timeout: float) -> _T:
        with self._lock:
            try:
                return self._until_not_busy(fn, timeout)
            except LLMUnreachable as err:
                raise self._lost(err) from err
            except LLMTimeout as err:
                proc = self._proc
                if proc is not None:
                    _stop(proc)
                self._proc, self._client = None, None
                raise ModelProcessError(
                    f"the model process did not answer within {timeout:g} s (the flow's timeout_s) "
                    "and was stopped; it starts again on the next call") from err

    def _until_not_busy(self, fn: Callable[[OpenAICompatibleLLM], _T], timeout: float) -> _T:
        """`fn` on the live worker's client, asked again after a pause while the worker answers
        503 (every slot taken, by clients with the token), until `timeout` has passed."""
        deadline = time.monotonic() + timeout
        pause, longest = BUSY_PAUSE_S
        while True:
            client = self._ensure()
            try:
                return fn(client)
            except ServerBusy as err:
                if time.monotonic() + pause >= deadline:
                    raise ModelProcessError(f"the model process stayed busy for {timeout:g} s "
                                            f"(it is still running): {err}") from err
                time.sleep(pause)
                pause = min(pause * 2, longest)

    def _lost(self, err: Exception) -> ModelProcessError:
        """The connection broke: say how the worker ended and forget it."""
        proc = self._proc
        self._proc, self._client = None, None
        if proc is None:
            return ModelProcessError(f"the model process is gone: {err}")
        try:
            code = proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            _stop(proc)
            return ModelProcessError(f"the model process stopped answering ({err}) and was "
                                     "stopped; it starts again on the next call")
        how = signal_name(-code) if code < 0 else f"exit code {code}"
        tail = self._log_tail()
        return ModelProcessError(f"the model process died: {how}; it starts again on the next call"
                                 + (f" (its last words: {tail})" if tail else ""))

    def _log_tail(self, lines: int = 3) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(line.strip() for line in text[-lines:] if line.strip())[:400]

    def _ensure(self) -> OpenAICompatibleLLM:
        """The client of a live worker, starting one if there is none (caller holds the lock)."""
        if self._released:
            raise ModelProcessError("the model was released (the studio's workspace was dropped: a "
                                    "cache clear, a settings change or a code reload); run again")
        if self._client is not None and self._proc is not None and self._proc.poll() is None:
            return self._client
        if self._proc is not None:
            _stop(self._proc)
        token = secrets.token_hex(16)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            proc = subprocess.Popen([sys.executable, "-m", self.worker_module],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                    env={**os.environ, "FLOWKIT_WORKER_TOKEN": token})
        finally:
            log.close()
        assert proc.stdin is not None
        settings = {k: getattr(self.settings, k) for k in self.settings.__dataclass_fields__}
        settings.update(model_path=str(self.path), in_process=True)
        proc.stdin.write((json.dumps(settings) + "\n").encode())
        proc.stdin.close()
        info = self._await_ready(proc)
        if self._started_once:
            self.restarts += 1
        self._started_once = True
        self._proc, self.info = proc, info
        if self._finalizer is not None:
            self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _stop, proc)
        self._client = OpenAICompatibleLLM(self.settings, base_url=f"http://127.0.0.1:{info['port']}/v1",
                                           token=token, model_id=self.model_id)
        self._client._tokenize_ok, self._client._tokenize_route = True, "/tokenize"
        return self._client

    def _await_ready(self, proc: subprocess.Popen[bytes]) -> dict[str, Any]:
        """Read the worker's ready line; a worker that exits or stays silent is an error."""
        assert proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + START_TIMEOUT_S
        buf = b""
        try:
            while b"\n" not in buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    _stop(proc)
                    raise ModelProcessError(f"the model process did not load {self.path.name} "
                                            f"within {START_TIMEOUT_S:g} s")
                if sel.select(timeout=min(left, 1.0)):
                    chunk = os.read(proc.stdout.fileno(), 65536)
                    if not chunk:
                        break
                    buf += chunk
                elif proc.poll() is not None:
                    break
        finally:
            sel.close()
        line = buf.split(b"\n", 1)[0]
        try:
            info = json.loads(line)
        except json.JSONDecodeError:
            info = None
        if isinstance(info, dict) and info.get("error"):
            _stop(proc)
            raise ModelProcessError(f"the model process could not load the model: {info['error']}")
        if not isinstance(info, dict) or not info.get("ready"):
            code = proc.wait(timeout=10) if proc.poll() is None else proc.returncode
            _stop(proc)
            how = signal_name(-code) if code and code < 0 else f"exit code {code}"
            raise ModelProcessError(f"the model process could not load {self.path}: {how}"
                                    f" ({self._log_tail() or 'no output'})")
        return info

"""The HTTP client for OpenAI-compatible LLM servers: flowkit's own model worker, llama.cpp's
`llama-server`, llama-cpp-python's server, vLLM, Ollama. Standard library only.

Calls `POST {base_url}/chat/completions`. Two optional extensions are used where a server offers
them and skipped where it does not:
- `POST {root}/tokenize` (llama.cpp server, flowkit's worker; vLLM takes `prompt`): exact token
  counts. Without it, counts are estimated at 4 characters a token.
- a `flowkit.prompt` field in the answer (flowkit's worker): the exact text the chat template
  produced, recorded in the trace. Without it, the trace records the messages as JSON.

With `on_token`, `complete` asks for `stream: true` and reads the server-sent events as they come
(`streaming.read_events`), handing each piece of text to the callback; it returns the same
`Completion` as without (the text joined from the pieces, the token counts of the last chunk's
`usage`). A server that answers a streamed request with one JSON body is read as such: its text
is handed out as one piece. A stream that ends without `usage` (llama-cpp-python's server, so
`flowkit serve-model` without `--parallel`, ignores `stream_options.include_usage`) is counted by
the client (`_stream_usage`): the prompt's tokens as the server counts them once its chat template
is applied (the same messages asked again, unstreamed, for one token: the prompt is in the
server's cache by then), the answer's by tokenizing its text (`count_tokens`); so a streamed call
records the tokens an unstreamed one does, not 0.
"""
from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import ContextOverflowError, LLMServerError, LLMTimeout, LLMUnreachable, ResourceError
from .llm_contract import Completion, LLMSettings, OnToken
from .streaming import PieceStream, read_events

_CONTEXT_WORDS = ("context", "too long", "exceed", "maximum")
_TOKENIZE_ROUTES = ("/tokenize", "/extras/tokenize")


class ServerBusy(LLMServerError):
    """The server answered 503: it is up but serves no more requests right now (the model
    worker: every connection slot is taken); asking again a little later may succeed."""


class OpenAICompatibleLLM:
    """One OpenAI-compatible server. `token` overrides settings.api_key (the worker's own secret)."""

    def __init__(self, settings: LLMSettings, timeout_s: float | None = None, *,
                 base_url: str | None = None, token: str | None = None,
                 model_id: str | None = None) -> None:
        url = base_url or settings.base_url
        if not url:
            raise ResourceError("the openai backend needs settings.base_url, e.g. http://host:8000/v1")
        self.settings = settings
        self.base_url = url.rstrip("/")
        self.model_id = model_id or settings.model_name or "server-model"
        self.model_hash = f"server:{self.base_url}:{self.model_id}"
        self.timeout_s = timeout_s or settings.request_timeout_s
        self._token = settings.api_key if token is None else token
        self._tokenize_ok: bool | None = None    # unknown until the first count
        self._tokenize_route = ""
        self._added_tokens: int | None = None   # what tokenizing adds to any text (a BOS)
        self._parallel: tuple[int | None] | None = None   # not asked yet
        self._parallel_lock = threading.Lock()

    def server_parallel(self) -> int | None:
        """The parallel slots the server reports (`runtime.server_parallel`), asked once (the
        threads of a concurrent evaluation all get the one answer)."""
        with self._parallel_lock:
            if self._parallel is None:
                from .server_parallel import server_parallel
                self._parallel = (server_parallel(self.base_url, self._token or ""),)
            return self._parallel[0]

    @property
    def n_ctx(self) -> int:
        return self.settings.n_ctx

    @property
    def _root(self) -> str:
        return self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url

    def _post(self, url: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """POST JSON and read JSON; server problems become typed errors that name the server."""
        with self._open(url, body, timeout_s) as resp:
            return dict(json.loads(resp.read()))

    @contextmanager
    def _open(self, url: str, body: dict[str, Any],
              timeout_s: float) -> Iterator[http.client.HTTPResponse]:
        """POST JSON and hand over the response to read; a problem while sending or reading
        becomes a typed error that names the server."""
        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as resp:
                yield resp
        except urllib.error.HTTPError as err:
            raise _http_error(url, err) from err
        except TimeoutError as err:
            raise LLMTimeout(f"LLM server {self.base_url} did not answer within {timeout_s:g} s") from err
        except (urllib.error.URLError, ConnectionError, http.client.HTTPException) as err:
            raise LLMUnreachable(f"LLM server {self.base_url} unreachable: {err}") from err
        except json.JSONDecodeError as err:
            raise LLMServerError(f"LLM server {self.base_url} sent something that is not JSON: {err}") from err

    def count_tokens(self, text: str) -> int:
        """Exact where the server tokenizes (llama.cpp, vLLM, flowkit's worker: `/tokenize`;
        llama-cpp-python: `/extras/tokenize`), else an estimate of 4 characters a token."""
        routes = [self._tokenize_route] if self._tokenize_route else \
            ([] if self._tokenize_ok is False else list(_TOKENIZE_ROUTES))
        for route in routes:
            try:
                data = self._post(self._root + route,
                                  {"content": text, "prompt": text, "input": text,
                                   "model": self.model_id, "add_special": True},
                                  min(self.timeout_s, 60.0))
            except LLMServerError:
                if self._tokenize_ok:      # it worked before: a real failure, not a missing route
                    raise
                continue
            tokens = data.get("tokens")
            if isinstance(tokens, list):
                self._tokenize_ok, self._tokenize_route = True, route
                return len(tokens)
        self._tokenize_ok = False
        return max(1, len(text) // 4)

    def token_logprobs(self, text: str, timeout_s: float | None = None) -> list[tuple[str, float]]:
        """Each token of `text` with its log-probability given the text before it, through the
        completions API's `echo` + `logprobs` (flowkit's worker, vLLM, llama-cpp-python started with
        logits_all). Raises LLMServerError where the server cannot score a prompt."""
        data = self._post(self.base_url + "/completions",
                          {"model": self.model_id, "prompt": text, "max_tokens": 1, "echo": True,
                           "logprobs": 1, "temperature": 0.0}, timeout_s or self.timeout_s)
        try:
            lp = data["choices"][0]["logprobs"]
            pairs = list(zip(lp["tokens"], lp["token_logprobs"]))
        except (KeyError, IndexError, TypeError) as err:
            raise LLMServerError(f"LLM server {self.base_url} did not return prompt logprobs "
                                 "(echo + logprobs)") from err
        out: list[tuple[str, float]] = []
        length = 0
        for tok, value in pairs:          # the echoed prompt, without what was generated after it
            if length >= len(text):
                break
            out.append((str(tok), float(value) if value is not None else 0.0))
            length += len(str(tok))
        return out

    def complete(self, prompt: str, *, max_tokens: int = 256, stop: list[str] | None = None,
                 temperature: float | None = None, logprobs: bool = False,
                 system: str | None = None, timeout_s: float | None = None,
                 on_token: OnToken | None = None) -> Completion:
        """One chat completion; with `on_token`, streamed (each piece of the text handed to it as
        it arrives) and returned whole, the same as without."""
        messages = ([{"role": "system", "content": system}] if system else []) + \
            [{"role": "user", "content": prompt}]
        body: dict[str, Any] = {"model": self.model_id, "messages": messages, "max_tokens": max_tokens,
                                "temperature": self.settings.temperature if temperature is None
                                else temperature, "seed": self.settings.seed,
                                # as the embedded model samples: no penalties (llama-cpp-python's
                                # server would otherwise apply repeat_penalty 1.1)
                                "repeat_penalty": 1.0, "frequency_penalty": 0.0,
                                "presence_penalty": 0.0}
        if stop:
            body["stop"] = stop
        if logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = 1     # some servers (llama-cpp-python's) send none without it
        t0 = time.perf_counter()
        pieces = PieceStream(on_token) if on_token is not None else None
        if pieces is not None:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
            data = self._stream(body, timeout_s or self.timeout_s, pieces)
        else:
            data = self._post(self.base_url + "/chat/completions", body, timeout_s or self.timeout_s)
        ms = (time.perf_counter() - t0) * 1000
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as err:
            raise LLMServerError(f"LLM server {self.base_url} answered without choices[0].message: "
                                 f"{str(data)[:200]}") from err
        usage = data.get("usage") or {}
        if pieces is not None and not usage:      # the time above is the answer's alone
            usage = self._stream_usage(body, text, timeout_s or self.timeout_s)
        lp = None
        if logprobs and choice.get("logprobs"):
            lp = [(str(c["token"]), float(c["logprob"]))
                  for c in choice["logprobs"].get("content") or []]
        sent = (data.get("flowkit") or {}).get("prompt")
        if pieces is not None:
            pieces.finish(text.strip())
        return Completion(prompt=sent if isinstance(sent, str) else json.dumps(messages, ensure_ascii=False),
                          text=text.strip(), prompt_tokens=int(usage.get("prompt_tokens", 0)),
                          completion_tokens=int(usage.get("completion_tokens", 0)), ms=ms,
                          finish_reason=choice.get("finish_reason") or "stop", logprobs=lp)


    def _stream_usage(self, body: dict[str, Any], text: str, timeout_s: float) -> dict[str, int]:
        """The token counts of a streamed answer whose server sent none: the prompt's from the
        same request unstreamed for one token (its `usage.prompt_tokens`: the prompt as the
        server's chat template renders it, which only the server knows; the prompt is already in
        its cache, so this costs about one token), the completion's by tokenizing `text` (less
        what tokenizing adds to any text: a BOS). Where the server cannot answer that request,
        the prompt is counted from the messages' text."""
        probe = {k: v for k, v in body.items()
                 if k not in ("stream", "stream_options", "logprobs", "top_logprobs")}
        probe["max_tokens"] = 1
        try:
            usage = self._post(self.base_url + "/chat/completions", probe,
                               min(timeout_s, 60.0)).get("usage") or {}
            prompt = int(usage.get("prompt_tokens") or 0)
        except (LLMServerError, ContextOverflowError, ValueError, TypeError):
            prompt = 0
        if prompt <= 0:
            prompt = self._count_text("\n".join(str(m["content"]) for m in body["messages"]))
        return {"prompt_tokens": prompt, "completion_tokens": self._count_text(text)}

    def _count_text(self, text: str) -> int:
        """The tokens of `text` alone (`count_tokens` less the tokens tokenizing adds to any
        text, asked once); 0 for no text."""
        if not text:
            return 0
        n = self.count_tokens(text)
        if self._tokenize_ok and self._added_tokens is None:
            try:
                self._added_tokens = self.count_tokens("")
            except LLMServerError:
                self._added_tokens = 0
        return max(1, n - (self._added_tokens or 0)) if self._tokenize_ok else n

    def _stream(self, body: dict[str, Any], timeout_s: float, pieces: PieceStream) -> dict[str, Any]:
        """A streamed chat completion read event by event, assembled into the shape of a whole
        answer (`choices[0].message`, `usage`, `flowkit`); `pieces` hands out the text as it
        comes. `timeout_s` bounds the whole call, as it bounds a call that is
        not streamed."""
        url = self.base_url + "/chat/completions"
        deadline = time.monotonic() + timeout_s
        text: list[str] = []
        lp: list[dict[str, Any]] = []
        final: dict[str, Any] = {}
        finish: str | None = None
        with self._open(url, body, timeout_s) as resp:
            if "text/event-stream" not in (resp.headers.get("Content-Type") or ""):
                return dict(json.loads(resp.read()))     # a server that does not stream
            try:
                for event in read_events(resp):
                    if "error" in event:
                        raise _stream_error(url, event["error"])
                    for choice in event.get("choices") or []:
                        piece = (choice.get("delta") or {}).get("content")
                        if piece:
                            text.append(piece)
                            pieces.feed("".join(text))
                        lp.extend((choice.get("logprobs") or {}).get("content") or [])
                        finish = choice.get("finish_reason") or finish
                    for key in ("usage", "flowkit"):
                        if event.get(key):
                            final[key] = event[key]
                    if time.monotonic() > deadline:
                        raise TimeoutError
            except json.JSONDecodeError as err:
                raise LLMServerError(f"LLM server {self.base_url} sent an event that is not "
                                     f"JSON: {err}") from err
        final["choices"] = [{"message": {"role": "assistant", "content": "".join(text)},
                             "finish_reason": finish or "stop",
                             "logprobs": {"content": lp} if lp else None}]
        return final


def _stream_error(url: str, detail: Any) -> LLMServerError | ContextOverflowError:
    """An error event in a stream as the typed error the same answer without streaming gives."""
    message = str(detail.get("message") if isinstance(detail, dict) else detail)
    kind = str(detail.get("type", "")) if isinstance(detail, dict) else ""
    code = detail.get("code", "") if isinstance(detail, dict) else ""
    if kind == "exceed_context_size_error":
        return ContextOverflowError(message)
    return LLMServerError(f"LLM server {url} answered HTTP {code or 500}: {message[:500]}")


def _http_error(url: str, err: urllib.error.HTTPError) -> LLMServerError | ContextOverflowError:
    """An HTTP error answer as a typed error; a context-length complaint is a ContextOverflowError."""
    try:
        payload = json.loads(err.read() or b"{}")
    except (json.JSONDecodeError, OSError):
        payload = {}
    detail = payload.get("error") if isinstance(payload, dict) else None
    message = (detail.get("message") if isinstance(detail, dict) else detail) or err.reason
    kind = detail.get("type", "") if isinstance(detail, dict) else ""
    text = str(message)
    if err.code == 503:
        return ServerBusy(f"LLM server {url} is busy (HTTP 503): {text[:500]}")
    if err.code == 400 and ("context" in kind or
                            ("context" in text.lower() and any(w in text.lower() for w in _CONTEXT_WORDS))):
        return ContextOverflowError(text)
    return LLMServerError(f"LLM server {url} answered HTTP {err.code}: {text[:500]}")

"""How many requests an OpenAI-compatible server says it serves at once (its parallel slots).

Asked once before a concurrent evaluation, so the evaluation can record it beside its own
concurrency. Read, in this order, from what a server offers:
- the response header `x-flowkit-parallel` of `GET {base_url}/models` (`flowkit serve-model`);
- a `parallel` number in that answer's body: top level, under `flowkit`, or on a model entry
  (`data[i].parallel` or `data[i].meta.parallel`);
- `total_slots` of llama.cpp's `GET {root}/props` (`llama-server --parallel N`).
None when the server says nothing of it (llama-cpp-python, vLLM) or cannot be asked; the probe
never raises, since it only decides what the report says.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

HEADER = "x-flowkit-parallel"


def _get(url: str, token: str, timeout_s: float) -> tuple[dict[str, str], Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(url, headers=headers, method="GET")
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        head = {k.lower(): v for k, v in resp.headers.items()}
        try:
            body = json.loads(resp.read() or b"null")
        except json.JSONDecodeError:
            body = None
        return head, body


def _positive(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n >= 1 else None


def _from_models(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    own = body.get("flowkit")
    for value in (body.get("parallel"), own.get("parallel") if isinstance(own, dict) else None):
        if _positive(value):
            return _positive(value)
    for model in body.get("data") or []:
        if not isinstance(model, dict):
            continue
        meta = model.get("meta")
        for value in (model.get("parallel"), meta.get("parallel") if isinstance(meta, dict) else None):
            if _positive(value):
                return _positive(value)
    return None


def server_parallel(base_url: str, token: str = "", timeout_s: float = 5.0) -> int | None:
    """The server's parallel slots as it reports them (see the module), or None."""
    base = base_url.rstrip("/")
    try:
        head, body = _get(base + "/models", token, timeout_s)
    except (OSError, urllib.error.URLError, ValueError):
        return None
    found = _positive(head.get(HEADER)) or _from_models(body)
    if found:
        return found
    root = base[:-3] if base.endswith("/v1") else base
    try:
        _, props = _get(root + "/props", token, timeout_s)
    except (OSError, urllib.error.URLError, ValueError):
        return None
    return _positive(props.get("total_slots")) if isinstance(props, dict) else None

"""Keys that describe themselves: `KEY_PARTS` agrees with the key each backend actually builds
(llama.cpp in this process, the supervised worker, an OpenAI-compatible server) and with the
call parts the run context keys, and a prompt format keeps its version through edits to its
comments and docstrings."""
from __future__ import annotations

import inspect
import types
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

import flowkit.context as context_module
from flowkit.runtime import device, prompt_formats
from flowkit.runtime.completion_cache import (
    CALL_PARTS,
    IDENTITIES,
    KEY_PARTS,
    LlamaCppIdentity,
    MemoryCompletionCache,
    ServerIdentity,
    call_key,
    model_identity,
    prompt_format,
)
from flowkit.runtime.llm import LlamaCppLLM, LLMSettings
from flowkit.runtime.openai_client import OpenAICompatibleLLM
from flowkit.runtime.supervisor import WorkerLLM
from flowkit.testing import FakeLLM, fake_resources
from flowkit.testing.gguf import write_gguf

ROOT = Path(__file__).resolve().parents[2]


def _words(record: type[LlamaCppIdentity] | type[ServerIdentity]) -> dict[str, str]:
    return {f.name: str(f.metadata["words"]) for f in fields(record)}


@pytest.fixture
def on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plan the llama.cpp backends for a CPU without probing the build in a child process."""
    monkeypatch.setattr(device, "detect", lambda: device.Device(offload=False))


def _server(slots: int | None) -> OpenAICompatibleLLM:
    llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url="http://host:8000/v1/",
                                          model_name="qwen"))
    llm.server_parallel = lambda: slots        # type: ignore[method-assign]  # no server asked
    return llm


@pytest.mark.usefixtures("on_cpu")
@pytest.mark.parametrize("backend", ["in_process", "worker", "server"])
def test_key_parts_describe_the_key_each_backend_builds(backend: str, tmp_path: Path) -> None:
    gguf = str(write_gguf(tmp_path / "m.gguf"))
    llm: Any
    record: type[LlamaCppIdentity] | type[ServerIdentity]
    if backend == "in_process":
        llm, record = LlamaCppLLM(LLMSettings(model_path=gguf, in_process=True)), LlamaCppIdentity
    elif backend == "worker":
        llm, record = WorkerLLM(LLMSettings(model_path=gguf), log_dir=tmp_path), LlamaCppIdentity
    else:
        llm, record = _server(4), ServerIdentity
    identity = model_identity(llm)
    assert identity is not None
    words = _words(record)
    # every field of the key is one the record describes, and every described field is in it
    assert set(identity) == set(words), backend
    assert identity["backend"] == {LlamaCppIdentity: "llama_cpp", ServerIdentity: "openai"}[record]
    assert {words[name] for name in identity} <= set(KEY_PARTS)
    assert call_key(identity, "complete", prompt="Q") != call_key(
        {**identity, "prompt_format": "other"}, "complete", prompt="Q")


def test_a_server_key_names_its_url_and_model_and_slots_only_when_batching() -> None:
    identity = model_identity(_server(4))
    assert identity is not None
    assert (identity["base_url"], identity["model"], identity["parallel"]) == \
        ("http://host:8000/v1", "qwen", 4)
    assert {"server base_url", "server model name", "server parallel slots"} <= set(KEY_PARTS)
    serial = model_identity(_server(1))
    assert serial is not None and set(serial) == set(_words(ServerIdentity)) - {"parallel"}


def test_key_parts_list_exactly_what_the_records_and_calls_hold() -> None:
    described = {w for record in IDENTITIES for w in _words(record).values()}
    assert set(KEY_PARTS) == described | {"call kind"} | set(CALL_PARTS.values())
    assert len(KEY_PARTS) == len(set(KEY_PARTS))


class _ScoringLLM(FakeLLM):
    """A fake that can also score a prompt (the run context's third keyed call)."""

    def token_logprobs(self, text: str) -> list[tuple[str, float]]:
        return [(w, -0.1) for w in text.split()]


def test_every_call_part_the_run_context_keys_is_described(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, set[str]]] = []

    def spy(identity: dict[str, Any], kind: str, **call: object) -> str:
        seen.append((kind, set(call)))
        return call_key(identity, kind, **call)

    monkeypatch.setattr(context_module, "call_key", spy)
    llm = _ScoringLLM(default="Tessel")
    ctx = context_module.RunContext(fake_resources(llm), "test", "gen", 1,
                                    cache=MemoryCompletionCache(), run_id="r1")
    ctx.llm.complete("Q?", max_tokens=8, stop=["\n"], system="be brief")
    ctx.llm.count_tokens("Q?")
    ctx.llm.token_logprobs("Q? Tessel")
    assert {kind for kind, _ in seen} == {"complete", "tokens", "logprobs"}
    for kind, parts in seen:
        assert parts <= CALL_PARTS.keys(), kind


def test_a_call_part_without_words_is_refused() -> None:
    with pytest.raises(TypeError, match="top_p"):
        call_key({"backend": "fake"}, "complete", prompt="Q", top_p=0.9)


def test_key_parts_are_defined_once() -> None:
    """No other module keeps its own list of the key's parts (the CLI imports KEY_PARTS)."""
    hand_copies = [p for top in ("flowkit", "service", "storage", "studio", "pages")
                   for p in (ROOT / top).rglob("*.py")
                   if p.name != "completion_cache.py"
                   and ("KEY_PARTS =" in (text := p.read_text(encoding="utf-8"))
                        or '"model file sha256"' in text)]
    assert hand_copies == []


def _formats_edited(*edits: tuple[str, str]) -> types.ModuleType:
    """A fresh copy of `prompt_formats` with each (old, new) text edit made to its source."""
    source = inspect.getsource(prompt_formats)
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new, 1)
    module = types.ModuleType("prompt_formats_edited")
    exec(compile(source, "prompt_formats_edited.py", "exec"), module.__dict__)
    return module


def test_editing_a_prompt_formats_comments_and_docstrings_keeps_its_version() -> None:
    version = prompt_formats.format_version()
    assert prompt_format() == version
    edited = _formats_edited(
        ('"""Prompt formats:', '"""Prompt formats (edited):'),
        ('"""Plain completion for a base model', '"""Plain completion (edited) for a base model'),
        ('"""The GGUF\'s own chat template', '"""The edited GGUF\'s own chat template'),
        ("    parts = [system.strip()]", "    # an added comment\n    parts = [system.strip()]"),
        ("#: The cue that ends an answer prompt", "#: The edited cue that ends an answer prompt"))
    assert edited.format_version() == version
    # what a prompt holds, or the version raised by hand, does change it
    assert _formats_edited(("Lake Orin is a reservoir", "Lake Orin is a lake")).format_version() \
        != version
    bumped = f"PROMPT_FORMAT_VERSION = {prompt_formats.PROMPT_FORMAT_VERSION + 1}"
    assert _formats_edited((f"PROMPT_FORMAT_VERSION = {prompt_formats.PROMPT_FORMAT_VERSION}",
                            bumped)).format_version() != version

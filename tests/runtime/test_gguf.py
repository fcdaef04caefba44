"""Model files are checked before llama.cpp sees them: a missing, foreign or truncated GGUF gives a
clear ResourceError naming the file, never a traceback or a native crash."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowkit.errors import ModelProcessError, ResourceError
from flowkit.runtime.gguf import inspect_gguf
from flowkit.runtime.llm import LLMSettings, default_model_path, resolve_model_path
from flowkit.runtime.models import packaged_path
from flowkit.runtime.supervisor import WorkerLLM
from flowkit.testing.gguf import build_gguf, write_gguf


def test_the_packaged_models_pass_and_report_their_facts() -> None:
    info = inspect_gguf(packaged_path("smollm2-135m"))
    assert info.version == 3 and info.architecture == "llama" and info.tensors > 100
    assert info.has_chat_template and info.context_length == 8192
    assert info.data_offset < info.size_bytes
    gemma = inspect_gguf(packaged_path("gemma3-270m"))        # a base model: no chat template
    assert gemma.architecture == "gemma3" and not gemma.has_chat_template
    assert inspect_gguf(default_model_path()).path == default_model_path()


def test_a_small_written_file_passes(tmp_path: Path) -> None:
    info = inspect_gguf(write_gguf(tmp_path / "m.gguf", tensors=3, chat_template="{{ x }}"))
    assert (info.tensors, info.name, info.has_chat_template) == (3, "tiny test model", True)
    assert info.context_length == 2048
    assert inspect_gguf(write_gguf(tmp_path / "b.gguf")).has_chat_template is False


def test_every_cut_of_a_file_is_refused_as_cut_short(tmp_path: Path) -> None:
    raw = build_gguf(tensors=2, floats=16)
    for cut in range(0, len(raw) - 1):
        if cut in (0, 1, 2, 3):
            continue                              # too short to hold the magic: 'not a GGUF file'
        p = tmp_path / "cut.gguf"
        p.write_bytes(raw[:cut])
        # the last tensor's data is still partly there in the final bytes: only a load can tell
        if cut >= len(raw) - 16 * 4 + 1:
            continue
        with pytest.raises(ResourceError, match="is cut short") as err:
            inspect_gguf(p)
        assert str(p) in str(err.value)


@pytest.mark.parametrize(("raw", "words"), [
    (b"", "not a GGUF file"),
    (b"PK\x03\x04 a zip file", "not a GGUF file"),
    (b"GGUF" + struct.pack("<I", 1) + b"\0" * 16, "GGUF version 1"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 2**62), "cut short"),          # claims 2^62 pairs
    (b"GGUF" + struct.pack("<IQQ", 3, 2**62, 0), "cut short"),          # claims 2^62 tensors
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2**63) + b"k", "cut short"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k" + struct.pack("<I", 77),
     "not a valid GGUF file: unknown metadata value type 77"),
])
def test_foreign_and_hostile_headers_are_refused_quickly(tmp_path: Path, raw: bytes,
                                                         words: str) -> None:
    p = tmp_path / "bad.gguf"
    p.write_bytes(raw)
    with pytest.raises(ResourceError, match=words):
        inspect_gguf(p)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ResourceError, match="model file not found: .*nope.gguf"):
        resolve_model_path(LLMSettings(model_path=str(tmp_path / "nope.gguf")))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_mutated_files_give_info_or_a_resource_error_only(tmp_path: Path, data: st.DataObject) -> None:
    raw = bytearray(build_gguf(tensors=2, floats=8, chat_template="t"))
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.one_of(st.none(), st.integers(0, len(raw))))
    p = tmp_path / "fuzz.gguf"
    p.write_bytes(bytes(raw if cut is None else raw[:cut]))
    try:
        info = inspect_gguf(p)
    except ResourceError as err:
        assert str(p) in str(err)
    else:
        assert info.size_bytes == p.stat().st_size


def test_a_truncated_model_in_settings_fails_before_any_worker_starts(tmp_path: Path) -> None:
    real = packaged_path("smollm2-135m")
    cut = tmp_path / "half.gguf"
    with real.open("rb") as f:
        cut.write_bytes(f.read(real.stat().st_size // 2))
    with pytest.raises(ResourceError, match=r"half.gguf is cut short: its tensor data needs"):
        WorkerLLM(LLMSettings(model_path=str(cut)), log_dir=tmp_path)


def test_a_file_llama_cpp_refuses_is_one_clear_line_from_the_worker(tmp_path: Path) -> None:
    """A header that passes the check but that llama.cpp cannot load (no real weights): the worker
    reports llama.cpp's reason in one line; no traceback text reaches the user."""
    model = write_gguf(tmp_path / "tiny.gguf")
    llm = WorkerLLM(LLMSettings(model_path=str(model), n_ctx=512), log_dir=tmp_path)
    try:
        with pytest.raises(ModelProcessError) as err:
            llm.complete("hello", max_tokens=2)
        msg = str(err.value)
        assert "could not load the model" in msg and "tiny.gguf" in msg
        assert "Traceback" not in msg and 'File "' not in msg
    finally:
        llm.close()

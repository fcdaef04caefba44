"""A tiny GGUF file writer for tests: valid headers llama.cpp's layout rules accept (no real model).

`write_gguf(path, tensors=2)` writes a version-3 file with a few metadata pairs (an architecture,
a name, a string-array vocabulary, optionally a chat template) and `tensors` f32 tensors of
`floats` values each; `cut=N` keeps only the first N bytes (a truncated copy).
"""
from __future__ import annotations

import struct
from pathlib import Path

ALIGN = 32


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _kv_str(key: str, value: str) -> bytes:
    return _s(key) + struct.pack("<I", 8) + _s(value)


def build_gguf(tensors: int = 2, floats: int = 64, chat_template: str | None = None,
               vocab: int = 50) -> bytes:
    """The bytes of a small valid GGUF v3 file."""
    kvs = [_kv_str("general.architecture", "llama"), _kv_str("general.name", "tiny test model"),
           _s("llama.context_length") + struct.pack("<I", 4) + struct.pack("<I", 2048),
           _s("tokenizer.ggml.tokens") + struct.pack("<I", 9) + struct.pack("<IQ", 8, vocab)
           + b"".join(_s(f"tok{i}") for i in range(vocab))]
    if chat_template is not None:
        kvs.append(_kv_str("tokenizer.chat_template", chat_template))
    head = b"GGUF" + struct.pack("<IQQ", 3, tensors, len(kvs)) + b"".join(kvs)
    nbytes = floats * 4
    infos = b"".join(_s(f"t{i}.weight") + struct.pack("<I", 1) + struct.pack("<Q", floats)
                     + struct.pack("<I", 0) + struct.pack("<Q", i * nbytes) for i in range(tensors))
    body = head + infos
    pad = (-len(body)) % ALIGN
    data = b"".join(struct.pack(f"<{floats}f", *([float(i)] * floats)) for i in range(tensors))
    return body + b"\0" * pad + data


def write_gguf(path: str | Path, tensors: int = 2, floats: int = 64,
               chat_template: str | None = None, cut: int | None = None) -> Path:
    """Write build_gguf(...) to `path`, cut to its first `cut` bytes when given."""
    raw = build_gguf(tensors=tensors, floats=floats, chat_template=chat_template)
    p = Path(path)
    p.write_bytes(raw if cut is None else raw[:cut])
    return p

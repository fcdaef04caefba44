"""Check a GGUF model file before anything loads it: a clear error instead of a native failure.

`inspect_gguf(path)` reads the header, the metadata and the tensor table (never the weights) and
raises `ResourceError` naming the file and what is wrong with it: not a GGUF file, a version this
reader does not know, a header or metadata cut short, or tensor data that ends past the end of the
file (a truncated download or copy). It returns the few facts the studio shows about a model.

The layout read here is GGUF versions 2 and 3 (little-endian): magic ``GGUF``, version (u32),
tensor count (u64), metadata count (u64), the metadata pairs, the tensor infos, then the tensor data
at the next multiple of ``general.alignment`` (32 unless set).
"""
from __future__ import annotations

import hashlib
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import ResourceError

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 8                      # ggml tensors have at most 4 dims; allow some slack
_SCALARS: dict[int, str] = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                            10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_SHAPE = ("context_length", "block_count", "embedding_length", "attention.head_count",
          "attention.head_count_kv", "attention.key_length", "attention.value_length")
_SHAPE_KEYS = tuple(f".{k}" for k in _SHAPE)


@dataclass(frozen=True)
class GGUFInfo:
    """What the header of a GGUF file says (the weights themselves are not read)."""

    path: Path
    version: int
    size_bytes: int
    tensors: int
    architecture: str
    name: str
    size_label: str
    has_chat_template: bool
    context_length: int | None
    data_offset: int
    #: the model's shape (`<arch>.block_count` ...; None where the file does not say): what the
    #: offload plan (layers) and the memory estimate (KV cache) are computed from
    block_count: int | None = None
    embedding_length: int | None = None
    head_count: int | None = None
    head_count_kv: int | None = None
    key_length: int | None = None
    value_length: int | None = None


class _Truncated(Exception):
    """Internal: the file ended inside a structure."""


class _Reader:
    """Reads the file front to back through a buffer that grows in large reads (the metadata of a
    model holds ~100k short strings; reading them one by one from the file is slow)."""

    CHUNK = 4 << 20

    def __init__(self, f: IO[bytes], size: int) -> None:
        self.f, self.size = f, size
        self.buf = b""
        self.pos = 0                                   # position in the file == in buf

    def _need(self, n: int) -> None:
        if n < 0 or self.pos + n > self.size:
            raise _Truncated
        if self.pos + n > len(self.buf):
            want = max(self.pos + n - len(self.buf), self.CHUNK)
            self.f.seek(len(self.buf))
            self.buf += self.f.read(want)
            if self.pos + n > len(self.buf):
                raise _Truncated

    def take(self, n: int) -> bytes:
        self._need(n)
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def skip(self, n: int) -> None:
        if n < 0 or self.pos + n > self.size:
            raise _Truncated
        self.pos += n

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self, keep: bool = True) -> str:
        n = self.scalar("<Q")
        if not keep:
            self.skip(n)
            return ""
        return self.take(n).decode("utf-8", errors="replace")

    def value(self, vtype: int, keep: bool) -> Any:
        if vtype in _SCALARS:
            return self.scalar(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string(keep)
        if vtype == _ARRAY:
            itype, count = self.scalar("<I"), self.scalar("<Q")
            if itype in _SCALARS:                       # fixed-size items: skip them in one seek
                self.skip(count * struct.calcsize(_SCALARS[itype]))
                return None
            if count > self.size:                       # each item takes at least one byte
                raise _Truncated
            if itype == _STRING:                        # the vocabulary: ~50k strings, skipped fast
                for _ in range(count):
                    self._need(8)
                    self.pos += 8 + struct.unpack_from("<Q", self.buf, self.pos)[0]
                    if self.pos > self.size:
                        raise _Truncated
                return None
            for _ in range(count):
                self.value(itype, keep=False)
            return None
        raise ValueError(f"unknown metadata value type {vtype}")


def inspect_gguf(path: str | Path) -> GGUFInfo:
    """Read and check a GGUF file's header and tensor table; raise ResourceError naming the
    file and the problem (missing, not GGUF, unknown version, cut short) if it cannot load."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ResourceError(f"model file not found: {p} (settings: model_path)")
    size = p.stat().st_size
    try:
        with p.open("rb") as f:
            return _parse(p, _Reader(f, size), size)
    except _Truncated:
        raise ResourceError(f"model file {p} is cut short: it ends inside its header "
                            f"({size:,} bytes); copy or download it again") from None
    except (ValueError, UnicodeDecodeError, struct.error) as err:
        raise ResourceError(f"model file {p} is not a valid GGUF file: {err}") from None
    except OSError as err:
        raise ResourceError(f"model file {p} cannot be read: {err.strerror or err}") from None


def _parse(p: Path, r: _Reader, size: int) -> GGUFInfo:
    if size < 4 or r.take(4) != MAGIC:
        raise ResourceError(f"model file {p} is not a GGUF file (it does not start with 'GGUF'); "
                            "flowkit runs llama.cpp models in GGUF format")
    version = r.scalar("<I")
    if version not in VERSIONS:
        raise ResourceError(f"model file {p} has GGUF version {version}; this flowkit reads "
                            f"versions {', '.join(map(str, VERSIONS))}")
    n_tensors, n_kv = r.scalar("<Q"), r.scalar("<Q")
    meta: dict[str, Any] = {}
    wanted = ("general.architecture", "general.name", "general.size_label", "general.alignment",
              "tokenizer.chat_template")
    for _ in range(n_kv):
        key = r.string()
        vtype = r.scalar("<I")
        keep = key in wanted or key.endswith(_SHAPE_KEYS)
        val = r.value(vtype, keep)
        meta[key] = val if keep else True
    end = 0
    for _ in range(n_tensors):
        r.string(keep=False)
        n_dims = r.scalar("<I")
        if n_dims > MAX_DIMS:
            raise ValueError(f"a tensor has {n_dims} dimensions")
        r.skip(8 * n_dims)
        r.scalar("<I")                                  # ggml type
        end = max(end, r.scalar("<Q"))                  # offset of the tensor's data
    align = meta.get("general.alignment")
    align = align if isinstance(align, int) and align > 0 else DEFAULT_ALIGNMENT
    pos = r.pos
    data_offset = (pos + align - 1) // align * align
    if n_tensors and data_offset + end >= size:
        raise ResourceError(f"model file {p} is cut short: its tensor data needs more than "
                            f"{data_offset + end:,} bytes but the file has {size:,}; copy or "
                            "download it again")
    arch = str(meta.get("general.architecture") or "")
    shape = {k: meta.get(f"{arch}.{k}") for k in _SHAPE}
    shape = {k: v if isinstance(v, int) and not isinstance(v, bool) else None
             for k, v in shape.items()}
    ctx = shape["context_length"]
    return GGUFInfo(path=p, version=version, size_bytes=size, tensors=n_tensors, architecture=arch,
                    name=str(meta.get("general.name") or p.stem),
                    size_label=str(meta.get("general.size_label") or ""),
                    has_chat_template=bool(meta.get("tokenizer.chat_template")),
                    context_length=ctx, data_offset=data_offset,
                    block_count=shape["block_count"], embedding_length=shape["embedding_length"],
                    head_count=shape["attention.head_count"],
                    head_count_kv=shape["attention.head_count_kv"],
                    key_length=shape["attention.key_length"],
                    value_length=shape["attention.value_length"])


def file_hash(path: Path, chunk: int = 1 << 20) -> str:
    """sha256 of a model file, cached beside nothing: computed once per process per path."""
    return _hash_cached(str(path.resolve()), path.stat().st_size, path.stat().st_mtime)


_HASHES: dict[tuple[str, int, float], str] = {}
_HASH_LOCK = threading.Lock()


def _hash_cached(path: str, size: int, mtime: float) -> str:
    key = (path, size, mtime)
    with _HASH_LOCK:
        if key not in _HASHES:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            _HASHES[key] = h.hexdigest()
        return _HASHES[key]

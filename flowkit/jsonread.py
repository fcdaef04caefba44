"""Bounded reading of untrusted JSON: flow files, uploads and .jsonl lines.

Every way such input used to end in a traceback is turned into a SpecError with a stable code:
bytes that are not UTF-8, nesting deep enough to exhaust the recursion of `json.loads` (measured
by a cheap bracket scan *before* parsing), NaN/Infinity, lone surrogates (which SQLite and Chroma
cannot encode), overlong strings, an object with the same key twice (which `json.loads` would
silently resolve to the last value), and Python values that are not JSON data at all.

`read_file` is the bounded way to get a file's bytes: only a regular file (never a FIFO, a device
such as /dev/zero or a directory), at most `max_bytes` read, so a hostile path cannot make the
reader wait or grow without bound. `parse` and `check_value` can also bound the length of every
list and object (`max_items`), for forms where a long list is what costs (a memory edit).
"""
from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any

from .errors import SpecError, short

#: A JSON string literal (unrolled loop: linear time, no backtracking blow-up).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def decode_utf8(raw: bytes, source: str) -> str:
    """The text of `raw`, or SpecError('not_utf8') naming the line and byte offset."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise SpecError(f"not UTF-8 text: byte 0x{raw[err.start]:02x} at offset {err.start} "
                        f"(line {line})", code="not_utf8", source=source) from None


def read_file(path: str | Path, max_bytes: int, source: str | None = None) -> bytes:
    """The bytes of the regular file at `path`, reading at most `max_bytes` + 1 of them.

    SpecError codes: 'unreadable' (missing, no permission), 'not_a_file' (a directory, FIFO,
    socket or device: opened without blocking and refused before any read), 'file_too_large'."""
    where = source or str(path)
    try:   # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise SpecError(f"cannot read it: {err.strerror or err}", code="unreadable",
                        source=where) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise SpecError(f"not a regular file (a {_kind_of(mode)}); give a file",
                            code="not_a_file", source=where)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as err:
        raise SpecError(f"cannot read it: {err.strerror or err}", code="unreadable",
                        source=where) from None
    finally:
        os.close(fd)
    if len(raw) > max_bytes:
        raise SpecError(f"more than {max_bytes:,} bytes; at most {max_bytes:,} are read",
                        code="file_too_large", source=where)
    return raw


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def nesting_depth(text: str, limit: int) -> int:
    """How deeply brackets nest outside string literals; stops counting once past `limit`."""
    depth = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub('""', text)):
        if m.group() in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


class _DuplicateKeys(dict[str, Any]):
    """An object parsed from JSON that names `key` more than once (check_value refuses it with
    its field path, which the parser's hook does not know)."""

    duplicate: str = ""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook: a plain dict, or a _DuplicateKeys marking the first key seen twice."""
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    marked = _DuplicateKeys(obj)
    for key, _ in pairs:
        if key in seen:
            marked.duplicate = key
            break
        seen.add(key)
    return marked


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


#: The longest integer read (Python's own conversion limit is 4,300 digits; no datum is longer).
MAX_INT_DIGITS = 100


class _TooLong(ValueError):
    """An integer literal longer than MAX_INT_DIGITS."""


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _TooLong(f"an integer of {digits:,} digits; at most {MAX_INT_DIGITS}")
    return int(text)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {short(text, 40)} is out of range")
    return value


def parse(text: str, source: str, *, max_depth: int, max_string: int,
          max_items: int | None = None) -> Any:
    """Parse JSON text within the bounds; every failure is a SpecError with a code.

    `max_items` (None: no bound) caps the entries of every list and object ('too_many_items')."""
    if nesting_depth(text, max_depth) > max_depth:
        raise SpecError(f"JSON nested deeper than {max_depth} levels", code="too_deep",
                        source=source)
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_float=_finite,
                          parse_int=_int, object_pairs_hook=_object)
    except json.JSONDecodeError as err:
        raise SpecError(f"not valid JSON at line {err.lineno}, column {err.colno}: {err.msg}",
                        code="bad_json", source=source) from None
    except RecursionError:
        raise SpecError(f"JSON nested deeper than {max_depth} levels", code="too_deep",
                        source=source) from None
    except _TooLong as err:
        raise SpecError(f"not valid JSON: {err}", code="number_too_long", source=source) from None
    except ValueError as err:   # NaN/Infinity, 1e999
        raise SpecError(f"not valid JSON: {short(str(err))}", code="non_finite_number",
                        source=source) from None
    check_value(data, source, max_depth=max_depth, max_string=max_string, max_items=max_items)
    return data


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{short(key, 40)}" if path else short(key, 40)


def check_value(data: Any, source: str | None, *, max_depth: int, max_string: int,
                max_items: int | None = None) -> None:
    """Walk parsed data (iteratively, so depth itself cannot crash it) and refuse what SQLite,
    Chroma or a JSON export could not hold: raise SpecError naming the field path."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        if depth > max_depth:
            raise SpecError(f"nested deeper than {max_depth} levels", code="too_deep",
                            field=path or None, source=source)
        if max_items is not None and isinstance(value, list | dict) and len(value) > max_items:
            raise SpecError(f"{len(value):,} entries; at most {max_items:,} allowed",
                            code="too_many_items", field=path or None, source=source)
        if isinstance(value, str):
            _check_text(value, path, source, max_string)
        elif isinstance(value, bool) or value is None or isinstance(value, int):
            continue
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise SpecError(f"{value} is not a finite number", code="non_finite_number",
                                field=path or None, source=source)
        elif isinstance(value, dict):
            if isinstance(value, _DuplicateKeys):
                where = f"in '{path}'" if path else "at the top level"
                raise SpecError(f"key '{short(value.duplicate, 40)}' appears more than once {where}"
                                " (JSON would keep only the last); keep one", code="duplicate_key",
                                field=_join(path, value.duplicate), source=source)
            for k, v in value.items():
                if not isinstance(k, str):
                    raise SpecError(f"object key {short(k)} is not a string", code="spec_invalid",
                                    field=path or None, source=source)
                _check_text(k, _join(path, k), source, max_string)
                stack.append((v, _join(path, k), depth + 1))
        elif isinstance(value, list):
            stack.extend((v, _join(path, i), depth + 1) for i, v in enumerate(value))
        else:
            raise SpecError(f"a {type(value).__name__} is not JSON data", code="spec_invalid",
                            field=path or None, source=source)


def _check_text(text: str, path: str, source: str | None, max_string: int) -> None:
    if len(text) > max_string:
        raise SpecError(f"text of {len(text)} characters; at most {max_string} allowed",
                        code="string_too_long", field=path or None, source=source)
    m = _SURROGATE.search(text)
    if m:
        raise SpecError(f"lone surrogate U+{ord(m.group()):04X} at character {m.start()}: not "
                        "valid Unicode text", code="bad_text", field=path or None, source=source)

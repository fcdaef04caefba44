"""Uploaded files: which names can be saved, numbering repeats, and saving them into a new folder."""
from __future__ import annotations

import math
import shutil
from pathlib import Path

from flowkit.errors import ResourceError, short
from flowkit.spec import MAX_FILE_BYTES as FLOW_FILE_BYTES

#: The longest file name most file systems accept, in bytes of UTF-8.
MAX_NAME_BYTES = 255

#: The largest upload the studio's server accepts at all, in MB of 2**20 bytes: Streamlit's
#: `server.maxUploadSize`, set to this in .streamlit/config.toml (a test keeps the two equal).
#: The Knowledge page's files and SQLite databases may be this large.
SERVER_UPLOAD_MB = 200
#: A flow JSON file's limit as the Flows page's uploader states it ("Limit 2MB per file"): the
#: bounded reader's 2,000,000 bytes (flowkit.spec.MAX_FILE_BYTES) rounded up to whole MB.
FLOW_UPLOAD_MB = math.ceil(FLOW_FILE_BYTES / 2**20)
#: Knowledge base files (.txt, .md, .jsonl, .pdf) and SQLite databases, each.
KB_UPLOAD_MB = SERVER_UPLOAD_MB


class UploadRefused(ResourceError):
    """One or more uploaded files have names that cannot be saved as they are; `names` lists them."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.names = [name for name, _ in problems]
        parts = "; ".join(f"{short(repr(name))}: {why}" for name, why in problems)
        super().__init__(f"upload refused, {len(problems)} file name(s) not allowed: {parts}")


def name_problem(name: str) -> str | None:
    """Why `name` cannot be an uploaded file's name, or None when it can.

    Refused: empty (or only spaces), '.' or '..', a NUL, a '/' or '\\' (a path, not a name), or
    more than MAX_NAME_BYTES bytes in UTF-8."""
    if not name.strip():
        return "the name is empty"
    if name in (".", ".."):
        return f"'{name}' is not a file name"
    if "\x00" in name:
        return "the name contains a NUL character"
    for sep in ("/", "\\"):
        if sep in name:
            return f"the name contains '{sep}' (a path, not a file name)"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "the name is not valid Unicode text (a lone surrogate)"
    if size > MAX_NAME_BYTES:
        return f"the name is {size} bytes long in UTF-8 (at most {MAX_NAME_BYTES})"
    return None


def _numbered(name: str, n: int) -> str:
    """`name` with ' (n)' before its extension, the stem cut so it stays within MAX_NAME_BYTES."""
    path = Path(name)
    stem, ext = path.stem, path.suffix
    if len(f" ({n}){ext}".encode()) >= MAX_NAME_BYTES:   # an absurd extension: number the end
        stem, ext = name, ""
    tail = f" ({n}){ext}"
    room = MAX_NAME_BYTES - len(tail.encode())
    head = stem.encode("utf-8")[:room].decode("utf-8", "ignore")
    return head + tail


def upload_names(names: list[str]) -> list[str]:
    """The names to save uploads under, in order: each checked (UploadRefused lists every bad
    one), a repeated name (compared without case) numbered 'name (2).txt', 'name (3).txt', ..."""
    problems = [(n, why) for n in names if (why := name_problem(n)) is not None]
    if problems:
        raise UploadRefused(problems)
    taken: set[str] = set()
    out = []
    for name in names:
        candidate, n = name, 1
        while candidate.casefold() in taken:
            n += 1
            candidate = _numbered(name, n)
        taken.add(candidate.casefold())
        out.append(candidate)
    return out


def save_uploads(folder: Path, files: list[tuple[str, bytes]]) -> list[Path]:
    """Write the (name, bytes) files into a new `folder` (names checked first: a refused name
    creates nothing); a failed write removes the folder again."""
    names = upload_names([name for name, _ in files])
    folder.mkdir(parents=True, exist_ok=False)
    try:
        paths = [folder / name for name in names]
        for path, (_, data) in zip(paths, files):
            path.write_bytes(data)
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return paths

"""The cross-process write lock of one knowledge base: <data_dir>/kb/<name>/.lock (fcntl.flock).

Every change to a knowledge base (ingest, drop) holds it. A second writer, in this process or
another, waits up to `wait_s` and is then refused with a ResourceError naming the holder's pid.
The lock is released by the kernel when its holder dies, so a killed ingest never blocks the next.
"""
from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import ResourceError

LOCK_FILE = ".lock"
WAIT_S = 2.0
_POLL_S = 0.05


def _holder(path: Path) -> str:
    try:
        pid = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return "?"
    return pid if pid.isdigit() else "?"


@contextmanager
def kb_write_lock(kb_dir: Path, name: str, wait_s: float = WAIT_S) -> Iterator[None]:
    """Hold the knowledge base's write lock for the `with` block, or raise ResourceError."""
    kb_dir.mkdir(parents=True, exist_ok=True)
    path = kb_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise ResourceError(
                        f"knowledge base '{name}' is being changed by another process "
                        f"(pid {_holder(path)}); try again when it finishes") from None
                time.sleep(_POLL_S)
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def is_held(kb_dir: Path) -> bool:
    """True while a process holds the knowledge base's write lock (a change is under way).
    Never waits, and creates nothing: a knowledge base without a lock file is not being changed."""
    try:
        fd = os.open(kb_dir / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)

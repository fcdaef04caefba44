"""Process helpers shared by the engine and storage (which imports flowkit, never the reverse).

A run records who runs it as a process identity, `host|boot_id|pid|start_ticks`: a pid alone is
reused by the kernel, and a host name alone is reused by a recreated container. `identity_alive`
answers True/False only for identities of this host and this boot; for any other it answers None
(not ours to judge: storage falls back to the run's lease).
"""
from __future__ import annotations

import os
import socket
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (one we may not signal counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def start_ticks(pid: int) -> int | None:
    """When the process started, in clock ticks since boot (/proc/PID/stat field 22), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()    # after "pid (comm) "; comm may hold spaces
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def process_identity(pid: int | None = None) -> str:
    """`host|boot_id|pid|start_ticks` of a process (this one by default)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}|{_boot_id()}|{pid}|{start_ticks(pid) or 0}"


def identity_alive(identity: str) -> bool | None:
    """True: that very process still runs here. False: it is gone (or its pid now belongs to
    another process). None: the identity is another host's or another boot's, or unreadable."""
    parts = identity.split("|")
    if len(parts) != 4:
        return None
    host, boot, pid_s, ticks_s = parts
    if host != socket.gethostname() or boot != _boot_id() or not boot:
        return None
    try:
        pid, ticks = int(pid_s), int(ticks_s)
    except ValueError:
        return None
    if not pid_alive(pid):
        return False
    now = start_ticks(pid)
    return now is None or ticks == 0 or now == ticks

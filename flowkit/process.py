"""Process helpers shared by the engine and storage (which imports flowkit, never the reverse)."""
from __future__ import annotations

import os


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

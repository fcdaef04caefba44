"""Leases of running runs: while this process runs a run, a background thread pushes its
`lease_until` forward every LEASE_RENEW_S seconds, so another process can tell a live run (lease
in the future) from one whose process is gone (lease past). The thread starts with the first
held run and stops when none is left."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

from sqlalchemy import Engine, update
from sqlalchemy.orm import Session

from .models import RunRow, utcnow

LEASE_S = 120.0          # a running run's lease; renewed every LEASE_RENEW_S while it goes on
LEASE_RENEW_S = 20.0


class Leases:
    """The runs this process is running, and the thread that renews their leases."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.active: set[str] = set()
        self._lock = threading.Lock()
        self._renewer: threading.Thread | None = None

    def hold(self, run_id: str) -> None:
        """Keep renewing this run's lease until `release`."""
        with self._lock:
            self.active.add(run_id)
            if self._renewer is None or not self._renewer.is_alive():
                self._renewer = threading.Thread(target=self._renew, daemon=True,
                                                 name="flowkit-run-leases")
                self._renewer.start()

    def release(self, run_id: str) -> None:
        """Stop renewing this run's lease (it ended)."""
        with self._lock:
            self.active.discard(run_id)

    def _renew(self) -> None:
        while True:
            time.sleep(LEASE_RENEW_S)
            with self._lock:
                ids = sorted(self.active)
                if not ids:
                    self._renewer = None
                    return
            try:
                with Session(self.engine) as s, s.begin():
                    s.execute(update(RunRow).where(RunRow.id.in_(ids), RunRow.status == "running")
                              .values(lease_until=utcnow() + timedelta(seconds=LEASE_S)))
            except Exception:  # noqa: BLE001 - a busy database only delays the next renewal
                continue

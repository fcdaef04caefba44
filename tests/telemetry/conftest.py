"""Arize Phoenix, started once per test session from its own venv (`make phoenix` builds
.venv-phoenix; FLOWKIT_PHOENIX may name another `phoenix` executable), on free ports and a fresh
working directory; read back through its REST API."""
from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from telkit import free_port

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 180


@dataclass
class Phoenix:
    """A running Phoenix: its base URL (OTLP/HTTP at /v1/traces) and its span API."""

    url: str
    log: Path

    def spans(self, project: str = "flowkit", **filters: str | list[str]) -> list[dict[str, Any]]:
        """Every span of `project` matching the REST API's filters (trace_id, attribute, ...)."""
        out: list[dict[str, Any]] = []
        cursor = None
        while True:
            query: list[tuple[str, str]] = [("limit", "1000")]
            for k, v in filters.items():
                query += [(k, x) for x in (v if isinstance(v, list) else [v])]
            if cursor:
                query.append(("cursor", cursor))
            path = f"/v1/projects/{project}/spans?{urllib.parse.urlencode(query)}"
            with urllib.request.urlopen(self.url + path, timeout=30) as resp:
                page = json.load(resp)
            out += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    def wait_for(self, count: int, timeout_s: float = 120, **filters: str | list[str]
                 ) -> list[dict[str, Any]]:
        """The spans matching `filters` once there are at least `count` (Phoenix ingests in the
        background)."""
        deadline = time.time() + timeout_s
        while True:
            try:
                found = self.spans(**filters)
            except OSError:            # the project does not exist until its first span
                found = []
            if len(found) >= count or time.time() > deadline:
                return found
            time.sleep(0.5)


def _executable() -> str:
    exe = os.environ.get("FLOWKIT_PHOENIX") or str(ROOT / ".venv-phoenix" / "bin" / "phoenix")
    if not Path(exe).is_file():
        pytest.fail(f"Phoenix is not installed at {exe}: run `make phoenix` (builds .venv-phoenix)")
    return exe


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    """One Phoenix server for the session."""
    work = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_PORT": str(port),
           "PHOENIX_HOST": "127.0.0.1", "PHOENIX_GRPC_PORT": str(free_port()),
           "PHOENIX_TELEMETRY_ENABLED": "false"}
    log = work / "phoenix.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([_executable(), "serve"], env=env, stdout=sink,
                                stderr=subprocess.STDOUT, cwd=work)
    server = Phoenix(f"http://127.0.0.1:{port}", log)
    try:
        deadline = time.time() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"Phoenix exited ({proc.returncode}): {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(server.url + "/healthz", timeout=2):
                    break
            except OSError:
                if time.time() > deadline:
                    pytest.fail(f"Phoenix did not answer in {START_TIMEOUT_S} s: "
                                f"{log.read_text()[-2000:]}")
                time.sleep(0.5)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

"""Real server engines on loopback for tests and benchmarks: an OpenAI-compatible llama.cpp server
(`flowkit serve-model`: llama-cpp-python's server, loaded with the AMX decision), llama.cpp's own
`llama-server` (built by `make llama-server`: flowkit.testing.llama_server_build), a Chroma server
and a throwaway PostgreSQL cluster.

Each is a context manager that starts the server on a free 127.0.0.1 port, waits until it answers and
stops it on exit. A server that cannot start raises `ServerStartError` with the reason and the last
lines of its log: tests fail with that reason instead of skipping.

    with llama_server(model_path) as base_url: ...      # http://127.0.0.1:P/v1
    with llama_cpp_server(model_path) as base_url: ...  # llama.cpp's llama-server, same URL shape
    with chroma_server(tmp_dir) as (host, port): ...
    with postgres_server(tmp_dir) as url: ...           # postgresql+psycopg://...
"""
from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from ..errors import FlowkitError


class ServerStartError(FlowkitError):
    """A test server that did not come up; the message says why."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _wait_http(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerStartError(f"{what} exited with code {proc.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    proc.kill()
    raise ServerStartError(f"{what} did not answer {url} within {timeout_s:g} s:\n{_tail(log)}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextlib.contextmanager
def llama_server(model_path: str | Path, n_ctx: int = 4096, seed: int = 42,
                 log_dir: Path | None = None, extra_args: tuple[str, ...] = ()) -> Iterator[str]:
    """`flowkit serve-model` on `model_path`; yields the /v1 base URL."""
    port = free_port()
    log = Path(log_dir or tempfile.mkdtemp(prefix="flowkit-llama-server-")) / "llama-server.log"
    threads = str(os.cpu_count() or 1)       # as flowkit's own backends: float sums in one order
    cmd = [sys.executable, "-m", "service.cli", "serve-model", str(model_path), "--host",
           "127.0.0.1", "--port", str(port), "--n-ctx", str(n_ctx), "--seed", str(seed),
           "--n-threads", threads, *extra_args]
    with _openai_server(cmd, port, log, "/v1/models", "flowkit serve-model") as url:
        yield url


@contextlib.contextmanager
def llama_cpp_server(model_path: str | Path, n_ctx: int = 4096, parallel: int = 2,
                     log_dir: Path | None = None, binary: Path | None = None,
                     threads: int | None = None,
                     extra_args: tuple[str, ...] = ()) -> Iterator[str]:
    """llama.cpp's `llama-server` on `model_path`; yields the /v1 base URL.

    `--parallel` slots over one unified KV cache of `n_ctx` tokens (`--kv-unified`: each request may
    use the whole context, as on flowkit's own server), `--no-repack` (the extra buffer types off:
    the load flowkit's loader makes where AMX faults), `threads` (default: flowkit's, every
    core), no web UI. The model is served under its file name (`--alias`), as serve-model names
    it. Raises ServerStartError
    with the reason when the binary is missing (`make llama-server` builds it) or does not start."""
    from .llama_server_build import binary_path, missing_reason
    exe = Path(binary) if binary else binary_path()
    reason = missing_reason(exe)
    if reason:
        raise ServerStartError(reason)
    port = free_port()
    log = Path(log_dir or tempfile.mkdtemp(prefix="flowkit-llama-cpp-server-")) / "llama-cpp-server.log"
    cmd = [str(exe), "-m", str(model_path), "--host", "127.0.0.1", "--port", str(port),
           "-c", str(n_ctx), "--parallel", str(parallel), "--kv-unified", "--no-repack",
           "-t", str(threads or os.cpu_count() or 1), "--alias", Path(model_path).name,
           "--no-webui", *extra_args]
    # /health answers 503 while the model loads, 200 once it serves
    with _openai_server(cmd, port, log, "/health", "llama-server") as url:
        yield url


@contextlib.contextmanager
def _openai_server(cmd: list[str], port: int, log: Path, ready_path: str,
                   name: str) -> Iterator[str]:
    """Start `cmd` (an OpenAI-compatible server on loopback `port`, its output in `log`), wait
    until `ready_path` answers 200, yield its /v1 base URL, stop it after."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_http(f"http://127.0.0.1:{port}{ready_path}", proc, log, 180, name)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        _stop(proc)


@contextlib.contextmanager
def chroma_server(path: Path) -> Iterator[tuple[str, int]]:
    """`chroma run --path DIR` on a free port; yields (host, port)."""
    exe = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(exe).exists():
        raise ServerStartError("the `chroma` command (from the chromadb package) is not installed")
    port = free_port()
    path.mkdir(parents=True, exist_ok=True)
    log = path.parent / f"chroma-server-{port}.log"
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    with open(log, "wb") as out:
        proc = subprocess.Popen([exe, "run", "--path", str(path), "--host", "127.0.0.1",
                                 "--port", str(port)], stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _wait_http(f"http://127.0.0.1:{port}/api/v2/heartbeat", proc, log, 60, "chroma run")
        yield "127.0.0.1", port
    finally:
        _stop(proc)


def _pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        path = shutil.which("initdb")
        if not path:
            raise ServerStartError("PostgreSQL's initdb is not installed (Debian: apt-get install "
                                   "postgresql; `make servers` does it)")
        return Path(path).parent
    return Path(found[-1]).parent


@contextlib.contextmanager
def postgres_server(user: str = "postgres") -> Iterator[str]:
    """A throwaway PostgreSQL cluster (initdb + pg_ctl) on a free port; yields a SQLAlchemy URL.

    PostgreSQL refuses to run as root: as root, the cluster runs as `user` (Debian's package creates
    the `postgres` account)."""
    bindir = _pg_bin()
    root = Path(tempfile.mkdtemp(prefix="flowkit-pg-"))
    data, log = root / "data", root / "pg.log"
    port = free_port()
    prefix: list[str] = []
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam(user)
        except KeyError as err:
            raise ServerStartError(f"running as root and there is no '{user}' account to run "
                                   "PostgreSQL as") from err
        os.chown(root, pw.pw_uid, pw.pw_gid)
        prefix = ["runuser", "-u", user, "--"]
    init = subprocess.run([*prefix, str(bindir / "initdb"), "-D", str(data), "-U", "flowkit",
                           "--auth=trust", "-E", "UTF8", "--no-sync"],
                          capture_output=True, text=True)
    if init.returncode != 0:
        raise ServerStartError(f"initdb failed: {init.stderr.strip()[-800:]}")
    opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    start = subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log),
                            "-o", opts, "-w", "-t", "60", "start"], capture_output=True, text=True)
    if start.returncode != 0:
        raise ServerStartError(f"pg_ctl start failed: {start.stderr.strip()[-400:]}\n{_tail(log)}")
    try:
        yield f"postgresql+psycopg://flowkit@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w",
                        "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)

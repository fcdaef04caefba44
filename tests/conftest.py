"""Shared fixtures. `real` tests use the real default model, embedder and Chroma on the sample KB;
every Workspace a test or a module opened is closed after it (tests/_closing)."""
from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
AMX_SIM = ROOT / "flowkit" / "testing" / "amx_sim"


def _simulate_amx_fault() -> None:
    """FLOWKIT_SIMULATE_AMX_FAULT=1 (`make test`'s second run): the hook that kills any process
    loading a GGUF with extra buffer types on is installed here and, through PYTHONPATH, in every
    child process (flowkit.runtime.amx then sees an AMX CPU)."""
    import importlib.util
    import sys
    import tempfile

    # the probe's answer for the simulated CPU must not mix with the real CPU's
    os.environ.setdefault("FLOWKIT_CACHE_DIR", tempfile.mkdtemp(prefix="flowkit-amx-sim-"))
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(AMX_SIM) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(AMX_SIM), *paths])
    spec = importlib.util.spec_from_file_location("flowkit_amx_sim", AMX_SIM / "sitecustomize.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    sys.modules["flowkit_amx_sim"] = hook
    spec.loader.exec_module(hook)       # installs itself (the variable is set)


if os.environ.get("FLOWKIT_SIMULATE_AMX_FAULT") == "1":
    _simulate_amx_fault()


#: the session fixtures that start a server: every test using one runs in the same xdist worker,
#: so each server starts once per test run (`make test` runs two workers, `--dist loadgroup`)
SERVER_FIXTURES = frozenset({"phoenix", "pg_server", "chroma_endpoint", "llama_server_url",
                             "llama_cpp_server_url"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`--dist loadgroup`): a test file's tests stay together (its module
    fixtures, a studio or a model, are set up once), and every test of a server goes to one worker.
    First of the hooks: xdist's own reads the groups in this hook to name each test's work unit,
    and without `tryfirst` it ran before these marks were set (every file's tests were spread
    over both workers, each setting up its module fixtures and servers)."""
    for item in items:
        uses = SERVER_FIXTURES & set(getattr(item, "fixturenames", ()))
        group = "servers" if uses else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture(scope="session", autouse=True)
def _track_workspaces() -> Iterator[None]:
    """Every Workspace built in the run is recorded (tests/_closing) and closed after the test or
    module that opened it; those of session fixtures at the end of the run."""
    import _closing
    with pytest.MonkeyPatch.context() as mp:
        _closing.track(mp)
        yield
    _closing.release_session()


@pytest.fixture(scope="module", autouse=True)
def _close_module_workspaces() -> Iterator[None]:
    """Workspaces of module-scoped fixtures are closed after the module."""
    import _closing
    with _closing.closing_opened():
        yield


@pytest.fixture(autouse=True)
def _close_test_workspaces() -> Iterator[None]:
    """Workspaces a test (its fixtures, the code it runs) opened are closed after it."""
    import _closing
    with _closing.closing_opened():
        yield


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any],
                         request: pytest.FixtureRequest) -> Generator[None, Any, Any]:
    """A session fixture first asked for in the middle of a module (inside that module's and that
    test's closing blocks) keeps its workspaces until the end of the run."""
    if fixturedef.scope != "session":
        return (yield)
    import _closing
    with _closing.for_the_session():
        return (yield)


@pytest.fixture(scope="session")
def real_resources(tmp_path_factory: pytest.TempPathFactory):
    """Resources on a fresh data dir with the sample KB ingested (real embedder, real Chroma) and
    the real SmolLM2-135M through llama.cpp (pinned: the real tests were written for this instruct
    model; Gemma 3 270M, the default, has its own real tests), shared by the whole session."""
    from flowkit.ingest import ensure_sample
    from flowkit.runtime.llm import LLMSettings
    from flowkit.runtime.resources import Resources, Settings

    data_dir = tmp_path_factory.mktemp("flowkit-real")
    res = Resources(data_dir, Settings(llm=LLMSettings(model_path="smollm2-135m", n_ctx=4096)))
    ensure_sample(res)
    return res


@pytest.fixture()
def sample_questions() -> list[dict]:
    import json
    path = ROOT / "flowkit" / "sample_kb" / "questions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def pg_server():
    """One throwaway PostgreSQL cluster on loopback for the whole test run (initdb + pg_ctl).
    Fails with the reason when PostgreSQL cannot start here; it never skips."""
    from flowkit.testing.servers import postgres_server
    with postgres_server() as url:
        yield url


@pytest.fixture()
def pg_url(pg_server):
    """A fresh, empty database on the session's PostgreSQL, as a SQLAlchemy URL."""
    import uuid

    from sqlalchemy import create_engine, text
    name = f"fk_{uuid.uuid4().hex[:12]}"
    admin = create_engine(pg_server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    yield pg_server.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path):
    """The same storage test against SQLite (a file) and PostgreSQL (a real server)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fk.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture(scope="session")
def chroma_endpoint(tmp_path_factory):
    """One real Chroma server (`chroma run`) on loopback for the whole test run: (host, port)."""
    from flowkit.testing.servers import chroma_server
    with chroma_server(tmp_path_factory.mktemp("chroma-server") / "data") as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def llama_server_url(tmp_path_factory):
    """`flowkit serve-model` (an OpenAI-compatible server) on SmolLM2 (as real_resources), once per
    run."""
    from flowkit.runtime.models import packaged_path
    from flowkit.testing.servers import llama_server
    with llama_server(packaged_path("smollm2-135m"), n_ctx=4096,
                      log_dir=tmp_path_factory.mktemp("llama-server")) as url:
        yield url


@pytest.fixture(scope="session")
def llama_cpp_server_url(tmp_path_factory):
    """llama.cpp's own `llama-server` (built by `make llama-server` from the llama.cpp the bindings
    vendor) on SmolLM2, `-c 4096 --parallel 2 --kv-unified --no-repack`, once per run. Fails with
    the reason when the binary is missing or does not start; it never skips. Half the cores: the
    tests only read its answers, and on the loaded 2-core build machine two spinning llama.cpp
    threads beside the test process decoded 1-7 tokens/s, one thread 45-50."""
    from flowkit.runtime.models import packaged_path
    from flowkit.testing.servers import llama_cpp_server
    with llama_cpp_server(packaged_path("smollm2-135m"), n_ctx=4096, parallel=2,
                          threads=max(1, (os.cpu_count() or 2) // 2),
                          log_dir=tmp_path_factory.mktemp("llama-cpp-server")) as url:
        yield url


@pytest.fixture(params=["serve-model", "llama-server"])
def openai_server_url(request) -> str:
    """The same test against both OpenAI-compatible servers: flowkit's `serve-model` and llama.cpp's
    `llama-server` (each started once per run)."""
    name = "llama_server_url" if request.param == "serve-model" else "llama_cpp_server_url"
    return str(request.getfixturevalue(name))


@pytest.fixture()
def fk(world, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """`flowkit ARGS...` in-process on the `world` of the calling test's folder (its scripted
    workspace; `--no-cache` switches that workspace's cache off as the real CLI does), wide output:
    `fk("eval", ...)` returns (exit code, stdout, stderr)."""
    from service import cli
    from service.cli import common

    def open_ws(args):
        if getattr(args, "no_cache", False):
            world.ws.set_cache(False)
        return world.ws
    monkeypatch.setattr(common, "open_workspace", open_ws)
    monkeypatch.setattr(common.out, "width", 250, raising=False)
    monkeypatch.setattr(common.err, "_width", 250)   # restored to None: the width stays dynamic

    def call(*args: str) -> tuple[int, str, str]:
        code = cli.main(["--data-dir", str(world.root / "home"), *args])
        got = capsys.readouterr()
        return code, got.out, got.err
    return call

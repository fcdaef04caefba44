"""What the browser tests share (and bench/ui.py uses): the studio as a subprocess on a free port,
Debian's Chromium and its flags, and `eventually` (poll until a condition holds).

    with StudioServer(data_dir) as url:
        ...drive a browser at url...

    studio = studio_fixture("run-page", prepare=save_my_flows)   # a module's fixtures, made here
    page = page_fixture(1366, 800)                               # (test: studio.url, studio.home)

Test files beside it import it as `e2ekit` (pytest puts this folder on sys.path); it is not part of
the installed packages.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple

from flowkit.testing.sample_home import setup_sample  # `flowkit setup` once, copied for each home

ROOT = Path(__file__).resolve().parents[2]
ART = ROOT / "test-artifacts"     # screenshots, logs and figures the browser tests write

#: How long a browser test waits for one real model run to reach the state it needs (its steps
#: table, its end): minutes on a busy 2-core machine, where the model's process shares the cores
#: with the browser, the studio and whatever else runs (issue 47, finding 11: wait for a state,
#: up to this, never for a fixed time)
RUN_TIMEOUT_MS = 420_000

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StudioServer:
    """`streamlit run app.py` with FLOWKIT_HOME=data_dir; stopped (by its pid) on exit.

    `root` is the checkout whose app.py is served (this one by default; bench/ui.py serves
    another one beside it to compare two versions side by side); `script` is what is run (app.py,
    or studio/serve.py for the server behind studio/guard.py)."""

    def __init__(self, data_dir: str | Path, port: int | None = None, log: Path | None = None,
                 env: dict[str, str] | None = None, timeout_s: float = 60.0,
                 root: Path = ROOT, script: str = "app.py") -> None:
        self.root = Path(root)
        self.script = script      # "studio/serve.py": the guarded server (make run, Docker)
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.log = log or (self.data_dir / "streamlit.log")
        self.extra_env = env or {}
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        env = {**os.environ, "FLOWKIT_HOME": str(self.data_dir), "HF_HUB_OFFLINE": "1",
               "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(self.root),
                                                           os.environ.get("PYTHONPATH")])),
               **self.extra_env}
        self.data_dir.mkdir(parents=True, exist_ok=True)
        out = open(self.log, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(self.root / self.script),
             "--server.headless", "true", "--server.port", str(self.port),
             "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=self.root, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited ({self.proc.returncode}); see {self.log}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return self.url
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"streamlit did not answer within {self.timeout_s}s; see {self.log}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


def eventually(check: Callable[[], Any], timeout: float = 30.0, what: str = "condition",
               every: float = 0.2) -> Any:
    """Call `check` until it returns something true (returned), or fail naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


def stored_status(store: Any, run_id: str) -> str | None:
    """The run's status in the store, or None while it is only queued: the address shows a run's
    id when it is submitted, the store has its row once its job starts (after the run ahead)."""
    from flowkit.errors import NotFoundError
    try:
        return str(store.get_run(run_id).record.status)
    except NotFoundError:
        return None


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium, headless with this machine's flags, through Playwright; closed after."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Studio(NamedTuple):
    """What a `studio_fixture` yields: the studio's address, its FLOWKIT_HOME, and what the
    module's `prepare` returned (None without one)."""

    url: str
    home: Path
    prepared: Any = None


def studio_fixture(name: str, prepare: Callable[[Path], Any] | None = None) -> Any:
    """A module-scoped pytest fixture: the studio on a fresh FLOWKIT_HOME with the sample knowledge
    base (`flowkit setup`), `prepare(home)` run first (save flows, write settings.json); its log
    is test-artifacts/e2e-<name>-streamlit.log. Assign it to the fixture's name in the module:
    `studio = studio_fixture("run-page")`. Fails (not skips) when Chromium is missing."""
    import pytest

    @pytest.fixture(scope="module")
    def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
        if not Path(CHROMIUM).exists():
            pytest.fail("Debian chromium is not installed (make browser)")
        home = tmp_path_factory.mktemp(f"e2e-{name}")
        setup_sample(home)
        prepared = prepare(home) if prepare is not None else None
        ART.mkdir(exist_ok=True)
        with StudioServer(home, log=ART / f"e2e-{name}-streamlit.log", timeout_s=120) as url:
            yield Studio(url, home, prepared)
    return studio


def page_fixture(width: int, height: int, scope: str = "module", timeout_ms: int = 60_000) -> Any:
    """A pytest fixture (`page = page_fixture(1366, 800)`): a Chromium page of that viewport, with
    a default timeout of `timeout_ms`; one per module, or per test with scope="function". It asks
    for the module's `studio` fixture first, so the server is up before the browser starts."""
    import pytest

    @pytest.fixture(scope=scope)
    def page(studio: Studio) -> Iterator[Any]:
        with chromium() as browser:
            pg = browser.new_page(viewport={"width": width, "height": height})
            pg.set_default_timeout(timeout_ms)
            yield pg
    return page


RUNNING_ICON = "[data-testid='stStatusWidgetRunningIcon']"
CANVAS_FRAME = "iframe[title*='flowkit_canvas']"   # the editor's canvas (studio/canvas_ui)


def canvas(page: Any) -> Any:
    """The editor canvas's frame, to locate its React Flow nodes and edges in."""
    return page.frame_locator(CANVAS_FRAME)


def path_points(page: Any, edge_id: str, n: int = 80) -> list[tuple[float, float]]:
    """n + 1 points along a canvas edge's drawn line, in page coordinates."""
    frame = page.locator(CANVAS_FRAME).bounding_box()
    path = canvas(page).locator(f'[data-testid="rf__edge-{edge_id}"] path.react-flow__edge-path')
    pts = path.evaluate("""(p, n) => { const m = p.getScreenCTM(), len = p.getTotalLength();
        return Array.from({length: n + 1}, (_, i) => { const q = p.getPointAtLength(len * i / n);
          return [q.x * m.a + q.y * m.c + m.e, q.x * m.b + q.y * m.d + m.f]; }); }""", n)
    return [(x + frame["x"], y + frame["y"]) for x, y in pts]


def settle(page: Any) -> None:
    """Wait until Streamlit has finished its script run (its running icon gone for a moment)."""
    page.wait_for_selector("[data-testid='stApp']")
    for _ in range(2):
        page.wait_for_timeout(700)      # the icon shows only a little after a run starts
        page.wait_for_selector(RUNNING_ICON, state="detached", timeout=120_000)


def ask(page: Any, url: str, flow: str, question: str) -> Any:
    """Open the Run page on `flow` with `question` typed in; return the Run button."""
    from playwright.sync_api import expect
    page.goto(f"{url}/run?flow={flow}")
    # the first page of a fresh server imports the engine: slow on a busy machine
    expect(page.get_by_role("heading", name="Run", exact=True)).to_be_visible(timeout=180_000)
    settle(page)
    box = page.locator("textarea[aria-label='Question']")
    box.fill(question)
    box.press("Control+Enter")
    settle(page)
    return page.get_by_role("button", name="Run ▶")


def choose(page: Any, label: str | re.Pattern[str], option: str, tries: int = 4,
           starts: bool = False) -> None:
    """Choose `option` (its exact name; with `starts`, the first option that starts with it) in
    the Streamlit selectbox whose text holds `label`. On a loaded machine a click on the box now
    and then races a rerun and the list never opens (CI, stop 55: 60 s waiting for an option of a
    box that was clicked); a user would click again, so does this."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    box = page.locator("[data-testid='stSelectbox']").filter(has_text=label)
    wanted = (page.get_by_role("option").filter(has_text=re.compile("^" + re.escape(option))).first
              if starts else page.get_by_role("option", name=option, exact=True))
    for attempt in range(tries):
        box.click()
        try:
            wanted.wait_for(state="visible", timeout=15_000)
        except PlaywrightTimeout:          # the list did not open
            if attempt == tries - 1:
                raise
            page.keyboard.press("Escape")
            continue
        wanted.click()
        return

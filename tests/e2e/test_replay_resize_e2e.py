"""Issue 29 item 6 in a real Chromium: the replay's graph is fitted again when the window is
resized (opened at 1920x1080 and made 1366x800, it is drawn as large as when opened at 1366x800,
not shrunk in proportion). A run is recorded first with a scripted FakeLLM and a hashing embedder.
Screenshots go to test-artifacts/.
"""
from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2ekit import CHROMIUM, StudioServer, chromium
from test_editor_e2e import ARTIFACTS, WAIT_MS, settle

from flowkit import templates
from flowkit.run_request import RunRequest
from flowkit.testing import FakeLLM, HashEmbedder

pytestmark = pytest.mark.e2e
GRAPH = "iframe[title*='agraph']"


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    from flowkit.ingest import SAMPLE_DIR, SAMPLE_KB, ingest
    from service.workspace import Workspace
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    data_dir = tmp_path_factory.mktemp("replay-resize")
    ws = Workspace(data_dir)
    ws.resources.set_llm(FakeLLM([], default="It is not known"))
    ws.resources.set_embedder(HashEmbedder())
    ingest(ws.resources, SAMPLE_KB, [SAMPLE_DIR / "articles.jsonl"])
    run_id = ws.run(templates.load_template("ircot"),
                    RunRequest("Who lit the lighthouse?", kb="sample")).run_id
    with StudioServer(data_dir, timeout_s=120) as url:
        yield url, run_id


@pytest.fixture(scope="module")
def browser(studio: Any) -> Iterator[Any]:
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium() as b:
        yield b


def drawn_width(page: Any, name: str) -> int:
    """How wide (px) the graph's drawing is: its non-white pixels, left to right."""
    from PIL import Image, ImageChops
    frame = page.locator(GRAPH)
    frame.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    png = frame.screenshot(path=str(ARTIFACTS / name))
    img = Image.open(io.BytesIO(png)).convert("RGB")
    box = ImageChops.difference(img, Image.new("RGB", img.size, "white")).getbbox()
    assert box, "the graph drew nothing"
    return int(box[2] - box[0])


def open_replay(browser: Any, url: str, run_id: str, width: int, height: int) -> Any:
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(f"{url}/replay?run={run_id}")
    page.wait_for_selector(GRAPH, timeout=120_000)
    settle(page)
    page.wait_for_timeout(1500)          # vis.js draws after the frame loads
    return page


def test_the_replay_graph_is_fitted_again_after_a_resize(studio: Any, browser: Any) -> None:
    url, run_id = studio
    page = open_replay(browser, url, run_id, 1366, 800)
    fresh = drawn_width(page, "replay_graph_1366.png")
    page.context.close()

    page = open_replay(browser, url, run_id, 1920, 1080)
    wide = drawn_width(page, "replay_graph_1920.png")
    page.set_viewport_size({"width": 1366, "height": 800})
    page.wait_for_timeout(3000)          # the resize settles, the frame is drawn again
    settle(page)
    resized = drawn_width(page, "replay_graph_resized_1366.png")
    assert wide > 0
    assert resized >= 0.9 * fresh, (resized, fresh)      # as large as opened at this size
    assert resized <= 1.1 * fresh, (resized, fresh)
    page.context.close()

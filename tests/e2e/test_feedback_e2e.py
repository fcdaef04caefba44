"""Issue 38 item 2 in a real Chromium: what a click at the bottom of a long page did shows where the
click was. The fork's result on the Replay page, "Settings saved" on the Settings page and a lower
row's Versions panel on the Flows page were drawn at the top of the page, out of sight: each test
clicks (Playwright scrolls the control into view, as a user would) and finds the outcome inside
the viewport without scrolling again.

A run and eight saved flows are recorded first, in this process, with a scripted FakeLLM and a
hashing embedder; the studio's model is a scripted OpenAI-compatible server (the fork calls it).
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from e2ekit import ART, CHROMIUM, StudioServer, chromium, settle
from test_compare_e2e import fake_openai_server

from flowkit import templates
from flowkit.run_request import RunRequest
from flowkit.testing import FakeLLM, HashEmbedder

pytestmark = pytest.mark.e2e
QUESTION = "In what year was the Corren Lighthouse first lit?"
FLOWS = 8
WIDTH, HEIGHT = 1366, 800


def _record(home: Path, base_url: str) -> str:
    """A naive_rag run, FLOWS saved flows and settings that point the model at `base_url`."""
    from flowkit.ingest import SAMPLE_DIR, SAMPLE_KB, ingest
    from flowkit.runtime.llm import LLMSettings
    from flowkit.runtime.resources import Settings, save_settings
    from service.workspace import Workspace

    ws = Workspace(home)
    ws.resources.set_llm(FakeLLM([(r"Corren", "It was first lit in 1884 [1]")]))
    ws.resources.set_embedder(HashEmbedder())
    ingest(ws.resources, SAMPLE_KB, [SAMPLE_DIR / "articles.jsonl"])
    run_id = ws.run(templates.load_template("naive_rag"), RunRequest(QUESTION, kb="sample")).run_id
    for i in range(FLOWS):
        ws.store.save_flow(templates.load_template("naive_rag").model_copy(
            update={"name": f"flow_{i}"}), None)
    save_settings(home, Settings(llm=LLMSettings(backend="openai", base_url=base_url,
                                                 model_name="scripted")))
    return run_id


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    home = tmp_path_factory.mktemp("feedback")
    base_url, fake = fake_openai_server()
    try:
        run_id = _record(home, base_url)
        ART.mkdir(exist_ok=True)
        with StudioServer(home, log=ART / "e2e-feedback-streamlit.log", timeout_s=120) as url:
            yield url, run_id
    finally:
        fake.shutdown()


@pytest.fixture(scope="module")
def page(studio: tuple[str, str]) -> Iterator[Any]:
    with chromium() as browser:
        pg = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        pg.set_default_timeout(120_000)
        yield pg


def _scrolled(page: Any) -> int:
    return int(page.locator("[data-testid='stMain']").evaluate("e => e.scrollTop"))


def _in_view(page: Any, locator: Any) -> bool:
    """Whether the element lies wholly inside the viewport as the page is scrolled now."""
    box = locator.bounding_box()
    size = page.viewport_size
    return bool(box) and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] \
        and box["x"] >= 0 and box["x"] + box["width"] <= size["width"]


def _assert_in_view(page: Any, locator: Any, name: str) -> None:
    locator.wait_for()
    settle(page)
    page.screenshot(path=str(ART / f"feedback_{name}.png"))
    assert _in_view(page, locator), (name, locator.bounding_box(), page.viewport_size)


def test_replay_the_forks_result_shows_under_its_button(studio: Any, page: Any) -> None:
    url, run_id = studio
    page.goto(f"{url}/replay?run={run_id}&step=1&tab={quote('Fork from this step')}")
    button = page.get_by_role("button", name="Fork and run ▶")
    button.wait_for()
    settle(page)
    button.click()
    assert _scrolled(page) > 0, "the Fork button was on the first screen: the test shows nothing"
    page.wait_for_url(re.compile(r"[?&]fork=\w+"))
    _assert_in_view(page, page.get_by_text(re.compile(r"^Fork from step 1 finished: run ")),
                    "replay_fork")
    _assert_in_view(page, page.get_by_role("button", name=re.compile("Open the forked run")),
                    "replay_fork_open")


def test_settings_saved_shows_beside_the_button(studio: Any, page: Any) -> None:
    url, _ = studio
    page.goto(f"{url}/settings")
    button = page.get_by_role("button", name="Save settings")
    button.wait_for()
    settle(page)
    button.click()
    assert _scrolled(page) > 0, "the Save button was on the first screen: the test shows nothing"
    _assert_in_view(page, page.get_by_text(re.compile(r"^Settings saved")), "settings_saved")


def test_a_lower_rows_versions_open_in_its_row(studio: Any, page: Any) -> None:
    url, _ = studio
    page.goto(url)
    last = page.get_by_role("button", name="Versions").last
    last.wait_for()
    settle(page)
    last.click()
    assert _scrolled(page) > 0, "the last row was on the first screen: the test shows nothing"
    head = page.get_by_text(re.compile(rf"^Versions of flow_{FLOWS - 1}$"))   # listed by name
    _assert_in_view(page, head, "flows_versions")      # the panel opens under the click

"""studio.common.shell in a real server: a page's URL opened as a fresh server's first session still gets
app.py's shell (navigation, sidebar) and keeps its query parameters."""
from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ART = ROOT / "test-artifacts"


def test_a_direct_url_in_the_first_session_runs_through_app(tmp_path):
    from e2ekit import CHROMIUM, CHROMIUM_ARGS, StudioServer
    from playwright.sync_api import sync_playwright
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian chromium is not installed (make browser)")
    ART.mkdir(exist_ok=True)
    with StudioServer(tmp_path / "home", log=ART / "e2e-shell-streamlit.log", timeout_s=120) as url, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(120_000)
        page.goto(f"{url}/run?flow=naive_rag")          # nothing opened app.py before
        nav = page.locator("[data-testid='stSidebarNav']")
        # app.py's navigation (titles from st.Page), not the pages/ folder's (file names)
        nav.get_by_text("Knowledge bases", exact=True).wait_for(timeout=60_000)
        page.get_by_role("heading", name="Run").wait_for()
        assert "naive_rag" in page.url                   # the query parameter was kept
        page.screenshot(path=str(ART / "e2e-shell-direct-url.png"))
        browser.close()


#: The README's pictures: made here, in a real browser, so they follow the studio as it is.
SCREENSHOTS = ROOT / "assets" / "screenshots"
VIEWPORT = {"width": 1366, "height": 800}


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def test_logo_icon_and_the_readme_screenshots(tmp_path):
    """The logo and page icon from assets/ reach the browser; the Flows and Compare pages are
    saved at 1366x800 as assets/screenshots/flows.png and compare.png (the README shows them)."""
    from e2ekit import CHROMIUM, CHROMIUM_ARGS, StudioServer
    from playwright.sync_api import sync_playwright

    from flowkit import templates
    from service.workspace import Workspace
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian chromium is not installed (make browser)")
    home = tmp_path / "home"
    ws = Workspace(home)                     # a library to show: three saved flows
    for name in ("naive_rag", "iter_retgen", "self_rag"):
        ws.store.save_flow(templates.load_template(name), None)
    ws.close()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    ART.mkdir(exist_ok=True)
    with StudioServer(home, log=ART / "e2e-screenshots-streamlit.log", timeout_s=120) as url, \
            sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.set_default_timeout(120_000)
        page.goto(url)
        page.get_by_role("heading", name="Saved flows").wait_for()
        page.get_by_text("iter_retgen", exact=False).first.wait_for()
        logo = page.locator("[data-testid='stSidebarLogo'], [data-testid='stHeaderLogo']").first
        logo.wait_for()
        assert "svg" in (logo.get_attribute("src") or "")
        icon = page.locator("link[rel~='icon']").first.get_attribute("href") or ""
        assert "svg" in icon or icon.startswith("data:image/svg") or "/media/" in icon, icon
        page.wait_for_timeout(500)           # let the last widgets settle before the picture
        page.screenshot(path=str(SCREENSHOTS / "flows.png"))
        page.goto(f"{url}/compare")
        page.get_by_role("heading", name="Compare").wait_for()
        page.get_by_text("Flows (2 to 6", exact=False).first.wait_for()
        page.wait_for_timeout(500)
        page.screenshot(path=str(SCREENSHOTS / "compare.png"))
        browser.close()
    for name in ("flows.png", "compare.png"):
        assert _png_size(SCREENSHOTS / name) == (1366, 800)

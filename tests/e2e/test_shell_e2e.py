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

"""studio.common.shell in a real server: a page's URL opened as a fresh server's first session still gets
app.py's shell (navigation, sidebar) and keeps its query parameters; the studio's server names no
page by its file in the sidebar, not even in its first paint."""
from __future__ import annotations

import ast
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


#: Every page name the sidebar's navigation shows, from the first paint on (an init script, so it
#: runs before Streamlit's own): window.__navSeen collects them.
RECORD_NAV = r"""window.__navSeen = [];
new MutationObserver(() => {
  for (const a of document.querySelectorAll('[data-testid="stSidebarNav"] a')) {
    // a link reads "<icon name>\n\n<title>": its last line is the title
    const text = (a.innerText || '').trim().split('\n').pop().trim();
    if (text && !window.__navSeen.includes(text)) window.__navSeen.push(text);
  }
}).observe(document, {childList: true, subtree: true, characterData: true});"""


def test_the_first_paint_shows_page_titles_not_file_names(tmp_path):
    """The studio's server (studio/serve.py) in its first session, where Streamlit would list pages/
    by file name until app.py's st.navigation ran: the sidebar shows only the titles app.py gives,
    never 'app', 'run', ... (issue 48, item 9)."""
    from e2ekit import CHROMIUM, StudioServer, chromium, eventually
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian chromium is not installed (make browser)")
    titles = _page_titles()
    stems = {"app", "serve"} | {p.stem for p in (ROOT / "pages").glob("*.py")}
    ART.mkdir(exist_ok=True)
    with StudioServer(tmp_path / "home", log=ART / "e2e-shell-nav-streamlit.log", timeout_s=120,
                      script="studio/serve.py") as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 800})
        page.add_init_script(RECORD_NAV)
        page.goto(url)                               # the server's first session
        eventually(lambda: titles <= set(page.evaluate("window.__navSeen")), timeout=120,
                   what="the sidebar listing every page title")
        page.wait_for_timeout(500)
        seen = page.evaluate("window.__navSeen")
    raw = [text for text in seen if text in stems or "_" in text]
    assert not raw, f"the sidebar showed file names {raw} (all it showed: {seen})"
    assert set(seen) <= titles, f"the sidebar showed {sorted(set(seen) - titles)}"


def _page_titles() -> set[str]:
    """The page titles app.py's PAGES gives st.navigation (read from its source: importing app.py
    would run the studio)."""
    tree = ast.parse((ROOT / "app.py").read_text())
    pages = next(node.value for node in tree.body
                 if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "PAGES")
    return {title for _, title, _ in ast.literal_eval(pages)}


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

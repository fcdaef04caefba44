"""Issue 40 item 3 in a real Chromium: the Settings page pulls a GGUF from a stand-in Hub (the one of
tests/runtime/test_models_pull.py, serving a 48 MB GGUF and holding back all but its first 25 MB
until the test has seen the progress) as a background job: the bar says how far it got while the
page stays usable, a reload finds the pull again, and when the rest comes the model is listed."""
from __future__ import annotations

from pathlib import Path

import pytest
from e2ekit import ART, CHROMIUM, StudioServer, chromium, settle

from flowkit.testing.gguf import write_gguf
from tests.runtime.test_models_pull import FILE, REPO, serve_hub, sha256_of

pytestmark = [pytest.mark.e2e]
BAR = f"Pulling {REPO}/{FILE}: 21 of 48 MB"        # 20 MB (two download chunks) on disk


def test_pull_shows_progress_survives_a_reload_then_lists_the_model(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make browser` installs Debian's chromium")
    blob = write_gguf(tmp_path / "big.gguf", tensors=2, floats=6_000_000)
    home = tmp_path / "home"
    target = home / "models" / "flowkit-test--gemma-3-270m-GGUF" / FILE
    ART.mkdir(exist_ok=True)
    with serve_hub(blob, sha256_of(blob), stall_at=25 * 1024 * 1024) as hub, \
            StudioServer(home, log=ART / "e2e-settings-pull-streamlit.log", timeout_s=120,
                         env={"HF_ENDPOINT": hub.endpoint}) as url, chromium() as browser:
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        page.set_default_timeout(60_000)
        page.goto(f"{url}/settings")
        repo = page.get_by_role("textbox", name="Repository")
        repo.wait_for()
        settle(page)
        repo.fill(REPO)
        repo.press("Enter")
        name = page.get_by_role("textbox", name="GGUF file")
        name.fill(FILE)
        name.press("Enter")
        settle(page)
        page.get_by_role("button", name="Pull", exact=True).click()
        expect(page.get_by_text(BAR)).to_be_visible()
        assert "pull=" in page.url
        expect(page.get_by_role("button", name="Stop", exact=True)).to_be_visible()
        # the page stays usable while the file downloads: the settings form still answers
        page.get_by_role("button", name="Save settings").click()
        expect(page.get_by_text("Settings saved.")).to_be_visible()

        page.reload()                                  # a new session at the same address
        expect(page.get_by_text(BAR)).to_be_visible()
        page.get_by_text(BAR).scroll_into_view_if_needed()
        page.screenshot(path=str(ART / "e2e-settings-pull-progress.png"))
        assert not target.exists() and hub.gets == 1

        hub.release.set()                              # the rest of the file comes
        done = page.get_by_text(f"Pulled {REPO}/{FILE} (sha256 checked): {target}")
        expect(done).to_be_visible()
        expect(page.get_by_text(BAR)).to_have_count(0)
        expect(page.locator("[data-testid='stCode']").filter(has_text=str(target))
               ).to_be_visible()
        done.scroll_into_view_if_needed()
        page.screenshot(path=str(ART / "e2e-settings-pull-done.png"))
    assert sha256_of(target) == hub.sha256

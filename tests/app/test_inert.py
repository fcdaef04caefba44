"""Untrusted text stays inert: studio.common.inert's escaping (checked with a CommonMark renderer), and the
run, replay, knowledge and flows pages showing an answer, a passage and an imported flow that carry
a remote image link: the link is on the page as text, never inside Markdown that would render it."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from flowkit import templates
from flowkit.ingest import ingest
from flowkit.testing import FakeLLM
from studio.common import inert
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

from flowkit.run_request import RunRequest

LINK = "![x](http://127.0.0.1:9/leak.png?q=SECRET)"
HOSTILE = [
    LINK,
    "[click](javascript:alert(1)) and <img src=http://h/p.png> &amp; &#33;[y](http://h/q)",
    "**bold** _it_ `code` :red[colour] :material/home: $x^2$ <script>x</script>",
    "line one\n# heading\n> quote\n- item\n![z](http://h/z.png)",
    "``` fence ``` and ` single",
    "",
]
_MD = MarkdownIt("commonmark").enable("table").enable("strikethrough")


def _plain(html: str) -> str:
    """The text of rendered HTML (tags dropped, entities decoded)."""
    import html as h
    import re
    return h.unescape(re.sub(r"<[^>]+>", "", html)).strip()


@pytest.mark.parametrize("raw", HOSTILE)
def test_escape_renders_literally_without_links_images_or_html(raw: str) -> None:
    html = _MD.render(inert.escape(raw))
    for tag in ("<img", "<a ", "<script", "<code>", "<h1", "<blockquote", "<ul", "&#"):
        assert tag not in html, (raw, html)
    if "*" not in raw and "_" not in raw:   # emphasis may render; it is cosmetic, not a fetch
        assert _plain(html) == " ".join(raw.splitlines())


@pytest.mark.parametrize("raw", HOSTILE)
def test_code_span_holds_the_text_and_nothing_renders(raw: str) -> None:
    html = _MD.render(inert.code(raw))
    assert "<img" not in html and "<a " not in html
    if raw.strip():
        assert _plain(html) == " ".join(raw.splitlines()).strip()


def test_quote_keeps_every_line_inside_the_quote() -> None:
    html = _MD.render(inert.quote("first ![a](http://h/a.png)\n# second\n> third\n1. fourth\n- 5"))
    assert html.count("<blockquote>") == 1 and "<img" not in html
    for tag in ("<h1", "<ol", "<ul", "<a "):
        assert tag not in html, html
    assert _plain(html).splitlines() == ["first ![a](http://h/a.png)", "# second", "> third",
                                         "1. fourth", "- 5"]


def test_escape_limit_cuts_before_escaping() -> None:
    assert inert.escape("a" * 10, limit=4) == "aaaa…"


# ---- the pages ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    home = tmp_path_factory.mktemp("inert-pages")
    w = kit.workspace(home, sample=False)
    w.resources.set_llm(FakeLLM([(r"lighthouse", f"Answer {LINK} [1]")], default=f"{LINK} [1]"))
    doc = home / "leaky.txt"
    doc.write_text(f"The lighthouse keeper wrote {LINK} in the log book.\n", encoding="utf-8")
    ingest(w.resources, "leaky", [doc])
    use_workspace(w)
    yield w
    get_jobs().wait_idle(60)
    use_workspace(None)


@pytest.fixture(scope="module")
def run_id(ws):
    return ws.run(templates.load_template("naive_rag"),
                  RunRequest(f"Who kept the lighthouse? {LINK}", kb="leaky")).run_id


def _markdown_like(at) -> list[str]:
    """Every string the page hands to Streamlit's Markdown renderer."""
    out: list[str] = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "subheader",
                 "title"):
        out += [str(e.value) for e in getattr(at, kind)]
    out += [str(e.label) for e in at.expander]
    return out


def _assert_inert(at) -> None:
    assert not at.exception, [e.message for e in at.exception]
    for value in _markdown_like(at):
        html = _MD.render(value)
        assert "<img" not in html and 'href="http' not in html, value


def test_run_page_shows_answer_and_passage_as_text(ws, run_id):
    at = kit.page("pages/run.py", run=run_id).run()
    _assert_inert(at)
    shown = [t.value for t in at.text]
    assert any(LINK in t and t.startswith("Answer") for t in shown), shown
    assert any(f"keeper wrote {LINK}" in t for t in shown), shown   # the cited passage


def test_replay_page_shows_answer_as_text(ws, run_id):
    at = kit.page("pages/replay.py", run=run_id).run()
    _assert_inert(at)
    assert any(LINK in t.value for t in at.text)
    assert any("Who kept the lighthouse" in m for m in _markdown_like(at))


def test_knowledge_search_shows_passages_as_text(ws):
    at = kit.page("pages/knowledge.py", kb="leaky").run()
    at.text_input(key="kb_search_q").input("keeper log book").run()
    _assert_inert(at)
    assert any(LINK in t.value for t in at.text)


def test_flows_import_problems_and_description_are_inert(ws):
    flow = templates.load_template("naive_rag").model_dump(mode="json")
    flow["name"] = f"leaky {LINK}"
    flow["description"] = f"see {LINK}"
    flow["nodes"][0]["params"]["top_k"] = LINK          # a problem that quotes the input
    at = kit.page("pages/flows.py").run()
    at.file_uploader(key="flows_import_file").upload("leaky.json", json.dumps(flow).encode(),
                                                      "application/json").run()
    _assert_inert(at)
    problems = [m for m in _markdown_like(at) if "leak" in m]
    assert problems, _markdown_like(at)
    assert at.text_input(key="flows_import_name").value == f"leaky {LINK}"


def test_flows_list_shows_names_and_descriptions_inert(ws):
    ws.store.save_flow(templates.load_template("naive_rag").model_copy(
        update={"name": f"saved {LINK}", "description": f"about {LINK}"}), expected_version=None)
    at = kit.page("pages/flows.py").run()
    _assert_inert(at)
    assert any("about" in m and "leak" in m for m in _markdown_like(at))

"""Help texts never put a raw backtick on the page (issue 29 item 11): operator help renders as
Markdown (the palette's tooltips, "About this operator"), so every code span must be closed; where
no Markdown is rendered (a select box's options) the backticks are dropped."""
from __future__ import annotations

from flowkit import registry
from service import knowledge as kbview
from studio.knowledge.ingest_panel import markdown_cut, plain


def test_every_operator_help_closes_its_code_spans() -> None:
    odd = [key for key, cls in registry.all_operators().items()
           if cls.help().count("`") % 2 or cls.summary().count("`") % 2
           or any((f.description or "").count("`") % 2 for f in cls.Params.model_fields.values())]
    assert odd == []


def test_chunker_options_show_no_backtick_and_the_cut_caption_no_lone_one() -> None:
    chunkers = kbview.chunkers()
    assert any("`" in c.summary() for c in chunkers.values())   # there is something to drop
    for key, cls in chunkers.items():
        assert "`" not in plain(cls.summary()), key
        for limit in range(20, 320, 7):
            assert markdown_cut(cls.help().split("\n\n")[-1], limit).count("`") % 2 == 0, key


def test_markdown_cut_keeps_closed_code_spans_and_marks_the_cut() -> None:
    text = "windows of `size` words, each starting `size - overlap` words after the previous"
    assert markdown_cut(text, 200) == text
    assert markdown_cut(text, 20) == "windows of `size` wo…"
    assert markdown_cut(text, 45) == "windows of size words, each starting size…"

"""Issue 47 finding 8: a document whose file name held terminal escape sequences was printed raw
by `flowkit run` (screen cleared, window title set). Every line the CLI prints goes through its two
consoles, which now write control characters as escapes, in plain strings, styled lines and tables
alike; Rich's own styling still reaches the terminal."""
from __future__ import annotations

import io

from rich.table import Table

from service.cli import common

HOSTILE = "manual\x1b]0;pwned\x07\x1b[2J\x9b31m.pdf"


def _printed(*items: object, color: bool = False) -> str:
    console = common.plain_console()
    console.file = io.StringIO()
    if color:
        console._force_terminal = True      # a terminal: styles are written as ESC sequences
        console._color_system = console._detect_color_system()
    for item in items:
        console.print(item)
    text = console.file.getvalue()
    return text


def test_escape_sequences_in_data_are_printed_as_text() -> None:
    table = Table(title="passages")
    table.add_column("source")
    table.add_row(HOSTILE)
    text = _printed(HOSTILE, common.styled("[bold]cites:[/bold] {}", HOSTILE), table)
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    assert text.count("\\x1b]0;pwned") == 3 and text.count("\\x1b[2J") == 3  # (Rich drops BEL)


def test_the_consoles_own_styles_still_reach_a_terminal() -> None:
    text = _printed(common.styled("[bold]answer:[/bold] {}", "x\x1b[2J"), color=True)
    assert "\x1b[1m" in text                # Rich's bold
    assert "\x1b[2J" not in text and "\\x1b[2J" in text

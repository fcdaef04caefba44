"""What every `flowkit` subcommand shares: the two consoles, the one workspace factory, a progress
bar, JSON options, argument checks, and "ingest a dataset's corpus unless the KB has chunks".

Output safety: `out` and `err` print text as text. They are made with markup, emoji codes and
highlighting off, so a flow, dataset, question type or knowledge base named `[/]` or
`[link=https://...]x` is printed as those characters, in lines, tables, titles and rules alike,
by any command, new ones included. Style comes only from `styled(template, *values)`, which reads
markup in the template the code wrote and never in the values (data).
"""
from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.segment import Segment
from rich.text import Text

from flowkit.errors import FlowkitError, SpecError
from service.workspace import Workspace

#: Control characters a terminal acts on (C0 but newline and tab, DEL, C1), each to its escape.
_CONTROLS = {c: ascii(chr(c))[1:-1] for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))
             if chr(c) not in "\n\t"}


class _DataSafeConsole(Console):
    """A Console that writes every control character of the text it prints as its escape
    (`\x1b`, `\x07`): a document, file or flow name holding ESC sequences cannot clear the
    screen or set the window title (issue 47, finding 8). Rich's own control segments (cursor
    moves, the progress bar's redraws) and its styles pass as they are."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            seg if seg.control else Segment(seg.text.translate(_CONTROLS), seg.style)
            for seg in buffer)


def plain_console(stderr: bool = False) -> Console:
    """A console that prints strings as they are: no markup, no :emoji: codes, no highlighting,
    and control characters written as escapes."""
    return _DataSafeConsole(stderr=stderr, markup=False, emoji=False, highlight=False)


out = plain_console()
err = plain_console(stderr=True)


def styled(template: str, *values: object) -> Text:
    """A line styled by the code, holding data as text: `{}` in `template` (Rich markup written
    in the code) take `values`, escaped, so `styled("[bold]run {}[/bold]", name)` prints a
    name `[/]` or `[link=x]` as those characters."""
    return Text.from_markup(template.format(*(escape(str(v)) for v in values)), emoji=False)


def shorten(message: str, longest: int = 120) -> str:
    """`message` with every run of more than `longest` non-space characters cut to its start,
    its end and its length: an error never echoes a 5,000-character argument whole."""
    def cut(m: re.Match[str]) -> str:
        return f"{m[0][:40]}...{m[0][-20:]} ({len(m[0])} characters)"
    return re.sub(rf"\S{{{longest + 1},}}", cut, message)


def one_line(text: str) -> str:
    """`text` on one line: a newline, tab, NUL or other control character (from data: a name, a
    path) is written as its escape (`\\n`), so it cannot start a line of its own."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == " " else ascii(ch)[1:-1] for ch in text)


def open_workspace(args: argparse.Namespace) -> Workspace:
    """The Workspace for --data-dir: the one factory of the CLI (tests replace it to inject
    fakes: `monkeypatch.setattr(common, "open_workspace", ...)`)."""
    ws = Workspace(args.data_dir)
    if getattr(args, "no_cache", False):
        ws.set_cache(False)
    return ws


NO_CACHE_HELP = ("compute every model call (do not serve deterministic calls from the completion "
                 "cache, nor store them)")


def progress_bar(label: str) -> Progress:
    """A progress bar on stderr (`label` names the work for the reader of the code); its
    descriptions are text, never markup."""
    return Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                    MofNCompleteColumn(), TimeRemainingColumn(), console=err, transient=False)


def json_option(text: str, option: str) -> dict[str, Any]:
    """A JSON object given on the command line, or SpecError naming the option."""
    from flowkit.jsonread import parse
    from flowkit.spec import MAX_DEPTH, MAX_STRING
    try:
        value = parse(text, option, max_depth=MAX_DEPTH, max_string=MAX_STRING)
    except SpecError as e:
        raise SpecError(e.detail, e.code, option) from None
    if not isinstance(value, dict):
        raise SpecError(f"must be a JSON object like '{{\"size\": 200}}'; got "
                        f"{type(value).__name__}", code="bad_json", field=option)
    return value


# ---- argument checks (argparse types: a bad value is a one-line usage error) ---------------
def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number >= `low` ("must be a whole number >= 1; got '0'")."""
    def parse(text: str) -> int:
        try:
            value = int(text.strip()) if len(text) <= 20 else None
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"must be a whole number >= {low}; got "
                                             f"{_quote(text)}")
        return value
    return parse


def int_between(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `low` to `high`."""
    at_least = int_at_least(low)

    def parse(text: str) -> int:
        value = at_least(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high}; got "
                                             f"{_quote(text)}")
        return value
    return parse


def _quote(text: str) -> str:
    """`text` quoted for an error line: whole up to 60 characters, else its start and end."""
    shown = text if len(text) <= 60 else f"{text[:24]}...{text[-24:]}"
    return repr(shown)


#: Longest path and path component Linux takes (PATH_MAX, NAME_MAX in bytes).
PATH_MAX, NAME_MAX = 4096, 255


def path_problem(text: str) -> str | None:
    """Why `text` cannot be a file path here (empty, NUL, too long, a component over 255
    bytes), or None."""
    if not text:
        return "is empty"
    if "\x00" in text:
        return "holds a NUL character"
    if len(os.fsencode(text)) >= PATH_MAX:
        return f"is {len(text)} characters long; a path has fewer than {PATH_MAX} bytes"
    long = next((p for p in Path(text).parts if len(os.fsencode(p)) > NAME_MAX), None)
    if long is not None:
        return (f"has a part of {len(long)} characters ('{long[:20]}...'); a file or folder "
                f"name has at most {NAME_MAX} bytes")
    return None


def out_file(text: str, option: str, suffixes: tuple[str, ...] = ()) -> Path:
    """A file the command will write, checked before any work starts: a usable path, not a
    folder, its folder a folder (or creatable), and one of `suffixes` when given. FlowkitError
    naming `option` otherwise; nothing is created."""
    why = path_problem(text)
    if why is None and suffixes and Path(text).suffix.lower() not in suffixes:
        why = (f"must end in {' or '.join(suffixes)} (it names the format); got "
               f"'{Path(text).suffix or 'no extension'}'")
    p = Path(text).expanduser()
    if why is None and p.is_dir():
        why = "is a folder; give a file name"
    if why is None:
        parent = next((a for a in p.absolute().parents if a.exists()), None)
        if parent is not None and not parent.is_dir():
            why = f"cannot be written: {parent} is a file, not a folder"
        elif parent is not None and not os.access(parent, os.W_OK):
            why = f"cannot be written: {parent} is not writable"
    if why is not None:
        raise FlowkitError(f"{option} {_quote(text)} {why}")
    return p


def data_dir(text: str | None) -> None:
    """Check --data-dir before anything opens it: a usable path, a folder (or creatable) that
    can be written; FlowkitError naming --data-dir otherwise."""
    if text is None:
        return
    why = path_problem(text)
    p = Path(text).expanduser()
    if why is None and p.exists() and not p.is_dir():
        why = "is a file, not a folder"
    if why is None:
        existing = p if p.exists() else next((a for a in p.absolute().parents if a.exists()), None)
        if existing is not None and not existing.is_dir():
            why = f"cannot be made: {existing} is a file, not a folder"
        elif existing is not None and not os.access(existing, os.W_OK | os.X_OK):
            why = f"cannot be written: {existing} is not writable"
        elif str(p.absolute()).startswith(("/proc/", "/sys/")) or str(p.absolute()) in (
                "/proc", "/sys"):
            why = "is inside /proc or /sys, which hold no data folders"
    if why is not None:
        raise FlowkitError(f"--data-dir {_quote(text)} {why}")


def ingest_corpus(ws: Workspace, dataset: Any, kb: str, force: bool = False) -> int:
    """Ingest the dataset's corpus.jsonl into `kb` unless it is ready (service.knowledge.
    ingest_corpus, with a progress bar). Returns chunks added (0 when it was ready)."""
    from service.knowledge import ingest_corpus as ingest_unless_ready
    if ws.resources.kb(kb).ready and not force:
        return 0
    with progress_bar("ingest") as prog:
        task = prog.add_task(f"ingest {Path(dataset.corpus or '').name} into '{kb}'", total=None)
        return ingest_unless_ready(ws, dataset, kb, force=force,
                                   progress=lambda d, t: prog.update(task, completed=d, total=t))

"""Issue 39 item 3: values from data never break the CLI's output. A flow, dataset, question type
or answer named `[/]`, `[link=...]` or `:smile:` prints as those characters, in every command.

Before: Rich read them as markup. `flowkit flows list` and `dataset list` ended in a MarkupError
traceback for `[/]` (every later listing too), `flowkit eval` crashed after all runs on a
question type `[/]` and wrote none of --out/--csv/--report, and `[link=...]` hid a name behind a
link.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from flowkit.templates import load_template
from security.cliworld import Runner, flow_file, make_workspace, question, question_file, runner
from storage.models import DatasetRow

HOSTILE = ["[/]", "[link=https://evil.example/]shown[/link]", "[bold red]x", ":smile: [/bold]"]
CLI = Path(__file__).resolve().parents[2] / "service" / "cli"


@pytest.fixture()
def fk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
       ) -> Runner:
    return runner(tmp_path / "home", monkeypatch, capsys)


def test_flows_list_prints_markup_names_as_text(tmp_path: Path, fk: Runner) -> None:
    ws = make_workspace(tmp_path / "home")
    for name in HOSTILE:          # saved before the rule for names (stored directly)
        ws.store.save_flow(load_template("naive_rag").model_copy(update={"name": name}), None)
    code, out, err = fk("flows", "list")
    assert code == 0, err
    for name in HOSTILE:
        assert name in out
    assert "\x1b]8;" not in out                       # no terminal hyperlink was made


def test_dataset_list_prints_markup_names_as_text(tmp_path: Path, fk: Runner) -> None:
    ws = make_workspace(tmp_path / "home")
    with Session(ws.store.engine) as s, s.begin():    # rows saved before the rule for names
        for name in HOSTILE:
            s.add(DatasetRow(name=name, source=f"{name}.csv", kb="[/]", questions=[]))
    code, out, err = fk("dataset", "list")
    assert code == 0, err
    assert all(name in out for name in HOSTILE)


def test_eval_with_markup_question_types_writes_its_files_and_tables(
        tmp_path: Path, fk: Runner) -> None:
    questions = [question("q1", "Who designed the Corren Lighthouse?", qtype="[/]"),
                 question("q2", "[link=https://evil.example/]Who?[/link]", qtype="[bold]single")]
    qs = question_file(tmp_path, questions)
    files = {opt: tmp_path / name for opt, name in
             (("--out", "r.json"), ("--csv", "r.csv"), ("--report", "r.md"))}
    code, out, err = fk("eval", "--flow", str(flow_file(tmp_path)), "--dataset", str(qs),
                        "--kb", "test", *[x for opt, p in files.items() for x in (opt, str(p))])
    assert code == 0, err
    assert "by question type" in out and "[/]" in out and "[bold]single" in out
    assert all(p.is_file() for p in files.values())
    assert json.loads(files["--out"].read_text())["by_type"]["good"]["[/]"]["n"] == 1


def test_run_and_trace_print_answers_and_questions_as_text(tmp_path: Path, fk: Runner) -> None:
    q = "[/] what is [link=https://evil.example/]this[/link]?"
    code, out, err = fk("run", str(flow_file(tmp_path)), "--kb", "test", "-q", q)
    assert code == 0, err
    run_id = next(w for w in out.split() if len(w) >= 8 and w.isalnum())
    code, out, err = fk("trace", run_id)
    assert code == 0, err
    assert q in " ".join(out.split()) or "[link=https://evil.example/]this[/link]" in out


def test_no_cli_module_prints_through_markup_but_common() -> None:
    """The one way: consoles come from common (markup off), style from common.styled. A new
    command that makes its own Console, turns markup on or parses markup itself fails here."""
    offences = []
    for path in sorted(CLI.glob("*.py")):
        if path.name == "common.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                if name in ("Console", "from_markup", "escape", "render_markup"):
                    offences.append(f"{path.name}:{node.lineno} {name}()")
                if name == "TextColumn" and not any(
                        k.arg == "markup" and isinstance(k.value, ast.Constant)
                        and k.value.value is False for k in node.keywords):
                    offences.append(f"{path.name}:{node.lineno} TextColumn without markup=False")
                for k in node.keywords:
                    if k.arg in ("markup", "emoji") and isinstance(k.value, ast.Constant) \
                            and k.value.value is True:
                        offences.append(f"{path.name}:{node.lineno} {k.arg}=True")
    assert offences == []

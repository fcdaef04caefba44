"""Issue 38 item 6 and issue 39 item 5: one rule for the names of new flows, knowledge bases and
question sets (flowkit.names.RULE), stated in every refusal; names saved before the rule are
still listed and opened.

Before: a flow could be named `../evil name` (the KB rule did not apply to flows), a knowledge
base named 'notes\\n' passed the check (`$` matches before a final newline) and left a folder
behind, and each kind of name had its own rule and wording."""
from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from flowkit.errors import FlowkitError, ResourceError
from flowkit.names import RULE, name_problem
from flowkit.runtime.kb import check_name
from flowkit.spec import dump
from flowkit.templates import load_template
from security.cliworld import Runner, make_workspace, question, question_file, runner
from service import cli, knowledge
from service import flows as flow_service
from storage.evals import EvalRepo
from storage.models import DatasetRow

BAD = ["../evil name", "notes\n", "a/b", "-x", "x-", ".hidden", "a..b", "x" * 61, "[/]", "Näive",
       " lead", "", "tab\there"]
GOOD = ["notes", "naive_rag", "v1.2", "sample-generated-s0", "x" * 60, "A1"]


@pytest.fixture()
def fk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
       ) -> Runner:
    return runner(tmp_path / "home", monkeypatch, capsys)


@pytest.mark.parametrize("name", BAD)
def test_the_rule_refuses(name: str) -> None:
    assert name_problem(name) == RULE


@pytest.mark.parametrize("name", GOOD)
def test_the_rule_accepts(name: str) -> None:
    assert name_problem(name) is None


def test_a_flow_import_states_the_rule(tmp_path: Path, fk: Runner) -> None:
    path = tmp_path / "f.json"
    dump(load_template("naive_rag"), path)
    code, _, err = fk("flows", "import", str(path), "--name", "../evil name")
    assert code == 2 and "flow name '../evil name' is not allowed" in err and RULE in err
    assert make_workspace(tmp_path / "home").store.list_flows() == []
    with pytest.raises(FlowkitError, match="is not allowed: a name is 1 to 60"):
        flow_service.create_flow(make_workspace(tmp_path / "home"), "../evil name")


def test_a_knowledge_base_name_with_a_trailing_newline_leaves_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = make_workspace(tmp_path / "home")
    with pytest.raises(ResourceError, match=r"knowledge base name 'notes\\n' is not allowed"):
        check_name("notes\n")
    doc = tmp_path / "doc.txt"
    doc.write_text("The Corren Lighthouse was designed by Mara Velt.")
    home = tmp_path / "cli-home"
    code = cli.main(["--data-dir", str(home), "ingest", "--kb", "notes\n", str(doc)])
    err = capsys.readouterr().err
    assert code == 2 and "knowledge base name 'notes\\n' is not allowed" in err and RULE in err
    with pytest.raises(ResourceError, match="is not allowed: a name is 1 to 60"):
        knowledge.create(ws.resources, "notes-")          # the old rule took it; Chroma does not
    for root in (ws.data_dir, home):
        assert not (root / "kb").exists() or list((root / "kb").iterdir()) == []


def test_a_question_set_import_states_the_rule(tmp_path: Path, fk: Runner) -> None:
    qs = question_file(tmp_path, [question("q1", "Who?")])
    code, _, err = fk("dataset", "import", str(qs), "--name", "../sets x")
    assert code == 2 and "question set name '../sets x' is not allowed" in err and RULE in err
    code, out, err = fk("dataset", "import", str(qs), "--name", "sets_x")
    assert code == 0 and "dataset 'sets_x'" in out, err


def test_names_saved_before_the_rule_are_listed_and_opened(tmp_path: Path, fk: Runner) -> None:
    ws = make_workspace(tmp_path / "home")
    old = "old flow (v2).json"
    ws.store.save_flow(load_template("naive_rag").model_copy(update={"name": old}), None)
    with Session(ws.store.engine) as s, s.begin():
        s.add(DatasetRow(name="my old set", source="x.csv", kb="", questions=[]))
    legacy_kb = ws.data_dir / "kb" / "old_kb-"             # made under the old KB rule
    legacy_kb.mkdir(parents=True)
    (legacy_kb / "meta.json").write_text('{"name": "old_kb-"}')
    code, out, err = fk("flows", "list")
    assert code == 0 and old in out, err
    code, out, err = fk("flows", "export", old)
    assert code == 0 and '"name": "old flow (v2).json"' in out, err
    v = ws.store.save_flow(ws.store.get_flow(old)[0], 1, message="an edit")  # a new version
    assert v == 2
    code, out, _ = fk("dataset", "list")
    assert "my old set" in out
    repo = EvalRepo(ws.store)
    repo.save_dataset("my old set", "x.csv", [question("q1", "Who?")])     # replaced in place
    assert repo.get_dataset("my old set").size == 1
    assert check_name("old_kb-") == "old_kb-" and "old_kb-" in ws.resources.kb_names()
    code, out, _ = fk("kb")
    assert "old_kb-" in out
    with pytest.raises(FlowkitError, match="question set name 'my new set' is not allowed"):
        repo.save_dataset("my new set", "x.csv", [])

"""Issue 28, low findings: a FLOW argument too long to be a file name, or naming both a file and
a saved flow, ends in a clear one-line error (exit 2), never a traceback or a silent pick."""
from __future__ import annotations

from pathlib import Path

import pytest

from flowkit.errors import FlowkitError
from flowkit.spec import dump
from flowkit.templates import load_template
from service.cli import main
from service.workspace import Workspace


def test_a_300_character_flow_argument_is_a_clear_error(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    for ref in ("x" * 300, "y" * 300 + ".json"):
        code = main(["--data-dir", str(tmp_path), "run", ref, "--kb", "k", "-q", "q"])
        err = " ".join(capsys.readouterr().err.split())
        assert code == 2, err
        assert "not a flow file, a saved flow or a template" in err
        assert "cannot be a file name" in err and f"{len(ref)} characters" in err
        assert "Traceback" not in err and "OSError" not in err


def test_a_saved_flow_named_like_an_existing_file_is_ambiguous(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    on_disk = load_template("naive_rag").model_copy(update={"name": "from_the_file"})
    dump(on_disk, tmp_path / "mine.json")
    ws = Workspace(tmp_path / "data")
    saved = load_template("naive_rag").model_copy(update={"name": "mine.json"})
    ws.store.save_flow(saved, expected_version=None)

    code = main(["--data-dir", str(tmp_path / "data"), "run", "mine.json", "--kb", "k", "-q", "q"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2, err
    assert "names both the file" in err and str(tmp_path / "mine.json") in err
    assert "saved flow 'mine.json'" in err
    assert "'file:mine.json'" in err and "'saved:mine.json'" in err

    with pytest.raises(FlowkitError, match="names both"):
        ws.resolve_flow("mine.json")
    spec, version = ws.resolve_flow("file:mine.json")
    assert spec.name == "from_the_file" and version is None
    spec, version = ws.resolve_flow("saved:mine.json")
    assert spec.name == "mine.json" and version == 1
    spec, version = ws.resolve_flow("template:naive_rag")
    assert spec.name == "naive_rag" and version is None


def test_a_saved_flow_whose_name_ends_in_json_is_found(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a file of that name, the saved flow is used (it used to be unreachable)."""
    monkeypatch.chdir(tmp_path)
    ws = Workspace(tmp_path / "data")
    ws.store.save_flow(load_template("naive_rag").model_copy(update={"name": "old.json"}),
                       expected_version=None)
    spec, version = ws.resolve_flow("old.json")
    assert spec.name == "old.json" and version == 1

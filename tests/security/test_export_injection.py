"""Issue 28, high finding: a flow's text never becomes code in its exported package.

The proof of concept: a flow name that closed graph.py's module docstring, ran a statement and
reopened a string that the name's second copy closed again, so importing graph.py wrote a file.
"""
from __future__ import annotations

import ast
import builtins
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from flowkit.errors import ExportError, FlowkitError, SpecError, ValidationError
from flowkit.export import export_zip, render, write_package, writer
from flowkit.spec import FlowSpec, from_dict, to_dict
from flowkit.templates import load_template
from flowkit.testing import FakeLLM, fake_resources, flow
from flowkit.validate import check, validate_file
from service.cli import main

from .conftest import TripwireImporter, load_module

POC = 'x""";open("pwned.txt","w").write("ran");_=print(r\'\'\',#'


def renamed(spec: FlowSpec, name: str, description: str | None = None) -> FlowSpec:
    data = to_dict(spec)
    data["name"] = name
    if description is not None:
        data["description"] = description
    return from_dict(data)


def import_in_subprocess(folder: Path) -> subprocess.CompletedProcess[str]:
    """`python -c "import graph"` in the package folder, as a user (or `langgraph dev`) would."""
    return subprocess.run([sys.executable, "-c", "import graph; print(graph.RUNTIME.name)"],
                          cwd=folder, capture_output=True, text=True, encoding="utf-8",
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
                          timeout=120)


def test_the_proof_of_concept_name_exports_as_data_and_runs_nothing(tmp_path: Path,
                                                                     importer: TripwireImporter) -> None:
    spec = renamed(load_template("naive_rag"), POC)
    folder = tmp_path / "pkg"
    write_package(spec, folder)
    proc = import_in_subprocess(folder)
    assert not (folder / "pwned.txt").exists() and not (tmp_path / "pwned.txt").exists()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip("\n") == POC            # the name arrives whole, as a string
    seen = importer.load(folder)
    assert seen["ok"], seen
    assert seen["name"] == POC and "_finish" in seen["nodes"]
    for text in (folder / "README.md").read_text(), seen["doc"]:
        assert '"""' not in text and "open(" in text      # shown, but only as inert text


def test_the_proof_of_concept_through_validate_cli_export_and_the_studio_zip(
        tmp_path: Path, importer: TripwireImporter) -> None:
    file = tmp_path / "shared.json"
    file.write_text(json.dumps({**to_dict(load_template("ircot")), "name": POC}))
    spec, problems = validate_file(str(file))
    assert spec is not None and not [p for p in problems if p.severity == "error"]
    assert main(["--data-dir", str(tmp_path / "home"), "export", str(file), "--out",
                 str(tmp_path / "cli")]) == 0
    assert importer.load(tmp_path / "cli")["ok"]
    with zipfile.ZipFile(io.BytesIO(export_zip(spec))) as zf:
        (top,) = {n.split("/")[0] for n in zf.namelist()}
        assert top.replace("_", "").isalnum()            # the folder name is a plain word
        zf.extractall(tmp_path / "zip")
    assert importer.load(tmp_path / "zip" / top)["ok"]
    assert not list(tmp_path.rglob("pwned.txt"))


@pytest.mark.parametrize("name", ['a"""b', "tab\\u0041", "x\\x41", 'ends in a quote"',
                                  "back\\", "nul\x00here", "bell\x07 and \x1b[31m",
                                  "line\nbreak", "carriage\rreturn", "bidi \u202e txt",
                                  "unicode ünïcödé 名前 🚀", "{braces} {{x}} #comment"])
def test_names_with_quotes_escapes_and_control_characters_export_and_import(
        name: str, tmp_path: Path, importer: TripwireImporter) -> None:
    try:
        spec = renamed(load_template("naive_rag"), name, description=name + '\n"""' + name)
        refused: list[Any] = [p for p in check(spec) if p.severity == "error"]
    except SpecError as err:
        refused = [err]
    if refused:      # validate refuses control characters in a name: export refuses it too
        assert any(not c.isprintable() for c in name), refused
        assert all(getattr(p, "field", None) == "name" for p in refused), refused
        with pytest.raises((SpecError, ValidationError)):
            write_package(renamed(load_template("naive_rag"), name), tmp_path / "pkg")
        assert not (tmp_path / "pkg").exists()
        return
    write_package(spec, tmp_path / "pkg")
    seen = importer.load(tmp_path / "pkg")
    assert seen["ok"], seen
    assert seen["name"] == name


SHADOWS = ["list", "dict", "str", "print", "len", "float", "int", "type", "object", "super",
           "isinstance", "open", "exec", "Any", "Path", "State", "graph", "builder", "RUNTIME",
           "LIMITS", "annotations", "finish", "match", "case", "json", "node_1"]


def test_node_ids_named_like_builtins_and_module_names_export_import_and_run(tmp_path: Path) -> None:
    spec = flow("shadows", [*((i, "retrieval.bm25", {"top_k": 2}) for i in SHADOWS[:-1]),
                            (SHADOWS[-1], "generation.answer")],
                [f"{a}>{b}" for a, b in zip(SHADOWS, SHADOWS[1:])])
    folder = tmp_path / "pkg"
    write_package(spec, folder)
    proc = import_in_subprocess(folder)
    assert proc.returncode == 0, proc.stderr
    module = load_module(folder)
    out = module.graph.invoke({"question": "Where was Mara Velt born?"}, config={"configurable": {
        "flowkit_resources": fake_resources(FakeLLM(default="Tessel [1]"), kb="test"),
        "kb": "test"}})
    assert [t["node"] for t in out["trace"]] == SHADOWS
    assert out["answer"] == "Tessel"
    assert builtins.list is list and module.list_node.__name__ == "list_node"


def test_function_names_are_plain_ascii_names_that_shadow_nothing() -> None:
    spec = flow("names", [("list", "retrieval.bm25"), ("list_node", "retrieval.bm25"),
                          ("a-b", "retrieval.bm25"), ("a_b", "retrieval.bm25"),
                          ("State", "retrieval.bm25"), ("gen", "generation.answer")],
                ["list>list_node", "list_node>a-b", "a-b>a_b", "a_b>State", "State>gen"])
    names = writer.function_names(spec)
    assert len(set(names.values())) == len(names)
    source = render(spec)["graph.py"]
    tree = ast.parse(source)
    # every global name graph.py uses, other than its node functions, is reserved
    local = {a.arg for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) for a in n.args.args}
    local |= {f.target.id for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body
              if isinstance(f, ast.AnnAssign) and isinstance(f.target, ast.Name)}
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - local - {"__file__"}
    used |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
             for a in n.names}
    used |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert local == {"state", "config", "started", "trace", "run_id"}
    assert used - set(names.values()) <= writer.RESERVED
    for fn in names.values():
        assert fn.isascii() and fn.isidentifier() and fn not in writer.RESERVED
        assert fn not in dir(builtins)


def test_literal_round_trips_any_string_and_refuses_what_json_cannot_hold() -> None:
    for text in ['"""', "\\u0041", "\\x00", "\x00\x01\x1f\x7f", "\ud800", "\u2028\u2029",
                 "é名🚀", "'''", "\r\n", "{a}"]:
        src = writer.literal(text)
        assert ast.literal_eval(src) == text and "\n" not in src and "\x00" not in src
        assert src.encode("utf-8")
    assert ast.literal_eval(writer.literal({"k\"": ["v\\", 1, 2.5, None, True]})) == {
        "k\"": ["v\\", 1, 2.5, None, True]}
    for bad in (float("nan"), float("inf"), {1, 2}, b"bytes"):
        with pytest.raises(FlowkitError):
            writer.literal(bad)


def test_the_exporter_refuses_what_does_not_compile_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_template("naive_rag")
    monkeypatch.setattr(writer, "render_graph", lambda s, version=None: "def broken(:\n")
    with pytest.raises(ExportError, match="naive_rag"):
        write_package(spec, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(ExportError, match="does not compile"):
        export_zip(spec)


def _files(folder: Path) -> dict[str, Any]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_export_refuses_to_overwrite_any_file_without_force_and_lists_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text("my notes")
    (out / "langgraph.json").write_text("{}")
    (out / "keep.txt").write_text("unrelated")
    home = ["--data-dir", str(tmp_path / "home")]
    assert main([*home, "export", "naive_rag", "--out", str(out)]) == 2
    err = " ".join(capsys.readouterr().err.split())      # the console wraps long lines
    assert "already holds README.md, langgraph.json; pass --force to overwrite them" in err
    assert _files(out) == {"README.md": b"my notes", "langgraph.json": b"{}",
                           "keep.txt": b"unrelated"}
    with pytest.raises(ExportError, match="README.md, langgraph.json"):
        write_package(load_template("naive_rag"), out)
    assert main([*home, "export", "naive_rag", "--out", str(out), "--force"]) == 0
    files = _files(out)
    assert sorted(files) == ["README.md", "flow.json", "flowkit_settings.json", "graph.py",
                             "keep.txt", "langgraph.json"]
    assert files["keep.txt"] == b"unrelated" and files["README.md"] != b"my notes"
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".flowkit-export")]
    # an export into a fresh folder, then again without --force: refused, files unchanged
    before = _files(out)
    assert main([*home, "export", "ircot", "--out", str(out)]) == 2
    assert "graph.py" in capsys.readouterr().err and _files(out) == before


@pytest.mark.parametrize("payload", ['open("pwned.txt", "w").write("ran")',
                                     'exec("x = 1")', '__import__("os").system("true")',
                                     '__import__("subprocess").run(["true"])',
                                     '__import__("os").remove("missing.txt")'])
def test_the_tripwire_stops_and_reports_a_side_effect_in_graph_py(
        payload: str, tmp_path: Path, importer: TripwireImporter) -> None:
    folder = tmp_path / "pkg"
    write_package(load_template("naive_rag"), folder)
    with (folder / "graph.py").open("a", encoding="utf-8") as fh:
        fh.write(f"\n{payload}\n")
    seen = importer.load(folder)
    assert not seen["ok"] and seen["tripped"] and "Tripped" in seen["error"], seen
    assert sorted(p.name for p in folder.iterdir()) == sorted(render(load_template(
        "naive_rag")))

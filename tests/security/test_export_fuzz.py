"""Issue 28: hostile flows fuzzed through validate and export; every package imports inertly.

Hypothesis builds flow documents whose name, description, node ids, labels, route labels,
keywords and prompts mix quotes, triple quotes, backslashes, `\\u` and `\\x`, NUL and other
control characters, newlines, line and bidi separators, non-ASCII text, `#`, braces and snippets
of code. Each document goes through `validate_document` (what `flowkit validate` runs); a flow it
accepts must export, and its graph.py is imported in a separate process behind an audit-hook
tripwire (tests/security/tripwire_import.py): any file written, process started or code executed
that is not graph.py itself fails the test, as does a package whose name or nodes come back
different. A flow validate refuses must be refused by export too.
"""
from __future__ import annotations

import ast
import json
import tempfile
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from flowkit.errors import ValidationError
from flowkit.export import render, write_package
from flowkit.export.writer import function_names
from flowkit.validate import errors, validate_document

from .conftest import TripwireImporter

PIECES = ['"""', "'''", '"', "'", "\\", "\\u", "\\x", "\\N{", "\\U0001", "\\0", "#", "{", "}",
          "{{", "}}", "{question}", "%s", "`", "```", "é", "名前", "🚀", "\u00a0", ";", ":", "(",
          ")", "r'''", 'b"', "f'{", "__import__('os').system('id')", 'open("pwned.txt","w")',
          "\n", "<!--", "<script>", "*/", "# ", "\\n"]
CONTROL = ["\x00", "\x01", "\x07", "\x08", "\x0b", "\x0c", "\r", "\t", "\x1b[2J", "\x7f", "\x85",
           "\u2028", "\u2029", "\u202e", "\u200b", "\ufeff"]
SHADOWS = ["list", "dict", "str", "print", "len", "type", "open", "exec", "State", "graph",
           "builder", "RUNTIME", "LIMITS", "finish", "annotations", "match", "a-b", "a_b",
           "node_1", "node_2", "Path", "Any", "END", "START", "FINISH", "True", "None", "class"]


def texts(pieces: list[str], chars: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(st.sampled_from(pieces), st.text(chars, max_size=6)),
                    max_size=8).map("".join)


#: Anything at all: descriptions, prompts, keywords.
anything = texts(PIECES + CONTROL, st.characters(blacklist_categories=["Cs"]))
#: What validate accepts in a name or label (flowkit.names): no controls, no line separators;
#: format characters (bidi overrides, zero-width spaces, BOM) are in.
_REFUSED: list[Any] = ["Cs", "Cc", "Zl", "Zp"]
visible = texts([p for p in PIECES + CONTROL
                 if all(unicodedata.category(c) not in _REFUSED for c in p)],
                st.characters(blacklist_categories=_REFUSED))
node_ids = st.one_of(st.sampled_from(SHADOWS),
                     st.from_regex(r"\A[A-Za-z][A-Za-z0-9_\-]{0,12}\Z"))


@st.composite
def flow_docs(draw: st.DrawFn) -> dict[str, Any]:
    """A router choosing between three answer nodes by labels, every text hostile."""
    ids = draw(st.lists(node_ids, min_size=4, max_size=4, unique=True))
    labels = draw(st.lists(visible.filter(str.strip), min_size=3, max_size=3, unique=True))
    name = draw(st.one_of(visible.filter(str.strip), anything).filter(lambda s: 0 < len(s) <= 200)
                if draw(st.integers(0, 4)) == 0 else visible.filter(str.strip))
    routes = {labels[0]: draw(st.lists(anything, max_size=3)),
              labels[1]: draw(st.lists(anything, max_size=3))}
    nodes = [{"id": ids[0], "operator": "orchestration.keyword_router",
              "params": {"routes": routes, "default": labels[2]}, "label": draw(visible)}]
    for node_id in ids[1:]:
        prompt = "{question} {passages} " + draw(anything)
        nodes.append({"id": node_id, "operator": "generation.answer",
                      "params": {"prompt": prompt}, "label": draw(visible)})
    return {"schema_version": 1, "name": name, "description": draw(anything), "nodes": nodes,
            "edges": [{"source": ids[0], "target": t, "label": lab}
                      for t, lab in zip(ids[1:], labels)]}


def _static_checks(files: dict[str, str], names: dict[str, str]) -> None:
    """graph.py parses; its docstrings are plain ASCII; its function names are the allowlist's;
    langgraph.json is JSON; no file holds a NUL."""
    tree = ast.parse(files["graph.py"])
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node, clean=False) or ""
            assert doc.isascii() and '"' not in doc and "\\" not in doc, doc
    defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert defs == {*names.values(), "finish"}
    json.loads(files["langgraph.json"])
    assert not any("\x00" in text for text in files.values())


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=flow_docs())
def test_every_flow_validate_accepts_exports_a_package_that_imports_and_runs_nothing(
        doc: dict[str, Any], importer: TripwireImporter) -> None:
    spec, problems = validate_document(doc)
    if spec is None or errors(problems):
        event(f"refused: {(errors(problems) or problems)[0].code}")
        if spec is not None:          # validate and export agree: export refuses it too
            with pytest.raises(ValidationError):
                render(spec)
        return
    event("exported")
    files = render(spec)
    _static_checks(files, function_names(spec))
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "pkg"
        write_package(spec, folder)
        seen = importer.load(folder)
        assert seen["ok"], seen
        assert seen["name"] == spec.name
        assert set(seen["nodes"]) == {"__start__", "__end__", "_finish",
                                      *(n.id for n in spec.nodes)}
        assert sorted(p.name for p in Path(root).iterdir()) == ["pkg"]
        assert sorted(p.name for p in folder.iterdir()) == sorted(files)

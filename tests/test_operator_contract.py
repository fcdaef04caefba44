"""The operator contract: discovery of operator files, the closed registry, typed params."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from flowkit import contract, registry
from flowkit.operators import discover
from flowkit.spec import loads
from flowkit.testing import FakeLLM, run_operator
from flowkit.validate import check

NEW_OPERATOR = '''
from typing import Any

from flowkit.context import RunContext
from flowkit.memory import MemoryView
from flowkit.contract import Operator, OperatorParams, operator


@operator("retrieval.picked_up_{n}")
class PickedUp(Operator["PickedUp.Params"]):
    """An operator in a new file that no __init__.py names."""

    class Params(OperatorParams):
        top_k: int = 2

    reads = ("documents",)
    writes = ("documents",)

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        return {{"documents": list(memory["documents"])[: self.params.top_k]}}
'''


def test_a_new_operator_file_is_picked_up_without_an_import_line(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch):
    pkg = tmp_path / "extra_ops"
    (pkg / "retrieval").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "retrieval" / "__init__.py").write_text('"""Only a docstring: no import lines."""\n')
    (pkg / "retrieval" / "fresh.py").write_text(NEW_OPERATOR.format(n=1))
    monkeypatch.syspath_prepend(str(tmp_path))
    key = "retrieval.picked_up_1"
    try:
        assert discover("extra_ops") == ["extra_ops.retrieval.fresh"]
        cls = registry.get(key)
        assert cls is not None and cls.module == "retrieval"
        out = run_operator(key, {"documents": [{"id": "a"}, {"id": "b"}, {"id": "c"}]}, top_k=1)
        assert out == {"documents": [{"id": "a"}]}
    finally:
        contract._CATALOG.pop(key, None)
        for name in [m for m in sys.modules if m.startswith("extra_ops")]:
            del sys.modules[name]


def test_every_builtin_operator_file_is_discovered():
    import flowkit.operators as ops
    root = Path(ops.__file__).parent
    files = {f"flowkit.operators.{p.parent.name}.{p.stem}" for m in contract.MODULES
             for p in (root / m).glob("*.py") if p.stem != "__init__"}
    assert files <= set(sys.modules)
    keys = registry.all_operators()
    assert len(keys) >= 45
    assert {cls.__module__ for cls in keys.values()} <= files


def test_a_flow_file_never_imports_what_it_names():
    spec = loads('{"name": "evil", "nodes": [{"id": "a", "operator": "antigravity.fly"}, '
                 '{"id": "b", "operator": "retrieval.this"}], "edges": [{"source": "a", '
                 '"target": "b"}]}')
    before = set(sys.modules)
    problems = check(spec)
    assert {p.code for p in problems} >= {"unknown_operator"}
    assert "antigravity" not in sys.modules and "this" not in sys.modules
    assert not {m for m in set(sys.modules) - before if not m.startswith("flowkit")}


def test_params_base_and_decorator_checks():
    with pytest.raises(ValueError, match="must be '<module>.<name>'"):
        contract.operator("nowhere.x")
    from pydantic import ValidationError
    with pytest.raises(ValidationError):
        run_operator("post_retrieval.reorder", {"documents": []}, top_k=0)
    with pytest.raises(ValidationError):      # unknown fields are errors
        run_operator("post_retrieval.reorder", {"documents": []}, no_such_param=1)
    with pytest.raises(KeyError, match="no operator"):
        run_operator("post_retrieval.nothing", {})


def test_run_operator_passes_memory_read_only():
    out = run_operator("orchestration.keyword_router", {"question": "Who built it?"},
                       FakeLLM())
    assert out["route"] == "retrieve"

"""flowkit's public names (flowkit/__init__.py) are imported on first use: each resolves to the
object its module defines, and importing the package or its errors loads no LangGraph (the
`flowkit` command and the model worker start without it)."""
from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import flowkit


def test_every_public_name_is_its_modules_object() -> None:
    assert sorted(flowkit.__all__) == sorted(flowkit._WHERE)
    for name in flowkit.__all__:
        module = importlib.import_module(f"flowkit.{flowkit._WHERE[name]}")
        assert getattr(flowkit, name) is getattr(module, name), name
    assert set(flowkit.__all__) <= set(dir(flowkit))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'compile_flows'"):
        flowkit.compile_flows  # noqa: B018 (the access is the test)
    with pytest.raises(ImportError):
        exec("from flowkit import compile_flows", {})


def test_the_package_and_its_errors_load_no_langgraph() -> None:
    code = ("import sys, flowkit, flowkit.errors, flowkit.runtime.worker; "
            "print(sorted(m for m in sys.modules if m.startswith('langgraph')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
    code = "import sys, flowkit; flowkit.compile_flow; print('langgraph' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"

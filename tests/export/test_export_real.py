"""An exported template on the real default model and the sample KB gives run_flow's answer."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flowkit import ListSink, compile_flow, run_flow
from flowkit.run_request import RunHooks, RunRequest
from flowkit.templates import load_template

from .conftest import export, sequence

pytestmark = pytest.mark.real

TWO_HOP = "On which island was the designer of the Corren Lighthouse born?"


def test_exported_ircot_matches_run_flow_on_the_real_model(real_resources: Any, tmp_path: Path):
    spec = load_template("ircot")        # the loop: retrieve -> reason -> judge, up to 4 rounds
    sink = ListSink()
    result = run_flow(compile_flow(spec), real_resources, RunRequest(TWO_HOP, kb="sample"),
                      RunHooks(sink=sink))
    assert result.status == "ok", result.error
    _, module = export(spec, tmp_path)
    out = module.graph.invoke({"question": TWO_HOP}, config={"configurable": {
        "flowkit_resources": real_resources, "kb": "sample"}})
    assert out["answer"] == result.answer and out["answer"].strip()
    assert sequence(out["trace"]) == sink.sequence()
    assert sink.sequence().count(("enough", 1)) == 1 and len(sink.sequence()) >= 4
    assert (out["llm_calls"], out["tokens"]) == (result.cost.calls, result.cost.tokens)
    assert out.get("citations", []) == result.citations

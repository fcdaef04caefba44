"""On the real model (SmolLM2 through llama.cpp, real embedder and Chroma on the sample KB):
pausing before every node and continuing gives the same steps, prompts and answer as a straight
run, for a linear template, a loop and one with parallel branches."""
from __future__ import annotations

from typing import Any

import pytest
from debugkit import drive, straight

from flowkit import compile_flow
from flowkit.templates import load_template

QUESTION = "On which island was the designer of the Corren Lighthouse born?"


@pytest.mark.real
@pytest.mark.parametrize("name", ["naive_rag", "iter_retgen", "pre_retrieval_branching"])
def test_pause_everywhere_then_continue_matches_a_straight_run(name: str, real_resources: Any):
    flow = compile_flow(load_template(name))
    end0, sink0 = straight(flow, real_resources, QUESTION, kb="sample")
    stops = [n for n in flow.operators if n not in flow.topology.branch_of]
    end, sink, pauses = drive(flow, real_resources, stops, question=QUESTION, kb="sample")
    assert end0.status == "ok" and end.status == "ok"
    outside = [x for x in sink0.sequence() if x[0] not in flow.topology.branch_of]
    assert [(p.node, p.visit) for p in pauses] == outside
    assert sorted(sink.sequence()) == sorted(sink0.sequence())
    assert sorted(c.prompt for s in sink.steps for c in s.llm_calls) == \
        sorted(c.prompt for s in sink0.steps for c in s.llm_calls)
    assert end.answer == end0.answer and end.answer.strip()

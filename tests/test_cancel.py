"""Cancelling a run: the engine checks the `cancel` event between steps (and before each LLM call
of a step), ends with status `cancelled`, and makes no last "answer anyway" call."""
from __future__ import annotations

import threading

from flowkit import compile_flow, run_flow, templates
from flowkit.engine import CANCELLED
from flowkit.run_request import RunHooks, RunRequest
from flowkit.testing import FakeLLM, fake_resources
from flowkit.trace import ListSink

QUESTION = "Who designed the Corren Lighthouse?"


def test_a_cancel_set_during_a_step_stops_the_run_before_the_next_step():
    cancel = threading.Event()

    def rewrite(prompt: str) -> str:
        cancel.set()                       # the user presses Cancel while step 0 runs
        return "Corren Lighthouse designer"

    llm = FakeLLM([(r"rewrite|search query|Rewrite", rewrite)], default="Mara Velt [d1]")
    flow = compile_flow(templates.load_template("rewrite_retrieve_read"))
    sink = ListSink()
    end = run_flow(flow, fake_resources(llm), RunRequest(QUESTION, kb="test"),
                   RunHooks(sink=sink, cancel=cancel))
    assert end.status == CANCELLED and end.halt_reason == CANCELLED
    assert [s.node_id for s in sink.steps] == ["rewrite"]     # retrieve and read never ran
    assert len(llm.prompts) == 1                              # and no fallback answer call


def test_without_cancel_the_same_flow_runs_to_its_end():
    cancel = threading.Event()
    llm = FakeLLM([(r"rewrite|search query|Rewrite", "Corren Lighthouse designer")],
                  default="Mara Velt [d1]")
    flow = compile_flow(templates.load_template("rewrite_retrieve_read"))
    sink = ListSink()
    end = run_flow(flow, fake_resources(llm), RunRequest(QUESTION, kb="test"),
                   RunHooks(sink=sink, cancel=cancel))
    assert end.status == "ok" and [s.node_id for s in sink.steps] == ["rewrite", "retrieve", "read"]

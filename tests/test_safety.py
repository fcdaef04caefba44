"""Loading, validating, compiling or running a flow never executes code named in it."""
from __future__ import annotations

import json

from flowkit import ListSink, compile_flow, loads, run_flow
from flowkit.run_request import RunHooks, RunRequest
from flowkit.testing import FakeLLM, fake_resources
from flowkit.validate import validate_document


def hostile(tmp_path):
    marker = tmp_path / "pwned"
    payload = f"__import__('os').system('touch {marker}')"
    return marker, {
        "name": f"exec(open('{marker}','w').write('x'))",
        "description": "{{7*7}} ${jndi:x} " + payload,
        "nodes": [
            {"id": "ret", "operator": "retrieval.bm25", "params": {"top_k": 2},
             "label": "{{ cycler.__init__.__globals__.os.popen('id') }}"},
            {"id": "gen", "operator": "generation.answer",
             "params": {"prompt": "{question.__class__.__mro__} " + payload +
                        " {{7*7}} {passages} Q: {question}"}},
        ],
        "edges": [{"source": "ret", "target": "gen"}],
    }, payload


def test_code_looking_strings_stay_strings(tmp_path):
    marker, doc, payload = hostile(tmp_path)
    spec = loads(json.dumps(doc))
    compiled = compile_flow(spec)
    llm = FakeLLM(default="Tessel")
    result = run_flow(compiled, fake_resources(llm), RunRequest("Where? " + payload, kb="test"),
                      RunHooks(sink=ListSink()))
    assert result.status == "ok"
    assert not marker.exists()
    prompt = llm.prompts[0]
    assert "{question.__class__.__mro__}" in prompt        # never str.format-ed
    assert payload in prompt and "{{7*7}}" in prompt
    assert "49" not in prompt


def test_operator_names_are_never_imported(tmp_path):
    marker = tmp_path / "pwned"
    for op in (f"__import__('os').system('touch {marker}')", "os.system", "subprocess.run",
               "flowkit.engine.run_flow", "builtins.exec"):
        doc = {"name": "x", "nodes": [{"id": "a", "operator": op}]}
        _, problems = validate_document(doc)
        assert [p.code for p in problems] == ["unknown_operator"], op
    assert not marker.exists()

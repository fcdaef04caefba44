"""Issue 38 item 6: the Flows page's import refusals say what to do in the studio; the hints of
the reader shared with the CLI named a shell command ("compare with a template: flowkit
templates")."""
from __future__ import annotations

import pytest

from flowkit.validate import validate_bytes
from studio.flows.import_hints import CLI_MARK, for_the_studio

REFUSED = [b'{"name": "x", "nodes": 3}', b"[1,", b'{"a": 1, "a": 2}', b"\xff",
           b'{"schema_version": 99, "name": "x", "nodes": []}']


@pytest.mark.parametrize("raw", REFUSED)
def test_no_refusal_shown_in_the_studio_names_a_cli_command(raw: bytes) -> None:
    spec, problems = validate_bytes(raw)
    assert spec is None and problems
    for p in map(for_the_studio, problems):
        assert CLI_MARK not in p.hint, p
        assert (p.code, p.message, p.field) == (problems[0].code, problems[0].message,
                                                problems[0].field)


def test_the_template_hint_points_at_new_flow_and_export() -> None:
    [problem] = validate_bytes(b'{"name": "x", "nodes": 3}')[1]
    assert "flowkit templates" in problem.hint          # the CLI's own hint stays as it was
    hint = for_the_studio(problem).hint
    assert "New flow" in hint and "Export" in hint and "numbers are written" in hint, hint

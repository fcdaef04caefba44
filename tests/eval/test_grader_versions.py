"""A grader's prompt version is stored with its verdicts: grading again keeps the verdicts of the
current version and makes again those of an older prompt (context relevance moved to graders-2),
so a changed prompt never leaves old verdicts mixed with new ones."""
from __future__ import annotations

import dataclasses
import json

from flowkit.eval.graders import grader_version
from flowkit.testing import FakeLLM
from service.grading import grade, grade_repo


def test_a_verdict_of_an_older_prompt_is_made_again(world, fk, tmp_path):
    code, _, err = fk("eval", "--flow", str(world.good), "--dataset", str(world.dataset),
                      "--kb", "test", "--limit", "2", "--out", str(tmp_path / "r.json"))
    assert code == 0, err
    eval_id = json.loads((tmp_path / "r.json").read_text())["eval_id"]
    world.ws.resources.set_llm(FakeLLM([], default="yes"))
    first = grade(world.ws, eval_id, ["context_relevance", "correctness"])
    assert first.graded == 2
    stored = grade_repo(world.ws).grades(eval_id, grader="context_relevance")
    assert {g.version for g in stored} == {grader_version("context_relevance")} == {"graders-2"}
    # one verdict as the old prompt stored it: only that one is asked again
    old = dataclasses.replace(stored[0], version="graders-1", score=0.0)
    grade_repo(world.ws).put_grade(old)
    again = grade(world.ws, eval_id, ["context_relevance", "correctness"])
    assert (again.graded, again.reused) == (1, 1)
    redone = [g for g in grade_repo(world.ws).grades(eval_id, grader="context_relevance")
              if g.question_id == old.question_id]
    assert len(redone) == 1 and redone[0].version == "graders-2" and redone[0].score == 1.0
    assert {g.version for g in grade_repo(world.ws).grades(eval_id, grader="correctness")} == {
        "graders-1"}

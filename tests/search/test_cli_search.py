"""`flowkit search` through the CLI entry with the scripted workspace: the estimate first, the
race's drops, the table with the front and its confirmation; the same command resumes."""
from __future__ import annotations

import json
import re


def test_search_command_estimates_races_confirms_and_resumes(world, fk):
    args = ["search", str(world.space), "--dataset", str(world.dataset), "--kb", "test",
            "--search-questions", "4-9", "--confirm-questions", "1-3", "--budget-calls", "500",
            "--first-batch", "3"]
    code, out, err = fk(*args, "--estimate")
    assert code == 0 and "(new; state in" in err and "estimate: 4 candidates raced on batches of [3, 6]" in err
    code, out, err = fk(*args)
    assert code == 0, err
    assert err.index("estimate:") < err.index("dropped c")          # the estimate comes first
    assert "the interval is below 0" in err and "2 of 4 candidates dropped early" in err
    assert re.search(r"c0\d \*", out) and "reference" in out and "tiny-c00 v1" in out
    assert "good · gen.prompt=Reply briefly." in out and "files/good.json" not in out
    # each drop's reason on a line of its own, whole (not folded into a table column)
    assert re.search(r"^why c0\d \(dropped\): after 3 questions: F1 .* the interval is below 0$",
                     out, re.M), out
    assert re.search(r"front c0\d \(good · .*\): search F1 100\.0 on 6, \d+ tokens/q; "
                     r"confirm F1 100\.0 on 3 \(\+0\.0 \[\+0\.0, \+0\.0\] vs c00\)", out), out
    state = json.loads(next(world.space.parent.glob("space.search-*.json")).read_text())
    assert state["phase"] == "done" and len(state["confirm"]) >= 1
    code, out, err = fk(*args)
    assert code == 0 and "(resumed; state in" in err and "question" not in err.split("estimate")[1]


def test_search_command_refusals(world, fk):
    code, out, _ = fk("search", str(world.space), "--check")
    assert code == 0 and "search space 'tiny' is valid: 1 flow(s), 2 param axes" in out
    world.space.write_text(json.dumps({"name": "x", "flows": ["naive_rag"],
                                       "params": [{"node": "retrieve", "param": "top_kk",
                                                   "choices": [1]}]}))
    code, _, err = fk("search", str(world.space), "--check")
    assert code == 2 and "params[0] (node 'retrieve', param 'top_kk'): unknown param" in err
    code, _, err = fk("search", str(world.space), "--dataset", str(world.dataset))
    assert code == 2 and "search needs --dataset, --kb" in err


def test_search_command_refuses_a_halving_the_search_page_refuses(world, fk):
    """Between 0 and 1 (or negative) the race would ignore --halving: refused as on the page,
    naming the option and its range, before the workspace is opened or a state file written."""
    args = ["search", str(world.space), "--dataset", str(world.dataset), "--kb", "test",
            "--search-questions", "4-9", "--confirm-questions", "1-3", "--budget-calls", "500"]
    for bad in ("0.5", "1", "-2", "nan"):
        code, out, err = fk(*args, "--halving", bad, "--estimate")
        assert code == 2, (bad, err)
        assert "--halving must be 0 (off) or more than 1 (2 keeps the top half)" in err, err
        assert "estimate" not in err and out == ""
    assert not list(world.space.parent.glob("space.search-*.json"))     # nothing ran
    for good in ("0", "2", "1.5"):
        code, _, err = fk(*args, "--halving", good, "--estimate")
        assert code == 0 and "estimate: " in err, (good, err)
    code, out, err = fk(*args, "--halving", "2", "--halving-from", "-1", "--estimate")
    assert code == 2 and "--halving-from: must be a whole number >= 0; got '-1'" in err, err
    code, _, err = fk(*args, "--halving", "2", "--halving-from", "40", "--estimate")
    assert code == 0 and "estimate: " in err, err

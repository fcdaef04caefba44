"""Re-evaluate a variant: `flowkit eval --from EVAL --flow VARIANT` adds a column whose shared
calls come from the completion cache; `flowkit diverge` says where the variant parts from its parent;
a cached evaluation reports the same figures as the uncached one."""
from __future__ import annotations

import json

from flowkit.spec import dump
from flowkit.testing import flow
from service.evaluations import where_flows_part


def chain(name: str, gen_prompt: str | None = None):
    gen = {"prompt": gen_prompt} if gen_prompt else {}
    return flow(name, [("rewrite", "pre_retrieval.rewrite"), ("ret", "retrieval.bm25", {"top_k": 2}),
                       ("gen", "generation.answer", gen)], ["rewrite>ret", "ret>gen"])


def test_a_variant_column_reuses_the_parent_runs_and_its_shared_calls(world, fk, tmp_path):
    parent, variant = tmp_path / "chain.json", tmp_path / "chain_v2.json"
    dump(chain("chain"), parent)
    dump(chain("chain", "Reply briefly.\n{passages}\nQ: {question}\nA:"), variant)
    code, _, err = fk("eval", "--flow", str(parent), "--dataset", str(world.dataset), "--kb", "test",
                      "--limit", "4", "--out", str(tmp_path / "a.json"))
    assert code == 0, err
    assert "model calls: 8 computed, 0 served" in err          # rewrite + answer, 4 questions
    eval_id = json.loads((tmp_path / "a.json").read_text())["eval_id"]
    calls_before = len(world.ws.resources.llm.prompts)

    code, out, err = fk("eval", "--from", eval_id, "--flow", str(variant),
                        "--out", str(tmp_path / "b.json"))
    assert code == 0, err
    assert "ran 4, skipped 4" in err                              # the parent's runs are kept
    assert "model calls: 4 computed, 4 served" in err             # the rewrites come from the cache
    assert len(world.ws.resources.llm.prompts) - calls_before == 4
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["eval_id"] == eval_id and set(data["summary"]) == {"chain", "chain#2"}
    # the variant's cost is still what computing it costs: two calls a question
    assert data["summary"]["chain#2"]["llm_calls"] == 2.0

    rep = where_flows_part(world.ws, eval_id, "chain", "chain#2")
    assert [p.node_id for p in rep.partings] == ["gen"] * 4
    assert all(p.step_a == 2 and "answer" in p.keys for p in rep.partings)
    (group,) = rep.groups
    assert (group.node_id, group.n, group.changed) == ("gen", 4, 4)
    assert (group.better, group.worse, group.same) == (0, 3, 1)  # q3 was wrong in both
    assert group.f1_delta < 0
    code, out, _ = fk("diverge", eval_id, "chain", "chain#2")
    assert code == 0 and "gen" in out and "answer changed" in out

    # the same variant again is refused; a column that does not exist is named
    code, _, err = fk("eval", "--from", eval_id, "--flow", str(variant))
    assert code == 2 and "is the same flow as column 'chain#2'" in err
    code, _, err = fk("diverge", eval_id, "chain", "nope")
    assert code == 2 and "no column 'nope'" in err


def test_a_cached_evaluation_reports_what_the_uncached_one_did(world, fk, tmp_path):
    parent = tmp_path / "chain.json"
    dump(chain("chain"), parent)
    args = ["--flow", str(parent), "--flow", str(world.good), "--dataset", str(world.dataset),
            "--kb", "test", "--limit", "4"]
    code, _, err = fk("eval", *args, "--name", "cold", "--out", str(tmp_path / "cold.json"))
    assert code == 0, err
    # a new evaluation of the same flows (another limit makes another id) served from the cache
    code, _, err = fk("eval", *args[:-1], "3", "--out", str(tmp_path / "warm.json"))
    assert code == 0 and "0 computed" in err, err
    cold = json.loads((tmp_path / "cold.json").read_text())
    warm = json.loads((tmp_path / "warm.json").read_text())
    cold_q = {(r["flow"], r["question_id"]): r for rs in cold["results"].values() for r in rs}
    warm_rs = [r for rs in warm["results"].values() for r in rs]
    assert len(warm_rs) == 6
    for r in warm_rs:
        c = cold_q[(r["flow"], r["question_id"])]
        assert (r["prediction"], r["em"], r["f1"], r["tokens"], r["llm_calls"]) == \
            (c["prediction"], c["em"], c["f1"], c["tokens"], c["llm_calls"])

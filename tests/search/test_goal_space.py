"""The spaces of the flow search's goal runs (bench/spaces/) stay valid against
the templates they name: a renamed node or a param out of range breaks the documented command."""
from __future__ import annotations

from pathlib import Path

from flowkit.search.space import size
from service import search

GOAL = Path(__file__).resolve().parents[2] / "bench" / "spaces" / "hotpot_goal.json"


def test_the_goal_space_loads_against_the_templates(world):
    space, flows = search.load(world.ws, str(GOAL))
    assert list(flows) == ["naive_rag", "iter_retgen", "corag_early_stop"]
    # naive_rag: 3 retrievers x top_k 4 x top_n 4; iter_retgen: x final top_n 4 x rounds 3;
    # corag_early_stop: 3 x top_k 4 x final top_n 4 x final_retrieve top_k 3
    assert size(space, flows) == 48 + 576 + 144
    assert space.max_candidates == 15 and space.models == ["default"]


def test_the_follow_up_space_loads_against_its_template(world):
    """bench/spaces/hotpot_prb.json (post_retrieval_branching's retriever and top_k, the README's
    follow-up run) names nodes and values the template has."""
    space, flows = search.load(world.ws, str(GOAL.with_name("hotpot_prb.json")))
    assert list(flows) == ["post_retrieval_branching"]
    assert size(space, flows) == 3 * 4 and space.max_candidates == 12

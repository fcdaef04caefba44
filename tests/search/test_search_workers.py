"""A search on Ray workers (`--workers 2`, the scripted model in every worker): the same candidates,
drops and figures as on one, its runs done by the workers' processes; a multi-machine address is
refused while the engines are embedded, before anything runs."""
from __future__ import annotations

import functools
import os
import sys
from dataclasses import replace

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from flowkit.errors import FlowkitError
from flowkit.runtime.resources import Settings
from service import search
from storage.models import RunRow

from .conftest import make_workspace
from .test_race import request


def figures(st):
    """What a search found (the seconds apart: they differ from run to run)."""
    return ([(e.cid, e.key, e.status, e.reached, e.score, e.tokens, e.reason) for e in st.entries],
            {cid: replace(c, seconds=0.0) for cid, c in st.confirm.items()},
            st.phase, st.race_status)


def test_a_search_on_two_ray_workers_finds_what_one_finds(world):
    one = search.run(world.ws, search.prepare(world.ws, request(world)))
    ws2 = make_workspace(world.root / "home2")
    plan = search.prepare(ws2, request(world, workers=2))
    assert search.estimate(plan).describe().endswith("; on 2 Ray workers")
    # each worker builds the scripted workspace on the same data directory (the factory goes
    # by value: the workers cannot import this test package); its threads set, a worker leaves
    # the cores and torch alone, which a scripted model does not use
    one_thread = Settings().with_llm(n_threads=1)
    plan.worker_factory = lambda w: functools.partial(make_workspace, w.data_dir, one_thread)
    from ray import cloudpickle
    here = sys.modules[make_workspace.__module__]
    cloudpickle.register_pickle_by_value(here)
    try:
        two = search.run(ws2, plan)
    finally:
        cloudpickle.unregister_pickle_by_value(here)
    assert one.phase == "done" and figures(two) == figures(one)
    assert sorted(e.status for e in two.entries) == ["dropped", "dropped", "kept", "kept"]
    assert two.budget.spent_calls + two.budget.cached_calls == \
        one.budget.spent_calls + one.budget.cached_calls
    with Session(ws2.store.engine) as s:
        pids = set(s.scalars(select(RunRow.pid)))
    # worker processes did every run (two per evaluation, started anew for each)
    assert os.getpid() not in pids and len(pids) >= 2


def test_a_cluster_address_with_embedded_engines_is_refused_before_the_search(world):
    with pytest.raises(FlowkitError, match="--ray-address ray://head:10001 may span several"):
        search.prepare(world.ws, request(world, workers=2, ray_address="ray://head:10001"))
    with pytest.raises(FlowkitError, match="--workers must be at least 1"):
        search.prepare(world.ws, request(world, workers=0))
    assert not list(world.space.parent.glob("space.search-*.json"))      # nothing started

"""`flowkit search --concurrency N`: each candidate's evaluation keeps N runs in flight to the
settings' model server (a scripted OpenAI-compatible server counting the requests in flight),
with the same race outcome; a bad N, or N with --workers, is refused before anything runs."""
from __future__ import annotations

from typing import Any

import pytest

from flowkit.errors import FlowkitError
from flowkit.testing.openai_fake import fake_openai_server
from service import search
from service.evaluations import eval_repo

from .conftest import PLAIN, answer_for


def request(world: Any, **over: Any) -> search.SearchRequest:
    kw: dict[str, Any] = {"first_batch": 3, "budget_calls": 1000}
    kw.update(over)
    return search.SearchRequest(str(world.space), str(world.dataset), "test", "4-9", "1-3", **kw)


def test_search_evaluations_keep_runs_in_flight(world: Any) -> None:
    with fake_openai_server(answer_for, parallel=2, hold_until=2) as server:
        res = world.ws.resources
        res.settings = res.settings.with_llm(backend="openai", base_url=server.url,
                                             model_name="fake")
        res._llm = None                       # the client for the server, made anew
        st = search.run(world.ws, search.prepare(world.ws, request(world, concurrency=2)))
    assert (st.phase, st.race_status) == ("done", "done")
    assert server.max_in_flight == 2
    kept = [e for e in st.entries if e.status == "kept"]
    assert kept and {e.candidate.params.get("gen.prompt", PLAIN)
                     for e in kept} == {PLAIN}
    runs = [info.execution for info in eval_repo(world.ws).list_evals()]
    assert runs and all(ex[-1] == {"concurrency": 2, "server_parallel": 2} for ex in runs)


@pytest.mark.parametrize(("over", "words"), [({"concurrency": 0}, "from 1 to 64"),
                                             ({"concurrency": 2, "workers": 2}, "choose one")])
def test_bad_concurrency_is_refused(world: Any, over: dict[str, Any], words: str) -> None:
    with pytest.raises(FlowkitError, match=words):
        search.prepare(world.ws, request(world, **over))

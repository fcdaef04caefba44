"""The Search page (AppTest): a bad space is refused naming the field; a tiny search (two
candidates of naive_rag, one with a prompt the scripted model cannot answer) is checked, started
in the background, followed to the end and shows its front with the confirmation figures and the
links to the Editor, Compare and Replay (its best answer, a stored run); the budget in hours and
the halving factor reach the search as the CLI's flags do; a running search is cancelled and resumed. The model is a
FakeLLM, the sample KB uses a hashing embedder (no model loads)."""
from __future__ import annotations

import json
import re
import threading

import pytest
from _runkit import page, texts, until, workspace

from flowkit import registry, templates
from flowkit.testing import FakeLLM
from service import search
from service.runs import get_run
from studio.common.jobs import get_jobs
from studio.common.workspace import use_workspace
from studio.search import search_data

ANSWERS = {"In what year was the Corren Lighthouse first lit?": "1884",
           "How many arches does the Sundby Viaduct have?": "11",
           "Who founded the Halvard Ferry Company?": "Jorun Abbe",
           "How high is Mount Aldra, in metres?": "1,412 metres",
           "In which month is Lamp Night held on Tessel?": "November",
           "What is the name of the main telescope at the Mount Aldra Observatory?":
               "the Brisk Refractor",
           "On which island was the engineer who designed the Sundby Viaduct born?": "Tessel",
           "On which island was the inventor of the fog signal used at the Grey Needle "
           "Lighthouse born?": "Vinmark",
           "Who was the first keeper of the lighthouse that the Isle Council decided to build "
           "after the Great Storm of 1867?": "Elias Brant",
           "In which month is the festival held on the island where the astronomer Iselda Marr "
           "was born?": "September",
           "Which is taller, the Corren Lighthouse or the Grey Needle Lighthouse?":
               "Grey Needle Lighthouse",
           "Which was founded earlier, the University of Osterhavn or the Halvard Ferry "
           "Company?": "University of Osterhavn"}
VAGUE = "Reply.\n{passages}\nQ: {question}\nA:"
PLAIN = registry.get("generation.answer").Params.model_fields["prompt"].default
GATE = threading.Event()          # the model answers only while set (the cancel test holds it)


def answer(prompt: str) -> str:
    GATE.wait(60)
    m = re.search(r"Question: (.*?)\nAnswer:", prompt, flags=re.S)
    return ANSWERS.get(m.group(1).strip(), "no idea") if m else "no idea"


def space(**over: object) -> str:
    doc = {"kind": "flowkit-search-space", "version": 1, "name": "tiny", "flows": ["naive_rag"],
           "params": [{"node": "generate", "param": "prompt", "choices": [VAGUE, PLAIN]}],
           "max_candidates": 2, "seed": 0}
    doc.update(over)
    return json.dumps(doc)


@pytest.fixture()
def ws(tmp_path):
    GATE.set()
    w = workspace(tmp_path / "home")
    w.resources.set_llm(FakeLLM([(r"Question: .*\nAnswer:", answer)], default="no idea"))
    use_workspace(w)
    yield w
    GATE.set()
    get_jobs().wait_idle(60)
    use_workspace(None)


def errors_of(at) -> str:
    """The page's errors as read (Markdown escapes dropped)."""
    return " ".join(str(e.value) for e in at.error).replace("\\", "")


def fill(at, text: str, search_qs: str = "5-12", confirm_qs: str = "1-4"):
    at.text_area(key="search_space_text").input(text)
    at.selectbox(key="search_dataset").set_value("sample_questions")
    at.run()
    at.text_input(key="search_search_qs").input(search_qs)
    at.text_input(key="search_confirm_qs").input(confirm_qs)
    at.number_input(key="search_first_batch").set_value(3)
    at.button(key="search_check").click()
    return at.run()


def start(at):
    assert "Estimate" in texts(at), texts(at)
    at.button(key="search_start").click()
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    sid = at.query_params["search"]
    sid = sid[0] if isinstance(sid, list) else sid
    assert re.fullmatch(r"[0-9a-f]{12}", sid)
    return sid


def test_the_page_offers_a_starter_space_and_a_bad_space_is_refused_naming_the_field(ws):
    at = page("pages/search.py").run()
    assert not at.exception, [e.message for e in at.exception]
    starter = json.loads(at.text_area(key="search_space_text").value)
    assert starter["kind"] == "flowkit-search-space" and starter["flows"]
    bad = space(params=[{"node": "generate", "param": "top_kk", "choices": [1, 2]},
                        {"node": "retrieve", "param": "top_k", "low": 8, "high": 2}])
    fill(at, bad)
    errors = errors_of(at)
    assert "The search cannot start (2 problem(s))" in errors
    assert "params[0] (node 'generate', param 'top_kk'): unknown param" in errors
    assert "params[1] (node 'retrieve', param 'top_k'): bad range" in errors
    assert not [b for b in at.button if b.key == "search_start"]
    fill(at, "{ not json")
    assert "not JSON" in errors_of(at)
    fill(at, space(), search_qs="1-6", confirm_qs="5-8")
    assert "must not overlap the search questions" in errors_of(at)


def test_a_tiny_search_runs_to_the_end_and_shows_its_front(ws):
    at = fill(page("pages/search.py").run(), space())
    assert "2 candidates" in texts(at) and "budget 2000 calls" in texts(at)
    sid = start(at)
    until(at, lambda a: "phase done" in texts(a), timeout=60)
    shown = texts(at)
    assert "2 of 2 candidates evaluated** · 1 dropped · 1 kept" in shown
    assert "The front" in [s.value for s in at.subheader]
    front = next(m.value for m in at.markdown if m.value.startswith("- **c00**"))
    assert "search F1 **100.0** on 8" in front and "confirm F1 **100.0** on 4" in front
    assert "(reference: the best hand-written flow)" in front
    assert "[open in the Editor](editor?flow=tiny-c00)" in front
    assert re.search(r"\[open in Compare\]\(compare\?eval=[0-9a-f]{12}\)", front)
    assert ws.store.get_flow("tiny-c00")[0].name == "tiny-c00"
    # Replay opens the front candidate's best answer: a stored run of its confirmation
    found = re.search(r"\[replay its best answer\]\(replay\?run=([0-9A-Za-z_-]+)\)", front)
    assert found, front
    run = get_run(ws, found.group(1))
    evaluation = re.search(r"compare\?eval=([0-9a-f]{12})", front)
    assert evaluation and run.record.eval_id == evaluation.group(1)      # of its confirmation
    assert run.record.flow_name == "tiny-c00" and run.record.status == "ok"
    table = at.dataframe[0].value
    rows = {r["cand"]: r for r in table.to_dict("records")}
    assert rows["c00 ★"]["editor"] == "editor?flow=tiny-c00" and rows["c01"]["editor"] == ""
    assert rows["c00 ★"]["replay"] == f"replay?run={run.id}"
    assert get_run(ws, rows["c01"]["replay"].removeprefix("replay?run=")).record.flow_name == "tiny-c01"
    assert rows["c01"]["compare"].startswith("compare?eval=") and rows["c01"]["status"] == "dropped"
    assert len(at.get("vega_lite_chart")) == 1
    dropped = " ".join(m.value for m in at.markdown if m.value.startswith("- **c01**"))
    assert "after 3 questions: F1 -100.0" in dropped
    # the address opens the same search after a refresh, from the request kept beside the space
    again = page("pages/search.py", search=sid).run()
    assert "phase done" in texts(again) and not [b for b in again.button if b.key == "search_stop"]
    assert sid in str(again.selectbox(key="search_open").options)
    # issue 38 item 6: the picker's placeholder was "1 search"
    assert again.selectbox(key="search_open").proto.placeholder == "Pick the search started here"


def test_the_budget_in_hours_and_the_halving_reach_the_search(ws):
    at = page("pages/search.py").run()
    at.number_input(key="search_halving").set_value(1.0)
    fill(at, space())
    assert "halving must be 0 (off) or more than 1" in errors_of(at)
    at.number_input(key="search_budget_hours").set_value(0.5)
    at.number_input(key="search_halving").set_value(2.0)
    at.number_input(key="search_halving_from").set_value(40)
    at.button(key="search_check").click()
    sid = start(at.run())
    req = search_data.load_request(ws, sid)
    assert req is not None and (req.budget_hours, req.halving, req.halving_from) == (0.5, 2.0, 40)
    until(at, lambda a: "phase done" in texts(a), timeout=60)
    state = search.state_mod.load(search.state_mod.state_path(req.space, sid))
    assert state is not None and state.budget.hours == 0.5
    # left at 0: no limit in hours, no halving (as the CLI without the flags)
    at = fill(page("pages/search.py").run(), space(seed=1))
    req = search_data.load_request(ws, start(at))
    assert req is not None and (req.budget_hours, req.halving, req.workers,
                                req.halving_from) == (None, 0.0, 1, 0)


def test_the_workers_reach_the_estimate(ws):
    at = page("pages/search.py").run()
    at.number_input(key="search_workers").set_value(2)
    at = fill(at, space())
    assert "on 2 Ray workers" in texts(at) and not at.exception


def test_a_running_search_is_cancelled_then_resumed(ws):
    at = fill(page("pages/search.py").run(), space())
    GATE.clear()                                    # the model waits: the search stays running
    start(at)
    until(at, lambda a: [b for b in a.button if b.key == "search_stop"], timeout=30)
    at.button(key="search_stop").click()
    at.run()
    GATE.set()
    until(at, lambda a: "· stopped" in texts(a), timeout=60)
    assert "phase race" in texts(at) and "cancelled: Resume goes on" in texts(at)
    assert [b for b in at.button if b.key == "search_resume"]
    at.button(key="search_resume").click()
    at.run()
    until(at, lambda a: "phase done" in texts(a), timeout=60)
    assert "1 dropped · 1 kept" in texts(at)


@pytest.mark.parametrize("name", templates.names())
def test_the_starter_space_of_every_template_is_valid(ws, name):
    text = search_data.starter_space({name: templates.load_template(name)})
    space, flows = search.load(ws, str(search_data.save_space(ws, text)))
    assert list(flows) == [name] and space.max_candidates == 4
    spec = templates.load_template(name)
    if any(n.operator in search_data.RETRIEVERS for n in spec.nodes):
        assert space.operators and space.operators[0].choices == search_data.RETRIEVERS


def test_a_search_that_fails_says_why(ws):
    at = fill(page("pages/search.py").run(), space())
    sid = start(at)
    until(at, lambda a: a.error or "phase done" in texts(a), timeout=60)
    assert not at.error
    # the same search started again after its knowledge base is gone fails, and says so
    req = search_data.load_request(ws, sid)
    assert req is not None
    req.kb = "gone"
    job = search_data.submit(get_jobs(), ws, sid, req)
    get_jobs().wait(job, 60)
    again = page("pages/search.py", search=sid).run()
    assert "The search failed" in errors_of(again) and "gone" in errors_of(again), errors_of(again)


def test_a_starter_space_over_several_templates_is_valid_with_each_axis_naming_its_flow(ws):
    at = page("pages/search.py").run()
    at.multiselect(key="search_starter").set_value(["naive_rag", "iter_retgen", "flare"])
    at.button(key="search_starter_go").click()
    at.run()
    doc = json.loads(at.text_area(key="search_space_text").value)
    assert doc["flows"] == ["naive_rag", "iter_retgen", "flare"] and doc["max_candidates"] == 12
    assert {a["flow"] for a in doc["params"] + doc["operators"]} <= set(doc["flows"])
    assert {a["flow"] for a in doc["params"]} == set(doc["flows"])
    space_, flows = search.load(ws, str(search_data.save_space(ws, json.dumps(doc))))
    assert list(flows) == doc["flows"]


def test_a_space_nested_too_deep_in_the_box_is_one_clear_error(ws):
    """Pasted into the box: saved under a plain name, then refused by the bounded reader (it used
    to raise RecursionError out of the page)."""
    from flowkit.search.space import SpaceError
    path = search_data.save_space(ws, "[" * 30000 + "]" * 30000)
    assert path.name.startswith("space-")
    with pytest.raises(SpaceError, match="nested deeper"):
        search.load(ws, str(path))


def test_the_estimate_counts_the_candidates_one_way(ws):
    """Issue 38 item 3: the estimate said "2 candidates" and "4 candidates raced" in one sentence
    (the first wave against all the waves); it now gives the race's count once, with how many are
    sampled now."""
    two = [{"node": "generate", "param": "prompt", "choices": [VAGUE, PLAIN]},
           {"node": "retrieve", "param": "top_k", "choices": [2, 3, 4]}]
    at = fill(page("pages/search.py").run(), space(params=two, max_candidates=6))
    assert not at.exception, [e.message for e in at.exception]
    (note,) = [str(i.value) for i in at.info if "Estimate" in str(i.value)]
    assert re.findall(r"(\d+) candidates", note) == ["6"], note
    assert "6 candidates raced on batches of" in note
    assert "(3 sampled now, 3 more asked in later waves)" in note

"""Flows page (AppTest): list with last run, create, import, export, versions, diff, restore, delete."""
from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from flowkit import templates
from flowkit.compile import compile_flow
from flowkit.engine import run_flow
from flowkit.run_request import RunHooks, RunRequest
from flowkit.spec import dumps
from flowkit.testing import FakeLLM, fake_resources
from service import flows as library
from service.drafts import Draft, DraftStore
from service.workspace import Workspace
from studio.common import diffs

ROOT = Path(__file__).resolve().parents[2]


def flows_page(state: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for k, v in (state or {}).items():
        at.session_state[k] = v
    return at.run()


def texts(at: AppTest) -> str:
    return "\n".join(str(e.value) for e in [*at.markdown, *at.caption, *at.success, *at.error,
                                            *at.warning, *at.info])


def save_template(ws: Workspace, name: str, template: str = "naive_rag") -> None:
    ws.store.save_flow(templates.load_template(template).model_copy(update={"name": name}), None)


def test_lists_saved_flows_with_their_last_run(ws: Workspace) -> None:
    save_template(ws, "alpha")
    save_template(ws, "beta", "iter_retgen")
    spec, version = ws.store.get_flow("alpha")
    llm = FakeLLM(default="Mara Velt [1]")
    run_flow(compile_flow(spec), fake_resources(llm),
             RunRequest("Who designed the lighthouse?", kb="test", flow_version=version),
             RunHooks(sink=ws.store.sink()))
    at = flows_page()
    assert not at.exception
    shown = texts(at)
    assert "**alpha** · version 1" in shown and "**beta** · version 1" in shown
    assert "Last run: ok" in shown
    assert "Not run yet" in shown           # beta
    assert [b.label for b in at.button if b.key == "flows_open_alpha"] == ["Open"]


def test_create_from_template_and_blank(ws: Workspace) -> None:
    at = flows_page()
    at.text_input(key="flows_new_name").input("mine")
    at.selectbox(key="flows_new_template").select("naive_rag")
    at.button(key="FormSubmitter:flows_new-Create and open").click().run()
    assert not at.exception
    spec, version = ws.store.get_flow("mine")
    assert version == 1 and [n.id for n in spec.nodes] == ["retrieve", "generate"]

    at = flows_page()
    at.text_input(key="flows_new_name").input("empty")
    at.selectbox(key="flows_new_template").select(library.BLANK)
    at.button(key="FormSubmitter:flows_new-Create and open").click().run()
    assert ws.store.get_flow("empty")[0].nodes == []

    at = flows_page()
    at.text_input(key="flows_new_name").input("mine")
    at.button(key="FormSubmitter:flows_new-Create and open").click().run()
    assert "already exists" in texts(at)


def test_import_and_export_round_trip(ws: Workspace, tmp_path: Path) -> None:
    save_template(ws, "source")
    exported = library.export_bytes(ws, "source")
    assert json.loads(exported)["name"] == "source"
    spec, problems = library.parse_import(exported)
    assert spec is not None and problems == []
    library.import_flow(ws, spec, "copied")
    assert dumps(ws.store.get_flow("copied")[0]).replace("copied", "source") == exported.decode()

    bad, problems = library.parse_import(b"{not json")
    assert bad is None and problems[0].code == "bad_json"
    unknown, problems = library.parse_import(json.dumps({"name": "x", "nodes": [
        {"id": "a", "operator": "retrieval.nope"}]}).encode())
    assert unknown is not None and problems[0].code == "unknown_operator"
    at = flows_page()
    assert [b for b in at.get("download_button") if b.key == "flows_export_source"]


def test_versions_diff_and_restore(ws: Workspace) -> None:
    save_template(ws, "evolving")
    spec, v1 = ws.store.get_flow("evolving")
    nodes = [n.model_copy(update={"params": {**n.params, "top_k": 9}}) if n.id == "retrieve" else n
             for n in spec.nodes]
    ws.store.save_flow(spec.model_copy(update={"nodes": nodes}), expected_version=v1,
                       message="more passages")
    at = flows_page({"flows_selected": "evolving"})
    assert not at.exception
    shown = texts(at)
    assert "~ node retrieve: param top_k: 4 -> 9" in shown
    assert "+++ v2" in at.code[0].value and '"top_k": 9' in at.code[0].value

    at.button(key="flows_restore_go_evolving").click().run()
    restored, v3 = ws.store.get_flow("evolving")
    assert v3 == 3 and restored.node("retrieve").params["top_k"] == 4
    assert [v.message for v in ws.store.versions("evolving")][0] == "restored version 1"
    assert diffs.structural(restored, spec) == []


def _in_order(node: object) -> list[str]:
    """The page's texts and labels in the order they are drawn."""
    out: list[str] = []
    for child in getattr(node, "children", {}).values():
        label = getattr(child, "label", None)
        value = getattr(child, "value", None)
        if isinstance(label, str):
            out.append(label)
        elif isinstance(value, str):
            out.append(value)
        out.extend(_in_order(child))
    return out


def test_versions_open_in_the_row_of_their_flow_and_restore_answers_there(ws: Workspace) -> None:
    """Issue 38 item 2: the Versions panel of a lower row was drawn at the top of the page, away
    from the click; it opens under the flow's own row, and a restore says so beside its button."""
    for name in ("low_a", "low_b", "low_c"):
        save_template(ws, name)
    at = flows_page()
    at.button(key="flows_versions_low_b").click().run()
    drawn = _in_order(at.main)
    row = next(i for i, t in enumerate(drawn) if t.startswith("**low_b** · version"))
    panel = drawn.index("Versions of low_b")
    after = [i for i, t in enumerate(drawn) if t.startswith("**") and " · version " in t and
             i > row]
    assert row < panel and (not after or panel < after[0]), drawn
    at.button(key="flows_restore_go_low_b").click().run()
    drawn = _in_order(at.main)
    said = next(i for i, t in enumerate(drawn) if t.startswith("Restored version 1 of 'low_b'"))
    assert drawn.index("Restore version 1 as the newest") < said, drawn


def test_delete_asks_first_and_removes_drafts(ws: Workspace) -> None:
    save_template(ws, "doomed")
    DraftStore(ws.data_dir).save(Draft(flow="doomed", draft_id="abc", base_version=1,
                                       spec={"name": "doomed"}))
    at = flows_page()
    at.button(key="flows_delete_doomed").click().run()
    assert ws.store.flow_exists("doomed")            # only asked
    assert "Delete 'doomed' and all its versions?" in texts(at)
    at.button(key="flows_delete_no_doomed").click().run()
    assert ws.store.flow_exists("doomed")
    at.button(key="flows_delete_doomed").click().run()
    at.button(key="flows_delete_yes_doomed").click().run()
    assert not ws.store.flow_exists("doomed")
    assert DraftStore(ws.data_dir).for_flow("doomed") == []
    assert "Deleted 'doomed'." in texts(at)


def test_export_as_langgraph_package_zip(ws: Workspace) -> None:
    from flowkit.spec import EdgeSpec
    save_template(ws, "loop", "ircot")
    broken = templates.load_template("naive_rag").model_copy(update={"name": "broken"})
    broken = broken.model_copy(update={"edges": [*broken.edges, EdgeSpec(source="gone",
                                                                         target="generate")]})
    ws.store.save_flow(broken, None)
    at = flows_page()
    assert not at.exception
    (button,) = [b for b in at.get("download_button") if b.key == "flows_export_lg_loop"]
    assert button.proto.label == "Export as LangGraph package (zip)"
    (off,) = [b for b in at.button if b.key == "flows_export_lg_broken"]
    assert off.disabled and "gone" in off.help


def test_run_hands_the_flow_over_to_the_run_page(ws: Workspace, monkeypatch) -> None:
    """The Run button opens the Run page on that flow through the named hand-over
    (studio.common.state.hand_over_flow), which the Run page takes."""
    from studio.flows import create_panel
    handed: list[str] = []
    real = create_panel.hand_over_flow

    def spy(flow: str, state=None):
        handed.append(flow)
        real(flow, state)

    monkeypatch.setattr(create_panel, "hand_over_flow", spy)
    save_template(ws, "alpha")
    save_template(ws, "beta", "iter_retgen")
    at = flows_page()
    at.button(key="flows_run_beta").click().run()
    assert not at.exception
    assert handed == ["beta"]
    assert at.query_params.get("flow") == ["beta"] or at.query_params.get("flow") == "beta"
    assert "beta" in str(at.selectbox(key="run_flow_choice").value)
    assert "run_flow" not in at.session_state        # taken once, by the Run page

"""Settings page (AppTest): the form, its checks, saving, and what is loaded."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from flowkit.runtime.resources import Settings, load_settings
from flowkit.testing.gguf import write_gguf
from service.workspace import Workspace
from studio.settings import settings as logic

ROOT = Path(__file__).resolve().parents[2]


def settings_page() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/settings.py")
    return at.run()


def texts(at: AppTest) -> str:
    return "\n".join(str(e.value) for e in [*at.markdown, *at.caption, *at.success, *at.error,
                                            *at.warning, *at.info])


def submit(at: AppTest) -> AppTest:
    return at.button(key="FormSubmitter:settings_form-Save settings").click().run()


def test_shows_data_dir_and_what_is_loaded(ws: Workspace) -> None:
    at = settings_page()
    assert not at.exception
    assert str(ws.data_dir) in texts(at)
    table = at.table[0].value
    rows = dict(zip(table.iloc[:, 0], table.iloc[:, 1]))
    assert rows["Backend"] == "llama_cpp"
    assert rows["Model"].endswith(".gguf") and rows["Size"].endswith("MB")


def test_bad_model_path_is_refused(ws: Workspace) -> None:
    at = settings_page()
    at.radio(key="settings_model_source").set_value("A GGUF file on this machine")
    at.text_input(key="settings_model_path").input("/no/such/model.gguf")
    submit(at)
    assert "model file not found: /no/such/model.gguf" in texts(at)
    assert not (ws.data_dir / "settings.json").exists()


def test_a_truncated_or_foreign_model_file_is_refused_with_the_reason(ws: Workspace,
                                                                     tmp_path: Path) -> None:
    cut = write_gguf(tmp_path / "cut.gguf", cut=200)
    other = tmp_path / "zip.gguf"
    other.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    for path, words in ((cut, "is cut short"), (other, "is not a GGUF file")):
        at = settings_page()
        at.radio(key="settings_model_source").set_value("A GGUF file on this machine")
        at.text_input(key="settings_model_path").input(str(path))
        submit(at)
        assert not at.exception
        assert f"model file {path} {words}" in texts(at)
        assert not (ws.data_dir / "settings.json").exists()


def test_save_writes_settings_and_rebuilds(ws: Workspace, tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "tiny.gguf")
    at = settings_page()
    at.radio(key="settings_model_source").set_value("A GGUF file on this machine")
    at.text_input(key="settings_model_path").input(str(model))
    at.number_input(key="settings_gpu").set_value(0)
    at.number_input(key="settings_threads").set_value(2)
    at.number_input(key="settings_ctx").set_value(4096)
    at.number_input(key="settings_temperature").set_value(0.3)
    at.number_input(key="settings_seed").set_value(7)
    at.text_input(key="settings_chroma_host").input("chroma.local")
    submit(at)
    assert "Settings saved" in texts(at)
    s = load_settings(ws.data_dir)
    assert s.llm.model_path == str(model) and s.llm.n_gpu_layers == 0 and s.llm.n_threads == 2
    assert s.llm.n_ctx == 4096 and s.llm.temperature == pytest.approx(0.3) and s.llm.seed == 7
    assert s.chroma_host == "chroma.local"


def test_openai_backend_needs_url_and_model() -> None:
    values = logic.FormValues(backend="openai")
    new, problems = logic.build(Settings(), values)
    assert new is None and len(problems) == 2
    values = logic.FormValues(backend="openai", base_url="http://localhost:8000/v1",
                              model_name="qwen")
    new, problems = logic.build(Settings(), values)
    assert problems == [] and new is not None and new.llm.backend == "openai"
    assert logic.FormValues.from_settings(new).model_name == "qwen"


def test_model_info_without_loading(tmp_path: Path) -> None:
    info = logic.model_info(Workspace(tmp_path))
    assert info["error"] is None and info["loaded"] is False
    assert info["size_mb"] > 10 and isinstance(info["gpu_offload"], bool)


def test_lists_the_packaged_models_with_kind(ws: Workspace) -> None:
    at = settings_page()
    assert not at.exception
    models = at.dataframe[-1].value          # the last table: the model catalogue
    rows = dict(zip(models["model"], models["kind"]))
    assert rows["smollm2-135m"] == "instruct" and rows["gemma3-270m (default)"] == "base"


def test_shows_the_engines_in_use_and_the_threads_actually_used(ws: Workspace) -> None:
    from flowkit.runtime.llm_contract import default_threads
    at = settings_page()
    assert not at.exception
    table = at.table[1].value
    rows = dict(zip(table.iloc[:, 0], table.iloc[:, 1]))
    assert rows["Database"] == f"SQLite: {ws.data_dir / 'flowkit.db'}"
    assert rows["Vector engine"] == f"Chroma (embedded): {ws.data_dir / 'chroma'}"
    assert rows["LLM backend"] == "llama.cpp in a supervised worker process"
    threads = default_threads()
    assert threads > 0 and rows["Threads used"] == f"{threads} (default: half the cores)"
    assert f"Used now: {threads} (default: half the cores)" in texts(at)


def test_model_figures_are_rounded_for_reading(ws: Workspace) -> None:
    for row in logic.model_rows(""):
        for name in ("reading EM", "reading F1"):
            v = row[name]
            assert v is None or round(v, 2) == v, (name, v)
        assert row["s/question"] is None or round(row["s/question"], 1) == row["s/question"]
    assert logic._rounded(0.1 + 0.2) == 0.3 and logic._rounded("x") == "x"


def _in_order(node: object) -> list[str]:
    """The page's texts and labels in the order they are drawn."""
    out: list[str] = []
    for child in getattr(node, "children", {}).values():
        label, value = getattr(child, "label", None), getattr(child, "value", None)
        if isinstance(label, str):
            out.append(label)
        elif isinstance(value, str):
            out.append(value)
        out.extend(_in_order(child))
    return out


def test_the_outcome_of_save_shows_beside_the_button(ws: Workspace) -> None:
    """Issue 38 item 2: 'Settings saved' (and a refusal) was drawn at the top of the page while
    the button is at the bottom of a long form; both show beside the button now."""
    at = submit(settings_page())
    drawn = _in_order(at.main)
    said = next(i for i, t in enumerate(drawn) if t.startswith("Settings saved"))
    assert drawn.index("Save settings") < said < drawn.index("Loaded now"), drawn
    at.radio(key="settings_model_source").set_value("A GGUF file on this machine")
    at.text_input(key="settings_model_path").input("/no/such/model.gguf")
    drawn = _in_order(submit(at).main)
    said = next(i for i, t in enumerate(drawn) if "model file not found" in t)
    assert drawn.index("Save settings") < said < drawn.index("Loaded now"), drawn


def test_extra_buffer_types_say_whether_amx_is_in_use() -> None:
    """Issue 48, item 9: 'Extra buffer types (AMX): on' read as AMX on, on a CPU without it."""
    none = logic.extra_bufts_text(True, "the CPU does not advertise AMX (no amx_tile)", False)
    assert none.startswith("on · AMX: none on this CPU") and "AMX: in use" not in none
    assert logic.extra_bufts_text(True, "probe ok", True).startswith("on · AMX: in use")
    assert logic.extra_bufts_text(False, "probe died", True).startswith("off · AMX: not used")
    from service.settings import cpu_has_amx
    assert cpu_has_amx("flags\t: fpu sse amx_tile avx512f") and not cpu_has_amx("flags: fpu sse")

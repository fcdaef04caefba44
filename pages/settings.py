"""Settings: the model, how it runs, the embedder, Chroma; what is loaded now."""
from __future__ import annotations

import streamlit as st

from service.settings import DEFAULT_MODEL, PACKAGED, engines, load_settings, save_settings
from studio.common.shell import route_through_app
from studio.common.state import SettingsKeys as K
from studio.common.state import flash, show_flash
from studio.common.workspace import get_workspace, reset_workspace
from studio.settings import device_panel, engines_panel, pull_panel, telemetry_panel
from studio.settings import settings as logic

route_through_app()   # a direct URL in a fresh server's first session: go through app.py

ws = get_workspace()
st.title("Settings")
st.caption(f"Data directory: `{ws.data_dir}` (set FLOWKIT_HOME to use another one)")

current = load_settings(ws.data_dir)
in_use = engines(ws)
v = logic.FormValues.from_settings(current)

with st.form(K.FORM, border=True):
    st.subheader("Model")
    backend_index = logic.BACKENDS.index(v.backend) if v.backend in logic.BACKENDS else 0
    backend = st.radio("Backend", logic.BACKENDS, index=backend_index, horizontal=True,
                       key=K.BACKEND,
                       help="llama_cpp runs a GGUF file in a supervised worker process (a crash "
                            "there fails the run, never the studio); openai talks to any "
                            "OpenAI-compatible server")
    source = st.radio("Model file (llama_cpp)", [f"Default packaged model ({DEFAULT_MODEL})",
                                                 "A GGUF file on this machine"],
                      index=0 if v.use_default_model else 1, key=K.MODEL_SOURCE)
    model_path = st.text_input("GGUF path", value=v.model_path, key=K.MODEL_PATH,
                               placeholder="/models/qwen2.5-1.5b-instruct-q4_k_m.gguf",
                               help="a GGUF file, or a packaged model's id: "
                                    + ", ".join(PACKAGED))
    c1, c2, c3 = st.columns(3)
    n_gpu_layers, n_batch, prefix_reuse = device_panel.fields(v, c1)
    n_threads = c2.number_input("Threads", value=v.n_threads, min_value=0, step=1,
                                key=K.THREADS, help="0: half the cores (llama.cpp "
                                "slows down when it shares every core with other work)")
    if in_use.threads is not None:
        c2.caption(f"Used now: {in_use.threads} ({in_use.threads_from})")
    n_ctx = c3.number_input("Context (tokens)", value=v.n_ctx, min_value=256, max_value=1_048_576,
                            step=512, key=K.CTX)
    c4, c5 = st.columns(2)
    temperature = c4.number_input("Temperature", value=float(v.temperature), min_value=0.0,
                                  max_value=2.0, step=0.1, key=K.TEMPERATURE)
    seed = c5.number_input("Seed", value=v.seed, step=1, key=K.SEED)
    extra_bufts = st.radio(
        "Extra buffer types (AMX weight repacking)", logic.EXTRA_BUFTS_CHOICES,
        index=logic.EXTRA_BUFTS_CHOICES.index(v.extra_bufts)
        if v.extra_bufts in logic.EXTRA_BUFTS_CHOICES else 0,
        horizontal=True, key=K.EXTRA_BUFTS,
        help="auto: on, unless the CPU advertises AMX and a one-off probe in a child process shows "
             "that this machine cannot use it (some virtual machines); on/off: force")
    c6, c7 = st.columns(2)
    base_url = c6.text_input("Server base URL (openai)", value=v.base_url, key=K.BASE_URL,
                             placeholder="http://localhost:8000/v1")
    model_name = c7.text_input("Served model name (openai)", value=v.model_name,
                               key=K.MODEL_NAME)
    st.subheader("Retrieval")
    embedder_path = st.text_input("Embedder path", value=v.embedder_path, key=K.EMBEDDER,
                                  help="Empty: all-MiniLM-L6-v2 from its package")
    c8, c9 = st.columns([3, 1])
    chroma_host = c8.text_input("Chroma host", value=v.chroma_host, key=K.CHROMA_HOST,
                                help="Empty: an embedded Chroma in the data directory")
    chroma_port = c9.number_input("Chroma port", value=v.chroma_port, min_value=1,
                                  max_value=65535, key=K.CHROMA_PORT)
    st.subheader("Completion cache")
    c10, c11 = st.columns([3, 1])
    completion_cache = c10.toggle(
        "Serve deterministic model calls from the cache", value=v.completion_cache,
        key=K.COMPLETION_CACHE,
        help="A greedy call (temperature 0) is computed once and served from the workspace "
             "database after, keyed by the model file, the exact prompt and every sampling "
             "parameter; runs still report what computing it cost. `flowkit cache stats`")
    cache_max_entries = c11.number_input("Most entries", value=v.cache_max_entries, min_value=1,
                                         step=10_000, key=K.CACHE_MAX,
                                         help="Least recently used entries go first")
    save_col, outcome = st.columns([1, 3], vertical_alignment="center")
    submitted = save_col.form_submit_button("Save settings", type="primary")
    with outcome:      # what the click did, beside the button (the form is a long scroll down)
        show_flash(K.NOTICE)

if submitted:
    values = logic.FormValues(
        use_default_model=source.startswith("Default"), model_path=model_path,
        n_gpu_layers=n_gpu_layers, n_batch=n_batch, prefix_reuse=prefix_reuse,
        n_threads=int(n_threads), n_ctx=int(n_ctx),
        temperature=float(temperature), seed=int(seed), backend=backend, base_url=base_url,
        model_name=model_name, embedder_path=embedder_path, chroma_host=chroma_host,
        chroma_port=int(chroma_port), extra_bufts=str(extra_bufts),
        completion_cache=bool(completion_cache), cache_max_entries=int(cache_max_entries))
    new, problems = logic.build(current, values)
    if new is None:
        with outcome:
            for p in problems:
                st.error(p)
    else:
        save_settings(ws.data_dir, new)
        reset_workspace()
        get_workspace()        # the new workspace starts loading its model in the background now
        flash(K.NOTICE, "Settings saved. The workspace was rebuilt: the model is loading again "
                        "in the background (the sidebar says when it is ready).")
        st.rerun()

st.subheader("Loaded now")
info = logic.model_info(ws)
rows = {"Backend": info["backend"], "Model": info["model_file"] or "-",
        "Size": f"{info['size_mb']} MB" if info["size_mb"] is not None else "-",
        "Loaded": "yes" if info["loaded"] else "no (loads on the first run)",
        "GPU offload supported": {True: "yes", False: "no (CPU build of llama.cpp)",
                                  None: "-"}[info["gpu_offload"]],
        "Runs in": info["process"] or "-",
        "Extra buffer types (repacked weights)": info["extra_bufts"]
        or "decided when the model loads",
        **device_panel.rows(ws), "Completion cache": logic.cache_summary(ws)}
st.table({"": list(rows), "value": list(rows.values())})
if info["error"]:
    st.error(info["error"])

engines_panel.draw(in_use)
telemetry_panel.draw(ws, current)

st.subheader("Models")
st.caption("Packaged models and the configured GGUF; reading = gold passages + distractors "
           "(bench/reading.py), best prompt variant. Base models have no chat template.")
st.dataframe(logic.model_rows(v.model_path), hide_index=True, key=K.MODELS)
pull_panel.draw(ws)

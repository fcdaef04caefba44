"""The studio: the Streamlit screens of flowkit, fenced by page.

One package per page, plus `common`:

- `studio.flows`     the Flows page (new flow, import, saved flows, versions)
- `studio.editor`    the Editor page (canvas, palette, node forms, keyboard keys)
- `studio.run`       the Run page (flow and question, overrides, progress, answer)
- `studio.replay`    the Replay page (steps, memory diffs, LLM calls, fork from a step)
- `studio.compare`   the Compare page (evaluation setup, report, charts, variants)
- `studio.knowledge` the Knowledge page (search side by side, chunks, graph, database)
- `studio.settings`  the Settings page (model, resources, cache)
- `studio.common`    what several pages share: the workspace, the job queue, session state,
                     the shell and sidebar, safe text (inert), the access gate
- `studio.serve`     the guarded server entry point (`streamlit run studio/serve.py`)

Naming rule: a module whose name ends in `_panel` draws (it calls Streamlit); every other module
is logic and does not import Streamlit, except the plumbing in `studio.common` that wraps
Streamlit itself (COMMON_PLUMBING in tests/test_layers.py). Logic reaches storage, the runtime and
the operators only through `service` (tests/test_layers.py fences it).
"""

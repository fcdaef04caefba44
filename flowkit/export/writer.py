"""Render a flow as a LangGraph package: graph.py, langgraph.json, README.md, the flow's JSON.

The code is built from plain strings: one function per node (named after its node id) calling the
flowkit operator by registry key with the flow's params written out as literals, then the edges in
the order of the flow's nodes, as the compiler wires them (`flowkit.compile.wiring`). Nothing is
evaluated or executed; the flow is validated first.
"""
from __future__ import annotations

import io
import json
import keyword
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import registry
from ..compile import LabelEdges, NextEdges, Wiring, build_operators, wiring
from ..errors import FlowkitError
from ..spec import FlowSpec, dumps
from ..topology import analyse
from ..validate import ensure_valid

FLOW_FILE = "flow.json"
#: Module-level names in graph.py that a node function must not shadow.
_TAKEN = {"Annotated", "Any", "END", "FINISH", "FlowRuntime", "LIMITS", "Limits", "Memory", "Path",
          "RUNTIME", "RunnableConfig", "START", "State", "StateGraph", "append", "builder",
          "finish", "graph", "keep_first", "next_node", "on_label", "annotations"}
_WIDTH = 88


def graph_id(spec: FlowSpec) -> str:
    """The graph's name in langgraph.json: the flow name with other characters as '_'."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", spec.name).strip("_") or "flow"


def function_names(spec: FlowSpec) -> dict[str, str]:
    """Node id -> Python function name: the id with '-' as '_', '_node' added on a clash."""
    names: dict[str, str] = {}
    for n in spec.nodes:
        name = re.sub(r"\W", "_", n.id)
        if keyword.iskeyword(name) or name in _TAKEN:
            name += "_node"
        base, i = name, 2
        while name in names.values():
            name, i = f"{base}_{i}", i + 1
        names[n.id] = name
    return names


def literal(value: Any, indent: int = 0, used: int | None = None) -> str:
    """Python source for a JSON value: one line when it fits after `used` columns (default: the
    indent), else one item a line with a trailing comma (which `ruff format` keeps)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    pad = indent + 4
    if isinstance(value, dict):
        flat = [f"{literal(k)}: {literal(v, pad, 0)}" for k, v in value.items()]
        items = [f"{literal(k)}: {literal(v, pad, pad + len(literal(k)) + 2)}"
                 for k, v in value.items()]
        open_, close = "{", "}"
    elif isinstance(value, (list, tuple)):
        flat = [literal(v, pad, 0) for v in value]
        items = [literal(v, pad) for v in value]
        open_, close = "[", "]"
    else:
        raise FlowkitError(f"cannot write {type(value).__name__} as a literal; params must be JSON")
    one = open_ + ", ".join(flat) + close
    if "\n" not in one and (indent if used is None else used) + len(one) + 1 <= _WIDTH:
        return one
    if not items:
        return one
    return open_ + "\n" + "".join(f"{' ' * pad}{item},\n" for item in items) + " " * indent + close


Arg = Callable[[int, int], str]


def _lit(value: Any, keyword: str = "") -> Arg:
    """A call argument holding a JSON value (`keyword=` value when keyword is given)."""
    prefix = f"{keyword}=" if keyword else ""
    return lambda indent, used: prefix + literal(value, indent, used + len(prefix))


def _code(source: str) -> Arg:
    """A call argument that is already source (a name, a nested call)."""
    return lambda indent, used: source


def _call(func: str, args: list[Arg], indent: int = 0, used: int | None = None) -> str:
    """`func(a, b)` when it fits on the line after `used` columns, else one argument a line with
    a trailing comma: the shapes `ruff format` leaves as they are."""
    start = indent if used is None else used
    one = f"{func}(" + ", ".join(a(indent, 0) for a in args) + ")"
    if "\n" not in one and start + len(one) + 1 <= _WIDTH:
        return one
    pad = indent + 4
    return (f"{func}(\n" + "".join(f"{' ' * pad}{a(pad, pad)},\n" for a in args)
            + " " * indent + ")")


def _node_function(fn: str, node_id: str, key: str, label: str, params: dict[str, Any],
                   branch: str | None, merge_inputs: tuple[str, ...]) -> str:
    cls = registry.get(key)
    summary = cls.summary() if cls else ""
    doc = f"{label or node_id} ({key}): {summary}".strip().rstrip(":")
    doc = doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if doc.endswith('"'):
        doc = doc[:-1] + '\\"'      # a quote right before the closing """ would end it early
    args = [_lit(node_id), _lit(key), _lit(params), _code("state"), _code("config")]
    if branch:
        args.append(_lit(branch, "branch"))
    if merge_inputs:
        args.append(_lit(list(merge_inputs), "merge_inputs"))
    call = _call("RUNTIME.step", args, indent=4, used=len("    return "))
    return (f"def {fn}(state: State, config: RunnableConfig) -> dict[str, Any]:\n"
            f'    """{_wrap_doc(doc)}"""\n'
            f"    return {call}\n")


def _wrap_doc(text: str, indent: str = "    ") -> str:
    """Words wrapped to the line width; a closing newline (+ indent) when it spans lines."""
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > _WIDTH - 8:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    lines.append(line)
    return (f"\n{indent}".join(lines) + (f"\n{indent}" if len(lines) > 1 else ""))


def _paths(targets: set[str]) -> Arg:
    """A router's path map: its targets sorted, then FINISH (a name, not a string)."""
    names = [*(literal(t) for t in sorted(targets)), "FINISH"]

    def render(indent: int, used: int) -> str:
        one = "[" + ", ".join(names) + "]"
        if used + len(one) + 1 <= _WIDTH:
            return one
        return "[\n" + "".join(f"{' ' * (indent + 4)}{n},\n" for n in names) + " " * indent + "]"
    return render


def _router_call(name: str, router: list[Arg]) -> Arg:
    """The argument `name(router...)`, laid out when its place on the line is known."""
    def arg(indent: int, used: int) -> str:
        return _call(name, router, indent, used)
    return arg


def _edges(plan: Wiring) -> list[str]:
    """The edge statements, in the order of the plan (the flow's nodes, then the joins)."""
    lines = []
    for e in plan.edges:
        if isinstance(e, NextEdges):
            router = [_lit(t) for t in e.targets] + ([_code("in_branch=True")] if e.in_branch
                                                     else [])
            name, dests = "next_node", set(e.targets)
        elif isinstance(e, LabelEdges):
            table = {label: list(ts) for label, ts in e.table.items()}
            router = [_lit(table)] + ([_lit(e.branch, "branch")] if e.branch else [])
            name, dests = "on_label", {t for ts in e.table.values() for t in ts}
        else:   # JoinEdge: parallel branches into their merge node
            src = list(e.sources) if len(e.sources) > 1 else e.sources[0]
            lines.append(_call("builder.add_edge", [_lit(src), _lit(e.target)]))
            continue
        lines.append(_call("builder.add_conditional_edges", [
            _lit(e.source), _router_call(name, router), _paths(dests)]))
    return lines


def render_graph(spec: FlowSpec) -> str:
    """The source of graph.py for a valid flow."""
    ops = build_operators(spec)
    wires = wiring(spec, ops, analyse(spec, {nid: op.kind for nid, op in ops.items()}))
    plan = {w.node_id: w for w in wires.nodes}
    names = function_names(spec)
    entry, edge_lines = wires.entry, _edges(wires)
    lim = spec.limits
    functions = "\n\n".join(
        _node_function(names[n.id], n.id, n.operator, n.label, n.params, plan[n.id].branch,
                       plan[n.id].merge_inputs) for n in spec.nodes)
    add_nodes = "\n".join(_call("builder.add_node", [_lit(n.id), _code(names[n.id])])
                          for n in spec.nodes)
    runtime = _call("FlowRuntime", [_lit(spec.name), _code("LIMITS"),
                                    _code("settings_dir=Path(__file__).parent")],
                    used=len("RUNTIME = "))
    description = spec.description.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    head = f"{spec.name}: exported from flowkit as a LangGraph graph."
    used = [r for r in ("next_node", "on_label") if any(f"{r}(" in line for line in edge_lines)]
    runtime_imports = ", ".join(["FINISH", "FlowRuntime", *used])
    return f'''"""{_wrap_doc(head, "").rstrip()}

{_wrap_doc(description, "").rstrip() if description else "(no description)"}

Every node calls a flowkit operator by registry key with the params below (params left out take
the operator's defaults). flowkit.export.runtime supplies the per-run context (limits, trace,
resources from FLOWKIT_* environment variables or flowkit_settings.json); see README.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from flowkit.export.runtime import {runtime_imports}
from flowkit.memory import Memory, append, keep_first
from flowkit.spec import Limits
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph


class State(Memory):
    """flowkit's working memory, plus the run's start, its trace (a record a step) and id."""

    started: Annotated[float, keep_first]
    trace: Annotated[list[dict[str, Any]], append]
    run_id: str


LIMITS = Limits(
    max_steps={lim.max_steps!r},
    max_llm_calls={lim.max_llm_calls!r},
    max_tokens={lim.max_tokens!r},
    timeout_s={float(lim.timeout_s)!r},
)
RUNTIME = {runtime}


{functions}

def finish(state: State, config: RunnableConfig) -> dict[str, Any]:
    """The last step: after a limit was hit it still leaves an answer from memory."""
    return RUNTIME.finish(state, config)


builder = StateGraph(State)
{add_nodes}
builder.add_node(FINISH, finish)

{_call("builder.add_edge", [_code("START"), _lit(entry)])}
{chr(10).join(edge_lines)}
builder.add_edge(FINISH, END)

# A node visit is one LangGraph step (plus the finish): room for max_steps visits.
graph = builder.compile().with_config(recursion_limit=LIMITS.max_steps * 2 + 20)
'''


def render_langgraph_json(spec: FlowSpec) -> str:
    """langgraph.json: this folder as the dependency, graph.py's `graph` under the flow's name."""
    data = {"dependencies": ["."], "graphs": {graph_id(spec): "./graph.py:graph"},
            "python_version": "3.11", "env": {}}
    return json.dumps(data, indent=2) + "\n"


def render_settings() -> str:
    """flowkit_settings.json: empty values take flowkit's defaults; FLOWKIT_* variables win."""
    data = {"home": "", "kb": "sample", "model_path": "", "embedder_path": "", "chroma_host": "",
            "chroma_port": 8000}
    return json.dumps(data, indent=2) + "\n"


def render_readme(spec: FlowSpec) -> str:
    gid = graph_id(spec)
    return f"""# {spec.name} (LangGraph package exported by flowkit)

{spec.description}

`graph.py` is the flow as a LangGraph `StateGraph`: one function per node, each calling a flowkit
operator by its registry key; `{FLOW_FILE}` is the flow it came from (import it into the studio or
`flowkit flows import {FLOW_FILE}`).

## Run it

flowkit must be importable in the Python environment (install the flowkit repository there, then
`flowkit setup` ingests the sample knowledge base), plus `pip install "langgraph-cli[inmem]"`:

```sh
langgraph dev --no-browser --port 2024          # serves graph "{gid}" from langgraph.json
```

```python
from langgraph_sdk import get_sync_client

client = get_sync_client(url="http://127.0.0.1:2024")
question = "Who designed the Corren Lighthouse?"
out = client.runs.wait(None, "{gid}", input={{"question": question}})
print(out["answer"], out["trace"])
```

or in process: `from graph import graph; graph.invoke({{"question": "..."}})`.

Ask each question as a threadless run (as above) or on a new thread: the run's counters and
trace live in the state, so a second run on a used thread fails with an error saying so.

## Settings

Environment variables (from the shell, or `"env"` in langgraph.json) win over
`flowkit_settings.json` next to graph.py; empty values take flowkit's defaults. A run may pick another knowledge base with `config={{"configurable": {{"kb":
"NAME"}}}}`.

| variable | setting | default |
|---|---|---|
| `FLOWKIT_HOME` | `home` | `~/.flowkit` (its `settings.json`: model, threads, context, ...) |
| `FLOWKIT_KB` | `kb` | `sample` |
| `FLOWKIT_MODEL_PATH` | `model_path` | the packaged SmolLM2-135M GGUF |
| `FLOWKIT_EMBEDDER_PATH` | `embedder_path` | the packaged all-MiniLM-L6-v2 |
| `FLOWKIT_CHROMA_HOST`, `FLOWKIT_CHROMA_PORT` | `chroma_host`, `chroma_port` | Chroma in the data dir |

Limits: {spec.limits.max_steps} steps, {spec.limits.max_llm_calls} LLM calls,
{spec.limits.max_tokens} tokens, {spec.limits.timeout_s:g} s; once one is hit the run goes to
`_finish`, which still answers from memory, and `halt` in the output names the limit.
"""


def render(spec: FlowSpec) -> dict[str, str]:
    """File name -> text of the package for `spec` (validated first: ValidationError lists
    every problem)."""
    ensure_valid(spec)
    return {"graph.py": render_graph(spec), "langgraph.json": render_langgraph_json(spec),
            "README.md": render_readme(spec), FLOW_FILE: dumps(spec),
            "flowkit_settings.json": render_settings()}


def write_package(spec: FlowSpec, out_dir: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Write the package into out_dir (created if missing). Refuses to replace an existing
    graph.py unless overwrite."""
    out = Path(out_dir)
    files = render(spec)
    if out.exists() and not out.is_dir():
        raise FlowkitError(f"{out} exists and is not a directory")
    if (out / "graph.py").exists() and not overwrite:
        raise FlowkitError(f"{out / 'graph.py'} already exists; pass --force to overwrite")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def export_zip(spec: FlowSpec) -> bytes:
    """The package as zip bytes, its files in a folder named after the graph."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in render(spec).items():
            zf.writestr(f"{graph_id(spec)}/{name}", text)
    return buf.getvalue()

"""Render a flow as a LangGraph package: graph.py, langgraph.json, README.md, the flow's JSON.

The code is built from plain strings: one function per node (named after its node id) calling the
flowkit operator by registry key with the flow's params written out as literals, then the edges in
the order of the flow's nodes, as the compiler wires them (`flowkit.compile.wiring`). Nothing is
evaluated or executed; the flow is validated first.

A flow's text never becomes code. Every string from the flow (name, description, node ids,
labels, params) enters graph.py only as a string literal made by `literal` (escapes every quote,
backslash and unprintable character); function names come from an allowlist (`function_names`);
docstrings, comments and README headings hold only `plain` text (printable ASCII without quotes
or backslashes, so it cannot close or escape anything). `render` compiles graph.py before
handing it out and `write_package` writes nothing until every file is ready.
"""
from __future__ import annotations

import builtins
import io
import json
import keyword
import math
import os
import re
import shutil
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import registry
from ..compile import LabelEdges, NextEdges, Wiring, build_operators, wiring
from ..errors import ExportError, short
from ..spec import FlowSpec, dumps
from ..topology import analyse
from ..validate import ensure_valid

FLOW_FILE = "flow.json"
#: Names a node function must not take: graph.py's module-level names and imports, and every
#: builtin (a node `list` would shadow the `list` the State's annotations are resolved with).
RESERVED = frozenset({"Annotated", "Any", "END", "FINISH", "FlowRuntime", "LIMITS", "Limits",
                      "Memory", "Path", "RUNTIME", "RunnableConfig", "START", "State",
                      "StateGraph", "append", "builder", "finish", "graph", "keep_first",
                      "next_node", "on_label", "annotations"}) | frozenset(dir(builtins))
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WIDTH = 88
#: Characters kept by `plain`: printable ASCII but the quote and the backslash.
_PLAIN = re.compile(r"[^\x20-\x7e]|[\"\\]")


def graph_id(spec: FlowSpec) -> str:
    """The graph's name in langgraph.json: the flow name with other characters as '_'."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", spec.name).strip("_") or "flow"


def _allowed(name: str) -> bool:
    """An ASCII identifier that is no keyword, no dunder and takes no reserved name."""
    return (_IDENTIFIER.fullmatch(name) is not None and not keyword.iskeyword(name)
            and not keyword.issoftkeyword(name) and not name.startswith("__")
            and name not in RESERVED)


def function_names(spec: FlowSpec) -> dict[str, str]:
    """Node id -> Python function name: the id with '-' as '_' ('_node' added when that is a
    keyword, a builtin or a name graph.py uses), `node_<index>` when nothing of the id is a
    plain ASCII name; '_2', '_3'... on a clash."""
    names: dict[str, str] = {}
    for index, n in enumerate(spec.nodes, start=1):
        name = n.id.replace("-", "_")
        if _IDENTIFIER.fullmatch(name) is None:
            name = f"node_{index}"
        if not _allowed(name):
            name += "_node"
        base, i = name, 2
        while name in names.values() or not _allowed(name):
            name, i = f"{base}_{i}", i + 1
        names[n.id] = name
    return names


def plain(text: str, limit: int | None = None) -> str:
    """`text` for a docstring, a comment or a heading: one line of printable ASCII without
    quotes or backslashes (each other character becomes '?', '"' becomes "'"), spaces collapsed,
    cut to `limit` characters. It cannot close, escape or break out of anything."""
    out = _PLAIN.sub(lambda m: "'" if m.group() == '"' else "?",
                     " ".join(text.split()))
    if limit is not None and len(out) > limit:
        out = out[: limit - 3].rstrip() + "..."
    return out


def py_str(text: str) -> str:
    """A double-quoted Python string literal whose value is exactly `text`: printable characters
    as they are, quotes and backslashes escaped, everything else (control characters, line and
    format characters, lone surrogates) as \\x, \\u or \\U escapes; always one line."""
    out = ['"']
    for ch in text:
        if ch in "\"\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def literal(value: Any, indent: int = 0, used: int | None = None) -> str:
    """Python source for a JSON value: one line when it fits after `used` columns (default: the
    indent), else one item a line with a trailing comma (which `ruff format` keeps)."""
    if isinstance(value, str):
        return py_str(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ExportError(f"cannot write {value!r} as a literal; params must be JSON")
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    pad = indent + 4
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise ExportError("cannot write a dict with keys that are not strings; params must "
                               "be JSON")
        flat = [f"{literal(k)}: {literal(v, pad, 0)}" for k, v in value.items()]
        items = [f"{literal(k)}: {literal(v, pad, pad + len(literal(k)) + 2)}"
                 for k, v in value.items()]
        open_, close = "{", "}"
    elif isinstance(value, (list, tuple)):
        flat = [literal(v, pad, 0) for v in value]
        items = [literal(v, pad) for v in value]
        open_, close = "[", "]"
    else:
        raise ExportError(f"cannot write {type(value).__name__} as a literal; params must be JSON")
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
    doc = plain(f"{plain(label, 80) or node_id} ({key}): {summary}").rstrip(":")
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


def render_graph(spec: FlowSpec, version: int | None = None) -> str:
    """The source of graph.py for a valid flow (`version`: the saved flow's, for its traces)."""
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
                                    _code("settings_dir=Path(__file__).parent"),
                                    *([_lit(version, "version")] if version is not None else [])],
                    used=len("RUNTIME = "))
    description = plain(spec.description)
    head = f"{plain(spec.name, 80)}: exported from flowkit as a LangGraph graph."
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
    """flowkit_settings.json: empty values take flowkit's defaults; FLOWKIT_* variables win;
    `telemetry` (off) sends runs as OpenTelemetry traces (flowkit.export.tracing)."""
    data: dict[str, Any] = {"home": "", "kb": "sample", "model_path": "", "embedder_path": "",
                            "chroma_host": "", "chroma_port": 8000,
                            "telemetry": {"enabled": False, "otlp_endpoint": "", "headers": {}}}
    return json.dumps(data, indent=2) + "\n"


def _fenced(text: str) -> str:
    """`text` as a fenced block of plain text (a fence longer than any run of backticks in it,
    so nothing in it is read as markdown or HTML); unprintable characters as '?'."""
    body = "".join(c if c.isprintable() or c == "\n" else "?" for c in text.replace("\t", " "))
    runs = [len(r) for r in re.findall(r"`+", body)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    return f"{fence}text\n{body}\n{fence}"


def render_readme(spec: FlowSpec) -> str:
    """README.md: the flow's name only as `plain` text, its description in a fenced text block."""
    gid = graph_id(spec)
    description = f"{_fenced(spec.description)}\n" if spec.description.strip() else ""
    title = re.sub(r"[<>&`]", "?", plain(spec.name, 80)) or gid    # no HTML, no code span
    return f"""# {title} (LangGraph package exported by flowkit)

{description}
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

## Traces

Runs are sent as OpenTelemetry traces (OpenInference conventions: Arize Phoenix, Langfuse, any
OTLP/HTTP collector), the same span tree as a run in the flowkit studio, when
`flowkit_settings.json` says `"telemetry": {{"enabled": true, "otlp_endpoint":
"http://localhost:6006", "headers": {{}}}}` or when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, with `OTEL_EXPORTER_OTLP_HEADERS`) is set;
`OTEL_SDK_DISABLED=true` turns it off. A collector that cannot be reached is said once in the log
and never fails a run.

Limits: {spec.limits.max_steps} steps, {spec.limits.max_llm_calls} LLM calls,
{spec.limits.max_tokens} tokens, {spec.limits.timeout_s:g} s; once one is hit the run goes to
`_finish`, which still answers from memory, and `halt` in the output names the limit.
"""


def check_source(spec: FlowSpec, source: str, filename: str = "graph.py") -> None:
    """Compile the generated source (nothing runs); ExportError naming the flow if it does not
    compile. A flow's text only ever enters as literals, so this failing is a flowkit bug."""
    try:
        compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as err:
        line = f" (line {err.lineno})" if isinstance(err, SyntaxError) else ""
        raise ExportError(f"flow '{short(spec.name)}': the generated {filename} does not "
                          f"compile{line}: {short(str(err))}; nothing was written") from None


def render(spec: FlowSpec, version: int | None = None) -> dict[str, str]:
    """File name -> text of the package for `spec` (validated first: ValidationError lists
    every problem); graph.py is compiled before it is handed out (ExportError if it does not
    compile) and every file must encode as UTF-8. `version`: the saved flow's version."""
    ensure_valid(spec)
    files = {"graph.py": render_graph(spec, version), "langgraph.json": render_langgraph_json(spec),
             "README.md": render_readme(spec), FLOW_FILE: dumps(spec),
             "flowkit_settings.json": render_settings()}
    check_source(spec, files["graph.py"])
    for name, text in files.items():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise ExportError(f"flow '{short(spec.name)}': {name} would hold text that is not "
                              f"valid Unicode ({err.reason}); nothing was written") from None
    return files


def write_package(spec: FlowSpec, out_dir: str | Path, *, overwrite: bool = False,
                  version: int | None = None) -> list[Path]:
    """Write the package into out_dir (created if missing). Without `overwrite`, refuses
    (ExportError listing them) when any of its files already exists there; other files in the
    folder are left alone. Every file is rendered, compiled and written to a temporary folder
    first, then moved into place, so a refusal or a failure writes nothing. `version`: the saved
    flow's version, written into graph.py for its traces."""
    out = Path(out_dir)
    files = render(spec, version)
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a directory")
    taken = sorted(name for name in files if os.path.lexists(out / name))
    if taken and not overwrite:
        raise ExportError(f"{out} already holds {', '.join(taken)}; pass --force to overwrite "
                          f"{'it' if len(taken) == 1 else 'them'}")
    fresh = not out.exists()
    parent = out.parent if fresh else out
    tmp = parent / f".flowkit-export-{uuid.uuid4().hex[:12]}"
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()         # the umask's permissions, which the package folder keeps
        for name, text in files.items():
            (tmp / name).write_bytes(text.encode("utf-8"))
        if fresh:
            tmp.rename(out)
        else:
            for name in files:
                os.replace(tmp / name, out / name)
    except OSError as err:
        raise ExportError(f"cannot write the package to {out}: {err.strerror or err}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return [out / name for name in files]


def export_zip(spec: FlowSpec) -> bytes:
    """The package as zip bytes, its files in a folder named after the graph."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in render(spec).items():
            zf.writestr(f"{graph_id(spec)}/{name}", text)
    return buf.getvalue()

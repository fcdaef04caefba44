"""Validation: every problem of a flow in one pass, each with a code, node id, field path and hint.

Nothing here loads a model or executes anything named in the flow: operators are looked up in the
closed registry and their params checked by their pydantic models.
"""
from __future__ import annotations

from typing import Any

import networkx as nx
from pydantic import ValidationError as PydanticValidationError

from . import names, registry
from .errors import Problem, SpecError, ValidationError, short
from .memory import INPUT_KEYS
from .spec import FlowSpec, from_dict, read_document, read_file
from .topology import analyse

#: Every code validation can report, with what it means (also the help page's list).
CODES: dict[str, str] = {
    "spec_invalid": "the document is not a FlowSpec (bad JSON, wrong field types, unknown fields)",
    "empty_flow": "the flow has no nodes",
    "bad_name": "the flow's name, a node's label or an edge's label is blank or holds a control "
                "character (newline, tab, NUL, ...)",
    "duplicate_node": "two nodes share an id",
    "unknown_operator": "the operator key is not in the registry",
    "bad_param": "a param is missing, unknown, of the wrong type (no true or \"10\" for a "
                 "number) or out of bounds",
    "unknown_node": "an edge (or the entry) names a node that does not exist",
    "no_entry": "no single node to start from (set 'entry' or leave exactly one node without inputs)",
    "no_exit": "no node ends the flow (every node has an outgoing edge)",
    "unreachable": "a node cannot be reached from the entry",
    "unread_key": "a node reads a memory key that nothing before it writes",
    "cycle_without_judge": "a loop passes through no judge, so nothing can end it",
    "missing_edge_label": "an edge out of a router or judge has no label",
    "unknown_route_label": "an edge label that its router or judge never produces",
    "unwired_route": "a route that no edge follows (the run ends there)",
    "label_on_plain_edge": "an edge label on a node that does not route",
    "fan_in_without_merge": "parallel branches meet at a node that is not a merge",
    "nested_fanout": "a fan-out inside a parallel branch (not supported yet)",
    "merge_from_router": "a merge's input comes from a router or judge edge",
    "no_answer_path": "no path from the entry to an end passes a node that writes 'answer' (or "
                      "no edge leads from the entry to the node that writes it)",
    "dead_end": "a branch leads to no answer: nothing at or after it writes 'answer', so what it "
                "writes is never used",
    # reading the file (flowkit.spec.read_document; bounds in flowkit/spec.py)
    "unreadable": "the file cannot be opened",
    "file_too_large": "the file is larger than flowkit.spec.MAX_FILE_BYTES",
    "not_utf8": "the file is not UTF-8 text",
    "bad_json": "the file is not valid JSON",
    "duplicate_key": "an object names the same key twice (JSON would silently keep the last)",
    "too_deep": "objects/arrays nest deeper than flowkit.spec.MAX_DEPTH",
    "non_finite_number": "NaN, Infinity or a number too large for a float",
    "number_too_long": "a number written with more digits than flowkit.jsonread reads (an "
                       "integer of thousands of digits would take seconds to parse)",
    "bad_text": "a text holds a lone surrogate (not valid Unicode, cannot be stored)",
    "string_too_long": "a text is longer than flowkit.spec.MAX_STRING characters",
    "too_many_nodes": "more nodes (or layout entries) than flowkit.spec.MAX_NODES",
    "too_many_edges": "more edges than flowkit.spec.MAX_EDGES",
    "bad_schema_version": "schema_version is not a positive integer this flowkit understands",
}


def _p(code: str, message: str, node: str | None = None, field: str | None = None,
       hint: str = "", severity: str = "error") -> Problem:
    return Problem(code=code, message=message, node=node, field=field, hint=hint, severity=severity)


def _param_problems(node_id: str, cls: type[registry.Operator], params: dict[str, Any]) -> list[Problem]:
    """Params checked strictly, as a flow file states them: true or "10" where a number is
    expected is a problem, not 1 or 10 (the studio's forms hand over numbers)."""
    try:
        cls.Params.model_validate(params, strict=True)
    except PydanticValidationError as err:
        out = []
        for e in err.errors():
            path = ".".join(str(x) for x in e["loc"])
            got = f"; got {short(e['input'])}" if e["type"] != "missing" else ""
            out.append(_p("bad_param", f"param {path}: {e['msg']}{got}", node_id, f"params.{path}",
                          hint=_param_hint(cls, str(e["loc"][0]) if e["loc"] else "")))
        return out
    return []


def _param_hint(cls: type[registry.Operator], name: str) -> str:
    fields = cls.Params.model_fields
    if name in fields:
        return fields[name].description or ""
    return f"known params: {', '.join(fields) or 'none'}"


def upstream_writes(g: nx.DiGraph, writes: dict[str, tuple[str, ...]]) -> dict[str, set[str]]:
    """For every node of `g`, the keys written by its ancestors: the other nodes with a path to it
    (a node in a loop is not its own ancestor, as in networkx's `ancestors`).

    One pass over the graph's strongly connected components in topological order, instead of
    one ancestor search per node: linear, where the per-node search was quadratic on big flows.
    """
    cond = nx.condensation(g)
    members: dict[int, list[str]] = {c: list(cond.nodes[c]["members"]) for c in cond.nodes}
    inside: dict[int, dict[str, int]] = {}     # key -> how many members of the component write it
    for c, nodes in members.items():
        counts: dict[str, int] = {}
        for n in nodes:
            for k in set(writes.get(n, ())):
                counts[k] = counts.get(k, 0) + 1
        inside[c] = counts
    before: dict[int, set[str]] = {}           # keys written in the components upstream of c
    for c in nx.topological_sort(cond):
        acc: set[str] = set()
        for p in cond.predecessors(c):
            acc |= before[p]
            acc.update(inside[p])
        before[c] = acc
    out: dict[str, set[str]] = {}
    for c, nodes in members.items():
        for n in nodes:
            own = set(writes.get(n, ()))
            cycle = len(nodes) > 1          # in a loop, every other member is an ancestor
            others = {k for k, m in inside[c].items() if m - (k in own) > 0} if cycle else set()
            out[n] = before[c] | others
    return out


def name_problems(spec: FlowSpec) -> list[Problem]:
    """bad_name: a flow name, node label or edge label that is blank or holds a control
    character (flowkit.names.flaw says which)."""
    out: list[Problem] = []
    why = names.flaw(spec.name)
    if why:
        out.append(_p("bad_name", f"the flow's name {why}", None, "name",
                      hint="use visible characters on one line, e.g. 'my_flow'"))
    for i, n in enumerate(spec.nodes):
        why = names.flaw(n.label, blank_ok=True)
        if why:
            out.append(_p("bad_name", f"the label of node '{n.id}' {why}", n.id,
                          f"nodes[{i}].label", hint="use visible characters on one line, or "
                          "leave it empty to show the node id"))
    for i, e in enumerate(spec.edges):
        why = names.flaw(e.label, blank_ok=True) if e.label is not None else None
        if why:
            out.append(_p("bad_name", f"the label of edge {short(e.source)} -> {short(e.target)} "
                          f"{why}", None, f"edges[{i}].label",
                          hint="a route name such as 'continue' or 'done'"))
    return out


def check(spec: FlowSpec) -> list[Problem]:
    """All problems of a parsed flow (errors and warnings), in a stable order."""
    problems: list[Problem] = name_problems(spec)
    if not spec.nodes:
        return [*problems, _p("empty_flow", "the flow has no nodes", field="nodes",
                              hint="add an operator from the palette")]

    ids: set[str] = set()
    classes: dict[str, type[registry.Operator]] = {}
    instances: dict[str, registry.Operator] = {}
    for i, n in enumerate(spec.nodes):
        if n.id in ids:
            problems.append(_p("duplicate_node", f"node id '{n.id}' is used twice", n.id,
                               f"nodes[{i}].id", hint="give each node a unique id"))
        ids.add(n.id)
        cls = registry.get(n.operator)
        if cls is None:
            known = sorted(k for k in registry.all_operators() if k.split(".")[0] ==
                           n.operator.split(".")[0]) or sorted(registry.all_operators())[:8]
            problems.append(_p("unknown_operator", f"unknown operator '{short(n.operator)}'", n.id,
                               "operator", hint=f"known in this module: {', '.join(known)}"))
            continue
        classes[n.id] = cls
        param_problems = _param_problems(n.id, cls, n.params)
        problems += param_problems
        if not param_problems:
            instances[n.id] = cls(n.id, cls.Params.model_validate(n.params))

    for i, e in enumerate(spec.edges):
        for end in ("source", "target"):
            if getattr(e, end) not in ids:
                problems.append(_p("unknown_node", f"edge {short(e.source)} -> {short(e.target)}: "
                                   f"no node '{short(getattr(e, end))}'", None, f"edges[{i}].{end}",
                                   hint="connect existing nodes only"))
    if spec.entry and spec.entry not in ids:
        problems.append(_p("unknown_node", f"entry '{short(spec.entry)}' is not a node", None,
                           "entry"))

    kinds = {nid: cls.kind for nid, cls in classes.items()}
    topo = analyse(spec, kinds)
    g = topo.graph
    entry = topo.entry
    if entry is None and not spec.entry:
        entry = _likely_entry(g, classes)   # an answer node cut off: say so, not "no entry"
    if entry is None or entry not in g:
        roots = [n for n in g.nodes if g.in_degree(n) == 0]
        problems.append(_p("no_entry", "cannot tell where the flow starts" +
                           (f": several nodes have no input ({', '.join(roots)})" if roots else
                            ": every node has an input"), None, "entry",
                           hint="set 'entry' to the first node's id"))
    open_routes = any(label not in {e.label for e in spec.edges if e.source == nid}
                      for nid, op in instances.items() if kinds.get(nid) in ("router", "judge")
                      for label in op.route_labels())
    if not open_routes and not any(g.out_degree(n) == 0 for n in g.nodes):
        problems.append(_p("no_exit", "no node ends the flow", None, "edges",
                           hint="leave the answer node without outgoing edges"))
    reach: set[str] = set()
    if entry in g:
        reach = {entry} | nx.descendants(g, entry)
        for n in spec.nodes:
            if n.id not in reach and n.id in g:
                problems.append(_p("unreachable", f"node '{n.id}' cannot be reached from "
                                   f"'{entry}'", n.id, hint="connect it or delete it"))

    # memory keys: every required read must be written by some node upstream
    upstream = upstream_writes(g, {k: tuple(c.writes) for k, c in classes.items()})
    for n in spec.nodes:
        cls = classes.get(n.id)
        if cls is None or n.id not in g:
            continue
        written = set(INPUT_KEYS) | upstream[n.id]
        for key in cls.reads:
            if key not in written:
                writers = _suggest_writers(key)
                problems.append(_p("unread_key", f"reads '{key}' but nothing before it writes "
                                   f"'{key}'", n.id, f"reads.{key}",
                                   hint=f"put an operator that writes it upstream, e.g. "
                                        f"{', '.join(writers)}"))

    # loops must pass through a judge
    for comp in nx.strongly_connected_components(g):
        cyclic = len(comp) > 1 or any(g.has_edge(c, c) for c in comp)
        if not cyclic:
            continue
        sub = g.subgraph([c for c in comp if kinds.get(c) != "judge"])
        if not nx.is_directed_acyclic_graph(sub):
            loop = sorted(comp)
            problems.append(_p("cycle_without_judge", f"the loop through {', '.join(loop)} has no "
                               "judge to end it", loop[0], "edges",
                               hint="route the loop through an orchestration judge "
                                    "(its 'continue' edge closes the loop)"))

    # edge labels of routers and judges
    for i, e in enumerate(spec.edges):
        op = instances.get(e.source)
        kind = kinds.get(e.source)
        if kind in ("router", "judge") and op is not None:
            labels = op.route_labels()
            if not e.label:
                problems.append(_p("missing_edge_label", f"edge {e.source} -> {short(e.target)} has no "
                                   "label", e.source, f"edges[{i}].label",
                                   hint=f"choose one of: {', '.join(labels)}"))
            elif e.label not in labels:
                problems.append(_p("unknown_route_label", f"edge {e.source} -> {short(e.target)}: "
                                   f"'{e.source}' never produces '{short(e.label)}'", e.source,
                                   f"edges[{i}].label", hint=f"choose one of: {', '.join(labels)}"))
        elif e.label and kind is not None:
            problems.append(_p("label_on_plain_edge", f"edge {e.source} -> {short(e.target)} has label "
                               f"'{short(e.label)}' but '{e.source}' does not route", e.source,
                               f"edges[{i}].label", hint="remove the label", severity="warning"))
    for nid, op in instances.items():
        if kinds.get(nid) in ("router", "judge"):
            wired = {e.label for e in spec.edges if e.source == nid}
            for label in op.route_labels():
                if label not in wired:
                    problems.append(_p("unwired_route", f"route '{label}' has no edge; the run "
                                       "ends when it is chosen", nid, "edges", severity="warning",
                                       hint=f"draw an edge from '{nid}' labelled '{label}'"))

    # parallel branches
    for node, bids in sorted(topo.branch_conflicts.items()):
        if len(bids) > 1 and kinds.get(node) != "merge":
            problems.append(_p("fan_in_without_merge", f"parallel branches {', '.join(sorted(bids))}"
                               f" meet at '{node}', which is not a merge", node, "operator",
                               hint="insert an orchestration merge (e.g. orchestration.rrf) "
                                    "where the branches meet"))
    for node in sorted(topo.nested):
        problems.append(_p("nested_fanout", f"'{node}' fans out inside a parallel branch", node,
                           "edges", hint="merge the outer branches first"))
    for node, kind in kinds.items():
        if kind == "merge" and node in g:
            for pred in topo.predecessors(node):
                if kinds.get(pred) in ("router", "judge") and pred in topo.branch_of:
                    problems.append(_p("merge_from_router", f"merge '{node}' is fed by router "
                                       f"'{pred}' inside a branch", node, "edges",
                                       hint="end each branch with a plain node"))
    if entry is not None and entry in g and len(classes) == len(spec.nodes):
        path_problems = _answer_path_problems(spec, g, entry, classes, instances)
        problems += path_problems or _dead_end_problems(spec, g, entry, classes)
    return problems


def _likely_entry(g: nx.MultiDiGraph, classes: dict[str, type[registry.Operator]]) -> str | None:
    """Where a flow with several nodes without inputs evidently starts, when an edge on the way to
    its answer was deleted: the one such node that can start (it reads only the question) and
    leads to no answer, when every other one cannot start the flow (it writes the answer itself
    or reads what nothing before it writes). None when that is not clear (then no_entry). The
    other roots are unreachable from it, so the flow still has errors."""
    roots = [n for n in g.nodes if g.in_degree(n) == 0]
    if len(roots) < 2 or any(r not in classes for r in roots):
        return None

    def answers(n: str) -> bool:
        return any("answer" in classes[m].writes for m in nx.descendants(g, n) | {n})

    def can_start(n: str) -> bool:
        return set(classes[n].reads) <= set(INPUT_KEYS)

    starts = [r for r in roots if can_start(r) and not answers(r)]
    rest = [r for r in roots if r not in starts]
    if len(starts) != 1 or any(can_start(r) and "answer" not in classes[r].writes for r in rest):
        return None
    return starts[0]


def _exits(g: nx.MultiDiGraph, classes: dict[str, type[registry.Operator]],
           instances: dict[str, registry.Operator], spec: FlowSpec) -> set[str]:
    """Nodes where a run can end: no outgoing edge, or a router/judge route without an edge."""
    ends = {n for n in g.nodes if g.out_degree(n) == 0}
    for nid, op in instances.items():
        if classes[nid].kind in ("router", "judge"):
            wired = {e.label for e in spec.edges if e.source == nid}
            if any(label not in wired for label in op.route_labels()):
                ends.add(nid)
    return ends


def _answer_path_problems(spec: FlowSpec, g: nx.MultiDiGraph, entry: str,
                          classes: dict[str, type[registry.Operator]],
                          instances: dict[str, registry.Operator]) -> list[Problem]:
    """The no_answer_path error: no entry-to-end path passes a node that declares it writes
    'answer'. The engine's finishing step fills in an answer from memory after a halt, but a flow
    that never writes one on any path has no answer step at all, so it is an error."""
    ends = _exits(g, classes, instances, spec)
    if not ends:
        return []                                  # no_exit already says so
    reach = {entry} | nx.descendants(g, entry)
    for nid in reach:
        if "answer" in classes[nid].writes and ((nx.descendants(g, nid) | {nid}) & ends):
            return []
    ending = sorted(ends & reach)
    cut_off = sorted(n for n in g.nodes if n not in reach and "answer" in classes[n].writes)
    if cut_off:                                    # an answer node that no edge leads to
        writer = cut_off[0]
        heads = sorted(n for n in nx.ancestors(g, writer) | {writer} if g.in_degree(n) == 0)
        head = heads[0] if heads else writer
        src = ending[0] if ending else entry
        via = f" (through '{head}')" if head != writer else ""
        return [_p("no_answer_path", f"flow '{short(spec.name)}': no path from the entry "
                   f"'{entry}' to an answer: no edge leads to '{writer}', which writes "
                   f"'answer'{via}", writer, "edges",
                   hint=f"draw an edge from '{src}' to '{head}'")]
    writers = _suggest_writers("answer")
    return [_p("no_answer_path", f"flow '{short(spec.name)}': no path from '{entry}' to an end "
               f"({', '.join(ending[:5]) or '-'}) passes a node that writes 'answer'", None,
               "nodes", hint=f"add an answer operator before the end, e.g. {', '.join(writers)}")]


def _dead_end_problems(spec: FlowSpec, g: nx.MultiDiGraph, entry: str,
                       classes: dict[str, type[registry.Operator]]) -> list[Problem]:
    """dead_end warnings: a reachable node with no node that writes 'answer' at or after it does
    work that no answer uses (an `mmr` beside `retrieve -> generate`, or a step after the answer
    is written). One warning per dead branch, on the node where it leaves the answer's path,
    naming the edge into it and the nodes of the branch."""
    reach = {entry} | nx.descendants(g, entry)
    writers = {n for n in reach if "answer" in classes[n].writes}
    alive = set(writers)
    for w in writers:
        alive |= nx.ancestors(g, w)
    dead = reach - alive
    out: list[Problem] = []
    for node in sorted(dead):
        preds = [p for p in dict.fromkeys(g.predecessors(node)) if p not in dead]
        if not preds and node != entry:
            continue                               # inside a dead branch: its head says it
        branch = sorted((nx.descendants(g, node) & dead) - {node})
        keys = ", ".join(f"'{k}'" for k in classes[node].writes)
        rest = f" (nor do {', '.join(repr(b) for b in branch)} after it)" if branch else ""
        pred = preds[0] if preds else None
        field = next((f"edges[{i}]" for i, e in enumerate(spec.edges)
                      if e.source == pred and e.target == node), "edges")
        onward = [s for s in dict.fromkeys(g.successors(pred)) if s in alive] if pred else []
        if onward:
            hint = (f"put '{node}' between '{pred}' and '{onward[0]}' if its output should "
                    f"reach the answer, or delete it")
        elif pred in writers:
            hint = f"it runs after '{pred}' wrote the answer: move it before '{pred}' or delete it"
        else:
            hint = "lead it on to a node that writes 'answer', or delete it"
        out.append(_p("dead_end", f"'{node}' leads to no answer: no node at or after it writes "
                      f"'answer', so what it writes ({keys}) is never used{rest}", node, field,
                      hint=hint, severity="warning"))
    return out


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


#: The hint of a refused document, by code (default: compare with a template).
_REFUSAL_HINTS = {"duplicate_key": "delete one of the two entries: JSON keeps only the last",
                  "spec_invalid": "compare with a template: flowkit templates (numbers are "
                                  "written without quotes, true/false only for yes/no fields)"}


def _refusal(err: SpecError) -> Problem:
    return _p(err.code, err.detail, None, err.field or "file",
              hint=_REFUSAL_HINTS.get(err.code, "compare with a template: flowkit templates"))


def validate_document(data: Any) -> tuple[FlowSpec | None, list[Problem]]:
    """Parse and check a parsed JSON document; a document that is not a FlowSpec is reported as
    one problem with the SpecError's code (spec_invalid, too_deep, bad_text, ...) and field."""
    try:
        spec = from_dict(data)
    except SpecError as err:
        return None, [_refusal(err)]
    return spec, check(spec)


def validate_bytes(raw: bytes | str, source: str = "<upload>") -> tuple[FlowSpec | None,
                                                                          list[Problem]]:
    """Read (bounded, see flowkit.spec.read_document) and check a flow file's contents: the one
    path that `flowkit validate`, `flowkit flows import` and the studio's import share."""
    try:
        data = read_document(raw, source)
    except SpecError as err:
        return None, [_refusal(err)]
    return validate_document(data)


def validate_file(path: str) -> tuple[FlowSpec | None, list[Problem]]:
    """validate_bytes on a file, refusing an unreadable or oversized one as a problem."""
    try:
        raw = read_file(path)
    except SpecError as err:
        return None, [_refusal(err)]
    return validate_bytes(raw, path)


def ensure_valid(spec: FlowSpec) -> list[Problem]:
    """Raise ValidationError listing every error; return the warnings."""
    problems = check(spec)
    errs = errors(problems)
    if errs:
        raise ValidationError(errs)
    return [p for p in problems if p.severity != "error"]


#: Where a user most likely wants a missing key to come from: in-flow producers before indexing.
_MODULE_ORDER = ("retrieval", "pre_retrieval", "generation", "post_retrieval", "orchestration",
                 "indexing")


def _suggest_writers(key: str, n: int = 4) -> list[str]:
    """Up to `n` operator keys that write `key`, the most natural producers first."""
    def rank(name: str) -> tuple[int, str]:
        module = name.split(".", 1)[0]
        return (_MODULE_ORDER.index(module) if module in _MODULE_ORDER else len(_MODULE_ORDER), name)
    return sorted((k for k, c in registry.all_operators().items() if key in c.writes), key=rank)[:n]

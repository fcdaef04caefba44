"""The flow library, as the Flows, Run and Compare pages and `flowkit flows` use it: the saved
flows and their versions; create (blank or from a template), import, export, restore a version,
delete (with its editor drafts). Every function takes the workspace: the studio never holds its
store."""
from __future__ import annotations

import re

from flowkit import templates
from flowkit.errors import FlowkitError, Problem
from flowkit.export import export_zip as export_zip
from flowkit.export import graph_id as graph_id
from flowkit.names import check_new_name as check_rule
from flowkit.spec import FlowSpec, dumps
from flowkit.validate import validate_bytes
from storage.repo import FlowInfo as FlowInfo
from storage.repo import VersionInfo as VersionInfo

from .drafts import DraftStore
from .workspace import Workspace

BLANK = "(blank)"


def template_title(name: str) -> str:
    """A template's name with its description (the picker's text); the blank canvas says so."""
    if name == BLANK:
        return f"{BLANK} · an empty canvas"
    try:
        description = templates.load_template(name).description.strip()
    except FlowkitError:
        return name
    first = _SENTENCE_END.split(description, maxsplit=1)[0].rstrip(".")
    if len(first) > TITLE_CHARS:      # cut at a word, and say so
        first = first[:TITLE_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return f"{name} · {first}" if first else name


#: the most characters of a template's description its picker text shows
TITLE_CHARS = 110
#: a full stop that ends a sentence: not the one of "et al.", "e.g.", "i.e.", "cf.", "vs."
_SENTENCE_END = re.compile(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bcf)(?<!\bvs)\.\s")


def list_flows(ws: Workspace) -> list[FlowInfo]:
    """The saved flows (their latest versions, with their last run), as the store lists them."""
    return ws.store.list_flows()


def flow_exists(ws: Workspace, name: str) -> bool:
    """Whether a flow named `name` is saved."""
    return ws.store.flow_exists(name)


def get_flow(ws: Workspace, name: str, version: int | None = None) -> tuple[FlowSpec, int]:
    """A saved flow's spec and version number: `version`, or the latest (NotFoundError if none)."""
    return ws.store.get_flow(name, version)


def versions(ws: Workspace, name: str) -> list[VersionInfo]:
    """Every saved version of a flow, newest first."""
    return ws.store.versions(name)


def check_new_name(ws: Workspace, name: str) -> str:
    """A usable new flow name, or FlowkitError saying why not."""
    name = name.strip()
    if not name:
        raise FlowkitError("give the flow a name")
    check_rule(name, "flow")                  # the one rule for new names (flowkit.names.RULE)
    if ws.store.flow_exists(name):
        raise FlowkitError(f"a flow named '{name}' already exists; choose another name")
    return name


def create_flow(ws: Workspace, name: str, template: str = BLANK) -> int:
    """Save a new flow (version 1) from a template or blank; returns its version."""
    name = check_new_name(ws, name)
    if template == BLANK:
        spec = FlowSpec(name=name, description="")
    else:
        # laid out afresh by studio/layout.py (loops routed around the nodes), not as stored
        spec = templates.load_template(template).model_copy(update={"name": name, "layout": {}})
    return ws.store.save_flow(spec, expected_version=None, message=f"created from {template}")


def parse_import(raw: bytes) -> tuple[FlowSpec | None, list[Problem]]:
    """Read an uploaded flow file: the spec (None if unreadable) and its validation problems.

    The same bounded reader as `flowkit validate` and `flowkit flows import`, so an upload is
    refused for the same reasons, with the same codes."""
    return validate_bytes(raw, "upload")


def import_flow(ws: Workspace, spec: FlowSpec, name: str) -> int:
    """Save an imported spec under `name` as a new flow."""
    name = check_new_name(ws, name)
    return ws.store.save_flow(spec.model_copy(update={"name": name}), expected_version=None,
                           message="imported")


def export_bytes(ws: Workspace, name: str, version: int | None = None) -> bytes:
    """The canonical JSON file of a saved flow."""
    spec, _ = ws.store.get_flow(name, version)
    return dumps(spec).encode("utf-8")


def restore(ws: Workspace, name: str, version: int) -> int:
    """Save an old version as the newest one (expected_version = the current version)."""
    spec, _ = ws.store.get_flow(name, version)
    _, current = ws.store.get_flow(name)
    return ws.store.save_flow(spec, expected_version=current, message=f"restored version {version}")


def delete(ws: Workspace, name: str) -> None:
    """Delete a flow, its versions and its unsaved drafts (its runs stay in the history)."""
    ws.store.delete_flow(name)
    DraftStore(ws.data_dir).delete_flow(name)


def save_version(ws: Workspace, spec: FlowSpec, expected_version: int | None,
                 message: str = "") -> int:
    """Save an edited spec as the flow's next version (the Editor's Save); `expected_version` is
    the version the edit started from (None: a new flow). StaleSaveError when another version was
    saved meanwhile, NotFoundError when the flow was deleted: nothing is lost, the caller keeps
    its draft."""
    return ws.store.save_flow(spec, expected_version=expected_version, message=message)

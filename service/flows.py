"""The flow library, as the Flows page and `flowkit flows` use it: create (blank or from a
template), import, export, restore a version, delete (with its editor drafts)."""
from __future__ import annotations

from pathlib import Path

from flowkit import templates
from flowkit.errors import FlowkitError, Problem
from flowkit.export import export_zip as export_zip
from flowkit.export import graph_id as graph_id
from flowkit.names import flaw
from flowkit.spec import FlowSpec, dumps
from flowkit.validate import validate_bytes
from storage.repo import Store

from .drafts import DraftStore

BLANK = "(blank)"


def template_title(name: str) -> str:
    """A template's name with its description (the picker's text); the blank canvas says so."""
    if name == BLANK:
        return f"{BLANK} · an empty canvas"
    try:
        description = templates.load_template(name).description.strip()
    except FlowkitError:
        return name
    first = description.split(". ")[0].rstrip(".")
    return f"{name} · {first[:110]}" if first else name


def check_new_name(store: Store, name: str) -> str:
    """A usable new flow name, or FlowkitError saying why not."""
    name = name.strip()
    if not name:
        raise FlowkitError("give the flow a name")
    if len(name) > 200:
        raise FlowkitError("a flow name has at most 200 characters")
    why = flaw(name)
    if why:
        raise FlowkitError(f"the name {why}; use visible characters on one line")
    if store.flow_exists(name):
        raise FlowkitError(f"a flow named '{name}' already exists; choose another name")
    return name


def create_flow(store: Store, name: str, template: str = BLANK) -> int:
    """Save a new flow (version 1) from a template or blank; returns its version."""
    name = check_new_name(store, name)
    if template == BLANK:
        spec = FlowSpec(name=name, description="")
    else:
        # laid out afresh by studio/layout.py (loops routed around the nodes), not as stored
        spec = templates.load_template(template).model_copy(update={"name": name, "layout": {}})
    return store.save_flow(spec, expected_version=None, message=f"created from {template}")


def parse_import(raw: bytes) -> tuple[FlowSpec | None, list[Problem]]:
    """Read an uploaded flow file: the spec (None if unreadable) and its validation problems.

    The same bounded reader as `flowkit validate` and `flowkit flows import`, so an upload is
    refused for the same reasons, with the same codes."""
    return validate_bytes(raw, "upload")


def import_flow(store: Store, spec: FlowSpec, name: str) -> int:
    """Save an imported spec under `name` as a new flow."""
    name = check_new_name(store, name)
    return store.save_flow(spec.model_copy(update={"name": name}), expected_version=None,
                           message="imported")


def export_bytes(store: Store, name: str, version: int | None = None) -> bytes:
    """The canonical JSON file of a saved flow."""
    spec, _ = store.get_flow(name, version)
    return dumps(spec).encode("utf-8")


def restore(store: Store, name: str, version: int) -> int:
    """Save an old version as the newest one (expected_version = the current version)."""
    spec, _ = store.get_flow(name, version)
    _, current = store.get_flow(name)
    return store.save_flow(spec, expected_version=current, message=f"restored version {version}")


def delete(store: Store, data_dir: Path, name: str) -> None:
    """Delete a flow, its versions and its unsaved drafts (its runs stay in the history)."""
    store.delete_flow(name)
    DraftStore(data_dir).delete_flow(name)

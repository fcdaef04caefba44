"""What a FLOW argument names: a flow file, a saved flow or a template.

A bare argument is looked up as a file path, then a saved flow's name, then a template's name. When
it is both an existing file and a saved flow's name, neither silently wins: the error names both
and how to pick one with a prefix, `file:PATH`, `saved:NAME` or `template:NAME`. An argument too
long to be a file name (or otherwise not a possible path) is only looked up as a name, and a
clear error says so when no name matches: never an OSError traceback.
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol

from flowkit import templates
from flowkit.errors import FlowkitError, NotFoundError, short
from flowkit.spec import FlowSpec, load

#: Prefixes that say which kind of flow an argument names.
FILE, SAVED, TEMPLATE = "file:", "saved:", "template:"


class FlowStore(Protocol):
    """The part of storage.repo.Store a lookup needs."""

    def flow_exists(self, name: str) -> bool: ...

    def get_flow(self, name: str, version: int | None = None) -> tuple[FlowSpec, int]: ...


class AmbiguousFlowError(FlowkitError):
    """A FLOW argument that is both an existing file and a saved flow's name."""


def _as_file(ref: str) -> tuple[bool, str]:
    """(whether `ref` is an existing file, why it cannot be a path at all or '')."""
    try:
        return Path(ref).is_file(), ""
    except OSError as err:          # ENAMETOOLONG and the like: not a path this system can open
        return False, (err.strerror or str(err)).lower()
    except ValueError as err:       # an embedded NUL
        return False, str(err)


def _template(name: str) -> tuple[FlowSpec, None]:
    if name not in templates.names():
        raise NotFoundError(f"no template named '{short(name)}' (templates: "
                            f"{', '.join(templates.names())})")
    return templates.load_template(name), None


def resolve(ref: str, store: FlowStore) -> tuple[FlowSpec, int | None]:
    """The flow `ref` names and its saved version (None for a file or template)."""
    if ref.startswith(FILE):
        return load(ref[len(FILE):]), None
    if ref.startswith(SAVED):
        return store.get_flow(ref[len(SAVED):])
    if ref.startswith(TEMPLATE):
        return _template(ref[len(TEMPLATE):])
    is_file, not_a_path = _as_file(ref)
    saved = store.flow_exists(ref)
    if is_file and saved:
        raise AmbiguousFlowError(
            f"'{short(ref)}' names both the file {short(str(Path(ref).resolve()), 120)} and the "
            f"saved flow '{short(ref)}'; say which: 'file:{short(ref)}' for the file or "
            f"'saved:{short(ref)}' for the saved flow")
    if is_file:
        return load(ref), None
    if saved:
        return store.get_flow(ref)
    if ref.endswith(".json") and not not_a_path:
        return load(ref), None      # a missing file: SpecError 'cannot read flow file'
    if ref in templates.names():
        return _template(ref)
    why = (f" (it cannot be a file name: {not_a_path}, {len(ref)} characters)"
           if not_a_path else "")
    raise NotFoundError(f"'{short(ref)}' is not a flow file, a saved flow or a template{why} "
                        f"(templates: {', '.join(templates.names())})")

"""Reading and checking a working-memory value typed by a user (the replay page's fork form, a
fork's memory changes, `flowkit debug set`): the bounded JSON reader with limits fitted to memory
values, errors with a code and the field inside the value; `check_value`, the one check of a value
against its key's type, raising EditError (or the caller's type). Apart from `flowkit.memory`,
which operators import and which must stay free of readers and of flowkit's errors; the rules
themselves (keys, types) live there."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import jsonread
from .errors import FlowkitError, SpecError, short
from .memory import ErrorType, check_key, type_problem

#: Bounds of a value typed into a memory edit (the replay page's fork form): characters of the
#: whole value, of one text in it, entries of one list or object, and nesting. Generous for any
#: real memory (a few dozen passages of a few KB), small enough that the fork, its trace and
#: `flowkit trace` stay quick.
EDIT_MAX_CHARS = 1_000_000
EDIT_MAX_TEXT = 50_000
EDIT_MAX_ITEMS = 1_000
EDIT_MAX_DEPTH = 32


class EditError(FlowkitError):
    """A memory edit that cannot be made: an unknown key or a value whose type does not fit."""


def check_value(key: str, value: Any, error: ErrorType = EditError) -> Any:
    """`value` checked against the type of working-memory key `key` (text, a list of texts, a list
    of passages with id and text, an object...), as a debugger's edit and a fork's memory changes
    are: `error(message)` naming the key, the place inside the value and what was expected
    (EditError unless the caller names its own type)."""
    check_key(key, error)
    problem = type_problem(key, value)
    if problem:
        raise error(f"cannot set '{key}' to {short(value)}: {problem}")
    return value


def check_changes(changes: Mapping[str, Any], error: ErrorType = EditError) -> dict[str, Any]:
    """Memory changes {key: value} (a fork's), each checked by `check_value`."""
    return {k: check_value(k, v, error) for k, v in changes.items()}


def parse_edit(key: str, text: str) -> Any:
    """The JSON value typed for working-memory key `key`, read by the bounded reader: valid
    JSON text of at most EDIT_MAX_CHARS, finite numbers, valid Unicode text of at most
    EDIT_MAX_TEXT characters, at most EDIT_MAX_ITEMS entries per list or object, nesting of at
    most EDIT_MAX_DEPTH. SpecError otherwise, with a code and the field ('documents[3].text')."""
    check_key(key, lambda message: SpecError(message, code="unknown_key", field=key))
    if len(text) > EDIT_MAX_CHARS:
        raise SpecError(f"{len(text):,} characters; a memory value has at most "
                        f"{EDIT_MAX_CHARS:,}", code="value_too_large", field=key)
    try:
        return jsonread.parse(text, f"the value of {key}", max_depth=EDIT_MAX_DEPTH,
                              max_string=EDIT_MAX_TEXT, max_items=EDIT_MAX_ITEMS)
    except SpecError as err:
        field = key + ("" if not err.field else
                       err.field if err.field.startswith("[") else f".{err.field}")
        raise SpecError(err.detail, code=err.code, field=field) from None

"""Reading a working-memory value typed by a user (the replay page's fork form, `flowkit debug
set`): the bounded JSON reader with limits fitted to memory values, errors with a code and the
field inside the value. Apart from `flowkit.memory`, which operators import and which must stay
free of readers."""
from __future__ import annotations

from typing import Any

from . import jsonread
from .errors import SpecError
from .memory import OPERATOR_KEYS

#: Bounds of a value typed into a memory edit (the replay page's fork form): characters of the
#: whole value, of one text in it, entries of one list or object, and nesting. Generous for any
#: real memory (a few dozen passages of a few KB), small enough that the fork, its trace and
#: `flowkit trace` stay quick.
EDIT_MAX_CHARS = 1_000_000
EDIT_MAX_TEXT = 50_000
EDIT_MAX_ITEMS = 1_000
EDIT_MAX_DEPTH = 32


def parse_edit(key: str, text: str) -> Any:
    """The JSON value typed for working-memory key `key`, read by the bounded reader: valid
    JSON text of at most EDIT_MAX_CHARS, finite numbers, valid Unicode text of at most
    EDIT_MAX_TEXT characters, at most EDIT_MAX_ITEMS entries per list or object, nesting of at
    most EDIT_MAX_DEPTH. SpecError otherwise, with a code and the field ('documents[3].text')."""
    if key not in OPERATOR_KEYS:
        raise SpecError(f"not a working-memory key ({', '.join(OPERATOR_KEYS)})",
                        code="unknown_key", field=key)
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

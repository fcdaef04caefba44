"""Params forms generated from an operator's Params JSON schema.

Integers and floats with bounds become number inputs, booleans checkboxes, enums (Literal) select
boxes, strings text inputs (text areas for prompts and long texts), and dicts/lists a JSON text
area checked when it changes. A value that does not fit its widget (an imported flow with a
string where a number belongs) falls back to the JSON text area, so it can always be fixed.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from studio.common import inert

LONG_TEXT_NAMES = ("prompt", "template", "instruction", "system")


@dataclass(frozen=True)
class Field:
    """One param as the form sees it."""

    name: str
    title: str
    kind: str                      # int | float | bool | enum | text | longtext | json
    description: str = ""
    default: Any = None
    has_default: bool = False
    required: bool = False
    nullable: bool = False
    minimum: float | None = None
    maximum: float | None = None
    options: tuple[Any, ...] = ()


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs.get(ref.split("/")[-1], {})
        return {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    return prop


def _kind(name: str, prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return "enum"
    t = prop.get("type")
    if t == "integer":
        return "int"
    if t == "number":
        return "float"
    if t == "boolean":
        return "bool"
    if t == "string":
        default = prop.get("default")
        long = (any(w in name.lower() for w in LONG_TEXT_NAMES)
                or (isinstance(default, str) and ("\n" in default or len(default) > 80))
                or int(prop.get("maxLength") or 0) > 200)
        return "longtext" if long else "text"
    return "json"


def fields_from_schema(schema: dict[str, Any]) -> list[Field]:
    """The form's fields, in the schema's order."""
    defs = schema.get("$defs", {})
    required = set(schema.get("required", []))
    out = []
    for name, raw in (schema.get("properties") or {}).items():
        prop = _resolve(raw, defs)
        nullable = False
        if "anyOf" in prop:
            options = [_resolve(o, defs) for o in prop["anyOf"]]
            non_null = [o for o in options if o.get("type") != "null"]
            nullable = len(non_null) < len(options)
            rest = {k: v for k, v in prop.items() if k != "anyOf"}
            prop = {**non_null[0], **rest} if len(non_null) == 1 else {**rest, "type": "json"}
        integer = prop.get("type") == "integer"
        lo = prop.get("minimum")
        if lo is None and prop.get("exclusiveMinimum") is not None and integer:
            lo = prop["exclusiveMinimum"] + 1
        hi = prop.get("maximum")
        if hi is None and prop.get("exclusiveMaximum") is not None and integer:
            hi = prop["exclusiveMaximum"] - 1
        out.append(Field(name=name, title=str(prop.get("title") or name), kind=_kind(name, prop),
                         description=str(prop.get("description") or ""),
                         default=prop.get("default"), has_default="default" in prop,
                         required=name in required, nullable=nullable, minimum=lo, maximum=hi,
                         options=tuple(prop.get("enum") or ())))
    return out


def _fits(f: Field, value: Any) -> bool:
    """Whether `value` can be shown in the field's own widget."""
    if value is None:
        return f.kind != "enum"
    if f.kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif f.kind == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif f.kind == "bool":
        return isinstance(value, bool)
    elif f.kind == "enum":
        return value in f.options
    elif f.kind in ("text", "longtext"):
        return isinstance(value, str)
    else:
        return True
    if not ok:
        return False
    return ((f.minimum is None or value >= f.minimum) and (f.maximum is None or value <= f.maximum))


def coerce(f: Field, raw: Any, as_json: bool = False) -> Any:
    """The param value for what a widget holds; raises ValueError with a message if it is bad."""
    if as_json or f.kind == "json":
        text = str(raw or "").strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})") from None
    if raw is None:
        return None
    if f.kind == "int":
        return int(raw)
    if f.kind == "float":
        return float(raw)
    return raw


def _on_change(f: Field, key: str, as_json: bool, on_value: Callable[[str, Any], None],
               shown: Any) -> None:
    try:
        value = coerce(f, st.session_state.get(key), as_json)
    except ValueError as err:
        st.session_state[key + "__error"] = str(err)
        return
    st.session_state[key + "__error"] = None
    if value == shown and isinstance(value, bool) == isinstance(shown, bool):
        return   # not a change: a widget drawn by a run cut short reports its first value
    on_value(f.name, value)


def render_field(f: Field, value: Any, key: str, on_value: Callable[[str, Any], None],
                 disabled: bool = False) -> None:
    """One widget for one param; a change calls on_value(name, new value) before the next run."""
    shown = value if value is not None or not f.has_default else f.default
    as_json = f.kind == "json" or not _fits(f, shown)
    label = f.title + (" *" if f.required and not f.has_default else "")
    common: dict[str, Any] = {"key": key, "help": f.description or None, "disabled": disabled,
                              "on_change": _on_change, "args": (f, key, as_json, on_value, shown)}
    if as_json:
        text = "" if shown is None else json.dumps(shown, indent=2, ensure_ascii=False)
        st.text_area(label, value=text, height=100 if f.kind == "json" else 68, **common)
    elif f.kind == "int":
        st.number_input(label, value=shown, min_value=_int(f.minimum), max_value=_int(f.maximum),
                        step=1, **common)
    elif f.kind == "float":
        span = (f.maximum - f.minimum) if f.minimum is not None and f.maximum is not None else None
        st.number_input(label, value=None if shown is None else float(shown),
                        min_value=_float(f.minimum), max_value=_float(f.maximum),
                        step=0.05 if span is not None and span <= 1 else 0.5, format="%g", **common)
    elif f.kind == "bool":
        st.checkbox(label, value=bool(shown), **common)
    elif f.kind == "enum":
        st.selectbox(label, options=list(f.options), index=list(f.options).index(shown), **common)
    elif f.kind == "longtext":
        st.text_area(label, value=shown or "", height=160, **common)
    else:
        st.text_input(label, value=shown or "", **common)
    err = st.session_state.get(key + "__error")
    if err:
        st.error(f"{f.title}: {inert.escape(err)}")


def _int(v: float | None) -> int | None:
    return None if v is None else int(v)


def _float(v: float | None) -> float | None:
    return None if v is None else float(v)


def render_params(schema: dict[str, Any], params: dict[str, Any], key_prefix: str,
                  on_value: Callable[[str, Any], None]) -> None:
    """A widget per param of `schema`, showing `params` (defaults where a param is absent)."""
    fields = fields_from_schema(schema)
    if not fields:
        st.caption("This operator has no params.")
    for f in fields:
        render_field(f, params.get(f.name), f"{key_prefix}{f.name}", on_value)
    unknown = sorted(set(params) - {f.name for f in fields})
    for name in unknown:
        f = Field(name=name, title=f"{name} (unknown param)", kind="json",
                  description="Not a param of this operator: clear the box to remove it")
        render_field(f, params[name], f"{key_prefix}{name}", on_value)

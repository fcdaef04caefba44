"""Keyboard shortcuts the page's widgets cannot take themselves.

A small script (st.html with JavaScript) listens for keys on the page and in its frames (the
editor's canvas is one) and clicks the page's own button for them, which does the work in Python:
Delete / Backspace deletes the selection, Ctrl+Z (Cmd+Z) undoes, Ctrl+Shift+Z or Ctrl+Y redoes.
Buttons are found by their widget key (Streamlit gives each keyed element the class
`st-key-<key>`). Keys typed into a text box are left alone: there they edit the text.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import streamlit as st


@dataclass(frozen=True)
class Shortcut:
    """A key (as KeyboardEvent.key, lower case), its modifiers, and the button key it clicks."""

    key: str
    button: str
    ctrl: bool = False       # Ctrl, or Cmd on a Mac
    shift: bool = False


_SCRIPT = """<script>
(() => {
  const SHORTCUTS = %s;
  const top = document;
  const typing = (t) => {
    const tag = ((t && t.tagName) || "").toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || (t && t.isContentEditable);
  };
  const onKey = (ev) => {
    if (typing(ev.target)) return;
    const key = (ev.key || "").toLowerCase(), ctrl = ev.ctrlKey || ev.metaKey;
    const hit = SHORTCUTS.find((s) => s.key === key && s.ctrl === ctrl && s.shift === ev.shiftKey);
    if (!hit) return;
    // the first one shown (Streamlit also keeps a hidden copy of a button to measure it)
    const button = [...top.querySelectorAll(`.st-key-${hit.button} button`)]
      .find((b) => b.offsetParent !== null);
    if (button && !button.disabled) { ev.preventDefault(); button.click(); }
  };
  const hook = (doc) => {
    if (!doc || doc.__flowkitKeys === onKey) return;
    if (doc.__flowkitKeys) doc.removeEventListener("keydown", doc.__flowkitKeys, true);
    doc.__flowkitKeys = onKey;
    doc.addEventListener("keydown", onKey, true);
  };
  const scan = () => {
    hook(top);
    top.querySelectorAll("iframe").forEach((f) => { try { hook(f.contentDocument); } catch (e) {} });
  };
  scan();
  const host = window;
  if (host.__flowkitKeyScan) host.clearInterval(host.__flowkitKeyScan);
  host.__flowkitKeyScan = host.setInterval(scan, 700);
})();
</script>"""


def shortcuts(*bindings: Shortcut) -> None:
    """Make each binding's key (outside text boxes) click its button when it is enabled."""
    st.html(_SCRIPT % json.dumps([asdict(b) for b in bindings]), unsafe_allow_javascript=True)


def editor_shortcuts(delete: str, undo: str, redo: str) -> None:
    """The editor's keys: Delete and Backspace, Ctrl+Z, Ctrl+Shift+Z and Ctrl+Y."""
    shortcuts(Shortcut("delete", delete), Shortcut("backspace", delete),
              Shortcut("z", undo, ctrl=True), Shortcut("z", redo, ctrl=True, shift=True),
              Shortcut("y", redo, ctrl=True))

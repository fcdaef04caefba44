"""Keyboard shortcuts the page's widgets cannot take themselves.

The canvas component does not report a Delete/Backspace press to Python (GUIDE canvas rule 5), so
a small script (st.html with JavaScript) listens for those keys on the page and in its frames (the
canvas is one) and clicks the page's own button, which does the deletion in Python. Keys typed
into a text box are left alone.
"""
from __future__ import annotations

import json

import streamlit as st

_SCRIPT = """<script>
(() => {
  const LABEL = %s;
  const top = document;
  const typing = (t) => {
    const tag = ((t && t.tagName) || "").toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || (t && t.isContentEditable);
  };
  const onKey = (ev) => {
    if ((ev.key !== "Delete" && ev.key !== "Backspace") || typing(ev.target)) return;
    const button = [...top.querySelectorAll("button")]
      .find((b) => b.innerText.trim() === LABEL && !b.disabled);
    if (button) { ev.preventDefault(); button.click(); }
  };
  const hook = (doc) => {
    if (!doc || doc.__flowkitDeleteKey === onKey) return;
    if (doc.__flowkitDeleteKey) doc.removeEventListener("keydown", doc.__flowkitDeleteKey, true);
    doc.__flowkitDeleteKey = onKey;
    doc.addEventListener("keydown", onKey, true);
  };
  const scan = () => {
    hook(top);
    top.querySelectorAll("iframe").forEach((f) => { try { hook(f.contentDocument); } catch (e) {} });
  };
  scan();
  if (window.__flowkitDeleteScan) clearInterval(window.__flowkitDeleteScan);
  window.__flowkitDeleteScan = setInterval(scan, 700);
})();
</script>"""


def click_on_delete_key(button_label: str) -> None:
    """Make Delete and Backspace (outside text boxes) click the button labelled `button_label`
    when it is enabled."""
    st.html(_SCRIPT % json.dumps(button_label), unsafe_allow_javascript=True)

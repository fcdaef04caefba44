"""The replay's graph drawn again for a new window size.

The graph is a streamlit-agraph (vis.js) frame: when the window is resized, vis.js keeps the
view's scale in proportion to the old width instead of fitting the flow to the new one, so a
window made smaller and larger again (or opened wide and made smaller) shows the flow shrunk in a
corner. A small script in the page (st.html with JavaScript, once per browser tab) reloads each
graph frame a moment after a resize ends; Streamlit hands the reloaded frame its picture again
and vis.js fits it to the new size.
"""
from __future__ import annotations

import streamlit as st

FRAMES = "iframe[title*='agraph']"   # streamlit-agraph's frames (the component's name)
SETTLE_MS = 300                      # a resize is over when no other came for this long

_SCRIPT = """<script>
(() => {
  const host = window;
  if (host.__flowkitGraphRefit) return;
  let timer = null, size = [host.innerWidth, host.innerHeight];
  host.__flowkitGraphRefit = () => {
    const now = [host.innerWidth, host.innerHeight];
    if (now[0] === size[0] && now[1] === size[1]) return;
    size = now;
    host.clearTimeout(timer);
    timer = host.setTimeout(() => {
      document.querySelectorAll("%(frames)s").forEach((f) => {
        try { f.contentWindow.location.reload(); } catch (e) { /* another origin: left as is */ }
      });
    }, %(settle)d);
  };
  host.addEventListener("resize", host.__flowkitGraphRefit);
})();
</script>"""


def refit_on_resize() -> None:
    """Draw the replay's graph again, fitted, whenever the browser window changes size."""
    st.html(_SCRIPT % {"frames": FRAMES.replace('"', '\\"'), "settle": SETTLE_MS},
            unsafe_allow_javascript=True)

// Entry point: waits for Streamlit's first render message, then draws the canvas, as tall as
// Python asks, or (height 0) as fits the window below the canvas's top, again on every resize.
import { StrictMode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { ReactFlowProvider } from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import "./canvas.css";
import { onRender, ready, setHeight } from "./bridge.js";
import FlowCanvas from "./FlowCanvas.jsx";
import { fitHeight } from "./view.js";

// The page's height (px) that fits this frame in the window; null where the page is out of reach.
const windowFit = () => {
  try {
    const frame = window.frameElement;
    if (!frame || !window.parent) return null;
    let scrolled = 0;
    for (let el = frame.parentElement; el; el = el.parentElement) scrolled += el.scrollTop || 0;
    return fitHeight(window.parent.innerHeight, frame.getBoundingClientRect().top + scrolled);
  } catch {
    return null;    // another origin: Python's height, or the fallback
  }
};

function useWindowFit() {
  const [fit, setFit] = useState(windowFit);
  useEffect(() => {
    const again = () => setFit(windowFit());
    let host = null;
    try { host = window.parent; host.addEventListener("resize", again); } catch { host = null; }
    window.addEventListener("resize", again);
    return () => {
      window.removeEventListener("resize", again);
      if (host) host.removeEventListener("resize", again);
    };
  }, []);
  return fit;
}

const same = (a, b) => !!a && !!b && !!a.picture && !!b.picture && a.picture.rev === b.picture.rev
  && a.fit === b.fit && a.height === b.height && a.minimap === b.minimap && a.minZoom === b.minZoom;

function App() {
  const [args, setArgs] = useState(null);
  useEffect(() => {
    // Streamlit sends the arguments again on every rerun; keep the last ones (and draw nothing)
    // unless something the canvas shows changed.
    const stop = onRender((next) => setArgs((prev) => (same(prev, next) ? prev : next)));
    ready();
    return stop;
  }, []);
  const fit = useWindowFit();
  const height = (args && args.height) || fit || 620;
  useEffect(() => setHeight(height), [height]);
  if (!args || !args.picture) return null;
  return (
    <ReactFlowProvider>
      <FlowCanvas args={{ ...args, height }} />
    </ReactFlowProvider>
  );
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>,
);

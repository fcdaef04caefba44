// Entry point: waits for Streamlit's first render message, then draws the canvas.
import { StrictMode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { ReactFlowProvider } from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import "./canvas.css";
import { onRender, ready, setHeight } from "./bridge.js";
import FlowCanvas from "./FlowCanvas.jsx";

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
  const height = (args && args.height) || 620;
  useEffect(() => setHeight(height), [height]);
  if (!args || !args.picture) return null;
  return (
    <ReactFlowProvider>
      <FlowCanvas args={args} />
    </ReactFlowProvider>
  );
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>,
);

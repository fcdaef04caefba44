// The editor's canvas. Python hands it a picture (nodes, edges, a revision number); the canvas
// redraws only when the revision changes, and hands back one small event per user action:
//   {n, kind: "select", id}                  a click on a node or an edge (id null: on the
//                                            empty canvas while something was selected)
//   {n, kind: "move", moves: {id: [x, y]}}   nodes dragged to new places
//   {n, kind: "connect", source, target}     an edge drawn from a node's output handle to
//                                            another node (dropped anywhere on it: StepNode.jsx)
//   {n, kind: "breakpoint", id, before, after}  a node's breakpoint dot clicked (StepNode.jsx):
//                                            the node's new sides (the draft keeps them)
//   {n, kind: "view", width, height}         the canvas's size in px, when first measured and
//                                            whenever it changes (the layout of a flow opened
//                                            next fits it: studio/common/layout.py's `view`)
// How they travel: src/events.js. Deletion stays in Python (the page's button and the Delete
// key), as does every other change to the flow.
// The view: opening fits the whole flow when it fits at WHOLE_ZOOM or more (a template's 8 nodes,
// issue 48); a longer flow opens at its start at LEGIBLE_ZOOM (the fit button shows it all); the
// opening fit is made again when the canvas changes size before the user
// has touched it (the page may settle the canvas's height after the first fit: a fit made
// for a taller canvas left the flow at the bottom, under the zoom buttons); a node that arrives
// out of view (or within EDGE_ROOM px of an edge, or under the minimap) is panned into it, the
// zoom kept. While an edge is drawn the canvas keeps still (no auto-pan: a drag from a dot near
// the edge panned it ~200 px and the drop missed, issue 48); a drop that connects nothing says
// why (src/drop.js). The mouse wheel scrolls the page around the canvas until the canvas is
// clicked (then it zooms, until the pointer leaves the canvas); Ctrl + wheel always zooms.
import { useCallback, useEffect, useRef, useState } from "react";
import {
  Background, ControlButton, Controls, MiniMap, ReactFlow, applyEdgeChanges, applyNodeChanges, useNodesInitialized,
  useReactFlow,
} from "@xyflow/react";
import LaneEdge from "./LaneEdge.jsx";
import StepNode from "./StepNode.jsx";
import { dropNote } from "./drop.js";
import { emit } from "./events.js";
import { mergeEdges, mergeNodes } from "./merge.js";
import { inView, openingView, underRect, viewReport } from "./view.js";

const nodeTypes = { step: StepNode };
const edgeTypes = { lane: LaneEdge };
const MOVED = 0.5;   // canvas units: less is a click, not a move
const FIT_MAX_ZOOM = 1.2;  // a small flow is fitted no bigger than this (text at about 17 px)
const LABEL_ROOM = 16; // canvas units around a lane's corners: its label's half height and more
const LEGIBLE_ZOOM = 0.75; // a long flow opens at its start at this zoom: 14 px text stays above 10 px
const WHOLE_ZOOM = 0.45;   // a flow that fits at this zoom or more opens whole (titles at 6+ px)
const NOTE_MS = 4000;      // how long a drop that connected nothing is explained
const EDGE_ROOM = 48;      // px: a node that arrives is panned in this far from the canvas's edges


const notToItself = ({ source, target }) => source !== target;   // a drop back on its own node
const keepSelectAndMove = (changes) => changes.filter((c) => c.type !== "remove");

export default function FlowCanvas({ args }) {
  const { picture } = args;
  const [nodes, setNodes] = useState([]);
  const [edges, setEdges] = useState([]);
  const shownRev = useRef(null);
  const shown = useRef(picture);
  const fitDone = useRef(null);
  const autoView = useRef(false);   // the view is the opening fit's, untouched by the user
  const arrived = useRef([]);       // ids of nodes new in the last picture (not on the first)
  const [active, setActive] = useState(false);   // clicked into: the wheel zooms
  const [connecting, setConnecting] = useState(false);   // an edge is being drawn
  const [note, setNote] = useState(null);   // why the last drop drew no edge (a few seconds)
  const latest = useRef({ nodes, edges });
  latest.current = { nodes, edges };
  const pane = useRef(null);
  const { fitBounds, getNode, getNodes, getNodesBounds, getViewport, setCenter, setViewport, zoomTo } = useReactFlow();
  const measured = useNodesInitialized();

  useEffect(() => {
    if (shownRev.current === picture.rev) return;
    const first = shownRev.current === null;
    const had = new Set(shown.current.nodes.map((d) => d.id));
    shownRev.current = picture.rev;
    shown.current = picture;
    arrived.current = first ? [] : picture.nodes.filter((d) => !had.has(d.id)).map((d) => d.id);
    setNodes((prev) => mergeNodes(prev, picture));
    setEdges((prev) => mergeEdges(prev, picture));
  }, [picture]);

  // Report the canvas's size to Python: once measured, and again on every change (a resize),
  // then fit the flow again if the view is still the opening fit's.
  const reported = useRef(null);
  const refit = useRef(() => {});
  useEffect(() => {
    const el = pane.current;
    if (!el) return undefined;
    const report = () => {
      const size = viewReport(el.getBoundingClientRect(), reported.current);
      if (!size) return;
      const resized = reported.current !== null;
      reported.current = size;
      emit("view", size);
      if (resized && autoView.current) refit.current();
    };
    report();
    if (typeof ResizeObserver === "undefined") return undefined;
    const watch = new ResizeObserver(report);
    watch.observe(el);
    return () => watch.disconnect();
  }, []);

  // Fit the nodes and the lanes of routed edges (React Flow's own fit sees only nodes, and would
  // cut a loop's way back off below the flow).
  const fitAll = useCallback((legible) => {
    const ns = getNodes();
    if (!ns.length) return;
    const b = getNodesBounds(ns);
    let [x0, y0, x1, y1] = [b.x, b.y, b.x + b.width, b.y + b.height];
    for (const e of shown.current.edges) {
      for (const [x, y] of e.lane || []) {
        x0 = Math.min(x0, x - LABEL_ROOM); x1 = Math.max(x1, x + LABEL_ROOM);
        y0 = Math.min(y0, y - LABEL_ROOM); y1 = Math.max(y1, y + LABEL_ROOM);
      }
    }
    const bounds = { x: x0, y: y0, width: x1 - x0, height: y1 - y0 };
    fitBounds(bounds, { padding: 0.04, duration: 0 }).then(() => {
      const zoom = getViewport().zoom;
      if (zoom > FIT_MAX_ZOOM) zoomTo(FIT_MAX_ZOOM, { duration: 0 });
      const box = pane.current && pane.current.getBoundingClientRect();
      const view = legible === true && box
        && openingView(bounds, box.width, box.height, zoom, LEGIBLE_ZOOM, WHOLE_ZOOM);
      if (view) setViewport(view, { duration: 0 });
    });
  }, [fitBounds, getNodes, getNodesBounds, getViewport, setViewport, zoomTo]);
  refit.current = () => fitAll(true);

  useEffect(() => {
    if (measured && nodes.length && fitDone.current !== args.fit) {
      fitDone.current = args.fit;
      arrived.current = [];
      autoView.current = true;
      fitAll(true);
    }
  }, [measured, nodes.length, args.fit, fitAll]);

  // Once the user works on the canvas (a press anywhere on it: a click, a drag, a zoom button)
  // or pans or zooms it (an event; the canvas's own moves have none), their view is kept.
  const onMoveStart = useCallback((event) => { if (event) autoView.current = false; }, []);

  // A node that arrived out of view (a palette add, an undo) is panned into view, zoom kept.
  useEffect(() => {
    if (!measured || !arrived.current.length || !pane.current) return;
    const ids = arrived.current;
    arrived.current = [];
    const box = pane.current.getBoundingClientRect();
    const viewport = getViewport();
    const mini = pane.current.querySelector(".react-flow__minimap");
    const m = mini && mini.getBoundingClientRect();
    const miniRect = m && { x: m.x - box.x, y: m.y - box.y, width: m.width, height: m.height };
    for (const id of ids) {
      const n = getNode(id);
      if (!n) continue;
      const w = (n.measured && n.measured.width) || 220;
      const h = (n.measured && n.measured.height) || 80;
      const at = { x: n.position.x, y: n.position.y, width: w, height: h };
      if (!inView(at, viewport, box.width, box.height, EDGE_ROOM) || underRect(at, viewport, miniRect)) {
        setCenter(n.position.x + w / 2, n.position.y + h / 2, { zoom: viewport.zoom, duration: 0 });
        return;
      }
    }
  }, [measured, nodes, getNode, getViewport, setCenter]);

  const onNodesChange = useCallback((changes) => setNodes((ns) => applyNodeChanges(keepSelectAndMove(changes), ns)), []);
  const onEdgesChange = useCallback((changes) => setEdges((es) => applyEdgeChanges(keepSelectAndMove(changes), es)), []);
  const onNodeClick = useCallback((_, node) => emit("select", { id: node.id }), []);
  const onEdgeClick = useCallback((_, edge) => emit("select", { id: edge.id }), []);
  const onPaneClick = useCallback(() => {
    const { nodes: ns, edges: es } = latest.current;   // before React Flow clears its selection
    if (ns.some((n) => n.selected) || es.some((e) => e.selected)) emit("select", { id: null });
  }, []);
  const onNodeDragStop = useCallback((_, node, dragged) => {
    const where = new Map(shown.current.nodes.map((d) => [d.id, d]));
    const moves = {};
    for (const n of dragged && dragged.length ? dragged : [node]) {
      const was = where.get(n.id);
      if (!was || Math.abs(was.x - n.position.x) > MOVED || Math.abs(was.y - n.position.y) > MOVED) {
        moves[n.id] = [Math.round(n.position.x * 10) / 10, Math.round(n.position.y * 10) / 10];
      }
    }
    if (Object.keys(moves).length) emit("move", { moves });
  }, []);
  const onConnect = useCallback(({ source, target }) => {
    if (!source || !target) return;
    setEdges((es) => [...es, { id: `new:${source}->${target}`, source, target, deletable: false }]);
    emit("connect", { source, target });
  }, []);

  const onConnectStart = useCallback(() => { setConnecting(true); setNote(null); }, []);
  const onConnectEnd = useCallback((_, state) => {
    setConnecting(false);
    setNote(dropNote(state));
  }, []);
  useEffect(() => {
    if (!note) return undefined;
    const t = setTimeout(() => setNote(null), NOTE_MS);
    return () => clearTimeout(t);
  }, [note]);

  return (
    <div ref={pane} style={{ height: args.height || 620 }}
      onMouseDownCapture={() => { setActive(true); autoView.current = false; }}
      onMouseLeave={() => setActive(false)}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onNodeClick={onNodeClick}
        onEdgeClick={onEdgeClick}
        onPaneClick={onPaneClick}
        onNodeDragStop={onNodeDragStop}
        onConnect={onConnect}
        onConnectStart={onConnectStart}
        onConnectEnd={onConnectEnd}
        onMoveStart={onMoveStart}
        isValidConnection={notToItself}
        autoPanOnConnect={false}
        className={connecting ? "fk-connecting" : ""}
        deleteKeyCode={null}
        zoomOnScroll={active}
        preventScrolling={active}
        panOnScroll={false}
        minZoom={args.minZoom || 0.2}
        maxZoom={2}
        proOptions={{ hideAttribution: true }}
      >
        <Background />
        <Controls showInteractive={false} showFitView={false}>
          <ControlButton className="react-flow__controls-fitview" onClick={() => fitAll(false)}
            title="Fit the whole flow" aria-label="Fit the whole flow">
            <svg viewBox="0 0 16 16" width="12" height="12" fill="none" stroke="currentColor" strokeWidth="2">
              <path d="M1 5V1h4M11 1h4v4M15 11v4h-4M5 15H1v-4" />
            </svg>
          </ControlButton>
        </Controls>
        {args.minimap ? <MiniMap pannable zoomable /> : null}
        {note ? <div className="fk-note" role="status" data-testid="fk-drop-note">{note}</div> : null}
      </ReactFlow>
    </div>
  );
}

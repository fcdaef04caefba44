// The editor's canvas. Python hands it a picture (nodes, edges, a revision number); the canvas
// redraws only when the revision changes, and hands back one small event per user action:
//   {n, kind: "select", id}                  a click on a node or an edge
//   {n, kind: "move", moves: {id: [x, y]}}   nodes dragged to new places
//   {n, kind: "connect", source, target}     an edge drawn from a node's handle to another's
// Each value sent is {token, events}: this canvas's random token and its last RECENT events,
// numbered 1, 2, ... (n), so Python takes each one once even when two come faster than a rerun
// (Streamlit keeps only the latest value). Deletion stays in Python (the page's button and the
// Delete key), as does every other change to the flow.
import { useCallback, useEffect, useRef, useState } from "react";
import {
  Background, ControlButton, Controls, MiniMap, ReactFlow, applyEdgeChanges, applyNodeChanges, useNodesInitialized,
  useReactFlow,
} from "@xyflow/react";
import LaneEdge from "./LaneEdge.jsx";
import StepNode from "./StepNode.jsx";
import { setValue } from "./bridge.js";
import { mergeEdges, mergeNodes } from "./merge.js";

const nodeTypes = { step: StepNode };
const edgeTypes = { lane: LaneEdge };
const MOVED = 0.5;   // canvas units: less is a click, not a move
const FIT_MAX_ZOOM = 1.2;  // a small flow is fitted no bigger than this (text at about 17 px)
const LABEL_ROOM = 16; // canvas units around a lane's corners: its label's half height and more

const RECENT = 20;
const token = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
const recent = [];
let counter = 0;
const emit = (kind, data) => {
  counter += 1;
  recent.push({ n: counter, kind, ...data });
  if (recent.length > RECENT) recent.shift();
  setValue({ token, events: [...recent] });
};

const keepSelectAndMove = (changes) => changes.filter((c) => c.type !== "remove");

export default function FlowCanvas({ args }) {
  const { picture } = args;
  const [nodes, setNodes] = useState([]);
  const [edges, setEdges] = useState([]);
  const shownRev = useRef(null);
  const shown = useRef(picture);
  const fitDone = useRef(null);
  const { fitBounds, getNodes, getNodesBounds, getViewport, zoomTo } = useReactFlow();
  const measured = useNodesInitialized();

  useEffect(() => {
    if (shownRev.current === picture.rev) return;
    shownRev.current = picture.rev;
    shown.current = picture;
    setNodes((prev) => mergeNodes(prev, picture));
    setEdges((prev) => mergeEdges(prev, picture));
  }, [picture]);

  // Fit the nodes and the lanes of routed edges (React Flow's own fit sees only nodes, and would
  // cut a loop's way back off below the flow).
  const fitAll = useCallback(() => {
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
    fitBounds({ x: x0, y: y0, width: x1 - x0, height: y1 - y0 }, { padding: 0.04, duration: 0 })
      .then(() => { if (getViewport().zoom > FIT_MAX_ZOOM) zoomTo(FIT_MAX_ZOOM, { duration: 0 }); });
  }, [fitBounds, getNodes, getNodesBounds, getViewport, zoomTo]);

  useEffect(() => {
    if (measured && nodes.length && fitDone.current !== args.fit) {
      fitDone.current = args.fit;
      fitAll();
    }
  }, [measured, nodes.length, args.fit, fitAll]);

  const onNodesChange = useCallback((changes) => setNodes((ns) => applyNodeChanges(keepSelectAndMove(changes), ns)), []);
  const onEdgesChange = useCallback((changes) => setEdges((es) => applyEdgeChanges(keepSelectAndMove(changes), es)), []);
  const onNodeClick = useCallback((_, node) => emit("select", { id: node.id }), []);
  const onEdgeClick = useCallback((_, edge) => emit("select", { id: edge.id }), []);
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

  return (
    <div style={{ height: args.height || 620 }}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onNodeClick={onNodeClick}
        onEdgeClick={onEdgeClick}
        onNodeDragStop={onNodeDragStop}
        onConnect={onConnect}
        deleteKeyCode={null}
        minZoom={args.minZoom || 0.2}
        maxZoom={2}
        proOptions={{ hideAttribution: true }}
      >
        <Background />
        <Controls showInteractive={false} showFitView={false}>
          <ControlButton className="react-flow__controls-fitview" onClick={fitAll}
            title="Fit the whole flow" aria-label="Fit the whole flow">
            <svg viewBox="0 0 16 16" width="12" height="12" fill="none" stroke="currentColor" strokeWidth="2">
              <path d="M1 5V1h4M11 1h4v4M15 11v4h-4M5 15H1v-4" />
            </svg>
          </ControlButton>
        </Controls>
        {args.minimap ? <MiniMap pannable zoomable /> : null}
      </ReactFlow>
    </div>
  );
}

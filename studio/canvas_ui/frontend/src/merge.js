// Python's picture -> React Flow nodes and edges, reusing every object whose picture did not
// change, so React Flow redraws only what changed (a click or a palette add on a 150-node flow
// redraws one or two nodes, not all of them).
import { MarkerType } from "@xyflow/react";

const nodeOf = (d, picture, old) => ({
  id: d.id,
  type: "step",
  position: { x: d.x, y: d.y },
  data: {
    key: JSON.stringify(d),
    title: d.title, sub: d.sub, op: d.op, flag: d.flag, bg: d.bg, border: d.border,
    bp: d.bp || "", bpNote: d.bpNote || "",
    width: picture.nodeWidth, sourceSide: picture.sourceSide, targetSide: picture.targetSide,
  },
  selected: picture.selected === d.id,
  deletable: false,
  ...(old && old.measured ? { measured: old.measured } : {}),
});

export function mergeNodes(prev, picture) {
  const old = new Map(prev.map((n) => [n.id, n]));
  const sides = `${picture.sourceSide}/${picture.targetSide}`;
  return picture.nodes.map((d) => {
    const n = old.get(d.id);
    const same = n && n.data.key === JSON.stringify(d) && n.data.sides === sides
      && n.position.x === d.x && n.position.y === d.y && !!n.selected === (picture.selected === d.id);
    if (same) return n;
    const fresh = nodeOf(d, picture, n);
    fresh.data.sides = sides;
    return fresh;
  });
}

const LABEL_STYLE = { fontSize: 14, fontWeight: 600 };

const edgeOf = (d, picture) => {
  const stroke = d.red ? "#dc2626" : d.colour || "#64748b";
  const edge = {
    id: d.id,
    source: d.source,
    target: d.target,
    type: d.lane ? "lane" : "default",
    label: d.label || undefined,
    labelStyle: LABEL_STYLE,
    labelShowBg: !!d.label,
    labelBgStyle: { fill: d.red ? "#fee2e2" : "#fff7ed" },
    markerEnd: { type: MarkerType.ArrowClosed, color: stroke },
    style: { stroke, strokeWidth: 2 },
    selected: picture.selected === d.id,
    deletable: false,
    data: { key: JSON.stringify(d), ...(d.lane ? { points: d.lane } : {}) },
  };
  return edge;
};

export function mergeEdges(prev, picture) {
  const old = new Map(prev.map((e) => [e.id, e]));
  return picture.edges.map((d) => {
    const e = old.get(d.id);
    if (e && e.data && e.data.key === JSON.stringify(d) && !!e.selected === (picture.selected === d.id)) return e;
    return edgeOf(d, picture);
  });
}

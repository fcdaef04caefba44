// node --test: pictures -> React Flow nodes and edges keep every unchanged object (src/merge.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { mergeEdges, mergeNodes } from "../src/merge.js";

const node = (id, x, extra = {}) => ({ id, x, y: 0, title: id, sub: "", op: "retrieval.bm25",
  flag: "", bg: "#fff", border: "1px solid", ...extra });
const picture = (nodes, edges = [], selected = null) => ({ rev: 1, nodes, edges, selected,
  sourceSide: "right", targetSide: "left", nodeWidth: 220 });

test("unchanged nodes are the same objects; changed ones are new", () => {
  const first = mergeNodes([], picture([node("a", 0), node("b", 270)]));
  assert.equal(first.length, 2);
  assert.equal(first[0].type, "step");
  assert.deepEqual(first[1].position, { x: 270, y: 0 });
  first[0].measured = { width: 220, height: 60 };
  const next = mergeNodes(first, picture([node("a", 0), node("b", 300, { flag: "error" }), node("c", 600)]));
  assert.equal(next[0], first[0]);                        // untouched: React Flow skips it
  assert.notEqual(next[1], first[1]);
  assert.equal(next[1].data.flag, "error");
  assert.deepEqual(next[1].position, { x: 300, y: 0 });
  assert.equal(next[2].id, "c");
  const selected = mergeNodes(next, picture([node("a", 0), node("b", 300, { flag: "error" }), node("c", 600)], [], "a"));
  assert.notEqual(selected[0], next[0]);
  assert.equal(selected[0].selected, true);
  assert.deepEqual(selected[0].measured, { width: 220, height: 60 });   // no re-measure flash
  assert.equal(selected[1], next[1]);
  assert.equal(mergeNodes(selected, picture([node("c", 600)])).length, 1);   // deleted ones go
});

test("edges: routed ones carry their lane, unchanged ones are kept", () => {
  const edges = [
    { id: "a->b", source: "a", target: "b", label: "", colour: "#94a3b8", red: false, lane: null },
    { id: "b->a", source: "b", target: "a", label: "continue", colour: "#7c3aed", red: false,
      lane: [[244, 300], [-24, 300]] },
  ];
  const first = mergeEdges([], picture([], edges));
  assert.equal(first[0].type, "default");
  assert.equal(first[1].type, "lane");
  assert.deepEqual(first[1].data.points, [[244, 300], [-24, 300]]);
  assert.equal(first[1].label, "continue");
  assert.equal(first[1].style.stroke, "#7c3aed");
  const red = mergeEdges(first, picture([], [edges[0], { ...edges[1], red: true }]));
  assert.equal(red[0], first[0]);
  assert.equal(red[1].style.stroke, "#dc2626");
});

// node --test: the canvas's height on a screen, the legible fit and the in-view check (src/view.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BELOW, MAX_HEIGHT, MIN_HEIGHT, fitHeight, inView, legibleView, openingView, underRect, viewReport,
} from "../src/view.js";

test("the canvas takes the window's height below its top, within limits", () => {
  assert.equal(fitHeight(800, 300), 800 - 300 - BELOW);
  assert.equal(fitHeight(500, 300), MIN_HEIGHT);
  assert.equal(fitHeight(3000, 100), MAX_HEIGHT);
  assert.equal(fitHeight(undefined, 100), 620);
  assert.equal(fitHeight(800, -5, 500), 500);
});

test("a fit too small to read starts the flow at the edge at the legible zoom", () => {
  const wide = { x: 0, y: -65, width: 1500, height: 300 };
  assert.equal(legibleView(wide, 540, 480, 0.8, 0.7), null);        // legible: keep the fit
  const v = legibleView(wide, 540, 480, 0.36, 0.7, 16);
  assert.equal(v.zoom, 0.7);
  assert.equal(v.x, 16);                                               // the start, at the left
  assert.equal(v.y, (480 - 300 * 0.7) / 2 + 65 * 0.7);                 // centred across
  const tall = legibleView({ x: -100, y: 0, width: 200, height: 2000 }, 540, 480, 0.2, 0.7, 16);
  assert.equal(tall.y, 16);
  assert.equal(tall.x, (540 - 200 * 0.7) / 2 + 100 * 0.7);
});

test("a flow that fits at the whole zoom opens whole; a longer one at its start", () => {
  const template = { x: 0, y: 0, width: 520, height: 870 };       // self_rag, top to bottom
  assert.equal(openingView(template, 534, 469, 0.52, 0.75, 0.45), null);   // keep the fit
  const long = { x: 0, y: 0, width: 600, height: 9000 };          // 150 nodes
  const v = openingView(long, 534, 469, 0.05, 0.75, 0.45, 16);
  assert.deepEqual(v, legibleView(long, 534, 469, 0.05, 0.75, 16));
  assert.equal(v.zoom, 0.75);
  assert.equal(v.y, 16);
});

test("a node is in view only when all of it is", () => {
  const vp = { x: 10, y: 20, zoom: 0.5 };
  assert.equal(inView({ x: 0, y: 0, width: 220, height: 100 }, vp, 540, 480), true);
  assert.equal(inView({ x: 1000, y: 0, width: 220, height: 100 }, vp, 540, 480), false);
  assert.equal(inView({ x: 0, y: -100, width: 220, height: 100 }, vp, 540, 480), false);
  const atEdge = { x: 800, y: 100, width: 220, height: 100 };        // 20 px from the right edge
  assert.equal(inView(atEdge, vp, 540, 480), true);
  assert.equal(inView(atEdge, vp, 540, 480, 48), false);               // too close to drag from
});

test("a node under the minimap is found (pane px)", () => {
  const vp = { x: 0, y: 0, zoom: 1 };
  const mini = { x: 325, y: 315, width: 200, height: 150 };
  assert.equal(underRect({ x: 300, y: 300, width: 220, height: 100 }, vp, mini), true);
  assert.equal(underRect({ x: 0, y: 300, width: 220, height: 100 }, vp, mini), false);
  assert.equal(underRect({ x: 300, y: 300, width: 220, height: 100 }, vp, null), false);
});

test("the canvas reports its size once per size, in whole px, once it is measured", () => {
  assert.deepEqual(viewReport({ width: 540.4, height: 480.6 }, null), { width: 540, height: 481 });
  assert.equal(viewReport({ width: 540.2, height: 480.9 }, { width: 540, height: 481 }), null);
  assert.deepEqual(viewReport({ width: 700, height: 481 }, { width: 540, height: 481 }),
    { width: 700, height: 481 });
  assert.equal(viewReport({ width: 0, height: 480 }, null), null);      // not laid out yet
  assert.equal(viewReport(null, null), null);
});

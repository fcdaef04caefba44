// node --test: the routed edge's polyline and path (src/geometry.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { lanePoints, roundedPath } from "../src/geometry.js";

test("a lane below the flow is entered and left vertically", () => {
  // source's right handle at (220, 50); the lane runs at y 300 from x 244 back to x -24
  const pts = lanePoints([220, 50], [244, 300], [-24, 300], [0, 50]);
  assert.deepEqual(pts, [[220, 50], [244, 50], [244, 300], [-24, 300], [-24, 50], [0, 50]]);
});

test("a lane right of the flow is entered and left horizontally", () => {
  const pts = lanePoints([110, 100], [400, 220], [400, -20], [110, 0]);
  assert.deepEqual(pts, [[110, 100], [110, 220], [400, 220], [400, -20], [110, -20], [110, 0]]);
});

test("the path starts and ends at the handles and cuts each corner", () => {
  const d = roundedPath([[0, 0], [100, 0], [100, 100]], 10);
  assert.equal(d, "M 0 0 L 90 0 Q 100 0 100 10 L 100 100");
  // repeated points are dropped; a short segment limits the radius to half its length
  assert.equal(roundedPath([[0, 0], [0, 0], [4, 0], [4, 50]], 10), "M 0 0 L 2 0 Q 4 0 4 2 L 4 50");
  assert.equal(roundedPath([[1, 1]], 10), "");
});

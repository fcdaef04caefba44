// node --test: a node's breakpoint dots (src/breakpoints.js): what a click sends back.
import assert from "node:assert/strict";
import { test } from "node:test";
import { bpOf, dotTitle, sidesOf, toggle } from "../src/breakpoints.js";

test("a click on a dot turns its side on or off and keeps the other side", () => {
  assert.deepEqual(toggle("generate", "", "before"), { id: "generate", before: true, after: false });
  assert.deepEqual(toggle("generate", "before", "before"), { id: "generate", before: false, after: false });
  assert.deepEqual(toggle("judge", "before", "after"), { id: "judge", before: true, after: true });
  assert.deepEqual(toggle("judge", "both", "after"), { id: "judge", before: true, after: false });
  assert.deepEqual(toggle("judge", "after", "before"), { id: "judge", before: true, after: true });
  assert.equal(toggle("judge", "both", "middle"), null);
});

test("the picture's text and the two sides say the same thing", () => {
  for (const bp of ["", "before", "after", "both"]) assert.equal(bpOf(sidesOf(bp)), bp);
  assert.deepEqual(sidesOf(undefined), { before: false, after: false });
  assert.deepEqual(sidesOf("nonsense"), { before: false, after: false });
});

test("a dot's tooltip says what a click does and which breakpoints it stands for", () => {
  assert.match(dotTitle("before", "", ""), /^Set a breakpoint: pause before/);
  assert.match(dotTitle("after", "both", "retrieve@2:after"), /pauses after this node ran \(retrieve@2:after\)\. Click to remove/);
});

// node --test: what a drawn edge's drop that connects nothing says (src/drop.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { EMPTY_DROP, SELF_DROP, dropNote } from "../src/drop.js";

test("a drop that connects nothing says why; one that connects says nothing", () => {
  const from = { id: "a" };
  assert.equal(dropNote({ isValid: true, fromNode: from, toNode: { id: "b" } }), null);
  assert.equal(dropNote({ isValid: null, fromNode: from, toNode: null }), EMPTY_DROP);
  assert.equal(dropNote({ isValid: false, fromNode: from, toNode: from }), SELF_DROP);
  assert.equal(dropNote(undefined), null);
});

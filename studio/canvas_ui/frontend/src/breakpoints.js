// A node's breakpoints on the canvas, pure (node --test covers it). Python sends each node's
// `bp`: "before", "after", "both" or "" (the draft's breakpoints, any visit or condition); a click
// on one of the node's two dots turns that side on or off, and the canvas sends the node's new
// sides back as one small event: {kind: "breakpoint", id, before, after}.

export const SIDES = ["before", "after"];

// {before, after} from the picture's `bp` text (anything unknown: neither).
export function sidesOf(bp) {
  return { before: bp === "before" || bp === "both", after: bp === "after" || bp === "both" };
}

// The picture's `bp` text for {before, after}.
export function bpOf({ before, after }) {
  if (before && after) return "both";
  if (before) return "before";
  return after ? "after" : "";
}

// The event data that flips one side ("before" or "after") of node `id` whose breakpoints are `bp`;
// null for a side that is neither.
export function toggle(id, bp, side) {
  if (!SIDES.includes(side)) return null;
  const sides = sidesOf(bp);
  return { id, ...sides, [side]: !sides[side] };
}

// The dot's tooltip: what a click does, and the breakpoints it stands for.
export function dotTitle(side, bp, note) {
  const on = sidesOf(bp)[side];
  const what = side === "before" ? "before this node runs" : "after this node ran";
  if (!on) return `Set a breakpoint: pause ${what} (Run page)`;
  return `Breakpoint: pauses ${what}${note ? ` (${note})` : ""}. Click to remove it`;
}

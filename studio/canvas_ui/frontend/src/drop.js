// What the canvas says when a drawn edge is let go where it connects nothing (issue 48): a drop
// on the empty canvas, or back on its own node. `state` is React Flow's final connection state
// (onConnectEnd's second argument); null when the drop connected (or nothing was drawn).
export const EMPTY_DROP = "Dropped on the empty canvas: no edge drawn. Let go over another node "
  + "to connect them, or use Connect to in the node's form.";
export const SELF_DROP = "Dropped on the node it starts from: an edge needs another node.";

export function dropNote(state) {
  if (!state || state.isValid) return null;
  const from = state.fromNode && state.fromNode.id;
  const to = state.toNode && state.toNode.id;
  if (to && to === from) return SELF_DROP;
  return to ? null : EMPTY_DROP;
}

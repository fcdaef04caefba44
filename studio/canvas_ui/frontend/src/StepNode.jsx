// One operator node: its title, its id when a label hides it, its operator, a problem flag, and
// two breakpoint dots (top right: pause before it, pause after it), red when set; a click on a
// dot toggles that breakpoint (src/breakpoints.js) without selecting or dragging the node.
// Its two handles (input, output) are dots on its border in an 18 px hit area each (canvas.css);
// while an edge is being drawn the input handle covers the whole node, so a drop anywhere on a
// node connects to it.
// Plain text only (React escapes it): a flow's labels can never inject markup.
import { memo } from "react";
import { Handle, Position } from "@xyflow/react";
import { SIDES as BP_SIDES, dotTitle, sidesOf, toggle } from "./breakpoints.js";
import { emit } from "./events.js";

const SIDES = { left: Position.Left, right: Position.Right, top: Position.Top, bottom: Position.Bottom };

function Dots({ id, bp, note }) {
  const on = sidesOf(bp);
  return (
    <div className="fk-bps nodrag nopan">
      {BP_SIDES.map((side) => (
        <button key={side} type="button" className={`fk-bp fk-bp-${side}${on[side] ? " fk-bp-on" : ""}`}
          title={dotTitle(side, bp, note)} aria-label={`Breakpoint ${side} ${id}`}
          aria-pressed={on[side]} data-testid={`bp-${side}-${id}`}
          onMouseDown={(ev) => ev.stopPropagation()}
          onClick={(ev) => { ev.stopPropagation(); emit("breakpoint", toggle(id, bp, side)); }} />
      ))}
    </div>
  );
}

function StepNode({ id, data, selected }) {
  const cls = ["fk-node", selected ? "fk-selected" : "", data.flag ? `fk-${data.flag}` : "",
    data.bp ? "fk-has-bp" : ""];
  return (
    <div className={cls.join(" ").trim()} style={{ background: data.bg, border: data.border, width: data.width }}>
      <Handle type="target" className="fk-handle" position={SIDES[data.targetSide] || Position.Left}
        title="Input: drop an edge here, or anywhere on the node" />
      <Dots id={id} bp={data.bp} note={data.bpNote} />
      <div className="fk-title">
        {data.flag ? <span className="fk-flag">({data.flag}) </span> : null}
        <strong>{data.title}</strong>
      </div>
      {data.sub ? <div className="fk-sub">{data.sub}</div> : null}
      <code className="fk-op">{data.op}</code>
      <Handle type="source" className="fk-handle" position={SIDES[data.sourceSide] || Position.Right}
        title="Output: drag from here to another node to connect them" />
    </div>
  );
}

export default memo(StepNode);

// One operator node: its title, its id when a label hides it, its operator, and a problem flag.
// Plain text only (React escapes it): a flow's labels can never inject markup.
import { memo } from "react";
import { Handle, Position } from "@xyflow/react";

const SIDES = { left: Position.Left, right: Position.Right, top: Position.Top, bottom: Position.Bottom };

function StepNode({ data, selected }) {
  const cls = ["fk-node", selected ? "fk-selected" : "", data.flag ? `fk-${data.flag}` : ""];
  return (
    <div className={cls.join(" ").trim()} style={{ background: data.bg, border: data.border, width: data.width }}>
      <Handle type="target" position={SIDES[data.targetSide] || Position.Left} />
      <div className="fk-title">
        {data.flag ? <span className="fk-flag">({data.flag}) </span> : null}
        <strong>{data.title}</strong>
      </div>
      {data.sub ? <div className="fk-sub">{data.sub}</div> : null}
      <code className="fk-op">{data.op}</code>
      <Handle type="source" position={SIDES[data.sourceSide] || Position.Right} />
    </div>
  );
}

export default memo(StepNode);

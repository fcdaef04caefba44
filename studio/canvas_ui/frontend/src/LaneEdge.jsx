// An edge routed around the nodes along a lane (a loop's way back, or a forward edge that would
// run behind nodes). The lane is the segment between its two corner points, which the layout
// (studio/layout.py) places in the gaps between nodes; the edge leaves its source, turns into
// the lane at the first corner, follows it to the second and turns into its target. The label
// sits in the middle of the lane, on the edge's own line.
import { memo } from "react";
import { BaseEdge } from "@xyflow/react";
import { lanePoints, roundedPath } from "./geometry.js";

function LaneEdge(props) {
  const { sourceX, sourceY, targetX, targetY, data, markerEnd, style, label } = props;
  const [a, b] = data.points;
  const points = lanePoints([sourceX, sourceY], a, b, [targetX, targetY]);
  return (
    <BaseEdge
      id={props.id}
      path={roundedPath(points, 10)}
      markerEnd={markerEnd}
      style={style}
      label={label}
      labelX={(a[0] + b[0]) / 2}
      labelY={(a[1] + b[1]) / 2}
      labelStyle={props.labelStyle}
      labelShowBg={props.labelShowBg}
      labelBgStyle={props.labelBgStyle}
      labelBgPadding={[6, 3]}
      labelBgBorderRadius={3}
      interactionWidth={props.interactionWidth}
    />
  );
}

export default memo(LaneEdge);

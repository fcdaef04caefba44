// The polyline of a routed edge and an SVG path through it with rounded corners.

// source -> (turn) -> corner a -> along the lane -> corner b -> (turn) -> target. A lane that
// runs horizontally is entered and left vertically, and the other way round.
export function lanePoints(s, a, b, t) {
  const horizontal = Math.abs(a[0] - b[0]) >= Math.abs(a[1] - b[1]);
  const into = horizontal ? [a[0], s[1]] : [s[0], a[1]];
  const out = horizontal ? [b[0], t[1]] : [t[0], b[1]];
  return [s, into, a, b, out, t];
}

const close = (p, q) => Math.abs(p[0] - q[0]) < 0.5 && Math.abs(p[1] - q[1]) < 0.5;

// "M x y L ..." through the points, each inner corner cut by a quadratic curve of radius r
// (less where a segment is short: never more than half of either segment).
export function roundedPath(points, r) {
  const pts = points.filter((p, i) => i === 0 || !close(p, points[i - 1]));
  if (pts.length < 2) return "";
  let d = `M ${pts[0][0]} ${pts[0][1]}`;
  for (let i = 1; i < pts.length - 1; i += 1) {
    const [p, c, n] = [pts[i - 1], pts[i], pts[i + 1]];
    const cut = Math.min(r, Math.hypot(c[0] - p[0], c[1] - p[1]) / 2, Math.hypot(n[0] - c[0], n[1] - c[1]) / 2);
    const toward = (from, to, len) => {
      const dist = Math.hypot(to[0] - from[0], to[1] - from[1]) || 1;
      return [from[0] + ((to[0] - from[0]) * len) / dist, from[1] + ((to[1] - from[1]) * len) / dist];
    };
    const b1 = toward(c, p, cut);
    const a1 = toward(c, n, cut);
    d += ` L ${b1[0]} ${b1[1]} Q ${c[0]} ${c[1]} ${a1[0]} ${a1[1]}`;
  }
  const last = pts[pts.length - 1];
  return `${d} L ${last[0]} ${last[1]}`;
}

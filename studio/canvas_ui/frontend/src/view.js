// The canvas's view arithmetic, pure (node --test covers it): how tall the canvas is on this
// screen, whether a flow opens whole and where one too long to read whole opens instead, and
// whether a node is in view.

export const MIN_HEIGHT = 360;    // px: below this the canvas is too small to work in
export const MAX_HEIGHT = 1000;
export const BELOW = 24;          // px kept free under the canvas (its caption starts there)

// The height that fits the window: from the canvas's top (in the page, px) to the window's
// bottom less BELOW, between MIN_HEIGHT and MAX_HEIGHT. Unknown sizes give `fallback`.
export function fitHeight(windowHeight, top, fallback = 620) {
  if (!(windowHeight > 0) || !(top >= 0)) return fallback;
  return Math.round(Math.max(MIN_HEIGHT, Math.min(MAX_HEIGHT, windowHeight - top - BELOW)));
}

// The opening view of a flow whose bounds fit at `fitZoom`: null (keep the fit, the whole flow in
// view) when `fitZoom` is `wholeZoom` or more, as for a template's 8 nodes in a 1366 x 800
// window's canvas (issue 48: they overflowed a start view at `minZoom`); a longer flow, which
// would be too small to make out whole, opens at its start at `minZoom` (legibleView).
export function openingView(bounds, width, height, fitZoom, minZoom, wholeZoom, pad = 16) {
  if (fitZoom >= wholeZoom) return null;
  return legibleView(bounds, width, height, fitZoom, minZoom, pad);
}

// The view ({x, y, zoom}) for a flow whose bounds fit only at `fitZoom` < `minZoom`: at
// `minZoom`, its start (left edge, or top edge when it is taller than wide on screen) at the
// view's edge `pad` px in, centred across; null when the fit is legible as it is.
export function legibleView(bounds, width, height, fitZoom, minZoom, pad = 16) {
  if (!(fitZoom < minZoom)) return null;
  const zoom = minZoom;
  const w = bounds.width * zoom;
  const h = bounds.height * zoom;
  const x = w <= width ? (width - w) / 2 - bounds.x * zoom : pad - bounds.x * zoom;
  const y = h <= height ? (height - h) / 2 - bounds.y * zoom : pad - bounds.y * zoom;
  return { x, y, zoom };
}

// Whether the box (canvas units) is wholly inside the view of a width x height pane, `room` px
// clear of its edges (a node's output dot at the very edge is hard to drag from).
export function inView(box, viewport, width, height, room = 0) {
  const { x, y, zoom } = viewport;
  const x0 = box.x * zoom + x;
  const y0 = box.y * zoom + y;
  return x0 >= room && y0 >= room && x0 + box.width * zoom <= width - room
    && y0 + box.height * zoom <= height - room;
}

// Whether the box (canvas units) shows under `rect` ({x, y, width, height}, pane px): the
// minimap sits over the canvas's bottom right corner, and a node under it cannot be dragged from.
export function underRect(box, viewport, rect) {
  if (!rect) return false;
  const { x, y, zoom } = viewport;
  const x0 = box.x * zoom + x;
  const y0 = box.y * zoom + y;
  return x0 < rect.x + rect.width && rect.x < x0 + box.width * zoom
    && y0 < rect.y + rect.height && rect.y < y0 + box.height * zoom;
}

// The canvas's size to report to Python ({width, height}, whole px) when its pane measures
// `box` and `last` was reported before: null while nothing is measured yet or the size is the
// one reported (a change under one px is none), so Python hears of each size once.
export function viewReport(box, last) {
  if (!box || !(box.width > 0) || !(box.height > 0)) return null;
  const size = { width: Math.round(box.width), height: Math.round(box.height) };
  if (last && last.width === size.width && last.height === size.height) return null;
  return size;
}

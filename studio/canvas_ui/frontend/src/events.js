// The events the canvas hands back to Python. Each value sent is {token, events}: this canvas's
// random token and its last RECENT events, numbered 1, 2, ... (n), so Python takes each one once
// even when two come faster than a rerun (Streamlit keeps only the latest value).
import { setValue } from "./bridge.js";

const RECENT = 20;
const token = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
const recent = [];
let counter = 0;

export const emit = (kind, data) => {
  counter += 1;
  recent.push({ n: counter, kind, ...data });
  if (recent.length > RECENT) recent.shift();
  setValue({ token, events: [...recent] });
};

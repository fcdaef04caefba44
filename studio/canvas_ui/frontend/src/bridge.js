// The Streamlit component protocol (API version 1), as messages with the page around the iframe:
// the page sends "streamlit:render" with the Python arguments; the component says it is ready,
// sets its height and hands values back (each value makes Python rerun the page).

const send = (type, data) =>
  window.parent.postMessage({ isStreamlitMessage: true, type, ...data }, "*");

export const ready = () => send("streamlit:componentReady", { apiVersion: 1 });

export const setHeight = (height) => send("streamlit:setFrameHeight", { height });

export const setValue = (value) => send("streamlit:setComponentValue", { value, dataType: "json" });

// Calls onArgs(args) with every render message's arguments; returns a function that stops it.
export const onRender = (onArgs) => {
  const listen = (event) => {
    if (event.data && event.data.type === "streamlit:render") onArgs(event.data.args || {});
  };
  window.addEventListener("message", listen);
  return () => window.removeEventListener("message", listen);
};

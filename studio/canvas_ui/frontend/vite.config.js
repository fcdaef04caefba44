// Builds the canvas into dist/, which studio/canvas_ui/__init__.py serves as a Streamlit component.
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

export default defineConfig({
  plugins: [react()],
  base: "./",                       // Streamlit serves the component under /component/<name>/
  build: { outDir: "dist", emptyOutDir: true, chunkSizeWarningLimit: 1024 },
});

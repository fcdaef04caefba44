"""The Editor page: the flow being edited (editor), its canvas (canvas, canvas_ui), the palette,
the node forms, the keyboard keys and the editor tabs."""

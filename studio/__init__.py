"""Streamlit helpers shared by the pages: session state, canvas, forms, background jobs."""

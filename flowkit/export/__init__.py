"""Export a flow as a Python package that LangGraph's own server runs (`flowkit export`)."""
from .writer import export_zip, graph_id, render, write_package

__all__ = ["export_zip", "graph_id", "render", "write_package"]

"""Orchestration: routers (conditional), judges (end loops) and merges (join branches)."""
from . import fusion, judges, routers  # noqa: F401

"""Orchestration: routers (conditional), judges (end loops) and merges (join branches)."""

"""Indexing: how documents become retrievable chunks (used at ingest time and inside flows)."""

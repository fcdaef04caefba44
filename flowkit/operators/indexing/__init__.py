"""Indexing: how documents become retrievable chunks (used at ingest time and inside flows)."""
from . import chunking, graph, hierarchical, metadata, sentences, small_to_big, triples  # noqa: F401

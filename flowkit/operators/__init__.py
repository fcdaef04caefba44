"""The built-in operator catalog, one package per Modular RAG module, one file per family.

Importing this package registers every operator; the registry is closed to everything else.
"""
from . import indexing, pre_retrieval, retrieval, post_retrieval, generation, orchestration  # noqa: F401

"""Retrieval: BM25, dense (Chroma) and hybrid search over the run's knowledge base."""

"""Post-retrieval: rerank, compress and select retrieved passages."""

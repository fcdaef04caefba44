"""Runtime resources: the LLM, the embedder, knowledge bases (Chroma + BM25). Loaded lazily."""

"""Pre-retrieval: rewrite, expand or decompose the question before searching."""

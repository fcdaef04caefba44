"""Pre-retrieval: rewrite, expand or decompose the question before searching."""
from . import chain, expand, rewrite, sql  # noqa: F401

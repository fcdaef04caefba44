"""Post-retrieval: rerank, compress and select retrieved passages."""
from . import compress, evidence, llm_rerank, rerank, select  # noqa: F401

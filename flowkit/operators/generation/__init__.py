"""Generation: answers from the retrieved passages, and their verification."""
from . import answer, chain, per_document, verify  # noqa: F401

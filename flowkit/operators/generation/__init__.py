"""Generation: answers from the retrieved passages, and their verification."""
from . import answer  # noqa: F401

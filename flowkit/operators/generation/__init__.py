"""Generation: answers from the retrieved passages, and their verification."""

"""The Knowledge page: search side by side, the chunks, the knowledge graph and the attached
database of one knowledge base (the logic is service.knowledge)."""

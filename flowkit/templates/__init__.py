"""Ready-made flows (FlowSpec JSON files)."""

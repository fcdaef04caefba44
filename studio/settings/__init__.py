"""The Settings page: what the settings form offers and checks (models, resources, cache)."""

"""Documents as users have them: typed documents (model), one reader per format, provenance."""

"""Storage: flows, versions, runs and steps in SQLite (or PostgreSQL) through SQLAlchemy."""

"""Alembic's migrations of the history database, shipped inside the package and run by
jobs.history.database (never by the alembic command on a user's machine)."""

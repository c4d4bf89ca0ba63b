"""Alembic's environment: the connection jobs.history.database opened, handed over in the config's
attributes, and the migrations run on it in its transaction."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()

"""Alembic environment of the collector database: run by ``attesta collector migrate``."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

url = context.config.get_main_option("sqlalchemy.url")
if url is None:
    raise RuntimeError("alembic: sqlalchemy.url is not set (run `attesta collector migrate`)")
engine = create_engine(url)
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=None, transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()

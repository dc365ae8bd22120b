"""Alembic environment of the collector database: run by ``attesta collector migrate``."""

from attesta_platform.migrations import run_alembic_environment

run_alembic_environment()

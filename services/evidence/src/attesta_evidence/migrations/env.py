"""Alembic environment of the evidence database: run by ``attesta evidence migrate``."""

from attesta_platform.migrations import run_alembic_environment

run_alembic_environment()

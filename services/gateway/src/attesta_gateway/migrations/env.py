"""Alembic environment of the gateway database: run by ``attesta gateway migrate``."""

from attesta_platform.migrations import run_alembic_environment

run_alembic_environment()

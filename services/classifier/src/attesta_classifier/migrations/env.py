"""Alembic environment of the classifier database: run by ``attesta classifier migrate``."""

from attesta_platform.migrations import run_alembic_environment

run_alembic_environment()

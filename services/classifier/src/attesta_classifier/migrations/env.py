"""Alembic environment of the classifier database (run by ``attesta classifier migrate``).

The URL comes from the Config object the migrate command builds (the admin URL pointed at the
classifier database); there is no alembic.ini. Migrations are plain SQL (``op.execute``), so no
SQLAlchemy models are involved: asyncpg is the service's driver, psycopg only runs migrations.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

config = context.config
url = config.get_main_option("sqlalchemy.url")

if context.is_offline_mode():
    context.configure(url=url, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, transactional_ddl=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()

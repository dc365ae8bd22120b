"""The unit of work against a real PostgreSQL: a value the database cannot store leaves a block
as the service's own domain error (``unstorable``), so no driver error crosses the port."""

from __future__ import annotations

import asyncpg
import pytest

from attesta_platform.unit_of_work import PostgresUnitOfWork
from attesta_testing.infra import temp_database

pytestmark = pytest.mark.integration


class NotStorable(Exception):
    pass


class MappingUnitOfWork(PostgresUnitOfWork):
    def unstorable(self, exc: asyncpg.DataError) -> Exception:
        return NotStorable(type(exc).__name__)


@pytest.fixture
async def pool():
    async with temp_database("t_uow") as url:
        p = await asyncpg.create_pool(url, min_size=1, max_size=2)
        await p.execute("CREATE TABLE notes (note text)")
        yield p
        await p.close()


async def test_a_data_error_leaves_a_block_as_the_domain_error_and_nothing_is_kept(pool):
    uow = MappingUnitOfWork(pool)
    with pytest.raises(NotStorable, match="DivisionByZeroError") as raised:
        async with uow:
            await uow.connection.execute("INSERT INTO notes VALUES ('kept?')")
            await uow.connection.execute("SELECT 1 / 0")  # a data exception (SQLSTATE class 22)
    assert isinstance(raised.value.__cause__, asyncpg.DataError)
    assert await pool.fetchval("SELECT count(*) FROM notes") == 0  # rolled back
    with pytest.raises(NotStorable):
        async with uow.read():
            await uow.connection.fetchval("SELECT 'not a number'::int")
    async with uow:  # the unit of work is usable again: its connection went back to the pool
        await uow.connection.execute("INSERT INTO notes VALUES ('kept')")
        await uow.commit()
    assert await pool.fetchval("SELECT note FROM notes") == "kept"


async def test_without_a_mapping_the_driver_error_goes_through(pool):
    uow = PostgresUnitOfWork(pool)
    with pytest.raises(asyncpg.DataError):
        async with uow:
            await uow.connection.execute("SELECT 1 / 0")
    with pytest.raises(asyncpg.DataError):
        async with uow.read():
            await uow.connection.fetchval("SELECT 'x'::int")

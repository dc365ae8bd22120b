"""A service's start-up against a real PostgreSQL (attesta_platform.migrations.open_migrated_pool):
an unmigrated database and an unusable one stop it with their own exit code and reason."""

from __future__ import annotations

import asyncpg
import pytest

from attesta_platform.migrations import open_migrated_pool
from attesta_testing.infra import free_port, temp_database, with_user

pytestmark = pytest.mark.integration


async def _open(url: str) -> asyncpg.Pool:
    return await open_migrated_pool(
        "widget", lambda: asyncpg.create_pool(url, min_size=1, max_size=2, timeout=5),
        probe_table="widgets", url_setting="ATTESTA_WIDGET_DATABASE_URL")


async def _exit_code(url: str) -> object:
    with pytest.raises(SystemExit) as stopped:
        await _open(url)
    return stopped.value.code


async def test_a_migrated_database_gives_a_working_pool() -> None:
    async with temp_database("t_startup") as url:
        setup = await asyncpg.connect(url)
        try:
            await setup.execute("CREATE TABLE widgets (id int); INSERT INTO widgets VALUES (7)")
        finally:
            await setup.close()
        pool = await _open(url)
        try:
            assert await pool.fetchval("SELECT id FROM widgets") == 7
        finally:
            await pool.close()


async def test_an_unmigrated_database_exits_2_naming_the_migrate_command(
        capsys: pytest.CaptureFixture[str]) -> None:
    async with temp_database("t_startup") as url:
        assert await _exit_code(url) == 2
    assert capsys.readouterr().err == (
        "widget: the database has no widget tables: run `attesta widget migrate` with "
        "ATTESTA_PG_ADMIN_URL\n")


async def test_an_unreachable_server_exits_3_naming_the_setting(
        capsys: pytest.CaptureFixture[str]) -> None:
    nothing_listens = f"postgresql://nobody:nothing@127.0.0.1:{free_port()}/none"
    assert await _exit_code(nothing_listens) == 3
    assert capsys.readouterr().err.startswith(
        "widget: cannot use PostgreSQL at ATTESTA_WIDGET_DATABASE_URL: ")


async def test_a_refused_login_exits_3_with_the_servers_reason(
        capsys: pytest.CaptureFixture[str]) -> None:
    async with temp_database("t_startup") as url:
        assert await _exit_code(with_user(url, "no_such_role_x", "wrong")) == 3
    assert "password authentication failed" in capsys.readouterr().err

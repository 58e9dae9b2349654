"""Shared fixtures: one real PostgreSQL (the embedded local server, or $PGANON_TEST_DSN's server)
and databases made for the tests, with pganon installed where a test needs it."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _with_db(dsn: str, dbname: str) -> str:
    return psycopg.conninfo.make_conninfo(dsn, dbname=dbname)


@pytest.fixture(scope="session")
def server_dsn() -> str:
    """A superuser DSN to a maintenance database of the test server. The embedded server starts in
    fast mode (fsync, synchronous_commit, full_page_writes off: tests only, may lose the last
    transactions on a crash); PGANON_SERVER_FAST=0 runs the suite on a durable server."""
    if os.environ.get("PGANON_TEST_DSN"):
        return os.environ["PGANON_TEST_DSN"]
    from pganon import server
    os.environ.setdefault(server.FAST_ENV, "1")
    return server.start()


@pytest.fixture(scope="session")
def make_db(server_dsn):
    """Factory: a new empty database (dropped at the end of the session)."""
    made = []

    def make(prefix: str = "t") -> str:
        name = f"pganon_{prefix}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(server_dsn, autocommit=True) as c:
            c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        made.append(name)
        return _with_db(server_dsn, name)

    yield make
    with psycopg.connect(server_dsn, autocommit=True) as c:
        for name in made:
            c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def db_dsn(make_db) -> str:
    """The session's database with pganon installed."""
    from pganon import install
    dsn = make_db("session")
    install.install(dsn)
    return dsn


@pytest.fixture
def conn(db_dsn):
    with psycopg.connect(db_dsn, autocommit=True) as c:
        yield c


@pytest.fixture
def fresh_dsn(make_db):
    """A database of its own, pganon installed, for tests that change global state."""
    from pganon import install
    dsn = make_db("fresh")
    install.install(dsn)
    return dsn


@pytest.fixture
def name():
    """A unique dataset / table name for one test."""
    return f"ds_{uuid.uuid4().hex[:8]}"

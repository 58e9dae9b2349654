"""What every benchmark script shares: the methods, and a fresh database on the local server."""

from __future__ import annotations

import psycopg
from psycopg import sql

from pganon import install, server
from pganon_engine.methods.bucketization.family import METHODS as _METHODS

METHODS = list(_METHODS)   # mbf, msdcf, mmdcf, then their MSLF variants


def fresh_database(name: str) -> str:
    """Start the embedded server, (re)create database `name` with pganon installed; its DSN."""
    admin = server.start()
    dsn = psycopg.conninfo.make_conninfo(admin, dbname=name)
    with psycopg.connect(admin, autocommit=True) as c:
        c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    install.install(dsn)
    return dsn

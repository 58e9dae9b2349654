"""Where pganon connects: `--dsn`, else `$PGANON_DSN`, else the embedded local server."""

from __future__ import annotations

import os

import psycopg

from . import server
from .errors import PganonError


def resolve_dsn(dsn: str | None = None) -> str:
    if dsn:
        return dsn
    if os.environ.get("PGANON_DSN"):
        return os.environ["PGANON_DSN"]
    srv = server.default_server()
    if not server.is_running(srv):
        raise PganonError("no database given and the local server is not running",
                          hint="run `pganon server start`, or pass --dsn / set PGANON_DSN")
    return srv.dsn()


def connect(dsn: str | None = None, autocommit: bool = True) -> psycopg.Connection:
    target = resolve_dsn(dsn)
    try:
        return psycopg.connect(target, autocommit=autocommit)
    except psycopg.OperationalError as exc:
        # Never echo the DSN: it may hold a password.
        raise PganonError(f"cannot connect to the database: {str(exc).strip().splitlines()[-1]}") from exc

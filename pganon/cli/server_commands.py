"""Subcommands that set up where pganon runs: the embedded local server (`pganon server`) and
pganon in a database (`install`, `upgrade`, `uninstall`, `status`)."""

from __future__ import annotations

from .. import server
from .common import printer


def cmd_server(args):
    out = printer(args)
    if args.action == "start":
        dsn = server.start()
        out.record({"running": True, "dsn": dsn}, text=f"local server running: {dsn}")
    elif args.action == "stop":
        stopped = server.stop()
        out.record({"stopped": stopped}, text="stopped" if stopped else "not running")
    else:
        out.record(server.status())


def cmd_install(args):
    from .. import install   # Alembic and SQLAlchemy load only for the commands that need them
    printer(args).record(install.install(args.dsn))


def cmd_uninstall(args):
    from .. import install
    printer(args).record(install.uninstall(args.dsn, cascade=args.cascade))


def cmd_status(args):
    from .. import install
    printer(args).record(install.status(args.dsn))

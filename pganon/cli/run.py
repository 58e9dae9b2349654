"""Running one `pganon` command: `main`, the console entry point, parses the arguments, calls the
subcommand and turns what it raised into an exit code and one line on stderr.

Exit codes:
  0    ok
  1    a release failed its verification (`verify`, `report`, a publish whose release failed its
       own checks), or `check` found that the model does not hold
  2    user error: bad arguments, an unknown dataset, release or method, invalid --params JSON, a
       missing file, an unreachable server or a bad DSN, an error the database raised. One line
       on stderr, "pganon: error: ..." with pganon's SQLSTATE when the database gave one
       ("pganon: error: PA001: dataset ... is not registered (hint: ...)"); add --traceback to see
       where it came from
  3    refused by the dataset's policy: `promote` (or `publish --promote`, `export` of a
       superseded release) of a release whose risk breaks it, or `risk` listing a failing figure;
       the failing figures on stderr
  4    an internal error (a bug): one line; run again with --traceback and report it
  130  interrupted (Ctrl-C); the transaction in progress is rolled back
  141  stdout closed early (`pganon export 3 | head`)
Passwords are never printed: DSNs are not echoed.

Output: `--format table` (default, for people), `json` or `csv` (for programs) on every command
(pganon.output); progress and notes go to stderr whenever stdout carries json or csv.
"""

from __future__ import annotations

import os
import re
import sys

import psycopg

from ..errors import PganonError, PolicyRefused, VerificationFailed, from_db_error
from .parser import build_parser


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).strip().splitlines() if part.strip())


def _message(exc: BaseException) -> str:
    """The error as one line: pganon's or the server's SQLSTATE, the primary message, the hint."""
    if isinstance(exc, psycopg.Error):
        diag = exc.diag
        state = exc.sqlstate or diag.sqlstate
        text = diag.message_primary or (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        hint = diag.message_hint
        return _one_line(f"{state + ': ' if state else ''}{text}{f' (hint: {hint})' if hint else ''}")
    state = getattr(exc, "sqlstate", None)
    shown = f"{state}: " if state and state.startswith("PA") else ""
    return _one_line(f"{shown}{exc}")


def _check_dsn(args) -> None:
    """Refuse a malformed --dsn / $PGANON_DSN before anything parses it: libpq's own message quotes
    the string, which may hold a password, so only its shape is repeated here."""
    dsn, where = (args.dsn, "--dsn") if args.dsn else (os.environ.get("PGANON_DSN"), "$PGANON_DSN")
    if not dsn or args.command == "server":
        return
    try:
        psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        reason = re.sub(r'"([^"]*)"', lambda m: m[0] if len(m[1]) <= 1 else '"..."', _one_line(exc))
        raise PganonError(f"{where} is not a valid connection string: {reason}", sqlstate="PA002",
                          hint="write key=value pairs (host=... dbname=...) or a URI postgresql://user@host:port/db") \
            from None


def _wrapped_db_error(exc: BaseException) -> psycopg.Error | None:
    """The psycopg error inside a SQLAlchemy DBAPIError (install and uninstall run through Alembic)."""
    orig = getattr(exc, "orig", None)
    return orig if type(exc).__module__.startswith("sqlalchemy") and isinstance(orig, psycopg.Error) else None


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        try:
            _check_dsn(args)
            code = args.fn(args) or 0
            sys.stdout.flush()   # a closed pipe shows here, inside the handlers, not at exit
            return code
        except psycopg.Error as exc:   # raised by a statement the CLI ran itself: same codes
            translated = from_db_error(exc)
            if translated is None:
                raise
            raise translated from exc
    except VerificationFailed as exc:
        if args.traceback:
            raise
        print(f"pganon: verification failed: {_message(exc)}", file=sys.stderr)
        return 1
    except PolicyRefused as exc:
        if args.traceback:
            raise
        first, *detail = str(exc).splitlines()
        print(f"pganon: refused: {_message(PganonError(first, sqlstate=exc.sqlstate))}", file=sys.stderr)
        for line in detail:   # the failing figures, one per line
            print(f"  {line}", file=sys.stderr)
        return 3
    except (PganonError, psycopg.Error) as exc:
        if args.traceback:
            raise
        print(f"pganon: error: {_message(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if args.traceback:
            raise
        print("pganon: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (`| head`): nothing to say; stop Python complaining at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        if args.traceback:
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"pganon: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if args.traceback:
            raise
        inner = _wrapped_db_error(exc)
        if inner is not None:
            err = from_db_error(inner) or inner
            print(f"pganon: error: {_message(err)}", file=sys.stderr)
            return 1 if isinstance(err, VerificationFailed) else 3 if isinstance(err, PolicyRefused) else 2
        print(f"pganon: internal error: {type(exc).__name__}: {_one_line(exc)} "
              f"(a bug: run again with --traceback and report it)", file=sys.stderr)
        return 4

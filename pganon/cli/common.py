"""Helpers every group of subcommands uses: progress lines on stderr, comma-separated lists,
--params / --param parsing and the Printer of the chosen --format. Shared by dataset_commands and
release_commands, so they live apart from both."""

from __future__ import annotations

import json
import sys
import time

from ..errors import PganonError
from ..output import Printer


def progress(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def split(text) -> list[str]:
    """A comma-separated list, blanks dropped."""
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def json_value(text: str, what: str):
    try:
        return json.loads(text)
    except ValueError as exc:
        raise PganonError(f"{what} is not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})",
                          sqlstate="PA002", hint='write a JSON object, e.g. \'{"k": 5}\'') from None


def parse_params(args) -> dict:
    params = json_value(args.params, "--params") if args.params else {}
    if not isinstance(params, dict):
        raise PganonError("--params must be a JSON object", sqlstate="PA002", hint='e.g. \'{"k": 5}\'')
    for item in args.param or []:
        if "=" not in item:
            raise PganonError(f"--param {item!r} is not NAME=VALUE", sqlstate="PA002")
        k, v = item.split("=", 1)
        try:
            params[k] = json.loads(v)
        except ValueError:
            params[k] = v
    return params


def printer(args) -> Printer:
    return Printer(args.format)

"""`pganon ...`: a thin CLI. Each subcommand calls one library function and prints its result.

The package is split by job: `run` (`main`, the console entry point: exit codes and the one error
line), `parser` (every subcommand's arguments and help), `server_commands` (the local server,
install and uninstall), `dataset_commands` (declaring datasets, `check`), `release_commands`
(publish, promote, risk, verify, compare, report, export ...) and `common` (helpers the command
modules share). `pganon = "pganon.cli:main"` in pyproject.toml names the entry point here.
"""

from .run import main

__all__ = ["main"]

"""One user-error type for the admin package, carrying pganon's SQLSTATE when the database raised it.

The CLI prints a `PganonError` as one line on stderr (exit 2); everything else is a bug and keeps
its traceback. Callers and tests branch on `.sqlstate`, never on message text.
"""

from __future__ import annotations

# pganon's own SQLSTATE class "PA" (user-defined classes must not start with 0-4 or A-H... P is free).
# Keep in sync with sql/00-security/00-security.sql, which documents the same table for SQL users.
SQLSTATES = {
    "PA001": "unknown object (dataset, table, column, release)",
    "PA002": "invalid argument (role, kind, level, l, parameter)",
    "PA003": "incomplete metadata (sensitive value without a level, level without an l, no QI/SA)",
    "PA004": "bad data (NULL in a quasi-identifier or sensitive attribute, empty table)",
    "PA005": "unsatisfiable request (no release can meet the model)",
    "PA006": "a release failed its own verification",
    "PA007": "engine version mismatch: reconnect",
    "PA008": "dependent objects block the operation",
    "PA009": "refused: the release breaks the dataset's policy (promote)",
    "PA010": "refused: an object not made by pganon could capture what install or uninstall runs",
    "PA011": "busy: waited its bounded lock_timeout for another publish, promote or drop_release of the dataset, "
             "or for readers of its views (the holders are named)",
}


class PganonError(Exception):
    """A user error: bad input, missing metadata, a server that is not running."""

    def __init__(self, message: str, *, sqlstate: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.sqlstate = sqlstate
        self.hint = hint

    def __str__(self) -> str:
        msg = super().__str__()
        return f"{msg} (hint: {self.hint})" if self.hint else msg


class VerificationFailed(PganonError):
    """A release failed its independent verification; nothing was published."""


class PolicyRefused(PganonError):
    """Promote refused a release whose risk breaks the dataset's policy; nothing changed."""


def from_db_error(exc: Exception) -> PganonError | None:
    """Turn a psycopg error raised by a pganon SQL function into a PganonError, else None."""
    state = getattr(exc, "sqlstate", None)
    if not state or not state.startswith("PA"):
        return None
    diag = getattr(exc, "diag", None)
    message = (diag.message_primary if diag else None) or str(exc).splitlines()[0]
    hint = diag.message_hint if diag else None
    detail = diag.message_detail if diag else None
    if state == "PA009" and detail:
        message = f"{message}\n{detail}"
    cls = {"PA006": VerificationFailed, "PA009": PolicyRefused}.get(state, PganonError)
    return cls(message, sqlstate=state, hint=hint)

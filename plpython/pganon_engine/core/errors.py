"""The engine's one error type. Wrappers turn it into `plpy.error(..., sqlstate=, hint=)`, so a
caller sees pganon's SQLSTATE (class PA, see sql/00-security/00-security.sql) and a hint naming
the fix."""


class EngineError(Exception):
    def __init__(self, message, sqlstate="PA002", hint=None, detail=None):
        super().__init__(message)
        self.sqlstate = sqlstate
        self.hint = hint
        self.detail = detail


def unknown(message, hint=None):
    return EngineError(message, "PA001", hint)


def invalid(message, hint=None):
    return EngineError(message, "PA002", hint)


def incomplete(message, hint=None, detail=None):
    return EngineError(message, "PA003", hint, detail)


def bad_data(message, hint=None, detail=None):
    return EngineError(message, "PA004", hint, detail)


def unsatisfiable(message, hint=None, detail=None):
    return EngineError(message, "PA005", hint, detail)

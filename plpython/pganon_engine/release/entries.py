"""The engine entry points reachable through `pganon._engine(entry, arguments jsonb)`.

Every entry that touches a dataset runs with its owner's rights (`roles`).

Each entry takes the database handle and keyword arguments from the jsonb object and returns
something JSON can carry; one SQL wrapper per public function names its entry here, so adding a
function never needs another PL/Python wrapper or error-translating PL/pgSQL block.
"""

import json

from pganon_engine.core.errors import invalid


def _hierarchy(name):
    def run(db, **kw):
        from pganon_engine.hierarchy import store as hierarchy_store

        from . import roles
        roles.act_for_dataset(db, kw["dataset"])
        return getattr(hierarchy_store, name)(db, **kw)
    return run


def _check(db, **kw):
    from pganon_engine.models import check
    return check.check_relation(db, **kw)


def _publish(db, **kw):
    from . import pipeline as release, roles
    roles.act_for_dataset(db, kw["dataset"])
    roles.check_source(db, kw["dataset"])
    return release.publish(db, **kw)


def _promote(db, **kw):
    from . import lifecycle, roles
    roles.act_for_release(db, kw["release_id"])
    return lifecycle.promote(db, **kw)


def _assess(db, release):
    from pganon_engine.risk import assess as risk

    from . import roles
    roles.act_for_release(db, release)
    risk.assess(db, release)
    return release


def _policy(db, policy):
    from . import lifecycle
    return lifecycle.validate_policy(policy)


def _compare(db, **kw):
    from pganon_engine.metrics import comparison

    from . import roles
    if isinstance(kw.get("releases"), list):
        roles.act_for_releases(db, [int(r) for r in kw["releases"]])
    return comparison.compare(db, **kw)


def _query_error(db, **kw):
    from pganon_engine.metrics import utility

    from . import roles
    roles.act_for_release(db, kw["release"])
    return utility.release_query_error(db, **kw)


def _audit(db, **kw):
    from pganon_engine.models import audit

    from . import roles
    roles.act_for_release(db, kw["release"])
    return audit.audit_release(db, **kw)


ENTRIES = {
    "publish": _publish,
    "promote": _promote,
    "assess": _assess,
    "validate_policy": _policy,
    "audit": _audit,
    "compare": _compare,
    "query_error": _query_error,
    "set_hierarchy": _hierarchy("set_from_csv"),
    "build_hierarchy": _hierarchy("build"),
    "hierarchy_csv": _hierarchy("to_csv"),
    "check": _check,
}


def run(db, entry, arguments):
    fn = ENTRIES.get(entry)
    if fn is None:
        raise invalid(f"unknown engine entry {entry!r}")
    kwargs = json.loads(arguments) if isinstance(arguments, str) else (arguments or {})
    from pganon_engine.core.interrupts import ticking
    with ticking(db.interruptible()):   # every entry's long loops let a cancel through
        return json.dumps(fn(db, **kwargs))

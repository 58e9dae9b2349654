"""Publish parameters every method family reads the same way: typed scalars and the choice of
sensitive attributes (`d` = the first d declared, or `sensitive` = a list of names)."""

from .errors import invalid


def boolean(params, name, default=False):
    v = params.get(name, default)
    if not isinstance(v, bool):
        raise invalid(f"parameter {name} must be true or false, not {v!r}")
    return v


def integer(params, name, minimum, default=None):
    v = params.get(name, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise invalid(f"parameter {name} must be an integer >= {minimum}, not {v!r}")
    return v


def fraction(params, name, default):
    """A number in (0, 1]."""
    v = params.get(name, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise invalid(f"parameter {name} must be a number in (0, 1], not {v!r}")
    return float(v)


def workload(params):
    """The query-error workload of a release (spec 004 §4.2): selectivity theta, number of
    queries (0: none), and its seed (the release's seed, else 0)."""
    return {"theta": fraction(params, "theta", 0.1), "queries": integer(params, "queries", 0, default=1000),
            "seed": integer(params, "seed", 0, default=0)}


WORKLOAD_PARAMS = {"theta", "queries"}


def choice(params, name, options, default):
    v = params.get(name, default)
    if v not in options:
        raise invalid(f"parameter {name} must be one of {', '.join(map(repr, options))}, not {v!r}")
    return v


def unknown_params(method, params, allowed):
    extra = sorted(set(params) - set(allowed))
    if extra:
        raise invalid(f"unknown parameter(s) {extra} for method {method}",
                      hint=f"parameters of {method}: {sorted(allowed)}")


def sensitive_columns(params, ds):
    """The SAs a release protects, in declared order unless `sensitive` lists them."""
    sas = [a["column"] for a in ds.columns("sensitive")]
    if "sensitive" in params and "d" in params:
        raise invalid("give either d or sensitive, not both")
    if "sensitive" in params:
        chosen = params["sensitive"]
        if not isinstance(chosen, list) or not chosen or not all(isinstance(c, str) for c in chosen):
            raise invalid("parameter sensitive must be a non-empty list of column names")
        bad = [c for c in chosen if c not in sas]
        if bad:
            raise invalid(f"{bad} are not sensitive attributes of dataset {ds.name}",
                          hint=f"its sensitive attributes are {sas}")
        return chosen
    if "d" in params:
        d = integer(params, "d", 1)
        if d > len(sas):
            raise invalid(f"d = {d} but dataset {ds.name} declares only {len(sas)} sensitive attributes")
        return sas[:d]
    return sas


def quasi_columns(ds):
    """The declared QIs, each with a kind (checked here so methods never see a missing kind)."""
    from .errors import incomplete
    qis = ds.columns("quasi")
    if not qis:
        raise incomplete(f"dataset {ds.name} has no quasi-identifier",
                         hint="declare one with pganon.set_attribute(dataset, column, 'quasi', kind)")
    for q in qis:
        if q["kind"] is None:
            raise incomplete(f'quasi-identifier "{q["column"]}" has no kind',
                             hint="set it with pganon.set_attribute(dataset, column, 'quasi', kind)")
    return qis

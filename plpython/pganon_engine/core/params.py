"""Publish parameters every method family reads the same way: typed scalars and the choice of
sensitive attributes (`d` = the first d declared, or `sensitive` = a list of names)."""

from .errors import invalid

# An error message quotes at most SHOWN_VALUES user values, each cut to SHOWN_WIDTH characters: a
# sensitive value can be megabytes, and a message goes to the client and the server log whole.
SHOWN_VALUES, SHOWN_WIDTH = 5, 40


def shown(value, width=SHOWN_WIDTH, quote=True):
    """One value for an error message: its repr (its text with quote=False), cut to `width`
    characters with an ellipsis and its length when longer."""
    text = repr(value) if quote else str(value)
    if len(text) <= width + (2 if quote else 0):
        return text
    return f"{text[:width]}... ({len(value) if isinstance(value, str) else len(text)} characters)"


def shown_values(values, total=None, limit=SHOWN_VALUES):
    """A few values for an error message (`shown` each) and how many more there are; `total` is
    the count when `values` holds only the first few."""
    values = list(values)
    total = len(values) if total is None else total
    listed = ", ".join(shown(v) for v in values[:limit])
    rest = total - min(len(values), limit)
    return listed + (f" and {rest} more" if rest > 0 else "")


def boolean(params, name, default=False):
    v = params.get(name, default)
    if not isinstance(v, bool):
        raise invalid(f"parameter {name} must be true or false, not {shown(v)}")
    return v


def integer(params, name, minimum, default=None):
    v = params.get(name, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
        raise invalid(f"parameter {name} must be an integer >= {minimum}, not {shown(v)}")
    return v


def fraction(params, name, default):
    """A number in (0, 1]."""
    v = params.get(name, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
        raise invalid(f"parameter {name} must be a number in (0, 1], not {shown(v)}")
    return float(v)


def workload(params):
    """The query-error workload of a release (spec 004 §4.2): selectivity theta, number of
    queries (0, the default: none), and its seed (the release's seed, else 0).  Off unless asked
    for (issue 15): 1,000 queries were most of a publish; `pganon.query_error` measures a release
    on demand with the same queries."""
    return {"theta": fraction(params, "theta", 0.1), "queries": integer(params, "queries", 0, default=0),
            "seed": integer(params, "seed", 0, default=0)}


WORKLOAD_PARAMS = {"theta", "queries"}


def choice(params, name, options, default):
    v = params.get(name, default)
    if v not in options:
        raise invalid(f"parameter {name} must be one of {', '.join(map(repr, options))}, not {shown(v)}")
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


# Work tables and aliases pganon builds next to a dataset's own columns are all named _pganon...:
# no declared column may start so (pganon.set_attribute refuses it too), so none can collide.
INTERNAL_PREFIX = "_pganon"


def refuse_reserved(method, ds, published, reserved, key_reserved):
    """Refuse (PA002), before any work, a column that would collide with a release's own columns:
    a QI or SA (`published`: columns of the GT/ST) named like a column of the family's release
    format (`reserved`); the key, person or an identifier column named like any column of the
    published relations or the map (`key_reserved`: the map holds the key next to its own
    columns, and the verifier's no_identifiers check reads names); a column named with pganon's
    work prefix."""
    def hint(c):
        return (f'rename it, or register a view that renames it (CREATE VIEW v AS SELECT ..., "{c}" AS other_name '
                "FROM ...; SELECT pganon.register_dataset(dataset, 'v', key))")
    unpublished = [(ds.key, "key column")] + ([(ds.person, "person column")] if ds.person else []) + [
        (a["column"], "identifier column") for a in ds.columns("identifier")]
    for c in list(published) + [c for c, _ in unpublished]:
        if c.startswith(INTERNAL_PREFIX):
            raise invalid(f'column "{c}" of dataset {ds.name} starts with "{INTERNAL_PREFIX}", which pganon reserves '
                          "for its work columns", hint=hint(c))
    for c in published:
        if c in reserved:
            raise invalid(f'column "{c}" of dataset {ds.name} has the name of a column of the {method} release '
                          f"format (reserved for quasi-identifiers and sensitive attributes: "
                          f"{', '.join(sorted(reserved))})", hint=hint(c))
    for c, what in unpublished:
        if c in key_reserved:
            raise invalid(f'the {what} "{c}" of dataset {ds.name} has the name of a column of the {method} release '
                          f"or its map (reserved for the key, person and identifier columns: "
                          f"{', '.join(sorted(key_reserved))})", hint=hint(c))

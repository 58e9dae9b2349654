"""`pganon.check(relation, qis, sas, model, params)`: the privacy models of `models` assessed on
any table or view, raw or published, from GROUP BY aggregates.

The database groups (QIs -> class sizes; QIs x SA value -> counts; for the joint scope QIs + the
other SAs x SA value -> counts) and this module hands the counts to `models.check`, so the
engine holds one count per (class, value), never a row.  A QI cell of any type (ranges, arrays,
hierarchy labels) groups by equality; a class key is the row of QI cells as text.

The identity-reserved models of spec 002 (IR_MODELS) count persons, not rows: params name the
person column ({"person": "id_num", "l": 3}), the database groups per (class, person) with the
person's SA values, and `ir_models.check` - the decision functions DAnonyIR uses, one source of
truth - gives the achieved value, whether the thresholds hold and, when the model's family
thresholds are known (l; alpha and beta), the vulnerable-class share v (IR holds, EIR fails).
Memory: one SA value per row (a person's values are needed for the EIR l hitting sets).
"""

from pganon_engine.core.errors import bad_data, incomplete, invalid, unknown
from pganon_engine.core.interrupts import ticking

from . import ir_models, predicates as models
from .aggregates import from_groups

ALL = "all"  # model name that checks every model (with the thresholds given for each)
# pganon.check / verifier names -> ir_models names (I1)
IR_MODELS = {"ir_kl_anonymity": "kl", "eir_l_diversity": "el", "ir_alpha_beta": "ab", "eir_alpha_beta": "eab"}


def _relation(db, relation):
    row = db.one("SELECT c.oid::regclass::text AS name FROM pg_catalog.pg_class c WHERE c.oid = $1",
                 [int(relation)], ["oid"])
    if row is None:
        raise unknown(f"relation {relation} does not exist")
    return row["name"]


def _columns(db, relation, name, qis, sas):
    have = {r["a"] for r in db.rows("SELECT attname::text AS a FROM pg_catalog.pg_attribute WHERE attrelid = $1 "
                                    "AND attnum > 0 AND NOT attisdropped", [int(relation)], ["oid"])}
    gone = [c for c in list(qis) + list(sas) if c not in have]
    if gone:
        raise unknown(f"{name} has no column(s) {gone}", hint=f"its columns: {sorted(have)}")
    both = set(qis) & set(sas)
    if both:
        raise bad_data(f"column(s) {sorted(both)} are listed as QI and as SA", hint="give each column one role")


def _key(db, cols):
    if not cols:
        return "''"
    return "ROW(" + ", ".join(db.ident(c) for c in cols) + ")::text"


def _keyed(db, name, by, sa):
    """{class key: (size, {sa: {value: count}})} grouped by the columns `by`; sa None: sizes only."""
    key = _key(db, by)
    if sa is None:
        return {r["g"]: (int(r["n"]), {}) for r in db.rows(f"SELECT {key} AS g, count(*) AS n FROM {name} GROUP BY 1")}
    s = db.ident(sa)
    nulls = db.one(f"SELECT count(*) AS n FROM {name} WHERE {s} IS NULL")["n"]
    if nulls:
        raise bad_data(f'sensitive column "{sa}" of {name} has {nulls} NULL value(s)',
                       hint="filter them in a view, or fill them, before checking")
    out = {}
    for r in db.rows(f"SELECT {key} AS g, {s} AS v, count(*) AS n FROM {name} GROUP BY 1, 2"):
        c = out.setdefault(r["g"], [0, {}])
        c[0] += int(r["n"])
        c[1][r["v"]] = int(r["n"])
    return {g: (n, {sa: h}) for g, (n, h) in out.items()}


def aggregates(db, name, qis, sas, joint):
    """The `Aggregates` of a relation; the joint scope's groupings only when asked."""
    if not sas:
        return from_groups([], _keyed(db, name, qis, None).values())
    per_sa = {s: _keyed(db, name, qis, s) for s in sas}
    first = per_sa[sas[0]]
    classes = [(first[g][0], {s: per_sa[s][g][1][s] for s in sas}) for g in first]
    jt = None
    if joint and len(sas) > 1:
        jt = {s: list(_keyed(db, name, list(qis) + [o for o in sas if o != s], s).values()) for s in sas}
    return from_groups(sas, classes, joint=jt)


def check_relation(db, relation, qis, sas, model, params=None):
    """The achieved value of `model` (or of every model with model 'all') and whether the
    thresholds in params hold; params of model 'all' map a model name to its params."""
    name = _relation(db, relation)
    qis, sas = list(qis or []), list(sas or [])
    _columns(db, relation, name, qis, sas)
    params = params or {}
    if model in IR_MODELS:
        return check_persons(db, relation, name, qis, sas, model, params)
    # 'all': every row-level model, and the identity-reserved ones whose params are given
    wanted = list(models.MODELS) + [m for m in IR_MODELS if m in params] if model == ALL else [model]
    for m in wanted:
        if m not in IR_MODELS:
            models._model(m)  # unknown names fail before any work
    each = params if model == ALL else {model: params}
    rows = [m for m in wanted if m not in IR_MODELS]
    joint = any((each.get(m) or {}).get("scope") == "joint" for m in rows)
    agg = aggregates(db, name, qis, sas, joint)
    out = {}
    for m in wanted:
        if m != "k_anonymity" and not sas:
            continue
        if m in IR_MODELS:
            out[m] = check_persons(db, relation, name, qis, sas, m, each.get(m) or {})
        else:
            out[m] = models.check(m, each.get(m) or {}, agg).as_json()
    return out if model == ALL else out[model]


def check_persons(db, relation, name, qis, sas, model, params):
    """An identity-reserved model (IR_MODELS) on a relation whose rows are records of persons:
    classes by the QIs, persons by params['person'], one SA."""
    params = dict(params or {})
    person = params.pop("person", None)
    if not isinstance(person, str) or not person:
        raise incomplete(f"{model} counts persons and needs the person column in params",
                         hint='e.g. {"person": "id_num", "l": 3} for a published GT')
    if len(sas) != 1:
        raise invalid(f"{model} assesses one sensitive attribute, not {len(sas)} ({sas})",
                      hint="give one SA column; check the others one at a time")
    _columns(db, relation, name, [person], [])
    if person in qis or person in sas:
        raise bad_data(f'the person column "{person}" is also listed as QI or SA', hint="give each column one role")
    ir = IR_MODELS[model]
    p = ir_models.parse_params(ir, params, required=False)
    I = db.ident
    s, per = I(sas[0]), I(person)
    nulls = db.one(f"SELECT count(*) FILTER (WHERE {s} IS NULL) AS s, count(*) FILTER (WHERE {per} IS NULL) AS p "
                   f"FROM {name}")
    for col, n in ((sas[0], nulls["s"]), (person, nulls["p"])):
        if n:
            raise bad_data(f'column "{col}" of {name} has {n} NULL value(s)',
                           hint="filter them in a view, or fill them, before checking")
    rows = db.rows(f"SELECT {_key(db, qis)} AS g, {per}::text AS p, array_agg({s}::text) AS v FROM {name} GROUP BY 1, 2")
    if not rows:
        raise bad_data(f"{name} has no rows to check", hint="check a relation with rows")
    with ticking(db.interruptible()):  # an exact min-HS of a huge class can take long
        res = ir_models.check(ir, p, ir_models.classes_from_persons((r["g"], r["p"], r["v"]) for r in rows))
    j = res.as_json()
    value = j["value"]
    out = {"model": model, "scope": "person", "person": person, "value": value, "per_sa": {sas[0]: value},
           "holds": j["holds"], "params": j["params"], "classes": j["classes"], "failing_classes": j["failing"],
           "split_persons": j["split_persons"]}
    if "vulnerable" in j:
        out["vulnerable"] = j["vulnerable"]
    return out

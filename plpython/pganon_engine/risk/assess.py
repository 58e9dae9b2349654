"""Risk of a release from the analyst's seat (issue 11; DESIGN.md step 7, "assess risk").

What an analyst can learn is measured from what the reader role would read: the release's
published relations (GT, ST, ST long, Rating's AT and IDT) and its stated promise (method,
parameters, the declared security levels and hierarchies). Never the source, never the
row-to-group map: a figure computed from those would measure what the DBA knows, not what the
analyst can learn. Every figure is one row (measure, scope, value, promise, policy_key, detail),
stored in pganon.release_risk; `pganon.risk(release)` adds the threshold (the dataset's policy
for that key, else the promise) and whether it passes; `pganon.promote` refuses a release with a
failing row.

Measures (direction: published_share must be at least its threshold, every other at most):
  published_share            published rows / source rows
  records_per_class_min, persons_per_class_min, group_size_min   informational
  prosecutor_risk_max        1 / (records or persons in the class of published QI vectors);
                             promise 1/k where the method promises k, none where it publishes
                             exact QIs (finding a target's row is then expected: the promise is
                             about attribute disclosure)
  prosecutor_risk_mean, sample_unique   informational
  records_below_k            share of records in classes below the promised k (promise 0)
  baseline_confidence        per SA: the attacker's best guess with no release (informational)
  attacker_confidence_max    per SA (per security level for L_sl): the highest share one value
                             holds in what the attacker narrows a record down to (a group, a
                             class, a bucket); promise 1/l of the level, 1/l, 1/SC, alpha ...
  attacker_confidence_mean   per SA: the mean confidence in each record's true value (informational)
  order                      per published relation: share of rows out of content order (promise 0)
  numbering                  per published identifier: rank correlation with any other published
                             number (promise: 4 / sqrt(n - 1), what chance gives)
  chain_attack               Rating, per attribute: share of tuples the chain attack pins
                             (promise: 1/SC or what chance gives, whichever is higher)
  linkage, composed_prosecutor_risk   against earlier promoted releases (`linkage.py`)
"""

import json
import math

from pganon_engine.core import catalog, coltypes, numbering
from pganon_engine.metrics import reconstruct

from . import linkage

POLICY_KEYS = ("published_share", "prosecutor_risk_max", "records_below_k", "attacker_confidence_max",
               "order", "numbering", "chain_attack", "linkage", "composed_prosecutor_risk")
DEFAULT_PUBLISHED_SHARE = 0.5
CHANCE_Z = 4.0     # |rank correlation| * sqrt(n - 1) beyond this is not chance (p < 1e-4)


class Rows:
    """The risk rows of one release, in order."""

    def __init__(self):
        self.rows = []

    def add(self, measure, scope, value, detail, promise=None, policy=True):
        self.rows.append({"measure": measure, "scope": scope,
                          "value": None if value is None else float(value),
                          "promise": None if promise is None else float(promise),
                          "policy_key": measure if policy else None, "detail": detail})

    def info(self, measure, scope, value, detail):
        self.add(measure, scope, value, detail, policy=False)


def assess(db, release_id):
    """Measure a release and store its risk rows (replacing earlier ones); returns the rows."""
    info = reconstruct.release_row(db, release_id)
    ds = catalog.load(db, info["dataset"])
    out = Rows()
    publication(info, out)
    identity(db, info, out)
    attribute(db, ds, info, out)
    structural(db, info, out)
    linkage.against_promoted(db, info, out)
    store(db, release_id, out.rows)
    return out.rows


def store(db, release_id, rows, measures=None):
    """Replace the release's stored rows (only those of `measures` when given)."""
    if measures is None:
        db.run("DELETE FROM pganon.release_risk WHERE release_id = $1", [release_id], ["int8"])
        start = 0
    else:
        db.run("DELETE FROM pganon.release_risk WHERE release_id = $1 AND measure = ANY($2)",
               [release_id, list(measures)], ["int8", "text[]"])
        start = db.one("SELECT coalesce(max(ord), -1) + 1 AS n FROM pganon.release_risk WHERE release_id = $1",
                       [release_id], ["int8"])["n"]
    numbered = [dict(r, ord=start + i) for i, r in enumerate(rows)]
    db.run("INSERT INTO pganon.release_risk (release_id, ord, measure, scope, value, promise, policy_key, detail) "
           "SELECT $1, x.ord, x.measure, x.scope, x.value, x.promise, x.policy_key, x.detail "
           "FROM jsonb_to_recordset($2::jsonb) AS x(ord int, measure text, scope text, value float8, "
           "promise float8, policy_key text, detail text)", [release_id, json.dumps(numbered)], ["int8", "text"])


# --- what a release promises ------------------------------------------------------------------

def promised_k(lay):
    """The size a release promises for its classes of published QI vectors, or None. A 1:M
    release's k is about sensitive sets (`_fingerprints`); each of its QI classes holds at
    least l distinct generalized sets, hence l persons."""
    if lay.get("method") == "one_m_generalization":
        return int(lay["l"]) if lay.get("l") else None
    if lay["family"] in ("generalized", "linked", "person") and lay.get("k"):
        return int(lay["k"])
    return None


def exact_qis(lay):
    """Whether the release publishes the QIs exactly (bucketization without generalize, Rating)."""
    return lay["family"] == "rating" or (lay["family"] == "bucketization" and not lay.get("generalized"))


def publication(info, out):
    n, pub = int(info["source_rows"]), int(info["published_rows"])
    share = pub / n if n else 0.0
    out.add("published_share", "release", share, f"{pub} of {n} source rows published",
            promise=DEFAULT_PUBLISHED_SHARE)


# --- identity disclosure ----------------------------------------------------------------------

def _qi_columns(lay):
    return [q["column"] for q in lay["qis"]]


def identity(db, info, out):
    lay = info["layout"]
    I, rels = db.ident, lay["relations"]
    gt, qcols = rels["gt"], _qi_columns(lay)
    persons_visible = lay["family"] == "person"
    person_rows = lay.get("gt_rows") == "person"
    pcount = "count(DISTINCT id_num)" if persons_visible else "NULL::bigint"
    group = ", ".join(map(I, qcols)) if qcols else "()"
    k, exact = promised_k(lay), exact_qis(lay)
    # records (persons when published) in classes below k, from the same grouping
    who = "p" if persons_visible else "n"
    below = f"coalesce(sum({who}) FILTER (WHERE {who} < {int(k)}), 0)" if k else "NULL::numeric"
    r = db.one(f"SELECT count(*) AS classes, coalesce(sum(n), 0) AS records, min(n) AS nmin, "
               f"coalesce(sum(n) FILTER (WHERE n = 1), 0) AS uniq, min(p) AS pmin, coalesce(sum(p), 0) AS persons, "
               f"{below} AS below FROM (SELECT count(*) AS n, {pcount} AS p FROM {gt} GROUP BY {group}) c")
    classes, records = int(r["classes"]), int(r["records"])
    what = "records" if not person_rows else "persons"
    if not records:
        out.info("records_per_class_min", "records", 0, "nothing is published")
        return
    out.info("records_per_class_min", what, r["nmin"],
             f"{classes} classes of published QI vectors over {records} {what}, "
             f"mean {records / classes:.2f} per class")
    if persons_visible and not person_rows:
        out.info("persons_per_class_min", "persons", r["pmin"],
                 f"{classes} classes over {int(r['persons'])} persons (person numbers are published)")
    if lay["family"] in ("bucketization", "linked"):
        grp = lay.get("gt_group", "group_id")
        g = db.one(f"SELECT min(n) AS n, count(*) AS g FROM (SELECT count(*) AS n FROM {gt} GROUP BY {I(grp)}) x")
        out.info("group_size_min", "records", g["n"], f"{g['g']} groups; the smallest holds {g['n']} records")
    scope, nmin, total = ("persons", r["pmin"], int(r["persons"])) if persons_visible else (what, r["nmin"], records)
    note = ""
    if exact:
        note = ("; exact quasi-identifiers are published, so finding a target's row is expected: "
                "this method's promise is about attribute disclosure")
    elif lay.get("person") and not persons_visible:
        note = (f"; persons are not published: the release promises k = {k} persons per class, which "
                f"pganon.verify checks against the source")
    out.add("prosecutor_risk_max", scope, 1.0 / nmin,
            f"the smallest class holds {nmin} {scope}{note}", promise=(1.0 / k) if k else None)
    out.info("prosecutor_risk_mean", scope, classes / total, f"{classes} classes over {total} {scope}")
    out.info("sample_unique", what, int(r["uniq"]) / records,
             f"{int(r['uniq'])} {what} hold a published QI vector of their own")
    if k:
        below = r["below"]
        out.add("records_below_k", scope, int(below) / total,
                f"{int(below)} of {total} {scope} in classes below k = {k}", promise=0.0)
    if lay.get("method") == "one_m_generalization":
        _fingerprints(db, lay, out)


def _fingerprints(db, lay, out):
    """1:M: an attacker who knows a target's set of sensitive values finds the persons whose
    published generalized set covers it; every such set is shared by at least k persons."""
    gt, sa = lay["relations"]["gt"], db.ident(lay["sas"][0])
    r = db.one(f"SELECT min(n) AS n, count(*) AS sets FROM (SELECT count(DISTINCT id_num) AS n FROM {gt} "
               f"GROUP BY {sa}) x")
    if r["n"]:
        out.add("prosecutor_risk_max", "persons by sensitive set", 1.0 / r["n"],
                f"{r['sets']} published sensitive sets; the rarest is shared by {r['n']} persons",
                promise=1.0 / int(lay["k"]))


# --- attribute disclosure ---------------------------------------------------------------------

def attribute(db, ds, info, out):
    lay = info["layout"]
    fam = lay["family"]
    if fam == "bucketization":
        _attribute_bucketization(db, ds, lay, out)
    elif fam == "rating":
        _attribute_rating(db, lay, out)
    elif fam == "linked":
        _attribute_linked(db, lay, out)
    else:
        _attribute_record_gt(db, lay, out)


def _promise_bucketization(ds, lay):
    """{level or None: promised max confidence} for the values of one SA. Anatomy promises
    nothing per SA (two rows of a group may share a value): its promise is on the vector."""
    if lay.get("model") == "anatomy":
        return {None: None}
    if lay.get("model") == "lsl":   # min_group bounds the vector, not the values (`_vector_bucketization`)
        level_l = {int(k): v for k, v in (lay.get("level_l") or {}).items()} or dict(ds.level_l)
        return {lv: 1.0 / l for lv, l in level_l.items()}
    return {None: 1.0 / int(lay["l"])} if lay.get("l") else {None: None}


SIZES = "pg_temp._pganon_risk_sizes"
ROWS_N = "pg_temp._pganon_risk_rows"
JOINT = "pg_temp._pganon_risk_joint"


def _temp(db, name, query):
    """A temp table of the assessment (dropped at commit; replaced if an earlier one is left)."""
    if db.one("SELECT pg_catalog.to_regclass($1) IS NOT NULL AS e", [name], ["text"])["e"]:
        db.run(f"DROP TABLE {name}")
    db.run(f"CREATE TEMP TABLE {name.split('.', 1)[1]} ON COMMIT DROP AS {query}")
    db.run(f"ANALYZE {name}")
    return name


def _class_sizes(db, query):
    """The classes' sizes (cls, n) once per release, for every attribute's figures."""
    return _temp(db, SIZES, query)


def _value_shares(db, values, sizes, level=None, sized=False):
    """What a class (a group, a class of QI vectors, a Rating group) tells about one attribute.
    `values` selects (cls, v, c): how many records (or persons) of class cls hold value v, and
    with `sized` the class size n too (else joined from `sizes`); `sizes` is a relation or
    subquery (cls, n) of the class sizes (not always the sum of c: a person holding several
    values counts once). Returns the rows per security level (`level`, an expression of x.v,
    gives a value's level) with the largest share mx, the sum s of c * c / n and the count cnt,
    and the baseline with no release: the most common value's share and the mean confidence.
    One statement, aggregated per value before the levels are looked up (once per distinct
    value): the (cls, v) rows are read once and never materialized."""
    if sized:   # a class with a size is one with an id (`_attribute_bucketization`)
        src, n, hit = f"({values}) a", "a.n", "a.cls IS NOT NULL"
    else:
        src, n, hit = f"({values}) a LEFT JOIN {sizes} g ON g.cls = a.cls", "g.n", "g.cls IS NOT NULL"
    lv = (f"LEFT JOIN (SELECT x.v, {level} AS level FROM (SELECT DISTINCT v FROM r) x) lv ON lv.v = r.v"
          if level else "")
    # per value: t counts every row (the baseline), mx, s and cnt only rows of a sized class
    rows = db.rows(f"WITH r AS (SELECT a.v, sum(a.c) AS t, max(a.c / {n}) AS mx, sum(a.c * a.c / {n}) AS s, "
                   f"       sum(a.c) FILTER (WHERE {hit}) AS cnt, count(*) FILTER (WHERE {hit}) AS j "
                   f"  FROM {src} GROUP BY 1), "
                   f"total AS (SELECT sum(n) AS n FROM {sizes} g), "
                   f"b AS (SELECT max(t) / (SELECT n FROM total) AS bmx, "
                   f"             sum(t * t) / ((SELECT n FROM total) * sum(t)) AS bs FROM r) "
                   f"SELECT {'lv.level' if level else 'NULL::int'} AS level, max(r.mx) AS mx, sum(r.s) AS s, "
                   f"       sum(r.cnt) AS cnt, (SELECT bmx FROM b) AS bmx, (SELECT bs FROM b) AS bs "
                   f"FROM r {lv} WHERE r.j > 0 GROUP BY 1 ORDER BY 1")
    return rows, ((rows[0]["bmx"], rows[0]["bs"]) if rows else (None, None))


def _confidence_rows(out, sa, rows, baseline, promise, unit="records"):
    """rows: [{level, mx, s, cnt}] -> attacker_confidence_max per level, the mean over all."""
    total = sum(float(r["cnt"]) for r in rows)
    if not total:
        return
    out.info("baseline_confidence", sa, baseline[0],
             f"with no release an attacker guesses the most common value: {baseline[0]:.4f} "
             f"(mean confidence in the true value {baseline[1]:.4f})")
    for r in rows:
        lv = r.get("level")
        pr = promise.get(lv) if lv in promise else promise.get(None)
        scope = sa if lv is None else f"{sa} level {lv}"
        note = ""
        if pr is not None and pr >= 1.0 and lv is not None:
            note = f"; level {lv} has l = 1: its values may reach confidence 1.0 by declaration"
        out.add("attacker_confidence_max", scope, r["mx"],
                f"the most a value holds of what a record is narrowed down to, over {int(r['cnt'])} {unit}{note}",
                promise=pr)
    mean = sum(float(r["s"]) for r in rows) / total
    out.info("attacker_confidence_mean", sa, mean,
             f"mean confidence in a record's true value (no release: {baseline[1]:.4f})")


def _attribute_bucketization(db, ds, lay, out):
    I, st = db.ident, lay["relations"]["st"]
    promise = _promise_bucketization(ds, lay)
    lsl = lay.get("model") == "lsl"
    sizes = _class_sizes(db, f"SELECT group_id AS cls, sum(count)::float8 AS n FROM {st} GROUP BY 1")
    # the ST's rows with their group's size, once: every SA's (group, value) counts then carry n
    # instead of joining the sizes again (a million rows: a join per SA cost more than this copy)
    cols = ", ".join(f"s.{I(sa)}" for sa in lay["sas"])
    rows_n = _temp(db, ROWS_N, f"SELECT s.group_id, s.count, {cols}, g.n AS _pganon_n "
                               f"FROM {st} s LEFT JOIN {sizes} g ON g.cls = s.group_id")
    for sa in lay["sas"]:
        # the effective level (pganon._effective_level), once per distinct value
        level = f"pganon._effective_level({int(ds.id)}, {db.literal(sa)}, x.v)" if lsl else None
        values = (f"SELECT cls, x::text AS v, c, n FROM (SELECT group_id AS cls, _pganon_n AS n, {I(sa)} AS x, "
                  f"sum(count)::float8 AS c FROM {rows_n} GROUP BY 1, 2, 3) a")
        rows, base = _value_shares(db, values, sizes, level=level, sized=True)
        _confidence_rows(out, sa, rows, base, promise)
    _vector_bucketization(db, lay, rows_n, out)


def _vector_bucketization(db, lay, rows_n, out):
    """The whole sensitive vector: the ST keeps a record's SA values together, so a target found
    by its QIs is narrowed to its group's vectors. Anatomy promises 1/l on the vector; L_sl and
    the baselines with min_group m >= 2 promise 1/m (no group publishes one person's vector).
    `rows_n` is the ST's rows with their group's size _pganon_n (the sum of its vectors' c)."""
    sas = ", ".join(db.ident(s) for s in lay["sas"])
    # vectors grouped by a 64-bit hash of the row: a collision only merges two vectors, which can
    # only raise the figure
    r = db.one(f"SELECT max(c / n) AS mx, sum(c * c / n) / sum(c) AS mean, count(*) FILTER (WHERE c = n) AS whole "
               f"FROM (SELECT _pganon_n AS n, sum(count)::float8 AS c FROM {rows_n} WHERE group_id IS NOT NULL "
               f"      GROUP BY group_id, _pganon_n, hash_record_extended(ROW({sas}), 0)) v")
    if r["mx"] is None:
        return
    if lay.get("model") == "anatomy":
        promise = 1.0 / int(lay["l"])
    elif int(lay.get("min_group") or 1) >= 2:
        promise = 1.0 / int(lay["min_group"])
    else:
        promise = None
    out.add("attacker_confidence_max", "sensitive vector", r["mx"],
            f"{int(r['whole'])} group(s) publish a single sensitive vector; mean confidence in a record's "
            f"true vector {r['mean']:.4f}", promise=promise)


def _attribute_record_gt(db, lay, out):
    """generalized and person families: the class of published QI vectors and its exact SA
    values (persons counted once per value when person numbers are published; a 1:M release's
    generalized SA set counts each of its values)."""
    I, gt = db.ident, lay["relations"]["gt"]
    qcols = _qi_columns(lay)
    # a class is a published QI vector, keyed by a 64-bit hash of it (two classes merged by a
    # collision, about 1e-8 at a million classes, would only blur one figure)
    cls = f"hash_record_extended(ROW({', '.join(map(I, qcols))}), 0)" if qcols else "0::int8"
    persons = lay["family"] == "person"
    who = "count(DISTINCT id_num)" if persons else "count(*)"
    promise = _promise_record_gt(lay)
    if not persons and lay.get("gt_rows") != "person" and lay["sas"]:
        # one pass over the GT: its rows counted by (class, every SA); each SA's (class, value)
        # counts and the class sizes then come from this (far smaller) table
        sas = list(lay["sas"])
        cols = ", ".join(f"{I(sa)} AS s{i}" for i, sa in enumerate(sas))
        joint = _temp(db, JOINT, f"SELECT {cls} AS _pganon_cls, {cols}, count(*)::float8 AS _pganon_c FROM {gt} "
                                 f"GROUP BY {', '.join(str(i + 1) for i in range(len(sas) + 1))}")
        sizes = _class_sizes(db, f"SELECT _pganon_cls AS cls, sum(_pganon_c) AS n FROM {joint} GROUP BY 1")
        for i, sa in enumerate(sas):
            values = (f"SELECT cls, x::text AS v, c FROM (SELECT _pganon_cls AS cls, s{i} AS x, sum(_pganon_c) AS c "
                      f"FROM {joint} GROUP BY 1, 2) a")
            rows, base = _value_shares(db, values, sizes)
            _confidence_rows(out, sa, rows, base, {None: promise}, "records")
        return
    sizes = _class_sizes(db, f"SELECT {cls} AS cls, {who}::float8 AS n FROM {gt} GROUP BY 1")
    for sa in lay["sas"]:
        if lay.get("gt_rows") == "person":   # one_m: a text[] of generalized values per person
            values = (f"SELECT cls, v, count(DISTINCT id_num)::float8 AS c FROM (SELECT {cls} AS cls, g.id_num, "
                      f"u._pganon_x AS v FROM {gt} g, unnest(g.{I(sa)}) AS u(_pganon_x)) s GROUP BY 1, 2")
        else:
            values = (f"SELECT cls, x::text AS v, c FROM (SELECT {cls} AS cls, {I(sa)} AS x, {who}::float8 AS c "
                      f"FROM {gt} GROUP BY 1, 2) a")
        rows, base = _value_shares(db, values, sizes)
        _confidence_rows(out, sa, rows, base, {None: promise}, "persons" if persons else "records")


def _promise_record_gt(lay):
    """Only frequency-type models bound the attacker's confidence: (alpha,k), IR/EIR
    (alpha,beta); distinct, entropy and hitting-set models bound something else."""
    priv = lay.get("privacy")
    if isinstance(priv, dict) and priv.get("model") == "alpha_k_anonymity":
        return float(priv["alpha"])
    if lay["family"] == "person" and lay.get("model") in ("ab", "eab") and lay.get("alpha") is not None:
        return float(lay["alpha"])
    return None


def _attribute_linked(db, lay, out):
    """A GT row links to its bucket; the published ST lists each bucket's value set per SA
    (no counts), so an attacker's best guess is one of the set's values: 1 / |set|, and for a
    bucket whose set has one value, certainty. The bound a (c,k) or (p,k) release promises comes
    from `linked.promised_confidence`."""
    from pganon_engine.methods.linked import family as linked
    I, rels = db.ident, lay["relations"]
    promise = linked.promised_confidence(lay) if hasattr(linked, "promised_confidence") else {}
    for sa in lay["sas"]:
        rows = db.rows(f"WITH b AS (SELECT bucket_id, count(*)::float8 AS n FROM {rels['gt']} GROUP BY 1), "
                       f"s AS (SELECT bucket_id, cardinality({I(sa)})::float8 AS m FROM {rels['st']}) "
                       f"SELECT NULL::int AS level, max(1 / s.m) AS mx, sum(b.n / s.m) AS s, sum(b.n) AS cnt "
                       f"FROM b JOIN s USING (bucket_id)")
        base = db.one(f"SELECT 1.0 / count(DISTINCT u._pganon_x)::float8 AS mx, "
                      f"1.0 / count(DISTINCT u._pganon_x)::float8 AS s "
                      f"FROM {rels['st']} t, unnest(t.{I(sa)}) AS u(_pganon_x)")
        _confidence_rows(out, sa, rows, (base["mx"], base["s"]), {None: promise.get(sa)})


def _attribute_rating(db, lay, out):
    """Every attribute, QIs included: a tuple's group lists its candidate values (IDT)."""
    idt = lay["relations"]["st"]
    sc = lay.get("sc") or {}
    for a in _qi_columns(lay) + list(lay["sas"]):
        values = f"SELECT group_id AS cls, value AS v, count::float8 AS c FROM {idt} WHERE attribute = {db.literal(a)}"
        rows, base = _value_shares(db, values, f"(SELECT cls, sum(c) AS n FROM ({values}) x GROUP BY 1)")
        _confidence_rows(out, a, rows, base, {None: 1.0 / int(sc[a]) if sc.get(a) else None})


# --- structural inference ---------------------------------------------------------------------

def structural(db, info, out):
    lay = info["layout"]
    rels = lay["relations"]
    for role in numbering.PUBLISHED:
        if role in rels:
            _order(db, role, rels[role], out)
    for role, column in published_ids(lay):
        _numbering(db, role, rels[role], column, out)
    if lay["family"] == "rating":
        _chain(db, lay, out)


def published_ids(lay):
    """(relation role, column) of every identifier a reader sees."""
    seen = []
    for ident in numbering.specs(lay):
        for role, column, _ in ident.uses:
            if role in numbering.PUBLISHED and role in lay["relations"] and (role, column) not in seen:
                if ident.name == "group_id" and lay["family"] == "rating" and role == "gt":
                    continue   # the AT's per-attribute group columns: covered by the chain attack
                seen.append((role, column))
    return seen


def _columns(db, relation):
    return db.rows("SELECT attname::text AS name, format_type(atttypid, NULL) AS type FROM pg_catalog.pg_attribute "
                   "WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                   [relation], ["text"])


def _order(db, role, relation, out):
    """Rows out of content order: a physical order that is not a function of the content could
    carry the engine's order (the source's key order, the order groups were made)."""
    names = [c["name"] for c in _columns(db, relation)]
    # the whole-row value (built once per row) compares like ROW(every column): column by column,
    # dropped columns skipped; unless a column is called like the alias
    row = "_pganon_row" if "_pganon_row" not in names else f"ROW({', '.join(map(db.ident, names))})"
    # first in the order the scan returns the rows, without sorting them: when every row's ctid
    # exceeds its predecessor's that order is the physical one and the figure is exact; otherwise
    # (a parallel or synchronized scan) the rows are sorted by ctid
    r = db.one(f"SELECT count(*) AS n, count(*) FILTER (WHERE prev > cur) AS bad, count(*) FILTER (WHERE pt >= t) AS moved "
               f"FROM (SELECT {row} AS cur, lag({row}) OVER w AS prev, ctid AS t, lag(ctid) OVER w AS pt "
               f"      FROM {relation} _pganon_row WINDOW w AS ()) x")
    if r["moved"]:
        r = db.one(f"SELECT count(*) AS n, count(*) FILTER (WHERE prev > cur) AS bad FROM "
                   f"(SELECT {row} AS cur, lag({row}) OVER (ORDER BY ctid) AS prev FROM {relation} _pganon_row) x")
    n = int(r["n"])
    out.add("order", role, (int(r["bad"]) / max(n - 1, 1)) if n > 1 else 0.0,
            f"{int(r['bad'])} of {max(n - 1, 0)} consecutive rows of the {role} are out of content order",
            promise=0.0)


def _number_expr(db, column, typ):
    """A published column on its number line (`coltypes`): a range by its lower bound."""
    c = db.ident(column)
    if typ in coltypes.RANGES:
        return coltypes.number(f"lower({c})", coltypes.RANGES[typ])
    t = coltypes.TYPES.get(typ)
    return coltypes.number(c, t) if t else None


def _numbering(db, role, relation, column, out):
    """Rank correlation, over the identifier's values, between the identifier and the mean of
    each other published number of its rows: a random numbering correlates with nothing."""
    best, worst, n = 0.0, None, 0
    for c in _columns(db, relation):
        if c["name"] == column:
            continue
        expr = _number_expr(db, c["name"], c["type"])
        if expr is None:
            continue
        r = db.one(f"WITH a AS (SELECT {db.ident(column)} AS id, avg({expr}) AS m FROM {relation} GROUP BY 1), "
                   f"r AS (SELECT rank() OVER (ORDER BY id) AS ri, rank() OVER (ORDER BY m) AS rm FROM a) "
                   f"SELECT corr(ri, rm) AS rho, count(*) AS n FROM r")
        n = int(r["n"])
        rho = abs(r["rho"]) if r["rho"] is not None else 0.0
        if rho >= best:
            best, worst = rho, c["name"]
    bound = min(1.0, CHANCE_Z / math.sqrt(n - 1)) if n > 1 else 1.0
    detail = (f"|rank correlation| of {column} with the published {worst}: {best:.4f} over {n} values "
              f"(chance stays below {bound:.4f})" if worst else f"no other published number to correlate {column} with")
    out.add("numbering", f"{role}.{column}", best, detail, promise=bound)


def _chain(db, lay, out):
    """Rating: the chain attack on AT + IDT (`chain_attack`), per attribute."""
    from . import chain_attack
    rels = lay["relations"]
    attrs = _qi_columns(lay) + list(lay["sas"])
    sc = lay.get("sc") or {}
    grouped = [a for a in attrs if int(sc.get(a) or 2) > 1]   # SC = 1 publishes a value as it is
    for a, fig in chain_attack.assess(db, rels["gt"], rels["st"], grouped).items():
        pinned, chance = fig["pinned_share"], fig.get("chance_max", 0.0)
        floor = 1.0 / int(sc[a]) if sc.get(a) else 0.0
        out.add("chain_attack", a, pinned,
                f"the chain attack pins {pinned:.4f} of the tuples (chance: {chance:.4f}); {fig.get('detail', '')}".rstrip("; "),
                promise=max(floor, chance))

"""Read any published release back as the classes an analyst sees (`joint.Release`), and its
source as the distinct original tuples (`joint.Original`), for the measures every release
shape shares (issue 6: `pganon.compare`, `pganon report`).

A release is read from its own relations only (GT, ST, AT/IDT), as an analyst would, except the
source, which only the admin reads.  Per layout family:

  generalized, person (record GTs)   one class per distinct GT row (QI cells, exact SAs)
  bucketization (QIT+ST, incl. anatomy)   per group, one class per (QI vector, SA vector) with
                                     weight n_q * n_s / |group|: the anatomy reconstruction
  linked (GT/ST with bucket links)   one class per (QI cells, bucket): the bucket's value set per SA
  rating (AT+IDT)                    one class per distinct group-label vector: a multiset per
                                     attribute, from the ID table; its classes for DM and the size
                                     distribution are the tuples sharing all QI group labels
  person one_m_generalization        not comparable here: one row per person with a generalized
                                     set of sensitive values (reason given instead)

Cells by GT column type (as `utility._classes` reads them): a range is the closed interval it
covers, an array a value set, '*' suppression, a hierarchy node label the set of its leaves, any
other value exact.  Numbers, dates and timestamps are floats on `coltypes`' number line (days for
dates, epoch seconds for timestamps) on both sides.
"""

import json

from pganon_engine.core import catalog, coltypes
from pganon_engine.core.errors import unknown
from pganon_engine.hierarchy import store as hierarchy_store

from . import joint


def release_row(db, release_id):
    r = db.one("SELECT r.id, r.method, r.params::text AS params, r.layout::text AS layout, r.status, "
               "r.source_rows, r.published_rows, r.suppressed_rows, r.groups, r.metrics::text AS metrics, "
               "r.phase_seconds::text AS phase_seconds, d.name AS dataset, d.id AS dataset_id "
               "FROM pganon.release r JOIN pganon.dataset d ON d.id = r.dataset_id WHERE r.id = $1",
               [release_id], ["int8"])
    if r is None or r["status"] == "dropped":
        raise unknown(f"release {release_id} does not exist or was dropped",
                      hint="list releases with SELECT * FROM pganon.releases")
    out = dict(r)
    for k in ("params", "layout", "metrics", "phase_seconds"):
        out[k] = json.loads(r[k]) if r[k] else {}
    return out


def attributes(ds, lay):
    """(names, kinds) of the release's QIs then SAs; kinds 'numeric' (numbers, dates) or
    'categorical'."""
    kind = {a["column"]: a["kind"] for a in ds.attributes}
    names = [q["column"] for q in lay["qis"]] + list(lay["sas"])
    return names, ["numeric" if kind[n] in ("numeric", "date") else "categorical" for n in names], \
        [kind[n] for n in names]


def source_types(ds):
    """column -> its type name (`catalog.load`), what `_Cells` reads value sets and labels by."""
    return {a["column"]: a["type"] for a in ds.attributes}


def _value_expr(db, col, kind, alias, typ):
    c = db.ident(col)
    if kind in ("numeric", "date"):
        return f"{coltypes.number(c, coltypes.of_kind(typ, kind))} AS {alias}"
    return f"{c}::text AS {alias}"


def original(db, ds, lay, params):
    """The release's source rows (the first `limit` by key when the release was limited) as
    distinct tuples with counts."""
    names, kinds, raw = attributes(ds, lay)
    types = source_types(ds)
    sel = [_value_expr(db, n, k, f"a{i}", types.get(n)) for i, (n, k) in enumerate(zip(names, raw))]
    src = ds.source
    if params.get("limit"):
        src = f"(SELECT * FROM {ds.source} ORDER BY {db.ident(ds.key)} LIMIT {int(params['limit'])}) s"
    rows = db.rows(f"SELECT {', '.join(sel)}, count(*) AS n FROM {src} "
                   f"GROUP BY {', '.join(str(i + 1) for i in range(len(sel)))}")
    tuples = [tuple(r[f"a{i}"] for i in range(len(names))) for r in rows]
    return joint.Original(names, kinds, tuples, [r["n"] for r in rows])


def _column_types(db, relation):
    return {r["name"]: r["type"] for r in db.rows(
        "SELECT attname::text AS name, format_type(atttypid, NULL) AS type FROM pg_catalog.pg_attribute "
        "WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped", [relation], ["text"])}


class _Cells:
    """SELECT expressions for published cells and the decoder back to `joint` cells."""

    def __init__(self, db, relation, prefix="", alias="c", source=None):
        self.db, self.types, self.prefix, self.alias = db, _column_types(db, relation), prefix, alias
        self.source = source or {}   # column -> the source column's type (`source_types`)
        self.sel, self.decoders = [], []

    def add(self, col, kind, labels=None):
        """One published column: its cell kind follows its type; `labels` maps hierarchy node
        labels to the leaf values they cover."""
        c, t = f"{self.prefix}{self.db.ident(col)}", self.types[col]
        i = f"{self.alias}{len(self.decoders)}"
        num = "::float8" if kind in ("numeric", "date") else "::text"
        if t in coltypes.RANGES:
            ct = coltypes.RANGES[t]
            lo, hi = coltypes.bounds(c, ct)
            self.sel += [f"{coltypes.number(lo, ct)} AS {i}_lo", f"{coltypes.number(hi, ct)} AS {i}_hi"]
            self.decoders.append(lambda r, i=i: (r[f"{i}_lo"], r[f"{i}_hi"]))
        elif t.endswith("[]"):
            if kind == "date":   # a value set of dates or timestamps, published as text
                st = coltypes.of_kind(self.source.get(col), kind)
                self.sel.append(f"(SELECT array_agg({coltypes.number(f'x::{st.subtype}', st)}) FROM unnest({c}) x) AS {i}")
            else:
                self.sel.append(f"{c}{num}[] AS {i}")
            self.decoders.append(lambda r, i=i: frozenset(r[f"{i}"]))
        elif labels is not None:
            self.sel.append(f"{c}::text AS {i}")
            self.decoders.append(lambda r, i=i: _label_cell(r[f"{i}"], labels))
        else:
            if kind in ("numeric", "date"):
                self.sel.append(f"{coltypes.number(c, coltypes.of_kind(t, kind))} AS {i}")
            else:
                self.sel.append(f"{c}::text AS {i}")
            self.decoders.append(lambda r, i=i: r[f"{i}"])
        return self

    def group_by(self):
        return ", ".join(str(j + 1) for j in range(len(self.sel)))

    def decode(self, row):
        return [d(row) for d in self.decoders]


def _label_cell(label, labels):
    if label == joint.SUPPRESSED:
        return joint.SUPPRESSED
    leaves = labels.get(label)
    if leaves is None or len(leaves) == 1:
        return label if leaves is None else leaves[0]
    return frozenset(leaves)


def _labels(db, ds, column, kind):
    """Hierarchy node label -> the leaf values it covers (on the number line for numeric and
    date columns)."""
    h = hierarchy_store.load(db, ds, column)
    t = coltypes.of_kind(source_types(ds).get(column), kind) if kind in ("numeric", "date") else None
    out = {}
    for u in range(len(h)):
        leaves = [h.labels[v] for v in h.leaves if h.anc[v, h.depth[u]] == u]
        out[h.labels[u]] = [coltypes.number_of_text(x, t) for x in leaves] if t else leaves
    return out


def _labelled(lay):
    """QI columns whose GT cells are hierarchy node labels."""
    fam = lay["family"]
    if fam in ("generalized", "person"):
        return {q["column"] for q in lay["qis"] if q.get("form") == "node"}
    if fam == "linked":
        return {q["column"] for q in lay["qis"] if q.get("hierarchy")}
    return set()


def read(db, release_id):
    """(release row, joint.Release or None, reason when None)."""
    info = release_row(db, release_id)
    lay = info["layout"]
    ds = catalog.load(db, info["dataset"])
    names, kinds, raw = attributes(ds, lay)
    fam = lay["family"]
    if fam == "person" and lay.get("method") == "one_m_generalization":
        return info, ds, None, "one row per person with a generalized set of sensitive values: no record-level joint"
    reader = READERS.get(fam)
    if reader is None:
        return info, ds, None, f"no reader for release family {fam!r}"
    nq = len(lay["qis"])
    rel = joint.Release(names, kinds, nq, suppressed=int(info["suppressed_rows"] or 0))
    labels = {c: _labels(db, ds, c, kind) for c, kind in zip(names[:nq], raw[:nq]) if c in _labelled(lay)}
    reader(db, lay, names, raw, labels, rel, source_types(ds))
    return info, ds, rel.finish(), None


def _read_record_gt(db, lay, names, raw, labels, rel, types):
    """generalized and person families: one GT row per published record."""
    gt, nq = lay["relations"]["gt"], len(lay["qis"])
    cells = _Cells(db, gt, source=types)
    for i, (n, k) in enumerate(zip(names, raw)):
        cells.add(n, k, labels.get(n) if i < nq else None)
    for r in db.rows(f"SELECT {', '.join(cells.sel)}, count(*) AS n FROM {gt} GROUP BY {cells.group_by()}"):
        rel.add(cells.decode(r), r["n"])
    group = lay.get("gt_group", "class_id")
    rel.group_sizes = [r["n"] for r in db.rows(f"SELECT count(*) AS n FROM {gt} GROUP BY {db.ident(group)}")]


def _read_bucketization(db, lay, names, raw, labels, rel, types):
    """QIT/GT + ST joined by group: per group, (QI vector, SA vector) classes weighted n_q n_s / |g|."""
    rels, nq = lay["relations"], len(lay["qis"])
    qc = _Cells(db, rels["gt"], "q.", source=types)
    sc = _Cells(db, rels["st"], "s.", alias="s", source=types)
    for i, (n, k) in enumerate(zip(names, raw)):
        (qc if i < nq else sc).add(n, k)
    qcols = ", ".join(db.ident(n) for n in names[:nq])
    inner = f"SELECT group_id, {qcols}, count(*) AS nq FROM {rels['gt']} GROUP BY group_id, {qcols}" if nq else \
        f"SELECT group_id, count(*) AS nq FROM {rels['gt']} GROUP BY group_id"
    rows = db.rows(f"WITH q AS ({inner}), g AS (SELECT group_id, sum(count)::float8 AS size FROM {rels['st']} GROUP BY 1) "
                   f"SELECT {', '.join(qc.sel + sc.sel)}, q.nq * s.count / g.size AS w "
                   f"FROM q JOIN g USING (group_id) JOIN {rels['st']} s USING (group_id)")
    for r in rows:
        rel.add(qc.decode(r) + sc.decode(r), r["w"])
    rel.group_sizes = [int(r["n"]) for r in db.rows(f"SELECT sum(count) AS n FROM {rels['st']} GROUP BY group_id")]


def _read_linked(db, lay, names, raw, labels, rel, types):
    """GT rows with their bucket; the bucket's ST value sets per SA."""
    rels, nq = lay["relations"], len(lay["qis"])
    cells = _Cells(db, rels["gt"], "g.", source=types)
    for n, k in zip(names[:nq], raw[:nq]):
        cells.add(n, k, labels.get(n))
    sas = _Cells(db, rels["st"], "s.", alias="s", source=types)
    for n, k in zip(names[nq:], raw[nq:]):
        sas.add(n, k)
    sel = cells.sel + sas.sel
    rows = db.rows(f"SELECT {', '.join(sel)}, count(*) AS n FROM {rels['gt']} g "
                   f"JOIN {rels['st']} s USING (bucket_id) GROUP BY {', '.join(str(j + 1) for j in range(len(sel)))}")
    for r in rows:
        rel.add(cells.decode(r) + sas.decode(r), r["n"])
    rel.group_sizes = [r["n"] for r in db.rows(f"SELECT count(*) AS n FROM {rels['gt']} GROUP BY group_id")]


def _read_rating(db, lay, names, raw, labels, rel, types):
    """AT rows by their group-label vector; each label a multiset of its group's values (IDT)."""
    rels = lay["relations"]
    groups = {}
    for r in db.rows(f"SELECT attribute, group_id, value, count FROM {rels['st']}"):
        groups.setdefault((r["attribute"], r["group_id"]), {})[r["value"]] = r["count"]
    numeric = {n: k in ("numeric", "date") for n, k in zip(names, raw)}
    dates = {n for n, k in zip(names, raw) if k == "date"}
    cols = ", ".join(db.ident(n) for n in names)
    for r in db.rows(f"SELECT {cols}, count(*) AS n FROM {rels['gt']} GROUP BY {cols}"):
        cells = []
        for n in names:
            ms = groups[(n, r[n])]
            if n in dates:
                t = coltypes.of_kind(types.get(n), "date")
                ms = {coltypes.number_of_text(v, t): m for v, m in ms.items()}
            elif numeric[n]:
                ms = {float(v): m for v, m in ms.items()}
            cells.append(ms)
        rel.add(cells, r["n"])
    qcols = ", ".join(db.ident(q["column"]) for q in lay["qis"])
    rel.group_sizes = [r["n"] for r in db.rows(f"SELECT count(*) AS n FROM {rels['gt']} GROUP BY {qcols}")]


READERS = {"generalized": _read_record_gt, "person": _read_record_gt,
           "bucketization": _read_bucketization, "linked": _read_linked, "rating": _read_rating}

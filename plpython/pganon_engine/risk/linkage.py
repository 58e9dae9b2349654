"""Cross-release linkage from the analyst's seat (issue 11): an analyst may keep every release of
a dataset. A published identifier that means the same record or person in two releases (a tuple
number, a person number, a group id) lets them join the releases and intersect what each says.

For every identifier column the two releases' GTs share, a sample of its values present in both
is joined, and each joined pair of rows is asked whether it could be one record: every published
attribute the two rows share overlaps (an exact value, a range, a value set, a hierarchy node's
leaves, a Rating group's values). If the identifier links records, nearly every joined pair
agrees; if it is a fresh random number per release, joined pairs agree no more often than rows
paired at random. The figure is the excess of the first rate over the second.

For two person releases the composed attack follows: if person numbers link persons, the
intersection of their classes must still hold k persons (composed_prosecutor_risk).
"""

import math

from pganon_engine.core import catalog, coltypes
from pganon_engine.metrics import joint, reconstruct

SAMPLE = 2000
ROTATIONS = 10
MIN_EXCESS = 0.05


def against_promoted(db, info, out):
    """One linkage row (and, for person releases, a composed row) per earlier promoted release."""
    others = db.rows("SELECT id FROM pganon.release WHERE dataset_id = $1 AND id <> $2 "
                     "AND status IN ('current', 'superseded') ORDER BY id", [info["dataset_id"], info["id"]],
                     ["int4", "int8"])
    if not others:
        out.info("linkage", "earlier releases", None, "no promoted release of this dataset to link with")
        return
    ds = catalog.load(db, info["dataset"])
    mine = _Side(db, ds, info)
    for o in others:
        compare(db, mine, _Side(db, ds, reconstruct.release_row(db, o["id"])), out)


def refresh(db, release_id):
    """Measure linkage again against the releases promoted now (promote calls it)."""
    from .assess import Rows, store
    rows = Rows()
    against_promoted(db, reconstruct.release_row(db, release_id), rows)
    store(db, release_id, rows.rows, measures=("linkage", "composed_prosecutor_risk"))


class _Side:
    """One release's GT as rows of decoded cells, keyed by an identifier column."""

    def __init__(self, db, ds, info):
        from .assess import published_ids
        self.db, self.info, self.lay = db, info, info["layout"]
        self.id = info["id"]
        self.gt = self.lay["relations"]["gt"]
        self.ids = [c for role, c in published_ids(self.lay) if role == "gt"]
        names, _, raw = reconstruct.attributes(ds, self.lay)
        present = {r["name"] for r in db.rows("SELECT attname::text AS name FROM pg_catalog.pg_attribute "
                                              "WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped",
                                              [self.gt], ["text"])}
        self.kinds = {n: k for n, k in zip(names, raw) if n in present}
        self.labels = {c: reconstruct._labels(db, ds, c, self.kinds[c])
                       for c in reconstruct._labelled(self.lay) if c in self.kinds}
        self.types = reconstruct.source_types(ds)
        self._groups = None

    def cells(self, column, ids, attrs):
        """{id: {attribute: cell}} for the first row (in content order) of each id."""
        db = self.db
        if self.lay["family"] == "rating":
            return self._rating_cells(column, ids, attrs)
        c = reconstruct._Cells(db, self.gt, source=self.types)
        for a in attrs:
            c.add(a, self.kinds[a], self.labels.get(a))
        key = f"{db.ident(column)}::text"
        rows = db.rows(f"SELECT DISTINCT ON ({key}) {key} AS _id, {', '.join(c.sel)} "
                       f"FROM {self.gt} WHERE {key} = ANY($1) "
                       f"ORDER BY {key}, {', '.join(str(j + 2) for j in range(len(c.sel)))}",
                       [ids], ["text[]"]) if attrs else []
        return {r["_id"]: dict(zip(attrs, c.decode(r))) for r in rows}

    def _rating_cells(self, column, ids, attrs):
        db, I = self.db, self.db.ident
        if self._groups is None:
            self._groups = {}
            for r in db.rows(f"SELECT attribute, group_id, value FROM {self.lay['relations']['st']}"):
                self._groups.setdefault((r["attribute"], r["group_id"]), set()).add(r["value"])
        rows = db.rows(f"SELECT {I(column)}::text AS _id, {', '.join(map(I, attrs))} FROM {self.gt} "
                       f"WHERE {I(column)}::text = ANY($1)", [ids], ["text[]"])
        out = {}
        for r in rows:
            out[r["_id"]] = {a: frozenset(_as_number(v, self.kinds[a], self.types.get(a)) for v in self._groups[(a, r[a])])
                             for a in attrs}
        return out


def _as_number(v, kind, typ):
    if kind in ("numeric", "date"):
        return coltypes.number_of_text(v, coltypes.of_kind(typ, kind))
    return v


def compare(db, a, b, out):
    """Every identifier column of one GT joined with every identifier column of the other (a
    reader may join group ids to class ids as well as tuple numbers to tuple numbers)."""
    pairs = [(x, y) for x in a.ids for y in b.ids]
    attrs = [n for n in a.kinds if n in b.kinds and n not in a.ids and n not in b.ids]
    if not pairs:
        out.info("linkage", f"release {b.id}", None,
                 f"release {a.id} or release {b.id} publishes no identifier column")
        return
    excess_of = {}
    for x, y in pairs:
        via = x if x == y else f"{x} = {y}"
        ids = [r["v"] for r in db.rows(
            f"SELECT p.v FROM (SELECT DISTINCT {db.ident(x)}::text AS v FROM {a.gt}) p "
            f"JOIN (SELECT DISTINCT {db.ident(y)}::text AS v FROM {b.gt}) q USING (v) "
            f"ORDER BY md5(p.v || ':' || $1) LIMIT {SAMPLE}", [f"{a.id}/{b.id}"], ["text"])]
        if len(ids) < 2 or not attrs:
            out.info("linkage", f"release {b.id} via {via}", None,
                     f"{len(ids)} shared value(s), {len(attrs)} shared attribute(s): nothing to compare")
            continue
        ca, cb = a.cells(x, ids, attrs), b.cells(y, ids, attrs)
        ids = [i for i in ids if i in ca and i in cb]
        n = len(ids)
        joined = sum(_agree(ca[i], cb[i], attrs) for i in ids) / n
        # chance: the same rows paired at random, averaged over several shifts so that only the
        # joined rate's own sampling error is left; the promise allows 4 standard errors of it
        shifts = range(1, min(ROTATIONS, n - 1) + 1)
        chance = sum(_agree(ca[ids[j]], cb[ids[(j + s) % n]], attrs) for s in shifts for j in range(n)) / (n * len(shifts))
        excess = joined - chance
        promise = max(MIN_EXCESS, 4 * math.sqrt(max(chance * (1 - chance), 1.0 / n) / n))
        excess_of[via] = (excess, promise)
        out.add("linkage", f"release {b.id} via {via}", excess,
                f"joined on {via}, {joined:.4f} of {n} sampled pairs agree on every shared attribute "
                f"({', '.join(attrs)}); pairs at random {chance:.4f}", promise=promise)
    if a.lay["family"] == "person" and b.lay["family"] == "person" and "id_num" in excess_of:
        _composed(db, a, b, excess_of["id_num"], out)


def _composed(db, a, b, fig, out):
    excess, promise = fig
    ks = [int(x.lay["k"]) for x in (a, b) if x.lay.get("k")]
    k = min(ks) if ks else None
    if excess <= promise:
        out.add("composed_prosecutor_risk", f"release {b.id}", None,
                "person numbers do not link persons across the releases: there is nothing to compose",
                promise=(1.0 / k) if k else None)
        return
    r = db.one(f"SELECT min(n) AS n FROM (SELECT x.class_id, y.class_id, count(*) AS n FROM "
               f"(SELECT DISTINCT id_num, class_id FROM {a.gt}) x JOIN (SELECT DISTINCT id_num, class_id FROM {b.gt}) y "
               f"USING (id_num) GROUP BY 1, 2) c")
    n = int(r["n"] or 0)
    out.add("composed_prosecutor_risk", f"release {b.id}", (1.0 / n) if n else None,
            f"joining on id_num and intersecting the classes leaves {n} person(s) in the smallest class",
            promise=(1.0 / k) if k else None)


def _agree(x, y, attrs):
    return all(_overlap(x[a], y[a]) for a in attrs)


def _overlap(u, v):
    if _suppressed(u) or _suppressed(v):
        return True
    if isinstance(u, tuple) or isinstance(v, tuple):
        if not isinstance(u, tuple):
            u, v = v, u
        lo, hi = u
        if isinstance(v, tuple):
            return lo <= v[1] and v[0] <= hi
        if isinstance(v, (frozenset, set, dict)):
            return any(_num(x) is not None and lo <= _num(x) <= hi for x in v)
        return _num(v) is not None and lo <= _num(v) <= hi
    su, sv = _as_set(u), _as_set(v)
    return bool(su & sv)


def _suppressed(c):
    return isinstance(c, str) and c == joint.SUPPRESSED


def _as_set(c):
    if isinstance(c, (frozenset, set)):
        return set(c)
    if isinstance(c, dict):
        return set(c)
    return {c}


def _num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None

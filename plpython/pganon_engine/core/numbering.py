"""Random identifiers and content order for every published relation (DESIGN.md: "nothing a reader
can exploit").

Why: the engines number groups, classes, buckets, tuples and persons in the order they make them,
which follows the source's key order and the algorithm's dealing order. Published as is, such a
number is a side channel (Rating's chain attack pins values through tuple numbers and group ids)
and, being the same in every release of a dataset, a join key across releases. So after a family
has built its relations, every identifier it publishes is replaced by a random permutation drawn
per release, consistently in the published relations and the admin-only map, and each published
relation is rewritten in the order of its own columns: what a reader sees, in which order, is then
a function of the published content and a secret per-release seed, nothing else.

The seed (`numbering_seed`) is drawn from the operating system per release and recorded in the
release's parameters (admin-only) so that a release can be reproduced; it is never shown to
analysts. `numbering = 'creation'` keeps the engine's own numbers and order: the papers' fixtures
need it, and `pganon.promote` refuses such a release.

An identifier is described by `Id(name, source, uses)`: `source` is (relation, column[, scope
column]) whose distinct values are permuted; `uses` lists every (relation, column, scope) holding
it, where scope is None, ("column", c) when the identifier is numbered per value of column c (the
Rating ID table's attribute), or ("literal", v) for a relation column that holds the ids of scope v
only (the Rating AT's column per attribute).
"""

import secrets
from dataclasses import dataclass

from .errors import invalid

MODES = ("random", "creation")
GENERIC_PARAMS = ("numbering", "numbering_seed")
PUBLISHED = ("gt", "st", "st_long")   # the relations the stable views show


@dataclass(frozen=True)
class Id:
    name: str
    source: tuple
    uses: tuple


def specs(lay):
    """The identifiers a release of this layout publishes."""
    fam = lay["family"]
    if fam == "bucketization":
        return [Id("group_id", ("gt", "group_id"), (("gt", "group_id", None), ("st", "group_id", None),
                                                     ("map", "group_id", None)))]
    if fam == "linked":
        return [Id("group_id", ("gt", "group_id"), (("gt", "group_id", None), ("map", "group_id", None))),
                Id("bucket_id", ("st", "bucket_id"), (("gt", "bucket_id", None), ("st", "bucket_id", None),
                                                       ("st_long", "bucket_id", None), ("map", "bucket_id", None)))]
    if fam == "generalized":
        return [Id("class_id", ("gt", "class_id"), (("gt", "class_id", None), ("map", "class_id", None)))]
    if fam == "person":
        return [Id("class_id", ("gt", "class_id"), (("gt", "class_id", None), ("map", "class_id", None))),
                Id("id_num", ("gt", "id_num"), (("gt", "id_num", None), ("map", "id_num", None)))]
    if fam == "rating":
        attrs = [q["column"] for q in lay["qis"]] + list(lay["sas"])
        return [Id("tk", ("gt", "tk"), (("gt", "tk", None), ("map", "tk", None))),
                Id("group_id", ("st", "group_id", "attribute"),
                   (("st", "group_id", ("column", "attribute")),)
                   + tuple(("gt", a, ("literal", a)) for a in attrs))]
    raise invalid(f"no identifier description for release family {fam!r}")


def parse(params):
    """Split the generic numbering parameters off a publish's params: (mode, seed, rest)."""
    rest = {k: v for k, v in params.items() if k not in GENERIC_PARAMS}
    mode = params.get("numbering", "random")
    if mode not in MODES:
        raise invalid(f"parameter numbering must be one of {', '.join(map(repr, MODES))}, not {mode!r}",
                      hint="'creation' keeps the engine's own numbering (fixtures only: promote refuses it)")
    seed = params.get("numbering_seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise invalid(f"parameter numbering_seed must be an integer >= 0, not {seed!r}")
    if mode == "random" and seed is None:
        seed = secrets.randbits(62)
    if mode == "creation":
        seed = None
    return mode, seed, rest


def _columns(db, relation):
    return [r["name"] for r in db.rows(
        "SELECT attname::text AS name FROM pg_catalog.pg_attribute WHERE attrelid = $1::regclass "
        "AND attnum > 0 AND NOT attisdropped ORDER BY attnum", [relation], ["text"])]


def _type(db, relation, column):
    return db.one("SELECT format_type(atttypid, atttypmod) AS t FROM pg_catalog.pg_attribute "
                  "WHERE attrelid = $1::regclass AND attname = $2", [relation, column], ["text", "name"])["t"]


# Default collations under which lowercase hex digests sort byte-wise: the permutation's ORDER BY
# md5(...) may then compare them as "C" (a memcmp, not a strcoll per comparison) with the same order.
BYTEWISE = ("C", "POSIX", "C.UTF-8", "C.utf8")


def _hex_order(db):
    """' COLLATE "C"' when the database's default collation orders hex digests byte-wise (libc
    C, POSIX or C.UTF-8: code point order), else '' (any other collation keeps its own order,
    which a Danish "aa" for instance can change)."""
    r = db.one("SELECT to_jsonb(d) ->> 'datlocprovider' AS p, datcollate::text AS c FROM pg_catalog.pg_database d "
               "WHERE datname = pg_catalog.current_database()")
    return ' COLLATE "C"' if r["p"] in (None, "c") and r["c"] in BYTEWISE else ""


def draw(db, perm, name, seed, ids, typ="integer", collate=None):
    """The temp table `perm` (old, new) of an unscoped identifier: `ids` (a query of the distinct
    old ids, column old) numbered 1.. in the order of md5(seed:name::old), the permutation
    `apply` draws (a family that writes its ids once may draw it before assigning them)."""
    if collate is None:
        collate = _hex_order(db)
    db.run(f"CREATE TEMP TABLE {perm.split('.')[1]} ON COMMIT DROP AS "
           f"SELECT old, (row_number() OVER (ORDER BY "
           f"md5($1 || ':' || {db.literal(name)} || '::' || old::text){collate}))::{typ} AS new FROM ({ids}) d",
           [str(seed)], ["text"])


def apply(db, lay, seed, ids=None):
    """Renumber every identifier of the release at random and rewrite its published relations
    in content order; the map keeps its indexes. `ids` may name, per identifier, a smaller
    relation (relation, column) holding exactly the distinct values of its source (the family's
    per-group table): the permutation is then drawn from it instead of a DISTINCT over the
    source, the same permutation."""
    I, rels, ids = db.ident, lay["relations"], ids or {}
    collate = _hex_order(db)
    perms = {}
    for n, ident in enumerate(specs(lay)):
        perm = f"pg_temp._pganon_perm{n}"
        rel, col = rels[ident.source[0]], ident.source[1]
        typ = _type(db, rel, col)
        name = db.literal(ident.name)
        # md5 of (seed, identifier, scope, old id) orders the ids at random; dense numbers from 1
        if len(ident.source) > 2:
            scope = I(ident.source[2]) + "::text"
            db.run(f"CREATE TEMP TABLE {perm.split('.')[1]} ON COMMIT DROP AS "
                   f"SELECT scope, old, (row_number() OVER (PARTITION BY scope ORDER BY "
                   f"md5($1 || ':' || {name} || ':' || coalesce(scope, '') || ':' || old::text){collate}))::{typ} AS new "
                   f"FROM (SELECT DISTINCT {scope} AS scope, {I(col)} AS old FROM {rel}) d",
                   [str(seed)], ["text"])
        else:   # no scope: a join on the id alone
            src, src_col = ids.get(ident.name, (rel, col))
            draw(db, perm, ident.name, seed, f"SELECT DISTINCT {I(src_col)} AS old FROM {src}", typ, collate)
        db.run(f"ANALYZE {perm}")
        for role, column, sc in ident.uses:
            perms.setdefault(role, []).append((column, sc, perm))
    for role, uses in perms.items():
        if role not in rels:
            continue
        _rewrite(db, rels[role], uses, ordered=role in PUBLISHED)


def _rewrite(db, relation, uses, ordered):
    """Copy `relation` with its id columns looked up in their permutations (in content order
    when it is published), then put the copy in its place with the original's constraints and
    indexes."""
    I = db.ident
    cols = _columns(db, relation)
    by_col = {c: (sc, perm) for c, sc, perm in uses}
    sel, joins = [], []
    for c in cols:
        if c not in by_col:
            sel.append(f"r.{I(c)}")
            continue
        sc, perm = by_col[c]
        a = f"p{len(joins)}"
        if sc is None:   # an unscoped permutation has no scope column
            on = ""
        elif sc[0] == "column":
            on = f" AND {a}.scope = r.{I(sc[1])}::text"
        else:
            on = f" AND {a}.scope = {db.literal(sc[1])}"
        joins.append(f"LEFT JOIN {perm} {a} ON {a}.old = r.{I(c)}{on}")
        sel.append(f"{a}.new AS {I(c)}")
    where = db.one("SELECT n.nspname::text AS s, c.relname::text AS r FROM pg_catalog.pg_class c "
                   "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1::regclass",
                   [relation], ["text"])
    schema, name = where["s"], where["r"]
    constraints = [r["def"] for r in db.rows(
        "SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s', $1::regclass, conname, pg_get_constraintdef(oid)) AS def "
        "FROM pg_catalog.pg_constraint WHERE conrelid = $1::regclass", [relation], ["text"])]
    indexes = [r["def"] for r in db.rows(
        "SELECT pg_get_indexdef(i.indexrelid) AS def FROM pg_catalog.pg_index i WHERE i.indrelid = $1::regclass "
        "AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint c WHERE c.conindid = i.indexrelid)",
        [relation], ["text"])]
    tmp = f"{I(schema)}.{I(name + '_renum')}"
    order = f" ORDER BY {', '.join(str(i + 1) for i in range(len(cols)))}" if ordered else ""
    db.run(f"CREATE TABLE {tmp} AS SELECT {', '.join(sel)} FROM {relation} r {' '.join(joins)}{order}")
    db.run(f"DROP TABLE {relation}")
    db.run(f"ALTER TABLE {tmp} RENAME TO {I(name)}")
    for stmt in constraints + indexes:
        db.run(stmt)
    db.run(f"ANALYZE {I(schema)}.{I(name)}")

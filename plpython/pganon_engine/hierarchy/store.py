"""Hierarchies in the catalog: declare one from an ARX-style CSV or a builder, check it against
the column's data, store it node by node (pganon.hierarchy_node), and load it back for a method.

The tree logic lives in `hierarchy` and the builders in `hierarchy_build`; this module only
moves them in and out of the database, so the catalog holds exactly what the engine validated.
"""

import json

from pganon_engine.core.errors import bad_data, incomplete, invalid, unknown
from pganon_engine.core.params import shown_values

from . import build as hierarchy_build, tree as hierarchy

BUILDERS = ("intervals", "dates", "redaction")
# Node labels are keys of pganon.hierarchy_node's btree index, whose entries cannot exceed about
# 2.7 kB: a longer label is refused up front rather than failing in the index.
MAX_LABEL_BYTES = 2000


def _attribute(db, dataset, column):
    row = db.one(
        "SELECT d.id, d.source::regclass::text AS source, a.role, a.kind "
        "FROM pganon.dataset d LEFT JOIN pganon.attribute a ON a.dataset_id = d.id AND a.column_name = $2 "
        "WHERE d.name = $1", [dataset, column], ["text", "name"])
    if row is None:
        raise unknown(f'dataset "{dataset}" is not registered',
                      hint="register it with pganon.register_dataset(name, source, key_column)")
    if row["role"] is None:
        raise unknown(f'column "{column}" is not a declared attribute of dataset "{dataset}"',
                      hint="declare it first with pganon.set_attribute(dataset, column, 'quasi', kind)")
    return row


def _values(db, source, column):
    col = db.ident(column)
    return [r["v"] for r in db.rows(f"SELECT DISTINCT {col}::text AS v FROM {source} WHERE {col} IS NOT NULL")]


def _save(db, dataset, column, tree, origin):
    att = _attribute(db, dataset, column)
    missing = sorted(tree.missing(_values(db, att["source"], column)))
    if missing:
        shown = shown_values(missing)
        raise bad_data(f'{len(missing)} value(s) of column "{column}" are not leaves of its hierarchy: {shown}',
                       hint="every value that occurs in the data must be a leaf; add them to the hierarchy")
    edges = tree.edges()  # (node, parent, depth, leaf_count) in the tree's stable order
    long = [e[0] for e in edges if len(e[0].encode()) > MAX_LABEL_BYTES]
    if long:
        raise invalid(f'{len(long)} node(s) of the hierarchy of column "{column}" are longer than {MAX_LABEL_BYTES} '
                      f"bytes (the longest {max(len(x.encode()) for x in long)}): {shown_values(long)}",
                      hint="hierarchy labels are index keys: publish from a view that maps long values to short codes")
    db.run("DELETE FROM pganon.hierarchy WHERE dataset_id = $1 AND column_name = $2", [att["id"], column],
           ["int4", "name"])
    db.run("INSERT INTO pganon.hierarchy (dataset_id, column_name, origin, height, n_leaves) "
           "VALUES ($1, $2, $3, $4, $5)", [att["id"], column, origin, tree.height, tree.n_leaves],
           ["int4", "name", "text", "int4", "int4"])
    db.run("INSERT INTO pganon.hierarchy_node (dataset_id, column_name, node, parent, depth, leaf_count, ord) "
           "SELECT $1, $2, n, p, d, c, o - 1 FROM unnest($3::text[], $4::text[], $5::int4[], $6::int4[]) "
           "WITH ORDINALITY AS x(n, p, d, c, o)",
           [att["id"], column, [e[0] for e in edges], [e[1] for e in edges], [e[2] for e in edges],
            [e[3] for e in edges]], ["int4", "name", "text[]", "text[]", "int4[]", "int4[]"])
    _analyze_nodes(db, len(edges))
    return {"column": column, "origin": origin, "height": tree.height, "leaves": tree.n_leaves,
            "nodes": len(edges)}


# A hierarchy this large makes the verifier's leaf -> ancestor joins plan on stale statistics of
# pganon.hierarchy_node until autovacuum runs: a 13,000-leaf ZIP hierarchy just declared made the
# first verification of a 3,000-row release take 50 s instead of 0.4 s (issue 15).
ANALYZE_NODES = 1000


def _analyze_nodes(db, nodes):
    """ANALYZE pganon.hierarchy_node after storing a large hierarchy, when the caller owns the
    table (ANALYZE of another role's table only warns); plans only, never results."""
    if nodes < ANALYZE_NODES:
        return
    own = db.one("SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE') AS own FROM pg_catalog.pg_class c "
                 "WHERE c.oid = 'pganon.hierarchy_node'::pg_catalog.regclass")
    if own and own["own"]:
        db.run("ANALYZE pganon.hierarchy_node")


def set_from_csv(db, dataset, column, csv, sep=";"):
    """Declare the hierarchy of a column from ARX-style CSV text (one row per leaf, leaf to root)."""
    rows = hierarchy_build.read_csv(csv, sep=sep)
    return _save(db, dataset, column, hierarchy.Hierarchy.from_paths(column, rows), "csv")


def build(db, dataset, column, builder, params):
    """Build the hierarchy of a column from its distinct values with one of BUILDERS."""
    params = json.loads(params) if isinstance(params, str) else (params or {})
    if builder not in BUILDERS:
        raise invalid(f"unknown hierarchy builder {builder!r}", hint=f"builders: {', '.join(BUILDERS)}")
    att = _attribute(db, dataset, column)
    values = _values(db, att["source"], column)
    if not values:
        raise bad_data(f'column "{column}" of dataset "{dataset}" has no values to build a hierarchy from')
    if builder == "intervals":
        if att["kind"] != "numeric":
            raise invalid(f'the intervals builder needs a numeric column; "{column}" is {att["kind"]}',
                          hint="use redaction or a CSV hierarchy for categorical columns")
        rows = hierarchy_build.intervals(values, params.get("widths") or _required(params, "widths"))
    elif builder == "dates":
        rows = hierarchy_build.dates(values)
    else:
        rows = hierarchy_build.redaction(values)
    origin = builder + (json.dumps(params, sort_keys=True) if params else "")
    return _save(db, dataset, column, hierarchy.Hierarchy.from_paths(column, rows), origin)


def _required(params, name):
    raise invalid(f"the builder needs parameter {name!r}", hint='e.g. {"widths": [5, 10, 20]}')


def load(db, ds, column):
    """The stored hierarchy of a dataset column, as a `hierarchy.Hierarchy`."""
    rows = db.rows("SELECT node, parent FROM pganon.hierarchy_node WHERE dataset_id = $1 AND column_name = $2 "
                   "ORDER BY ord", [ds.id, column], ["int4", "name"])
    if not rows:
        raise incomplete(f'column "{column}" of dataset "{ds.name}" has no hierarchy',
                         hint="declare one with pganon.set_hierarchy(dataset, column, csv) or "
                              "pganon.build_hierarchy(dataset, column, builder, params)")
    return hierarchy.Hierarchy.from_edges(column, [(r["node"], r["parent"]) for r in rows])


def to_csv(db, dataset, column, sep=";"):
    """The stored hierarchy as ARX-style CSV text (one row per leaf, leaf to root)."""
    att = _attribute(db, dataset, column)

    class _Ds:  # the two fields `load` reads
        id, name = att["id"], dataset
    tree = load(db, _Ds, column)
    paths = [[tree.labels[v] for v in tree.ancestors(int(leaf))] for leaf in tree.leaves]
    width = max(map(len, paths))
    # rectangular as ARX wants: a short branch repeats its leaf, which reading collapses again
    return hierarchy_build.write_csv([[p[0]] * (width - len(p)) + p for p in paths], sep=sep)

"""Read a dataset's declared metadata from the catalog, checked against the live source table.

Everything a method needs about columns comes from here, already validated, so methods never
see an unknown column or a missing kind.
"""

import json

from . import coltypes
from .errors import incomplete, unknown


class Dataset:
    def __init__(self, row, attributes, level_l):
        self.id = row["id"]
        self.name = row["name"]
        self.source = row["source"]          # quoted, schema-qualified where needed (regclass::text)
        self.key = row["key_column"]
        self.person = row["person_column"]
        self.attributes = attributes        # [{column, role, kind, type}] in declared order; type: the
                                            # column's base type without modifier (`coltypes`)
        self.level_l = level_l              # {level: l}
        self.policy = json.loads(row["policy"]) if row.get("policy") else {}   # risk thresholds (promote)

    def columns(self, role):
        return [a for a in self.attributes if a["role"] == role]


def load(db, name):
    row = db.one(
        "SELECT d.id, d.name, d.source::oid AS source_oid, d.key_column, d.person_column, d.policy::text AS policy, "
        "       (SELECT c.oid::regclass::text FROM pg_catalog.pg_class c WHERE c.oid = d.source) AS source "
        "FROM pganon.dataset d WHERE d.name = $1", [name], ["text"])
    if row is None:
        raise unknown(f'dataset "{name}" is not registered',
                      hint="register it with pganon.register_dataset(name, source, key_column)")
    if row["source"] is None:
        raise unknown(f'the source table of dataset "{name}" no longer exists',
                      hint="re-register the dataset with pganon.register_dataset")
    attrs = db.rows(
        "SELECT a.column_name::text AS column, a.role, a.kind, "
        "       pg_catalog.format_type(b.oid, NULL) AS type, b.typcategory::text AS category "
        "FROM pganon.attribute a "
        "LEFT JOIN pg_catalog.pg_attribute pa ON pa.attrelid = $2 AND pa.attname = a.column_name "
        "     AND NOT pa.attisdropped AND pa.attnum > 0 "
        "LEFT JOIN pg_catalog.pg_type t ON t.oid = pa.atttypid "
        "LEFT JOIN pg_catalog.pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END "
        "WHERE a.dataset_id = $1 ORDER BY a.position", [row["id"], row["source_oid"]], ["int4", "oid"])
    gone = [a["column"] for a in attrs if a["type"] is None]
    if gone:
        raise unknown(f'columns {gone} of dataset "{name}" no longer exist in {row["source"]}',
                      hint="declare the dataset's attributes again with pganon.set_attribute")
    key_ok = db.one("SELECT 1 AS ok FROM pg_catalog.pg_attribute WHERE attrelid = $1 AND attname = $2 "
                    "AND NOT attisdropped AND attnum > 0", [row["source_oid"], row["key_column"]], ["oid", "name"])
    if key_ok is None:
        raise unknown(f'key column "{row["key_column"]}" no longer exists in {row["source"]}')
    level_l = {r["level"]: r["l"] for r in db.rows(
        "SELECT level, l FROM pganon.level_l WHERE dataset_id = $1 ORDER BY level", [row["id"]], ["int4"])}
    ds = Dataset(row, attrs, level_l)
    if not ds.columns("sensitive"):
        raise incomplete(f'dataset "{name}" has no sensitive attribute',
                         hint="declare one with pganon.set_attribute(dataset, column, 'sensitive')")
    return ds


def check_types(ds):
    """Refuse (PA003), before any work, a numeric or date attribute whose column's type no longer
    fits its kind: a QI of a type `coltypes` does not publish as that kind, an SA of another type
    category than pganon.set_attribute accepts.  Usually the column's type changed after the
    declaration (ALTER TABLE ... TYPE); the catalog keeps the declared kind, not the type, so the
    message names that kind and the column's type now."""
    category = {"numeric": "N", "date": "D"}
    for a in ds.attributes:
        kind, typ = a["kind"], a["type"]
        if kind not in category or a["role"] not in ("quasi", "sensitive"):
            continue
        t = coltypes.TYPES.get(typ)
        fits = (t is not None and t.kind == kind) if a["role"] == "quasi" else a["category"] == category[kind]
        if fits:
            continue
        if a["role"] == "quasi":
            role, types = "quasi-identifier", ", ".join(coltypes.supported(kind))
        else:
            role, types = "sensitive attribute", "a number type" if kind == "numeric" else "a date or time type"
        raise incomplete(f'{role} "{a["column"]}" of dataset {ds.name} is declared {kind}, but its column in '
                         f"{ds.source} has type {typ}; a {kind} {role} has type {types} (did the column's type "
                         "change after the declaration?)",
                         hint=f"declare it again for its current type: SELECT pganon.set_attribute("
                              f"{_literal(ds.name)}, {_literal(a['column'])}, '{a['role']}'); or publish from a view "
                              f"that casts it back")


def _literal(text):
    """A SQL string literal of text, for a hint the user may paste into psql."""
    return "'" + text.replace("'", "''") + "'"

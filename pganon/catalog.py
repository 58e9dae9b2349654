"""The catalog from Python: thin calls of the SQL API, and `apply` for a declarative file.

Every function here calls the SQL function of the same name, so the rules live once, in SQL.
"""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import yaml

from .connection import resolve_relation
from .errors import PganonError, from_db_error

TOP_KEYS = {"dataset", "source", "key_column", "person_column", "attributes", "security_levels", "level_l",
            "dependencies", "external_factor", "delta", "zeta", "hierarchies", "semantic_rules", "policy"}
ATTR_KEYS = {"column", "role", "kind"}


def _call(conn: psycopg.Connection, query: str, args: tuple):
    try:
        cur = conn.execute(query, args)
        return cur.fetchall() if cur.description else []
    except psycopg.Error as exc:
        err = from_db_error(exc)
        if err:
            raise err from None
        raise


def register_dataset(conn, name: str, source: str, key_column: str, person_column: str | None = None) -> int:
    try:
        return _call(conn, "SELECT pganon.register_dataset(%s, %s::regclass, %s, %s)",
                     (name, resolve_relation(conn, source), key_column, person_column))[0][0]
    except psycopg.errors.UndefinedTable:
        raise PganonError(f'table "{source}" does not exist', sqlstate="PA001",
                          hint="create or load it first (e.g. `pganon dataset load adult`)") from None


def set_attribute(conn, dataset: str, column: str, role: str, kind: str | None = None) -> None:
    _call(conn, "SELECT pganon.set_attribute(%s, %s, %s, %s)", (dataset, column, role, kind))


def set_security_level(conn, dataset: str, column: str, value: str, level: int) -> None:
    _call(conn, "SELECT pganon.set_security_level(%s, %s, %s, %s)", (dataset, column, value, level))


def set_level_l(conn, dataset: str, level: int, l: int) -> None:
    _call(conn, "SELECT pganon.set_level_l(%s, %s, %s)", (dataset, level, l))


def set_policy(conn, dataset: str, policy: dict) -> None:
    """The risk thresholds `pganon.promote` enforces for the dataset (replaces the whole policy)."""
    _call(conn, "SELECT pganon.set_policy(%s, %s::jsonb)", (dataset, json.dumps(policy)))


def policy(conn, dataset: str) -> dict:
    rows = _call(conn, "SELECT policy FROM pganon.dataset WHERE name = %s", (dataset,))
    if not rows:
        raise PganonError(f"dataset {dataset!r} is not registered", sqlstate="PA001")
    return rows[0][0]


def set_dependency(conn, dataset: str, column: str, identified_by: list[str]) -> None:
    _call(conn, "SELECT pganon.set_dependency(%s, %s, %s::text[])", (dataset, column, list(identified_by)))


def set_external_factor(conn, dataset: str, column: str, chi: float | None) -> None:
    _call(conn, "SELECT pganon.set_external_factor(%s, %s, %s)", (dataset, column, chi))


def set_delta(conn, dataset: str, column: str | None) -> None:
    _call(conn, "SELECT pganon.set_delta(%s, %s)", (dataset, column))


def set_zeta(conn, dataset: str, columns: list[str] | None) -> None:
    _call(conn, "SELECT pganon.set_zeta(%s, %s::text[])", (dataset, columns))


def set_semantic_rule(conn, dataset: str, rule_id: str, column: str, predicate: str, values: list,
                      category: str) -> None:
    _call(conn, "SELECT pganon.set_semantic_rule(%s, %s, %s, %s, %s::text[], %s)",
          (dataset, rule_id, column, predicate, [str(v) for v in values], category))


def drop_semantic_rule(conn, dataset: str, rule_id: str) -> None:
    _call(conn, "SELECT pganon.drop_semantic_rule(%s, %s)", (dataset, rule_id))


def semantic_rules(conn, dataset: str | None = None) -> list[tuple]:
    return _call(conn, "SELECT dataset, rule_id, column_name, predicate, vals, category FROM pganon.semantic_rules "
                 "WHERE %s::text IS NULL OR dataset = %s", (dataset, dataset))


def _apply_semantic_rules(conn, name: str, entries) -> int:
    """`semantic_rules:` a list of {id, column, predicate, values, category}."""
    if not isinstance(entries, list):
        raise PganonError("semantic_rules must be a list of {id, column, predicate, values, category}")
    for e in entries:
        missing = [k for k in ("id", "column", "predicate", "values", "category") if not isinstance(e, dict) or k not in e]
        if missing:
            raise PganonError(f"semantic rule {e.get('id') if isinstance(e, dict) else e!r} lacks {missing}")
        vals = e["values"] if isinstance(e["values"], list) else [e["values"]]
        set_semantic_rule(conn, name, str(e["id"]), e["column"], e["predicate"], vals, e["category"])
    return len(entries)


def set_hierarchy(conn, dataset: str, column: str, csv: str, sep: str = ";") -> dict:
    return _call(conn, "SELECT pganon.set_hierarchy(%s, %s, %s, %s)", (dataset, column, csv, sep))[0][0]


def build_hierarchy(conn, dataset: str, column: str, builder: str, params: dict | None = None) -> dict:
    return _call(conn, "SELECT pganon.build_hierarchy(%s, %s, %s, %s::jsonb)",
                 (dataset, column, builder, json.dumps(params or {})))[0][0]


def hierarchy_csv(conn, dataset: str, column: str, sep: str = ";") -> str:
    return _call(conn, "SELECT pganon.hierarchy_csv(%s, %s, %s)", (dataset, column, sep))[0][0]


def drop_hierarchy(conn, dataset: str, column: str) -> None:
    _call(conn, "SELECT pganon.drop_hierarchy(%s, %s)", (dataset, column))


def hierarchies(conn, dataset: str | None = None) -> list[tuple]:
    return _call(conn, "SELECT dataset, column_name, origin, height, leaves, nodes FROM pganon.hierarchies "
                       "WHERE %s::text IS NULL OR dataset = %s ORDER BY 1, 2", (dataset, dataset))


def check(conn, relation: str, qis: list[str], sas: list[str], model: str, params: dict | None = None) -> dict:
    """pganon.check: the achieved value of a privacy model on any table or view."""
    return _call(conn, "SELECT pganon.check(%s::regclass, %s, %s, %s, %s::jsonb)",
                 (resolve_relation(conn, relation), qis, sas, model, json.dumps(params or {})))[0][0]


def _apply_hierarchies(conn, name: str, entries, base: Path) -> int:
    """`hierarchies:` maps a column to {file: CSV path relative to the spec file[, sep]} or to
    {builder: intervals | dates | redaction[, params: {...}]}."""
    if not isinstance(entries, dict):
        raise PganonError("hierarchies must map a column to {file: ...} or {builder: ...}")
    for column, h in entries.items():
        if isinstance(h, str):
            h = {"file": h}
        if not isinstance(h, dict) or ("file" in h) == ("builder" in h):
            raise PganonError(f"hierarchies.{column} needs exactly one of 'file' or 'builder'")
        if "file" in h:
            path = base / h["file"]
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise PganonError(f"hierarchies.{column}: cannot read {path}: {exc.strerror}") from None
            set_hierarchy(conn, name, column, text, h.get("sep", ";"))
        else:
            build_hierarchy(conn, name, column, h["builder"], h.get("params"))
    return len(entries)


def drop_dataset(conn, dataset: str) -> None:
    _call(conn, "SELECT pganon.drop_dataset(%s)", (dataset,))


def read_spec(path: str | Path) -> dict:
    """Read a declarative dataset file (YAML or JSON) and check its shape."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PganonError(f"cannot read {path}: {exc.strerror}") from None
    try:
        spec = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise PganonError(f"{path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from None
    if not isinstance(spec, dict):
        raise PganonError(f"{path}: expected a mapping at the top level")
    extra = set(spec) - TOP_KEYS
    if extra:
        raise PganonError(f"{path}: unknown keys {sorted(extra)}", hint=f"allowed: {sorted(TOP_KEYS)}")
    for key in ("dataset", "source", "key_column"):
        if not spec.get(key):
            raise PganonError(f"{path}: '{key}' is required")
    for i, attr in enumerate(spec.get("attributes") or []):
        if not isinstance(attr, dict) or "column" not in attr or "role" not in attr:
            raise PganonError(f"{path}: attribute #{i + 1} needs 'column' and 'role'")
        if set(attr) - ATTR_KEYS:
            raise PganonError(f"{path}: attribute {attr['column']!r} has unknown keys {sorted(set(attr) - ATTR_KEYS)}")
    return spec


def apply(conn: psycopg.Connection, path: str | Path, source: str | None = None) -> dict:
    """Declare a dataset from a file in one transaction: all of it, or nothing."""
    spec = read_spec(path)
    name = spec["dataset"]
    with conn.transaction():
        register_dataset(conn, name, source or spec["source"], spec["key_column"], spec.get("person_column"))
        # Re-applying replaces the declaration: levels and attributes not in the file are removed.
        _call(conn, "DELETE FROM pganon.attribute WHERE dataset_id = pganon._dataset_id(%s)", (name,))
        _call(conn, "DELETE FROM pganon.level_l WHERE dataset_id = pganon._dataset_id(%s)", (name,))
        level_l = {int(k): int(v) for k, v in (spec.get("level_l") or {0: 1, 1: 2, 2: 3}).items()}
        for level in sorted(level_l):  # ascending, so the monotonicity check sees each prefix
            set_level_l(conn, name, level, level_l[level])
        for attr in spec.get("attributes") or []:
            set_attribute(conn, name, attr["column"], attr["role"], attr.get("kind"))
        n_levels = 0
        for column, by_level in (spec.get("security_levels") or {}).items():
            if not isinstance(by_level, dict):
                raise PganonError(f"security_levels.{column} must map a level to a list of values")
            for level, values in by_level.items():
                for value in values or []:
                    set_security_level(conn, name, column, str(value), int(level))
                    n_levels += 1
        _call(conn, "DELETE FROM pganon.sa_linking WHERE dataset_id = pganon._dataset_id(%s)", (name,))
        deps = spec.get("dependencies") or {}
        if not isinstance(deps, dict):
            raise PganonError("dependencies must map a sensitive attribute to the list of SAs that identify it")
        for column, by in deps.items():
            set_dependency(conn, name, column, [by] if isinstance(by, str) else list(by or []))
        for column, chi in (spec.get("external_factor") or {}).items():
            set_external_factor(conn, name, column, chi)
        if spec.get("delta"):
            set_delta(conn, name, spec["delta"])
        if spec.get("zeta") is not None:
            set_zeta(conn, name, list(spec["zeta"]))
        n_hier = _apply_hierarchies(conn, name, spec.get("hierarchies") or {}, Path(path).parent)
        _call(conn, "DELETE FROM pganon.semantic_rule WHERE dataset_id = pganon._dataset_id(%s)", (name,))
        n_rules = _apply_semantic_rules(conn, name, spec.get("semantic_rules") or [])
        policy = spec.get("policy") or {}
        if not isinstance(policy, dict):
            raise PganonError("policy must map risk measures to thresholds (numbers in [0, 1] or null)")
        set_policy(conn, name, policy)
    return {"dataset": name, "attributes": len(spec.get("attributes") or []), "security_levels": n_levels,
            "level_l": level_l, "dependencies": len(deps), "hierarchies": n_hier, "semantic_rules": n_rules,
            "policy": policy}

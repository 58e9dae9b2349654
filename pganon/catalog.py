"""The catalog from Python: thin calls of the SQL API, and `apply` for a declarative file.

Every function here calls the SQL function of the same name, so the rules live once, in SQL.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

import psycopg

from . import declaration
from .connection import resolve_relation
from .errors import PganonError, from_db_error


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


def set_security_level(conn, dataset: str, column: str, value: str, level: int, force: bool = False) -> None:
    """A value the column does not hold is refused (PA002, naming the nearest ones) unless `force`."""
    _call(conn, "SELECT pganon.set_security_level(%s, %s, %s, %s, force => %s)",
          (dataset, column, value, level, bool(force)))


def set_default_level(conn, dataset: str, column: str, level: int | None) -> None:
    """The level of the SA's values that have none of their own; None: the highest level."""
    _call(conn, "SELECT pganon.set_default_level(%s, %s, %s)", (dataset, column, level))


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


def set_external_factor(conn, dataset: str, column: str, chi: float | Decimal | str | None) -> None:
    """chi is sent as numeric: a Python float would be sent as float8, for which PostgreSQL finds
    no pganon.set_external_factor(..., numeric) (issue 13)."""
    if chi is not None:
        if isinstance(chi, bool):
            raise PganonError(f"chi must be a number, not {chi}", sqlstate="PA002")
        try:
            chi = Decimal(str(chi))
        except ArithmeticError:
            raise PganonError(f"chi must be a number, not {chi!r}", sqlstate="PA002") from None
        if not chi.is_finite():
            raise PganonError(f"chi must be a finite number, not {chi}", sqlstate="PA002")
    _call(conn, "SELECT pganon.set_external_factor(%s, %s, %s::numeric)", (dataset, column, chi))


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


def drop_dataset(conn, dataset: str) -> None:
    _call(conn, "SELECT pganon.drop_dataset(%s)", (dataset,))


def read_spec(path: str | Path) -> dict:
    """Read a declaration file (YAML or JSON) and check it against `declaration.SCHEMA`: every
    problem with its line, before anything is written; values stay the text written."""
    return declaration.read(path)


@contextmanager
def _at(path, lines: dict, *loc):
    """Errors the database raises while applying one entry of the file name its line."""
    try:
        yield
    except PganonError as exc:
        line = lines.get(loc)
        exc.args = (f"{path}:{line}: {exc.args[0]}" if line else f"{path}: {exc.args[0]}",) + exc.args[1:]
        raise


def apply(conn: psycopg.Connection, path: str | Path, source: str | None = None, force: bool = False) -> dict:
    """Declare a dataset from a file in one transaction: all of it, or nothing. `force` (or
    `force: true` in the file) accepts security levels for values the column does not hold."""
    spec, lines = declaration.read_located(path)
    name = spec["dataset"]
    force = bool(force or spec.get("force"))
    with conn.transaction():
        with _at(path, lines, "dataset"):
            register_dataset(conn, name, source or spec["source"], spec["key_column"], spec.get("person_column"))
        # Re-applying replaces the declaration: levels and attributes not in the file are removed.
        _call(conn, "DELETE FROM pganon.attribute WHERE dataset_id = pganon._dataset_id(%s)", (name,))
        _call(conn, "DELETE FROM pganon.level_l WHERE dataset_id = pganon._dataset_id(%s)", (name,))
        level_l = spec.get("level_l") or dict(declaration.DEFAULT_LEVEL_L)
        for level in sorted(level_l):  # ascending, so the monotonicity check sees each prefix
            with _at(path, lines, "level_l", level):
                set_level_l(conn, name, level, level_l[level])
        attributes = spec.get("attributes") or []
        for i, attr in enumerate(attributes):
            with _at(path, lines, "attributes", i):
                set_attribute(conn, name, attr["column"], attr["role"], attr.get("kind"))
        for i, attr in enumerate(attributes):
            if attr.get("default_level") is not None:
                with _at(path, lines, "attributes", i, "default_level"):
                    set_default_level(conn, name, attr["column"], attr["default_level"])
        n_levels = 0
        for column, by_level in (spec.get("security_levels") or {}).items():
            for level, values in by_level.items():
                for j, value in enumerate(values or []):
                    with _at(path, lines, "security_levels", column, level, j):
                        set_security_level(conn, name, column, value, level, force=force)
                    n_levels += 1
        _call(conn, "DELETE FROM pganon.sa_linking WHERE dataset_id = pganon._dataset_id(%s)", (name,))
        deps = spec.get("dependencies") or {}
        for column, by in deps.items():
            with _at(path, lines, "dependencies", column):
                set_dependency(conn, name, column, by or [])
        for column, chi in (spec.get("external_factor") or {}).items():
            with _at(path, lines, "external_factor", column):
                set_external_factor(conn, name, column, chi)
        if spec.get("delta"):
            with _at(path, lines, "delta"):
                set_delta(conn, name, spec["delta"])
        if spec.get("zeta") is not None:
            with _at(path, lines, "zeta"):
                set_zeta(conn, name, spec["zeta"])
        hierarchies = spec.get("hierarchies") or {}
        for column, h in hierarchies.items():
            with _at(path, lines, "hierarchies", column):
                if "file" in h:
                    csv = Path(path).parent / h["file"]
                    try:
                        text = csv.read_text(encoding="utf-8")
                    except (OSError, UnicodeDecodeError) as exc:
                        raise PganonError(f"hierarchies: {column}: cannot read {csv}: {exc}",
                                          sqlstate="PA001") from None
                    set_hierarchy(conn, name, column, text, h["sep"])
                else:
                    build_hierarchy(conn, name, column, h["builder"], h["params"])
        _call(conn, "DELETE FROM pganon.semantic_rule WHERE dataset_id = pganon._dataset_id(%s)", (name,))
        rules = spec.get("semantic_rules") or []
        for i, r in enumerate(rules):
            with _at(path, lines, "semantic_rules", i):
                set_semantic_rule(conn, name, r["id"], r["column"], r["predicate"], r["values"], r["category"])
        policy = {k: None if v is None else float(v) for k, v in (spec.get("policy") or {}).items()}
        with _at(path, lines, "policy"):
            set_policy(conn, name, policy)
    return {"dataset": name, "attributes": len(attributes), "security_levels": n_levels,
            "level_l": level_l, "dependencies": len(deps), "hierarchies": len(hierarchies),
            "semantic_rules": len(rules), "policy": policy}

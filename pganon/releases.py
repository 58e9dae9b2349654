"""Releases from Python: publish, verify, list, summarize and read the stable views."""

from __future__ import annotations

import json

import psycopg
from psycopg import sql

from .errors import PganonError, from_db_error


def _translate(exc: psycopg.Error):
    err = from_db_error(exc)
    return err if err else exc


def publish(conn: psycopg.Connection, dataset: str, method: str, params: dict | None = None,
            on_notice=None, promote: bool = False) -> int:
    """Publish a candidate release (one transaction), and promote it in the same transaction
    when asked; returns its id. `on_notice` receives progress lines."""
    handler = (lambda diag: on_notice(diag.message_primary)) if on_notice else None
    if handler:
        conn.add_notice_handler(handler)
        conn.execute("SET pganon.progress = on")
    try:
        return conn.execute("SELECT pganon.publish(%s, %s, %s::jsonb, %s)",
                            (dataset, method, json.dumps(params or {}), promote)).fetchone()[0]
    except psycopg.Error as exc:
        raise _translate(exc) from None
    finally:
        if handler:
            conn.remove_notice_handler(handler)
            if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                conn.execute("RESET pganon.progress")


def promote(conn: psycopg.Connection, release: int) -> int:
    """Make a release its dataset's current release (refused with PolicyRefused when it breaks
    the dataset's policy)."""
    try:
        return conn.execute("SELECT pganon.promote(%s)", (release,)).fetchone()[0]
    except psycopg.Error as exc:
        raise _translate(exc) from None


def risk(conn: psycopg.Connection, release: int) -> list[dict]:
    """The release's risk figures with their thresholds, one dict per measure and scope."""
    try:
        cur = conn.execute("SELECT * FROM pganon.risk(%s)", (release,))
    except psycopg.Error as exc:
        raise _translate(exc) from None
    names = [c.name for c in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def verify(conn: psycopg.Connection, release: int) -> list[dict]:
    try:
        rows = conn.execute('SELECT "check", passed, detail FROM pganon.verify(%s)', (release,)).fetchall()
    except psycopg.Error as exc:
        raise _translate(exc) from None
    return [{"check": c, "passed": p, "detail": d} for c, p, d in rows]


def get(conn: psycopg.Connection, release: int | None = None, dataset: str | None = None) -> dict:
    """One release as a dict: by id, or the current release of a dataset."""
    if release is None and dataset is None:
        raise PganonError("give a release id or a dataset name")
    if release is not None:
        cur = conn.execute("SELECT * FROM pganon.releases WHERE id = %s", (release,))
    else:
        cur = conn.execute("SELECT * FROM pganon.releases WHERE dataset = %s AND is_current", (dataset,))
    row = cur.fetchone()
    if row is None:
        what = f"release {release}" if release is not None else f"current release of dataset {dataset!r}"
        raise PganonError(f"there is no {what}", sqlstate="PA001",
                          hint="list them with `pganon releases`; a candidate is named by its id")
    return dict(zip([c.name for c in cur.description], row))


def list_releases(conn: psycopg.Connection, dataset: str | None = None) -> list[dict]:
    cur = conn.execute("SELECT * FROM pganon.releases WHERE %s::text IS NULL OR dataset = %s ORDER BY id",
                       (dataset, dataset))
    names = [c.name for c in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def summary(rel: dict) -> dict:
    """The numbers a DBA looks at first."""
    m = rel["metrics"] or {}
    out = {
        "release": rel["id"], "dataset": rel["dataset"], "method": rel["method"],
        "groups": rel["groups"], "published": rel["published_rows"], "suppressed": rel["suppressed_rows"],
        "AIL": m.get("ail"), "SR": m.get("sr"), "NCP%": m.get("ncp_percent"),
        "query error": (m.get("query_error") or {}).get("mean"),
        "vulnerable": (m.get("audit") or {}).get("n_vulnerable_correct"),
        "seconds": float(rel["seconds"] or 0),
    }
    out["status"], out["risk failures"] = rel.get("status"), rel.get("risk_failures")
    if "nloss" in m:  # person-aware releases (danonyir, geneir): information loss and the vulnerable share
        out = {**{k: v for k, v in out.items() if k not in ("AIL", "SR", "seconds")},
               "NLoss": m["nloss"], "v": m.get("v"), "seconds": out["seconds"]}
    if "dm" in m:  # generalized releases: discernibility and average class size over k
        out = {**{k: v for k, v in out.items() if k not in ("AIL", "SR", "vulnerable", "seconds")},
               "DM": m["dm"], "C_avg": m.get("c_avg"), "seconds": out["seconds"]}
    return out


VIEWS = ("gt", "st", "st_long", "promise")


def views(conn: psycopg.Connection, dataset: str) -> list[str]:
    """The release views analysts can read for a dataset (gt, st, st_long, promise), in that order."""
    have = [w for w in VIEWS if conn.execute("SELECT pg_catalog.to_regclass(%s::pg_catalog.text) IS NOT NULL", (
        sql.Identifier("pganon_release", f"{dataset}_{w}").as_string(conn),)).fetchone()[0]]
    if not have:
        raise PganonError(f"dataset {dataset!r} has no current release", sqlstate="PA001",
                          hint="publish one with `pganon publish`, then `pganon promote RELEASE`")
    return have


def view_rows(conn: psycopg.Connection, dataset: str, which: str, limit: int = 10):
    """The first rows of pganon_release.<dataset>_<which>, as (column names, rows)."""
    if which not in VIEWS:
        raise PganonError(f"which must be one of {', '.join(VIEWS)}")
    ident = sql.Identifier("pganon_release", f"{dataset}_{which}")
    try:
        cur = conn.execute(sql.SQL("SELECT * FROM {} ORDER BY 1 LIMIT %s").format(ident), (limit,))
    except psycopg.errors.UndefinedTable:
        raise PganonError(f"dataset {dataset!r} has no current release", sqlstate="PA001",
                          hint="publish one with `pganon publish`, then `pganon promote RELEASE`") from None
    return [c.name for c in cur.description], cur.fetchall()

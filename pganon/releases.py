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


def confidence(risk_rows: list[dict]) -> dict:
    """Per attribute, the attacker's confidence as pganon.risk measured it: {attribute: {"mean",
    "max", "baseline"}} (max over the attribute's security levels; baseline: the share of its most
    common value, what an attacker guesses with no release). The reports draw these, not a second
    estimate of their own."""
    out: dict = {}
    for r in risk_rows:
        key = {"attacker_confidence_mean": "mean", "attacker_confidence_max": "max",
               "baseline_confidence": "baseline"}.get(r["measure"])
        if key is None or r["value"] is None:
            continue
        a = out.setdefault(r["scope"].split(" level ")[0], {})
        a[key] = max(a.get(key, r["value"]), r["value"])
    return out


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
        cur = conn.execute(_WITH_HEADLINE + " WHERE r.id = %s", (release,))
    else:
        cur = conn.execute(_WITH_HEADLINE + " WHERE r.dataset = %s AND r.is_current", (dataset,))
    row = cur.fetchone()
    if row is None:
        what = f"release {release}" if release is not None else f"current release of dataset {dataset!r}"
        raise PganonError(f"there is no {what}", sqlstate="PA001",
                          hint="list them with `pganon releases`; a candidate is named by its id")
    out = dict(zip([c.name for c in cur.description], row))
    out["headline"] = typed(out["headline"])
    return out


def list_releases(conn: psycopg.Connection, dataset: str | None = None) -> list[dict]:
    cur = conn.execute(_WITH_HEADLINE + " WHERE %s::text IS NULL OR r.dataset = %s ORDER BY r.id",
                       (dataset, dataset))
    names = [c.name for c in cur.description]
    out = [dict(zip(names, r)) for r in cur.fetchall()]
    for r in out:
        r["headline"] = typed(r["headline"])
    return out


# The headline numbers, one definition each (issue 13): summary key -> (column of the view
# pganon.release_metrics, label in the reports, what it means). The CLI, `pganon report` and
# `pganon compare` all take these numbers from that view and their wording from here.
METRICS = {
    "groups": ("groups", "groups", "Groups (equivalence classes, QI groups, buckets) the release publishes."),
    "published": ("published_rows", "published rows", "Source rows the release publishes."),
    "suppressed": ("suppressed_rows", "suppressed rows", "Source rows left out of the release."),
    "suppressed %": ("suppressed_percent", "suppressed %", "Suppressed rows as a percentage of the source rows."),
    "NCP%": ("ncp_percent", "NCP %",
             "Normalized certainty penalty of the quasi-identifier cells as published, mean over records and "
             "QIs: a range's width over the column's, a value set's size over the column's distinct values, "
             "0 for one value, 100 for a suppressed cell. 0 means every QI is published exactly (shown as "
             "\"exact\"): the release protects by breaking the link to the sensitive values, not by coarsening "
             "the QIs."),
    "group NCP%": ("group_ncp_percent", "group NCP %",
                   "Bucketization releases: the NCP their groups' QI values would have if each group published "
                   "its QI ranges (Khan et al. 2020, section 6.1.1, Eq. 6), a measure of how far apart the records that share a "
                   "group's sensitive values are."),
    "query error": ("query_error", "query error",
                    "Mean relative error of the release's own seeded COUNT queries on the QIs at selectivity "
                    "theta (the publish parameters queries, theta, seed), estimated uniformly within the published "
                    "cells (Khan et al. 2020, section 6.1.2); 0 when the QIs are published exactly. Publish runs "
                    "these queries only when its parameters ask (queries > 0); otherwise the figure is not "
                    "measured (empty), and pganon.query_error(release) measures it on demand."),
    "AIL": ("ail", "AIL", "Average information loss of the security-level groups (Xiao & Li 2020, Definition 14)."),
    "SR": ("sr", "SR", "Suppression ratio: suppressed rows over source rows (Xiao & Li 2020, Definition 15)."),
    "DM": ("dm", "DM", "Discernibility metric: the sum of the squared class sizes."),
    "C_avg": ("c_avg", "C_avg", "Average class size over k."),
    "NLoss": ("nloss", "NLoss", "Information loss of the person-level release (Wang et al. 2019, section 4.1)."),
    "v": ("v", "v", "Share of persons the release's model counts as vulnerable."),
    "vulnerable": ("vulnerable", "vulnerable records",
                   "Records whose sensitive value the fingerprint-correlation attack recovers (GT/ST releases "
                   "with bucket links)."),
    "prosecutor risk": ("prosecutor_risk_max", "identity risk",
                        "Worst prosecutor risk: 1 over the size of the smallest class a record can be matched "
                        "to from its QIs (pganon.risk prosecutor_risk_max)."),
    "attacker confidence": ("attacker_confidence_max", "attacker confidence",
                            "Worst-case confidence an attacker who knows a person's QIs has in that person's "
                            "sensitive value, over every sensitive attribute and scope (pganon.risk "
                            "attacker_confidence_max)."),
    "risk failures": ("risk_failures", "policy failures", "Risk figures that break the dataset's policy."),
    "seconds": ("seconds", "seconds", "Time pganon.publish spent in its phases, verification included."),
}

# Release families pganon.query_error measures on demand (a person-level release's query error
# counts persons' records and is measured by publish alone; rating publishes no QI cells).
QUERY_ERROR_FAMILIES = ("generalized", "linked", "bucketization")

# Shown by `pganon releases` and `pganon publish` whatever the family (others only when set).
_ALWAYS = ("groups", "published", "suppressed", "NCP%", "query error", "seconds")

_WITH_HEADLINE = ("SELECT r.*, pg_catalog.to_jsonb(m) AS headline FROM pganon.releases r "
                  "JOIN pganon.release_metrics m ON m.release = r.id")


# Columns of pganon.release_metrics that count things; every other number is a float8 (JSON
# turns 0.0 into 0: `typed` turns it back, so the CLI and --format json print a float as one).
_COUNTS = {"release", "source_rows", "published_rows", "suppressed_rows", "groups", "vulnerable", "risk_failures"}


def typed(h: dict) -> dict:
    """A row of pganon.release_metrics read through to_jsonb, with its float8 columns as floats."""
    return {k: float(v) if isinstance(v, int) and not isinstance(v, bool) and k not in _COUNTS else v
            for k, v in h.items()}


def headline(rel: dict) -> dict:
    """The release's row of pganon.release_metrics, from a dict `get`/`list_releases` returned."""
    if "headline" not in rel:
        raise PganonError("this release dict has no headline numbers: read it with releases.get or list_releases")
    return rel["headline"]


def summary(rel: dict) -> dict:
    """The numbers a DBA looks at first, from pganon.release_metrics (the definition every
    report shares): keys of METRICS, those that do not apply to the release's family left out."""
    h = headline(rel)
    out = {"release": rel["id"], "dataset": rel["dataset"], "method": rel["method"], "status": rel.get("status")}
    for key, (col, _, _) in METRICS.items():
        v = h.get(col)
        if v is not None or key in _ALWAYS:
            out[key] = v
    out["seconds"] = float(out["seconds"] or 0)
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

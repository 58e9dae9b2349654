"""`pganon compare DATASET`: several methods on the same snapshot, side by side.

Every release is published and measured inside one transaction that is rolled back at the end,
so a comparison leaves nothing behind: no release rows, no relations, and the stable views
analysts read still point where they pointed.  Each publish runs under its own savepoint, so a
method that cannot meet a setting (an unsatisfiable k, too few categories) is reported as
failed there and the rest goes on.  The source keeps its SHARE lock (taken by the first
publish) until the end: writers wait for the comparison.

Settings (the middle value of each list is the default setting of the other sweeps):
  k sweep      methods that take k: each k at the default l
  l sweep      methods that take l (or c, p, SC): each l at the default k
  rows         time against rows: the first fraction * n rows by key (`limit`), default setting
  SAs          time against the number of sensitive attributes (the first d declared)
  thetas       the shared workload's selectivities (`pganon.compare`)
Releases of the k and l sweeps are measured by `pganon.compare` (KL, ARE per theta, class
sizes) one at a time, so progress can count them; NCP, DM, suppression, seconds and the attacker's
confidence are the release's own headline numbers (pganon.release_metrics, pganon.risk), the
same every other report shows. The rows and SA runs record seconds only, next to the seconds of
a plain CREATE TABLE AS of the same rows and columns.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import psycopg

from . import releases
from .errors import PganonError

# How each method reads the sweep's k and l (None: the method does not take it).
K_PARAM = {"gaa": "k", "mondrian": "k", "ck_anonymization": "k", "pk_angelization": "k",
           "one_m_generalization": "k", "danonyir": "k", "geneir": "k", "semantic": "k"}
L_PARAM = {"mbf": "l", "msdcf": "l", "mmdcf": "l", "anatomy": "l", "rating": "sc", "semantic": "l",
           "one_m_generalization": "l", "danonyir": "l", "geneir": "l"}
# Fixed parameters a method needs besides k and l.
# (c,k) on real tables often needs more than c_f records of a common delta value in a bucket: the
# comparison asks for that relaxation explicitly, so the release says so in its promise.
BASE_PARAMS = {"ck_anonymization": {"c": 2, "c_f": 2, "c_f_excess": "allow"}, "pk_angelization": {"p": 2},
               "danonyir": {"model": "kl"}, "geneir": {"model": "kl"},
               # a comparison wants a release: suppress what Anatomy / Rating cannot group (reported)
               "anatomy": {"eligibility": "suppress"}, "rating": {"eligibility": "suppress"}}
# Methods that need at least two SAs (the SA sweep starts there for them).
MIN_SAS = {"ck_anonymization": 2, "pk_angelization": 2}
# Methods that publish one sensitive attribute only, and those without `limit`.
ONE_SA = {"danonyir", "geneir", "one_m_generalization"}
NO_LIMIT = {"danonyir", "geneir", "one_m_generalization"}
# Methods without a query workload of their own (nothing to switch off).
NO_WORKLOAD = {"one_m_generalization"}
DEFAULT_METHODS = ["mmdcf_mslf", "anatomy", "rating", "mondrian", "gaa", "semantic", "ck_anonymization"]


@dataclass
class Settings:
    methods: list
    ks: list = field(default_factory=lambda: [5, 10, 20])
    ls: list = field(default_factory=lambda: [2, 3, 4])
    thetas: list = field(default_factory=lambda: [0.05, 0.1, 0.2])
    fractions: list = field(default_factory=lambda: [0.25, 0.5])
    sa_counts: list | None = None   # None: 1 .. number of SAs
    queries: int = 1000
    seed: int = 0
    extra: dict = field(default_factory=dict)   # method (or label) -> extra params
    aliases: dict = field(default_factory=dict)  # label -> method, to run one method twice

    def method(self, label: str) -> str:
        return self.aliases.get(label, label)

    k_default: int | None = None  # the default setting (None: the middle value of the sweep)
    l_default: int | None = None

    @property
    def k0(self):
        return self.k_default if self.k_default is not None else sorted(self.ks)[len(self.ks) // 2]

    @property
    def l0(self):
        return self.l_default if self.l_default is not None else sorted(self.ls)[len(self.ls) // 2]


def params_for(label: str, k: int, l: int, s: Settings, info: dict | None = None, **more) -> dict:
    """A method's parameters at (k, l). Rating's SC is l for every attribute, capped where the
    attribute could not be grouped without suppression: SC_i <= n / (its most frequent value's
    rows), so a skewed or binary attribute is published ungrouped (SC 1) rather than losing
    rows for every other attribute (Rating suppresses whole tuples)."""
    method = s.method(label)
    p = dict(BASE_PARAMS.get(method, {}))
    if method in K_PARAM:
        p[K_PARAM[method]] = k
    if method in L_PARAM:
        p[L_PARAM[method]] = l
    if method == "rating" and info:
        published = info["qis"] + list(more.get("sensitive") or info["sas"])
        p["sc"] = {a: max(1, min(l, info["rows"] // max(info["top"][a], 1))) for a in published}
    p.update(s.extra.get(method, {}) if label == method else {})
    p.update(s.extra.get(label, {}))
    p.update(more)
    if method not in NO_WORKLOAD:
        p.setdefault("queries", 0)  # the shared workload measures every release the same way
    return p


def dataset_info(conn, dataset: str) -> dict:
    rows = conn.execute("SELECT column_name, role, kind FROM pganon.attributes WHERE dataset = %s "
                        "ORDER BY position", (dataset,)).fetchall()
    if not rows:
        raise PganonError(f'dataset "{dataset}" is not registered', sqlstate="PA001",
                          hint="register it with pganon.register_dataset or load one with `pganon dataset load`")
    src = conn.execute("SELECT source::regclass::text, key_column, person_column FROM pganon.dataset WHERE name = %s",
                       (dataset,)).fetchone()
    from psycopg import sql
    qis, sas = [c for c, r, _ in rows if r == "quasi"], [c for c, r, _ in rows if r == "sensitive"]
    n = conn.execute(sql.SQL("SELECT pg_catalog.count(*) FROM {}").format(sql.SQL(src[0]))).fetchone()[0]
    top = {c: conn.execute(sql.SQL("SELECT coalesce(pg_catalog.max(n), 0) FROM (SELECT pg_catalog.count(*) AS n FROM {} GROUP BY {}) x")
                           .format(sql.SQL(src[0]), sql.Identifier(c))).fetchone()[0] for c in qis + sas}
    return {"dataset": dataset, "source": src[0], "key": src[1], "person": src[2], "rows": n,
            "qis": qis, "sas": sas, "top": top}


def _publish(conn, dataset, method, params, progress):
    """Publish under a savepoint: (release id, wall seconds) or (None, error text)."""
    t0 = time.perf_counter()
    try:
        with conn.transaction():
            rid = releases.publish(conn, dataset, method, params)
        return rid, time.perf_counter() - t0
    except (PganonError, psycopg.Error) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if progress:
            progress(f"  failed: {text}")
        return None, text


def _ctas_seconds(conn, info, cols, limit=None):
    """Seconds of CREATE TABLE AS of the same columns (the reference for time ratios)."""
    from psycopg import sql
    src = sql.SQL(info["source"])
    sel = sql.SQL(", ").join(sql.Identifier(c) for c in cols)
    q = sql.SQL("CREATE TEMP TABLE _pganon_cmp_ctas AS SELECT {} FROM {}").format(sel, src)
    if limit:
        q = sql.SQL("CREATE TEMP TABLE _pganon_cmp_ctas AS SELECT {} FROM {} ORDER BY {} LIMIT {}").format(
            sel, src, sql.Identifier(info["key"]), sql.Literal(int(limit)))
    with conn.transaction():
        t0 = time.perf_counter()
        conn.execute(q)
        dt = time.perf_counter() - t0
        conn.execute("DROP TABLE _pganon_cmp_ctas")
    return dt


def _plan(info: dict, settings: Settings) -> list[dict]:
    """Every publish of a comparison, in order, so progress can say n of N: the k and l sweeps,
    then the rows runs at each fraction, then the SA runs (the full count and a one-SA method at
    one SA reuse the default run: no publish)."""
    k0, l0, sas, plan = settings.k0, settings.l0, info["sas"], []
    for label in settings.methods:
        method = settings.method(label)
        steps = []
        if method in K_PARAM:
            steps += [("k", k, l0) for k in settings.ks]
        if method in L_PARAM:
            steps += [("l", k0, l) for l in settings.ls if not (method in K_PARAM and l == l0)]
        for sweep, k, l in steps or [("fixed", k0, l0)]:
            plan.append({"axis": "sweep", "method": label, "sweep": sweep, "k": k, "l": l,
                         "params": params_for(label, k, l, settings, info,
                                              **({"sensitive": sas[:1]} if method in ONE_SA else {}))})
    for f in sorted(settings.fractions):
        if not 0 < f < 1:
            continue
        limit = max(1, int(round(f * info["rows"])))
        for label in settings.methods:
            method = settings.method(label)
            if method not in NO_LIMIT:
                plan.append({"axis": "rows", "method": label, "x": limit,
                             "params": params_for(label, k0, l0, settings, info, limit=limit,
                                                  **({"sensitive": sas[:1]} if method in ONE_SA else {}))})
    for d in sorted(set(settings.sa_counts or range(1, len(sas) + 1))):
        if not 1 <= d <= len(sas):
            continue
        for label in settings.methods:
            method = settings.method(label)
            if (method in ONE_SA and d > 1) or d < MIN_SAS.get(method, 1):
                continue
            reuse = d == len(sas) or (method in ONE_SA and d == 1)
            plan.append({"axis": "sas", "method": label, "x": d, "reuse": reuse,
                         "params": None if reuse else params_for(label, k0, l0, settings, info, sensitive=sas[:d])})
    return plan


def _setting_text(method: str, k: int, l: int) -> str:
    """The parameters of a sweep the method takes: "k=5", "l=3", "k=5 l=3", or "default"."""
    return " ".join([f"k={k}"] * (method in K_PARAM) + [f"l={l}"] * (method in L_PARAM)) or "default"


def _measured(conn, run: dict, cmp_params: dict) -> tuple[dict, dict]:
    """pganon.compare of one release and the workload it used. The shared workload is seeded,
    so one release at a time measures exactly what all at once would, and progress can count."""
    out = conn.execute("SELECT pganon.compare(%s::bigint[], %s::jsonb)",
                       ([run["release"]], json.dumps(cmp_params))).fetchone()[0]
    return out["releases"][0], out["workload"]


def canonical(measures: dict, headline: dict, risk_rows: list[dict]) -> dict:
    """pganon.compare's measures with the figures the catalog defines taken from the catalog:
    NCP %, DM, suppression and seconds from pganon.release_metrics, the attacker's confidence
    from pganon.risk. pganon.compare estimates these its own way; a report showing both would
    give one release two numbers under one name."""
    m = dict(measures)
    m["ncp_percent"], m["dm"] = headline.get("ncp_percent"), headline.get("dm")
    m["qis_exact"] = headline.get("qis_exact")
    if headline.get("suppressed_percent") is not None:
        m["suppression"] = headline["suppressed_percent"] / 100.0
    m["seconds"] = headline.get("seconds")
    m["confidence"] = releases.confidence(risk_rows)
    return m


def run(conn: psycopg.Connection, dataset: str, settings: Settings, progress=None) -> dict:
    """Publish and measure every setting inside one transaction that is rolled back. `progress`
    receives one line per publish and per measured release, numbered n/N."""
    say = progress or (lambda m: None)
    info = dataset_info(conn, dataset)
    for m in settings.methods:
        if not isinstance(m, str) or not m:
            raise PganonError(f"bad method name {m!r}", sqlstate="PA002")
    started = time.perf_counter()
    runs, failures, scaling = [], [], []
    if not conn.autocommit:
        raise PganonError("compare needs an autocommit connection (it manages its own transaction)")
    plan = _plan(info, settings)
    total = sum(1 for p in plan if not p.get("reuse"))
    done = 0
    conn.autocommit = False
    try:
        with conn.transaction(force_rollback=True):
            k0, l0 = settings.k0, settings.l0
            all_cols = [info["key"]] + info["qis"] + info["sas"]
            copies = set()
            for step in plan:
                label, axis = step["method"], step["axis"]
                if step.get("reuse"):
                    hit = next((r for r in runs if r["method"] == label and r["default"]), None)
                    if hit:
                        scaling.append({"axis": "sas", "method": label, "x": step["x"], "release": hit["release"]})
                    continue
                if axis == "rows" and step["x"] not in copies:
                    copies.add(step["x"])
                    scaling.append({"axis": "rows", "method": "(copy: CREATE TABLE AS)", "x": step["x"],
                                    "seconds": round(_ctas_seconds(conn, info, all_cols, step["x"]), 4)})
                done += 1
                what = (_setting_text(settings.method(label), step["k"], step["l"]) if axis == "sweep" else
                        f"rows={step['x']}" if axis == "rows" else f"SAs={step['x']}")
                say(f"publish {done}/{total}: {label} {what}")
                rid, wall = _publish(conn, dataset, settings.method(label), step["params"], progress)
                if axis == "sweep":
                    row = {"method": label, "sweep": step["sweep"], "k": step["k"], "l": step["l"],
                           "params": step["params"]}
                    if rid is None:
                        failures.append({**row, "error": wall})
                        continue
                    runs.append({**row, "release": rid, "wall_seconds": round(wall, 4),
                                 "default": (step["k"] == k0 and step["l"] == l0)})
                elif rid is None:
                    failures.append({"method": label, "sweep": axis, "x": step["x"], "params": step["params"],
                                     "error": wall})
                else:
                    scaling.append({"axis": axis, "method": label, "x": step["x"], "release": rid,
                                    "wall_seconds": round(wall, 4)})
            # every row: the copy, and the default runs of the sweeps
            scaling.append({"axis": "rows", "method": "(copy: CREATE TABLE AS)", "x": info["rows"],
                            "seconds": round(_ctas_seconds(conn, info, all_cols), 4)})
            scaling += [{"axis": "rows", "method": r["method"], "x": info["rows"], "release": r["release"]}
                        for r in runs if r["default"]]
            # the headline numbers of every release made, before the rollback takes them away
            ids = [r["release"] for r in runs] + [s["release"] for s in scaling if s.get("release")]
            heads = {}
            if ids:
                cur = conn.execute("SELECT pg_catalog.to_jsonb(m) FROM pganon.release_metrics m "
                                   "WHERE m.release = ANY(%s::bigint[])", (ids,))
                heads = {h["release"]: releases.typed(h) for (h,) in cur.fetchall()}
            for s in scaling:
                if s.get("release"):
                    s["seconds"] = heads[s["release"]]["seconds"]
            cmp_params = {"thetas": settings.thetas, "queries": settings.queries, "seed": settings.seed}
            workload = {}
            for i, r in enumerate(runs, 1):
                say(f"measure {i}/{len(runs)}: {r['method']} {_setting_text(settings.method(r['method']), r['k'], r['l'])}"
                    f" (release {r['release']})")
                r["headline"] = heads[r["release"]]
                r["risk"] = releases.risk(conn, r["release"])
                measures, workload = _measured(conn, r, cmp_params)
                r["measures"] = canonical(measures, r["headline"], r["risk"])
    finally:
        conn.autocommit = True
    return {"dataset": info, "settings": {"methods": settings.methods, "ks": settings.ks, "ls": settings.ls,
                                          "k0": settings.k0, "l0": settings.l0, "thetas": settings.thetas,
                                          "fractions": settings.fractions, "queries": settings.queries,
                                          "seed": settings.seed, "extra": settings.extra, "aliases": settings.aliases},
            "runs": runs, "scaling": scaling, "failures": failures, "workload": workload,
            "seconds": round(time.perf_counter() - started, 2),
            "created": time.strftime("%Y-%m-%d %H:%M:%S"), "version": _version(conn)}


def _version(conn):
    try:
        return conn.execute("SELECT pganon.version()").fetchone()[0]
    except psycopg.Error:
        return None


def release_report(conn: psycopg.Connection, release: int) -> dict:
    """`pganon report RELEASE`: what was promised, what was verified (the checks re-run now),
    what it costs in utility (its headline numbers, pganon.release_metrics, `pganon.compare` of
    this release alone, and `pganon.query_error` when publish stored none) and what an attacker learns (pganon.risk and, for GT/ST releases, the
    fingerprint-correlation audit)."""
    rel = releases.get(conn, release=release)
    layout = conn.execute("SELECT layout FROM pganon.release WHERE id = %s", (release,)).fetchone()[0]
    rel["layout"] = layout
    rel["created_at"] = str(rel.get("created_at"))
    checks = releases.verify(conn, release)
    risk = releases.risk(conn, release)
    measures = conn.execute("SELECT pganon.compare(ARRAY[%s]::bigint[])", (release,)).fetchone()[0]["releases"][0]
    out = {"release": rel, "headline": rel["headline"], "checks": checks,
           "measures": canonical(measures, rel["headline"], risk), "risk": risk}
    if layout.get("family") == "linked" or (layout.get("family") == "bucketization" and layout.get("delta")):
        out["audit"] = (rel.get("metrics") or {}).get("audit") and {"summary": rel["metrics"]["audit"]} or \
            conn.execute("SELECT pganon.audit(%s)", (release,)).fetchone()[0]
    else:
        out["audit_note"] = ("not a GT/ST release with bucket links: run `pganon audit RELEASE --delta COLUMN` "
                             "for a bucketization release" if layout.get("family") == "bucketization" else
                             "applies to GT/ST releases only")
    if rel["headline"].get("query_error") is None and layout.get("family") in releases.QUERY_ERROR_FAMILIES:
        out["query_error_now"] = query_error_now(conn, release)
    return out


def query_error_now(conn: psycopg.Connection, release: int) -> dict:
    """pganon.query_error of a release that stored none (publish runs no workload unless asked),
    shown apart from the headline figure; {"error": why} when its source changed since."""
    try:
        with conn.transaction():
            return conn.execute("SELECT pganon.query_error(%s)", (release,)).fetchone()[0]
    except psycopg.Error as e:
        if e.sqlstate not in ("PA002", "PA004"):
            raise
        return {"error": e.diag.message_primary or str(e)}

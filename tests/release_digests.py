"""Digests of releases, to prove that a change of speed changed no release (issue 15: "the same
parameters give the same releases as before").

A case is a (dataset, method, params) published with a fixed `numbering_seed` (or with
numbering 'creation'); its digest covers everything the release is: the published relations'
rows in their physical order (the order is part of what a reader sees), the admin-only map's
rows, the counts recorded on the release, what `pganon.verify` says and the risk rows. The
expected digests were made with the engine as it was before the performance work
(tests/fixtures/make_release_digests.py); tests/integration/test_release_digests.py recomputes
them with the engine of this checkout.

The cases cover every method on a small table with hostile names and typed columns, a person
table, and the methods benchmarked at scale on 10,000 `adult_model` rows, Mondrian through its
SQL top splits too (`sql_threshold`).
"""

from __future__ import annotations

import hashlib
import json
import random

from psycopg import sql

SEED = 20261125
TABLE = 'Six"teen; tbl'
PERSON_TABLE = 'six teen "persons"'
DISEASES = ["Flu", "HIV", "Cold", "Cancer", "Asthma", "Ulcer", "Gout"]

EVERY = {
    "mbf": {}, "msdcf": {}, "mmdcf": {}, "mbf_mslf": {}, "msdcf_mslf": {}, "mmdcf_mslf": {},
    "anatomy": {"l": 2, "eligibility": "suppress"}, "ck_anonymization": {"k": 3, "c_f_excess": "allow"}, "pk_angelization": {"k": 3},
    "gaa": {"k": 3}, "mondrian": {"k": 3}, "semantic": {"k": 3, "l": 2}, "rating": {"eligibility": "suppress", "seed": 5},
}
PERSONS = {"danonyir": {"model": "kl", "k": 3, "l": 2}, "geneir": {"model": "kl", "k": 3, "l": 2},
           "one_m_generalization": {"k": 3, "l": 2}}
SCALE = [("mondrian", {"k": 10}), ("mondrian", {"k": 10, "sql_threshold": 1500}), ("gaa", {"k": 10}),
         ("mmdcf_mslf", {"d": 5}), ("anatomy", {}),
         ("ck_anonymization", {"k": 10, "c": 2, "c_f": 2, "c_f_excess": "allow"})]
SCALE_ROWS = 10_000


def cases() -> list[tuple[str, str, str, dict]]:
    """(case id, dataset, method, params) in a fixed order."""
    out = [(f"every/{m}", TABLE, m, dict(p, numbering_seed=SEED)) for m, p in EVERY.items()]
    out += [(f"persons/{m}", PERSON_TABLE, m, dict(p, numbering_seed=SEED)) for m, p in PERSONS.items()]
    out += [("refused/ck_anonymization", TABLE, "ck_anonymization", {"k": 3, "numbering_seed": SEED}),
            ("refused/mondrian", TABLE, "mondrian", {"k": 500, "numbering_seed": SEED})]
    out += [(f"creation/{m}", TABLE, m, dict(EVERY[m], numbering="creation")) for m in ("mondrian", "mmdcf_mslf")]
    out += [(f"adult_model/{m}/{json.dumps(p, sort_keys=True)}", "adult_model", m, dict(p, numbering_seed=SEED))
            for m, p in SCALE]
    return out


def setup(conn) -> None:
    """The tables of the cases (deterministic content), declared; adult_model loaded."""
    from pganon import datasets
    _table(conn, TABLE, persons=False)
    _table(conn, PERSON_TABLE, persons=True)
    datasets.load(conn, "adult_model", rows=SCALE_ROWS, seed=7)


def _table(conn, name: str, persons: bool) -> None:
    rnd = random.Random(11)
    conn.execute(sql.SQL('CREATE TABLE {} ("r id" bigint PRIMARY KEY, pid int, age smallint, "zip code" text, '
                         'disease text, drug text, paid numeric(8,2), seen date)').format(sql.Identifier(name)))
    rows, pid = [], 0
    while len(rows) < 240:
        age, zip_ = rnd.randint(20, 69), rnd.choice(["10001", "10002", "10003", "20001"])
        for d in rnd.sample(DISEASES, rnd.randint(1, 3) if persons else 1):
            rows.append((len(rows), pid, age, zip_, d, rnd.choice("xyzw"), rnd.randint(0, 99999) / 100,
                         f"2020-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}"))
        pid += 1
    with conn.cursor() as cur:
        cur.executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s, %s, %s, %s, %s)").format(sql.Identifier(name)),
                        rows)
    conn.execute("SELECT pganon.register_dataset(%s, %s::regclass, 'r id', person_column => %s)",
                 (name, sql.Identifier(name).as_string(conn), "pid" if persons else None))
    roles = [("age", "quasi"), ("zip code", "quasi"), ("disease", "sensitive")]
    if not persons:
        roles.append(("drug", "sensitive"))
    for col, role in roles:
        conn.execute("SELECT pganon.set_attribute(%s, %s, %s)", (name, col, role))
    for v in DISEASES:
        conn.execute("SELECT pganon.set_security_level(%s, 'disease', %s, %s)", (name, v, 2 if v == "HIV" else 1))
    if not persons:
        for v in "xyzw":
            conn.execute("SELECT pganon.set_security_level(%s, 'drug', %s, 1)", (name, v))
        conn.execute("SELECT pganon.set_dependency(%s, 'drug', ARRAY['disease'])", (name,))
        conn.execute("SELECT pganon.set_semantic_rule(%s, 'lungs', 'disease', 'in', ARRAY['Asthma', 'Cancer'], "
                     "'lung disease')", (name,))
    conn.execute("SELECT pganon.build_hierarchy(%s, 'age', 'intervals', '{\"widths\": [5, 10, 20]}')", (name,))
    conn.execute("SELECT pganon.build_hierarchy(%s, 'zip code', 'redaction')", (name,))
    conn.execute("SELECT pganon.set_hierarchy(%s, 'disease', %s)", (name, "".join(f"{d};*\n" for d in DISEASES)))
    conn.execute("SELECT pganon.set_policy(%s, '{\"published_share\": 0}')", (name,))


def _rows(conn, relation: str, physical: bool) -> str:
    """The relation's rows as text: in physical (ctid) order when a reader sees the order,
    sorted otherwise (the map is admin-only; its order carries nothing)."""
    order = "ctid" if physical else "t::text"
    return conn.execute(sql.SQL("SELECT coalesce(string_agg(t::text, E'\\n' ORDER BY {}), '') FROM {} t").format(
        sql.SQL(order), sql.SQL(relation))).fetchone()[0]


def _round(x):
    if isinstance(x, float):
        return float(f"{x:.9g}")
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_round(v) for v in x]
    return x


def digest(conn, rid: int) -> dict:
    """{part: md5} of release `rid` (see the module docstring)."""
    rel = conn.execute("SELECT layout, source_rows, suppressed_rows, published_rows FROM pganon.release WHERE id = %s",
                       (rid,)).fetchone()
    layout, counts = rel[0], rel[1:]
    parts = {"counts": json.dumps(list(counts))}
    for role, relation in sorted(layout["relations"].items()):
        if role == "promise":   # one row; its risk figures are floats: rounded as the risk rows are
            row = conn.execute(sql.SQL("SELECT method, model, promise, risk, promoted_at FROM {}").format(
                sql.SQL(relation))).fetchone()
            parts[role] = json.dumps(_round(list(row)), sort_keys=True, default=str)
            continue
        parts[role] = _rows(conn, relation, physical=role != "map")
    parts["verify"] = json.dumps(conn.execute('SELECT "check", passed, detail FROM pganon.verify(%s) ORDER BY 1',
                                              (rid,)).fetchall())
    risk = conn.execute("SELECT measure, scope, value, promise, policy_key, detail FROM pganon.release_risk "
                        "WHERE release_id = %s ORDER BY ord", (rid,)).fetchall()
    parts["risk"] = json.dumps(_round([list(r) for r in risk]))
    return {k: hashlib.md5(v.encode()).hexdigest() for k, v in parts.items()}


def outcome(conn, dataset: str, method: str, params: dict) -> dict:
    """The digest of the case's release, or of its refusal (SQLSTATE, message, hint): the same
    parameters must also give the same errors."""
    import psycopg
    try:
        rid = conn.execute("SELECT pganon.publish(%s, %s, %s::jsonb)",
                           (dataset, method, json.dumps(params))).fetchone()[0]
    except psycopg.Error as exc:
        d = exc.diag
        text = json.dumps([d.sqlstate, d.message_primary, d.message_hint])
        return {"error": f"{d.sqlstate} {hashlib.md5(text.encode()).hexdigest()}"}
    return digest(conn, rid)

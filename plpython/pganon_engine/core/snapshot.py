"""Step 1 of every release, the snapshot: the declared columns of the source copied into one temp
table (`SNAP`) in one statement, with the NULL, empty and duplicate-key checks. Every later step,
verification included, reads this copy, never the live table: production writes never wait for a
publish and cannot make it fail, and a release is made from one consistent state of the source.
"""

from .errors import bad_data

SNAP = "pg_temp._pganon_snap"
TEMP_BUFFERS = "256MB"


def raise_temp_buffers(db):
    """Work tables are temp tables: give them TEMP_BUFFERS of local buffers for this transaction,
    but only where the session still has the built-in default (a DBA's or the session's own
    setting is kept, never lowered) and no temp table was used yet (the server refuses the
    change then, SQLSTATE 22023: only that refusal is caught, never a cancel)."""
    r = db.one("SELECT s.source, pg_catalog.pg_size_bytes(pg_catalog.current_setting('temp_buffers')) AS now, "
               "pg_catalog.pg_size_bytes($1) AS want, pg_catalog.pg_my_temp_schema() <> 0 AS used "
               "FROM pg_catalog.pg_settings s WHERE s.name = 'temp_buffers'", [TEMP_BUFFERS], ["text"])
    if r["source"] == "default" and not r["used"] and r["now"] < r["want"]:
        db.try_run(f"SET LOCAL temp_buffers = {db.literal(TEMP_BUFFERS)}", sqlstates=("22023",))


def copy_source(db, ds, p):
    """Copy the declared columns in one statement: everything after, verification included, works
    from this copy, so the source needs no lock beyond the statement's own."""
    I = db.ident
    cols = [ds.key] + [q["column"] for q in p["qis"]] + p["sas"]
    raise_temp_buffers(db)
    db.run("SET LOCAL jit = off")   # JIT compiles each big one-off query for ~1 s and saves less
    limit = f" ORDER BY {I(ds.key)} LIMIT {int(p['limit'])}" if p["limit"] else ""
    db.run(f"CREATE TEMP TABLE _pganon_snap ON COMMIT DROP AS SELECT {', '.join(map(I, cols))} "
           f"FROM {ds.source}{limit}")
    db.run(f"ANALYZE {SNAP}")   # work tables get statistics, or the planner guesses 200 groups
    checked = [ds.key] + [q["column"] for q in p["qis"]] + p["sas"]
    counts = ", ".join(f"count(*) FILTER (WHERE {I(c)} IS NULL) AS n{i}" for i, c in enumerate(checked))
    r = db.one(f"SELECT count(*) AS n, count(DISTINCT {I(ds.key)}) AS nkey, {counts} FROM {SNAP}")
    if r["n"] == 0:
        raise bad_data(f"the source table {ds.source} of dataset {ds.name} is empty", hint="load rows first")
    nulls = {c: r[f"n{i}"] for i, c in enumerate(checked) if r[f"n{i}"]}
    if nulls:
        listing = ", ".join(f"{c}: {n} rows" for c, n in nulls.items())
        raise bad_data(f"NULL values in {ds.source}: {listing}",
                       hint="fill or filter them (e.g. publish from a view WHERE ... IS NOT NULL)")
    if r["nkey"] != r["n"]:
        raise bad_data(f'key column "{ds.key}" of {ds.source} is not unique ({r["n"] - r["nkey"]} duplicates)',
                       hint="register the dataset with a unique key column")
    return r["n"]

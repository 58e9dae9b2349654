"""numbering 'random' for the generalized family (issue 15): the classes' random ids drawn from
the plan, before any row is assigned, so that assign and materialize write the map and the GT
once with them (the GT in content order) instead of the renumber step (`numbering.apply`)
rewriting both.  The bucketization families do the same (`bucketization.family.number_groups`)."""

import numpy as np

from pganon_engine.core import numbering

from . import mondrian_sql

PERM = "pg_temp._pganon_cperm"


def number_classes(db, p):
    """The permutation of the class ids 1..n into `PERM` (old, new), p["class_ids"] (the new id
    of class 1..n) and p["numbered"].  Only when the classes are exactly 1..n (gaa; mondrian's code
    vectors), whose permutation is the one `numbering.apply` draws from the GT; else (mondrian's
    row path; semantic, which relabels classes after the build) p["numbered"] stays unset."""
    n = int(p["n_classes"])
    if not p.get("renumbered") or p.get("relabels_classes") or n < 1 or p["kind"] == "mondrian" and not p["mondrian_doms"]:
        return
    if p["kind"] == "gaa":
        res = p["plan"]["result"]
        if len(res.class_nodes) != n or not np.array_equal(np.unique(res.class_of), np.arange(1, n + 1)):
            return
    else:
        vc = p["mondrian_vclass"] = mondrian_sql.vector_classes(db, p["mondrian_schema"])
        r = db.one(f"SELECT count(DISTINCT class_id) AS d, min(class_id) AS lo, max(class_id) AS hi FROM {vc}")
        if (r["d"], r["lo"], r["hi"]) != (n, 1, n):
            return
        cs = "".join(f"x.c{j}, " for j in range(len(p["mondrian_doms"])))
    numbering.draw(db, PERM, "class_id", p["numbering_seed"], f"SELECT generate_series(1, {n}) AS old")
    p["class_ids"] = [int(x) for x in db.one(f"SELECT array_agg(new ORDER BY old) AS a FROM {PERM}")["a"]]
    if p["kind"] == "mondrian":   # the code vectors' random class ids, for assign's join
        db.run(f"CREATE TEMP TABLE _pganon_vclassn ON COMMIT DROP AS SELECT {cs}o.new AS class_id "
               f"FROM {vc} x JOIN {PERM} o ON o.old = x.class_id")
        db.run("ANALYZE pg_temp._pganon_vclassn")
        p["mondrian_vclass"] = "pg_temp._pganon_vclassn"
    p["numbered"] = True


# types whose equal values are identical (not numeric's 1.0 and 1.00, nor float's -0 and 0)
EXACT = ("smallint", "integer", "bigint", "date", "timestamp without time zone", "timestamp with time zone")


def vector_ranges(db, p, forms):
    """With mondrian's code vectors numbered: the SELECT of the per-class ranges (class_id, lo<i>,
    hi<i> as `family.cell_sql` names them) from the code vectors' classes and the QI domains (a
    class's least value is the value of its least code), not from the rows; None when a QI is a
    value set or of a type whose equal values can differ (the rows' min then picks one)."""
    if not p.get("numbered") or p["kind"] != "mondrian" or "values" in forms:
        return None
    rng = [i for i, f in enumerate(forms) if f == "range"]
    if any(p["qis"][i].get("type") not in EXACT for i in rng):
        return None
    aggs = ", ".join(f"min(d{i}.v) AS lo{i}, max(d{i}.v) AS hi{i}" for i in rng)
    joins = " ".join(f"JOIN {p['mondrian_doms'][i][0]} d{i} ON d{i}.code = x.c{i}" for i in rng)
    return f"SELECT x.class_id, {aggs} FROM {p['mondrian_vclass']} x {joins} GROUP BY x.class_id"

"""``adult_model``: an Adult-like table of any size made from a model fitted on UCI Adult, with new
combinations of values (``adult_synthetic`` only resamples whole Adult rows, so its QI vectors
are Adult's and a 1M table is already k-anonymous with a large k).

The model is a chain of conditional distributions (a Bayesian network), fitted by counting:
each attribute of :data:`MODEL_CHAIN` is drawn given its parents from Adult's counts of that
attribute within the parents' combination. Numeric attributes are drawn as a bin (conditional,
like a category), then a value within the bin from Adult's values in that bin (``fnlwgt``: a
1,000-wide slice, then a uniform offset in it, so it takes values Adult never had);
``education_num`` is Adult's one-to-one recoding of ``education``. Every parent set lies within
the family (attribute plus parents) of an earlier attribute, so the chain is decomposable: the
table's joint distribution of each family equals Adult's in expectation, hence every marginal
and every modelled pair (education x occupation, sex x relationship, marital_status x income
...), while attributes in different branches combine freely.

The fitted counts ship as ``pganon/data/adult_model.json`` (a test checks that fitting Adult
again reproduces it byte for byte). Refit after changing the chain or the bins with
``python -m pganon.datasets.adult_model_refit --write``. Generating needs neither Adult nor
per-row Python: one ``INSERT ... SELECT`` over ``generate_series``, each draw an alias-method
lookup (Walker/Vose) in integer arrays bound as parameters, keyed by ``hashint8extended(i * 64 +
d, seed)`` (d < 64 numbers the draws of a row). Row ``i`` depends only on ``i`` and ``seed``: same seed, same table, and the first k
rows of a larger table equal the table of k rows.
"""

from __future__ import annotations

import json
from collections import Counter
from itertools import product
from typing import Sequence

import psycopg
from psycopg import sql

from .adult import ADULT_COLUMNS, _ADULT_DDL_TYPES
from .fetch import DatasetError, _data_file
from .synthetic import _MAX_INT4, _check_seed
from .tables import TableName, _check_rows, _create_table, _finish_table, _prepare_target

#: The packaged fitted model (:func:`fit_adult_model` of the 30,162 complete Adult rows).
MODEL_FILE = "adult_model.json"
_FORMAT = 1

#: The chain, in drawing order: (attribute, parents). Each parent set lies within the family of
#: one earlier attribute (decomposable, see the module docstring); a test checks it.
MODEL_CHAIN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sex", ()),
    ("age", ("sex",)),
    ("education", ("age", "sex")),
    ("income", ("education", "age", "sex")),
    ("marital_status", ("income", "age", "sex")),
    ("relationship", ("marital_status", "sex")),
    ("occupation", ("education", "sex")),
    ("workclass", ("occupation", "education")),
    ("hours_per_week", ("occupation", "sex")),
    ("race", ("income", "sex")),
    ("native_country", ("race", "income")),
    ("capital_gain", ("income",)),
    ("capital_loss", ("capital_gain", "income")),
    ("fnlwgt", ("race",)),
)

#: Numeric attributes: bin edges (bin b is [edges[b], edges[b+1])) and the width of the value
#: slices within a bin (1: Adult's exact values; w > 1: a slice [v - v mod w, +w) then a
#: uniform offset in it).
MODEL_BINS: dict[str, tuple[tuple[int, ...], int]] = {
    "age": ((17, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 91), 1),
    "hours_per_week": ((1, 20, 30, 35, 40, 41, 45, 50, 55, 60, 70, 100), 1),
    "capital_gain": ((0, 1, 3000, 5000, 7000, 10000, 20000, 100000), 1),
    "capital_loss": ((0, 1, 1500, 1800, 2000, 2500, 5000), 1),
    "fnlwgt": ((0, 50000, 100000, 150000, 200000, 250000, 300000, 400000, 500000, 1500000),
               1000),
}

_REFIT = "refit it: python -m pganon.datasets.adult_model_refit --write"
_HASH_BITS = 31                    # r of a draw: the low 31 bits of its hash
_ALIAS_BITS = 10                   # alias code packed below the 31-bit threshold
_MAX_CODES = 1 << _ALIAS_BITS


# --------------------------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------------------------

def _bin_of(column: str, v: int) -> int:
    edges = MODEL_BINS[column][0]
    for b in range(len(edges) - 1):
        if edges[b] <= v < edges[b + 1]:
            return b
    raise DatasetError(f"{column} = {v} lies outside the model's bins {edges[0]}..{edges[-1] - 1}",
                       sqlstate="PA004", hint="widen MODEL_BINS in pganon/datasets/adult_model.py")


def fit_adult_model(rows: Sequence) -> dict:
    """The model fitted on ``rows`` (AdultRow-like: attributes by name), as the JSON-ready dict
    that :data:`MODEL_FILE` holds: per attribute its parents, its codes (category values in
    sorted order, or numeric bins with the value slices seen in each) and, per parent
    combination seen, the counts of each code. Pure counting: the same rows give the same
    dict."""
    if not rows:
        raise DatasetError("cannot fit the Adult model on no rows", sqlstate="PA002")
    numeric = {}
    values: dict[str, list] = {}
    for col, _ in MODEL_CHAIN:
        if col in MODEL_BINS:
            edges, step = MODEL_BINS[col]
            per_bin: list[Counter] = [Counter() for _ in range(len(edges) - 1)]
            for r in rows:
                v = getattr(r, col)
                per_bin[_bin_of(col, v)][v - v % step] += 1
            numeric[col] = {"edges": list(edges), "step": step,
                            "slices": [sorted([v, c] for v, c in b.items()) for b in per_bin]}
            values[col] = list(range(len(edges) - 1))
        else:
            values[col] = sorted({getattr(r, col) for r in rows})
    code = {c: {v: i for i, v in enumerate(vs)} for c, vs in values.items()}

    def code_of(r, col):
        v = getattr(r, col)
        return _bin_of(col, v) if col in MODEL_BINS else code[col][v]

    variables = {}
    for col, parents in MODEL_CHAIN:
        counts: dict[tuple, list[int]] = {}
        for r in rows:
            key = tuple(code_of(r, p) for p in parents)
            counts.setdefault(key, [0] * len(values[col]))[code_of(r, col)] += 1
        var = {"parents": list(parents),
               "counts": [[list(k), c] for k, c in sorted(counts.items())]}
        if col in MODEL_BINS:
            var.update(numeric[col])
        else:
            var["values"] = values[col]
        variables[col] = var
    edu_num = {}
    for r in rows:
        if edu_num.setdefault(r.education, r.education_num) != r.education_num:
            raise DatasetError(f"education {r.education!r} has two education_num values",
                               sqlstate="PA004",
                               hint="the model expects Adult's one-to-one recoding")
    return {"format": _FORMAT, "rows": len(rows),
            "about": "pganon adult_model: counts fitted on UCI Adult by "
                     "pganon.datasets.adult_model.fit_adult_model; refit with "
                     "python -m pganon.datasets.adult_model_refit --write",
            "chain": [col for col, _ in MODEL_CHAIN], "variables": variables,
            "education_num": dict(sorted(edu_num.items()))}


def model_json(model: dict) -> str:
    """The canonical text of a fitted model: one line per attribute, so a refit diffs well."""
    head = {k: v for k, v in model.items() if k not in ("variables",)}
    lines = [json.dumps(k) + ": " + json.dumps(v, separators=(",", ":"), sort_keys=True)
             for k, v in sorted(head.items())]
    body = ",\n".join("  " + json.dumps(c) + ": " + json.dumps(v, separators=(",", ":"),
                                                                 sort_keys=True)
                      for c, v in model["variables"].items())
    return "{\n" + ",\n".join(lines) + ',\n"variables": {\n' + body + "\n}\n}\n"


def packaged_adult_model() -> dict:
    """The packaged fitted model (:data:`MODEL_FILE`), checked against :data:`MODEL_CHAIN`."""
    path = _data_file(MODEL_FILE)
    try:
        model = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DatasetError(f"cannot read {MODEL_FILE}: {e}", sqlstate="PA004",
                           hint=_REFIT) from e
    if not isinstance(model, dict) or model.get("format") != _FORMAT \
            or model.get("chain") != [c for c, _ in MODEL_CHAIN] \
            or any(model["variables"].get(c, {}).get("parents") != list(p)
                   for c, p in MODEL_CHAIN):
        raise DatasetError(f"{MODEL_FILE} does not match this pganon's model chain",
                           sqlstate="PA004",
                           hint=_REFIT)
    return model


# --------------------------------------------------------------------------------------------
# Alias tables
# --------------------------------------------------------------------------------------------

def alias_table(weights: Sequence[int]) -> list[tuple[int, int]]:
    """Walker's alias table of non-negative integer ``weights`` (some > 0), exact: column j is
    drawn with probability 1/m, then j itself with probability thr_j / W and alias_j otherwise
    (W = sum of weights); returns (thr_j, alias_j) per column. Integer arithmetic only, stacks
    in index order, so the table is the same on every platform."""
    m, total = len(weights), sum(weights)
    if total <= 0 or any(w < 0 for w in weights):
        raise DatasetError("alias weights must be non-negative with a positive sum",
                           sqlstate="PA004")
    scaled = [w * m for w in weights]            # column capacity is `total`
    thr, alias = [total] * m, list(range(m))
    small = [j for j in range(m) if scaled[j] < total][::-1]
    large = [j for j in range(m) if scaled[j] >= total][::-1]
    while small and large:
        s, g = small.pop(), large.pop()
        thr[s], alias[s] = scaled[s], g
        scaled[g] -= total - scaled[s]
        (small if scaled[g] < total else large).append(g)
    return list(zip(thr, alias))


def _packed(weights: Sequence[int]) -> list[int]:
    """The alias table packed for SQL, one bigint per column: ceil(thr * 2^31 / W) << 10 | alias.
    A draw with a uniform 31-bit r keeps column j when r < that threshold: exact to 2^-31."""
    total = sum(weights)
    return [(-(-(t << _HASH_BITS) // total) << _ALIAS_BITS) | a for t, a in alias_table(weights)]


def _conditional(var: dict, sizes: dict[str, int], m: int) -> list[list[int]]:
    """Counts of the attribute for every parent combination (mixed radix, first parent most
    significant); a combination Adult lacks (never drawn, as the chain is decomposable) backs
    off to the counts over fewer parents, the last one dropped first."""
    parents = var["parents"]
    seen = {tuple(k): c for k, c in var["counts"]}
    out = []
    for combo in product(*(range(sizes[p]) for p in parents)):
        for keep in range(len(parents), -1, -1):
            c = [sum(col) for col in zip(*([0] * m, *(cnt for k, cnt in seen.items()
                                                        if k[:keep] == combo[:keep])))]
            if sum(c):
                out.append(c)
                break
    return out


def model_arrays(model: dict) -> list[dict]:
    """Per draw of the chain, in order: the attribute, its parents, its number of codes m, the
    packed alias table over (parent combination, column) and, for a numeric attribute, the
    within-bin draw (m, packed table per bin, slice values) and the slice width."""
    variables = model["variables"]
    sizes = {c: len(v["values"]) if "values" in v else len(v["edges"]) - 1
             for c, v in variables.items()}
    out = []
    for col, _ in MODEL_CHAIN:
        var = variables[col]
        m = sizes[col]
        if m > _MAX_CODES:
            raise DatasetError(f"{col} has {m} codes, more than {_MAX_CODES}", sqlstate="PA004")
        draw = {"column": col, "parents": var["parents"],
                "radix": [sizes[p] for p in var["parents"]], "m": m,
                "table": [x for c in _conditional(var, sizes, m) for x in _packed(c)]}
        if "slices" in var:
            # a bin the rows never reached is never drawn; it gets its lower edge as a stand-in
            slices = [s or [[var["edges"][b], 1]] for b, s in enumerate(var["slices"])]
            mv = max(len(s) for s in slices)
            draw["slices_m"] = mv
            draw["slice_table"] = [x for s in slices for x in
                                   _packed([c for _, c in s] + [0] * (mv - len(s)))]
            draw["slice_values"] = [v for s in slices
                                    for v in [v for v, _ in s] + [0] * (mv - len(s))]
            draw["step"] = var["step"]
        else:
            draw["values"] = var["values"]
        out.append(draw)
    return out


# --------------------------------------------------------------------------------------------
# Generation in SQL
# --------------------------------------------------------------------------------------------

def _draw(h: sql.Composable, key: sql.Composable, m: int, table: sql.Composable) -> sql.Composed:
    """The code drawn by hash column ``h`` from the packed alias ``table`` at row ``key``
    (0-based parent combination): column j = (h >> 31) mod m, kept if the low 31 bits are below
    its threshold, else its alias."""
    j = sql.SQL("(pg_catalog.mod({h} >> 31, {m})::integer)").format(h=h, m=sql.Literal(m))
    cell = sql.SQL("({t})[({key}) * {m} + {j} + 1]").format(t=table, key=key, m=sql.Literal(m),
                                                           j=j)
    return sql.SQL("CASE WHEN ({h} & 2147483647) < ({cell} >> 10) THEN {j} "
                   "ELSE ({cell} & 1023)::integer END").format(h=h, cell=cell, j=j)


def _generation_query(draws: list[dict], rows: int, seed: int,
                      edu_nums: list[int]) -> tuple[sql.Composed, dict]:
    """SELECT of the table's rows (ADULT_COLUMNS order) and its parameters: one level per
    depth of the chain, each column computed at the first level where the columns it reads exist
    (OFFSET 0 keeps the planner from inlining the levels into each other)."""
    params: dict = {}
    n_hash = 0
    hashes = []

    def new_hash() -> sql.Identifier:
        nonlocal n_hash
        assert n_hash < 64, "a row's draws are keyed i * 64 + d"
        hashes.append(sql.SQL("(pg_catalog.hashint8extended(g.i::bigint * 64 + {d}, "
                              "({seed})::bigint) & 9223372036854775807) AS {h}").format(
            d=sql.Literal(n_hash), seed=sql.Literal(seed), h=sql.Identifier(f"h{n_hash}")))
        n_hash += 1
        return sql.Identifier("q", f"h{n_hash - 1}")

    levels: list[list] = []          # per level: (expression, output column name)
    depth: dict[str, int] = {}

    def put(expr, name: str, reads: Sequence[str]) -> None:
        depth[name] = 1 + max((depth[r] for r in reads), default=-1)
        if depth[name] == len(levels):
            levels.append([])
        levels[depth[name]].append((expr, name))

    for d in draws:
        col = d["column"]
        params[f"t_{col}"] = d["table"]
        key = sql.SQL("0")
        for p, radix in zip(d["parents"], d["radix"]):
            key = sql.SQL("({k}) * {r} + q.{p}").format(k=key, r=sql.Literal(radix),
                                                        p=sql.Identifier(f"c_{p}"))
        table = sql.SQL("{}::bigint[]").format(sql.Placeholder(f"t_{col}"))
        put(_draw(new_hash(), key, d["m"], table), f"c_{col}", [f"c_{p}" for p in d["parents"]])
        if "slice_table" in d:
            params[f"s_{col}"], params[f"v_{col}"] = d["slice_table"], d["slice_values"]
            stab = sql.SQL("{}::bigint[]").format(sql.Placeholder(f"s_{col}"))
            sbin = sql.Identifier("q", f"c_{col}")
            put(_draw(new_hash(), sbin, d["slices_m"], stab), f"s_{col}", [f"c_{col}"])
            value = sql.SQL("({v}::integer[])[q.{b} * {m} + q.{s} + 1]").format(
                v=sql.Placeholder(f"v_{col}"), b=sql.Identifier(f"c_{col}"),
                m=sql.Literal(d["slices_m"]), s=sql.Identifier(f"s_{col}"))
            if d["step"] > 1:
                value = sql.SQL("{v} + pg_catalog.mod({h}, {w})::integer").format(
                    v=value, h=new_hash(), w=sql.Literal(d["step"]))
            put(value, col, [f"c_{col}", f"s_{col}"])
        else:
            params[f"d_{col}"] = d["values"]
            put(sql.SQL("({v}::text[])[q.{c} + 1]").format(
                v=sql.Placeholder(f"d_{col}"), c=sql.Identifier(f"c_{col}")), col, [f"c_{col}"])
    q = sql.SQL("SELECT g.i, {h} FROM pg_catalog.generate_series(1, {rows}) AS g(i)").format(
        h=sql.SQL(", ").join(hashes), rows=sql.Literal(rows))
    for level in levels:
        q = sql.SQL("SELECT q.*, {e} FROM ({q} OFFSET 0) AS q").format(
            e=sql.SQL(", ").join(sql.SQL("{} AS {}").format(e, sql.Identifier(n))
                                 for e, n in level), q=q)
    out = [sql.SQL("q.i")]
    for c in ADULT_COLUMNS[1:]:
        out.append(sql.SQL("({}::integer[])[q.c_education + 1]").format(sql.Placeholder("edu_nums"))
                   if c == "education_num" else sql.Identifier("q", c))
    params["edu_nums"] = edu_nums
    return sql.SQL("SELECT {o} FROM ({q}) AS q").format(o=sql.SQL(", ").join(out), q=q), params


def make_adult_model(conn: psycopg.Connection, table: TableName = "adult_model",
                     rows: int = 1_000_000, seed: int = 42, replace: bool = False) -> int:
    """Create an Adult-like ``table`` of ``rows`` rows drawn from the packaged model
    (:func:`packaged_adult_model`): new combinations of values with Adult's marginals and modelled
    dependencies (module docstring). Same columns and types as :func:`load_adult`; ``id``
    1..rows, primary key; ANALYZEd. Done in one INSERT ... SELECT (no row passes through
    Python); row i depends only on i and ``seed`` (any 64-bit integer), so a seed gives the same
    table on every server and the first k rows of a larger table equal the table of k rows.
    Needs no Adult table. Returns ``rows``."""
    _check_rows(rows)
    if rows > _MAX_INT4:
        raise DatasetError(f"rows must be at most {_MAX_INT4} (id is an integer), got {rows}",
                           sqlstate="PA002")
    _check_seed(seed)
    model = packaged_adult_model()
    draws = model_arrays(model)
    edu_values = model["variables"]["education"]["values"]
    query, params = _generation_query(draws, rows, seed,
                                      [model["education_num"][v] for v in edu_values])
    with conn.transaction(), conn.cursor() as cur:
        rel = _prepare_target(cur, table, replace)
        _create_table(cur, rel, [(c, _ADULT_DDL_TYPES[c]) for c in ADULT_COLUMNS])
        cur.execute(sql.SQL("INSERT INTO {dst} ({cols}) ").format(
            dst=rel.ident, cols=sql.SQL(", ").join(map(sql.Identifier, ADULT_COLUMNS))) + query,
            params)
        _finish_table(cur, rel, "id",
                      f"Adult-like table: {rows} rows drawn from a model fitted on UCI Adult "
                      f"({model['rows']} rows; pganon/data/{MODEL_FILE}), seed {seed}. "
                      "Made by pganon.datasets.make_adult_model.")
    return rows

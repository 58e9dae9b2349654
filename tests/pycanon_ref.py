"""pyCANON 1.3.6 as the reference for privacy-model checks (issue 4): one comparison used by the
engine's unit tests and by the database tests of pganon.check, so both assert the same thing.

pyCANON's gen=True is pganon's scope 'attribute', gen=False the scope 'joint'.  Where pyCANON
departs from the published definitions (recursive (c,l), enhanced beta, delta) pganon is asked
for reading 'pycanon' (models.py M4, M6, M7)."""

import math
import warnings

import pandas as pd
from pycanon import anonymity as pyc

INF = math.inf


def close(a, b):
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def pycanon_all(df, qis, sas, gen):
    """pyCANON's answers; exceptions it raises are returned as their type."""
    out = {}
    calls = {
        "k": lambda: pyc.k_anonymity(df, qis),
        "alpha_k": lambda: pyc.alpha_k_anonymity(df, qis, sas, gen=gen),
        "l": lambda: pyc.l_diversity(df, qis, sas, gen=gen),
        "entropy": lambda: pyc.entropy_l_diversity(df, qis, sas, gen=gen),
        "recursive": lambda: pyc.recursive_c_l_diversity(df, qis, sas, gen=gen),
        "t": lambda: pyc.t_closeness(df, qis, sas, gen=gen),
        "basic_beta": lambda: pyc.basic_beta_likeness(df, qis, sas, gen=gen),
        "enhanced_beta": lambda: pyc.enhanced_beta_likeness(df, qis, sas, gen=gen),
        "delta": lambda: pyc.delta_disclosure(df, qis, sas, gen=gen),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, call in calls.items():
            try:
                out[name] = call()
            except (OverflowError, ZeroDivisionError) as e:
                out[name] = type(e)
    return out


def assert_agrees(value, rows, qis, sas, global_sizes):
    """value(model, params) -> the achieved value pganon reports; rows: dicts column -> value;
    global_sizes: per SA the number of distinct values in the table."""
    df = pd.DataFrame(rows)
    for gen, scope in ((True, "attribute"), (False, "joint")):
        want = pycanon_all(df, qis, sas, gen)
        p = {"scope": scope}
        assert value("k_anonymity", {}) == want["k"]
        alpha, k = value("alpha_k_anonymity", p)
        assert close(alpha, want["alpha_k"][0]) and k == want["alpha_k"][1]
        assert value("l_diversity", p) == want["l"]
        # M3: pyCANON floors its own double; an exactly integral exp(H) may come out one less
        e = value("entropy_l_diversity", p)
        assert want["entropy"] == math.floor(e + 1e-9) or (
            abs(e - round(e)) < 1e-9 and want["entropy"] == round(e) - 1)
        c, l = value("recursive_cl_diversity", dict(p, reading="pycanon"))
        if want["recursive"] is OverflowError:
            assert c == INF and scope == "joint"     # a joint class with fewer than l values
        else:
            pc, pl = want["recursive"]
            assert l == pl
            assert (c is None and math.isnan(pc)) if l < 2 else c == pc
        t = value("t_closeness", p)
        if want["t"] is ZeroDivisionError:           # a numeric SA with one value: m - 1 = 0
            assert any(global_sizes[s] == 1 and isinstance(rows[0][s], int) for s in sas)
        else:
            assert close(t, want["t"])
        assert close(value("basic_beta_likeness", p), want["basic_beta"])
        assert close(value("enhanced_beta_likeness", dict(p, reading="pycanon")),
                     want["enhanced_beta"])
        assert close(value("delta_disclosure", dict(p, reading="pycanon")), want["delta"])

"""The engine's name and value guards (issue 12, "Why" 9): reserved column names and capped
value quotes in error messages."""

import pytest

from pganon_engine.core import params as P
from pganon_engine.core.errors import EngineError


class _Ds:
    def __init__(self, key="id", person=None, identifiers=()):
        self.name, self.key, self.person = "d", key, person
        self._ids = [{"column": c, "role": "identifier"} for c in identifiers]

    def columns(self, role):
        return self._ids if role == "identifier" else []


def test_shown_keeps_short_values_and_cuts_long_ones():
    assert P.shown("Flu") == "'Flu'"
    long = "x" * 1_000_000
    out = P.shown(long)
    assert out.startswith("'xxx") and out.endswith("... (1000000 characters)") and len(out) < 80
    assert P.shown(12) == "12"


def test_shown_values_lists_five_and_counts_the_rest():
    out = P.shown_values([f"v{i}" for i in range(5)], total=12)
    assert out == "'v0', 'v1', 'v2', 'v3', 'v4' and 7 more"
    assert P.shown_values(["a", "b"]) == "'a', 'b'"
    assert len(P.shown_values(["y" * 10**6] * 50)) < 400


@pytest.mark.parametrize("published, ds, fragment", [
    (["age", "count"], _Ds(), 'column "count" of dataset d has the name of a column of the m release format'),
    (["age"], _Ds(key="bucket"), 'the key column "bucket"'),
    (["age"], _Ds(person="group_id"), 'the person column "group_id"'),
    (["age"], _Ds(identifiers=["count"]), 'the identifier column "count"'),
    (["_pganon_size"], _Ds(), 'column "_pganon_size" of dataset d starts with "_pganon"'),
    (["age"], _Ds(key="_pganon_k"), 'column "_pganon_k"'),
])
def test_refuse_reserved_names_the_column_and_the_reserved_names(published, ds, fragment):
    with pytest.raises(EngineError) as e:
        P.refuse_reserved("m", ds, published, ("group_id", "count"), ("group_id", "count", "bucket"))
    assert e.value.sqlstate == "PA002" and fragment in str(e.value) and e.value.hint


def test_refuse_reserved_passes_other_names():
    P.refuse_reserved("m", _Ds(key="value", identifiers=["name"]), ["a{b}", "class_id", "value", "pganon_x"],
                      ("group_id", "count"), ("group_id", "count", "bucket"))

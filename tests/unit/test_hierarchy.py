"""Unit tests for pganon_engine.hierarchy.tree (spec 001-metrics-strategies.md §1.2, A2).

Fixtures are the paper's Figure 1 trees as reconstructed in spec §1.1: Gender {M, F} -> * and
the unbalanced Race tree {Cat, Lion} -> Felid, {Felid, Dog} -> Mammal.  Expected values are
worked out by hand from the definitions; properties are checked against brute force."""

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pganon_engine.core.errors import EngineError
from pganon_engine.hierarchy.tree import Hierarchy

RACE_PATHS = [["Cat", "Felid", "Mammal"], ["Lion", "Felid", "Mammal"], ["Dog", "Mammal"]]
GENDER_PATHS = [["M", "*"], ["F", "*"]]


@pytest.fixture
def race():
    return Hierarchy.from_paths("race", RACE_PATHS)


@pytest.fixture
def gender():
    return Hierarchy.from_paths("gender", GENDER_PATHS)


# --------------------------------------------------------------------------------------------
# Structure of the Figure 1 trees
# --------------------------------------------------------------------------------------------


def test_node_ids_breadth_first_then_label(race):
    assert race.labels == ("Mammal", "Dog", "Felid", "Cat", "Lion")
    assert race.parent.tolist() == [-1, 0, 0, 2, 2]
    assert race.root == 0 and race.label(0) == "Mammal"


def test_depth_level_leaf_count_height_of_unbalanced_race(race):
    lab = race.labels
    assert dict(zip(lab, race.depth.tolist())) == {"Mammal": 0, "Dog": 1, "Felid": 1, "Cat": 2, "Lion": 2}
    # A2: lvl = longest distance down to a leaf, so Dog (a leaf) is level 0 under a level-2 root.
    assert dict(zip(lab, race.level.tolist())) == {"Mammal": 2, "Dog": 0, "Felid": 1, "Cat": 0, "Lion": 0}
    assert dict(zip(lab, race.leaf_count.tolist())) == {"Mammal": 3, "Dog": 1, "Felid": 2, "Cat": 1, "Lion": 1}
    assert race.height == 3
    assert race.n_leaves == 3
    assert not race.is_balanced
    assert [race.labels[v] for v in race.leaves] == ["Dog", "Cat", "Lion"]
    assert race.children[0] == (1, 2) and race.children[2] == (3, 4) and race.children[3] == ()


def test_gender_height_two_balanced(gender):
    assert gender.height == 2  # spec §1.2: height = nodes on the longest path
    assert gender.is_balanced
    assert gender.labels == ("*", "F", "M")


def test_single_node_hierarchy_has_height_one():
    h = Hierarchy.from_paths("x", [["*"]])
    assert len(h) == 1 and h.height == 1 and h.n_leaves == 1 and h.is_leaf[0]


def test_ancestors_include_the_node_itself(race):
    assert [race.labels[v] for v in race.ancestors("Cat")] == ["Cat", "Felid", "Mammal"]
    assert race.ancestors("Mammal") == [0]
    assert race.generalizes("Felid", "Lion") and race.generalizes("Lion", "Lion")
    assert not race.generalizes("Felid", "Dog") and not race.generalizes("Cat", "Felid")


def test_lca_table(race):
    want = {
        ("Cat", "Lion"): "Felid", ("Cat", "Dog"): "Mammal", ("Cat", "Felid"): "Felid",
        ("Dog", "Felid"): "Mammal", ("Lion", "Lion"): "Lion", ("Felid", "Mammal"): "Mammal",
        ("Dog", "Dog"): "Dog",
    }
    for (a, b), c in want.items():
        assert race.label(race.lca(a, b)) == c
        assert race.label(race.lca(b, a)) == c


def test_vectorized_lca_agrees_with_scalar(race):
    n = len(race)
    for a in range(n):
        row = race.lca_row(a)
        assert row.tolist() == [race.lca(a, b) for b in range(n)]
        assert race.lca_many(a, np.array([4, 1, 3])).tolist() == [race.lca(a, 4), race.lca(a, 1), race.lca(a, 3)]
    a = np.array([3, 1, 4, 2])
    b = np.array([4, 3, 4, 0])
    assert race.lca_pairs(a, b).tolist() == [race.lca(x, y) for x, y in zip(a, b)]


def test_ancestor_by_depth_table(race):
    # anc[v, d] = ancestor at depth d, v itself below its depth.
    assert race.anc.tolist() == [[0, 0, 0], [0, 1, 1], [0, 2, 2], [0, 2, 3], [0, 2, 4]]


def test_missing_lists_non_leaves_once_in_order(race):
    assert race.missing(["Cat", "Felid", "Tiger", "Cat", "Tiger", "Dog", "Mammal"]) == ["Felid", "Tiger", "Mammal"]
    assert race.missing(["Lion", "Dog"]) == []


def test_leaf_ids_refuses_non_leaves_with_bad_data(race):
    assert race.leaf_ids(["Cat", "Dog", 4]).tolist() == [3, 1, 4]
    with pytest.raises(EngineError) as e:
        race.leaf_ids(["Cat", "Tiger", "Felid"])
    assert e.value.sqlstate == "PA004"
    assert "'Tiger'" in str(e.value) and "'Felid'" in str(e.value)


def test_edges_rows_for_the_catalog(race):
    assert race.edges() == [("Mammal", None, 0, 3), ("Dog", "Mammal", 1, 1), ("Felid", "Mammal", 1, 2),
                            ("Cat", "Felid", 2, 1), ("Lion", "Felid", 2, 1)]


def test_node_accepts_label_or_id_and_refuses_others(race):
    assert race.node("Lion") == 4 and race.node(4) == 4
    for bad in ("Tiger", 5, -1, True, 2.0):
        with pytest.raises(EngineError):
            race.node(bad)


# --------------------------------------------------------------------------------------------
# Building: paths, edges, input order
# --------------------------------------------------------------------------------------------


def test_from_edges_equals_from_paths(race):
    e = Hierarchy.from_edges("race", [("Cat", "Felid"), ("Lion", "Felid"), ("Felid", "Mammal"),
                                      ("Dog", "Mammal"), ("Mammal", None)])
    assert e.labels == race.labels and e.parent.tolist() == race.parent.tolist()


def test_from_edges_implicit_root_and_repeated_pairs():
    e = Hierarchy.from_edges("g", [("M", "*"), ("F", "*"), ("M", "*")])
    assert e.labels == ("*", "F", "M") and e.parent.tolist() == [-1, 0, 0]


def test_ids_do_not_depend_on_row_order(race):
    rows = list(RACE_PATHS)
    for seed in range(5):
        random.Random(seed).shuffle(rows)
        h = Hierarchy.from_paths("race", rows)
        assert h.labels == race.labels and h.parent.tolist() == race.parent.tolist()


def test_arx_padding_is_collapsed():
    h = Hierarchy.from_paths("race", [["Cat", "Felid", "Mammal"], ["Lion", "Felid", "Mammal"],
                                      ["Dog", "Mammal", "Mammal"]])
    assert h.label(int(h.parent[h.node("Dog")])) == "Mammal"
    assert h.height == 3 and not h.is_balanced


def test_round_trip_edges_to_from_edges(race):
    again = Hierarchy.from_edges("race", [(n, p) for n, p, _, _ in race.edges()])
    assert again.labels == race.labels and again.parent.tolist() == race.parent.tolist()


# --------------------------------------------------------------------------------------------
# Validation: each refusal names the offending node (sqlstate PA002)
# --------------------------------------------------------------------------------------------


BAD = [
    ("empty paths", lambda: Hierarchy.from_paths("h", []), "empty"),
    ("empty edges", lambda: Hierarchy.from_edges("h", []), "empty"),
    ("empty row", lambda: Hierarchy.from_paths("h", [["a", "*"], []]), "row 2 is empty"),
    ("two roots in paths", lambda: Hierarchy.from_paths("h", [["a", "*"], ["b", "ANY"]]), "'ANY'"),
    ("two roots in edges", lambda: Hierarchy.from_edges("h", [("a", "r1"), ("b", "r2")]), "'r2'"),
    ("two parents in paths", lambda: Hierarchy.from_paths("h", [["a", "x", "*"], ["a", "y", "*"]]),
     "node 'a' has two parents"),
    ("two parents in edges", lambda: Hierarchy.from_edges("h", [("a", "x"), ("a", "y"), ("x", None), ("y", "x")]),
     "node 'a' has two parents"),
    ("cycle in a row", lambda: Hierarchy.from_paths("h", [["a", "b", "a"]]), "'a' twice"),
    ("cycle in edges", lambda: Hierarchy.from_edges("h", [("a", "b"), ("b", "c"), ("c", "a"), ("r", None)]),
     "cycle"),
    ("cycle without root", lambda: Hierarchy.from_edges("h", [("a", "b"), ("b", "a")]), "cycle"),
    ("leaf also inner", lambda: Hierarchy.from_paths("h", [["Cat", "Felid", "*"], ["Felid", "*"]]),
     "'Felid' is a leaf in row 2"),
    ("unbalanced when balanced required", lambda: Hierarchy.from_paths("race", RACE_PATHS, balanced=True),
     "row 3 (leaf 'Dog') has 2"),
    ("non-string label in paths", lambda: Hierarchy.from_paths("h", [["a", 1]]), "1"),
    ("None label in edges", lambda: Hierarchy.from_edges("h", [(None, "*")]), "None"),
    ("not a pair", lambda: Hierarchy.from_edges("h", [("a",)]), "not a (node, parent) pair"),
]


@pytest.mark.parametrize("case,call,fragment", BAD, ids=[b[0] for b in BAD])
def test_invalid_hierarchy_is_refused(case, call, fragment):
    with pytest.raises(EngineError) as e:
        call()
    assert e.value.sqlstate == "PA002"
    assert fragment in str(e.value)
    assert e.value.hint is not None or case in ("non-string label in paths", "None label in edges",
                                                "not a pair")


def test_balanced_true_accepts_balanced_rows():
    h = Hierarchy.from_paths("g", GENDER_PATHS, balanced=True)
    assert h.is_balanced


# --------------------------------------------------------------------------------------------
# Properties on random trees
# --------------------------------------------------------------------------------------------


@st.composite
def trees(draw):
    n = draw(st.integers(1, 14))
    parent = [None] + [draw(st.integers(0, i - 1)) for i in range(1, n)]
    names = draw(st.permutations([f"n{i}" for i in range(n)]))
    return [(names[i], None if parent[i] is None else names[parent[i]]) for i in range(n)]


def _brute(pairs):
    par = dict(pairs)

    def up(x):
        out = [x]
        while par[out[-1]] is not None:
            out.append(par[out[-1]])
        return out
    return par, up


@given(trees(), st.randoms(use_true_random=False))
@settings(max_examples=150, deadline=None)
def test_random_tree_matches_brute_force(pairs, rnd):
    rnd.shuffle(pairs)
    h = Hierarchy.from_edges("t", pairs)
    par, up = _brute(pairs)
    kids = {x: [y for y, p in pairs if p == x] for x, _ in pairs}
    leaves = {x for x in kids if not kids[x]}
    for v, lab in enumerate(h.labels):
        assert h.parent[v] < v  # parents first (H1)
        assert [h.labels[a] for a in h.ancestors(v)] == up(lab)
        assert h.depth[v] == len(up(lab)) - 1
        below = [y for y in kids if lab in up(y)]
        assert h.leaf_count[v] == len([y for y in below if y in leaves])
        assert h.level[v] == max(len(up(y)) - len(up(lab)) for y in below if y in leaves)
    assert h.height == h.level[0] + 1
    labels = list(h.labels)
    for a in labels:
        for b in labels:
            common = [x for x in up(a) if x in up(b)]
            assert h.label(h.lca(a, b)) == common[0]
        # lca_row writes each ancestor over its subtree (O(nodes)): the same row as lca_many
        assert h.lca_row(a).tolist() == [h.lca(a, b) for b in labels]
    # The same tree from its leaf paths, in any row order, gets the same ids.
    rows = [up(x) for x in sorted(leaves)]
    rnd.shuffle(rows)
    again = Hierarchy.from_paths("t", rows)
    assert again.labels == h.labels and again.parent.tolist() == h.parent.tolist()

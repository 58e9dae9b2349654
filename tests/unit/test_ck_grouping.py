"""Unit tests for pganon_engine.methods.linked.ck_grouping: QI groups by sort_cut (Function 4) and
by a callable."""

import pytest

from pganon_engine.methods.linked import ck_grouping
from test_ck_plan import QIS, ROWS


# --------------------------------------------------------------------------------------------
# QI grouping
# --------------------------------------------------------------------------------------------


def test_qi_groups_sort_cut_on_table1():
    # Sorted by age (numeric first): p2 21, p9 22, p3 26, p7 27, p4 31, p8 32, p1 34, p5 35, p6 38;
    # k = 2 consecutive rows, the last 3 (< 2k) form the last group.
    g = ck_grouping.qi_groups([[r[q] for q in QIS] for r in ROWS], 2)
    groups = {frozenset(ROWS[i]["pid"] for i in range(9) if g[i] == x) for x in set(g)}
    assert groups == {frozenset({"p2", "p9"}), frozenset({"p3", "p7"}), frozenset({"p4", "p8"}),
                      frozenset({"p1", "p5", "p6"})}


def test_qi_groups_callable_renumbered_and_checked():
    assert ck_grouping.qi_groups([[1], [2], [3], [4]], 2, method=lambda rows, k: ["x", "y", "y", "x"]) == [1, 2, 2, 1]
    with pytest.raises(ValueError, match="fewer than k"):
        ck_grouping.qi_groups([[1], [2], [3], [4]], 2, method=lambda rows, k: [1, 1, 1, 2])
    with pytest.raises(ValueError, match="unknown QI grouping"):
        ck_grouping.qi_groups([[1], [2]], 2, method="mondrian")

"""Unit tests for pganon_engine.methods.linked.ck_categories (spec 004-ck-anonymization.md):
SA weights, delta and zeta (Table 11) and the category table (Table 8).

Expected values are the paper's tables as transcribed in the spec (sections 1.3, 3, 4.1 and 8),
never outputs of the engine."""

import pytest

from pganon_engine.methods.linked import ck_categories
from test_ck_plan import DEP, SAS, TABLE8, plan_t1


# --------------------------------------------------------------------------------------------
# Weights, delta, zeta (Table 11, claim 8.1)
# --------------------------------------------------------------------------------------------


def test_weights_table11():
    w = ck_categories.weights(SAS, DEP, delta="physician")
    assert w.weights == {"cancer_type": 3, "cancer_treatment": 1, "physician": 3,
                         "diagnosis_date": 0, "symptom": 0, "diagnosis_method": 1}
    assert set(w.xi) == {"cancer_type", "physician"}
    assert set(w.zeta) == {"diagnosis_date", "symptom"}
    assert w.delta == "physician"


def test_weights_chi_breaks_the_tie_for_physician():
    w = ck_categories.weights(SAS, DEP, chi={"physician": 1})
    assert w.delta == "physician" and w.rule == "chi"
    assert w.adjusted["physician"] == 4 and w.adjusted["cancer_type"] == 3
    assert ck_categories.weights(SAS, DEP, chi={"cancer_type": 0.5}).delta == "cancer_type"


def test_weights_unique_maximum_needs_no_chi():
    dep = dict(DEP, cancer_type=["cancer_treatment"])
    w = ck_categories.weights(SAS, dep)
    assert w.delta == "physician" and w.rule == "unique"


@pytest.mark.parametrize("kwargs", [
    dict(),
    dict(chi={"physician": 1, "cancer_type": 1}),
    dict(chi={"symptom": 10}),  # chi is added to the maximum-weighted SAs only (Algorithm 1)
])
def test_weights_unresolved_tie_raises(kwargs):
    with pytest.raises(ValueError, match="unresolvable tie for δ: give chi or delta"):
        ck_categories.weights(SAS, DEP, **kwargs)


@pytest.mark.parametrize("kwargs,match", [
    (dict(identified_by=dict(DEP, physician=["physician", "cancer_type"])), "its own identified_by"),
    (dict(identified_by=dict(DEP, disease=["cancer_type"])), "not a sensitive attribute"),
    (dict(identified_by=dict(DEP, symptom=["disease"])), "not a sensitive attribute"),
    (dict(identified_by=dict(DEP, symptom="cancer_type")), "not the string"),
    (dict(chi={"disease": 1}), "not a sensitive attribute"),
    (dict(chi={"physician": "high"}), "must be a number"),
    (dict(delta="disease"), "not a sensitive attribute"),
    (dict(delta="symptom"), "maximum weight"),
    (dict(delta="cancer_type", chi={"physician": 1}), "chi picks 'physician'"),
    (dict(delta="physician", zeta=["physician"]), "must not contain delta"),
    (dict(delta="physician", zeta=["disease"]), "not sensitive attributes"),
    (dict(sas=["physician", "physician"]), "listed twice"),
    (dict(sas=[]), "non-empty"),
])
def test_weights_errors(kwargs, match):
    args = dict(sas=SAS, identified_by=DEP)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        ck_categories.weights(**args)


def test_weights_zeta_empty_when_it_would_cover_every_other_sa():
    # Spec 2.6 step 2, degenerate case: all weights equal -> eq. (5) still checks something.
    w = ck_categories.weights(["a", "b", "c"], {}, delta="a")
    assert w.xi == ("a", "b", "c") and w.zeta == ()


# --------------------------------------------------------------------------------------------
# Category table (Table 8, claim 8.2)
# --------------------------------------------------------------------------------------------


def test_category_table_8_membership_and_labels():
    p = plan_t1()
    by_label = {}
    for pid, cid in zip(p.ids, p.category):
        by_label.setdefault(p.categories.categories[cid - 1].label, set()).add(pid)
    assert by_label == TABLE8
    assert [c.id for c in p.categories.categories] == [1, 2, 3, 4]
    assert set(p.categories.categories[0].values) == {"Daisy", "Frank"}


def test_category_table_from_counts_alone():
    # delta counts of Table 1 in first-appearance order: Jack 2, Alan 2, Daisy 1, Tom 3, Frank 1.
    t = ck_categories.category_table([("Jack", 2), ("Alan", 2), ("Daisy", 1), ("Tom", 3), ("Frank", 1)], 2)
    assert [set(c.values) for c in t.categories] == [{"Daisy", "Frank"}, {"Jack"}, {"Alan"}, {"Tom"}]
    assert [c.label for c in t.categories] == ["Top secret", "Secret", "Less secret", "Nonsecret"]
    assert [c.size for c in t.categories] == [2, 2, 2, 3]


@pytest.mark.parametrize("counts,k,match", [
    ([], 2, "at least one"),
    ([("a", 1), ("a", 2)], 2, "twice"),
    ([("a", 0)], 2, ">= 1"),
    ([("a", 1)], 0, "k must be >= 1"),
])
def test_category_table_errors(counts, k, match):
    with pytest.raises(ValueError, match=match):
        ck_categories.category_table(counts, k)

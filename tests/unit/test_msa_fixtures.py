"""Spec 003 fixtures that belong to no single method module: Table 8's weight calculation of
(p,k)-angelization (claim C18: an SA's weight is the number of SAs that identify it)."""

import pytest

from pganon_engine.methods.linked import ck_categories

TABLE8 = {"cp": ["trestbps", "restecg", "thalach"], "trestbps": [], "restecg": ["trestbps", "fbs"],
          "thalach": ["cp", "trestbps", "fbs"], "fbs": ["trestbps"]}


def test_table8_weights_are_dependency_counts():
    w = ck_categories.weights(list(TABLE8), TABLE8, chi={"cp": 0.5})
    assert w.weights == {"cp": 3, "trestbps": 0, "restecg": 2, "thalach": 3, "fbs": 1}
    # cp and thalach tie at the top; the external factor chi decides delta
    assert w.xi == ("cp", "thalach") and w.delta == "cp" and w.rule == "chi"


def test_table8_tie_without_chi_is_refused():
    with pytest.raises(ValueError, match="tie"):
        ck_categories.weights(list(TABLE8), TABLE8)

"""The fingerprint-correlation tests (test_fcorr_*.py) share these, one copy: the paper's tables
of spec 004-ck-anonymization.md section 3 (Tables 1, 2, 3, 5 and 6) transcribed as printed
(typos included) and canonicalised to Table 1's spelling (spec 3.1, 7.18) when the fixtures are
built, the model of the spec 3.1 configuration (Table 11), and `build_st`, which publishes the
ST of a GT from source records.
"""

import re
from collections import Counter

from pganon_engine.models import fcorr as fc

# --------------------------------------------------------------------------------------------
# Paper fixtures (spec section 3)
# --------------------------------------------------------------------------------------------

# Table 1 (spec 3.1): pid | name | gender | age | zipcode | cancer type | cancer treatment |
# physician | diagnosis date | symptom | diagnosis method
TABLE1 = """\
p1 | Michael | M | 34 | 34548 | Rectal | Surgery | Jack | 7/8/19 | Back pain | Chest X-ray
p2 | Lisa | F | 21 | 34607 | Breast | Inhibitor therapy | Alan | 17/8/19 | Swelling | Ultrasound
p3 | Richard | M | 26 | 37506 | Colon | Surgery | Daisy | 22/11/19 | Back pain | Blood test
p4 | Dave | M | 31 | 34549 | Prostrate | Biologic therapy | Tom | 29/08/19 | Abdominal pain | Chest X-ray
p5 | Kate | F | 35 | 33753 | Prostrate | Radiation | Frank | 9/09/19 | Testis swelling | Blood test
p6 | William | M | 38 | 43674 | Liver | Ablation | Tom | 5/08/19 | Weight loss | CT scan
p7 | Robert | M | 27 | 35064 | Rectal | Medication | Tom | 12/08/19 | Abdominal pain | CT scan
p8 | Olivia | F | 32 | 44662 | Prostrate | Biologic therapy | Jack | 21/09/19 | Back pain | Blood test
p9 | Emily | F | 22 | 34548 | Breast | Biologic therapy | Alan | 13/09/19 | Skin imitation | MRI test
"""
T1_COLS = ["pid", "name", "gender", "age", "zipcode", "cancer_type", "cancer_treatment",
           "physician", "diagnosis_date", "symptom", "diagnosis_method"]

# Table 2 (spec 3.2): gender | age | zipcode | batch id | (derived members)
TABLE2 = """\
Person Person | 22–26 | 34548–37506 | 1 | p9, p3
Person Person Person | 31–38 | 34549–44662 | 2 | p4, p8, p6
Person Person | 21–34 | 34548–34607 | 3 | p2, p1
Person Person | 27–35 | 33753–35064 | 4 | p7, p5
"""

# Table 3 (spec 3.2), paper column order; the trailing comma in batch 3 is the paper's.
ST_COLS = ["physician", "cancer_type", "cancer_treatment", "diagnosis_method", "symptom",
           "diagnosis_date"]
TABLE3 = """\
Daisy, Alan | Colon, Breast | Surgery, Biologic therapy | Blood test, MRI test | Back pain, Skin irritation | 22/11/19, 13/09/19 | 1
Tom, Jack | Prostrate, Liver | Ablation, Biologic therapy | CT scan, Chest X-ray, Blood test | Weight loss, Abdominal pain, Back pain | 5/08/19, 21/09/19, 29/08/19 | 2
Alan, Jack | Rectal, Breast | Inhibitor therapy, Surgery | Chest X-ray, Ultrasound, | Back pain, Swelling | 7/8/19, 17/8/19 | 3
Tom, Frank | Prostrate, Rectal | Radiation, Medication | Blood test, CT scan | Testis swelling, Abdominal pain | 12/08/19, 9/09/19 | 4
"""

# Table 5 (spec 3.3): name | gender | age | zipcode | bucket id
TABLE5 = """\
p2 (Lisa) | F | [21–27] (21) | [34548–37506] (34607) | 1
p9 (Emily) | F | [21–27] (22) | [34548–37506] (34548) | 1
p3 (Richard) | M | [21–27] (26) | [34548–37506] (37506) | 2
p7 (Robert) | M | [21–27] (27) | [34548–37506] (35064) | 3
p8 (Olivia) | * | [32–38] (32) | [43674–44662] (44662) | 1
p6 (William) | * | [32–38] (38) | [43674–44662] (43674) | 2
p4 (Dave) | * | [31–35] (31) | [33753–34549] (34549) | 3
p1 (Michael) | * | [31–35] (34) | [33753–34549] (34548) | 1
p5 (Kate) | * | [31–35] (35) | [33753–34549] (33753) | 3
"""

# Table 6 (spec 3.3), as printed (lower case and "prostate"/"skin imitation" included).
TABLE6 = """\
Jack, Alan | Rectal, breast, prostate | Surgery, inhibitor therapy, biologic therapy | Chest X-ray, ultrasound, blood test, MRI test | Back pain, swelling, skin imitation | 7/8/19, 17/8/19, 21/09/19, 13/09/19 | 1
Daisy, Tom | Colon, liver | Surgery, ablation | Blood test, CT scan | Back pain, weight loss | 22/11/19, 5/08/19 | 2
Tom, Frank | Prostrate, rectal | Biologic therapy, radiation, medication | Chest X-ray, blood test, CT scan | Abdominal pain, testis swelling | 29/08/19, 9/09/19, 12/08/19 | 3
"""

# Spec 3.1 configuration; Table 11.
IDENTIFIED_BY = {
    "cancer_type": {"cancer_treatment", "physician", "diagnosis_method"},
    "cancer_treatment": {"cancer_type"},
    "physician": {"cancer_type", "cancer_treatment", "diagnosis_method"},
    "diagnosis_date": set(),
    "symptom": set(),
    "diagnosis_method": {"cancer_type"},
}
MODEL = fc.sa_model(ST_COLS, "physician", IDENTIFIED_BY)


def lines(text):
    return [[c.strip() for c in line.split("|")] for line in text.strip("\n").split("\n")]


def table1():
    """pid -> full Table 1 row (dict)."""
    return {r[0]: dict(zip(T1_COLS, r)) for r in lines(TABLE1)}


T1 = table1()
SOURCE = {pid: {a: row[a] for a in ST_COLS} for pid, row in T1.items()}

# Spec 3.1 / 7.18: compare case-insensitively after canonicalising to Table 1's spelling.
CANON = {row[a].lower(): row[a] for row in T1.values() for a in ST_COLS}
CANON.update({"prostate": "Prostrate", "skin irritation": "Skin imitation", "ct-scan": "CT scan"})


def cell(text):
    """A published ST cell as a set of canonical values (empty items dropped)."""
    return {CANON[v.strip().lower()] for v in text.split(",") if v.strip()}


def st_of(text):
    return {int(r[-1]): {a: cell(c) for a, c in zip(ST_COLS, r[:-1])} for r in lines(text)}


def rng(text):
    lo, hi = re.fullmatch(r"\[?(\d+)–(\d+)\]?", text).groups()
    return (int(lo), int(hi))


def gt2():
    """Table 2 expanded to one GT row per derived member (spec 3.4: equivalent)."""
    rows = []
    for gender, age, zipc, bid, members in lines(TABLE2):
        for pid in members.split(", "):
            rows.append((pid, ("Person", rng(age), rng(zipc)), int(bid)))
    return rows


def gt5():
    """Table 5: record-level rows; the class is the (age, zip) range pair (spec 3.3 ECs)."""
    rows = []
    for name, gender, age, zipc, bid in lines(TABLE5):
        pid = name.split()[0]
        a, z = rng(age.split()[0]), rng(zipc.split()[0])
        rows.append(fc.GTRow(pid, (gender, a, z), frozenset([int(bid)]), ec=(a, z)))
    return rows


ST3, ST6 = st_of(TABLE3), st_of(TABLE6)
GT2, GT5 = gt2(), gt5()
EC1, EC2, EC3 = ((21, 27), (34548, 37506)), ((32, 38), (43674, 44662)), ((31, 35), (33753, 34549))


def members(gt):
    out = {}
    for r in gt:
        rid, b = (r.rid, next(iter(r.buckets))) if isinstance(r, fc.GTRow) else (r[0], r[2])
        out.setdefault(b, set()).add(rid)
    return out


def build_st(gt, src, counts=False):
    out = {}
    for rid, _, b, *_ in gt:
        for a, v in src[rid].items():
            out.setdefault(b, {}).setdefault(a, Counter())[v] += 1
    return {b: {a: (dict(c) if counts else set(c)) for a, c in cells.items()} for b, cells in out.items()}

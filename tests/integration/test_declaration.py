"""The declaration file and security levels (issue 13, item 4; "Why": YAML 1.1 turned `Yes`/`No`
into 'True'/'False', `set_security_level` took values the column never holds ('HIVV'), every value
had to be listed; `set-chi` and a float `external_factor` sent a float where SQL wants numeric)."""

import json
import subprocess
import sys
from decimal import Decimal

import psycopg
import pytest
from psycopg import sql

from helpers import checks, create_ck_table1, create_table1, declare_table1, publish, relation, table_of
from pganon import catalog, declaration
from pganon.errors import PganonError
from pganon.install import ROOT
from test_roles import cluster  # noqa: F401  (fixture: login roles for one test)

TABLE1_HEAD = "dataset: {name}\nsource: {name}\nkey_column: rid\n"
TABLE1_ATTRS = ("attributes:\n"
                "  - {column: age, role: quasi, kind: numeric}\n"
                "  - {column: physician, role: sensitive}\n"
                "  - {column: disease, role: sensitive}\n")


def _write(tmp_path, text, file="decl.yaml"):
    path = tmp_path / file
    path.write_text(text)
    return path


def _levels(conn, dataset):
    return {(c, v): lv for c, v, lv in conn.execute(
        "SELECT column_name, value, level FROM pganon.security_level WHERE dataset_id = pganon._dataset_id(%s)",
        (dataset,))}


def _datasets(conn, name):
    return conn.execute("SELECT count(*) FROM pganon.dataset WHERE name = %s", (name,)).fetchone()[0]


# --- values stay the text written ---------------------------------------------------------------

def test_yaml_1_1_scalars_stay_the_text_written_and_the_release_publishes(conn, name, tmp_path):
    """The issue's shape: a column holding Yes/No, levels declared in YAML unquoted. YAML 1.1 made
    them True/False, stored as 'True'/'False'; now they are stored as written and publish works."""
    rows = [(i, 20 + i, ("Yes", "No")[i % 2], ("on", "off", "1.0", "2020-01-01")[i % 4]) for i in range(16)]
    table_of(conn, name, "id int PRIMARY KEY, age int, smoker text, reading text", rows)
    path = _write(tmp_path, f"dataset: {name}\nsource: {name}\nkey_column: id\n"
                            "attributes:\n"
                            "  - {column: age, role: quasi}\n"
                            "  - {column: smoker, role: sensitive}\n"
                            "  - {column: reading, role: sensitive}\n"
                            "security_levels:\n"
                            "  smoker: {0: [No], 1: [Yes]}\n"
                            "  reading:\n"
                            "    0: [off, 1.0]\n"
                            "    1: [on, 2020-01-01]\n")
    assert catalog.apply(conn, path)["security_levels"] == 6
    assert _levels(conn, name) == {("smoker", "No"): 0, ("smoker", "Yes"): 1, ("reading", "off"): 0,
                                   ("reading", "1.0"): 0, ("reading", "on"): 1, ("reading", "2020-01-01"): 1}
    rid = publish(conn, name, "mbf_mslf")
    result = checks(conn, rid)
    assert result["lsl_diversity"][0] and all(p for p, _ in result.values()), result


def test_values_keep_their_text_where_yaml_1_1_would_change_it(tmp_path):
    path = _write(tmp_path, "dataset: d\nsource: t\nkey_column: '007'\nperson_column: null\n"
                            "attributes: [{column: on, role: sensitive}, {column: y, role: sensitive}]\n"
                            "security_levels:\n  on: {0: [Yes, NO, 007, 1.50, 1e3, 0x1F, 2020-01-01, ~x, 'null']}\n"
                            "  y: {1: single}\n"
                            "semantic_rules: [{id: 1.0, column: on, predicate: in, values: off, category: Off}]\n")
    spec = catalog.read_spec(path)
    assert spec["key_column"] == "007" and spec["person_column"] is None
    assert spec["security_levels"]["on"] == {0: ["Yes", "NO", "007", "1.50", "1e3", "0x1F", "2020-01-01", "~x", "null"]}
    assert spec["security_levels"]["y"] == {1: ["single"]}
    assert spec["semantic_rules"] == [{"id": "1.0", "column": "on", "predicate": "in", "values": ["off"],
                                       "category": "Off"}]


# --- the schema, with line numbers, before anything is written ----------------------------------

SCHEMA_CASES = [
    # (body after the head and attributes, line, sqlstate, message)
    ("security_levels:\n  disease:\n    high: [HIV]\n", 10, "PA002",
     "sensitive attribute 'disease': level must be an integer >= 0, not 'high'"),
    ("security_levels:\n  disease:\n    9: [HIV]\n", 10, "PA003",
     "sensitive attribute 'disease': level 9 has no l (levels with an l: 0, 1, 2; add it to level_l)"),
    ("security_levels:\n  disease: {0: [Flu], 2: [HIV, Flu]}\n", 9, "PA002",
     "sensitive attribute 'disease': value 'Flu' is listed twice (first on line 9)"),
    ("security_levels:\n  age: {0: ['30']}\n", 9, "PA002",
     "security_levels: 'age' is not declared a sensitive attribute in 'attributes'"),
    ("security_levels:\n  disease: {1: [{a: b}]}\n", 9, "PA002",
     "sensitive attribute 'disease': level 1 must be a value, not a mapping"),
    ("level_l: {0: 1, 1: 0}\n", 8, "PA002", "level_l: level 1: l must be an integer >= 1, not '0'"),
    ("force: yes\n", 8, "PA002", "force must be true or false, not 'yes'"),
    ("external_factor: {disease: high}\n", 8, "PA002", "external_factor: 'disease' must be a number, not 'high'"),
    ("attribute: []\n", 8, "PA002", "unknown key 'attribute' (did you mean 'attributes'?); allowed: dataset,"),
    ("policy: {prosecutor_risk_max: '0.1'}\n", 8, "PA002", "policy: 'prosecutor_risk_max' must be a number, not '0.1'"),
    ("delta: nosuch\n", 8, "PA002", "delta: 'nosuch' is not declared a sensitive attribute in 'attributes'"),
    ("hierarchies: {age: no/such.csv}\n", 8, "PA002", "hierarchies: 'age': no file"),
    ("hierarchies: {age: {builder: intervals, sep: ','}}\n", 8, "PA002", "hierarchies: 'age': 'sep' goes with 'file'"),
    ("semantic_rules:\n  - {id: R1, column: disease, predicate: like, values: [HIV], category: x}\n", 9, "PA002",
     "semantic rule 'R1': predicate must be one of in, between, =, >, >=, <, <=, not 'like'"),
    ("dataset: again\n", 8, "PA002", "key 'dataset' appears twice (first on line 1)"),
    ("security_levels: {disease: {0: [Flu]}}\n  bad: indentation\n", 9, "PA002", "not valid YAML"),
]


@pytest.mark.parametrize("body, line, sqlstate, message", SCHEMA_CASES, ids=[c[3][:40] for c in SCHEMA_CASES])
def test_a_bad_file_is_refused_with_its_line(tmp_path, body, line, sqlstate, message):
    path = _write(tmp_path, TABLE1_HEAD.format(name="t") + TABLE1_ATTRS + body)
    with pytest.raises(PganonError) as e:
        catalog.read_spec(path)
    assert e.value.sqlstate == sqlstate
    assert str(e.value).startswith(f"{path}:{line}: {message}"), str(e.value)


@pytest.mark.parametrize("attrs, line, message", [
    ("  - {column: age, role: quasy}\n", 5, "attribute 'age': role must be one of identifier, quasi, sensitive, "
                                            "insensitive, not 'quasy'"),
    ("  - {column: age, role: quasi, level: 1}\n", 5, "attribute 'age': unknown key 'level'"),
    ("  - {role: quasi}\n", 5, "attributes: 'column' is required"),
    ("  - {column: age, role: quasi, default_level: 1}\n", 5,
     "attribute 'age': default_level is for sensitive attributes only"),
    ("  - {column: disease, role: sensitive, default_level: 7}\n", 5,
     "sensitive attribute 'disease': default_level 7 has no l"),
    ("  - {column: rid, role: quasi}\n", 5, "attribute 'rid' is the key column, which has no role"),
    ("  - {column: age, role: quasi}\n  - {column: age, role: sensitive}\n", 6,
     "attribute 'age' is declared twice (first on line 5)"),
])
def test_a_bad_attribute_is_refused_with_its_line(tmp_path, attrs, line, message):
    path = _write(tmp_path, TABLE1_HEAD.format(name="t") + "attributes:\n" + attrs)
    with pytest.raises(PganonError) as e:
        catalog.read_spec(path)
    assert str(e.value).startswith(f"{path}:{line}: {message}"), str(e.value)


def test_every_problem_is_named_on_one_line_and_nothing_is_written(conn, name, tmp_path):
    create_table1(conn, name)
    path = _write(tmp_path, TABLE1_HEAD.format(name=name) + TABLE1_ATTRS +
                  "security_levels:\n  disease: {0: [Flu], x: [HIV]}\n  physician: {7: [Anne]}\nforce: on\n")
    with pytest.raises(PganonError) as e:
        catalog.apply(conn, path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{path}:9: sensitive attribute 'disease': level must be")
    assert "(2 more: " in msg and f"{path}:10: sensitive attribute 'physician': level 7 has no l" in msg
    assert f"{path}:11: force must be true or false, not 'on'" in msg and "nothing was applied" in msg
    assert _datasets(conn, name) == 0


def test_required_keys_and_a_top_level_that_is_not_a_mapping(tmp_path):
    with pytest.raises(PganonError, match=r"decl.yaml:1: 'source' is required"):
        catalog.read_spec(_write(tmp_path, "dataset: a\nkey_column: id\n"))
    with pytest.raises(PganonError, match=r"decl.yaml:1: expected a mapping .* not a list"):
        catalog.read_spec(_write(tmp_path, "- dataset: a\n"))
    with pytest.raises(PganonError, match=r"decl.yaml: the file is empty"):
        catalog.read_spec(_write(tmp_path, "# nothing\n"))


def test_the_schema_is_described_once_for_the_docs():
    text = declaration.describe()
    for key in declaration.SCHEMA.keys:
        assert f"- `{key}`" in text
    assert "`default_level`" in text and "`force`" in text and "identifier | quasi | sensitive | insensitive" in text


# --- JSON keeps working ---------------------------------------------------------------------------

def test_json_applies_with_lines_and_without(conn, name, tmp_path):
    create_table1(conn, name)
    spec = {"dataset": name, "source": name, "key_column": "rid",
            "attributes": [{"column": "age", "role": "quasi"}, {"column": "disease", "role": "sensitive"}],
            "security_levels": {"disease": {"0": ["Flu"], "2": ["HIV"]}}, "level_l": {"0": 1, "1": 2, "2": 3},
            "policy": {"prosecutor_risk_max": 0.5}}
    path = _write(tmp_path, json.dumps(spec, indent=1), "d.json")
    assert catalog.apply(conn, path)["security_levels"] == 2
    assert _levels(conn, name) == {("disease", "Flu"): 0, ("disease", "HIV"): 2}
    bad = dict(spec, security_levels={"disease": {"0": ["Flu"], "2": [True]}})
    path.write_text(json.dumps(bad, indent=1))          # a JSON true is no value of a text column...
    assert catalog.read_spec(path)["security_levels"]["disease"][2] == ["true"]   # ... it reads as its text
    path.write_text(json.dumps(dict(spec, level_l={"0": "one"}), indent=1))
    with pytest.raises(PganonError, match=r"d.json:\d+: level_l: level 0: l must be an integer >= 1, not 'one'"):
        catalog.read_spec(path)
    path.write_text(json.dumps(dict(spec, level_l={"0": "one"}), indent="\t"))   # tabs: PyYAML cannot: no lines
    with pytest.raises(PganonError, match=r"d.json: level_l: level 0: l must be"):
        catalog.read_spec(path)
    path.write_text('{"dataset": "a",}')
    with pytest.raises(PganonError, match="is not valid JSON"):
        catalog.read_spec(path)


# --- a level for a value the column never holds -------------------------------------------------------

def test_set_security_level_refuses_a_value_the_column_never_holds(conn, name):
    create_table1(conn, name)
    declare_table1(conn, name, name)
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT pganon.set_security_level(%s, 'disease', 'HIVV', 2)", (name,))
    assert e.value.sqlstate == "PA002"
    assert e.value.diag.message_primary.startswith("value 'HIVV' never occurs in column \"disease\"")
    assert "nearest: 'HIV'" in e.value.diag.message_primary and "force => true" in e.value.diag.message_hint
    with pytest.raises(PganonError) as e:                                          # the CLI's path
        catalog.set_security_level(conn, name, "disease", "hiv", 2)
    assert e.value.sqlstate == "PA002" and "nearest: 'HIV'" in str(e.value)
    huge = "X" * 100_000
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT pganon.set_security_level(%s, 'disease', %s, 2)", (name, huge))
    assert len(e.value.diag.message_primary) < 300 and "(100000 characters)" in e.value.diag.message_primary
    conn.execute("SELECT pganon.set_security_level(%s, 'disease', 'HIVV', 2, force => true)", (name,))
    catalog.set_security_level(conn, name, "disease", "Malaria", 1, force=True)
    assert {v for (c, v) in _levels(conn, name) if c == "disease"} >= {"HIVV", "Malaria"}


def test_apply_refuses_a_value_the_column_never_holds_naming_its_line_unless_forced(conn, name, tmp_path):
    create_table1(conn, name)
    body = TABLE1_HEAD.format(name=name) + TABLE1_ATTRS + "security_levels:\n  disease: {0: [Flu], 2: [HIVV]}\n"
    path = _write(tmp_path, body)
    with pytest.raises(PganonError) as e:
        catalog.apply(conn, path)
    assert e.value.sqlstate == "PA002"
    assert str(e.value).startswith(f"{path}:9: value 'HIVV' never occurs in column \"disease\"")
    assert _datasets(conn, name) == 0                                   # nothing half-applied
    assert catalog.apply(conn, path, force=True)["security_levels"] == 2
    path.write_text(body + "force: true\n")
    assert catalog.apply(conn, path)["security_levels"] == 2
    assert ("disease", "HIVV") in _levels(conn, name)


def test_the_check_reads_no_value_the_caller_cannot_select(conn, fresh_dsn, cluster):  # noqa: F811
    """Issue 12's rule: only what the caller may SELECT is read. An admin whose SELECT on the
    sensitive column was revoked is refused without any value of the column, unless forced."""
    role, dsns = cluster
    admin = role("adm")
    with psycopg.connect(fresh_dsn, autocommit=True) as su:
        create_table1(su, "patients")
        su.execute(sql.SQL("GRANT SELECT ON patients TO {}").format(sql.Identifier(admin)))
    with psycopg.connect(dsns[admin], autocommit=True) as a:
        declare_table1(a, "patients", "patients")
    with psycopg.connect(fresh_dsn, autocommit=True) as su:
        su.execute(sql.SQL("REVOKE SELECT ON patients FROM {}").format(sql.Identifier(admin)))
        su.execute(sql.SQL("GRANT SELECT (rid, age) ON patients TO {}").format(sql.Identifier(admin)))
    with psycopg.connect(dsns[admin], autocommit=True) as a:
        with pytest.raises(psycopg.Error) as e:
            a.execute("SELECT pganon.set_security_level('patients', 'disease', 'HIVV', 2)")
        assert e.value.sqlstate == "PA002" and "cannot read column \"disease\"" in e.value.diag.message_primary
        assert "HIV'" not in e.value.diag.message_primary + (e.value.diag.message_hint or "")
        a.execute("SELECT pganon.set_security_level('patients', 'disease', 'HIVV', 2, force => true)")


def test_the_check_never_reads_through_another_roles_view(conn, fresh_dsn, cluster):  # noqa: F811
    """Reading a view runs its owner's code: the value check reads the source the way publish
    does (roles.py), so another role's view is refused before its code runs, unless forced."""
    role, dsns = cluster
    admin, other = role("adm"), role("oth")
    with psycopg.connect(fresh_dsn, autocommit=True) as su:
        create_table1(su, "base")
        su.execute(sql.SQL("GRANT SELECT ON base TO {}").format(sql.Identifier(other)))
        su.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(other)))
    with psycopg.connect(dsns[other], autocommit=True) as o:
        o.execute("CREATE TABLE public.olog (who text); GRANT INSERT ON public.olog TO PUBLIC")
        o.execute("CREATE FUNCTION public.ofn(x text) RETURNS text LANGUAGE plpgsql VOLATILE AS "
                  "$f$ BEGIN INSERT INTO public.olog VALUES (current_user); RETURN x; END $f$")
        o.execute("CREATE VIEW public.oview AS SELECT rid, age, public.ofn(disease) AS disease FROM public.base")
        o.execute(sql.SQL("GRANT SELECT ON public.oview TO {}").format(sql.Identifier(admin)))
    with psycopg.connect(dsns[admin], autocommit=True) as a:
        a.execute("SELECT pganon.register_dataset('borrowed', 'public.oview', 'rid')")
        a.execute("SELECT pganon.set_attribute('borrowed', 'disease', 'sensitive')")
        with pytest.raises(psycopg.Error) as e:
            a.execute("SELECT pganon.set_security_level('borrowed', 'disease', 'HIV', 2)")
        assert e.value.sqlstate == "PA002" and "is a view owned by" in e.value.diag.message_primary
        a.execute("SELECT pganon.set_security_level('borrowed', 'disease', 'HIV', 2, force => true)")
    with psycopg.connect(fresh_dsn, autocommit=True) as su:
        assert su.execute("SELECT count(*) FROM public.olog").fetchone()[0] == 0     # its code never ran


# --- the default level of unlisted values ------------------------------------------------------------

def _declare_partly(conn, name, tmp_path, extra=""):
    """Table 1 with only Flu listed (level 0): the other diseases and all physicians unlisted."""
    create_table1(conn, name)
    path = _write(tmp_path, TABLE1_HEAD.format(name=name) + TABLE1_ATTRS.replace(
        "{column: physician, role: sensitive}", "{column: physician, role: sensitive" + extra + "}") +
        "security_levels:\n  disease: {0: [Flu]}\n")
    catalog.apply(conn, path)


def _effective(conn, name, column, value):
    return conn.execute("SELECT pganon._effective_level(pganon._dataset_id(%s), %s, %s)",
                        (name, column, value)).fetchone()[0]


def test_unlisted_values_get_the_highest_level(conn, name, tmp_path):
    _declare_partly(conn, name, tmp_path)
    assert _effective(conn, name, "disease", "Flu") == 0
    assert _effective(conn, name, "disease", "HIV") == 2 and _effective(conn, name, "physician", "Anne") == 2
    assert conn.execute("SELECT default_level FROM pganon.attributes WHERE dataset = %s AND column_name = 'disease'",
                        (name,)).fetchone()[0] == 2
    conn.execute("SELECT pganon.set_level_l(%s, 3, 4)", (name,))          # a new highest level
    assert _effective(conn, name, "disease", "HIV") == 3


def test_an_explicit_default_level_is_used(conn, name, tmp_path):
    _declare_partly(conn, name, tmp_path, extra=", default_level: 1")
    assert _effective(conn, name, "physician", "Anne") == 1 and _effective(conn, name, "disease", "HIV") == 2
    conn.execute("SELECT pganon.set_default_level(%s, 'disease', 0)", (name,))
    assert _effective(conn, name, "disease", "HIV") == 0 and _effective(conn, name, "disease", "Flu") == 0
    conn.execute("SELECT pganon.set_default_level(%s, 'disease', NULL)", (name,))
    assert _effective(conn, name, "disease", "HIV") == 2
    for args, state, text in [(("age", 1), "PA001", 'column "age" is not a sensitive attribute'),
                              (("disease", 5), "PA003", "security level 5"),
                              (("disease", -1), "PA002", "default level must be a non-negative")]:
        with pytest.raises(psycopg.Error) as e:
            conn.execute("SELECT pganon.set_default_level(%s, %s, %s)", (name,) + args)
        assert e.value.sqlstate == state and text in e.value.diag.message_primary
    conn.execute("SELECT pganon.set_attribute(%s, 'physician', 'insensitive')", (name,))   # forgets it
    assert conn.execute("SELECT default_level FROM pganon.attribute WHERE dataset_id = pganon._dataset_id(%s) "
                        "AND column_name = 'physician'", (name,)).fetchone()[0] is None


def test_publish_verify_and_risk_read_the_same_effective_level(conn, name, tmp_path):
    """Publish's level table, the verifier and the risk figures all use the default for the
    values the file does not list: the release verifies (a value with no l would fail it), and
    the risk per level is the largest share of that level's values in the published ST."""
    _declare_partly(conn, name, tmp_path, extra=", default_level: 1")
    rid = publish(conn, name, "mbf_mslf")
    levels = {(sa, v): (lv, l) for sa, v, lv, l in
              conn.execute(f"SELECT sa, value, level, l FROM {relation(conn, rid, 'levels')}")}
    assert levels[("disease", "Flu")] == (0, 1) and levels[("disease", "HIV")] == (2, 3)
    assert levels[("physician", "Anne")] == (1, 2)
    for (sa, v), (lv, _) in levels.items():
        assert _effective(conn, name, sa, v) == lv
    result = checks(conn, rid)
    assert all(p for p, _ in result.values()), result
    st = relation(conn, rid, "st")
    for sa in ("disease", "physician"):
        shares = conn.execute(sql.SQL(
            "SELECT {sa}::text, count::float8 / sum(count) OVER (PARTITION BY group_id) FROM "
            "(SELECT group_id, {sa}, sum(count) AS count FROM {st} GROUP BY 1, 2) x").format(
                sa=sql.Identifier(sa), st=sql.SQL(st))).fetchall()
        by_level = {}
        for v, share in shares:
            lv = levels[(sa, v)][0]
            by_level[lv] = max(by_level.get(lv, 0), share)
        risk = {scope: value for scope, value in conn.execute(
            "SELECT scope, value FROM pganon.risk(%s) WHERE measure = 'attacker_confidence_max' AND scope LIKE %s",
            (rid, f"{sa} level %"))}
        assert risk == pytest.approx({f"{sa} level {lv}": mx for lv, mx in by_level.items()}), (sa, risk, by_level)


# --- chi is numeric ----------------------------------------------------------------------------------

def _chi(conn, name):
    return conn.execute("SELECT chi FROM pganon.sa_dependencies WHERE dataset = %s AND column_name = 'physician'",
                        (name,)).fetchone()[0]


def test_set_external_factor_takes_a_float(conn, name):
    create_ck_table1(conn, name)
    catalog.set_external_factor(conn, name, "physician", 0.1)
    assert _chi(conn, name) == Decimal("0.1")
    catalog.set_external_factor(conn, name, "physician", None)
    assert _chi(conn, name) is None
    with pytest.raises(PganonError, match="chi must be a finite number"):
        catalog.set_external_factor(conn, name, "physician", float("nan"))


def test_cli_set_chi_works(db_dsn, name):
    with psycopg.connect(db_dsn, autocommit=True) as c:
        create_ck_table1(c, name)
    r = subprocess.run([sys.executable, "-m", "pganon.cli", "set-chi", name, "physician", "0.25", "--dsn", db_dsn],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    with psycopg.connect(db_dsn, autocommit=True) as c:
        assert _chi(c, name) == Decimal("0.25")


def test_a_float_external_factor_in_yaml_applies_exactly(conn, name, tmp_path):
    create_ck_table1(conn, name)
    text = (ROOT / "pganon/data/ck_table1.yaml").read_text().replace("physician: 1\n", "physician: 1.10\n")
    path = _write(tmp_path, text.replace("dataset: ck_table1", f"dataset: {name}"))
    catalog.apply(conn, path, source=name)
    assert str(_chi(conn, name)) == "1.10"

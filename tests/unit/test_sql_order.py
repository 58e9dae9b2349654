"""The order install applies sql/ in (issue 14, item 4): every .sql file of sql/ is one install
applies, and sql/README.md lists them in the order install applies them. A file dropped where the
installer does not look, or a README that says another order, fails here rather than at a user's
install."""

import re
from pathlib import Path

from pganon import install

SQL = Path(__file__).resolve().parents[2] / "sql"


def test_install_applies_every_sql_file():
    applied = install.sql_files()
    assert applied, "install applies no sql file"
    assert [p for p in sorted(SQL.rglob("*.sql")) if p not in applied] == []


def test_sql_folders_and_files_are_numbered():
    """The names carry the order: NN-concern/NN-name.sql, so name order is application order."""
    names = [p.relative_to(SQL).as_posix() for p in install.sql_files()]
    assert [n for n in names if not re.fullmatch(r"\d\d-[a-z-]+/\d\d-[a-z-]+\.sql", n)] == []


def test_readme_states_the_order_install_applies():
    rows = re.findall(r"^\| (\d+) \| (\S+\.sql) \|", (SQL / "README.md").read_text(encoding="utf-8"), re.M)
    assert [int(n) for n, _ in rows] == list(range(1, len(rows) + 1)), "README: number the rows 1, 2, ..."
    assert [f for _, f in rows] == [p.relative_to(SQL).as_posix() for p in install.sql_files()]

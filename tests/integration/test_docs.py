"""Docs that run: every ```sql block of README.md and docs/*.md, in document order, through psql on
a fresh database with pganon installed (one database per file), so an example that stopped working
fails here with its file and line. Blocks that are not meant to run use another fence language
(```text, ```console, ```sh). A block whose first line is `-- fails: PA002` must fail, with that
SQLSTATE on its first error. Roles a file creates (`CREATE ROLE name`) are cluster-wide: they are
dropped before and after the file runs."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from pganon import install
from pganon.server import PG_BIN

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
FAILS = re.compile(r"^--\s*fails:\s*([0-9A-Z]{5})\b")
ERROR = re.compile(r"^psql:[^:]*:(\d+): (?:ERROR:\s+([0-9A-Z]{5})|(error)): (.*)$")   # server | psql
NOTICE = re.compile(r"^psql:[^:]*:(\d+): (NOTICE|WARNING|warning):\s+(?:[0-9A-Z]{5}: )?(.*)$")
CREATE_ROLE = re.compile(r"\bCREATE\s+ROLE\s+(\w+)", re.IGNORECASE)


@dataclass
class Block:
    path: Path
    line: int            # line of the opening fence, 1-based
    lang: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def fails(self) -> str | None:
        m = FAILS.match(self.text.lstrip())
        return m.group(1) if m else None


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order (an unclosed fence is an error)."""
    out, lines, i = [], path.read_text().splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang, body, i = i + 1, m.group(2).lower(), [], i + 1
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i])
            i += 1
        assert i < len(lines), f"{path.relative_to(ROOT)}:{start}: unclosed ``` fence"
        out.append(Block(path, start, lang, "\n".join(body)))
        i += 1
    return out


def _psql() -> str:
    p = PG_BIN / "psql"
    return str(p) if p.exists() else (shutil.which("psql") or "psql")


def _script(sql_blocks: list[Block]) -> tuple[str, dict[int, tuple[Block, int]]]:
    """One psql script for a file's blocks and a map from script line to (block, line in the doc)."""
    lines = ["\\set ON_ERROR_STOP 1", "\\set VERBOSITY verbose", "\\set SHOW_CONTEXT never",
             "\\pset pager off", "\\set QUIET 1"]
    where: dict[int, tuple[Block, int]] = {}
    for b in sql_blocks:
        if b.fails:
            lines.append("\\set ON_ERROR_STOP 0")
        for j, text in enumerate(b.text.splitlines()):
            lines.append(text)
            where[len(lines)] = (b, b.line + 1 + j)
        lines.append("\\set ON_ERROR_STOP 1")
    return "\n".join(lines) + "\n", where


def _drop_roles(server_dsn: str, roles: set[str]) -> None:
    with psycopg.connect(server_dsn, autocommit=True) as c:
        for r in sorted(roles):
            try:
                c.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(r)))
            except psycopg.errors.DependentObjectsStillExist as e:
                pytest.fail(f"role {r}, which the docs create, still has objects or privileges elsewhere on the "
                            f"test server ({e.diag.message_detail}): drop that database, then run again")


def test_every_fence_names_its_language():
    """An unlabelled fence would hide SQL from the docs test: say ```sql, or ```text / ```sh."""
    bare = [b.where for p in DOCS for b in blocks(p) if not b.lang]
    assert not bare, f"fences without a language: {bare}"


def test_docs_cite_the_papers_not_unshipped_files():
    """A clone has no ../shared: citations name the papers (docs/references.md)."""
    files = [*DOCS, ROOT / "Makefile", *ROOT.glob("*/README.md")]
    found = [f"{p.relative_to(ROOT)}:{n}" for p in files for n, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"\bspec \d{3}\b|\.\./shared|/shared/(spec|papers)", line)]
    assert not found, f"citations of files the repository does not ship: {found}"


def test_declaration_files_in_the_docs_pass_the_schema(tmp_path):
    """A ```yaml block that declares a dataset is a file a reader will copy: it must validate."""
    from pganon import declaration
    found = [b for p in DOCS for b in blocks(p) if b.lang == "yaml" and re.search(r"^dataset:", b.text, re.M)]
    assert found, "no declaration file example in the docs"
    for b in found:
        f = tmp_path / "example.yaml"
        f.write_text(b.text + "\n")
        try:
            declaration.read(f)
        except Exception as e:          # the schema's one-line report, with the block's place
            pytest.fail(f"{b.where}: {e}")


def test_every_cited_paper_is_in_the_references():
    """"Khan et al. 2020" or "Xiao & Li 2020" in any doc has its entry in docs/references.md."""
    refs = (ROOT / "docs" / "references.md").read_text()
    cite = re.compile(r"\b([A-Z][a-z]+(?: et al\.| & [A-Z][a-z]+)) \(?((?:19|20)\d\d)\b")
    missing = sorted({f"{p.relative_to(ROOT)}: {m.group(1)} {m.group(2)}" for p in DOCS
                      for m in cite.finditer(p.read_text())
                      if f"**{m.group(1)} {m.group(2)}.**" not in refs})
    assert not missing, f"citations without an entry in docs/references.md: {missing}"


WITH_SQL = [p for p in DOCS if any(b.lang == "sql" for b in blocks(p))]   # pages without SQL have nothing to run


def test_the_readme_and_sql_api_have_sql_blocks():
    """The docs test below must have something to run: the two pages every reader starts from."""
    assert {p.name for p in WITH_SQL} >= {"README.md", "sql-api.md"}


@pytest.mark.parametrize("path", WITH_SQL, ids=lambda p: str(p.relative_to(ROOT)))
def test_sql_blocks_run_in_order(path, make_db, server_dsn):
    """Each block runs after the ones above it, as a reader pastes them; the first unexpected error
    fails with its file and line, and no NOTICE or WARNING may reach the reader."""
    sql_blocks = [b for b in blocks(path) if b.lang == "sql"]
    roles = {r.lower() for b in sql_blocks for r in CREATE_ROLE.findall(b.text)}
    _drop_roles(server_dsn, roles)
    dsn = make_db("docs")
    install.install(dsn)
    script, where = _script(sql_blocks)
    try:
        r = subprocess.run([_psql(), "-X", "-d", dsn, "-f", "-"], input=script, capture_output=True,
                           text=True, timeout=600)
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as c:
            c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                      .format(sql.Identifier(psycopg.conninfo.conninfo_to_dict(dsn)["dbname"])))
        _drop_roles(server_dsn, roles)
    errors = {}                                  # block -> [(doc line, sqlstate, message)]
    for line in r.stderr.splitlines():
        m = ERROR.match(line)
        if m:
            b, doc_line = where.get(int(m.group(1)), (None, 0))
            errors.setdefault(b.where if b else "?", []).append((doc_line, m.group(2) or "psql", m.group(4)))
    for b in sql_blocks:
        got = errors.pop(b.where, [])
        if b.fails:
            assert got, f"{b.where}: expected to fail with {b.fails}, but it ran"
            assert got[0][1] == b.fails, f"{b.where}: expected {b.fails}, got {got[0]}"
        else:
            assert not got, (f"{path.relative_to(ROOT)}:{got[0][0]} (block at line {b.line}): "
                             f"{got[0][1]}: {got[0][2]}")
    assert not errors and r.returncode == 0, f"psql exited {r.returncode}: {r.stderr[-2000:]}"
    notices = [(where.get(int(m.group(1)), (None, 0))[1], m.group(3))
               for m in map(NOTICE.match, r.stderr.splitlines()) if m]
    assert not notices, f"{path.relative_to(ROOT)}: notices reach the user: {notices[:5]}"
